#include "chopper/analysis/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace chopper {
namespace {

double points(double diff_ns, double iteration_ns) {
  return iteration_ns > 0 ? 100.0 * diff_ns / iteration_ns : 0.0;
}

template <class T>
void sort_by_diff(std::vector<T>& v) {
  std::stable_sort(v.begin(), v.end(), [](const T& x, const T& y) {
    return std::abs(x.diff_ns) > std::abs(y.diff_ns);
  });
}

}  // namespace

ChangeStatus classify_change(double a_ns, double b_ns, double iteration_a_ns) {
  if (a_ns <= 0 && b_ns > 0) return ChangeStatus::kAdded;
  if (b_ns <= 0 && a_ns > 0) return ChangeStatus::kRemoved;
  const double d = b_ns - a_ns;
  if (std::abs(d) <= kNoiseRelative * a_ns || std::abs(d) <= kNoiseIterationShare * iteration_a_ns)
    return ChangeStatus::kSame;
  return d > 0 ? ChangeStatus::kSlower : ChangeStatus::kFaster;
}

CompareRun profile_run(const Run& run, const RunAnalysis& ra, const Findings& f,
                       const AnalysisOptions& o, std::string label, std::string path) {
  CompareRun c;
  c.label = std::move(label);
  c.path = std::move(path);
  c.device = ra.device != nullptr ? std::string(ra.device->marketing_name) : std::string();
  for (const RankAnalysis& r : ra.ranks) c.ranks += r.ok ? 1 : 0;
  c.iterations = ra.iterations.size();
  c.iteration_sigma_ns = f.iteration_sigma_ns;
  c.findings = f.all;
  c.tokens_per_step = o.tokens_per_step;
  std::set<int64_t> iters;
  if (!ra.iterations.empty()) {
    const double n = static_cast<double>(ra.iterations.size());
    double mfu = 0, tflops = 0;
    size_t mfu_n = 0, tflops_n = 0;
    for (const IterationRow& x : ra.iterations) {
      iters.insert(x.iteration);
      c.iteration_ns += static_cast<double>(x.time_ns) / n;
      for (const auto& [k, v] : x.components) c.components[k] += static_cast<double>(v) / n;
      if (x.mfu >= 0) mfu += x.mfu, ++mfu_n;
      if (x.flops > 0) tflops += x.tflops_per_gpu, ++tflops_n;
    }
    if (mfu_n > 0) c.mfu = mfu / static_cast<double>(mfu_n);
    if (tflops_n > 0) c.tflops_per_gpu = tflops / static_cast<double>(tflops_n);
    if (c.tokens_per_step > 0 && c.iteration_ns > 0) {
      c.tokens_per_s = static_cast<double>(c.tokens_per_step) / (c.iteration_ns * 1e-9);
      c.time_per_token_ns = c.iteration_ns / static_cast<double>(c.tokens_per_step);
    }
    // Energy: the whole-window power rows of every rank, per iteration.
    double e = 0, t = 0;
    size_t e_n = 0;
    for (const IterationRow& x : ra.iterations) {
      double ei = 0;
      bool have = false;
      for (const RankAnalysis& r : ra.ranks)
        for (const PowerRow& p : r.power)
          if (p.phase.empty() && p.iteration == x.iteration && p.time_ns > 0)
            ei += p.energy_j, have = true;
      if (!have) continue;
      e += ei, t += static_cast<double>(x.time_ns), ++e_n;
    }
    if (e_n > 0) {
      c.energy_per_iteration_j = e / static_cast<double>(e_n);
      if (t > 0) c.power_w = e / (t * 1e-9);
      if (c.tokens_per_step > 0)
        c.energy_per_token_j = c.energy_per_iteration_j / static_cast<double>(c.tokens_per_step);
    }
  }
  // Operations and kernels: every GPU activity of an analysed iteration, per rank per iteration.
  int64_t ranks = 0;
  for (const RankSlot& s : run.ranks) {
    if (!s.ok || !s.trace.labelled()) continue;
    ++ranks;
    const RankTrace& t = s.trace;
    const GpuActivities& g = t.gpu;
    for (size_t i = 0; i < g.size(); ++i) {
      if (!iters.count(g.iteration[i])) continue;
      const double d = static_cast<double>(g.dur_ns[i]);
      CompareAmount& op =
          c.operations[{g.phase[i], g.layer[i], std::string(t.strings.str(g.operation[i]))}];
      if (op.group.empty()) op.group = std::string(op_class_name(g.op_class[i]));
      op.ns += d, op.count += 1;
      CompareAmount& k = c.kernels[std::string(t.strings.str(g.name[i]))];
      if (k.group.empty()) k.group = std::string(gpu_class_name(g.cls[i]));
      k.ns += d, k.count += 1;
    }
  }
  const double per = static_cast<double>(std::max<int64_t>(ranks, 1)) *
                     static_cast<double>(std::max<size_t>(iters.size(), 1));
  for (auto& [k, v] : c.operations) v.ns /= per, v.count /= per;
  for (auto& [k, v] : c.kernels) v.ns /= per, v.count /= per;
  // Collectives of the analysed iterations, per type and size (matched ones counted once).
  {
    std::map<std::pair<std::string, int64_t>, std::pair<double, size_t>> bus;
    for (const CollectiveRow& x : ra.collectives) {
      if (!iters.count(x.key.iteration)) continue;
      const std::pair<std::string, int64_t> key{
          std::string(coll_type_name(x.called != CollType::kUnknown ? x.called : x.type)), x.bytes};
      CompareCollectives& a = c.collectives[key];
      a.count += 1;
      a.latency_ns += static_cast<double>(x.latency_ns);
      if (x.busbw_gbs > 0) bus[key].first += x.busbw_gbs, ++bus[key].second;
    }
    const double n = static_cast<double>(std::max<size_t>(iters.size(), 1));
    for (auto& [k, a] : c.collectives) {
      a.latency_ns /= a.count;
      a.count /= n;
      auto b = bus.find(k);
      if (b != bus.end() && b->second.second > 0)
        a.busbw_gbs = b->second.first / static_cast<double>(b->second.second);
    }
  }
  return c;
}

