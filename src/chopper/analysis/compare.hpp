#pragma once
// Run-to-run comparison (chopper compare): two runs, or a sweep of configurations (micro-batch,
// sequence length, parallelism), side by side. Each analysed run is first reduced to a small
// profile (CompareRun: per-iteration means, per operation, kernel and collective), so the runs'
// traces need not stay in memory together; then every other run is compared with the first (the
// baseline): iteration time and its end-to-end components, operations and kernels matched by name
// and place in the hierarchy, collectives per type and size, findings that appeared or
// disappeared. Decided here; report/compare_report.hpp only renders. Formulas, units and the
// noise thresholds: docs/metrics.md, "Comparison".
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/base/enum_names.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

// An operation, kernel or collective type is slower or faster in B only when its time per
// iteration changed by more than both kNoiseRelative of its time in A and kNoiseIterationShare of
// A's iteration time; otherwise it is the same (run-to-run noise of real runs is a few percent).
inline constexpr double kNoiseRelative = 0.05;
inline constexpr double kNoiseIterationShare = 0.001;

// Time of one operation, kernel name or collective type/size: per rank and iteration (the mean
// over the run's ranks and analysed iterations).
struct CompareAmount {
  std::string group;  // operation: its class; kernel: its GPU class
  double ns = 0;      // summed GPU activity duration per rank per iteration
  double count = 0;   // activities per rank per iteration
};

// Operation match key: phase, layer (-1 = none) and operation label.
struct OperationKey {
  Phase phase = Phase::kNone;
  int32_t layer = -1;
  std::string operation;
  auto operator<=>(const OperationKey&) const = default;
};

// Collectives of one type and message size (bytes -1 = unknown), over the analysed iterations.
struct CompareCollectives {
  double count = 0;       // collectives per iteration (matched across ranks: counted once)
  double latency_ns = 0;  // mean latency (minimum duration over ranks)
  double busbw_gbs = std::numeric_limits<double>::quiet_NaN();  // mean bus bandwidth; NaN unknown
  double ns() const { return count * latency_ns; }              // latency per iteration
};

// One analysed run, reduced to what a comparison needs.
struct CompareRun {
  std::string label;  // --labels, else the path's last component
  std::string path;
  int64_t ranks = 0;              // ranks analysed
  uint64_t iterations = 0;        // iterations analysed
  std::string device;             // device of the trace ("" unknown)
  double iteration_ns = 0;        // mean over iterations of the slowest rank's iteration time
  double iteration_sigma_ns = 0;  // 1.4826 × MAD of the iteration times
  // Mean over iterations of the slowest rank's end-to-end components (IterationRow::components):
  // compute by phase.class, exposed_comm, straggler_wait, exposed_memcpy, data_loading, host_sync,
  // host_optimizer, host_stall, host_late, launch_overhead, graph_gap, idle. They add up to
  // iteration_ns.
  std::map<std::string, double> components;
  int64_t tokens_per_step = 0;                                          // 0 = unknown
  double tokens_per_s = std::numeric_limits<double>::quiet_NaN();       // tokens / iteration_ns
  double time_per_token_ns = std::numeric_limits<double>::quiet_NaN();  // iteration_ns / tokens
  double mfu = std::numeric_limits<double>::quiet_NaN();  // mean over iterations (NaN unknown)
  double tflops_per_gpu = std::numeric_limits<double>::quiet_NaN();
  // With telemetry: the job's energy (all ranks, iteration windows) per iteration, its mean power
  // and the energy per token. NaN without telemetry (or tokens).
  double energy_per_iteration_j = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double energy_per_token_j = std::numeric_limits<double>::quiet_NaN();
  std::map<OperationKey, CompareAmount> operations;
  std::map<std::string, CompareAmount> kernels;
  std::map<std::pair<std::string, int64_t>, CompareCollectives> collectives;  // (type, bytes)
  std::vector<Finding> findings;
};

// Reduces an analysed run (labelled `run`, its analysis and findings; `o` gives the tokens per
// step) to its comparison profile.
CompareRun profile_run(const Run& run, const RunAnalysis& ra, const Findings& f,
                       const AnalysisOptions& o, std::string label, std::string path);

