#pragma once
// Renders a run-to-run comparison (analysis/compare.hpp): the tables sweep, compare_components,
// compare_operations, compare_kernels, compare_collectives and compare_findings (each declared
// once here, model/table_def.hpp), the terminal summary (largest difference first) and
// `compare --json`. Decides nothing. Columns: docs/schema.md ("Comparison tables"); formulas:
// docs/metrics.md ("Comparison").
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chopper/analysis/compare.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

// ---- The rows the comparison tables are declared over: views of the comparison.

// One compared run (sweep): its profile, its position and the baseline's iteration time.
struct SweepRow {
  const CompareRun& run;
  size_t index = 0;    // position on the command line (0 = the baseline)
  double base_ns = 0;  // the baseline's iteration_ns
};

// One compared item `D` (an operation, kernel, collective or finding diff) of run b against the
// baseline a.
template <class D>
struct PairRow {
  const CompareRun& a;  // the baseline
  const CompareRun& b;  // the run
  const D& d;
};

// One end-to-end component of run b against the baseline a, with its place by |difference|.
struct ComponentRow {
  const CompareRun& a;
  const CompareRun& b;
  const ComponentDiff& d;
  int64_t order = 0;  // 1 = the largest |diff_ns|
};

namespace compare_cols {

// The two label columns every pair table begins with.
template <class Row>
constexpr std::array<Column<Row>, 2> pair() {
  return {{
      column<Row>("baseline", ColType::kText, "label of run A, the baseline (the first run)",
                  kNever, [](const Row& r) { return Cell::of(std::string_view(r.a.label)); }),
      column<Row>("run", ColType::kText, "label of run B, compared with the baseline", kNever,
                  [](const Row& r) { return Cell::of(std::string_view(r.b.label)); }),
  }};
}

// A real member `M` of the compared item (Row::d), as it is.
template <class Row, auto M>
constexpr Column<Row> diff(std::string_view name, std::string_view meaning) {
  return column<Row>(name, ColType::kReal, meaning, kNever,
                     [](const Row& r) { return Cell::of(static_cast<double>(r.d.*M)); });
}

// diff_ns and diff_points, as every pair table ends (before its status).
template <class Row, class D>
constexpr std::array<Column<Row>, 2> diffs(std::string_view diff_meaning) {
  return {{diff<Row, &D::diff_ns>("diff_ns", diff_meaning),
           with_unit(diff<Row, &D::diff_points>("diff_points",
                                                "100 × diff_ns / the baseline's iteration time"),
                     "%")}};
}

// The change status of an operation, kernel or collective.
template <class Row>
constexpr Column<Row> status(std::string_view meaning) {
  return column<Row>("status", ColType::kText, meaning, kNever,
                     [](const Row& r) { return Cell::of(change_status_name(r.d.status)); });
}

// A real value NULL when not positive (or NaN): unknown.
inline Cell positive(double v) {
  return std::isnan(v) || v <= 0 ? Cell::null() : Cell::of(v);
}

}  // namespace compare_cols

// ---- The comparison tables, each declared once (model/table_def.hpp).

