#pragma once
// The per-rank tables: tables whose rows each come from one rank alone (its trace, its partial
// analysis, its aligned hardware data), declared once here with their schema and the rows one
// rank gives. `chopper analyze` streams ranks (pipeline/): each rank's rows are made as the rank is
// done and kept in a spool (report/spool.hpp) until every rank is done; a run held in memory
// gives the same rows from its ranks in turn (InMemoryRankRows). The writers of the tables
// (analysis_report, hardware_report, hierarchy_report) take the rows from a RankRows, so the
// output is the same either way. Each declaration documents its columns (meaning, unit, NULL
// meaning); docs/schema.md's column tables are generated from them (scripts/schema_doc.py).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/series.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

// ---- The per-rank tables, each declared once (model/table_def.hpp).

inline constexpr auto kTemporalBreakdownTable = table<BreakdownRow>(
    "temporal_breakdown",
    "GPU time of each rank per iteration window and for the whole trace (iteration NULL): "
    "HTA's idle/compute/non-compute and TraceLens's compute/exposed comm/exposed memcpy/idle",
    column<&BreakdownRow::rank>("rank", "rank", kNever),
    column<BreakdownRow>("iteration", ColType::kInt, "iteration window",
                         "the whole trace: first start to last end",
                         [](const BreakdownRow& b) { return opt_iter(b.iteration); }),
    column<&BreakdownRow::start_ns>("start_ns", "window start", kNever),
    column<&BreakdownRow::total_ns>("total_ns", "window length", kNever),
    column<&BreakdownRow::compute_ns>("compute_ns", "|union of compute kernels and memsets|",
                                      kNever),
    column<&BreakdownRow::non_compute_ns>(
        "non_compute_ns", "total − compute − idle (communication and copies not under compute)",
        kNever),
    column<&BreakdownRow::idle_ns>("idle_ns", "total − |union of all GPU activities|", kNever),
    column<&BreakdownRow::exposed_comm_ns>("exposed_comm_ns", "|union(comm) \\ union(compute)|",
                                           kNever),
    column<&BreakdownRow::exposed_memcpy_ns>(
        "exposed_memcpy_ns", "|union(memcpy) \\ union(compute) \\ union(comm)|", kNever),
    column<&BreakdownRow::comm_ns>("comm_ns", "|union(comm)|", kNever),
    column<&BreakdownRow::memcpy_ns>("memcpy_ns", "|union(memcpy)|", kNever),
    column<BreakdownRow>(
        "compute_share", ColType::kReal, "compute_ns / total_ns", "an empty window (total_ns = 0)",
        [](const BreakdownRow& b) { return ratio_cell(b.compute_ns, b.total_ns); }),
    column<BreakdownRow>("idle_share", ColType::kReal, "idle_ns / total_ns",
                         "an empty window (total_ns = 0)",
                         [](const BreakdownRow& b) { return ratio_cell(b.idle_ns, b.total_ns); }));

// One GPU activity of a rank's trace, a row of gpu_activities: the trace gives its strings and
// label rules; its labels are NULL when the trace was not labelled.
struct GpuActivityView {
  const RankTrace& t;
  int64_t rank = -1;
  bool labelled = false;
  size_t a = 0;  // the activity's row in t.gpu
  const GpuActivities& g() const { return t.gpu; }
  // The rule of `rules` (a *_rule column of t.gpu) that set the activity's label, NULL if none.
  Cell rule(const std::vector<uint16_t>& rules) const {
    return labelled && rules[a] != kNoRule && rules[a] < t.label_rules.size()
               ? Cell::of(std::string_view(t.label_rules[rules[a]]))
               : Cell::null();
  }
};

