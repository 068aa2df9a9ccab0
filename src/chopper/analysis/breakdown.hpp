#pragma once
// The time breakdowns of one rank (analysis/breakdown.cpp, breakdown_partial): compute, idle and
// communication per window, idle by cause per stream, communication per label, operation
// instances, and time per kernel / operation / class. docs/metrics.md, "Where the time goes".
#include <cstdint>
#include <string>

#include "chopper/analysis/label_key.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// Temporal breakdown of one rank over one window (an iteration, or the whole trace).
struct BreakdownRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;  // kNoId = the whole trace
  Ns start_ns = 0, total_ns = 0;
  Ns compute_ns = 0, non_compute_ns = 0, idle_ns = 0;
  Ns exposed_comm_ns = 0, exposed_memcpy_ns = 0;
  Ns comm_ns = 0, overlapped_comm_ns = 0, memcpy_ns = 0;
};

// Idle time of one stream by cause (HTA's idle_time_breakdown).
struct IdleRow {
  int64_t rank = -1;
  int32_t device = -1;
  int64_t stream = -1;
  int64_t iteration = kNoId;  // kNoId = the whole trace
  uint64_t gaps = 0;
  Ns host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
};

// Communication and its exposure per label (phase, layer, operation of the collectives).
struct ExposedRow {
  int64_t rank = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns comm_ns = 0;     // this label's share of the union of communication time
  Ns exposed_ns = 0;  // of which no compute ran
};

// One compute-operation instance on one rank (Chopper's (gpu, iteration, layer, op)).
struct OpInstance {
  int64_t rank = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns first_start_ns = 0, last_end_ns = 0;  // on this rank's clock
  Ns kernel_ns = 0;
  Ns comm_overlap_ns = 0;  // |[first, last) ∩ union(communication)|
  double flops = 0;
  Ns lead_ns = -1;  // finalize: max over ranks of first_start (aligned) − own; -1 if unmatched
};

// Kernel / operation / class breakdown rows (rank -1 = all ranks).
struct NameStat {
  int64_t rank = -1;
  std::string name;   // kernel name, operation, or class; "others" = folded rest
  std::string group;  // gpu class (kernels), op class (operations)
  uint64_t count = 0;
  Ns total_ns = 0, min_ns = 0, max_ns = 0;
  double share = 0;  // of the rank's (or run's) GPU activity time
};

}  // namespace chopper