inline constexpr auto kSweepTable = table<SweepRow>(
    "sweep",
    "One row per compared run, in the order given (the first is the baseline): iteration time, "
    "throughput, time and energy per token; with three or more runs, the sweep",
    column<SweepRow>("run_index", ColType::kInt,
                     "position on the command line, from 0 (0 = the baseline)", kNever,
                     [](const SweepRow& s) { return Cell::of(s.index); }),
    column<SweepRow>("run", ColType::kText, "label (--labels, else the path's last component)",
                     kNever,
                     [](const SweepRow& s) { return Cell::of(std::string_view(s.run.label)); }),
    column<SweepRow>("path", ColType::kText, "trace directory or file", kNever,
                     [](const SweepRow& s) { return Cell::of(std::string_view(s.run.path)); }),
    column<SweepRow>("device", ColType::kText, "GPU model", "the GPU model is unknown",
                     [](const SweepRow& s) { return opt_text(s.run.device); }),
    column<SweepRow>("ranks", ColType::kInt, "ranks analysed", kNever,
                     [](const SweepRow& s) { return Cell::of(s.run.ranks); }),
    column<SweepRow>("iterations", ColType::kInt, "iterations analysed", kNever,
                     [](const SweepRow& s) { return Cell::of(s.run.iterations); }),
    column<SweepRow>("iteration_ns", ColType::kReal,
                     "mean over iterations of the slowest rank's iteration time", kNever,
                     [](const SweepRow& s) { return Cell::of(s.run.iteration_ns); }),
    column<SweepRow>("iteration_sigma_ns", ColType::kReal, "1.4826 × MAD of the iteration times",
                     kNever, [](const SweepRow& s) { return Cell::of(s.run.iteration_sigma_ns); }),
    column<SweepRow>("tokens_per_step", ColType::kInt, "tokens per iteration over all ranks",
                     "tokens per step unknown (no --tokens-per-step, none in the manifest)",
                     [](const SweepRow& s) {
                       return s.run.tokens_per_step > 0 ? Cell::of(s.run.tokens_per_step)
                                                        : Cell::null();
                     }),
    with_unit(column<SweepRow>("tokens_per_s", ColType::kReal, "tokens_per_step / iteration time",
                               "tokens per step unknown, or no iterations",
                               [](const SweepRow& s) { return opt_real(s.run.tokens_per_s); }),
              "1/s"),
    column<SweepRow>("time_per_token_ns", ColType::kReal, "iteration_ns / tokens_per_step",
                     "tokens per step unknown, or no iterations",
                     [](const SweepRow& s) { return opt_real(s.run.time_per_token_ns); }),
    with_unit(column<SweepRow>(
                  "tflops_per_gpu", ColType::kReal,
                  "mean achieved FLOP rate per GPU over the iterations whose FLOPs are known",
                  "no iteration's FLOPs are known",
                  [](const SweepRow& s) { return opt_real(s.run.tflops_per_gpu); }),
              "TFLOP/s"),
    with_unit(
        column<SweepRow>("mfu", ColType::kReal,
                         "mean MFU (share of the device's peak) over the iterations that have one",
                         "no iteration has an MFU (device peak unknown, or FLOPs known for under "
                         "half the compute time)",
                         [](const SweepRow& s) { return opt_real(s.run.mfu); }),
        "fraction"),
    column<SweepRow>("energy_per_iteration_j", ColType::kReal,
                     "energy of all ranks per iteration window, from telemetry",
                     "no telemetry over the iterations",
                     [](const SweepRow& s) { return opt_real(s.run.energy_per_iteration_j); }),
    column<SweepRow>("power_w", ColType::kReal, "energy / time over the iterations, all ranks",
                     "no telemetry over the iterations",
                     [](const SweepRow& s) { return opt_real(s.run.power_w); }),
    column<SweepRow>("energy_per_token_j", ColType::kReal,
                     "energy_per_iteration_j / tokens_per_step",
                     "no telemetry over the iterations, or tokens per step unknown",
                     [](const SweepRow& s) { return opt_real(s.run.energy_per_token_j); }),
    column<SweepRow>("iteration_diff_ns", ColType::kReal, "iteration_ns − the baseline's", kNever,
                     [](const SweepRow& s) { return Cell::of(s.run.iteration_ns - s.base_ns); }),
    with_unit(column<SweepRow>("iteration_diff_points", ColType::kReal,
                               "100 × iteration_diff_ns / the baseline's iteration_ns",
                               "the baseline's iteration_ns is 0 (no iterations)",
                               [](const SweepRow& s) {
                                 return s.base_ns > 0
                                            ? Cell::of(100.0 * (s.run.iteration_ns - s.base_ns) /
                                                       s.base_ns)
                                            : Cell::null();
                               }),
              "%"),
    with_unit(
        column<SweepRow>("speedup", ColType::kReal, "the baseline's iteration_ns / iteration_ns",
                         "this run's iteration_ns is 0 (no iterations)",
                         [](const SweepRow& s) {
                           return s.run.iteration_ns > 0 ? Cell::of(s.base_ns / s.run.iteration_ns)
                                                         : Cell::null();
                         }),
        "ratio"));