namespace {

// Matches two runs' amounts by key (an operation, a kernel name): each key of either run gets a
// row with both sides' time and count, the difference, and whether it was added, removed,
// slower, faster or the same; sorted by the size of the difference. `label` fills the key and
// its group into the row.
template <class Key, class Diff, class Label>
void diff_amounts(const std::map<Key, CompareAmount>& a, const std::map<Key, CompareAmount>& b,
                  double it, std::vector<Diff>& out, Label label) {
  std::map<Key, std::pair<const CompareAmount*, const CompareAmount*>> m;
  for (const auto& [k, v] : a) m[k].first = &v;
  for (const auto& [k, v] : b) m[k].second = &v;
  for (const auto& [k, v] : m) {
    Diff d;
    label(d, k, v.first != nullptr ? v.first->group : v.second->group);
    if (v.first != nullptr) d.a_ns = v.first->ns, d.a_count = v.first->count;
    if (v.second != nullptr) d.b_ns = v.second->ns, d.b_count = v.second->count;
    d.diff_ns = d.b_ns - d.a_ns;
    d.diff_points = points(d.diff_ns, it);
    d.status = v.first == nullptr    ? ChangeStatus::kAdded
               : v.second == nullptr ? ChangeStatus::kRemoved
                                     : classify_change(d.a_ns, d.b_ns, it);
    out.push_back(std::move(d));
  }
  sort_by_diff(out);
}

}  // namespace

PairComparison compare_pair(const CompareRun& a, const CompareRun& b) {
  PairComparison p;
  const double it = a.iteration_ns;
  p.iteration_diff_ns = b.iteration_ns - a.iteration_ns;
  p.iteration_diff_points = points(p.iteration_diff_ns, it);
  // Components: the union of both runs' names; absent = 0.
  {
    std::map<std::string, std::pair<double, double>> m;
    for (const auto& [k, v] : a.components) m[k].first = v;
    for (const auto& [k, v] : b.components) m[k].second = v;
    for (const auto& [k, v] : m) {
      ComponentDiff d;
      d.component = k;
      d.a_ns = v.first;
      d.b_ns = v.second;
      d.diff_ns = d.b_ns - d.a_ns;
      d.diff_points = points(d.diff_ns, it);
      p.components.push_back(std::move(d));
    }
    sort_by_diff(p.components);
  }
  // Operations, matched by (phase, layer, operation); kernels, by name.
  diff_amounts(a.operations, b.operations, it, p.operations,
               [](OperationDiff& d, const OperationKey& k, const std::string& group) {
                 d.key = k;
                 d.op_class = group;
               });
  diff_amounts(a.kernels, b.kernels, it, p.kernels,
               [](KernelDiff& d, const std::string& k, const std::string& group) {
                 d.name = k;
                 d.kernel_class = group;
               });
  // Collectives, matched by (type, size).
  {
    std::map<std::pair<std::string, int64_t>, CollectiveDiff> m;
    for (const auto& [k, v] : a.collectives) m[k].a = v;
    for (const auto& [k, v] : b.collectives) m[k].b = v;
    for (auto& [k, d] : m) {
      d.type = k.first;
      d.bytes = k.second;
      d.diff_ns = d.b.ns() - d.a.ns();
      d.diff_points = points(d.diff_ns, it);
      d.status = d.a.count <= 0   ? ChangeStatus::kAdded
                 : d.b.count <= 0 ? ChangeStatus::kRemoved
                                  : classify_change(d.a.ns(), d.b.ns(), it);
      p.collectives.push_back(d);
    }
    sort_by_diff(p.collectives);
  }
  // Findings, matched by kind.
  {
    std::map<FindingKind, std::pair<const Finding*, const Finding*>> m;
    for (const Finding& x : a.findings) m[x.kind].first = &x;
    for (const Finding& x : b.findings) m[x.kind].second = &x;
    for (const auto& [k, v] : m) {
      FindingDiff d;
      d.kind = k;
      double se_a = 0, se_b = 0;
      if (v.first != nullptr)
        d.a_rank = v.first->rank, d.a_significant = v.first->significant,
        d.a_cost_ns = v.first->cost_ns, se_a = v.first->stderr_ns;
      if (v.second != nullptr)
        d.b_rank = v.second->rank, d.b_significant = v.second->significant,
        d.b_cost_ns = v.second->cost_ns, se_b = v.second->stderr_ns;
      d.diff_ns = d.b_cost_ns - d.a_cost_ns;
      d.diff_points = points(d.diff_ns, it);
      if (d.b_significant && !d.a_significant)
        d.change = FindingChange::kAppeared;
      else if (d.a_significant && !d.b_significant)
        d.change = FindingChange::kDisappeared;
      else if (!d.a_significant)
        d.change = FindingChange::kNeither;
      else if (std::abs(d.diff_ns) > 2 * std::sqrt(se_a * se_a + se_b * se_b) &&
               std::abs(d.diff_ns) > kMaterialShare * it)
        d.change = d.diff_ns > 0 ? FindingChange::kGrew : FindingChange::kShrank;
      else
        d.change = FindingChange::kSame;
      p.findings.push_back(d);
    }
    // Appeared and disappeared first, then grew/shrank, then the rest; each by |diff|.
    auto rank = [](FindingChange c) {
      return c == FindingChange::kAppeared || c == FindingChange::kDisappeared ? 0
             : c == FindingChange::kGrew || c == FindingChange::kShrank        ? 1
                                                                               : 2;
    };
    std::stable_sort(p.findings.begin(), p.findings.end(),
                     [&rank](const FindingDiff& x, const FindingDiff& y) {
                       if (rank(x.change) != rank(y.change)) return rank(x.change) < rank(y.change);
                       return std::abs(x.diff_ns) > std::abs(y.diff_ns);
                     });
  }
  return p;
}