inline constexpr auto kGpuActivitiesTable = table<GpuActivityView>(
    "gpu_activities",
    "One row per GPU activity (kernel, memcpy, memset, sync) of every readable rank, with its "
    "place in the hierarchy and the rule that set each label; ranks in order, activities in the "
    "order stored for the rank",
    column<GpuActivityView>("rank", ColType::kInt,
                            "rank: distributedInfo, else the file name; -1 if neither", kNever,
                            [](const GpuActivityView& v) { return Cell::of(v.rank); }),
    column<GpuActivityView>("device", ColType::kInt,
                            "GPU index on the rank's node (args device, else pid)", kNever,
                            [](const GpuActivityView& v) { return Cell::of(v.g().device[v.a]); }),
    column<GpuActivityView>("stream", ColType::kInt,
                            "CUDA stream or HIP queue (args stream, else tid)", kNever,
                            [](const GpuActivityView& v) { return Cell::of(v.g().stream[v.a]); }),
    column<GpuActivityView>(
        "kind", ColType::kText, "kernel, memcpy, memset or sync", kNever,
        [](const GpuActivityView& v) { return Cell::of(gpu_kind_name(v.g().kind[v.a])); }),
    column<GpuActivityView>(
        "name", ColType::kText, "kernel or copy name as recorded", kNever,
        [](const GpuActivityView& v) { return Cell::of(v.t.strings.str(v.g().name[v.a])); }),
    column<GpuActivityView>("correlation", ColType::kInt,
                            "correlation id (links to the runtime call)", "the event has none",
                            [](const GpuActivityView& v) {
                              const int64_t c = v.g().correlation[v.a];
                              return c != kNoId ? Cell::of(c) : Cell::null();
                            }),
    column<GpuActivityView>("start_ns", ColType::kInt, "GPU start, absolute, on the rank's clock",
                            kNever,
                            [](const GpuActivityView& v) { return Cell::of(v.g().start_ns[v.a]); }),
    column<GpuActivityView>("dur_ns", ColType::kInt, "GPU duration", kNever,
                            [](const GpuActivityView& v) { return Cell::of(v.g().dur_ns[v.a]); }),
    column<GpuActivityView>("iteration", ColType::kInt,
                            "number of the iteration range the activity was launched in, or whose "
                            "GPU-side span holds it (gpu_step_span)",
                            "no iteration",
                            [](const GpuActivityView& v) {
                              const int64_t i = v.g().iteration[v.a];
                              return v.labelled && i != kNoId ? Cell::of(i) : Cell::null();
                            }),
    column<GpuActivityView>(
        "phase", ColType::kText, "forward, backward, optimizer, other or data_dist", "no phase",
        [](const GpuActivityView& v) {
          const Phase p = v.g().phase[v.a];
          return v.labelled && p != Phase::kNone ? Cell::of(phase_name(p)) : Cell::null();
        }),
    column<GpuActivityView>("layer", ColType::kInt, "layer (transformer block) number", "no layer",
                            [](const GpuActivityView& v) {
                              const int32_t l = v.g().layer[v.a];
                              return v.labelled && l >= 0 ? Cell::of(l) : Cell::null();
                            }),
    column<GpuActivityView>(
        "operation", ColType::kText, "the operation that launched it", "no operation",
        [](const GpuActivityView& v) {
          const StrId o = v.g().operation[v.a];
          return v.labelled && o != 0 ? Cell::of(v.t.strings.str(o)) : Cell::null();
        }),
    column<GpuActivityView>(
        "op_class", ColType::kText,
        "gemm, conv, attention, norm, elementwise, embedding, loss, optimizer, all_reduce, "
        "all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv, barrier, "
        "collective, memcpy, memset, sync",
        "never (every activity gets a class)",
        [](const GpuActivityView& v) {
          const OpClass c = v.g().op_class[v.a];
          return v.labelled && c != OpClass::kNone ? Cell::of(op_class_name(c)) : Cell::null();
        }),
    column<GpuActivityView>("iteration_rule", ColType::kText,
                            "rule that set iteration (a label_rules.rule)", "label not set",
                            [](const GpuActivityView& v) { return v.rule(v.g().iteration_rule); }),
    column<GpuActivityView>("phase_rule", ColType::kText, "rule that set phase", "label not set",
                            [](const GpuActivityView& v) { return v.rule(v.g().phase_rule); }),
    column<GpuActivityView>("layer_rule", ColType::kText, "rule that set layer", "label not set",
                            [](const GpuActivityView& v) { return v.rule(v.g().layer_rule); }),
    column<GpuActivityView>("operation_rule", ColType::kText, "rule that set operation",
                            "label not set",
                            [](const GpuActivityView& v) { return v.rule(v.g().operation_rule); }),
    column<GpuActivityView>("op_class_rule", ColType::kText, "rule that set op_class", kNever,
                            [](const GpuActivityView& v) { return v.rule(v.g().op_class_rule); }));

inline constexpr auto kIdleBreakdownTable = table<IdleRow>(
    "idle_breakdown",
    "Idle gaps of each stream by cause (HTA): host_wait = the launch was issued after the stream "
    "went idle; kernel_wait = a shorter gap than the threshold; other",
    column<&IdleRow::rank>("rank", "rank", kNever),
    column<&IdleRow::device>("device", "GPU index", kNever),
    column<&IdleRow::stream>("stream", "stream", kNever),
    column<IdleRow>("iteration", ColType::kInt, "iteration window of the gap's end",
                    "the whole trace", [](const IdleRow& x) { return opt_iter(x.iteration); }),
    column<&IdleRow::gaps>("gaps", "idle gaps", kNever),
    column<IdleRow>(
        "idle_ns", ColType::kInt, "host_wait_ns + kernel_wait_ns + other_ns", kNever,
        [](const IdleRow& x) { return Cell::of(x.host_wait_ns + x.kernel_wait_ns + x.other_ns); }),
    column<&IdleRow::host_wait_ns>(
        "host_wait_ns", "gaps whose activity was launched after the stream went idle", kNever),
    column<&IdleRow::kernel_wait_ns>("kernel_wait_ns",
                                     "other gaps shorter than the kernel-wait threshold", kNever),
    column<&IdleRow::other_ns>("other_ns", "the rest", kNever));