inline constexpr auto kCompareComponentsTable = table<ComponentRow>(
    "compare_components",
    "Each end-to-end component of the slowest rank's iteration (end_to_end), mean over "
    "iterations, in the baseline (a) and the run (b), largest |difference| first",
    compare_cols::pair<ComponentRow>(),
    column<ComponentRow>("order", ColType::kInt,
                         "1 = the largest |diff_ns| of this run against the baseline", kNever,
                         [](const ComponentRow& r) { return Cell::of(r.order); }),
    column<ComponentRow>(
        "component", ColType::kText,
        "phase.class, exposed_comm, straggler_wait, exposed_memcpy, "
        "data_loading, host_sync, host_optimizer, host_stall, host_late, "
        "launch_overhead, graph_gap or idle",
        kNever, [](const ComponentRow& r) { return Cell::of(std::string_view(r.d.component)); }),
    compare_cols::diff<ComponentRow, &ComponentDiff::a_ns>(
        "a_ns", "per iteration in the baseline (0 = absent)"),
    compare_cols::diff<ComponentRow, &ComponentDiff::b_ns>("b_ns",
                                                           "per iteration in the run (0 = absent)"),
    compare_cols::diffs<ComponentRow, ComponentDiff>("b_ns − a_ns"),
    column<ComponentRow>("a_share", ColType::kReal, "a_ns / the baseline's iteration time",
                         "the baseline's iteration time is 0 (no iterations)",
                         [](const ComponentRow& r) {
                           return r.a.iteration_ns > 0 ? Cell::of(r.d.a_ns / r.a.iteration_ns)
                                                       : Cell::null();
                         }),
    column<ComponentRow>(
        "b_share", ColType::kReal, "b_ns / the run's iteration time",
        "the run's iteration time is 0 (no iterations)", [](const ComponentRow& r) {
          return r.b.iteration_ns > 0 ? Cell::of(r.d.b_ns / r.b.iteration_ns) : Cell::null();
        }));

using OperationPairRow = PairRow<OperationDiff>;
inline constexpr auto kCompareOperationsTable = table<OperationPairRow>(
    "compare_operations",
    "GPU time of each operation, matched by phase and operation label (summed over its layers; "
    "per layer with --per-layer), per rank and iteration in the baseline (a) and the run (b), "
    "largest |difference| first",
    compare_cols::pair<OperationPairRow>(),
    column<OperationPairRow>(
        "phase", ColType::kText, "forward, backward, optimizer, other, data_dist", "none",
        [](const OperationPairRow& r) { return opt_text(phase_name(r.d.key.phase)); }),
    column<OperationPairRow>("layer", ColType::kInt, "transformer block (with --per-layer)",
                             "none, or summed over layers (the default)",
                             [](const OperationPairRow& r) {
                               return r.d.key.layer < 0 ? Cell::null() : Cell::of(r.d.key.layer);
                             }),
    column<OperationPairRow>("operation", ColType::kText, "operation label", "none",
                             [](const OperationPairRow& r) { return opt_text(r.d.key.operation); }),
    column<OperationPairRow>("op_class", ColType::kText, "operation class", "none",
                             [](const OperationPairRow& r) { return opt_text(r.d.op_class); }),
    compare_cols::diff<OperationPairRow, &OperationDiff::a_ns>(
        "a_ns", "Σ GPU activity time per rank per iteration in the baseline"),
    compare_cols::diff<OperationPairRow, &OperationDiff::b_ns>("b_ns", "the same in the run"),
    compare_cols::diff<OperationPairRow, &OperationDiff::a_count>(
        "a_count", "GPU activities per rank per iteration in the baseline"),
    compare_cols::diff<OperationPairRow, &OperationDiff::b_count>("b_count", "the same in the run"),
    compare_cols::diffs<OperationPairRow, OperationDiff>("b_ns − a_ns"),
    compare_cols::status<OperationPairRow>(
        "added (only in the run), removed (only in the baseline), slower, faster (|diff_ns| "
        "above 5% of a_ns and 0.1% of the baseline's iteration), same"));

