#pragma once
// The end-to-end view of each iteration: time of the rank shown, its components, tokens/s, MFU
// (analysis/end_to_end.cpp, finalize_end_to_end). docs/metrics.md, "End to end".
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/stragglers.hpp"
#include "chopper/base/time.hpp"

namespace chopper {

// MFU is given only when the FLOPs of at least this share of the compute time are known.
inline constexpr double kMfuMinCoverage = 0.5;

// The rank an iteration's figures show, from its ranks' windows (rank, ns): the slowest rank when
// it is significantly slower than the others (its window − the others' median > max(3 × the
// others' robust σ, 1% of that median); robust σ = 1.4826 × MAD), else the lowest rank ("ranks
// equal within noise"). `significant` says which. docs/metrics.md, End to end.
int64_t rank_shown(const std::vector<std::pair<int64_t, Ns>>& windows, bool& significant);

// One iteration, end to end (time of the rank shown: the significantly slowest, else the lowest).
struct IterationRow {
  int64_t iteration = 0;
  int64_t ranks = 0;
  Ns time_ns = 0, min_time_ns = 0, mean_time_ns = 0, max_time_ns = 0;
  // The rank whose figures are shown (rank_shown): the slowest rank when slowest_significant,
  // else the lowest rank (ranks equal within noise).
  int64_t slowest_rank = -1;
  bool slowest_significant = false;
  int64_t tokens = 0;
  double tokens_per_s = 0, time_per_token_ns = 0;
  double flops = 0, tflops_per_gpu = 0;
  // Share of the compute operations' kernel time (all ranks) whose FLOPs are known.
  double flops_coverage = 0;
  double mfu = -1;  // -1 = no peak rate known, or flops_coverage < kMfuMinCoverage
  // Components of the slowest rank's iteration (they add up to time_ns).
  std::map<std::string, Ns> components;
  int64_t straggler_rank = -1;   // the significant straggler (StragglerCost), -1 = none
  Ns straggler_lead_ns = 0;      // Chopper's lead: mean lead of the others over the least-lead rank
  int64_t least_lead_rank = -1;  // the rank with the least total lead (Chopper's waited-for rank)
  StragglerCost straggler;       // the counterfactual, significant or not
};

}  // namespace chopper
