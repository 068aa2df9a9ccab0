#include "chopper/report/rank_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "chopper/base/error.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

constexpr ColType I = ColType::kInt, R = ColType::kReal, T = ColType::kText;

Cell share(Ns a, Ns b) {
  return b > 0 ? Cell::of(static_cast<double>(a) / static_cast<double>(b)) : Cell::null();
}
Cell opt_int(int64_t v, bool present) {
  return present ? Cell::of(v) : Cell::null();
}
std::vector<ColumnSpec> cat(std::vector<ColumnSpec> a, const std::vector<ColumnSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
void put(TableSink& sink, std::initializer_list<Cell> c) {
  sink.row(std::span<const Cell>(c.begin(), c.size()));
}
void put(TableSink& sink, const std::vector<Cell>& c) {
  sink.row(c);
}

// The hierarchy's key of a row, with the fields of levels[k..] cleared.

void gpu_activity_rows(const RankSlot& slot, TableSink& sink) {
  if (!slot.ok) return;
  const RankTrace& t = slot.trace;
  const GpuActivities& g = t.gpu;
  const bool lab = t.labelled();
  auto rule = [&](const std::vector<uint16_t>& v, size_t a) {
    return lab && v[a] != kNoRule && v[a] < t.label_rules.size()
               ? Cell::of(std::string_view(t.label_rules[v[a]]))
               : Cell::null();
  };
  std::vector<Cell> row(18);
  for (size_t a = 0; a < g.size(); ++a) {
    row[0] = Cell::of(slot.rank);
    row[1] = Cell::of(g.device[a]);
    row[2] = Cell::of(g.stream[a]);
    row[3] = Cell::of(gpu_kind_name(g.kind[a]));
    row[4] = Cell::of(t.strings.str(g.name[a]));
    row[5] = opt_int(g.correlation[a], g.correlation[a] != kNoId);
    row[6] = Cell::of(g.start_ns[a]);
    row[7] = Cell::of(g.dur_ns[a]);
    row[8] = lab ? opt_int(g.iteration[a], g.iteration[a] != kNoId) : Cell::null();
    row[9] = lab && g.phase[a] != Phase::kNone ? Cell::of(phase_name(g.phase[a])) : Cell::null();
    row[10] = lab ? opt_int(g.layer[a], g.layer[a] >= 0) : Cell::null();
    row[11] = lab && g.operation[a] != 0 ? Cell::of(t.strings.str(g.operation[a])) : Cell::null();
    row[12] = lab && g.op_class[a] != OpClass::kNone ? Cell::of(op_class_name(g.op_class[a]))
                                                     : Cell::null();
    row[13] = rule(g.iteration_rule, a);
    row[14] = rule(g.phase_rule, a);
    row[15] = rule(g.layer_rule, a);
    row[16] = rule(g.operation_rule, a);
    row[17] = rule(g.op_class_rule, a);
    sink.row(row);
  }
}

void telemetry_rows(const RankSlot* s, const RankHardware* rh, TableSink& sink) {
  if (rh == nullptr || s == nullptr || !s->ok || s->trace.gpu.size() == 0) return;
  const GpuActivities& g = s->trace.gpu;
  Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
  for (size_t k = 0; k < g.size(); ++k) {
    lo = std::min(lo, g.start_ns[k]);
    hi = std::max(hi, g.start_ns[k] + std::max<Ns>(0, g.dur_ns[k]));
  }
  for (const Series& se : rh->series) {
    if (se.t_ns.empty()) continue;
    auto a = std::lower_bound(se.t_ns.begin(), se.t_ns.end(), lo);
    auto b = std::upper_bound(se.t_ns.begin(), se.t_ns.end(), hi);
    if (a != se.t_ns.begin()) --a;
    if (b != se.t_ns.end()) ++b;
    for (auto it = a; it != b; ++it) {
      const size_t k = static_cast<size_t>(it - se.t_ns.begin());
      put(sink, {Cell::of(rh->rank), Cell::of(rh->device), Cell::of(metric_name(se.metric)),
                 Cell::of(*it), Cell::of(se.value[k])});
    }
  }
}

void kernel_hw_rows(const RankSlot* s, const RankAnalysis& r, TableSink& sink) {
  if (s == nullptr || !s->ok) return;
  const GpuActivities& g = s->trace.gpu;
  for (const KernelHw& k : r.kernel_hw) {
    const size_t j = static_cast<size_t>(k.row);
    put(sink, {Cell::of(r.rank), Cell::of(g.correlation[j]), Cell::of(g.start_ns[j]),
               Cell::of(g.dur_ns[j]), Cell::of(s->trace.strings.str(g.name[j])),
               opt_real(k.clock_mhz), opt_real(k.power_w), opt_real(k.energy_j), opt_real(k.temp_c),
               opt_real(k.active_cycles), opt_real(k.matrix_busy_cycles), opt_real(k.matrix_flops),
               opt_real(k.vector_flops), opt_real(k.counter_clock_mhz)});
  }
}

void analysis_rows(RankStream s, const RankAnalysis& r, const AnalysisOptions& o, TableSink& sink) {
  switch (s) {
    case RankStream::kTemporalBreakdown:
      for (const BreakdownRow& b : r.breakdown) kTemporalBreakdownTable.put(sink, b);
      return;
    case RankStream::kIdleBreakdown:
      for (const IdleRow& x : r.idle)
        put(sink, {Cell::of(x.rank), Cell::of(x.device), Cell::of(x.stream), opt_iter(x.iteration),
                   Cell::of(x.gaps), Cell::of(x.host_wait_ns + x.kernel_wait_ns + x.other_ns),
                   Cell::of(x.host_wait_ns), Cell::of(x.kernel_wait_ns), Cell::of(x.other_ns)});
      return;
    case RankStream::kOverlap:
      for (const BreakdownRow& b : r.breakdown)
        put(sink, {Cell::of(b.rank), opt_iter(b.iteration), Cell::of(b.comm_ns),
                   Cell::of(b.overlapped_comm_ns), Cell::of(b.exposed_comm_ns),
                   share(b.overlapped_comm_ns, b.comm_ns)});
      return;
    case RankStream::kExposedComm:
      for (const ExposedRow& x : r.exposed) {
        std::vector<Cell> c{Cell::of(x.rank)};
        push_label(c, x.key);
        c.push_back(opt_text(op_class_name(x.op_class)));
        c.push_back(Cell::of(x.kernels));
        c.push_back(Cell::of(x.comm_ns));
        c.push_back(Cell::of(x.exposed_ns));
        c.push_back(share(x.exposed_ns, x.comm_ns));
        put(sink, c);
      }
      return;
    case RankStream::kLaunchOverhead:
      for (const LaunchRow& x : r.launch) {
        std::vector<Cell> c{Cell::of(x.rank)};
        push_label(c, x.key);
        for (int64_t v : {static_cast<int64_t>(x.kernels), static_cast<int64_t>(x.gaps), x.gap_ns,
                          x.gpu_wait_ns, x.prep_ns, x.call_ns, x.wait_ns, x.graph_ns,
                          x.no_launch_ns, x.overhead_ns()})
          c.push_back(Cell::of(v));
        put(sink, c);
      }
      return;
    case RankStream::kLaunchStats: {
      if (!r.ok) return;
      const LaunchStats& x = r.launch_stats;
      put(sink, {Cell::of(x.rank), Cell::of(x.launches), Cell::of(x.activities),
                 Cell::of(x.graph_launches),
                 x.graph_launches > 0 ? Cell::of(static_cast<double>(x.graph_activities) /
                                                 static_cast<double>(x.graph_launches))
                                      : Cell::null(),
                 Cell::of(x.cpu_mean_ns), Cell::of(x.cpu_p50_ns), Cell::of(x.cpu_p95_ns),
                 Cell::of(x.cpu_max_ns), Cell::of(x.delay_mean_ns), Cell::of(x.delay_p50_ns),
                 Cell::of(x.delay_p95_ns), Cell::of(x.delay_max_ns), Cell::of(x.short_kernels),
                 Cell::of(x.runtime_outliers), Cell::of(x.delay_outliers),
                 Cell::of(o.runtime_cutoff_ns), Cell::of(o.launch_delay_cutoff_ns)});
      return;
    }
    case RankStream::kQueueLength:
      for (const QueueRow& q : r.queues)
        put(sink, {Cell::of(q.rank), Cell::of(q.device), Cell::of(q.stream), Cell::of(q.launches),
                   Cell::of(q.max_queue), Cell::of(q.mean_queue), Cell::of(q.full_ns)});
      return;
    case RankStream::kIdleCauses:
      for (const IdleCauseRow& x : r.idle_causes) {
        std::string frames;
        for (const auto& [name, ns] : x.frames)
          frames += fmt::format(
              "{}{} ({:.1f}%)", frames.empty() ? "" : " | ", name,
              x.idle_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(x.idle_ns)
                            : 0.0);
        put(sink, {Cell::of(x.rank), opt_iter(x.iteration), Cell::of(std::string_view(x.cause)),
                   Cell::of(x.gaps), Cell::of(x.idle_ns), Cell::of(x.median_gap_ns),
                   Cell::of(x.max_gap_ns), Cell::of(std::string_view(frames))});
      }
      return;
    case RankStream::kHierarchyHw:
      for (const HwLevelRow& h : r.hw_levels) {
        std::vector<Cell> c = {Cell::of(r.rank), Cell::of(std::string_view(h.level))};
        push_label(c, h.key);
        c.push_back(Cell::of(h.time_ns));
        c.push_back(Cell::of(h.energy_j));
        c.push_back(h.time_ns > 0 ? Cell::of(h.energy_j / (static_cast<double>(h.time_ns) * 1e-9))
                                  : Cell::null());
        c.push_back(h.clock_ns > 0 ? Cell::of(h.clock_mhz_ns / static_cast<double>(h.clock_ns))
                                   : Cell::null());
        c.push_back(opt_real(h.max_temp_c));
        put(sink, c);
      }
      return;
    default:
      return;
  }
}

size_t hierarchy_level(RankStream s) {
  switch (s) {
    case RankStream::kHierarchyIteration:
      return 1;
    case RankStream::kHierarchyPhase:
      return 2;
    case RankStream::kHierarchyLayer:
      return 3;
    case RankStream::kHierarchyOperation:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

std::string_view rank_stream_table(RankStream s) {
  switch (s) {
#define CHOPPER_X(e, table) \
  case RankStream::e:       \
    return table;
    CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
  }
  return "";
}

const std::vector<RankStream>& all_rank_streams() {
  static const std::vector<RankStream> all = {
#define CHOPPER_X(e, table) RankStream::e,
      CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
  };
  return all;
}

TableSchema rank_table_schema(RankStream s) {
  switch (s) {
    case RankStream::kGpuActivities: {
      return TableSchema{
          "gpu_activities",
          "One row per GPU activity (kernel, memcpy, memset, sync) of every readable rank, "
          "with its place in the hierarchy and the rule that set each label",
          {
              {"rank", ColType::kInt, "rank (distributedInfo, else the file name)"},
              {"device", ColType::kInt, "GPU index on the rank's node"},
              {"stream", ColType::kInt, "stream (CUDA) or queue (HIP)"},
              {"kind", ColType::kText, "kernel, memcpy, memset or sync"},
              {"name", ColType::kText, "kernel or copy name as recorded"},
              {"correlation", ColType::kInt, "correlation id (links to the runtime call)"},
              {"start_ns", ColType::kInt, "GPU start, ns on the rank's clock"},
              {"dur_ns", ColType::kInt, "GPU duration, ns"},
              {"iteration", ColType::kInt,
               "iteration (ProfilerStep number) it was launched in, or whose GPU-side span holds "
               "it "
               "(gpu_step_span)"},
              {"phase", ColType::kText, "forward, backward, optimizer, other or data_dist"},
              {"layer", ColType::kInt, "transformer block index; NULL outside blocks"},
              {"operation", ColType::kText, "the operation that launched it"},
              {"op_class", ColType::kText,
               "gemm, conv, attention, norm, elementwise, embedding, loss, optimizer, a "
               "collective type, memcpy, memset, sync"},
              {"iteration_rule", ColType::kText, "rule that set iteration"},
              {"phase_rule", ColType::kText, "rule that set phase"},
              {"layer_rule", ColType::kText, "rule that set layer"},
              {"operation_rule", ColType::kText, "rule that set operation"},
              {"op_class_rule", ColType::kText, "rule that set op_class"},
          }};
    }
    case RankStream::kTemporalBreakdown:
      return kTemporalBreakdownTable.schema();
    case RankStream::kIdleBreakdown: {
      return TableSchema{
          "idle_breakdown",
          "Idle gaps of each stream by cause (HTA): host_wait = the launch was issued after "
          "the stream went idle; kernel_wait = a shorter gap than the threshold; other",
          {{"rank", I, "rank"},
           {"device", I, "GPU index"},
           {"stream", I, "stream"},
           {"iteration", I, "window of the gap's end (NULL = whole trace)"},
           {"gaps", I, "idle gaps"},
           {"idle_ns", I, "host_wait_ns + kernel_wait_ns + other_ns"},
           {"host_wait_ns", I, "gaps whose activity was launched after the stream went idle"},
           {"kernel_wait_ns", I, "other gaps shorter than the kernel-wait threshold"},
           {"other_ns", I, "the rest"}}};
    }
    case RankStream::kOverlap: {
      return TableSchema{
          "overlap",
          "Communication-computation overlap per rank and iteration window (NULL = whole "
          "trace): the share of communication time during which compute ran (HTA)",
          {{"rank", I, "rank"},
           {"iteration", I, "iteration window (NULL = whole trace)"},
           {"comm_ns", I, "|union(comm)|"},
           {"overlapped_comm_ns", I, "|union(comm) ∩ union(compute)|"},
           {"exposed_comm_ns", I, "comm_ns − overlapped_comm_ns"},
           {"overlap_share", R, "overlapped_comm_ns / comm_ns (NULL without comm)"}}};
    }
    case RankStream::kExposedComm: {
      return TableSchema{"exposed_comm",
                         "Communication per label: each instant of communication time goes to one "
                         "collective (no double counting); exposed = no compute ran",
                         cat(cat({{"rank", I, "rank"}}, label_cols()),
                             {{"op_class", T, "collective type class"},
                              {"kernels", I, "communication activities"},
                              {"comm_ns", I, "this label's share of |union(comm)|"},
                              {"exposed_comm_ns", I, "of which no compute ran"},
                              {"exposed_share", R, "exposed_comm_ns / comm_ns"}})};
    }
    case RankStream::kLaunchOverhead: {
      return TableSchema{
          "launch_overhead",
          "Gaps before compute kernels (Chopper's launch overhead), per label: the part where "
          "communication or copies ran is GPU wait, the rest splits into prep (before the host "
          "issued the launch) and call (launch call to kernel start); a graph's later kernels "
          "and kernels that waited on the GPU after their launch are named apart",
          cat(cat({{"rank", I, "rank"}}, label_cols()),
              {{"kernels", I, "compute kernels"},
               {"gaps", I, "kernels that started after the GPU's compute went idle"},
               {"gap_ns", I, "Σ (start − latest end of earlier compute kernels)"},
               {"gpu_wait_ns", I, "of gap_ns: communication or copies ran"},
               {"prep_ns", I, "of the rest: before the launch call started"},
               {"call_ns", I,
                "of the rest: from the launch call to the kernel start, up to the call's end + "
                "the launch-delay cutoff"},
               {"wait_ns", I, "of the rest: later still (launched, the GPU waited: event, sync)"},
               {"graph_gap_ns", I,
                "of the rest: a graph launch's kernel after its first (the GPU's gap)"},
               {"no_launch_ns", I, "of the rest: the kernel has no launch in the trace"},
               {"launch_overhead_ns", I, "prep_ns + call_ns"}})};
    }
    case RankStream::kLaunchStats: {
      return TableSchema{
          "launch_stats",
          "HTA's launch statistics per rank, one per launch call (a graph launch once): launch "
          "call "
          "duration (cpu), launch delay (first activity's start − launch call end, ≥ 0), short "
          "kernels and outliers",
          {{"rank", I, "rank"},
           {"launches", I, "launch calls with a GPU activity (a graph launch counts once)"},
           {"activities", I, "GPU activities with a launch call"},
           {"graph_launches", I, "of the launches: graph launches"},
           {"kernels_per_graph_launch", R, "GPU activities per graph launch, mean (NULL = none)"},
           {"cpu_mean_ns", I, "launch call duration, mean"},
           {"cpu_p50_ns", I, "median"},
           {"cpu_p95_ns", I, "95th percentile"},
           {"cpu_max_ns", I, "max"},
           {"launch_delay_mean_ns", I, "launch delay, mean"},
           {"launch_delay_p50_ns", I, "median"},
           {"launch_delay_p95_ns", I, "95th percentile"},
           {"launch_delay_max_ns", I, "max"},
           {"short_kernels", I, "launch call ≤ runtime cutoff and Σ GPU time < launch call"},
           {"runtime_outliers", I, "launch call > runtime cutoff"},
           {"launch_delay_outliers", I, "launch delay > delay cutoff"},
           {"runtime_cutoff_ns", I, "HTA default 50 µs"},
           {"launch_delay_cutoff_ns", I, "HTA default 100 µs"}}};
    }
    case RankStream::kQueueLength: {
      return TableSchema{"queue_length",
                         "Launch queue per stream (HTA): +1 at the launch call, −1 when its first "
                         "activity on the stream starts on the GPU (a graph launch once)",
                         {{"rank", I, "rank"},
                          {"device", I, "GPU index"},
                          {"stream", I, "stream"},
                          {"launches", I, "launch calls with an activity on the stream"},
                          {"max_queue", I, "longest queue"},
                          {"mean_queue", R, "time-weighted mean, first launch to last start"},
                          {"full_queue_ns", I, "time with queue ≥ the blocking length (1024)"}}};
    }
    case RankStream::kIdleCauses: {
      return TableSchema{
          "idle_causes",
          "What the host was doing while the GPU waited for it: the host-side idle time of each "
          "rank's iteration window by end-to-end component, with the gaps between compute "
          "kernels it lies in and the host frames that cover it (docs/metrics.md, Idle causes)",
          {{"rank", I, "rank"},
           {"iteration", I, "iteration window"},
           {"cause", T,
            "the end_to_end component: data_loading, host_sync, host_optimizer, host_stall, "
            "host_late or launch_overhead"},
           {"gaps", I, "gaps between compute kernels with time of this cause in the window"},
           {"idle_ns", I, "the cause's time: equals the component in rank_components"},
           {"median_gap_ns", I, "median of the cause's time per gap"},
           {"max_gap_ns", I, "largest of the cause's time per gap"},
           {"top_frames", T,
            "the host frames covering it, largest first (at most 5), each with its share of "
            "idle_ns; '(no host activity)' = nothing on the launching thread"}}};
    }
    case RankStream::kTelemetry: {
      return TableSchema{
          "telemetry",
          "Telemetry samples of each rank's GPU on its trace clock, over the traced "
          "span and one sample period either side",
          {{"rank", I, "rank"},
           {"device", I, "GPU index on the node"},
           {"metric", T, "power_w, sm_clock_mhz, temp_hotspot_c, … (unit in the name)"},
           {"t_ns", I, "sample time on the rank's trace clock"},
           {"value", R, "in the unit the metric names"}}};
    }
    case RankStream::kKernelHw: {
      return TableSchema{
          "kernel_hw",
          "Per GPU activity: telemetry at its time and its hardware counters (NULL = not recorded)",
          {{"rank", I, "rank"},
           {"correlation", I, "correlation id (joins gpu_activities)"},
           {"start_ns", I, "GPU start on the rank's clock (joins gpu_activities)"},
           {"dur_ns", I, "GPU duration"},
           {"name", T, "kernel or copy name"},
           {"clock_mhz", R, "SM/GFX clock, time-weighted mean of the interpolated samples"},
           {"power_w", R, "board power, time-weighted mean over the activity"},
           {"energy_j", R, "∫ power over the activity (the board's, not the kernel's alone)"},
           {"temp_c", R, "hotspot (else GPU) temperature, time-weighted mean"},
           {"active_cycles", R,
            "cycles active at the clock run: GRBM_GUI_ACTIVE ÷ XCDs, gpc__cycles_elapsed.max"},
           {"matrix_busy_cycles", R,
            "matrix-unit busy cycles: SQ_VALU_MFMA_BUSY_CYCLES, sm__pipe_tensor_cycles_active.sum"},
           {"matrix_flops", R,
            "issued matrix FLOPs of the dtype: 512 × SQ_INSTS_VALU_MFMA_MOPS_<dt>, "
            "sm__ops_path_tensor_src_<dt>_dst_*.sum"},
           {"vector_flops", R, "CUDA-core FLOPs from SASS counters (add + mul + 2 × fma)"},
           {"counter_clock_mhz", R,
            "active_cycles ÷ dur: the clock the counters imply (counters of the traced run "
            "only)"}}};
    }
    case RankStream::kHierarchyHw: {
      std::vector<ColumnSpec> cols = {{"rank", I, "rank"},
                                      {"level", T, "gpu, iteration, phase, layer, operation"}};
      for (ColumnSpec& c : label_cols()) cols.push_back(std::move(c));
      for (ColumnSpec c : std::vector<ColumnSpec>{
               {"time_ns", I,
                "GPU time given to the node (each moment to the first-started activity)"},
               {"energy_j", R, "∫ power over that time (the trace-guided energy model)"},
               {"mean_power_w", R, "energy_j ÷ time_ns"},
               {"mean_clock_mhz", R, "SM/GFX clock, time-weighted over that time"},
               {"max_temp_c", R, "hotspot (else GPU) temperature, largest sample over that time"}})
        cols.push_back(std::move(c));
      return TableSchema{
          "hierarchy_hw",
          "Per rank and hierarchy node (GPU, iteration, phase, layer, operation): GPU "
          "time, energy, power, clock and temperature from aligned telemetry",
          std::move(cols)};
    }
    case RankStream::kHierarchyIteration:
    case RankStream::kHierarchyPhase:
    case RankStream::kHierarchyLayer:
    case RankStream::kHierarchyOperation: {
      return TableSchema{
          "hierarchy",
          "GPU time at every level of the hierarchy: one row per node of the tree (gpu; gpu x "
          "iteration; ... x operation). Levels not in a row are NULL",
          {
              {"level", ColType::kText, "the deepest level of the row"},
              {"rank", ColType::kInt, "rank"},
              {"device", ColType::kInt, "GPU index"},
              {"iteration", ColType::kInt, "iteration"},
              {"phase", ColType::kText, "phase ('' = none)"},
              {"layer", ColType::kInt, "layer (-1 = none)"},
              {"operation", ColType::kText, "operation ('' = none)"},
              {"op_class", ColType::kText, "class with the most kernel time in the operation"},
              {"count", ColType::kInt, "GPU activities"},
              {"kernel_ns", ColType::kInt, "summed durations"},
              {"busy_ns", ColType::kInt, "union of the intervals per GPU, summed over GPUs"},
              {"first_start_ns", ColType::kInt, "earliest start"},
              {"last_end_ns", ColType::kInt, "latest end"},
              {"elapsed_ns", ColType::kInt, "last_end_ns - first_start_ns"},
              {"share_of_parent", ColType::kReal,
               "kernel_ns / the parent row's kernel_ns (fraction; the top level: of all)"},
          }};
    }
  }
  throw Error("rank_table_schema: unknown stream");
}

void rank_rows(RankStream s, const RankView& v, const AnalysisOptions& o, TableSink& sink) {
  switch (s) {
    case RankStream::kGpuActivities:
      if (v.slot != nullptr) gpu_activity_rows(*v.slot, sink);
      return;
    case RankStream::kTelemetry:
      telemetry_rows(v.slot, v.hw, sink);
      return;
    case RankStream::kKernelHw:
      if (v.analysis != nullptr) kernel_hw_rows(v.slot, *v.analysis, sink);
      return;
    case RankStream::kHierarchyIteration:
    case RankStream::kHierarchyPhase:
    case RankStream::kHierarchyLayer:
    case RankStream::kHierarchyOperation:
      if (v.hierarchy != nullptr && hierarchy_level(s) < v.hierarchy->size())
        hierarchy_level_rows(*v.hierarchy, hierarchy_level(s), sink);
      return;
    default:
      if (v.analysis != nullptr) analysis_rows(s, *v.analysis, o, sink);
      return;
  }
}

RankRows::~RankRows() = default;

void InMemoryRankRows::rows(RankStream s, TableSink& sink) {
  const HardwareRun* hw = ra_.hardware;
  switch (s) {
    case RankStream::kTelemetry:
      // The hardware's ranks, parallel to the run's.
      if (hw != nullptr)
        for (size_t i = 0; i < hw->ranks.size(); ++i)
          rank_rows(s,
                    RankView{i < run_.ranks.size() ? &run_.ranks[i] : nullptr, nullptr,
                             &hw->ranks[i], nullptr},
                    o_, sink);
      return;
    case RankStream::kHierarchyIteration:
    case RankStream::kHierarchyPhase:
    case RankStream::kHierarchyLayer:
    case RankStream::kHierarchyOperation:
      rank_rows(s, RankView{nullptr, nullptr, nullptr, hierarchy_}, o_, sink);
      return;
    case RankStream::kGpuActivities:
      for (const RankSlot& slot : run_.ranks) rank_rows(s, RankView{&slot}, o_, sink);
      return;
    default:
      for (size_t i = 0; i < ra_.ranks.size(); ++i) {
        const RankAnalysis& r = ra_.ranks[i];
        // The rank's slot: the same index when the analysis is parallel to the run.
        const RankSlot* slot = nullptr;
        if (i < run_.ranks.size() && run_.ranks[i].rank == r.rank) slot = &run_.ranks[i];
        for (size_t j = 0; slot == nullptr && j < run_.ranks.size(); ++j)
          if (run_.ranks[j].rank == r.rank) slot = &run_.ranks[j];
        rank_rows(s, RankView{slot, &r}, o_, sink);
      }
      return;
  }
}

void write_rank_table(RankStream s, RankRows& rows, TableSink& sink) {
  sink.begin(rank_table_schema(s));
  rows.rows(s, sink);
  sink.end();
}

void hierarchy_level_rows(const std::vector<Aggregation>& prefixes, size_t k, TableSink& sink) {
  const Aggregation& a = prefixes[k];
  // The kernel time of each row of the level above, by key, sorted: built for one level at a
  // time, so the whole tree is never held twice (it can have millions of rows).
  std::vector<std::pair<AggKey, Ns>> parent_ns;
  Ns top_total = 0;
  if (k == 0) {
    for (const AggRow& r : a.rows) top_total += r.kernel_ns;
  } else {
    const Aggregation& up = prefixes[k - 1];
    parent_ns.reserve(up.rows.size());
    for (const AggRow& r : up.rows) parent_ns.emplace_back(key_upto(r, up.levels, k), r.kernel_ns);
    std::sort(parent_ns.begin(), parent_ns.end());
    size_t n = 0;  // equal keys summed
    for (size_t i = 0; i < parent_ns.size(); ++i) {
      if (n > 0 && parent_ns[n - 1].first == parent_ns[i].first)
        parent_ns[n - 1].second += parent_ns[i].second;
      else
        parent_ns[n++] = parent_ns[i];
    }
    parent_ns.resize(n);
  }
  auto has = [&](Level l) {
    return std::find(a.levels.begin(), a.levels.end(), l) != a.levels.end();
  };
  std::vector<Cell> row(15);
  for (const AggRow& r : a.rows) {
    Ns parent = top_total;
    if (k > 0) {
      const AggKey want = key_upto(r, a.levels, k);
      auto it = std::lower_bound(parent_ns.begin(), parent_ns.end(), want,
                                 [](const auto& e, const AggKey& x) { return e.first < x; });
      parent = it == parent_ns.end() || it->first != want ? 0 : it->second;
    }
    row = {Cell::of(level_name(a.levels.back())),
           has(Level::kGpu) ? Cell::of(r.rank) : Cell::null(),
           has(Level::kGpu) ? Cell::of(r.device) : Cell::null(),
           has(Level::kIteration) ? opt_int(r.iteration, r.iteration != kNoId) : Cell::null(),
           has(Level::kPhase) ? Cell::of(phase_name(r.phase)) : Cell::null(),
           has(Level::kLayer) ? Cell::of(r.layer) : Cell::null(),
           has(Level::kOperation) ? Cell::of(a.operation(r)) : Cell::null(),
           has(Level::kOperation) ? Cell::of(op_class_name(r.op_class)) : Cell::null(),
           Cell::of(r.count),
           Cell::of(r.kernel_ns),
           Cell::of(r.busy_ns),
           Cell::of(r.first_start_ns),
           Cell::of(r.last_end_ns),
           Cell::of(r.elapsed_ns()),
           parent > 0 ? Cell::of(static_cast<double>(r.kernel_ns) / static_cast<double>(parent))
                      : Cell::null()};
    sink.row(row);
  }
}

}  // namespace chopper