using KernelPairRow = PairRow<KernelDiff>;
inline constexpr auto kCompareKernelsTable = table<KernelPairRow>(
    "compare_kernels",
    "GPU time of each kernel (and memcpy, memset) name per rank and iteration in the baseline "
    "(a) and the run (b), largest |difference| first",
    compare_cols::pair<KernelPairRow>(),
    column<KernelPairRow>(
        "name", ColType::kText, "kernel name", kNever,
        [](const KernelPairRow& r) { return Cell::of(std::string_view(r.d.name)); }),
    column<KernelPairRow>("class", ColType::kText, "compute, communication, memcpy, memset, sync",
                          kNever,
                          [](const KernelPairRow& r) { return opt_text(r.d.kernel_class); }),
    compare_cols::diff<KernelPairRow, &KernelDiff::a_ns>(
        "a_ns", "Σ duration per rank per iteration in the baseline"),
    compare_cols::diff<KernelPairRow, &KernelDiff::b_ns>("b_ns", "the same in the run"),
    compare_cols::diff<KernelPairRow, &KernelDiff::a_count>(
        "a_count", "activities per rank per iteration in the baseline"),
    compare_cols::diff<KernelPairRow, &KernelDiff::b_count>("b_count", "the same in the run"),
    compare_cols::diffs<KernelPairRow, KernelDiff>("b_ns − a_ns"),
    compare_cols::status<KernelPairRow>(
        "added, removed, slower, faster, same (as compare_operations)"));

using CollectivePairRow = PairRow<CollectiveDiff>;
inline constexpr auto kCompareCollectivesTable = table<CollectivePairRow>(
    "compare_collectives",
    "Collectives per type and message size in the baseline (a) and the run (b): count and "
    "latency per iteration, mean bus bandwidth; largest |difference| first",
    compare_cols::pair<CollectivePairRow>(),
    column<CollectivePairRow>(
        "type", ColType::kText, "collective called (else the kernel's)", kNever,
        [](const CollectivePairRow& r) { return Cell::of(std::string_view(r.d.type)); }),
    column<CollectivePairRow>("size_bytes", ColType::kInt, "message size",
                              "unknown: the trace records none",
                              [](const CollectivePairRow& r) {
                                return r.d.bytes >= 0 ? Cell::of(r.d.bytes) : Cell::null();
                              }),
    column<CollectivePairRow>("a_count", ColType::kReal,
                              "collectives per iteration in the baseline (matched: once)", kNever,
                              [](const CollectivePairRow& r) { return Cell::of(r.d.a.count); }),
    column<CollectivePairRow>("b_count", ColType::kReal, "the same in the run", kNever,
                              [](const CollectivePairRow& r) { return Cell::of(r.d.b.count); }),
    column<CollectivePairRow>("a_latency_mean_ns", ColType::kReal, "mean latency in the baseline",
                              "none in the baseline (a_count 0)",
                              [](const CollectivePairRow& r) {
                                return r.d.a.count > 0 ? Cell::of(r.d.a.latency_ns) : Cell::null();
                              }),
    column<CollectivePairRow>("b_latency_mean_ns", ColType::kReal, "the same in the run",
                              "none in the run (b_count 0)",
                              [](const CollectivePairRow& r) {
                                return r.d.b.count > 0 ? Cell::of(r.d.b.latency_ns) : Cell::null();
                              }),
    column<CollectivePairRow>(
        "a_busbw_mean_gbs", ColType::kReal, "mean bus bandwidth in the baseline",
        "none in the baseline, or no bus bandwidth known (message size unknown)",
        [](const CollectivePairRow& r) { return compare_cols::positive(r.d.a.busbw_gbs); }),
    column<CollectivePairRow>(
        "b_busbw_mean_gbs", ColType::kReal, "the same in the run",
        "none in the run, or no bus bandwidth known (message size unknown)",
        [](const CollectivePairRow& r) { return compare_cols::positive(r.d.b.busbw_gbs); }),
    column<CollectivePairRow>("a_ns", ColType::kReal,
                              "a_count × a_latency_mean_ns: latency per iteration", kNever,
                              [](const CollectivePairRow& r) { return Cell::of(r.d.a.ns()); }),
    column<CollectivePairRow>("b_ns", ColType::kReal, "the same in the run", kNever,
                              [](const CollectivePairRow& r) { return Cell::of(r.d.b.ns()); }),
    compare_cols::diffs<CollectivePairRow, CollectiveDiff>("b_ns − a_ns"),
    compare_cols::status<CollectivePairRow>(
        "added, removed, slower, faster, same (as compare_operations)"));