void merge_operation_layers(CompareRun& r) {
  std::map<OperationKey, CompareAmount> merged;
  for (const auto& [k, v] : r.operations) {
    CompareAmount& m = merged[OperationKey{k.phase, -1, k.operation}];
    if (m.group.empty()) m.group = v.group;
    m.ns += v.ns;
    m.count += v.count;
  }
  r.operations = std::move(merged);
}

double operation_similarity(const CompareRun& a, const CompareRun& b) {
  // Per (phase, operation), across layers: the layers of two models need not line up.
  auto shares = [](const CompareRun& r) {
    std::map<std::pair<Phase, std::string>, double> s;
    double total = 0;
    for (const auto& [k, v] : r.operations) {
      s[{k.phase, k.operation}] += v.ns;
      total += v.ns;
    }
    for (auto& [k, v] : s) v /= total;
    return std::pair{std::move(s), total};
  };
  const auto [sa, ta] = shares(a);
  const auto [sb, tb] = shares(b);
  if (!(ta > 0) || !(tb > 0)) return std::numeric_limits<double>::quiet_NaN();
  double common = 0;
  for (const auto& [k, v] : sa)
    if (auto it = sb.find(k); it != sb.end()) common += std::min(v, it->second);
  return common;
}

namespace {

// Why run b is hard to compare with the baseline a, one sentence per reason, added to out.
void add_comparability_warnings(const CompareRun& a, const CompareRun& b,
                                std::vector<std::string>& out) {
  if (a.ranks != b.ranks)
    out.push_back(fmt::format(
        "{} has {} ranks, {} has {}: another world size (per-rank times compare, the job's "
        "totals and collectives do not)",
        b.label, b.ranks, a.label, a.ranks));
  if (!a.device.empty() && !b.device.empty() && a.device != b.device)
    out.push_back(fmt::format("{} ran on {}, {} on {}: another device", b.label, b.device, a.label,
                              a.device));
  const double sim = operation_similarity(a, b);
  if (sim < 0.5)
    out.push_back(fmt::format(
        "{} and {} spend only {:.0f}% of their GPU time in the same operations: another model, "
        "parallelism or code? (differences below may be the workload's, not a regression's)",
        b.label, a.label, 100.0 * sim));
}

}  // namespace

Comparison compare_runs(std::vector<CompareRun> runs) {
  Comparison c;
  c.runs = std::move(runs);
  for (size_t k = 1; k < c.runs.size(); ++k) {
    PairComparison p = compare_pair(c.runs[0], c.runs[k]);
    p.a = 0;
    p.b = k;
    c.pairs.push_back(std::move(p));
    add_comparability_warnings(c.runs[0], c.runs[k], c.warnings);
  }
  return c;
}

}  // namespace chopper
