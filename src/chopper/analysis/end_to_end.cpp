// End to end: each iteration's time is its slowest rank's (the others wait for it at the next
// collective), with that rank's time split into components that add up to it; tokens/s and
// time per token given the tokens per step; FLOPs from recorded shapes, achieved TFLOP/s and MFU
// against the device database. Also the kernel/operation/class breakdowns folded to the top N.
// Formulas: docs/metrics.md.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "chopper/analysis/parts.hpp"
#include "chopper/base/text.hpp"

namespace chopper {

const DeviceSpec* device_from_name(std::string_view name) {
  const std::string l = ascii_lower(name);
  if (l.empty()) return nullptr;
  if (const DeviceSpec* d = find_device(l)) return d;
  // The driver's name ("Tesla V100-SXM2-16GB", "NVIDIA A10"): the database key it contains, the
  // longest one when several do ("a100" before "a10").
  const DeviceSpec* best = nullptr;
  for (const DeviceSpec* d : all_devices()) {
    if (l == ascii_lower(d->marketing_name)) return d;
    if (l.find(d->name) != std::string::npos &&
        (best == nullptr || d->name.size() > best->name.size()))
      best = d;
  }
  return best;
}

int64_t rank_shown(const std::vector<std::pair<int64_t, Ns>>& windows, bool& significant) {
  significant = false;
  if (windows.empty()) return -1;
  auto slow = windows.begin(), low = windows.begin();
  for (auto w = windows.begin(); w != windows.end(); ++w) {
    if (w->second > slow->second || (w->second == slow->second && w->first < slow->first)) slow = w;
    if (w->first < low->first) low = w;
  }
  std::vector<double> others;
  for (auto w = windows.begin(); w != windows.end(); ++w)
    if (w != slow) others.push_back(static_cast<double>(w->second));
  if (others.empty()) return slow->first;  // one rank: it is the slowest
  auto median = [](std::vector<double> v) {
    const size_t h = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h), v.end());
    if (v.size() % 2 == 1) return v[h];
    return (v[h] + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(h))) / 2;
  };
  const double med = median(others);
  std::vector<double> dev;
  for (double x : others) dev.push_back(std::abs(x - med));
  const double sigma = 1.4826 * median(dev);
  significant = static_cast<double>(slow->second) - med > std::max(3 * sigma, 0.01 * med);
  return significant ? slow->first : low->first;
}