inline constexpr auto kOverlapTable = table<BreakdownRow>(
    "overlap",
    "Communication-computation overlap per rank and iteration window (NULL = whole trace): the "
    "share of communication time during which compute ran (HTA)",
    column<&BreakdownRow::rank>("rank", "rank", kNever),
    column<BreakdownRow>("iteration", ColType::kInt, "iteration window", "the whole trace",
                         [](const BreakdownRow& b) { return opt_iter(b.iteration); }),
    column<&BreakdownRow::comm_ns>("comm_ns", "|union(comm)|", kNever),
    column<&BreakdownRow::overlapped_comm_ns>("overlapped_comm_ns",
                                              "|union(comm) ∩ union(compute)|", kNever),
    column<&BreakdownRow::exposed_comm_ns>("exposed_comm_ns", "comm_ns − overlapped_comm_ns",
                                           kNever),
    column<BreakdownRow>("overlap_share", ColType::kReal, "overlapped_comm_ns / comm_ns",
                         "no communication in the window (comm_ns = 0)", [](const BreakdownRow& b) {
                           return ratio_cell(b.overlapped_comm_ns, b.comm_ns);
                         }));

inline constexpr auto kExposedCommTable = table<ExposedRow>(
    "exposed_comm",
    "Communication per label: each instant of communication time goes to one collective (no "
    "double counting); exposed = no compute ran",
    column<&ExposedRow::rank>("rank", "rank", kNever), label_columns<&ExposedRow::key>(),
    column<ExposedRow>("op_class", ColType::kText, "collective type class",
                       "the activities have no class",
                       [](const ExposedRow& x) { return opt_text(op_class_name(x.op_class)); }),
    column<&ExposedRow::kernels>("kernels", "communication activities", kNever),
    column<&ExposedRow::comm_ns>("comm_ns", "this label's share of |union(comm)|", kNever),
    column<&ExposedRow::exposed_ns>("exposed_comm_ns", "of which no compute ran", kNever),
    column<ExposedRow>("exposed_share", ColType::kReal, "exposed_comm_ns / comm_ns",
                       "comm_ns = 0 (the activities have no duration)",
                       [](const ExposedRow& x) { return ratio_cell(x.exposed_ns, x.comm_ns); }));

inline constexpr auto kLaunchOverheadTable = table<LaunchRow>(
    "launch_overhead",
    "Gaps before compute kernels (Chopper's launch overhead), per label: the part where "
    "communication or copies ran is GPU wait, the rest splits into prep (before the host issued "
    "the launch) and call (launch call to kernel start); a graph's later kernels and kernels that "
    "waited on the GPU after their launch are named apart",
    column<&LaunchRow::rank>("rank", "rank", kNever), label_columns<&LaunchRow::key>(),
    column<&LaunchRow::kernels>("kernels", "compute kernels", kNever),
    column<&LaunchRow::gaps>("gaps", "kernels that started after the GPU's compute went idle",
                             kNever),
    column<&LaunchRow::gap_ns>("gap_ns", "Σ (start − latest end of earlier compute kernels)",
                               kNever),
    column<&LaunchRow::gpu_wait_ns>("gpu_wait_ns", "of gap_ns: communication or copies ran",
                                    kNever),
    column<&LaunchRow::prep_ns>("prep_ns", "of the rest: before the launch call started", kNever),
    column<&LaunchRow::call_ns>("call_ns",
                                "of the rest: from the launch call to the kernel start, up to the "
                                "call's end + the launch-delay cutoff",
                                kNever),
    column<&LaunchRow::wait_ns>(
        "wait_ns", "of the rest: later still (launched, the GPU waited: event, sync)", kNever),
    column<&LaunchRow::graph_ns>(
        "graph_gap_ns", "of the rest: a graph launch's kernel after its first (the GPU's gap)",
        kNever),
    column<&LaunchRow::no_launch_ns>("no_launch_ns",
                                     "of the rest: the kernel has no launch in the trace", kNever),
    column<LaunchRow>("launch_overhead_ns", ColType::kInt, "prep_ns + call_ns", kNever,
                      [](const LaunchRow& x) { return Cell::of(x.overhead_ns()); }));

