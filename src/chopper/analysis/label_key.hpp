#pragma once
// Where a row of an analysis sits in the hierarchy: iteration, phase, layer, operation.
#include <cstdint>
#include <string_view>

#include "chopper/model/rank_trace.hpp"

namespace chopper {

// A label key: iteration (kNoId = none), phase, layer (-1 = none), operation (text). The
// operation's text is a view: into the names of the RankAnalysis the key came from (below), so a
// key lives as long as the analysis it belongs to. Millions of keys (one per operation instance
// and per launch row) share a few hundred names.
struct LabelKey {
  int64_t iteration = kNoId;
  Phase phase = Phase::kNone;
  int32_t layer = -1;
  std::string_view operation;
  auto operator<=>(const LabelKey&) const = default;
};

}  // namespace chopper
