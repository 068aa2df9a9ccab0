#pragma once
// Aggregation of labelled GPU activities at any combination of the hierarchy's levels
// (GPU x iteration x phase x layer x operation): count, summed kernel time, GPU busy time (the
// union of the activities' intervals on each GPU, summed over GPUs), first start, last end,
// elapsed, and the share of the parent's kernel time. Also label coverage: how much GPU time
// each rule labelled. Formulas: docs/metrics.md.
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "chopper/base/enum_names.hpp"
#include "chopper/base/intern.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

#define CHOPPER_LEVELS(X)    \
  X(kGpu, "gpu")             \
  X(kIteration, "iteration") \
  X(kPhase, "phase")         \
  X(kLayer, "layer")         \
  X(kOperation, "operation")
CHOPPER_ENUM(Level, CHOPPER_LEVELS)
inline std::string_view level_name(Level l) {
  return enum_name(l);
}
// "gpu,iteration,phase" -> levels; throws Error on an unknown name.
std::vector<Level> parse_levels(std::string_view csv);

struct AggRow {
  // Key; a level not in the grouping holds its "none" value.
  int64_t rank = -1;
  int32_t device = -1;
  int64_t iteration = kNoId;
  Phase phase = Phase::kNone;
  int32_t layer = -1;
  StrId operation = 0;  // in Aggregation::strings
  // Values
  OpClass op_class = OpClass::kNone;  // operation rows: the class with the most kernel time
  uint64_t count = 0;
  Ns kernel_ns = 0;
  Ns busy_ns = 0;
  Ns first_start_ns = 0;
  Ns last_end_ns = 0;
  Ns elapsed_ns() const { return last_end_ns - first_start_ns; }
};

// A row's key as a tuple (rank, device, iteration, phase, layer, operation) with the fields of
// levels[k..] cleared: its parent's key at level k (the tree and the hierarchy table's shares).
using AggKey = std::tuple<int64_t, int32_t, int64_t, Phase, int32_t, StrId>;
AggKey key_upto(const AggRow& r, const std::vector<Level>& levels, size_t k);

struct Aggregation {
  std::vector<Level> levels;
  std::vector<AggRow> rows;  // sorted by key (rank, device, iteration, phase, layer, operation)
  std::shared_ptr<StringTable> strings;
  std::string_view operation(const AggRow& r) const { return strings->str(r.operation); }
};

// Groups every labelled activity of the readable ranks. `strings` (may be null) is shared
// across calls so operation ids agree between aggregations.
Aggregation aggregate(const Run& run, std::span<const Level> levels,
                      std::shared_ptr<StringTable> strings = nullptr);

// aggregate() for every prefix of `levels` (levels[0]; levels[0..1]; ...), in one pass over the
// activities: what the tree and the hierarchy table need.
std::vector<Aggregation> aggregate_prefixes(const Run& run, std::span<const Level> levels,
                                            std::shared_ptr<StringTable> strings = nullptr);
// The same over some ranks (a streamed analyze aggregates each rank alone).
std::vector<Aggregation> aggregate_prefixes(std::span<const RankSlot> ranks,
                                            std::span<const Level> levels,
                                            std::shared_ptr<StringTable> strings = nullptr);

// Label coverage: per rank, level and rule, the activities and GPU time the rule labelled
// (rule "" = unlabelled). Scope "all" covers every activity; "in_iterations" only those that
// have an iteration.
struct CoverageRow {
  int64_t rank;
  std::string level;  // iteration, phase, layer, operation, op_class
  std::string scope;  // all, in_iterations
  std::string rule;   // "" = no label
  uint64_t activities = 0;
  Ns kernel_ns = 0;
  Ns scope_kernel_ns = 0;  // the scope's total
};
std::vector<CoverageRow> label_coverage(const Run& run);
std::vector<CoverageRow> label_coverage(std::span<const RankSlot> ranks);

// Share of GPU time in `scope` that has a label at `level` on rank (rank -1 = all ranks).
double coverage_share(const std::vector<CoverageRow>& rows, std::string_view level,
                      std::string_view scope, int64_t rank = -1);

}  // namespace chopper