// A rank's launch statistics with the cutoffs they were taken with (a row of launch_stats).
struct LaunchStatsView {
  const LaunchStats& x;
  const AnalysisOptions& o;
};

inline constexpr auto kLaunchStatsTable = table<LaunchStatsView>(
    "launch_stats",
    "HTA's launch statistics per rank, one per launch call (a graph launch once): launch call "
    "duration (cpu), launch delay (first activity's start − launch call end, ≥ 0), short kernels "
    "and outliers",
    column<LaunchStatsView>("rank", ColType::kInt, "rank", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.rank); }),
    column<LaunchStatsView>("launches", ColType::kInt,
                            "launch calls with a GPU activity (a graph launch counts once)", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.launches); }),
    column<LaunchStatsView>("activities", ColType::kInt, "GPU activities with a launch call",
                            kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.activities); }),
    column<LaunchStatsView>("graph_launches", ColType::kInt, "of the launches: graph launches",
                            kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.graph_launches); }),
    column<LaunchStatsView>("kernels_per_graph_launch", ColType::kReal,
                            "GPU activities per graph launch, mean", "no graph launches",
                            [](const LaunchStatsView& v) {
                              return v.x.graph_launches > 0
                                         ? Cell::of(static_cast<double>(v.x.graph_activities) /
                                                    static_cast<double>(v.x.graph_launches))
                                         : Cell::null();
                            }),
    column<LaunchStatsView>("cpu_mean_ns", ColType::kInt, "launch call duration, mean", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.cpu_mean_ns); }),
    column<LaunchStatsView>("cpu_p50_ns", ColType::kInt, "launch call duration, median", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.cpu_p50_ns); }),
    column<LaunchStatsView>("cpu_p95_ns", ColType::kInt, "launch call duration, 95th percentile",
                            kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.cpu_p95_ns); }),
    column<LaunchStatsView>("cpu_max_ns", ColType::kInt, "launch call duration, max", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.cpu_max_ns); }),
    column<LaunchStatsView>("launch_delay_mean_ns", ColType::kInt, "launch delay, mean", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.delay_mean_ns); }),
    column<LaunchStatsView>("launch_delay_p50_ns", ColType::kInt, "launch delay, median", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.delay_p50_ns); }),
    column<LaunchStatsView>("launch_delay_p95_ns", ColType::kInt, "launch delay, 95th percentile",
                            kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.delay_p95_ns); }),
    column<LaunchStatsView>("launch_delay_max_ns", ColType::kInt, "launch delay, max", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.delay_max_ns); }),
    column<LaunchStatsView>("short_kernels", ColType::kInt,
                            "launch call ≤ runtime cutoff and Σ GPU time < launch call", kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.short_kernels); }),
    column<LaunchStatsView>(
        "runtime_outliers", ColType::kInt, "launch call > runtime cutoff", kNever,
        [](const LaunchStatsView& v) { return Cell::of(v.x.runtime_outliers); }),
    column<LaunchStatsView>("launch_delay_outliers", ColType::kInt, "launch delay > delay cutoff",
                            kNever,
                            [](const LaunchStatsView& v) { return Cell::of(v.x.delay_outliers); }),
    column<LaunchStatsView>(
        "runtime_cutoff_ns", ColType::kInt, "the runtime cutoff (HTA default 50 µs)", kNever,
        [](const LaunchStatsView& v) { return Cell::of(v.o.runtime_cutoff_ns); }),
    column<LaunchStatsView>(
        "launch_delay_cutoff_ns", ColType::kInt, "the delay cutoff (HTA default 100 µs)", kNever,
        [](const LaunchStatsView& v) { return Cell::of(v.o.launch_delay_cutoff_ns); }));

inline constexpr auto kQueueLengthTable = table<QueueRow>(
    "queue_length",
    "Launch queue per stream (HTA): +1 at the launch call, −1 when its first activity on the "
    "stream starts on the GPU (a graph launch once)",
    column<&QueueRow::rank>("rank", "rank", kNever),
    column<&QueueRow::device>("device", "GPU index", kNever),
    column<&QueueRow::stream>("stream", "stream", kNever),
    column<&QueueRow::launches>("launches", "launch calls with an activity on the stream", kNever),
    column<&QueueRow::max_queue>("max_queue", "longest queue", kNever),
    column<&QueueRow::mean_queue>("mean_queue", "time-weighted mean, first launch to last start",
                                  kNever),
    column<&QueueRow::full_ns>("full_queue_ns", "time with queue ≥ the blocking length (1024)",
                               kNever));

