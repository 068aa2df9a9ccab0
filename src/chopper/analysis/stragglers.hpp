#pragma once
// Stragglers: each rank's lead per iteration and what the waited-for rank costs
// (analysis/stragglers.cpp). docs/metrics.md, "Stragglers".
#include <cstdint>

#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct StragglerRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  uint64_t op_instances = 0;
  Ns total_lead_ns = 0, mean_lead_ns = 0, max_lead_ns = 0;
  uint64_t collectives = 0, arrived_last = 0;
  Ns coll_wait_ns = 0;      // Σ (latest arrival − own arrival) over its collectives
  bool waited_for = false;  // the rank with the least total lead in this iteration
  // The straggler counterfactual (StragglerCost): this rank's exposed communication, and the part
  // of it spent waiting for the iteration's significant straggler (0 when there is none).
  Ns exposed_comm_ns = 0, straggler_wait_ns = 0;
};

// What a straggler costs one iteration: the time the iteration would save if the rank the others
// wait for ran like the median rank. In synchronous data parallelism every rank's step ends
// together, so each rank's step is its own work plus its waiting at collectives (exposed
// communication); the rank with the least waiting is the one the others wait for, and the step
// would shorten by the median rank's waiting minus its own. Significant when that exceeds both
// 3 robust σ of the ranks' waiting (1.4826 × MAD about the median) and 1% of the step.
// docs/metrics.md ("Stragglers").
struct StragglerCost {
  int64_t iteration = kNoId;
  int64_t rank = -1;  // the rank with the least exposed communication
  Ns cost_ns = 0;     // median − least exposed communication over the ranks
  Ns sigma_ns = 0;    // 1.4826 × MAD of the ranks' exposed communication
  Ns step_ns = 0;     // median step time of the ranks
  bool significant = false;
  // The rank's excess over the median rank, by what it spent longer on (they add up to about
  // cost_ns): compute (slower kernels) and the rest of its own time (host late, idle, copies).
  Ns excess_compute_ns = 0, excess_other_ns = 0;
};

}  // namespace chopper
