// The part codec (pipeline/part_codec.hpp) gives back every field of a RankPart: a part whose
// every field holds a value other than its default is encoded, decoded and compared field by
// field (comparing re-encoded bytes would pass a field the encoder and the decoder both miss).
// Each struct's field count is checked too: a field added to one of them fails here until the
// codec carries it and this test sets and compares it.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/pipeline/part_codec.hpp"

namespace chopper {
namespace {

// The number of fields of an aggregate: how many initializers T{...} takes (each AnyField converts
// to any member type).
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT(google-explicit-constructor): declared only, never called
};
template <class T, class... A>
constexpr size_t field_count() {
  if constexpr (requires { T{A{}..., AnyField{}}; })
    return field_count<T, A..., AnyField>();
  else
    return sizeof...(A);
}

// A field added to one of these is a field the codec must carry (or state it does not, as the
// spooled rows) and this test must set and compare.
// RankPart::kept is not encoded: ranks are kept in memory only by a run of one process.
static_assert(field_count<RankPart>() == 16);
static_assert(field_count<RankSlot>() == 8);
static_assert(field_count<RankActivity>() == 10);
static_assert(field_count<RankAnalysis>() == 25);
static_assert(field_count<LabelKey>() == 4);
static_assert(field_count<BreakdownRow>() == 12);
static_assert(field_count<ExposedRow>() == 6);
static_assert(field_count<OpInstance>() == 10);
static_assert(field_count<LaunchStats>() == 16);
static_assert(field_count<IdleCauseRow>() == 8);
static_assert(field_count<NameStat>() == 8);
static_assert(field_count<CollRecord>() == 15);
static_assert(field_count<WaterfallUnit>() == 25);
static_assert(field_count<PowerRow>() == 21);
static_assert(field_count<AggRow>() == 12);
static_assert(field_count<CoverageRow>() == 7);
static_assert(field_count<DiagnosticRow>() == 12);
static_assert(field_count<CounterJoin>() == 9);
static_assert(field_count<SpoolChunk>() == 3);

#define CHOPPER_EQ(field) EXPECT_EQ(a.field, b.field) << what << "." #field

void expect_key(const LabelKey& a, const LabelKey& b, const std::string& what) {
  CHOPPER_EQ(iteration);
  CHOPPER_EQ(phase);
  CHOPPER_EQ(layer);
  CHOPPER_EQ(operation);
}

void expect_busy(const BusyTime& a, const BusyTime& b, const std::string& what) {
  EXPECT_EQ(a.starts(), b.starts()) << what;
  EXPECT_EQ(a.ends(), b.ends()) << what;
}

void expect_activity(const RankActivity& a, const RankActivity& b) {
  const std::string what = "activity";
  CHOPPER_EQ(ok);
  CHOPPER_EQ(rank);
  CHOPPER_EQ(device);
  CHOPPER_EQ(devices);
  expect_busy(a.busy, b.busy, "activity.busy");
  expect_busy(a.compute, b.compute, "activity.compute");
  expect_busy(a.other, b.other, "activity.other");
  CHOPPER_EQ(pids);
  CHOPPER_EQ(gpu_first_ns);
  CHOPPER_EQ(gpu_last_ns);
}

// The slot is carried as its shell (slot_shell): everything but the trace's events.
void expect_slot(const RankSlot& a, const RankSlot& b) {
  const std::string what = "slot";
  CHOPPER_EQ(file);
  CHOPPER_EQ(rank);
  CHOPPER_EQ(ok);
  CHOPPER_EQ(error);
  CHOPPER_EQ(missing);
  CHOPPER_EQ(first_ns);
  CHOPPER_EQ(last_ns);
  CHOPPER_EQ(trace.file);
  CHOPPER_EQ(trace.meta.rank);
  CHOPPER_EQ(trace.meta.world_size);
  CHOPPER_EQ(trace.meta.backend);
  CHOPPER_EQ(trace.meta.rank_source);
}

void expect_breakdown(const BreakdownRow& a, const BreakdownRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(iteration);
  CHOPPER_EQ(start_ns);
  CHOPPER_EQ(total_ns);
  CHOPPER_EQ(compute_ns);
  CHOPPER_EQ(non_compute_ns);
  CHOPPER_EQ(idle_ns);
  CHOPPER_EQ(exposed_comm_ns);
  CHOPPER_EQ(exposed_memcpy_ns);
  CHOPPER_EQ(comm_ns);
  CHOPPER_EQ(overlapped_comm_ns);
  CHOPPER_EQ(memcpy_ns);
}

void expect_exposed(const ExposedRow& a, const ExposedRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  expect_key(a.key, b.key, what + ".key");
  CHOPPER_EQ(op_class);
  CHOPPER_EQ(kernels);
  CHOPPER_EQ(comm_ns);
  CHOPPER_EQ(exposed_ns);
}

void expect_op(const OpInstance& a, const OpInstance& b, const std::string& what) {
  CHOPPER_EQ(rank);
  expect_key(a.key, b.key, what + ".key");
  CHOPPER_EQ(op_class);
  CHOPPER_EQ(kernels);
  CHOPPER_EQ(first_start_ns);
  CHOPPER_EQ(last_end_ns);
  CHOPPER_EQ(kernel_ns);
  CHOPPER_EQ(comm_overlap_ns);
  CHOPPER_EQ(flops);
  CHOPPER_EQ(lead_ns);
}

void expect_launch_stats(const LaunchStats& a, const LaunchStats& b) {
  const std::string what = "launch_stats";
  CHOPPER_EQ(rank);
  CHOPPER_EQ(launches);
  CHOPPER_EQ(activities);
  CHOPPER_EQ(graph_launches);
  CHOPPER_EQ(graph_activities);
  CHOPPER_EQ(cpu_mean_ns);
  CHOPPER_EQ(cpu_p50_ns);
  CHOPPER_EQ(cpu_p95_ns);
  CHOPPER_EQ(cpu_max_ns);
  CHOPPER_EQ(delay_mean_ns);
  CHOPPER_EQ(delay_p50_ns);
  CHOPPER_EQ(delay_p95_ns);
  CHOPPER_EQ(delay_max_ns);
  CHOPPER_EQ(short_kernels);
  CHOPPER_EQ(runtime_outliers);
  CHOPPER_EQ(delay_outliers);
}

void expect_idle_cause(const IdleCauseRow& a, const IdleCauseRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(iteration);
  CHOPPER_EQ(cause);
  CHOPPER_EQ(gaps);
  CHOPPER_EQ(idle_ns);
  CHOPPER_EQ(median_gap_ns);
  CHOPPER_EQ(max_gap_ns);
  CHOPPER_EQ(frames);
}

void expect_name_stat(const NameStat& a, const NameStat& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(name);
  CHOPPER_EQ(group);
  CHOPPER_EQ(count);
  CHOPPER_EQ(total_ns);
  CHOPPER_EQ(min_ns);
  CHOPPER_EQ(max_ns);
  CHOPPER_EQ(share);
}

void expect_coll(const CollRecord& a, const CollRecord& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(group);
  CHOPPER_EQ(index);
  CHOPPER_EQ(type);
  CHOPPER_EQ(called);
  CHOPPER_EQ(start_ns);
  CHOPPER_EQ(end_ns);
  CHOPPER_EQ(bytes);
  CHOPPER_EQ(in_bytes);
  CHOPPER_EQ(out_bytes);
  CHOPPER_EQ(group_size);
  CHOPPER_EQ(dtype);
  CHOPPER_EQ(algorithm);
  CHOPPER_EQ(protocol);
  expect_key(a.key, b.key, what + ".key");
}

void expect_unit(const WaterfallUnit& a, const WaterfallUnit& b, const std::string& what) {
  CHOPPER_EQ(row);
  expect_key(a.key, b.key, what + ".key");
  CHOPPER_EQ(op_class);
  CHOPPER_EQ(signature);
  CHOPPER_EQ(observed_ns);
  CHOPPER_EQ(theoretical_ns);
  CHOPPER_EQ(issued_ns);
  CHOPPER_EQ(active_ns);
  CHOPPER_EQ(overlap_share);
  CHOPPER_EQ(compute_bound);
  CHOPPER_EQ(theoretical_known);
  CHOPPER_EQ(instruction_known);
  CHOPPER_EQ(frequency_known);
  CHOPPER_EQ(instruction_ns);
  CHOPPER_EQ(utilization_ns);
  CHOPPER_EQ(overlap_ns);
  CHOPPER_EQ(frequency_ns);
  CHOPPER_EQ(residual_ns);
  CHOPPER_EQ(shape_class);
  CHOPPER_EQ(flops);
  CHOPPER_EQ(bytes);
  CHOPPER_EQ(achievable_ns);
  CHOPPER_EQ(below_achievable_ns);
  CHOPPER_EQ(overlap_known);
  CHOPPER_EQ(overlap_estimated);
}

void expect_power(const PowerRow& a, const PowerRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(iteration);
  CHOPPER_EQ(phase);
  CHOPPER_EQ(time_ns);
  CHOPPER_EQ(energy_j);
  CHOPPER_EQ(peak_power_w);
  CHOPPER_EQ(mean_clock_mhz);
  CHOPPER_EQ(max_temp_c);
  CHOPPER_EQ(max_hotspot_c);
  CHOPPER_EQ(max_mem_temp_c);
  CHOPPER_EQ(throttle_ns);
  CHOPPER_EQ(busy_power_w);
  CHOPPER_EQ(idle_power_w);
  CHOPPER_EQ(power_cv);
  CHOPPER_EQ(max_dp_dt_w_per_s);
  CHOPPER_EQ(max_clock_share);
  CHOPPER_EQ(energy_counter_j);
  CHOPPER_EQ(link_tx_bytes);
  CHOPPER_EQ(link_rx_bytes);
  CHOPPER_EQ(pcie_tx_bytes);
  CHOPPER_EQ(pcie_rx_bytes);
}

void expect_agg(const AggRow& a, const AggRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(device);
  CHOPPER_EQ(iteration);
  CHOPPER_EQ(phase);
  CHOPPER_EQ(layer);
  CHOPPER_EQ(operation);
  CHOPPER_EQ(op_class);
  CHOPPER_EQ(count);
  CHOPPER_EQ(kernel_ns);
  CHOPPER_EQ(busy_ns);
  CHOPPER_EQ(first_start_ns);
  CHOPPER_EQ(last_end_ns);
}

void expect_coverage(const CoverageRow& a, const CoverageRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(level);
  CHOPPER_EQ(scope);
  CHOPPER_EQ(rule);
  CHOPPER_EQ(activities);
  CHOPPER_EQ(kernel_ns);
  CHOPPER_EQ(scope_kernel_ns);
}

void expect_diagnostic(const DiagnosticRow& a, const DiagnosticRow& b, const std::string& what) {
  CHOPPER_EQ(rank);
  CHOPPER_EQ(file);
  CHOPPER_EQ(kind);
  CHOPPER_EQ(severity);
  CHOPPER_EQ(stage);
  CHOPPER_EQ(count);
  CHOPPER_EQ(of_count);
  CHOPPER_EQ(example);
  CHOPPER_EQ(gpu_time_ns);
  CHOPPER_EQ(rank_gpu_time_ns);
  CHOPPER_EQ(share_of_gpu_time);
  CHOPPER_EQ(share_of_events);
}

void expect_join(const CounterJoin& a, const CounterJoin& b, const std::string& what) {
  CHOPPER_EQ(file);
  CHOPPER_EQ(rank);
  CHOPPER_EQ(dispatches);
  CHOPPER_EQ(matched);
  CHOPPER_EQ(ambiguous);
  CHOPPER_EQ(method);
  CHOPPER_EQ(offset_ns);
  CHOPPER_EQ(name_match_rate);
  CHOPPER_EQ(same_run);
}

// Compares two vectors element by element with `each`.
template <class T, class F>
void expect_each(const std::vector<T>& a, const std::vector<T>& b, const std::string& what,
                 F each) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) each(a[i], b[i], what + "[" + std::to_string(i) + "]");
}

