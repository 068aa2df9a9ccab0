#include "chopper/report/rank_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "chopper/base/error.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

// Each row of `rows` through the table's declaration.
template <class Def, class Rows>
void put_all(const Def& def, const Rows& rows, TableSink& sink) {
  for (const auto& r : rows) def.put(sink, r);
}

void gpu_activity_rows(const RankSlot& slot, TableSink& sink) {
  if (!slot.ok) return;
  const RankTrace& t = slot.trace;
  const bool lab = t.labelled();
  for (size_t a = 0; a < t.gpu.size(); ++a)
    kGpuActivitiesTable.put(sink, GpuActivityView{t, slot.rank, lab, a});
}

void telemetry_rows(const RankSlot* s, const RankHardware* rh, TableSink& sink) {
  if (rh == nullptr || s == nullptr || !s->ok || s->trace.gpu.size() == 0) return;
  const GpuActivities& g = s->trace.gpu;
  Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
  for (size_t k = 0; k < g.size(); ++k) {
    lo = std::min(lo, g.start_ns[k]);
    hi = std::max(hi, g.start_ns[k] + std::max<Ns>(0, g.dur_ns[k]));
  }
  for (const Series& se : rh->series) {
    if (se.t_ns.empty()) continue;
    auto a = std::lower_bound(se.t_ns.begin(), se.t_ns.end(), lo);
    auto b = std::upper_bound(se.t_ns.begin(), se.t_ns.end(), hi);
    if (a != se.t_ns.begin()) --a;
    if (b != se.t_ns.end()) ++b;
    for (auto it = a; it != b; ++it)
      kTelemetryTable.put(sink,
                          TelemetrySampleView{*rh, se, static_cast<size_t>(it - se.t_ns.begin())});
  }
}

void kernel_hw_rows(const RankSlot* s, const RankAnalysis& r, TableSink& sink) {
  if (s == nullptr || !s->ok) return;
  for (const KernelHw& k : r.kernel_hw) kKernelHwTable.put(sink, KernelHwView{r.rank, s->trace, k});
}

// The host frames of an idle cause, largest first, each with its share of the cause's time.
std::string top_frames(const IdleCauseRow& x) {
  std::string frames;
  for (const auto& [name, ns] : x.frames)
    frames += fmt::format(
        "{}{} ({:.1f}%)", frames.empty() ? "" : " | ", name,
        x.idle_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(x.idle_ns) : 0.0);
  return frames;
}

void analysis_rows(RankStream s, const RankAnalysis& r, const AnalysisOptions& o, TableSink& sink) {
  switch (s) {
    case RankStream::kTemporalBreakdown:
      return put_all(kTemporalBreakdownTable, r.breakdown, sink);
    case RankStream::kIdleBreakdown:
      return put_all(kIdleBreakdownTable, r.idle, sink);
    case RankStream::kOverlap:
      return put_all(kOverlapTable, r.breakdown, sink);
    case RankStream::kExposedComm:
      return put_all(kExposedCommTable, r.exposed, sink);
    case RankStream::kLaunchOverhead:
      return put_all(kLaunchOverheadTable, r.launch, sink);
    case RankStream::kLaunchStats:
      if (r.ok) kLaunchStatsTable.put(sink, LaunchStatsView{r.launch_stats, o});
      return;
    case RankStream::kQueueLength:
      return put_all(kQueueLengthTable, r.queues, sink);
    case RankStream::kIdleCauses:
      for (const IdleCauseRow& x : r.idle_causes)
        kIdleCausesTable.put(sink, IdleCauseView{x, top_frames(x)});
      return;
    case RankStream::kHierarchyHw:
      return put_all(kHierarchyHwTable, r.hw_levels, sink);
    default:
      return;
  }
}