namespace {

// Top n by total time, the rest folded into one "others" row; shares of `total`.
void fold(std::vector<NameStat> v, size_t n, int64_t rank, Ns total, std::vector<NameStat>& out) {
  std::sort(v.begin(), v.end(), [](const NameStat& a, const NameStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  NameStat rest;
  rest.rank = rank;
  rest.name = "others";
  for (size_t i = 0; i < v.size(); ++i) {
    NameStat& s = v[i];
    s.rank = rank;
    s.share = total > 0 ? static_cast<double>(s.total_ns) / static_cast<double>(total) : 0;
    if (i < n) {
      out.push_back(std::move(s));
      continue;
    }
    if (rest.count == 0 || s.min_ns < rest.min_ns) rest.min_ns = s.min_ns;
    rest.max_ns = std::max(rest.max_ns, s.max_ns);
    rest.count += s.count;
    rest.total_ns += s.total_ns;
  }
  if (rest.count > 0) {
    rest.share = total > 0 ? static_cast<double>(rest.total_ns) / static_cast<double>(total) : 0;
    out.push_back(std::move(rest));
  }
}

void fold_all(RunAnalysis& ra, size_t n, std::vector<NameStat> RankAnalysis::*field,
              std::vector<NameStat>& out) {
  std::map<std::pair<std::string, std::string>, NameStat> all;
  Ns total = 0;
  for (RankAnalysis& r : ra.ranks) {
    if (!r.ok) continue;
    total += r.gpu_time_ns;
    for (const NameStat& s : r.*field) {
      NameStat& a = all[{s.name, s.group}];
      if (a.count == 0) {
        a = s;
        continue;
      }
      a.min_ns = std::min(a.min_ns, s.min_ns);
      a.max_ns = std::max(a.max_ns, s.max_ns);
      a.count += s.count;
      a.total_ns += s.total_ns;
    }
  }
  std::vector<NameStat> v;
  v.reserve(all.size());
  for (auto& [k, s] : all) v.push_back(std::move(s));
  fold(std::move(v), n, -1, total, out);
  for (RankAnalysis& r : ra.ranks)
    if (r.ok) fold(r.*field, n, r.rank, r.gpu_time_ns, out);
}

// FLOP coverage per iteration: the compute operations' kernel time whose FLOPs are known.
// Iteration -> (known ns, all ns).
std::map<int64_t, std::pair<double, double>> flop_coverage(const RunAnalysis& ra) {
  std::map<int64_t, std::pair<double, double>> coverage;
  for (const RankAnalysis& r : ra.ranks)
    if (r.ok)
      for (const OpInstance& oi : r.ops) {
        if (oi.key.iteration == kNoId) continue;
        auto& c = coverage[oi.key.iteration];
        c.second += static_cast<double>(oi.kernel_ns);
        if (oi.flops > 0) c.first += static_cast<double>(oi.kernel_ns);
      }
  return coverage;
}

// Iteration -> the rank waited for, and the mean lead of the other ranks over it.
std::map<int64_t, std::pair<int64_t, Ns>> straggler_leads(const RunAnalysis& ra) {
  std::map<int64_t, std::pair<int64_t, Ns>> straggler;
  std::map<int64_t, std::pair<Ns, int>> others;  // iteration -> Σ mean lead of others, count
  std::map<int64_t, int64_t> waited;
  for (const StragglerRow& s : ra.stragglers)
    if (s.waited_for) waited[s.iteration] = s.rank;
  for (const StragglerRow& s : ra.stragglers) {
    auto w = waited.find(s.iteration);
    if (w == waited.end() || w->second == s.rank || s.op_instances == 0) continue;
    others[s.iteration].first += s.mean_lead_ns;
    ++others[s.iteration].second;
  }
  for (auto& [it, rank] : waited) {
    const auto& x = others[it];
    straggler[it] = {rank, x.second ? x.first / x.second : 0};
  }
  return straggler;
}

// What end_to_end's rows are made from, once per run.
struct IterationInputs {
  std::map<int64_t, std::pair<double, double>> coverage;  // flop_coverage
  std::map<int64_t, std::pair<int64_t, Ns>> straggler;    // straggler_leads
  double peak = 0;  // the device's matrix peak, FLOP/s (0: unknown)
};

// Tokens/s and time per token given the tokens per step; achieved TFLOP/s per GPU and MFU.
void iteration_throughput(const AnalysisOptions& o, const IterationInputs& in, IterationRow& row) {
  const double secs = static_cast<double>(row.time_ns) * 1e-9;
  row.tokens = o.tokens_per_step;
  if (row.tokens > 0 && row.time_ns > 0) {
    row.tokens_per_s = static_cast<double>(row.tokens) / secs;
    row.time_per_token_ns = static_cast<double>(row.time_ns) / static_cast<double>(row.tokens);
  }
  if (auto cov = in.coverage.find(row.iteration);
      cov != in.coverage.end() && cov->second.second > 0)
    row.flops_coverage = cov->second.first / cov->second.second;
  if (row.time_ns > 0 && row.flops > 0) {
    row.tflops_per_gpu = row.flops / static_cast<double>(row.ranks) / secs * 1e-12;
    if (in.peak > 0 && row.flops_coverage >= kMfuMinCoverage)
      row.mfu = row.flops / (secs * static_cast<double>(row.ranks) * in.peak);
  }
}

// The iteration's straggler; and the slowest rank's exposed communication, less what it spent
// waiting for the straggler (straggler_wait).
void iteration_straggler(const RunAnalysis& ra, const IterationInputs& in, IterationRow& row) {
  const int64_t it = row.iteration;
  auto s = in.straggler.find(it);
  if (s != in.straggler.end()) {
    row.least_lead_rank = s->second.first;
    row.straggler_lead_ns = s->second.second;
  }
  auto sc = ra.straggler_cost.find(it);
  if (sc != ra.straggler_cost.end()) {
    row.straggler = sc->second;
    if (sc->second.significant) row.straggler_rank = sc->second.rank;
  }
  if (!row.straggler.significant || row.slowest_rank == row.straggler.rank) return;
  for (const StragglerRow& w : ra.stragglers)
    if (w.rank == row.slowest_rank && w.iteration == it && w.straggler_wait_ns > 0) {
      Ns& exposed = row.components["exposed_comm"];
      const Ns wait = std::min(w.straggler_wait_ns, exposed);
      exposed -= wait;
      row.components["straggler_wait"] = wait;
    }
}

// One iteration from its ranks' windows: its time is the shown rank's, with that rank's
// components.
IterationRow iteration_row(const RunAnalysis& ra, const AnalysisOptions& o,
                           const IterationInputs& in, int64_t it,
                           const std::vector<std::pair<int64_t, const RankAnalysis*>>& v) {
  IterationRow row;
  row.iteration = it;
  row.ranks = static_cast<int64_t>(v.size());
  Ns sum = 0;
  row.min_time_ns = INT64_MAX;
  std::vector<std::pair<int64_t, Ns>> windows;
  for (const auto& [t, r] : v) {
    sum += t;
    row.min_time_ns = std::min(row.min_time_ns, t);
    row.max_time_ns = std::max(row.max_time_ns, t);
    windows.push_back({r->rank, t});
  }
  row.mean_time_ns = sum / static_cast<Ns>(v.size());
  // The rank shown: the significantly slowest, else the lowest (ranks equal within noise).
  row.slowest_rank = rank_shown(windows, row.slowest_significant);
  const RankAnalysis* slow = nullptr;
  for (const auto& [t, r] : v)
    if (r->rank == row.slowest_rank && slow == nullptr) row.time_ns = t, slow = r;
  auto c = slow->components.find(it);
  if (c != slow->components.end()) row.components = c->second;
  for (const auto& [t, r] : v) {
    auto f = r->flops.find(it);
    if (f != r->flops.end()) row.flops += f->second;
  }
  iteration_throughput(o, in, row);
  iteration_straggler(ra, in, row);
  return row;
}

// Every rank's components the way end_to_end's are (rank_components): in an iteration with a
// significant straggler, the waiting for it leaves each other rank's exposed communication.
void rank_straggler_wait(RunAnalysis& ra) {
  for (const StragglerRow& w : ra.stragglers) {
    if (w.straggler_wait_ns <= 0) continue;
    auto sc = ra.straggler_cost.find(w.iteration);
    if (sc == ra.straggler_cost.end() || !sc->second.significant || w.rank == sc->second.rank)
      continue;
    for (RankAnalysis& r : ra.ranks) {
      if (r.rank != w.rank) continue;
      auto c = r.components.find(w.iteration);
      if (c == r.components.end()) continue;
      Ns& exposed = c->second["exposed_comm"];
      const Ns wait = std::min(w.straggler_wait_ns, exposed);
      exposed -= wait;
      c->second["straggler_wait"] = wait;
    }
  }
}

}  // namespace

void finalize_end_to_end(RunAnalysis& ra, const AnalysisOptions& o) {
  fold_all(ra, o.top_n, &RankAnalysis::kernels, ra.kernels);
  fold_all(ra, o.top_n, &RankAnalysis::operations, ra.operations);
  fold_all(ra, o.top_n, &RankAnalysis::classes, ra.classes);

  ra.device = !o.device.empty() ? find_device(o.device) : nullptr;
  for (const RankAnalysis& r : ra.ranks)
    if (ra.device == nullptr && r.ok) ra.device = device_from_name(r.device_name);
  IterationInputs in;
  in.coverage = flop_coverage(ra);
  in.straggler = straggler_leads(ra);
  in.peak = ra.device != nullptr ? ra.device->matrix_tflops(o.dtype) * 1e12 : 0;

  // Iteration -> per rank window time.
  std::map<int64_t, std::vector<std::pair<int64_t, const RankAnalysis*>>> times;
  for (const RankAnalysis& r : ra.ranks) {
    if (!r.ok) continue;
    for (const BreakdownRow& b : r.breakdown)
      if (b.iteration != kNoId) times[b.iteration].push_back({b.total_ns, &r});
  }
  for (auto& [it, v] : times) ra.iterations.push_back(iteration_row(ra, o, in, it, v));
  rank_straggler_wait(ra);
}

}  // namespace chopper