void expect_analysis(const RankAnalysis& a, const RankAnalysis& b) {
  const std::string what = "analysis";
  CHOPPER_EQ(rank);
  CHOPPER_EQ(ok);
  ASSERT_EQ(a.names->size(), b.names->size());
  for (StrId i = 0; i < a.names->size(); ++i) EXPECT_EQ(a.names->str(i), b.names->str(i)) << i;
  CHOPPER_EQ(device_name);
  expect_each(a.breakdown, b.breakdown, "breakdown", expect_breakdown);
  expect_each(a.exposed, b.exposed, "exposed", expect_exposed);
  expect_each(a.ops, b.ops, "ops", expect_op);
  CHOPPER_EQ(launch_prep_ns);
  CHOPPER_EQ(launch_call_ns);
  expect_launch_stats(a.launch_stats, b.launch_stats);
  expect_each(a.idle_causes, b.idle_causes, "idle_causes", expect_idle_cause);
  expect_each(a.kernels, b.kernels, "kernels", expect_name_stat);
  expect_each(a.operations, b.operations, "operations", expect_name_stat);
  expect_each(a.classes, b.classes, "classes", expect_name_stat);
  expect_each(a.colls, b.colls, "colls", expect_coll);
  CHOPPER_EQ(components);
  CHOPPER_EQ(flops);
  CHOPPER_EQ(gpu_time_ns);
  expect_each(a.units, b.units, "units", expect_unit);
  expect_each(a.power, b.power, "power", expect_power);
  // Spooled, never carried (part_codec.hpp): empty on both sides.
  EXPECT_TRUE(b.idle.empty() && b.launch.empty() && b.queues.empty() && b.kernel_hw.empty() &&
              b.hw_levels.empty());
}

