// Findings: the losses of a finished analysis, each with its cost, significance, confidence and
// evidence (findings.hpp). docs/metrics.md, Findings.
#include "chopper/analysis/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

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

// Host-late time whose largest gap is at least this share of it is "a few long gaps".
constexpr double kFewGapsShare = 0.5;
// A mean launch call at least this long (ns) is first-call work, not launch latency.
constexpr double kSlowLaunchCallNs = 1e6;
// Data-loader workers busier than this many cores each run threads in parallel.
constexpr double kThreadedWorkerCores = 1.5;

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

// The continued fraction of the incomplete beta function (modified Lentz's method; Numerical
// Recipes, 3rd ed., §6.4, betacf).
double beta_fraction(double a, double b, double x) {
  constexpr int kMaxTerms = 400;
  constexpr double kEps = 1e-15, kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  auto guard = [](double v) { return std::abs(v) < kTiny ? kTiny : v; };
  double c = 1, d = 1 / guard(1 - qab * x / qap), h = d;
  for (int m = 1; m <= kMaxTerms; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    const double del = d * c;
    h *= del;
    if (std::abs(del - 1) < kEps) break;
  }
  return h;
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

// The largest single gap of an idle cause and the cause's whole time, over the rank shown in each
// iteration (as idle_cause_evidence).
std::pair<Ns, double> largest_idle_gap(const RunAnalysis& ra, std::string_view cause) {
  std::map<int64_t, int64_t> shown;
  for (const IterationRow& it : ra.iterations) shown[it.iteration] = it.slowest_rank;
  Ns largest = 0;
  double total = 0;
  for (const RankAnalysis& r : ra.ranks)
    for (const IdleCauseRow& x : r.idle_causes) {
      auto s = shown.find(x.iteration);
      if (x.cause != cause || s == shown.end() || s->second != r.rank) continue;
      total += static_cast<double>(x.idle_ns);
      largest = std::max(largest, x.max_gap_ns);
    }
  return {largest, total};
}

// Advice for host-late time that a few long gaps make up (the largest alone at least half of it):
// not per-launch framework overhead, which graphs or compilation remove, but one-off host work.
std::string few_gaps_advice(const RunAnalysis& ra) {
  const auto [largest, total] = largest_idle_gap(ra, "host_late");
  if (total <= 0 || static_cast<double>(largest) < kFewGapsShare * total) return {};
  return fmt::format(
      "the largest gap alone is {} of it: one-off host work, not per-kernel overhead (graphs would "
      "not remove it). Look at the named host frames: first calls (cuDNN's algorithm search with "
      "cudnn.benchmark, lazy CUDA/HIP module loading, compilation), checkpoint or logging work; "
      "profile after warm-up (torch.profiler schedule with wait and warmup steps)",
      pct(static_cast<double>(largest) / total));
}

// Advice for launch calls that take milliseconds each: not launch latency (microseconds) but the
// runtime doing first-call work inside the call.
std::string slow_launch_advice(const LaunchTotals& t) {
  if (t.launches == 0 || t.call_mean < kSlowLaunchCallNs) return {};
  return fmt::format(
      "launch calls of {} each are not launch latency (a few µs): the runtime did first-call work "
      "inside them (lazy module loading: CUDA_MODULE_LOADING=EAGER, kernel compilation, a blocked "
      "runtime lock); profile after warm-up",
      ms(t.call_mean));
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

// Where the compute loss is: the shape classes losing the most against what is achievable (run
// totals, all ranks), each with its achieved rate against its roofline, its best instances and
// the achievable efficiency (ra.shape_classes, largest loss first).
std::string compute_loss_evidence(const RunAnalysis& ra) {
  double all = 0;
  for (const ShapeClassRow& c : ra.shape_classes) all += c.below_achievable_ns;
  if (all <= 0) return "no shape class runs below its achievable rate";
  std::string s = "against the better of the roofline at the achievable efficiency (matrix " +
                  pct(kAchievableMatrix) + ", bandwidth " + pct(kAchievableBandwidth) +
                  ") and the median of the class's own kernels (its typical instance); largest:";
  int k = 0;
  for (const ShapeClassRow& c : ra.shape_classes) {
    if (c.below_achievable_ns <= 0 || k == 3) break;
    const double secs = c.time_ns * 1e-9;
    s += fmt::format(
        "{} {} ({} of the loss; {} kernels at {}, {} of roofline, median {}, best {})",
        k++ ? ";" : "", c.shape_class, pct(c.below_achievable_ns / all), c.kernels,
        c.compute_bound ? fmt::format("{:.1f} TFLOP/s", secs > 0 ? c.flops / secs * 1e-12 : 0.0)
                        : fmt::format("{:.2f} TB/s", secs > 0 ? c.bytes / secs * 1e-12 : 0.0),
        pct(c.roofline_share), pct(c.median_roofline_share), pct(c.best_roofline_share));
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
    s.below_achievable_ns += w.below_achievable_ns;
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
std::string_view finding_advice(const Finding& f) {
  return f.suggestion.empty() ? finding_suggestion(f.kind) : std::string_view(f.suggestion);
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

double incomplete_beta(double a, double b, double x) {
  if (!(x > 0)) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  // The fraction converges fast for x < (a + 1) / (a + b + 2); else the symmetry
  // I_x(a, b) = 1 − I_{1−x}(b, a).
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0)) return std::nan("");
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(T > |t|) = ½ I_{ν/(ν+t²)}(ν/2, ½) (Abramowitz & Stegun 26.7.1 with 26.5.27).
  const double tail = 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
  return t > 0 ? 1 - tail : tail;
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

Finding test_loss(FindingKind kind, const std::vector<double>& x, const std::vector<double>& t,
                  const std::vector<double>& xr, const std::vector<double>& tr, size_t ranks) {
  Finding f;
  f.kind = kind;
  f.iterations = x.size();
  if (x.empty()) return f;
  f.cost_ns = mean(x);
  const double tm = mean(t);
  f.cost_share = tm > 0 ? f.cost_ns / tm : 0;
  for (size_t i = 0; i < x.size() && i < t.size(); ++i)
    f.material_iterations += x[i] > 0 && x[i] >= kMaterialShare * t[i] ? 1 : 0;
  f.threshold_ns = kMaterialShare * tm;
  // The samples: the iterations, or with few of them and enough ranks every rank's iteration.
  const bool by_rank = x.size() < kFewIterations && ranks >= kRankSamplesMinRanks &&
                       xr.size() == tr.size() && xr.size() > x.size();
  const std::vector<double>& s = by_rank ? xr : x;
  const double c = by_rank ? mean(xr) : f.cost_ns;
  const double theta = by_rank ? kMaterialShare * mean(tr) : f.threshold_ns;
  f.samples = s.size();
  if (s.size() < 2) {
    // No variance from one sample: no confidence; significant on the material share alone.
    f.stderr_ns = std::nan("");
    f.confidence = std::nan("");
    f.significant = f.cost_ns > f.threshold_ns;
    f.test = "one iteration: no variance (significant when above 1% of the iteration alone)";
    return f;
  }
  const double n = static_cast<double>(s.size());
  double ss = 0;
  for (double v : s) ss += (v - c) * (v - c);
  f.stderr_ns = std::sqrt(ss / (n - 1)) / std::sqrt(n);
  // One-sided Student t test of mean > θ with n − 1 degrees of freedom; with no spread at all
  // the sign of c − θ decides.
  f.confidence =
      f.stderr_ns > 0 ? student_t_cdf((c - theta) / f.stderr_ns, n - 1) : (c > theta ? 1.0 : 0.0);
  f.significant = f.cost_ns > f.threshold_ns && c > theta && f.confidence >= kSignificantConfidence;
  f.test = by_rank ? fmt::format("t test over {} rank-iterations ({} iteration{}, {} ranks)",
                                 s.size(), x.size(), x.size() == 1 ? "" : "s", ranks)
                   : fmt::format("t test over {} iterations", s.size());
  return f;
}

// Rank-to-rank variation: in the iterations with no significant straggler, what the ranks' own
// variation costs at the collectives (StragglerCost.cost_ns: the median rank's exposed
// communication over the least, i.e. what the ranks wait for whichever is slowest). A part of
// exposed communication, named apart because its remedy differs. False when every iteration has a
// significant straggler (or none was measured).
static bool rank_variation(const RunAnalysis& ra, const std::vector<double>& t, Finding& f,
                           std::string& evidence) {
  std::vector<double> x;
  std::set<int64_t> waited_for;
  double sigma = 0;
  size_t k = 0;
  for (const IterationRow& it : ra.iterations) {
    const StragglerCost& s = it.straggler;
    const bool noise = !s.significant && s.rank >= 0;
    x.push_back(noise ? static_cast<double>(std::max<Ns>(0, s.cost_ns)) : 0.0);
    if (!noise) continue;
    ++k;
    waited_for.insert(s.rank);
    sigma += static_cast<double>(s.sigma_ns);
  }
  if (k == 0) return false;
  std::string who;
  for (int64_t r : waited_for) who += (who.empty() ? "" : ", ") + std::to_string(r);
  f = test_loss(FindingKind::kRankVariation, x, t);
  evidence = fmt::format(
      "in {} of {} iterations no rank is significantly slower, yet the ranks wait at collectives "
      "for whichever is slowest (the median rank's exposed communication over the least; part of "
      "exposed communication); waited for: rank{} {}; the ranks' exposed communication varies by "
      "{} (robust σ)",
      k, ra.iterations.size(), waited_for.size() == 1 ? "" : "s", who,
      ms(sigma / static_cast<double>(k)));
  return true;
}

namespace {

// The findings of a run, decided pass by pass (decide_findings below): the end-to-end components,
// the rank-to-rank variation, the straggler, and the compute waterfall's parts; each tested
// against the iterations' time (test_loss), with every rank's iteration as a sample when the
// iterations are few.
class FindingDecider {
 public:
  FindingDecider(const RunAnalysis& ra, Findings& out) : ra_(ra), out_(out) {
    for (const IterationRow& it : ra.iterations) t_.push_back(static_cast<double>(it.time_ns));
    out.iterations = t_.size();
    out.iteration_ns = mean(t_);
    out.iteration_sigma_ns = robust_sigma(t_);
    power_ = job_power_w(ra);
    for (const RankAnalysis& r : ra.ranks) ranks_ += r.ok ? 1 : 0;
    few_ = ra.iterations.size() < kFewIterations && ranks_ >= kRankSamplesMinRanks;
    rank_samples();
  }

  void component_findings();
  void rank_variation_finding();
  void straggler_finding();
  void waterfall_findings();
  void cpu_findings();

  void order() {
    std::stable_sort(out_.all.begin(), out_.all.end(), [](const Finding& a, const Finding& b) {
      if (a.significant != b.significant) return a.significant;
      return a.cost_ns > b.cost_ns;
    });
  }

 private:
  // With few iterations, every rank's iteration is a sample of the test (test_loss): each rank's
  // window per iteration (temporal_breakdown), in iteration and rank order; and every rank's
  // components (rank_components), beside the shown rank's (end_to_end).
  void rank_samples() {
    if (!few_) return;
    for (const IterationRow& it : ra_.iterations)
      for (const RankAnalysis& r : ra_.ranks)
        for (const BreakdownRow& b : r.breakdown)
          if (r.ok && b.iteration == it.iteration)
            windows_.emplace_back(it.iteration, r.rank, static_cast<double>(b.total_ns));
    for (const RankAnalysis& r : ra_.ranks)
      for (const auto& [it, c] : r.components) rank_comp_[{r.rank, it}] = &c;
  }

  // A finding kept when it costs time, with its evidence and energy (at the job's mean power).
  void add(Finding f, std::string evidence) {
    f.evidence = std::move(evidence);
    if (!std::isnan(power_) && f.kind != FindingKind::kFrequency)
      f.energy_j = f.cost_ns * 1e-9 * power_;
    if (f.cost_ns > 0) out_.all.push_back(std::move(f));
  }

  // test_loss of x per iteration, value(rank, iteration) giving the rank samples.
  template <class F>
  Finding rank_test(FindingKind kind, const std::vector<double>& x, F value) const {
    std::vector<double> xr, tr;
    for (const auto& [it, rank, w] : windows_) xr.push_back(value(rank, it)), tr.push_back(w);
    return test_loss(kind, x, t_, xr, tr, ranks_);
  }

  Finding component_loss(FindingKind kind, const char* key) const {
    std::vector<double> x;
    for (const IterationRow& it : ra_.iterations) {
      auto c = it.components.find(key);
      x.push_back(c == it.components.end() ? 0.0 : static_cast<double>(c->second));
    }
    return rank_test(kind, x, [&](int64_t rank, int64_t it) {
      auto m = rank_comp_.find({rank, it});
      if (m == rank_comp_.end()) return 0.0;
      auto c = m->second->find(key);
      return c == m->second->end() ? 0.0 : static_cast<double>(c->second);
    });
  }

  const RunAnalysis& ra_;
  Findings& out_;
  std::vector<double> t_;  // the iterations' time
  double power_ = 0;       // the job's mean power, NaN without telemetry
  size_t ranks_ = 0;       // readable ranks
  bool few_ = false;       // few iterations: rank samples
  std::vector<std::tuple<int64_t, int64_t, double>> windows_;  // (iteration, rank, ns)
  std::map<std::pair<int64_t, int64_t>, const std::map<std::string, Ns>*> rank_comp_;
};

std::string join_evidence(std::string a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "; " + b;
}

// The end-to-end components that cost time: each one finding.
void FindingDecider::component_findings() {
  const RunAnalysis& ra = ra_;
  add(component_loss(FindingKind::kExposedComm, "exposed_comm"), exposed_comm_evidence(ra));
  add(component_loss(FindingKind::kHostStall, "host_stall"),
      join_evidence(
          "the GPU idle from the step's start on the host to the host's first launch, the host "
          "in no data loading, synchronisation or optimizer frame",
          idle_cause_evidence(ra, "host_stall")));
  add(component_loss(FindingKind::kDataLoading, "data_loading"),
      idle_cause_evidence(ra, "data_loading"));
  add(component_loss(FindingKind::kHostSync, "host_sync"), idle_cause_evidence(ra, "host_sync"));
  add(component_loss(FindingKind::kHostOptimizer, "host_optimizer"),
      idle_cause_evidence(ra, "host_optimizer"));
  const LaunchTotals lt = launch_totals(ra);
  {
    Finding f = component_loss(FindingKind::kHostLate, "host_late");
    f.suggestion = few_gaps_advice(ra);
    add(std::move(f), join_evidence(host_late_evidence(lt), idle_cause_evidence(ra, "host_late")));
  }
  {
    Finding f = component_loss(FindingKind::kLaunchOverhead, "launch_overhead");
    f.suggestion = slow_launch_advice(lt);
    add(std::move(f), launch_evidence(lt));
  }
  add(component_loss(FindingKind::kGraphGap, "graph_gap"),
      lt.graph_launches > 0 ? fmt::format("{} graph launches (all ranks): the GPU idle between "
                                          "their kernels after the first started",
                                          lt.graph_launches)
                            : std::string());
  add(component_loss(FindingKind::kIdle, "idle"),
      "GPU idle with the launch issued and no other work running: waiting on an event or a "
      "synchronisation, or kernels with no launch in the trace");
  add(component_loss(FindingKind::kExposedMemcpy, "exposed_memcpy"), {});
}

void FindingDecider::rank_variation_finding() {
  if (ranks_ < 2) return;
  Finding f;
  std::string evidence;
  if (rank_variation(ra_, t_, f, evidence)) add(std::move(f), std::move(evidence));
}

// The straggler: the rank costing the most over the iterations where it is significant against
// the rank-to-rank variation (StragglerCost).
void FindingDecider::straggler_finding() {
  std::map<int64_t, double> by_rank;
  for (const IterationRow& it : ra_.iterations)
    if (it.straggler.significant)
      by_rank[it.straggler.rank] += static_cast<double>(it.straggler.cost_ns);
  if (by_rank.empty()) return;
  const int64_t top =
      std::max_element(by_rank.begin(), by_rank.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  std::vector<double> x;
  double comp_x = 0, other_x = 0, conf = 0;
  int k = 0;
  for (const IterationRow& it : ra_.iterations) {
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
  Finding f = test_loss(FindingKind::kStraggler, x, t_);
  f.rank = top;
  f.significant = true;  // tested per iteration against the ranks' spread
  f.confidence = conf;
  f.samples = ranks_;
  f.test = fmt::format(
      "against the spread of the {} ranks in each iteration (3 robust σ and 1% of the step)",
      ranks_);
  std::string why = fmt::format(
      "delays {} of {} iterations by {} each; the other ranks wait for it at collectives; it "
      "computes {} longer than the median rank",
      k, ra_.iterations.size(), ms(f.cost_ns * static_cast<double>(x.size()) / k), ms(comp_x / k));
  if (std::abs(other_x / k) >= 1000)
    why += fmt::format(" and spends {} {} outside compute (host, idle, copies)",
                       ms(std::abs(other_x / k)), other_x >= 0 ? "longer" : "less");
  add(std::move(f), std::move(why));
}

// The waterfall of compute time (with telemetry and counters), slowest rank per iteration:
// clocks below the maximum, the gap to the achievable, and the slowdown beside communication.
void FindingDecider::waterfall_findings() {
  const RunAnalysis& ra = ra_;
  if (ra.waterfall.empty()) return;
  const std::vector<WaterfallRow> w = slowest_waterfall(ra);
  uint64_t kernels = 0, unknown_f = 0, unknown_t = 0, unknown_i = 0;
  double observed = 0, instruction = 0, util_sum = 0;
  std::vector<double> freq, loss, over;
  for (const WaterfallRow& r : w) {
    kernels += r.kernels, unknown_f += r.unknown_frequency;
    unknown_t += r.unknown_theoretical, unknown_i += r.unknown_instruction;
    observed += static_cast<double>(r.observed_ns), instruction += r.instruction_ns;
    util_sum += r.utilization_ns;
    freq.push_back(r.frequency_ns), loss.push_back(r.below_achievable_ns),
        over.push_back(r.overlap_ns);
  }
  // Every rank's iteration rows, as the test's samples.
  std::map<std::pair<int64_t, int64_t>, const WaterfallRow*> rank_w;
  if (few_)
    for (const WaterfallRow& r : ra.waterfall)
      if (iteration_waterfall(r)) rank_w[{r.rank, r.key.iteration}] = &r;
  auto part_loss = [&](FindingKind kind, const std::vector<double>& x, double WaterfallRow::*part) {
    return rank_test(kind, x, [&](int64_t rank, int64_t it) {
      auto f = rank_w.find({rank, it});
      return f == rank_w.end() ? 0.0 : f->second->*part;
    });
  };
  const double total_of = std::accumulate(freq.begin(), freq.end(), 0.0);
  const double iters = static_cast<double>(w.size());
  if (observed > 0 && unknown_f < kernels)
    add(part_loss(FindingKind::kFrequency, freq, &WaterfallRow::frequency_ns),
        fmt::format("{} of compute time lost to clocks below the maximum, ",
                    pct(total_of / observed)) +
            frequency_evidence(ra));
  if (observed > 0 && unknown_t < kernels)
    add(part_loss(FindingKind::kUtilization, loss, &WaterfallRow::below_achievable_ns),
        compute_loss_evidence(ra) +
            fmt::format(
                "; the whole gap to the datasheet peak is {} per iteration ({} of "
                "compute time; waterfall utilization_ns), {}",
                ms(util_sum / iters), pct(util_sum / observed),
                unknown_i < kernels
                    ? fmt::format("instruction overhead {} per iteration", ms(instruction / iters))
                    : std::string("instruction overhead not separable without "
                                  "counters")));
  if (observed > 0)
    add(part_loss(FindingKind::kCommSlowdown, over, &WaterfallRow::overlap_ns),
        fmt::format("{} of compute time beyond solo instances of the same work",
                    pct(std::accumulate(over.begin(), over.end(), 0.0) / observed)));
}

// The CPU findings (with `chopper record`'s CPU files: cpu_utilization rows): per iteration, the
// loss the host causes (host_late + launch_overhead + host_stall; data_loading), counted where
// the rank's CPU side shows why (the host's cores mostly idle with one thread doing the work; the
// data-loader workers saturated), else 0; tested as every loss.
void FindingDecider::cpu_findings() {
  std::map<std::pair<int64_t, int64_t>, const CpuRow*> cpu;  // (rank, iteration)
  for (const RankAnalysis& r : ra_.ranks)
    for (const CpuRow& c : r.cpu) cpu[{r.rank, c.iteration}] = &c;
  if (cpu.empty()) return;
  auto row = [&](int64_t rank, int64_t it) -> const CpuRow* {
    auto f = cpu.find({rank, it});
    return f == cpu.end() ? nullptr : f->second;
  };
  // The host's utilization while the GPU waited for it (the window's when not measured).
  auto serial = [](const CpuRow* c) {
    if (c == nullptr) return false;
    const double util =
        std::isnan(c->host_wait_util_pct) ? c->host_util_pct : c->host_wait_util_pct;
    return util < kHostMostlyIdlePct && c->main_thread_busy_share >= kMainThreadSerialShare;
  };
  auto saturated = [](const CpuRow* c) {
    return c != nullptr && c->workers > 0 && c->worker_busy_share >= kWorkersSaturatedShare;
  };
  auto comp = [](const std::map<std::string, Ns>& m, std::initializer_list<const char*> keys) {
    double x = 0;
    for (const char* k : keys) {
      auto f = m.find(k);
      x += f == m.end() ? 0.0 : static_cast<double>(f->second);
    }
    return x;
  };
  const std::initializer_list<const char*> host = {"host_late", "launch_overhead", "host_stall"};
  const std::initializer_list<const char*> data = {"data_loading"};
  std::vector<double> xs, xl;
  std::vector<const CpuRow*> hit_s, hit_l;
  for (const IterationRow& it : ra_.iterations) {
    const CpuRow* c = row(it.slowest_rank, it.iteration);
    xs.push_back(serial(c) ? comp(it.components, host) : 0.0);
    xl.push_back(saturated(c) ? comp(it.components, data) : 0.0);
    if (serial(c) && xs.back() > 0) hit_s.push_back(c);
    if (saturated(c) && xl.back() > 0) hit_l.push_back(c);
  }
  auto rank_value = [&](int64_t rank, int64_t it, bool loader) {
    auto m = rank_comp_.find({rank, it});
    const CpuRow* c = row(rank, it);
    if (m == rank_comp_.end() || !(loader ? saturated(c) : serial(c))) return 0.0;
    return comp(*m->second, loader ? data : host);
  };
  auto mean_of = [](const std::vector<const CpuRow*>& v, double CpuRow::*m) {
    double s = 0;
    for (const CpuRow* c : v) s += c->*m;
    return s / static_cast<double>(v.size());
  };
  const size_t n = ra_.iterations.size();
  if (!hit_s.empty()) {
    const double util = mean_of(hit_s, &CpuRow::host_wait_util_pct);
    add(rank_test(FindingKind::kHostSerial, xs,
                  [&](int64_t rank, int64_t it) { return rank_value(rank, it, false); }),
        fmt::format(
            "in {} of {} iterations the GPU waited for the host (host late, launch overhead, "
            "host stall) while the host's {} logical CPUs were {:.1f}% busy ({:.1f} cores idle; "
            "{:.1f}% over the whole iteration) and the rank's main thread (pid {}) was busy {} "
            "of the iteration: the work is serial on one thread, not CPU-bound",
            hit_s.size(), n, hit_s.front()->cpus,
            std::isnan(util) ? mean_of(hit_s, &CpuRow::host_util_pct) : util,
            mean_of(hit_s, &CpuRow::host_wait_idle_cores), mean_of(hit_s, &CpuRow::host_util_pct),
            hit_s.front()->pid, pct(mean_of(hit_s, &CpuRow::main_thread_busy_share))));
  }
  if (!hit_l.empty()) {
    const double each = mean_of(hit_l, &CpuRow::worker_busy_share);
    std::string evidence = fmt::format(
        "in {} of {} iterations the GPU waited for data while the rank's {} data-loader worker{} "
        "used {:.2f} cores ({} of one core each; the busiest {}); the host's {} logical CPUs "
        "were {:.1f}% busy",
        hit_l.size(), n, hit_l.front()->workers, hit_l.front()->workers == 1 ? "" : "s",
        mean_of(hit_l, &CpuRow::worker_cores), pct(each),
        pct(mean_of(hit_l, &CpuRow::busiest_worker_share)), hit_l.front()->cpus,
        mean_of(hit_l, &CpuRow::host_util_pct));
    // Above one core a worker runs threads in parallel (a recorded H200 run: one worker at 7.99
    // cores, NumPy's BLAS threads): more workers then compete for the same cores.
    if (each > kThreadedWorkerCores)
      evidence += fmt::format(
          "; each worker runs {:.1f} cores of threads (BLAS, OpenMP or a tokenizer's pool): "
          "limit them per worker (torch.set_num_threads(1) or OMP_NUM_THREADS=1 in "
          "worker_init_fn) before adding workers",
          each);
    add(rank_test(FindingKind::kLoaderSaturated, xl,
                  [&](int64_t rank, int64_t it) { return rank_value(rank, it, true); }),
        std::move(evidence));
  }
}

}  // namespace

Findings decide_findings(const RunAnalysis& ra, const AnalysisOptions& o) {
  (void)o;
  Findings out;
  if (ra.iterations.empty()) return out;
  FindingDecider d(ra, out);
  d.component_findings();
  d.rank_variation_finding();
  d.straggler_finding();
  d.waterfall_findings();
  d.cpu_findings();
  d.order();
  return out;
}

}  // namespace chopper
