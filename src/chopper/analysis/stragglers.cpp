// Stragglers. Chopper's lead: for every compute-operation instance (iteration, phase, layer,
// operation) present on several ranks, the reference is the latest first-kernel start over the
// ranks (aligned clocks); a rank's lead is how far ahead of that it started, and the rank with the
// least total lead is the one Chopper says the others wait for. What a straggler costs is the
// counterfactual of StragglerCost (analysis.hpp), with its significance against the ranks' own
// variation. Formulas: docs/metrics.md.
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
  // The counterfactual: per iteration, the ranks' exposed communication (their waiting).
  std::map<int64_t, std::vector<const BreakdownRow*>> per_iter;
  for (const RankAnalysis& r : ra.ranks) {
    if (!r.ok) continue;
    for (const BreakdownRow& b : r.breakdown)
      if (b.iteration != kNoId) per_iter[b.iteration].push_back(&b);
  }
  for (auto& [it, rows] : per_iter) ra.straggler_cost[it] = straggler_cost(it, rows);
  for (auto& [k, s] : acc) {
    auto it = least.find(k.second);
    s.waited_for = it != least.end() && ranks_in[k.second] > 1 && it->second.first == k.first;
  }
  // Every (rank, iteration) with a breakdown gets a row, with its waiting for the straggler.
  for (const auto& [it, rows] : per_iter)
    for (const BreakdownRow* b : rows) {
      StragglerRow& s = acc[{b->rank, it}];
      s.rank = b->rank;
      s.iteration = it;
      s.exposed_comm_ns = b->exposed_comm_ns;
      const StragglerCost& sc = ra.straggler_cost[it];
      if (sc.significant && b->rank != sc.rank) {
        Ns least_e = b->exposed_comm_ns;
        for (const BreakdownRow* o : rows)
          if (o->rank == sc.rank) least_e = o->exposed_comm_ns;
        s.straggler_wait_ns = std::clamp<Ns>(b->exposed_comm_ns - least_e, 0, b->exposed_comm_ns);
      }
    }
  for (auto& [k, s] : acc) ra.stragglers.push_back(s);
}

StragglerCost straggler_cost(int64_t iteration, const std::vector<const BreakdownRow*>& rows) {
  StragglerCost sc;
  sc.iteration = iteration;
  if (rows.size() < 2) return sc;
  auto median = [](std::vector<Ns> v) {
    const size_t h = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
    if (v.size() % 2 == 1) return v[h];
    const Ns hi = v[h];
    const Ns lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h));
    return lo + (hi - lo) / 2;
  };
  std::vector<Ns> e, t, comp, other;
  const BreakdownRow* least = nullptr;
  for (const BreakdownRow* b : rows) {
    e.push_back(b->exposed_comm_ns);
    t.push_back(b->total_ns);
    comp.push_back(b->compute_ns);
    other.push_back(b->total_ns - b->compute_ns - b->exposed_comm_ns);
    // Ties go to the lower rank; the rows come in rank order.
    if (least == nullptr || b->exposed_comm_ns < least->exposed_comm_ns) least = b;
  }
  const Ns med = median(e);
  std::vector<Ns> dev;
  for (Ns x : e) dev.push_back(x > med ? x - med : med - x);
  sc.rank = least->rank;
  sc.cost_ns = med - least->exposed_comm_ns;
  sc.sigma_ns = static_cast<Ns>(std::llround(1.4826 * static_cast<double>(median(dev))));
  sc.step_ns = median(t);
  sc.excess_compute_ns = least->compute_ns - median(comp);
  sc.excess_other_ns =
      (least->total_ns - least->compute_ns - least->exposed_comm_ns) - median(other);
  sc.significant = sc.cost_ns > 3 * sc.sigma_ns && sc.cost_ns * 100 > sc.step_ns;
  return sc;
}

}  // namespace chopper