// A label key whose operation is a name of `a`.
LabelKey key_of(RankAnalysis& a, int64_t iteration, Phase phase, int32_t layer,
                std::string_view operation) {
  return LabelKey{iteration, phase, layer, a.names->str(a.names->intern(operation))};
}

// A part with every field set to a value other than its default (distinct numbers, so a field
// decoded into its neighbour is seen too).
RankPart full_part() {
  RankPart p;
  p.file = 7;
  p.not_trace = "JSON but not a trace";
  p.counter_pass = true;
  p.slot.file = "/runs/a/rank3.json";
  p.slot.rank = 3;
  p.slot.ok = true;
  p.slot.error = "rank3.json: byte 12: cut short";
  p.slot.missing = true;
  p.slot.first_ns = 11;
  p.slot.last_ns = 99;
  p.slot.trace.file = "/runs/a/rank3.json.gz";
  p.slot.trace.meta.rank = 4;
  p.slot.trace.meta.world_size = 8;
  p.slot.trace.meta.backend = "nccl";
  p.slot.trace.meta.rank_source = "distributedInfo";
  p.needs_rank = true;

  RankActivity& v = p.activity;
  v.ok = true;
  v.rank = 5;
  v.device = 2;
  v.devices = 4;
  v.busy = BusyTime({1, 10}, {5, 20});
  v.compute = BusyTime({2}, {4});
  v.other = BusyTime({12}, {13});
  v.pids = {100, 200};
  v.gpu_first_ns = 21;
  v.gpu_last_ns = 22;

  p.analysed = true;
  RankAnalysis& a = p.analysis;
  a.rank = 6;
  a.ok = true;
  a.device_name = "NVIDIA H100 80GB HBM3";
  a.breakdown = {BreakdownRow{6, 1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39}};
  a.exposed = {
      ExposedRow{6, key_of(a, 1, Phase::kBackward, 3, "aten::mm"), OpClass::kGemm, 40, 41, 42}};
  a.ops = {OpInstance{6, key_of(a, 2, Phase::kForward, 4, "aten::bmm"), OpClass::kAttention, 43, 44,
                      45, 46, 47, 48.5, 49}};
  a.launch_prep_ns = 50;
  a.launch_call_ns = 51;
  a.launch_stats = LaunchStats{6, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66};
  a.idle_causes = {
      IdleCauseRow{6, 2, "host_sync", 67, 68, 69, 70, {{"cudaDeviceSynchronize", 71}}}};
  a.kernels = {NameStat{6, "sm90_gemm", "gemm", 72, 73, 74, 75, 0.25}};
  a.operations = {NameStat{6, "aten::mm", "gemm", 76, 77, 78, 79, 0.5}};
  a.classes = {NameStat{6, "gemm", "compute", 80, 81, 82, 83, 0.75}};
  a.colls = {CollRecord{6, "pg0", 84, CollType::kAllGather, CollType::kAllReduce, 85, 86, 87, 88,
                        89, 90, "BFloat16", "RING", "LL128",
                        key_of(a, 3, Phase::kOptimizer, 5, "nccl:all_reduce")}};
  a.components = {{1, {{"exposed_comm", 91}, {"forward.gemm", 92}}}, {2, {{"idle", 93}}}};
  a.flops = {{1, 94.5}, {2, 95.5}};
  a.gpu_time_ns = 96;
  WaterfallUnit u;
  u.row = 97;
  u.key = key_of(a, 1, Phase::kDataDist, 6, "aten::addmm");
  u.op_class = OpClass::kNorm;
  u.signature = a.names->str(a.names->intern("sm90_gemm|aten::addmm|forward|1e9"));
  u.observed_ns = 98;
  u.theoretical_ns = 99.5;
  u.issued_ns = 100.5;
  u.active_ns = 101.5;
  u.overlap_share = 0.125;
  u.compute_bound = false;
  u.theoretical_known = true;
  u.instruction_known = true;
  u.frequency_known = true;
  u.instruction_ns = 102.5;
  u.utilization_ns = 103.5;
  u.overlap_ns = 104.5;
  u.frequency_ns = 105.5;
  u.residual_ns = 106.5;
  u.shape_class = a.names->str(a.names->intern("aten::addmm [[8, 4], [4, 2]] bf16"));
  u.flops = 107.5;
  u.bytes = 108.5;
  u.achievable_ns = 109.5;
  u.below_achievable_ns = 110.5;
  u.overlap_known = true;
  u.overlap_estimated = true;
  a.units = {u};
  PowerRow w;
  w.rank = 6;
  w.iteration = 3;
  w.phase = "backward";
  w.time_ns = 111;
  w.energy_j = 112.5;
  w.peak_power_w = 113.5;
  w.mean_clock_mhz = 114.5;
  w.max_temp_c = 115.5;
  w.max_hotspot_c = 116.5;
  w.max_mem_temp_c = 117.5;
  w.throttle_ns = {{"power_cap", 118}, {"thermal", 119}};
  w.busy_power_w = 120.5;
  w.idle_power_w = 121.5;
  w.power_cv = 122.5;
  w.max_dp_dt_w_per_s = 123.5;
  w.max_clock_share = 124.5;
  w.energy_counter_j = 125.5;
  w.link_tx_bytes = 126.5;
  w.link_rx_bytes = 127.5;
  w.pcie_tx_bytes = 128.5;
  w.pcie_rx_bytes = 129.5;
  a.power = {w};

  p.gpu_rows = {
      AggRow{6, 2, 4, Phase::kOther, 7, 130, OpClass::kEmbedding, 131, 132, 133, 134, 135}};
  p.coverage = {CoverageRow{6, "phase", "in_iterations", "phase_rule", 136, 137, 138}};
  p.diagnostics = {DiagnosticRow{6, "/runs/a/rank3.json", "missing_name", Severity::kInfo, "read",
                                 139, 140, "event 12", 141, 142, 0.375, 0.625}};
  p.joins = {
      {143, CounterJoin{"counters.csv", 6, 144, 145, 146, "correlation id", -147, 0.875, true}}};
  p.process = 2;
  p.spool = 3;
  for (size_t i = 0; i < p.chunks.size(); ++i)
    p.chunks[i] = SpoolChunk{1000 + i, 2000 + i, 3000 + i};
  return p;
}

