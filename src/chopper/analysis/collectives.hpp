#pragma once
// Collectives matched across ranks and the clock offsets they give (analysis/collectives.cpp:
// collective_partial, finalize_collectives). docs/metrics.md, "Collectives across ranks".
#include <cstdint>
#include <string>
#include <string_view>

#include "chopper/analysis/label_key.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// One communication activity, ready to be matched across ranks.
struct CollRecord {
  int64_t rank = -1;
  std::string group;  // process group name, else its ranks, else "" (default group)
  int64_t index = 0;  // order within (rank, group)
  CollType type = CollType::kUnknown, called = CollType::kUnknown;
  Ns start_ns = 0, end_ns = 0;  // rank's clock
  int64_t bytes = -1;           // message size (NCCL convention), -1 unknown
  int64_t in_bytes = -1, out_bytes = -1;
  int64_t group_size = -1;
  std::string dtype, algorithm, protocol;
  LabelKey key;
};

// One collective matched across ranks, or (ranks = 1) one rank's collective when no other rank
// of its group was loaded.
struct CollectiveRow {
  std::string group;
  int64_t index = 0;
  CollType type = CollType::kUnknown, called = CollType::kUnknown;
  LabelKey key;  // from the lowest rank
  int64_t ranks = 0, group_size = -1;
  int64_t bytes = -1;
  std::string dtype, algorithm;
  Ns start_ns = 0;                          // earliest start (aligned)
  Ns latency_ns = 0;                        // min duration over ranks (TraceLens's comm_latency)
  Ns max_dur_ns = 0;                        // max duration over ranks
  Ns arrival_skew_ns = 0;                   // latest start − earliest start (-1: one rank)
  Ns end_skew_ns = 0;                       // latest end − earliest end (-1: one rank)
  int64_t last_rank = -1, first_rank = -1;  // arrived last / first
  double algbw_gbs = 0, busbw_gbs = 0;      // 0 when the size is unknown
  double imbalance = 0;                     // all-to-all(v): max/mean rank bytes; 0 otherwise
};

struct ClockOffset {
  int64_t rank = -1;
  int64_t reference_rank = -1;
  Ns offset_ns = 0;  // rank clock − reference clock; subtract to align
  uint64_t collectives = 0;
  Ns spread_ns = 0;  // median absolute deviation of the per-collective estimates
  bool applied = false;
};

// NCCL's bus-bandwidth factor for a collective of n ranks (docs/metrics.md).
double busbw_factor(CollType t, int64_t n);
// Bytes per element of a PyTorch dtype name ("BFloat16", "Float", ...); 0 if unknown.
int dtype_size(std::string_view dtype);

}  // namespace chopper