#define CHOPPER_CHANGE_STATUSES(X) \
  X(kSame, "same")                 \
  X(kSlower, "slower")             \
  X(kFaster, "faster")             \
  X(kAdded, "added")               \
  X(kRemoved, "removed")
CHOPPER_ENUM(ChangeStatus, CHOPPER_CHANGE_STATUSES)
inline std::string_view change_status_name(ChangeStatus s) {
  return enum_name(s);
}
// kAdded when a == 0 < b, kRemoved when b == 0 < a, else slower/faster past the noise thresholds
// (kNoiseRelative of a and kNoiseIterationShare of iteration_a_ns), else kSame.
ChangeStatus classify_change(double a_ns, double b_ns, double iteration_a_ns);

#define CHOPPER_FINDING_CHANGES(X) \
  X(kAppeared, "appeared")         \
  X(kDisappeared, "disappeared")   \
  X(kGrew, "grew")                 \
  X(kShrank, "shrank")             \
  X(kSame, "same")                 \
  X(kNeither, "neither")
CHOPPER_ENUM(FindingChange, CHOPPER_FINDING_CHANGES)
inline std::string_view finding_change_name(FindingChange c) {
  return enum_name(c);
}

// B − A of one end-to-end component (ns per iteration; points = 100 × diff / A's iteration time).
struct ComponentDiff {
  std::string component;
  double a_ns = 0, b_ns = 0, diff_ns = 0, diff_points = 0;
};

struct OperationDiff {
  OperationKey key;
  std::string op_class;
  double a_ns = 0, b_ns = 0;        // per rank per iteration
  double a_count = 0, b_count = 0;  // per rank per iteration
  double diff_ns = 0, diff_points = 0;
  ChangeStatus status = ChangeStatus::kSame;
};

struct KernelDiff {
  std::string name, kernel_class;
  double a_ns = 0, b_ns = 0, a_count = 0, b_count = 0, diff_ns = 0, diff_points = 0;
  ChangeStatus status = ChangeStatus::kSame;
};

struct CollectiveDiff {
  std::string type;
  int64_t bytes = -1;
  CompareCollectives a, b;              // count 0 = none in that run
  double diff_ns = 0, diff_points = 0;  // latency per iteration, B − A
  ChangeStatus status = ChangeStatus::kSame;
};

// A finding in A and B (cost 0, not significant, when the run has none of its kind). The
// straggler is matched by kind (its rank may differ).
struct FindingDiff {
  FindingKind kind = FindingKind::kIdle;
  int64_t a_rank = -1, b_rank = -1;
  bool a_significant = false, b_significant = false;
  double a_cost_ns = 0, b_cost_ns = 0, diff_ns = 0, diff_points = 0;
  FindingChange change = FindingChange::kNeither;
};

// Run b against run a (indices into Comparison::runs). Each list sorted by |diff_ns|, largest
// first (findings: appeared and disappeared first).
struct PairComparison {
  size_t a = 0, b = 1;
  double iteration_diff_ns = 0, iteration_diff_points = 0;
  std::vector<ComponentDiff> components;  // components[0]: the largest difference
  std::vector<OperationDiff> operations;
  std::vector<KernelDiff> kernels;
  std::vector<CollectiveDiff> collectives;
  std::vector<FindingDiff> findings;
};

struct Comparison {
  std::vector<CompareRun> runs;       // in the order given; runs[0] is the baseline
  std::vector<PairComparison> pairs;  // runs[0] against each other run
  // What makes a run hard to compare with the baseline (another world size, device, or
  // workload: operations sharing under half of their GPU time), one sentence each.
  std::vector<std::string> warnings;
};

// Folds a run's per-layer operations into one per phase and operation (layer -1): compare's
// default, so that a change shows once rather than once per layer (--per-layer keeps them).
void merge_operation_layers(CompareRun& r);

// The share of GPU time two runs spend in the same operations (phase and name; Σ over operations
// of the smaller of its two shares of the run's operation time): 1 for the same mix, 0 for
// nothing in common; NaN when either run has no operation time.
double operation_similarity(const CompareRun& a, const CompareRun& b);

PairComparison compare_pair(const CompareRun& a, const CompareRun& b);
Comparison compare_runs(std::vector<CompareRun> runs);

}  // namespace chopper