size_t hierarchy_level(RankStream s) {
  switch (s) {
    case RankStream::kHierarchyIteration:
      return 1;
    case RankStream::kHierarchyPhase:
      return 2;
    case RankStream::kHierarchyLayer:
      return 3;
    case RankStream::kHierarchyOperation:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

std::string_view rank_stream_table(RankStream s) {
  switch (s) {
#define CHOPPER_X(e, def) \
  case RankStream::e:     \
    return def.name;
    CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
  }
  return "";
}

const std::vector<RankStream>& all_rank_streams() {
  static const std::vector<RankStream> all = {
#define CHOPPER_X(e, def) RankStream::e,
      CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
  };
  return all;
}

TableSchema rank_table_schema(RankStream s) {
  switch (s) {
#define CHOPPER_X(e, def) \
  case RankStream::e:     \
    return def.schema();
    CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
  }
  throw Error("rank_table_schema: unknown stream");
}

void rank_rows(RankStream s, const RankView& v, const AnalysisOptions& o, TableSink& sink) {
  switch (s) {
    case RankStream::kGpuActivities:
      if (v.slot != nullptr) gpu_activity_rows(*v.slot, sink);
      return;
    case RankStream::kTelemetry:
      telemetry_rows(v.slot, v.hw, sink);
      return;
    case RankStream::kKernelHw:
      if (v.analysis != nullptr) kernel_hw_rows(v.slot, *v.analysis, sink);
      return;
    case RankStream::kHierarchyIteration:
    case RankStream::kHierarchyPhase:
    case RankStream::kHierarchyLayer:
    case RankStream::kHierarchyOperation:
      if (v.hierarchy != nullptr && hierarchy_level(s) < v.hierarchy->size())
        hierarchy_level_rows(*v.hierarchy, hierarchy_level(s), sink);
      return;
    default:
      if (v.analysis != nullptr) analysis_rows(s, *v.analysis, o, sink);
      return;
  }
}

RankRows::~RankRows() = default;

void InMemoryRankRows::rows(RankStream s, TableSink& sink) {
  const HardwareRun* hw = ra_.hardware;
  switch (s) {
    case RankStream::kTelemetry:
      // The hardware's ranks, parallel to the run's.
      if (hw != nullptr)
        for (size_t i = 0; i < hw->ranks.size(); ++i)
          rank_rows(s,
                    RankView{i < run_.ranks.size() ? &run_.ranks[i] : nullptr, nullptr,
                             &hw->ranks[i], nullptr},
                    o_, sink);
      return;
    case RankStream::kHierarchyIteration:
    case RankStream::kHierarchyPhase:
    case RankStream::kHierarchyLayer:
    case RankStream::kHierarchyOperation:
      rank_rows(s, RankView{nullptr, nullptr, nullptr, hierarchy_}, o_, sink);
      return;
    case RankStream::kGpuActivities:
      for (const RankSlot& slot : run_.ranks) rank_rows(s, RankView{&slot}, o_, sink);
      return;
    default:
      for (size_t i = 0; i < ra_.ranks.size(); ++i) {
        const RankAnalysis& r = ra_.ranks[i];
        // The rank's slot: the same index when the analysis is parallel to the run.
        const RankSlot* slot = nullptr;
        if (i < run_.ranks.size() && run_.ranks[i].rank == r.rank) slot = &run_.ranks[i];
        for (size_t j = 0; slot == nullptr && j < run_.ranks.size(); ++j)
          if (run_.ranks[j].rank == r.rank) slot = &run_.ranks[j];
        rank_rows(s, RankView{slot, &r}, o_, sink);
      }
      return;
  }
}

void write_rank_table(RankStream s, RankRows& rows, TableSink& sink) {
  sink.begin(rank_table_schema(s));
  rows.rows(s, sink);
  sink.end();
}

void hierarchy_level_rows(const std::vector<Aggregation>& prefixes, size_t k, TableSink& sink) {
  const Aggregation& a = prefixes[k];
  // The kernel time of each row of the level above, by key, sorted: built for one level at a
  // time, so the whole tree is never held twice (it can have millions of rows).
  std::vector<std::pair<AggKey, Ns>> parent_ns;
  Ns top_total = 0;
  if (k == 0) {
    for (const AggRow& r : a.rows) top_total += r.kernel_ns;
  } else {
    const Aggregation& up = prefixes[k - 1];
    parent_ns.reserve(up.rows.size());
    for (const AggRow& r : up.rows) parent_ns.emplace_back(key_upto(r, up.levels, k), r.kernel_ns);
    std::sort(parent_ns.begin(), parent_ns.end());
    size_t n = 0;  // equal keys summed
    for (size_t i = 0; i < parent_ns.size(); ++i) {
      if (n > 0 && parent_ns[n - 1].first == parent_ns[i].first)
        parent_ns[n - 1].second += parent_ns[i].second;
      else
        parent_ns[n++] = parent_ns[i];
    }
    parent_ns.resize(n);
  }
  for (const AggRow& r : a.rows) {
    Ns parent = top_total;
    if (k > 0) {
      const AggKey want = key_upto(r, a.levels, k);
      auto it = std::lower_bound(parent_ns.begin(), parent_ns.end(), want,
                                 [](const auto& e, const AggKey& x) { return e.first < x; });
      parent = it == parent_ns.end() || it->first != want ? 0 : it->second;
    }
    kHierarchyTable.put(sink, HierarchyRowView{a, r, parent});
  }
}

}  // namespace chopper
