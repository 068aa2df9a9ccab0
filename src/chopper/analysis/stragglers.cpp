// Stragglers: Chopper's lead. For every compute-operation instance (iteration, phase, layer,
// operation) present on several ranks, the reference is the latest first-kernel start over the
// ranks (aligned clocks); a rank's lead is how far ahead of that it started. The rank the others
// wait for is the one with the least total lead in the iteration. Formulas: docs/metrics.md.
#include <algorithm>
#include <map>

#include "chopper/analysis/parts.hpp"

namespace chopper {

void finalize_stragglers(RunAnalysis& ra) {
  // Instances by label across ranks: sorted by label, ranks in load order within one (a vector
  // of pointers: one per instance, millions on a long run).
  std::vector<OpInstance*> by_key;
  for (RankAnalysis& r : ra.ranks)
    for (OpInstance& oi : r.ops)
      if (oi.key.iteration != kNoId) by_key.push_back(&oi);
  std::stable_sort(by_key.begin(), by_key.end(),
                   [](const OpInstance* a, const OpInstance* b) { return a->key < b->key; });
  std::map<std::pair<int64_t, int64_t>, StragglerRow>& acc = ra.straggler_acc;
  for (size_t lo = 0, hi = 0; lo < by_key.size(); lo = hi) {
    while (hi < by_key.size() && by_key[hi]->key == by_key[lo]->key) ++hi;
    if (hi - lo < 2) continue;
    Ns ref = INT64_MIN;
    for (size_t j = lo; j < hi; ++j)
      ref = std::max(ref, by_key[j]->first_start_ns - clock_offset(ra, by_key[j]->rank));
    for (size_t j = lo; j < hi; ++j) {
      OpInstance* oi = by_key[j];
      oi->lead_ns = ref - (oi->first_start_ns - clock_offset(ra, oi->rank));
      StragglerRow& s = acc[{oi->rank, oi->key.iteration}];
      ++s.op_instances;
      s.total_lead_ns += oi->lead_ns;
      s.max_lead_ns = std::max(s.max_lead_ns, oi->lead_ns);
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