// A row of idle_causes with its top frames written out (the cell views this text).
struct IdleCauseView {
  const IdleCauseRow& x;
  std::string top_frames;
};

inline constexpr auto kIdleCausesTable = table<IdleCauseView>(
    "idle_causes",
    "What the host was doing while the GPU waited for it: the host-side idle time of each rank's "
    "iteration window by end-to-end component, with the gaps between compute kernels it lies in "
    "and the host frames that cover it (docs/metrics.md, Idle causes)",
    column<IdleCauseView>("rank", ColType::kInt, "rank", kNever,
                          [](const IdleCauseView& v) { return Cell::of(v.x.rank); }),
    column<IdleCauseView>("iteration", ColType::kInt, "iteration window", kNever,
                          [](const IdleCauseView& v) { return opt_iter(v.x.iteration); }),
    column<IdleCauseView>(
        "cause", ColType::kText,
        "the end_to_end component: data_loading, host_sync, host_optimizer, host_stall, host_late "
        "or launch_overhead",
        kNever, [](const IdleCauseView& v) { return Cell::of(std::string_view(v.x.cause)); }),
    column<IdleCauseView>("gaps", ColType::kInt,
                          "gaps between compute kernels with time of this cause in the window",
                          kNever, [](const IdleCauseView& v) { return Cell::of(v.x.gaps); }),
    column<IdleCauseView>("idle_ns", ColType::kInt,
                          "the cause's time: equals the component in rank_components", kNever,
                          [](const IdleCauseView& v) { return Cell::of(v.x.idle_ns); }),
    column<IdleCauseView>("median_gap_ns", ColType::kInt, "median of the cause's time per gap",
                          kNever,
                          [](const IdleCauseView& v) { return Cell::of(v.x.median_gap_ns); }),
    column<IdleCauseView>("max_gap_ns", ColType::kInt, "largest of the cause's time per gap",
                          kNever, [](const IdleCauseView& v) { return Cell::of(v.x.max_gap_ns); }),
    column<IdleCauseView>(
        "top_frames", ColType::kText,
        "the host frames covering it, largest first (at most 5), each with its share of idle_ns; "
        "'(no host op: Python or untraced code)' = no host op on the launching thread, '(no "
        "host ops in the trace)' = a GPU-only profile",
        kNever, [](const IdleCauseView& v) { return Cell::of(std::string_view(v.top_frames)); }));

// One telemetry sample of a rank's GPU (a row of telemetry).
struct TelemetrySampleView {
  const RankHardware& hw;
  const Series& series;
  size_t k = 0;  // the sample's index in series
};

inline constexpr auto kTelemetryTable = table<TelemetrySampleView>(
    "telemetry",
    "Telemetry samples of each rank's GPU on its trace clock, over the traced span and one sample "
    "period either side",
    column<TelemetrySampleView>("rank", ColType::kInt, "rank", kNever,
                                [](const TelemetrySampleView& v) { return Cell::of(v.hw.rank); }),
    column<TelemetrySampleView>("device", ColType::kInt, "GPU index on the node", kNever,
                                [](const TelemetrySampleView& v) { return Cell::of(v.hw.device); }),
    column<TelemetrySampleView>(
        "metric", ColType::kText, "power_w, sm_clock_mhz, temp_hotspot_c, … (unit in the name)",
        kNever,
        [](const TelemetrySampleView& v) { return Cell::of(metric_name(v.series.metric)); }),
    column<TelemetrySampleView>(
        "t_ns", ColType::kInt, "sample time on the rank's trace clock", kNever,
        [](const TelemetrySampleView& v) { return Cell::of(v.series.t_ns[v.k]); }),
    column<TelemetrySampleView>(
        "value", ColType::kReal, "in the unit the metric names", kNever,
        [](const TelemetrySampleView& v) { return Cell::of(v.series.value[v.k]); }));

// The hardware view of one GPU activity with the activity's columns (a row of kernel_hw).
struct KernelHwView {
  int64_t rank = -1;
  const RankTrace& t;
  const KernelHw& k;
  size_t row() const { return static_cast<size_t>(k.row); }
};