using FindingPairRow = PairRow<FindingDiff>;
inline constexpr auto kCompareFindingsTable = table<FindingPairRow>(
    "compare_findings",
    "Each finding (findings) in the baseline (a) and the run (b): appeared, disappeared, grew, "
    "shrank; appeared and disappeared first",
    compare_cols::pair<FindingPairRow>(),
    column<FindingPairRow>("finding", ColType::kText, "finding key (findings.finding)", kNever,
                           [](const FindingPairRow& r) { return Cell::of(finding_key(r.d.kind)); }),
    column<FindingPairRow>(
        "title", ColType::kText, "what the terminal calls it", kNever,
        [](const FindingPairRow& r) { return Cell::of(finding_title(r.d.kind)); }),
    column<FindingPairRow>(
        "change", ColType::kText,
        "appeared (significant only in the run), disappeared (only in the baseline), grew, shrank "
        "(significant in both, |diff_ns| above 2 combined standard errors and 1% of the "
        "baseline's iteration), same, neither (significant in neither)",
        kNever, [](const FindingPairRow& r) { return Cell::of(finding_change_name(r.d.change)); }),
    column<FindingPairRow>(
        "a_significant", ColType::kInt, "1 = significant in the baseline", kNever,
        [](const FindingPairRow& r) { return Cell::of(int64_t{r.d.a_significant ? 1 : 0}); }),
    column<FindingPairRow>(
        "b_significant", ColType::kInt, "1 = significant in the run", kNever,
        [](const FindingPairRow& r) { return Cell::of(int64_t{r.d.b_significant ? 1 : 0}); }),
    column<FindingPairRow>(
        "a_rank", ColType::kInt, "the rank it concerns in the baseline",
        "it concerns the slowest rank of each iteration, or is not found in the baseline",
        [](const FindingPairRow& r) { return opt_rank(r.d.a_rank); }),
    column<FindingPairRow>(
        "b_rank", ColType::kInt, "the same in the run",
        "it concerns the slowest rank of each iteration, or is not found in the run",
        [](const FindingPairRow& r) { return opt_rank(r.d.b_rank); }),
    compare_cols::diff<FindingPairRow, &FindingDiff::a_cost_ns>(
        "a_cost_ns", "cost per iteration in the baseline (0 = not found)"),
    compare_cols::diff<FindingPairRow, &FindingDiff::b_cost_ns>("b_cost_ns", "the same in the run"),
    compare_cols::diffs<FindingPairRow, FindingDiff>("b_cost_ns − a_cost_ns"));

// Every comparison table, streamed to `sink`.
void compare_tables(const Comparison& c, TableSink& sink);
// The terminal summary: the runs (a sweep table for three or more), then for each run against the
// baseline the largest component differences ("exposed communication +12.300 ms per iteration
// (+8.9 points)"), the operations, kernels and collectives that changed most, and the findings
// that appeared or disappeared.
std::string compare_summary(const Comparison& c);
// One JSON object: the runs and, per run against the baseline, every difference.
std::string compare_json(const Comparison& c);
// What the terminal calls an end-to-end component ("exposed_comm" -> "exposed communication",
// "forward.gemm" -> "compute, forward.gemm").
std::string component_title(const std::string& component);

}  // namespace chopper
