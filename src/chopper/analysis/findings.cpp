// Findings: the losses of a finished analysis, each with its cost, significance, confidence and
// evidence (findings.hpp). docs/metrics.md, Findings.
#include "chopper/analysis/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace chopper {
namespace {

struct KindInfo {
  FindingKind kind;
  std::string_view key, title, suggestion;
};
constexpr KindInfo kKinds[] = {
#define CHOPPER_X(e, key, title, hint) {FindingKind::e, key, title, hint},
    CHOPPER_FINDING_KINDS(CHOPPER_X)
#undef CHOPPER_X
};

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string pct(double x) {
  return fmt::format("{:.1f}%", 100.0 * x);
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Standard normal distribution function.
double phi(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// The iteration row of the waterfall (every phase and operation of one iteration of one rank).
bool iteration_waterfall(const WaterfallRow& w) {
  return w.key.phase == Phase::kNone && w.key.operation.empty() && w.key.iteration != kNoId;
}

// The job's mean power over the iterations (all GPUs, W), NaN without telemetry.
double job_power_w(const RunAnalysis& ra) {
  double e = 0, t = 0;
  bool any = false;
  for (const IterationRow& it : ra.iterations) {
    double ei = 0;
    bool have = false;
    for (const RankAnalysis& r : ra.ranks)
      for (const PowerRow& p : r.power)
        if (p.phase.empty() && p.iteration == it.iteration && p.time_ns > 0)
          ei += p.energy_j, have = true;
    if (!have) continue;
    e += ei;
    t += static_cast<double>(it.time_ns);
    any = true;
  }
  return any && t > 0 ? e / (t * 1e-9) : std::nan("");
}

// Where the exposed communication is: the label with the most exposed time over every rank.
std::string exposed_comm_evidence(const RunAnalysis& ra) {
  std::map<std::string, double> where;
  for (const RankAnalysis& r : ra.ranks)
    for (const ExposedRow& x : r.exposed) {
      std::string w =
          x.key.operation.empty() ? std::string("(unlabelled)") : std::string(x.key.operation);
      if (x.key.phase != Phase::kNone) w = std::string(phase_name(x.key.phase)) + " " + w;
      where[w] += static_cast<double>(x.exposed_ns);
    }
  std::string top;
  double best = 0, all = 0;
  for (const auto& [k, v] : where) {
    all += v;
    if (v > best) best = v, top = k;
  }
  if (best <= 0) return {};
  return fmt::format("largest: {} ({} of all exposed communication)", top, pct(best / all));
}

// Launch overhead over all ranks: the GPU gaps between compute kernels by cause.
struct LaunchTotals {
  Ns prep = 0, call = 0;
  uint64_t launches = 0, graph_launches = 0;
  double call_mean = 0;  // launch-call duration, weighted by launches
};
LaunchTotals launch_totals(const RunAnalysis& ra) {
  LaunchTotals t;
  for (const RankAnalysis& r : ra.ranks) {
    t.prep += r.launch_prep_ns;
    t.call += r.launch_call_ns;
    t.launches += r.launch_stats.launches;
    t.graph_launches += r.launch_stats.graph_launches;
    t.call_mean += static_cast<double>(r.launch_stats.cpu_mean_ns) *
                   static_cast<double>(r.launch_stats.launches);
  }
  if (t.launches > 0) t.call_mean /= static_cast<double>(t.launches);
  return t;
}

// The host frames that cover an idle component (idle_causes of the slowest rank of each
// iteration): the top three and their share of its time, and its gaps (count, the median of the
// iterations' median gap, the largest).
std::string idle_cause_evidence(const RunAnalysis& ra, std::string_view cause) {
  std::map<std::string, double> frames;
  double total = 0;
  uint64_t gaps = 0;
  Ns largest = 0;
  std::vector<Ns> medians;
  std::map<int64_t, int64_t> slowest;  // iteration -> its slowest rank
  for (const IterationRow& it : ra.iterations) slowest[it.iteration] = it.slowest_rank;
  for (const RankAnalysis& r : ra.ranks)
    for (const IdleCauseRow& x : r.idle_causes) {
      auto s = slowest.find(x.iteration);
      if (x.cause != cause || s == slowest.end() || s->second != r.rank) continue;
      total += static_cast<double>(x.idle_ns);
      gaps += x.gaps;
      largest = std::max(largest, x.max_gap_ns);
      medians.push_back(x.median_gap_ns);
      for (const auto& [name, ns] : x.frames) frames[name] += static_cast<double>(ns);
    }
  if (total <= 0) return {};
  std::vector<std::pair<double, std::string>> v;
  for (const auto& [name, ns] : frames) v.push_back({ns, name});
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string s = "host in ";
  for (size_t i = 0; i < v.size() && i < 3; ++i)
    s += fmt::format("{}{} ({})", i ? ", " : "", v[i].second, pct(v[i].first / total));
  std::sort(medians.begin(), medians.end());
  s += fmt::format("; {} gap{}, median {}, largest {}", gaps, gaps == 1 ? "" : "s",
                   ms(static_cast<double>(medians[(medians.size() - 1) / 2])),
                   ms(static_cast<double>(largest)));
  return s;
}

std::string host_late_evidence(const LaunchTotals& t) {
  const double gaps = static_cast<double>(t.prep + t.call);
  if (gaps <= 0) return {};
  return fmt::format(
      "of the launch gaps between compute kernels (all ranks), {} had the GPU waiting for the host "
      "to issue the launch (Python, framework) and {} for the launch call itself",
      pct(static_cast<double>(t.prep) / gaps), pct(static_cast<double>(t.call) / gaps));
}

std::string launch_evidence(const LaunchTotals& t) {
  if (t.launches == 0) return {};
  std::string s = fmt::format("{} launch calls (all ranks), {} per call on the host", t.launches,
                              ms(t.call_mean));
  if (t.graph_launches > 0) s += fmt::format(", {} of them graph launches", t.graph_launches);
  return s;
}

std::string frequency_evidence(const RunAnalysis& ra) {
  double clock = 0, clock_t = 0, hot = std::nan(""), thr_all = 0;
  std::map<std::string, double> thr;
  uint64_t ranks_lost = 0, ranks = 0;
  std::map<int64_t, double> lost;  // frequency loss per rank
  for (const WaterfallRow& w : ra.waterfall)
    if (iteration_waterfall(w)) lost[w.rank] += w.frequency_ns;
  for (const RankAnalysis& r : ra.ranks) {
    ranks += r.ok ? 1 : 0;
    auto l = lost.find(r.rank);
    ranks_lost += l != lost.end() && l->second > 0 ? 1 : 0;
    for (const PowerRow& p : r.power) {
      if (!p.phase.empty()) continue;
      if (!std::isnan(p.mean_clock_mhz))
        clock += p.mean_clock_mhz * static_cast<double>(p.time_ns),
            clock_t += static_cast<double>(p.time_ns);
      const double h = !std::isnan(p.max_hotspot_c) ? p.max_hotspot_c : p.max_temp_c;
      if (!std::isnan(h) && (std::isnan(hot) || h > hot)) hot = h;
      thr_all += static_cast<double>(p.time_ns);
      for (const auto& [k, v] : p.throttle_ns)
        if (k != "gpu_idle") thr[k] += static_cast<double>(v);
    }
  }
  std::string s = fmt::format("on {} of {} ranks", ranks_lost, ranks);
  if (clock_t > 0 && ra.device != nullptr)
    s += fmt::format("; mean clock {:.0f} of {} MHz", clock / clock_t, ra.device->max_clock_mhz);
  if (!std::isnan(hot)) s += fmt::format("; hottest {:.0f} °C", hot);
  if (!thr.empty() && thr_all > 0) {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [k, x] : thr) v.push_back({x, k});
    std::sort(v.rbegin(), v.rend());
    s += "; throttle reasons:";
    for (size_t i = 0; i < v.size() && i < 3; ++i)
      s += fmt::format("{} {} ({} of traced time)", i ? "," : "", v[i].second,
                       pct(v[i].first / thr_all));
  }
  return s;
}

// The waterfall of the slowest rank of each iteration (parallel to ra.iterations; rows summed).
std::vector<WaterfallRow> slowest_waterfall(const RunAnalysis& ra) {
  std::vector<WaterfallRow> v(ra.iterations.size());
  std::map<std::pair<int64_t, int64_t>, size_t> at;  // (rank, iteration) -> index
  for (size_t i = 0; i < ra.iterations.size(); ++i)
    at[{ra.iterations[i].slowest_rank, ra.iterations[i].iteration}] = i;
  for (const WaterfallRow& w : ra.waterfall) {
    if (!iteration_waterfall(w)) continue;
    auto f = at.find({w.rank, w.key.iteration});
    if (f == at.end()) continue;
    WaterfallRow& s = v[f->second];
    s.kernels += w.kernels;
    s.observed_ns += w.observed_ns;
    s.instruction_ns += w.instruction_ns;
    s.utilization_ns += w.utilization_ns;
    s.overlap_ns += w.overlap_ns;
    s.frequency_ns += w.frequency_ns;
    s.unknown_theoretical += w.unknown_theoretical;
    s.unknown_instruction += w.unknown_instruction;
    s.unknown_frequency += w.unknown_frequency;
  }
  return v;
}

}  // namespace

std::string_view finding_key(FindingKind k) {
  return kKinds[static_cast<size_t>(k)].key;
}
std::string_view finding_title(FindingKind k) {
  return kKinds[static_cast<size_t>(k)].title;
}
std::string_view finding_suggestion(FindingKind k) {
  return kKinds[static_cast<size_t>(k)].suggestion;
}
std::optional<FindingKind> finding_from_key(std::string_view key) {
  for (const KindInfo& i : kKinds)
    if (i.key == key) return i.kind;
  return std::nullopt;
}

size_t Findings::significant() const {
  return static_cast<size_t>(
      std::count_if(all.begin(), all.end(), [](const Finding& f) { return f.significant; }));
}

double robust_sigma(std::vector<double> v) {
  if (v.size() < 2) return 0;
  auto median = [](std::vector<double>& a) {
    const size_t m = a.size() / 2;
    std::nth_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(m), a.end());
    double x = a[m];
    if (a.size() % 2 == 0)
      x = (x + *std::max_element(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(m))) / 2;
    return x;
  };
  const double med = median(v);
  for (double& x : v) x = std::abs(x - med);
  return 1.4826 * median(v);
}