inline constexpr auto kKernelHwTable = table<KernelHwView>(
    "kernel_hw",
    "Per GPU activity: telemetry at its time and its hardware counters (NULL = not recorded)",
    column<KernelHwView>("rank", ColType::kInt, "rank", kNever,
                         [](const KernelHwView& v) { return Cell::of(v.rank); }),
    column<KernelHwView>("correlation", ColType::kInt, "correlation id (joins gpu_activities)",
                         "the event has none",
                         [](const KernelHwView& v) {
                           const int64_t c = v.t.gpu.correlation[v.row()];
                           return c == kNoId ? Cell::null() : Cell::of(c);
                         }),
    column<KernelHwView>("start_ns", ColType::kInt,
                         "GPU start on the rank's clock (joins gpu_activities)", kNever,
                         [](const KernelHwView& v) { return Cell::of(v.t.gpu.start_ns[v.row()]); }),
    column<KernelHwView>("dur_ns", ColType::kInt, "GPU duration", kNever,
                         [](const KernelHwView& v) { return Cell::of(v.t.gpu.dur_ns[v.row()]); }),
    column<KernelHwView>(
        "name", ColType::kText, "kernel or copy name", kNever,
        [](const KernelHwView& v) { return Cell::of(v.t.strings.str(v.t.gpu.name[v.row()])); }),
    column<KernelHwView>("clock_mhz", ColType::kReal,
                         "SM/GFX clock, time-weighted mean of the interpolated samples",
                         "the rank has no clock telemetry",
                         [](const KernelHwView& v) { return opt_real(v.k.clock_mhz); }),
    column<KernelHwView>(
        "power_w", ColType::kReal, "board power, time-weighted mean over the activity",
        "the rank has no power telemetry, or dur_ns = 0 and no power sample at or after its start",
        [](const KernelHwView& v) { return opt_real(v.k.power_w); }),
    column<KernelHwView>("energy_j", ColType::kReal,
                         "∫ power over the activity (the board's, not the kernel's alone)",
                         "the rank has no power telemetry",
                         [](const KernelHwView& v) { return opt_real(v.k.energy_j); }),
    column<KernelHwView>("temp_c", ColType::kReal,
                         "hotspot (else GPU) temperature, time-weighted mean",
                         "the rank has no temperature telemetry",
                         [](const KernelHwView& v) { return opt_real(v.k.temp_c); }),
    column<KernelHwView>(
        "active_cycles", ColType::kReal,
        "cycles active at the clock run: GRBM_GUI_ACTIVE ÷ XCDs, gpc__cycles_elapsed.max",
        "not counted", [](const KernelHwView& v) { return opt_real(v.k.active_cycles); }),
    column<KernelHwView>(
        "matrix_busy_cycles", ColType::kReal,
        "matrix-unit busy cycles: SQ_VALU_MFMA_BUSY_CYCLES, sm__pipe_tensor_cycles_active.sum",
        "not counted", [](const KernelHwView& v) { return opt_real(v.k.matrix_busy_cycles); }),
    column<KernelHwView>("matrix_flops", ColType::kReal,
                         "issued matrix FLOPs of the dtype: 512 × SQ_INSTS_VALU_MFMA_MOPS_<dt>, "
                         "sm__ops_path_tensor_src_<dt>_dst_*.sum",
                         "not counted",
                         [](const KernelHwView& v) { return opt_real(v.k.matrix_flops); }),
    column<KernelHwView>("vector_flops", ColType::kReal,
                         "CUDA-core FLOPs from SASS counters (add + mul + 2 × fma)", "not counted",
                         [](const KernelHwView& v) { return opt_real(v.k.vector_flops); }),
    column<KernelHwView>(
        "counter_clock_mhz", ColType::kReal, "active_cycles ÷ dur: the clock the counters imply",
        "active_cycles not counted in the traced run itself (a separate counter pass), or dur_ns "
        "= 0",
        [](const KernelHwView& v) { return opt_real(v.k.counter_clock_mhz); }));

inline constexpr auto kHierarchyHwTable = table<HwLevelRow>(
    "hierarchy_hw",
    "Per rank and hierarchy node (GPU, iteration, phase, layer, operation): GPU time, energy, "
    "power, clock and temperature from aligned telemetry",
    column<&HwLevelRow::rank>("rank", "rank", kNever),
    column<&HwLevelRow::level>("level", "gpu, iteration, phase, layer, operation", kNever),
    label_columns<&HwLevelRow::key>(),
    column<&HwLevelRow::time_ns>(
        "time_ns", "GPU time given to the node (each moment to the first-started activity)",
        kNever),
    column<&HwLevelRow::energy_j>("energy_j",
                                  "∫ power over that time (the trace-guided energy model)", kNever),
    column<HwLevelRow>("mean_power_w", ColType::kReal, "energy_j ÷ time_ns", "time_ns = 0",
                       [](const HwLevelRow& h) {
                         return h.time_ns > 0
                                    ? Cell::of(h.energy_j / (static_cast<double>(h.time_ns) * 1e-9))
                                    : Cell::null();
                       }),
    column<HwLevelRow>(
        "mean_clock_mhz", ColType::kReal, "SM/GFX clock, time-weighted over that time",
        "the rank has no clock telemetry",
        [](const HwLevelRow& h) {
          return h.clock_ns > 0 ? Cell::of(h.clock_mhz_ns / static_cast<double>(h.clock_ns))
                                : Cell::null();
        }),
    column<&HwLevelRow::max_temp_c>(
        "max_temp_c", "hotspot (else GPU) temperature, largest sample over that time",
        "the rank has no temperature telemetry, or no sample in or after that time"));

