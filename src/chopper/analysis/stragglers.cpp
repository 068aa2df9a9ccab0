// Stragglers: Chopper's lead. For every compute-operation instance (iteration, phase, layer,
// operation) present on several ranks, the reference is the latest first-kernel start over the
// ranks (aligned clocks); a rank's lead is how far ahead of that it started. The rank the others
// wait for is the one with the least total lead in the iteration. Formulas: docs/metrics.md.
#include <algorithm>
#include <functional>
#include <map>
#include <string_view>

#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

struct LabelKeyHash {
  size_t operator()(const LabelKey& k) const {
    size_t h = std::hash<std::string_view>{}(k.operation);
    h ^= static_cast<size_t>(k.iteration) * 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= static_cast<size_t>(k.layer) * 0xff51afd7ed558ccdull + (h << 6) + (h >> 2);
    h ^= static_cast<size_t>(k.phase) + (h << 6) + (h >> 2);
    return h;
  }
};

}  // namespace

void finalize_stragglers(RunAnalysis& ra) {
  // Instances by label across ranks (one per instance: millions on a long run). Nothing below
  // depends on the order within a label: the reference is a maximum, the sums are of integers.
  FlatIndex<LabelKey, LabelKeyHash> labels;
  std::vector<uint32_t> label_of;
  std::vector<std::pair<uint32_t, Ns>> seen;  // per label: instances, latest aligned start
  for (RankAnalysis& r : ra.ranks) {
    const Ns off = clock_offset(ra, r.rank);
    for (const OpInstance& oi : r.ops) {
      if (oi.key.iteration == kNoId) continue;
      bool fresh = false;
      const uint32_t id = labels.id(oi.key, &fresh);
      if (fresh) seen.emplace_back(0, INT64_MIN);
      ++seen[id].first;
      seen[id].second = std::max(seen[id].second, oi.first_start_ns - off);
      label_of.push_back(id);
    }
  }
  std::map<std::pair<int64_t, int64_t>, StragglerRow>& acc = ra.straggler_acc;
  size_t n = 0;
  for (RankAnalysis& r : ra.ranks) {
    const Ns off = clock_offset(ra, r.rank);
    for (OpInstance& oi : r.ops) {
      if (oi.key.iteration == kNoId) continue;
      const auto& [count, ref] = seen[label_of[n++]];
      if (count < 2) continue;
      oi.lead_ns = ref - (oi.first_start_ns - off);
      StragglerRow& s = acc[{oi.rank, oi.key.iteration}];
      ++s.op_instances;
      s.total_lead_ns += oi.lead_ns;
      s.max_lead_ns = std::max(s.max_lead_ns, oi.lead_ns);
    }
  }
  std::map<int64_t, std::pair<int64_t, Ns>> least;  // iteration -> (rank, total lead)
  std::map<int64_t, int> ranks_in;
  for (auto& [k, s] : acc) {
    s.rank = k.first;
    s.iteration = k.second;
    s.mean_lead_ns = s.op_instances ? s.total_lead_ns / static_cast<Ns>(s.op_instances) : 0;
    if (s.op_instances == 0 || k.second == kNoId) continue;
    ++ranks_in[k.second];
    auto it = least.find(k.second);
    if (it == least.end() || s.total_lead_ns < it->second.second)
      least[k.second] = {k.first, s.total_lead_ns};
  }
  for (auto& [k, s] : acc) {
    auto it = least.find(k.second);
    s.waited_for = it != least.end() && ranks_in[k.second] > 1 && it->second.first == k.first;
    ra.stragglers.push_back(s);
  }
}

}  // namespace chopper
