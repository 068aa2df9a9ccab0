#pragma once
// Findings: which losses are significant, what each costs, how sure we are, what points to its
// cause and what to do. Decided here, from the finished analysis; the terminal, the `findings`
// table and `analyze --json` only render them (report/findings_report.hpp).
//
// A finding's cost is the mean over iterations of the time it takes from the iteration of the rank
// shown (IterationRow::slowest_rank; and, with telemetry, the energy the job spends in that time).
// It is significant when a one-sided Student t test of its samples (the iterations; with fewer
// than 3 iterations and at least 3 ranks, every rank of every iteration) puts its mean above 1% of
// the iteration at 97.5%; from one sample there is no variance and no confidence, and the loss is
// significant when above 1% alone. A straggler is significant when it is in some iteration against
// the rank-to-rank variation (StragglerCost). "Nothing significant" is a valid answer. Formulas:
// docs/metrics.md, Findings.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/analysis.hpp"

namespace chopper {

// Every kind of finding, declared once: enumerator, key (tables, JSON), title (terminal), what to
// try. X(enumerator, key, title, suggestion)
#define CHOPPER_FINDING_KINDS(X)                                                                  \
  X(kExposedComm, "exposed_comm", "exposed communication",                                        \
    "overlap communication with compute (prefetch, bucket sizes), fewer and larger collectives, " \
    "or a faster interconnect")                                                                   \
  X(kStraggler, "straggler", "straggler",                                                         \
    "look at the named rank: slower kernels (its clocks, temperature, power cap), a busier host " \
    "or more data")                                                                               \
  X(kHostStall, "host_stall", "host stall at the iteration start",                                \
    "look at the host frames named in the evidence: move that work off the step's start, or "     \
    "overlap it with the previous step's GPU work")                                               \
  X(kDataLoading, "data_loading", "data loading",                                                 \
    "DataLoader worker processes (num_workers), pin_memory=True, prefetch_factor and "            \
    "persistent_workers, so that the next batch is ready when the step needs it; copy it to the " \
    "GPU with non_blocking=True")                                                                 \
  X(kHostSync, "host_sync", "host blocked on the GPU (synchronisation)",                          \
    "remove .item(), .cpu(), .tolist(), printing of tensors and explicit synchronize calls from " \
    "the step (or do them every N steps); copy to pinned memory with non_blocking=True")          \
  X(kHostOptimizer, "host_optimizer", "host in the optimizer step or checkpointing",              \
    "a fused or foreach optimizer (fused=True / foreach=True), zero_grad(set_to_none=True), "     \
    "fewer parameter groups; "                                                                    \
    "asynchronous checkpointing (torch.distributed.checkpoint.async_save) or fewer checkpoints")  \
  X(kHostLate, "host_late", "host late between kernels",                                          \
    "CUDA/HIP graphs or torch.compile, fewer and larger kernels: less Python and framework time " \
    "per launch")                                                                                 \
  X(kLaunchOverhead, "launch_overhead", "launch latency",                                         \
    "fewer and larger kernels (fusion) or graph launches")                                        \
  X(kGraphGap, "graph_gap", "gaps inside graph launches",                                         \
    "fewer and larger nodes in the captured graphs (fusion); check for syncs captured in them")   \
  X(kIdle, "idle", "other idle",                                                                  \
    "look for synchronisations (device synchronize, .item(), event waits) in the idle gaps")      \
  X(kExposedMemcpy, "exposed_memcpy", "exposed memcpy",                                           \
    "overlap copies with compute (non_blocking copies from pinned memory, a copy stream)")        \
  X(kFrequency, "dvfs", "clock throttling (DVFS)",                                                \
    "check the power cap, cooling and application clocks of the GPUs that lose the most")         \
  X(kUtilization, "utilization", "kernels below achievable",                                      \
    "the named shapes: better-shaped matrix multiplications (multiples of 64/128), fused "        \
    "kernels, a faster kernel library or attention implementation")                               \
  X(kCommSlowdown, "comm_slowdown", "compute slowed by communication",                            \
    "give communication kernels fewer SMs/CUs, or schedule collectives away from "                \
    "bandwidth-heavy compute")                                                                    \
  X(kRankVariation, "rank_variation", "ranks waiting on each other's variation",                  \
    "no single rank is slow: kernel times vary from rank to rank (clocks, power caps, "           \
    "interference, data-dependent work); make the GPUs' clock and power settings alike, and "     \
    "synchronise less often (fewer, larger collectives; overlap them with compute)")              \
  X(kHostSerial, "host_serial", "host serial on one thread, its cores idle",                      \
    "the GPU waits for one busy host thread, not for a busy host: overlap the host's work with "  \
    "the GPU's (launch ahead, no synchronisation in the step), batch launches with CUDA/HIP "     \
    "graphs or torch.compile, or move the work off the main thread (data preparation into "       \
    "DataLoader workers, logging and checkpointing to threads of their own)")                     \
  X(kLoaderSaturated, "loader_saturated", "data-loader workers saturated",                        \
    "the workers use all the CPU they have: more DataLoader workers (num_workers, while the "     \
    "host has idle cores), cheaper preprocessing (decode and augment on the GPU, pre-processed "  \
    "data), pin_memory=True and persistent_workers=True")

enum class FindingKind : uint8_t {
#define CHOPPER_X(e, key, title, hint) e,
  CHOPPER_FINDING_KINDS(CHOPPER_X)
#undef CHOPPER_X
};

std::string_view finding_key(FindingKind k);
std::string_view finding_title(FindingKind k);
std::string_view finding_suggestion(FindingKind k);
std::optional<FindingKind> finding_from_key(std::string_view key);

// Share of the iteration below which no loss is significant.
inline constexpr double kMaterialShare = 0.01;
// One-sided level of the t test: significant when P(true mean > threshold) ≥ this.
inline constexpr double kSignificantConfidence = 0.975;
// Fewer iterations than this, with at least kRankSamplesMinRanks ranks: the ranks are the samples.
inline constexpr size_t kFewIterations = 3;
inline constexpr size_t kRankSamplesMinRanks = 3;

struct Finding {
  FindingKind kind = FindingKind::kIdle;
  int64_t rank =
      -1;  // the rank it concerns (the straggler); -1 = the slowest rank of each iteration
  uint64_t iterations = 0;           // iterations measured
  uint64_t material_iterations = 0;  // of which the loss was ≥ 1% of the iteration
  double cost_ns = 0;                // mean per iteration
  double cost_share = 0;             // cost_ns / mean iteration time
  uint64_t samples = 0;              // samples the test used (iterations, or rank-iterations)
  // standard error of the samples' mean (sample σ / √samples); NaN from one sample
  double stderr_ns = 0;
  double threshold_ns = 0;  // 1% of the mean iteration time
  // With telemetry: the job's energy (all GPUs) in cost_ns at its mean power, J per iteration
  // (first order: the iteration shortened by the loss). NaN without telemetry, and for DVFS
  // (higher clocks draw more power).
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  // P(true cost > threshold): Student t with samples − 1 degrees of freedom; NaN from one sample
  // (no variance: significance is then cost > threshold alone)
  double confidence = 0;
  bool significant = false;
  std::string test;      // how significance was decided ("t test over 5 iterations", ...)
  std::string evidence;  // what points to the cause
  // What to try when the kind's general advice does not fit this run (a few long gaps are not
  // per-launch overhead); empty: finding_suggestion(kind). finding_advice gives the one to show.
  std::string suggestion;
};

// What to try for a finding: its own suggestion, else its kind's.
std::string_view finding_advice(const Finding& f);

struct Findings {
  uint64_t iterations = 0;
  double iteration_ns = 0;        // mean iteration time (slowest rank)
  double iteration_sigma_ns = 0;  // 1.4826 × MAD of the iteration times (context)
  std::vector<Finding> all;       // significant first, then by cost (largest first)
  size_t significant() const;
};

// Decides the findings of a finished analysis. Without iterations there are none.
Findings decide_findings(const RunAnalysis& ra, const AnalysisOptions& o);

// Statistics the findings use (exposed for tests).
// 1.4826 × the median absolute deviation about the median (0 for fewer than 2 values).
double robust_sigma(std::vector<double> v);
// The significance test of one loss: per-iteration costs x and iteration times t (same length),
// of the rank shown. With fewer than kFewIterations iterations and at least kRankSamplesMinRanks
// ranks, the test's samples are every rank's cost and window in every iteration (xr, tr; same
// length), the cost stays the mean of x.
Finding test_loss(FindingKind kind, const std::vector<double>& x, const std::vector<double>& t,
                  const std::vector<double>& xr = {}, const std::vector<double>& tr = {},
                  size_t ranks = 0);
// Student's t distribution function with dof degrees of freedom: P(T ≤ t), from the regularized
// incomplete beta function (docs/metrics.md, Findings).
double student_t_cdf(double t, double dof);
// The regularized incomplete beta function I_x(a, b) (a, b > 0, 0 ≤ x ≤ 1).
double incomplete_beta(double a, double b, double x);

}  // namespace chopper