// One row of the hierarchy table: a row of an aggregation and its parent's kernel time.
struct HierarchyRowView {
  const Aggregation& a;
  const AggRow& r;
  Ns parent_ns = 0;  // the parent row's kernel time; 0 = none
  bool has(Level l) const {
    return std::find(a.levels.begin(), a.levels.end(), l) != a.levels.end();
  }
};

// The hierarchy table: written by write_hierarchy (report/hierarchy_report.hpp) from every rank's
// GPU rows and the per-rank streams of its deeper levels.
inline constexpr auto kHierarchyTable = table<HierarchyRowView>(
    "hierarchy",
    "GPU time at every level of the hierarchy: one row per node of the tree GPU > iteration > "
    "phase > layer > operation (every group of gpu; gpu × iteration; gpu × iteration × phase; "
    "… × layer; … × operation); the levels below a row's are NULL",
    column<HierarchyRowView>(
        "level", ColType::kText,
        "deepest level of the row: gpu, iteration, phase, layer, operation", kNever,
        [](const HierarchyRowView& v) { return Cell::of(level_name(v.a.levels.back())); }),
    column<HierarchyRowView>("rank", ColType::kInt, "rank (-1 = unknown)",
                             "never in analyze output",
                             [](const HierarchyRowView& v) {
                               return v.has(Level::kGpu) ? Cell::of(v.r.rank) : Cell::null();
                             }),
    column<HierarchyRowView>("device", ColType::kInt, "GPU index", "never in analyze output",
                             [](const HierarchyRowView& v) {
                               return v.has(Level::kGpu) ? Cell::of(v.r.device) : Cell::null();
                             }),
    column<HierarchyRowView>("iteration", ColType::kInt, "iteration",
                             "gpu rows, and on deeper rows the group with no iteration",
                             [](const HierarchyRowView& v) {
                               return v.has(Level::kIteration) && v.r.iteration != kNoId
                                          ? Cell::of(v.r.iteration)
                                          : Cell::null();
                             }),
    column<HierarchyRowView>(
        "phase", ColType::kText, "phase ('' = no phase)", "rows above the phase level",
        [](const HierarchyRowView& v) {
          return v.has(Level::kPhase) ? Cell::of(phase_name(v.r.phase)) : Cell::null();
        }),
    column<HierarchyRowView>("layer", ColType::kInt, "layer (-1 = no layer)",
                             "rows above the layer level",
                             [](const HierarchyRowView& v) {
                               return v.has(Level::kLayer) ? Cell::of(v.r.layer) : Cell::null();
                             }),
    column<HierarchyRowView>("operation", ColType::kText, "operation ('' = no operation)",
                             "rows above the operation level",
                             [](const HierarchyRowView& v) {
                               return v.has(Level::kOperation) ? Cell::of(v.a.operation(v.r))
                                                               : Cell::null();
                             }),
    column<HierarchyRowView>(
        "op_class", ColType::kText,
        "class with the most kernel time among the row's activities (ties: the first in "
        "gpu_activities' op_class list; '' if that time is 0)",
        "rows other than operation rows",
        [](const HierarchyRowView& v) {
          return v.has(Level::kOperation) ? Cell::of(op_class_name(v.r.op_class)) : Cell::null();
        }),
    column<HierarchyRowView>("count", ColType::kInt, "GPU activities in the row", kNever,
                             [](const HierarchyRowView& v) { return Cell::of(v.r.count); }),
    column<HierarchyRowView>("kernel_ns", ColType::kInt, "Σ dur_ns", kNever,
                             [](const HierarchyRowView& v) { return Cell::of(v.r.kernel_ns); }),
    column<HierarchyRowView>("busy_ns", ColType::kInt,
                             "union of [start, start + dur) per GPU, summed over GPUs", kNever,
                             [](const HierarchyRowView& v) { return Cell::of(v.r.busy_ns); }),
    column<HierarchyRowView>(
        "first_start_ns", ColType::kInt, "earliest start_ns", kNever,
        [](const HierarchyRowView& v) { return Cell::of(v.r.first_start_ns); }),
    column<HierarchyRowView>("last_end_ns", ColType::kInt, "latest start_ns + dur_ns", kNever,
                             [](const HierarchyRowView& v) { return Cell::of(v.r.last_end_ns); }),
    column<HierarchyRowView>("elapsed_ns", ColType::kInt, "last_end_ns − first_start_ns", kNever,
                             [](const HierarchyRowView& v) { return Cell::of(v.r.elapsed_ns()); }),
    column<HierarchyRowView>(
        "share_of_parent", ColType::kReal,
        "kernel_ns / the parent row's kernel_ns; gpu rows: / Σ kernel_ns of all gpu rows",
        "the parent's kernel_ns is 0",
        [](const HierarchyRowView& v) { return ratio_cell(v.r.kernel_ns, v.parent_ns); }));