TEST(PartCodec, EveryFieldRoundTrips) {
  std::vector<RankPart> parts;
  parts.push_back(full_part());
  parts.push_back(RankPart{});  // and a part left at its defaults
  const std::vector<RankPart> back = decode_parts(encode_parts(parts));
  ASSERT_EQ(back.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(k == 0 ? "full part" : "default part");
    const RankPart &a = parts[k], &b = back[k];
    const std::string what = "part";
    CHOPPER_EQ(file);
    CHOPPER_EQ(not_trace);
    CHOPPER_EQ(counter_pass);
    expect_slot(a.slot, b.slot);
    CHOPPER_EQ(needs_rank);
    expect_activity(a.activity, b.activity);
    CHOPPER_EQ(analysed);
    expect_analysis(a.analysis, b.analysis);
    expect_each(a.gpu_rows, b.gpu_rows, "gpu_rows", expect_agg);
    expect_each(a.coverage, b.coverage, "coverage", expect_coverage);
    expect_each(a.diagnostics, b.diagnostics, "diagnostics", expect_diagnostic);
    ASSERT_EQ(a.joins.size(), b.joins.size());
    for (size_t i = 0; i < a.joins.size(); ++i) {
      EXPECT_EQ(a.joins[i].first, b.joins[i].first);
      expect_join(a.joins[i].second, b.joins[i].second, "joins[" + std::to_string(i) + "]");
    }
    CHOPPER_EQ(process);
    CHOPPER_EQ(spool);
    for (size_t i = 0; i < a.chunks.size(); ++i) {
      EXPECT_EQ(a.chunks[i].offset, b.chunks[i].offset) << i;
      EXPECT_EQ(a.chunks[i].bytes, b.chunks[i].bytes) << i;
      EXPECT_EQ(a.chunks[i].rows, b.chunks[i].rows) << i;
    }
  }
  // The decoded keys view the decoded part's own names.
  EXPECT_EQ(back[0].analysis.ops[0].key.operation, "aten::bmm");
  EXPECT_NE(back[0].analysis.ops[0].key.operation.data(),
            parts[0].analysis.ops[0].key.operation.data());
}

TEST(PartCodec, SpooledRowsAreRefused) {
  // The rows a stage spools are not carried: a part still holding one is an error, not a loss.
  std::vector<RankPart> parts;
  parts.push_back(full_part());
  EXPECT_NO_THROW(encode_parts(parts));
  parts[0].analysis.queues.push_back(QueueRow{});
  EXPECT_THROW(encode_parts(parts), Error);
}

#undef CHOPPER_EQ

}  // namespace
}  // namespace chopper