Finding test_loss(FindingKind kind, const std::vector<double>& x, const std::vector<double>& t) {
  Finding f;
  f.kind = kind;
  f.iterations = x.size();
  if (x.empty()) return f;
  const double n = static_cast<double>(x.size());
  f.cost_ns = mean(x);
  const double tm = mean(t);
  f.cost_share = tm > 0 ? f.cost_ns / tm : 0;
  if (x.size() > 1) {
    double ss = 0;
    for (double v : x) ss += (v - f.cost_ns) * (v - f.cost_ns);
    f.stderr_ns = std::sqrt(ss / (n - 1)) / std::sqrt(n);
  }
  for (size_t i = 0; i < x.size() && i < t.size(); ++i)
    f.material_iterations += x[i] > 0 && x[i] >= kMaterialShare * t[i] ? 1 : 0;
  f.threshold_ns = kMaterialShare * tm;
  f.confidence = f.stderr_ns > 0 ? phi((f.cost_ns - f.threshold_ns) / f.stderr_ns)
                                 : (f.cost_ns > f.threshold_ns ? 1.0 : 0.0);
  f.significant = f.cost_ns > 0 && f.cost_ns - 2 * f.stderr_ns > f.threshold_ns;
  return f;
}

Findings decide_findings(const RunAnalysis& ra, const AnalysisOptions& o) {
  (void)o;
  Findings out;
  if (ra.iterations.empty()) return out;
  std::vector<double> t;
  for (const IterationRow& it : ra.iterations) t.push_back(static_cast<double>(it.time_ns));
  out.iterations = t.size();
  out.iteration_ns = mean(t);
  out.iteration_sigma_ns = robust_sigma(t);
  const double power = job_power_w(ra);
  auto add = [&](Finding f, std::string evidence) {
    f.evidence = std::move(evidence);
    if (!std::isnan(power) && f.kind != FindingKind::kFrequency)
      f.energy_j = f.cost_ns * 1e-9 * power;
    if (f.cost_ns > 0) out.all.push_back(std::move(f));
  };

  // The slowest rank's components (end_to_end).
  auto component = [&](const char* key) {
    std::vector<double> x;
    for (const IterationRow& it : ra.iterations) {
      auto c = it.components.find(key);
      x.push_back(c == it.components.end() ? 0.0 : static_cast<double>(c->second));
    }
    return x;
  };
  add(test_loss(FindingKind::kExposedComm, component("exposed_comm"), t),
      exposed_comm_evidence(ra));
  auto join = [](std::string a, const std::string& b) {
    return a.empty() ? b : b.empty() ? a : a + "; " + b;
  };
  add(test_loss(FindingKind::kHostStall, component("host_stall"), t),
      join("the GPU idle from the step's start on the host to the host's first launch, the host "
           "in no data loading, synchronisation or optimizer frame",
           idle_cause_evidence(ra, "host_stall")));
  add(test_loss(FindingKind::kDataLoading, component("data_loading"), t),
      idle_cause_evidence(ra, "data_loading"));
  add(test_loss(FindingKind::kHostSync, component("host_sync"), t),
      idle_cause_evidence(ra, "host_sync"));
  add(test_loss(FindingKind::kHostOptimizer, component("host_optimizer"), t),
      idle_cause_evidence(ra, "host_optimizer"));
  const LaunchTotals lt = launch_totals(ra);
  add(test_loss(FindingKind::kHostLate, component("host_late"), t),
      join(host_late_evidence(lt), idle_cause_evidence(ra, "host_late")));
  add(test_loss(FindingKind::kLaunchOverhead, component("launch_overhead"), t),
      launch_evidence(lt));
  add(test_loss(FindingKind::kGraphGap, component("graph_gap"), t),
      lt.graph_launches > 0 ? fmt::format("{} graph launches (all ranks): the GPU idle between "
                                          "their kernels after the first started",
                                          lt.graph_launches)
                            : std::string());
  add(test_loss(FindingKind::kIdle, component("idle"), t),
      "GPU idle with the launch issued and no other work running: waiting on an event or a "
      "synchronisation, or kernels with no launch in the trace");
  add(test_loss(FindingKind::kExposedMemcpy, component("exposed_memcpy"), t), {});

  // The straggler: the rank costing the most over the iterations where it is significant against
  // the rank-to-rank variation (StragglerCost).
  {
    std::map<int64_t, double> by_rank;
    for (const IterationRow& it : ra.iterations)
      if (it.straggler.significant)
        by_rank[it.straggler.rank] += static_cast<double>(it.straggler.cost_ns);
    if (!by_rank.empty()) {
      const int64_t top =
          std::max_element(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) {
            return a.second < b.second;
          })->first;
      std::vector<double> x;
      double comp_x = 0, other_x = 0, conf = 0;
      int k = 0;
      for (const IterationRow& it : ra.iterations) {
        const StragglerCost& s = it.straggler;
        const bool mine = s.significant && s.rank == top;
        x.push_back(mine ? static_cast<double>(s.cost_ns) : 0.0);
        if (!mine) continue;
        ++k;
        comp_x += static_cast<double>(s.excess_compute_ns);
        other_x += static_cast<double>(s.excess_other_ns);
        const double thr = std::max(3.0 * static_cast<double>(s.sigma_ns),
                                    kMaterialShare * static_cast<double>(s.step_ns));
        conf = std::max(conf, s.sigma_ns > 0 ? phi((static_cast<double>(s.cost_ns) - thr) /
                                                   static_cast<double>(s.sigma_ns))
                                             : 1.0);
      }
      Finding f = test_loss(FindingKind::kStraggler, x, t);
      f.rank = top;
      f.significant = true;  // tested per iteration against the ranks' spread
      f.confidence = conf;
      std::string why = fmt::format(
          "delays {} of {} iterations by {} each; the other ranks wait for it at collectives; it "
          "computes {} longer than the median rank",
          k, ra.iterations.size(), ms(f.cost_ns * static_cast<double>(x.size()) / k),
          ms(comp_x / k));
      if (std::abs(other_x / k) >= 1000)
        why += fmt::format(" and spends {} {} outside compute (host, idle, copies)",
                           ms(std::abs(other_x / k)), other_x >= 0 ? "longer" : "less");
      add(std::move(f), std::move(why));
    }
  }

  // The waterfall of compute time (with telemetry and counters), slowest rank per iteration.
  if (!ra.waterfall.empty()) {
    const std::vector<WaterfallRow> w = slowest_waterfall(ra);
    uint64_t kernels = 0, unknown_f = 0, unknown_t = 0, unknown_i = 0;
    double observed = 0, instruction = 0;
    std::vector<double> freq, util, over;
    for (const WaterfallRow& r : w) {
      kernels += r.kernels, unknown_f += r.unknown_frequency;
      unknown_t += r.unknown_theoretical, unknown_i += r.unknown_instruction;
      observed += static_cast<double>(r.observed_ns), instruction += r.instruction_ns;
      freq.push_back(r.frequency_ns), util.push_back(r.utilization_ns),
          over.push_back(r.overlap_ns);
    }
    const double total_of = [&](const std::vector<double>& v) {
      return std::accumulate(v.begin(), v.end(), 0.0);
    }(freq);
    if (observed > 0 && unknown_f < kernels)
      add(test_loss(FindingKind::kFrequency, freq, t),
          fmt::format("{} of compute time lost to clocks below the maximum, ",
                      pct(total_of / observed)) +
              frequency_evidence(ra));
    if (observed > 0 && unknown_t < kernels)
      add(test_loss(FindingKind::kUtilization, util, t),
          fmt::format("{} of compute time is solo work at the maximum clock beyond its theoretical "
                      "time; {}",
                      pct(std::accumulate(util.begin(), util.end(), 0.0) / observed),
                      unknown_i < kernels
                          ? fmt::format("instruction overhead {} per iteration",
                                        ms(instruction / static_cast<double>(w.size())))
                          : std::string("instruction overhead not separable without counters")));
    if (observed > 0)
      add(test_loss(FindingKind::kCommSlowdown, over, t),
          fmt::format("{} of compute time beyond solo instances of the same work",
                      pct(std::accumulate(over.begin(), over.end(), 0.0) / observed)));
  }

  std::stable_sort(out.all.begin(), out.all.end(), [](const Finding& a, const Finding& b) {
    if (a.significant != b.significant) return a.significant;
    return a.cost_ns > b.cost_ns;
  });
  return out;
}

}  // namespace chopper