// Each stream of per-rank rows: X(enumerator, its table's declaration). The four hierarchy
// streams are the hierarchy table's levels below the GPU (whose shares are of a parent of the same
// rank); its GPU level is written from every rank's GPU rows at once (its share is of the whole
// run).
#define CHOPPER_RANK_STREAMS(X)                  \
  X(kGpuActivities, kGpuActivitiesTable)         \
  X(kTemporalBreakdown, kTemporalBreakdownTable) \
  X(kIdleBreakdown, kIdleBreakdownTable)         \
  X(kOverlap, kOverlapTable)                     \
  X(kExposedComm, kExposedCommTable)             \
  X(kLaunchOverhead, kLaunchOverheadTable)       \
  X(kLaunchStats, kLaunchStatsTable)             \
  X(kQueueLength, kQueueLengthTable)             \
  X(kIdleCauses, kIdleCausesTable)               \
  X(kTelemetry, kTelemetryTable)                 \
  X(kKernelHw, kKernelHwTable)                   \
  X(kHierarchyHw, kHierarchyHwTable)             \
  X(kHierarchyIteration, kHierarchyTable)        \
  X(kHierarchyPhase, kHierarchyTable)            \
  X(kHierarchyLayer, kHierarchyTable)            \
  X(kHierarchyOperation, kHierarchyTable)

enum class RankStream : uint8_t {
#define CHOPPER_X(e, def) e,
  CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
};
inline constexpr size_t kRankStreamCount = 0
#define CHOPPER_X(e, def) +1
    CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
    ;
std::string_view rank_stream_table(RankStream s);
// Every stream, in declaration order.
const std::vector<RankStream>& all_rank_streams();

// What one rank's rows are made from. Any pointer may be null (that part gives no rows).
struct RankView {
  const RankSlot* slot = nullptr;  // the rank's trace (gpu_activities, telemetry, kernel_hw)
  const RankAnalysis* analysis = nullptr;  // its partial
  const RankHardware* hw = nullptr;        // its aligned telemetry (telemetry)
  // aggregate_prefixes of the hierarchy's levels (gpu, iteration, phase, layer, operation), of
  // this rank alone or of the whole run (the hierarchy streams take this rank's rows).
  const std::vector<Aggregation>* hierarchy = nullptr;
};

// The schema of the table a stream belongs to (its declaration's).
TableSchema rank_table_schema(RankStream s);
// One rank's rows of a stream: sink.row() only (the caller begins and ends the table).
void rank_rows(RankStream s, const RankView& v, const AnalysisOptions& o, TableSink& sink);

// Where a table writer takes the per-rank rows from: every rank's rows of a stream, in rank order.
class RankRows {
 public:
  virtual ~RankRows();
  virtual void rows(RankStream s, TableSink& sink) = 0;
};

// The rows of a run in memory (its ranks as analyze_run analysed them: ra.ranks and hw->ranks
// parallel to run.ranks). `hierarchy` (may be null: no hierarchy rows) is aggregate_prefixes of
// the whole run.
class InMemoryRankRows : public RankRows {
 public:
  InMemoryRankRows(const Run& run, const RunAnalysis& ra, const AnalysisOptions& o,
                   const std::vector<Aggregation>* hierarchy = nullptr)
      : run_(run), ra_(ra), o_(o), hierarchy_(hierarchy) {}
  void rows(RankStream s, TableSink& sink) override;

 private:
  const Run& run_;
  const RunAnalysis& ra_;
  const AnalysisOptions& o_;
  const std::vector<Aggregation>* hierarchy_;
};

// Writes the whole table of a stream: begin, every rank's rows, end.
void write_rank_table(RankStream s, RankRows& rows, TableSink& sink);

// The hierarchy table's rows of prefixes[k], each with its share of the parent row's kernel time
// (the parent is in prefixes[k - 1]; for k = 0, of the kernel time of every row of prefixes[0]).
void hierarchy_level_rows(const std::vector<Aggregation>& prefixes, size_t k, TableSink& sink);

}  // namespace chopper
