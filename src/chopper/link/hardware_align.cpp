#include "chopper/link/hardware_align.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "chopper/base/text.hpp"

namespace chopper {

BusyTime::BusyTime(const GpuActivities& g, Which which) {
  std::vector<std::pair<Ns, Ns>> v;
  v.reserve(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] == GpuKind::kSync || g.dur_ns[i] <= 0) continue;
    const bool compute = g.cls.size() == g.size() && g.cls[i] == GpuClass::kCompute;
    if ((which == kCompute && !compute) || (which == kOther && compute)) continue;
    v.push_back({g.start_ns[i], g.start_ns[i] + g.dur_ns[i]});
  }
  std::sort(v.begin(), v.end());
  for (const auto& [s, e] : v) {
    if (!start_.empty() && s <= end_.back()) {
      end_.back() = std::max(end_.back(), e);
    } else {
      start_.push_back(s);
      end_.push_back(e);
    }
  }
  sum();
}

BusyTime::BusyTime(std::vector<Ns> start, std::vector<Ns> end)
    : start_(std::move(start)), end_(std::move(end)) {
  if (start_.size() != end_.size()) start_.clear(), end_.clear();
  sum();
}

void BusyTime::sum() {
  cum_.assign(start_.size() + 1, 0);
  for (size_t i = 0; i < start_.size(); ++i) cum_[i + 1] = cum_[i] + (end_[i] - start_[i]);
}

Ns BusyTime::upto(Ns t) const {
  const size_t k =
      static_cast<size_t>(std::upper_bound(start_.begin(), start_.end(), t) - start_.begin());
  if (k == 0) return 0;
  return cum_[k - 1] + (std::min(t, end_[k - 1]) - start_[k - 1]);
}

int32_t main_device(const GpuActivities& g) {
  std::map<int32_t, size_t> dev;
  for (int32_t d : g.device) ++dev[d];
  size_t most = 0;
  int32_t device = -1;
  for (const auto& [d, n] : dev)
    if (n > most) most = n, device = d;
  return device;
}

RankActivity rank_activity(const RankTrace& t, int64_t rank) {
  RankActivity r;
  r.ok = true;
  r.rank = rank;
  r.device = main_device(t.gpu);
  r.devices = static_cast<int64_t>(t.meta.devices.size());
  r.busy = BusyTime(t.gpu);
  r.compute = BusyTime(t.gpu, BusyTime::kCompute);
  r.other = BusyTime(t.gpu, BusyTime::kOther);
  for (const ThreadKey& th : t.threads)
    if (std::find(r.pids.begin(), r.pids.end(), th.pid) == r.pids.end()) r.pids.push_back(th.pid);
  const GpuActivities& g = t.gpu;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] != GpuKind::kSync && g.dur_ns[i] > 0) {
      r.gpu_first_ns = std::min(r.gpu_first_ns, g.start_ns[i]);
      r.gpu_last_ns = std::max(r.gpu_last_ns, g.start_ns[i] + g.dur_ns[i]);
    }
  return r;
}

namespace {

// The alignment's margins, shared with telemetry_window(): the refinement looks at most
// kFinePeriods sample periods either side of a coarse offset, and at least kFineMinNs; the samples
// kept for a rank lie within its busy span ± margin_ns(span).
constexpr int kNearPeriods = 2;
constexpr Ns kNearMinNs = 20000000;
constexpr int kFinePeriods = 10;
constexpr Ns kFineMinNs = 100000000;
constexpr Ns kQuarterNs = 900LL * 1000000000LL;
constexpr int kQuarters = 56;  // local time zones tried: -14 h .. +14 h
Ns margin_ns(Ns span) {
  return std::max<Ns>(1000000000, span);
}

// A length of time as a person reads it: "3.2 days", "4.1 h", "12.5 s", "3.000 ms".
std::string duration_text(Ns d) {
  const double s = static_cast<double>(d < 0 ? -d : d) * 1e-9;
  if (s >= 365.25 * 86400) return fmt::format("{:.1f} years", s / (365.25 * 86400));
  if (s >= 86400) return fmt::format("{:.1f} days", s / 86400);
  if (s >= 3600) return fmt::format("{:.1f} h", s / 3600);
  if (s >= 1) return fmt::format("{:.1f} s", s);
  return fmt::format("{:.3f} ms", s * 1e3);
}

// A rank as the alignment sees it: its activity and its node.
struct RankInfo {
  int64_t rank = -1;
  int32_t device = -1;
  int64_t node = -1;
  const RankActivity* act = nullptr;
  const BusyTime* busy = nullptr;
  const BusyTime* compute = nullptr;
  const BusyTime* other = nullptr;
};

Ns median_interval(const Series& s) {
  if (s.size() < 2) return 0;
  std::vector<Ns> d;
  d.reserve(s.size() - 1);
  for (size_t i = 1; i < s.size(); ++i)
    if (s.t_ns[i] > s.t_ns[i - 1]) d.push_back(s.t_ns[i] - s.t_ns[i - 1]);
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// One GPU's recorded signals and the activity the trace says it had, compared at a candidate
// offset. Either signal may be absent.
struct Pair {
  const Series* util;   // utilization, %
  const Series* power;  // power, W
  const RankInfo* rank;
};

// Calls f(t, i) for every sample i of s whose interval (t - period, t], t = its time - offset,
// lies inside the traced span [lo, hi].
template <class F>
void each_sample(const Series& s, Ns offset, Ns period, Ns lo, Ns hi, F&& f) {
  auto it = std::lower_bound(s.t_ns.begin(), s.t_ns.end(), lo + period + offset);
  for (size_t i = static_cast<size_t>(it - s.t_ns.begin()); i < s.size(); ++i) {
    const Ns t = s.t_ns[i] - offset;
    if (t > hi) break;
    f(t, i);
  }
}

// Pearson r between utilization and the trace's busy share of each sample's interval; -2 when
// either hardly varies (σ of the busy share below 2 points: a GPU busy all the time says nothing
// about the offset, and one sample at an edge would make a correlation of noise).
double util_score(const std::vector<Pair>& pairs, Ns offset, Ns period, Ns lo, Ns hi) {
  double n = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (const Pair& p : pairs) {
    if (p.util == nullptr) continue;
    each_sample(*p.util, offset, period, lo, hi, [&](Ns t, size_t i) {
      const double x =
          static_cast<double>(p.rank->busy->in(t - period, t)) / static_cast<double>(period);
      const double y = p.util->value[i];
      n += 1, sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
    });
  }
  if (n < 3) return -2;
  const double vx = sxx - sx * sx / n, vy = syy - sy * sy / n;
  if (vx <= 0.02 * 0.02 * n || vy <= 1e-9 * n) return -2;
  return (sxy - sx * sy / n) / std::sqrt(vx * vy);
}

// How well power follows the trace: the multiple correlation R of the least-squares fit
// power = a + b · compute share + c · other share over each sample's interval (a sample of power
// is the mean over its interval; a GPU draws more while it computes than while it communicates
// or idles). -2 when power does not vary or the fit is singular.
double power_score(const std::vector<Pair>& pairs, Ns offset, Ns period, Ns lo, Ns hi) {
  double m[3][3] = {}, v[3] = {}, syy = 0, sy = 0, n = 0;
  for (const Pair& p : pairs) {
    if (p.power == nullptr) continue;
    each_sample(*p.power, offset, period, lo, hi, [&](Ns t, size_t i) {
      const double x[3] = {
          1.0,
          static_cast<double>(p.rank->compute->in(t - period, t)) / static_cast<double>(period),
          static_cast<double>(p.rank->other->in(t - period, t)) / static_cast<double>(period)};
      const double y = p.power->value[i];
      for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) m[a][b] += x[a] * x[b];
        v[a] += x[a] * y;
      }
      syy += y * y, sy += y, n += 1;
    });
  }
  if (n < 4) return -2;
  const double vy = syy - sy * sy / n;
  if (vy <= 1e-9 * n) return -2;
  // Solve m · beta = v (Cramer's rule on 3 x 3).
  auto det3 = [](const double a[3][3]) {
    return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
           a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
           a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
  };
  const double d = det3(m);
  if (std::abs(d) <= 1e-12 * n * n * n) return -2;
  double beta[3];
  for (int c = 0; c < 3; ++c) {
    double mc[3][3];
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) mc[a][b] = b == c ? v[a] : m[a][b];
    beta[c] = det3(mc) / d;
  }
  // Explained sum of squares: beta · v − (Σy)² / n.
  const double ess = beta[0] * v[0] + beta[1] * v[1] + beta[2] * v[2] - sy * sy / n;
  return std::sqrt(std::clamp(ess / vy, 0.0, 1.0));
}

// The alignment score at an offset: the mean of the signals that say something there.
double score(const std::vector<Pair>& pairs, Ns offset, Ns period, Ns lo, Ns hi) {
  const double u = util_score(pairs, offset, period, lo, hi);
  const double w = power_score(pairs, offset, period, lo, hi);
  if (u <= -2) return w;
  if (w <= -2) return u;
  return 0.5 * (u + w);
}

// The series of one alignment unit: every file of one node's telemetry on one clock (one
// nvidia-smi file, or the per-metric, per-GPU files of a Zeus sampler).
struct Unit {
  std::vector<size_t> files;
  std::vector<const Series*> series;
  std::vector<size_t> series_file;  // the file each series comes from (a merged one: its first)
  std::vector<Series> merged;       // one GPU's metric put together from several files
  bool single_gpu = false;          // one GPU in all: series without an index are that GPU's
};

// What a telemetry file says of itself: its clock, the median interval of its samples (the
// largest over its series: each GPU's is the tool's period), the span of its samples and the
// (GPU, metric) pairs it holds (the GPU as the rank the file names, else its index).
struct FileFacts {
  ClockDomain clock = ClockDomain::kUnknown;
  Ns period_ns = 0;
  Ns first = std::numeric_limits<Ns>::max(), last = std::numeric_limits<Ns>::min();
  std::set<std::tuple<int64_t, int32_t, int>> keys;
};
using SeriesKey = std::tuple<int64_t, int32_t, int>;
SeriesKey series_key(const Series& s) {
  return {s.gpu.rank, s.gpu.rank >= 0 ? -1 : s.gpu.index, static_cast<int>(s.metric)};
}

// Whether a series describes a rank's GPU: by the global rank the file names, else by the GPU
// index on the node.
bool describes(const Series& s, const RankInfo& r, bool single_gpu) {
  if (s.gpu.rank >= 0) return s.gpu.rank == r.rank;
  return s.gpu.index == r.device || (single_gpu && s.gpu.index < 0);
}

const Series* find_series(const Unit& u, Metric m, const RankInfo& r) {
  for (const Series* s : u.series)
    if (s->metric == m && s->size() && describes(*s, r, u.single_gpu)) return s;
  return nullptr;
}

void align_one(const Unit& u, TelemetryAlignment& a, const std::vector<RankInfo*>& ranks,
               const HardwareAlignOptions& o) {
  std::vector<Pair> pairs;
  Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
  Ns t_first = std::numeric_limits<Ns>::max(), t_last = std::numeric_limits<Ns>::min();
  for (RankInfo* r : ranks) {
    if (r->busy->empty()) continue;
    const Series* util = find_series(u, Metric::kUtilGpuPct, *r);
    const Series* power = find_series(u, Metric::kPowerW, *r);
    if (power == nullptr) power = find_series(u, Metric::kPowerAvgW, *r);
    const Series* sig = util != nullptr ? util : power;
    if (sig == nullptr) continue;
    a.ranks.push_back(r->rank);
    pairs.push_back({util, power, r});
    lo = std::min(lo, r->busy->first());
    hi = std::max(hi, r->busy->last());
    t_first = std::min(t_first, sig->t_ns.front());
    t_last = std::max(t_last, sig->t_ns.back());
    a.period_ns = std::max(a.period_ns, median_interval(*sig));
    a.clock = sig->clock;
  }
  if (pairs.empty()) {
    a.method = "none: no utilization or power series for this node's GPUs";
    return;
  }
  const Ns T = a.period_ns > 0 ? a.period_ns : 1000000000;
  // Coarse candidates from what the file says.
  std::vector<Ns> coarse;
  // A file stamped on a wall clock is off by little (the time between reading a sample and
  // stamping it, the hosts' clock sync): the refinement looks kNearPeriods periods (at least
  // kNearMinNs) either side, and kFinePeriods (at least kFineMinNs) when nothing near correlates
  // well. Near first: a training step repeats, so an offset of a whole step can correlate nearly
  // as well as the true one.
  Ns near_range = std::max<Ns>(kNearPeriods * T, kNearMinNs);
  Ns fine_range = std::max<Ns>(kFinePeriods * T, kFineMinNs);
  const Ns span = hi - lo;
  auto overlaps = [&](Ns c) {
    const Ns a0 = std::max(lo + c, t_first), a1 = std::min(hi + c, t_last);
    return a1 - a0 >= span / 2;
  };
  // On a wall clock whose offset is known (UTC, or local time in the zone given), the recording
  // must reach the traced span within the refinement's widest search, or nothing can align it.
  auto reaches = [&](Ns c, const char* clock) {
    if (t_first <= hi + c + fine_range && t_last >= lo + c - fine_range) return true;
    a.method = t_last < lo + c ? fmt::format(
                                     "none: the recording ends {} before the traced time begins on "
                                     "its {} clock: no overlap to align",
                                     duration_text(lo + c - t_last), clock)
                               : fmt::format(
                                     "none: the recording begins {} after the traced time ends on "
                                     "its {} clock: no overlap to align",
                                     duration_text(t_first - (hi + c)), clock);
    return false;
  };
  if (a.clock == ClockDomain::kRealtimeUtc) {
    if (!reaches(0, "UTC")) return;
    coarse.push_back(0);
    a.method = "utc+correlation";
  } else if (a.clock == ClockDomain::kRealtimeLocal) {
    if (o.utc_offset_known) {
      const Ns c = std::llround(o.utc_offset_h * 3600.0) * 1000000000LL;
      if (!reaches(c, "local (--telemetry-utc-offset)")) return;
      coarse.push_back(c);
    } else {
      for (int k = -kQuarters; k <= kQuarters; ++k)
        if (overlaps(k * kQuarterNs)) coarse.push_back(k * kQuarterNs);
    }
    a.method = "zone+correlation";
  } else {
    // Origin unknown: every placement of the trace inside the recording, one period apart.
    const Ns from = t_first - hi, to = t_last - lo;
    const Ns step = std::max<Ns>(T, (to - from) / 200000);
    for (Ns c = from; c <= to; c += step) coarse.push_back(c);
    near_range = fine_range = step;
    a.method = "correlation";
  }
  if (coarse.empty()) {
    a.method = "none: the recording does not cover the traced time in any time zone";
    return;
  }
  Ns best_c = coarse.front();
  double best = -3;
  Ns ambiguity = 0;  // how far apart the coarse offsets the correlation cannot tell apart are
  if (coarse.size() > 1) {
    std::vector<double> sc(coarse.size());
    for (size_t i = 0; i < coarse.size(); ++i) {
      sc[i] = score(pairs, coarse[i], T, lo, hi);
      if (sc[i] > best) best = sc[i], best_c = coarse[i];
    }
    for (size_t i = 0; i < coarse.size(); ++i)
      if (sc[i] >= best - 0.05) ambiguity = std::max(ambiguity, std::abs(coarse[i] - best_c));
  }
  // Fine: around the coarse offset, in steps of a twentieth of the period; near first, then (when
  // the best near score is below 0.9) the wide range, whose best is taken only if it beats the
  // near one by 0.05.
  const Ns step = std::max<Ns>(1000, T / 20);
  auto search = [&](Ns range) {
    std::vector<std::pair<Ns, double>> v;
    for (Ns dlt = -range; dlt <= range; dlt += step)
      v.push_back({best_c + dlt, score(pairs, best_c + dlt, T, lo, hi)});
    size_t b = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].second > v[b].second) b = i;
    return std::make_pair(std::move(v), b);
  };
  auto [fine, bi] = search(near_range);
  if (fine[bi].second < 0.9 && fine_range > near_range) {
    auto [wide, wb] = search(fine_range);
    if (wide[wb].second >= fine[bi].second + 0.05) {
      fine = std::move(wide);
      bi = wb;
      a.method += " (beyond the near range)";
    }
  }
  best = fine[bi].second;
  if (best < 0.2) {
    // Too little structure to tell offsets apart: keep what the file says.
    a.offset_ns = best_c;
    a.correlation = score(pairs, best_c, T, lo, hi);
    a.uncertainty_ns =
        a.clock == ClockDomain::kRealtimeUtc || a.clock == ClockDomain::kRealtimeLocal ? T : span;
    a.method += a.correlation <= -2
                    ? " (nothing to correlate: no sample varied; the file's clock used as is)"
                    : " (weak correlation: the file's clock used as is)";
  } else {
    a.offset_ns = fine[bi].first;
    a.correlation = best;
    // The offsets whose score is within 0.01 of the best cannot be told apart.
    size_t l = bi, r = bi;
    while (l > 0 && fine[l - 1].second >= best - 0.01) --l;
    while (r + 1 < fine.size() && fine[r + 1].second >= best - 0.01) ++r;
    a.uncertainty_ns = std::max<Ns>(step / 2, (fine[r].first - fine[l].first) / 2);
  }
  if (ambiguity > 0) {
    a.uncertainty_ns = std::max(a.uncertainty_ns, ambiguity);
    a.method += " (ambiguous: other offsets correlate as well; give --telemetry-utc-offset)";
  }
  for (const Pair& p : pairs) a.samples += (p.util != nullptr ? p.util : p.power)->size();
  // A score of -2 says nothing varied: no correlation (NULL), never a number outside [-1, 1].
  if (!(a.correlation >= -1.0)) a.correlation = std::nan("");
  a.correlation = std::min(a.correlation, 1.0);
}

}  // namespace

TelemetryWindow telemetry_window(const Run& run, const HardwareAlignOptions& o) {
  std::vector<RankActivity> acts;
  for (const RankSlot& s : run.ranks)
    if (s.ok) acts.push_back(rank_activity(s.trace, s.rank));
  return telemetry_window(acts, o);
}

TelemetryWindow telemetry_window(const std::vector<RankActivity>& ranks,
                                 const HardwareAlignOptions& o) {
  TelemetryWindow w;
  // The samples align_hardware reads or keeps for a node lie within [lo, hi] + the offset: a
  // rank's busy span ± its margin (the correlation looks inside the span, the kept samples reach
  // the margin), for the offsets it tries, ± the refinement (pad).
  Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
  for (const RankActivity& r : ranks) {
    if (!r.ok || r.gpu_first_ns > r.gpu_last_ns) continue;
    const Ns m = margin_ns(r.gpu_last_ns - r.gpu_first_ns);
    lo = std::min(lo, r.gpu_first_ns - m);
    hi = std::max(hi, r.gpu_last_ns + m);
  }
  if (lo > hi) return w;
  w.utc.push_back({lo, hi});
  if (o.utc_offset_known) {
    const Ns c = std::llround(o.utc_offset_h * 3600.0) * 1000000000LL;
    w.local.push_back({lo + c, hi + c});
  } else {
    for (int k = -kQuarters; k <= kQuarters; ++k)
      w.local.push_back({lo + k * kQuarterNs, hi + k * kQuarterNs});
  }
  w.pad_ns = kFineMinNs;
  w.pad_periods = kFinePeriods;
  return w;
}

int64_t node_from_file_name(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  std::string_view f = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view key : {"node", "host", "nid"}) {
    size_t p = 0;
    while ((p = f.find(key, p)) != std::string_view::npos) {
      size_t q = p + key.size();
      while (q < f.size() && (f[q] == '-' || f[q] == '_')) ++q;
      int64_t n = 0;
      size_t digits = 0;
      while (q < f.size() && f[q] >= '0' && f[q] <= '9' && digits < 9) {
        n = n * 10 + (f[q] - '0');
        ++q, ++digits;
      }
      if (digits > 0) return n;
      p += key.size();
    }
  }
  return -1;
}

double mean_linear(const Series& s, Ns lo, Ns hi) {
  if (s.t_ns.empty()) return std::nan("");
  const auto& t = s.t_ns;
  const auto& v = s.value;
  auto at = [&](Ns x) {
    if (x <= t.front()) return v.front();
    if (x >= t.back()) return v.back();
    const size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
    const double f = static_cast<double>(x - t[k - 1]) / static_cast<double>(t[k] - t[k - 1]);
    return v[k - 1] + (v[k] - v[k - 1]) * f;
  };
  if (hi <= lo) return at(lo);
  // Trapezoids between lo, the samples inside (lo, hi) and hi.
  double area = 0;
  Ns x0 = lo;
  double y0 = at(lo);
  size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), lo) - t.begin());
  for (; k < t.size() && t[k] < hi; ++k) {
    area += 0.5 * (y0 + v[k]) * static_cast<double>(t[k] - x0);
    x0 = t[k];
    y0 = v[k];
  }
  area += 0.5 * (y0 + at(hi)) * static_cast<double>(hi - x0);
  return area / static_cast<double>(hi - lo);
}

double hold_at(const Series& s, Ns t) {
  auto it = std::lower_bound(s.t_ns.begin(), s.t_ns.end(), t);
  if (it == s.t_ns.end()) return std::nan("");
  return s.value[static_cast<size_t>(it - s.t_ns.begin())];
}

double integral_hold(const Series& s, Ns lo, Ns hi) {
  if (s.t_ns.empty() || hi <= lo) return 0;
  const auto& t = s.t_ns;
  double sum = 0;
  Ns x = lo;
  size_t k = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), lo) - t.begin());
  // Sample k holds over (t[k-1], t[k]]; past the last sample, the last value holds.
  while (x < hi) {
    const double val = k < t.size() ? s.value[k] : s.value.back();
    const Ns end = k < t.size() ? std::min(hi, t[k]) : hi;
    if (end > x) sum += val * static_cast<double>(end - x) * 1e-9;
    x = std::max(x, end);
    if (k >= t.size()) break;
    ++k;
  }
  return sum;
}

HardwareRun align_telemetry(const std::vector<RankActivity>& ranks,
                            std::vector<TelemetryData> telemetry, const HardwareAlignOptions& o) {
  HardwareRun hw;
  hw.telemetry_data = std::move(telemetry);
  hw.ranks.resize(ranks.size());
  // Ranks: their GPU (the most common device of their activities) and node.
  int64_t gpn = 0;
  std::vector<RankInfo> info(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankActivity& a = ranks[i];
    hw.ranks[i].rank = a.rank;
    if (!a.ok) continue;
    RankInfo& r = info[i];
    r.rank = a.rank;
    r.act = &a;
    r.device = a.device;
    hw.ranks[i].device = r.device;
    r.busy = &a.busy;
    r.compute = &a.compute;
    r.other = &a.other;
    gpn = std::max<int64_t>(gpn, a.devices);
    gpn = std::max<int64_t>(gpn, r.device + 1);
  }
  if (gpn <= 0) gpn = 1;
  for (RankInfo& r : info)
    if (r.rank >= 0) r.node = r.rank / gpn;

  // Telemetry files -> nodes: the node of the rank a file names (Zeus), else the number in the
  // file name, else the free nodes in file order.
  std::vector<size_t> order(hw.telemetry_data.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return hw.telemetry_data[a].file < hw.telemetry_data[b].file;
  });
  hw.telemetry.resize(hw.telemetry_data.size());
  std::vector<bool> taken;
  auto take = [&](int64_t n) {
    if (n < 0) return;
    if (static_cast<size_t>(n) >= taken.size()) taken.resize(static_cast<size_t>(n) + 1, false);
    taken[static_cast<size_t>(n)] = true;
  };
  auto named_rank_node = [&](const TelemetryData& d) -> int64_t {
    for (const Series& s : d.series)
      if (s.gpu.rank >= 0) {
        for (const RankInfo& r : info)
          if (r.rank == s.gpu.rank) return r.node;
        return s.gpu.rank / gpn;  // a rank with no readable trace: its node all the same
      }
    return -1;
  };
  for (size_t i : order) {
    hw.telemetry[i].file = hw.telemetry_data[i].file;
    hw.telemetry[i].format = hw.telemetry_data[i].format;
    hw.telemetry[i].node = named_rank_node(hw.telemetry_data[i]);
    if (hw.telemetry[i].node < 0)
      hw.telemetry[i].node = node_from_file_name(hw.telemetry_data[i].file);
    take(hw.telemetry[i].node);
  }
  int64_t next = 0;
  for (size_t i : order) {
    if (hw.telemetry[i].node >= 0) continue;
    while (static_cast<size_t>(next) < taken.size() && taken[static_cast<size_t>(next)]) ++next;
    hw.telemetry[i].node = next;
    take(next);
  }
  // One GPU's metric, however a file names the GPU: a rank the file names is its GPU's index
  // when its trace says it, so a Zeus file of rank 3 and an nvidia-smi file's GPU 3 meet.
  std::unordered_map<int64_t, int32_t> device_of_rank;
  for (const RankInfo& r : info)
    if (r.rank >= 0 && r.device >= 0) device_of_rank[r.rank] = r.device;
  auto gpu_key = [&](const Series& se) -> SeriesKey {
    if (se.gpu.rank >= 0)
      if (auto it = device_of_rank.find(se.gpu.rank); it != device_of_rank.end())
        return {-1, it->second, static_cast<int>(se.metric)};
    return series_key(se);
  };
  // What each file says of itself (its clock and period are its own, placed or not).
  std::vector<FileFacts> facts(hw.telemetry_data.size());
  for (size_t f = 0; f < facts.size(); ++f) {
    FileFacts& ff = facts[f];
    for (const Series& se : hw.telemetry_data[f].series) {
      if (se.size() == 0) continue;
      ff.clock = se.clock;
      ff.period_ns = std::max(ff.period_ns, median_interval(se));
      ff.first = std::min(ff.first, se.t_ns.front());
      ff.last = std::max(ff.last, se.t_ns.back());
      ff.keys.insert(gpu_key(se));
    }
    hw.telemetry[f].clock = ff.clock;
    hw.telemetry[f].period_ns = ff.period_ns;
  }
  // Two files of one node holding one GPU's metric: one recording split in time (one tool, one
  // clock, spans apart) is put together; anything else (two tools, or samples of one time twice)
  // cannot tell which to believe, and neither file is used.
  std::vector<std::string> conflict(hw.telemetry_data.size());
  std::map<int64_t, std::vector<size_t>> files_of_node;
  for (size_t f : order) files_of_node[hw.telemetry[f].node].push_back(f);
  for (const auto& [nd, fs] : files_of_node)
    for (size_t x = 0; x < fs.size(); ++x)
      for (size_t y = x + 1; y < fs.size(); ++y) {
        const size_t f = fs[x], g = fs[y];
        const FileFacts &a = facts[f], &b = facts[g];
        std::string shared;
        size_t n_shared = 0;
        for (const SeriesKey& k : a.keys)
          if (b.keys.count(k) > 0 && n_shared++ == 0)
            shared = fmt::format("{} {} {}", std::get<0>(k) >= 0 ? "rank" : "GPU",
                                 std::get<0>(k) >= 0 ? std::get<0>(k) : std::get<1>(k),
                                 metric_name(static_cast<Metric>(std::get<2>(k))));
        if (n_shared == 0) continue;
        const TelemetryData &df = hw.telemetry_data[f], &dg = hw.telemetry_data[g];
        const bool apart = a.last < b.first || b.last < a.first;
        if (df.format == dg.format && a.clock == b.clock && apart) continue;  // merged below
        const std::string why =
            df.format != dg.format ? fmt::format("{} and {} files", df.format, dg.format)
            : a.clock != b.clock   ? fmt::format("{} and {} clocks", clock_domain_name(a.clock),
                                                 clock_domain_name(b.clock))
                                   : std::string("their samples overlap in time");
        const int64_t node = hw.telemetry[f].node;
        hw.errors.push_back(fmt::format(
            "{} and {}: two telemetry files for the GPUs of node {} ({}{}; {}): neither is used; "
            "give one file per node, or one recording split in time "
            "(docs/telemetry_formats.md)",
            df.file, dg.file, node, shared,
            n_shared > 1 ? fmt::format(" and {} more series", n_shared - 1) : std::string(), why));
        for (const auto& [me, other] : {std::pair{f, g}, std::pair{g, f}})
          if (conflict[me].empty())
            conflict[me] =
                fmt::format("none: {} also describes node {}'s GPUs ({}); neither is used",
                            hw.telemetry_data[other].file, node, why);
      }
  for (size_t f = 0; f < conflict.size(); ++f)
    if (!conflict[f].empty()) hw.telemetry[f].method = conflict[f];
  // Units: the files of one node, format and clock are aligned together (a Zeus sampler writes
  // one file per metric and GPU: the energy or link counters of a GPU carry no signal of their
  // own to place them, its power file does, and all were stamped by the same host clock; one
  // recording split into files is one unit, each GPU's metric put together in time order).
  std::map<std::tuple<int64_t, std::string, int>, Unit> units;
  for (size_t f : order) {
    if (!conflict[f].empty()) continue;
    const TelemetryData& d = hw.telemetry_data[f];
    Unit& u = units[{hw.telemetry[f].node, d.format, static_cast<int>(facts[f].clock)}];
    u.files.push_back(f);
  }
  int64_t last_node = -1;
  for (const RankInfo& r : info) last_node = std::max(last_node, r.node);
  for (auto& [key, u] : units) {
    std::map<SeriesKey, std::vector<std::pair<size_t, const Series*>>> by_key;
    for (size_t f : u.files)
      for (const Series& se : hw.telemetry_data[f].series)
        by_key[series_key(se)].push_back({f, &se});
    // Put together: one series of the metric from each of several files (a file's own series of
    // one metric after a clock reset stay apart, each on its own clock, as from one file).
    auto mergeable = [](const std::vector<std::pair<size_t, const Series*>>& v) {
      if (v.size() < 2) return false;
      for (size_t i = 1; i < v.size(); ++i)
        for (size_t k = 0; k < i; ++k)
          if (v[i].first == v[k].first) return false;
      return true;
    };
    size_t n_merged = 0;
    for (const auto& [k, v] : by_key) n_merged += mergeable(v) ? 1 : 0;
    u.merged.reserve(n_merged);  // pointers into it are taken below
    for (auto& [k, v] : by_key) {
      if (!mergeable(v)) {
        for (const auto& [f, se] : v) {
          u.series.push_back(se);
          u.series_file.push_back(f);
        }
        continue;
      }
      std::stable_sort(v.begin(), v.end(), [](const auto& p, const auto& q) {
        const Ns a = p.second->size() ? p.second->t_ns.front() : 0;
        const Ns b = q.second->size() ? q.second->t_ns.front() : 0;
        return a < b;
      });
      Series m;
      m.gpu = v.front().second->gpu;
      m.metric = v.front().second->metric;
      m.source = v.front().second->source;
      m.clock = v.front().second->clock;
      for (const auto& [f, se] : v) {
        m.t_ns.insert(m.t_ns.end(), se->t_ns.begin(), se->t_ns.end());
        m.value.insert(m.value.end(), se->value.begin(), se->value.end());
      }
      u.merged.push_back(std::move(m));
      u.series.push_back(&u.merged.back());
      u.series_file.push_back(v.front().first);
    }
    std::vector<int32_t> devices;
    for (const Series* se : u.series)
      if (std::find(devices.begin(), devices.end(), se->gpu.index) == devices.end())
        devices.push_back(se->gpu.index);
    u.single_gpu = devices.size() == 1;
    const int64_t node = std::get<0>(key);
    std::vector<RankInfo*> node_ranks;
    for (RankInfo& r : info)
      if (r.rank >= 0 && r.node == node) node_ranks.push_back(&r);
    TelemetryAlignment a;
    if (node_ranks.empty())
      a.method = last_node < 0 ? fmt::format("none: no ranks on node {} (no readable trace)", node)
                               : fmt::format(
                                     "none: no ranks on node {} (the traces' ranks are on "
                                     "nodes 0 to {})",
                                     node, last_node);
    else
      align_one(u, a, node_ranks, o);
    for (size_t f : u.files) {
      TelemetryAlignment& fa = hw.telemetry[f];
      const std::string file = fa.file, format = fa.format;
      const ClockDomain clock = fa.clock;
      const Ns period = fa.period_ns;
      fa = a;
      fa.file = file;
      fa.format = format;
      fa.node = node;
      fa.clock = clock;
      fa.period_ns = period;
      if (u.files.size() > 1) {
        // The ranks this file itself describes.
        fa.ranks.clear();
        fa.samples = 0;
        for (RankInfo* r : node_ranks) {
          bool any = false;
          for (const Series& se : hw.telemetry_data[f].series)
            if (describes(se, *r, u.single_gpu)) any = true;
          if (any && std::find(a.ranks.begin(), a.ranks.end(), r->rank) != a.ranks.end())
            fa.ranks.push_back(r->rank);
        }
        if (fa.aligned())
          for (const Series& se : hw.telemetry_data[f].series) fa.samples += se.size();
      }
    }
    if (!a.aligned()) continue;
    // The node's ranks get their GPU's series, shifted onto the trace clock.
    for (size_t i = 0; i < info.size(); ++i) {
      if (info[i].rank < 0 || info[i].node != node || info[i].busy->empty()) continue;
      RankHardware& rh = hw.ranks[i];
      // Only the samples around the traced span are kept: the analyses look at nothing else,
      // and a recording may run for hours around a profile of seconds.
      const Ns margin = margin_ns(info[i].busy->last() - info[i].busy->first());
      const Ns lo = info[i].busy->first() - margin, hi = info[i].busy->last() + margin;
      for (size_t k = 0; k < u.series.size(); ++k) {
        const Series& se = *u.series[k];
        if (!describes(se, info[i], u.single_gpu)) continue;
        Series& dst = rh.series[static_cast<size_t>(se.metric)];
        if (!dst.t_ns.empty()) continue;  // one series per metric (a unit holds one per GPU)
        auto b = std::lower_bound(se.t_ns.begin(), se.t_ns.end(), lo + a.offset_ns);
        auto e = std::upper_bound(se.t_ns.begin(), se.t_ns.end(), hi + a.offset_ns);
        if (b == e) continue;
        dst.gpu = se.gpu;
        dst.metric = se.metric;
        dst.source = se.source;
        dst.clock = se.clock;
        const auto from = b - se.t_ns.begin(), to = e - se.t_ns.begin();
        dst.t_ns.assign(b, e);
        dst.value.assign(se.value.begin() + from, se.value.begin() + to);
        for (Ns& t : dst.t_ns) t -= a.offset_ns;
        if (rh.telemetry_file < 0) rh.telemetry_file = static_cast<int>(u.series_file[k]);
      }
    }
  }

  return hw;
}

size_t counter_file_slot(const std::vector<RankActivity>& ranks, const CounterTable& ct) {
  // The rank the file says (a Kineto counter pass's distributedInfo), else its file name's.
  const int64_t rank = ct.rank >= 0 ? ct.rank : rank_from_file_name(ct.file);
  size_t slot = SIZE_MAX;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].ok && ranks[i].rank >= 0 && ranks[i].rank == rank) slot = i;
  const int64_t pid = ct.first_row_pid();
  if (slot == SIZE_MAX && pid != -1) {
    for (size_t i = 0; i < ranks.size() && slot == SIZE_MAX; ++i) {
      if (!ranks[i].ok || ranks[i].rank < 0) continue;
      const std::vector<int64_t>& p = ranks[i].pids;
      if (std::find(p.begin(), p.end(), pid) != p.end()) slot = i;
    }
  }
  if (slot == SIZE_MAX) {
    size_t ok = 0;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i].ok && ranks[i].rank >= 0) ++ok, slot = i;
    if (ok != 1) slot = SIZE_MAX;
  }
  return slot;
}

std::vector<size_t> assign_counter_files(const std::vector<RankActivity>& ranks,
                                         const std::vector<CounterTable>& counters,
                                         std::vector<CounterJoin>& joins) {
  // Counters -> ranks: the rank in the file name, else a process id of the rank's trace, else the
  // only rank; the first file to claim a rank has it.
  std::vector<size_t> out(counters.size(), SIZE_MAX);
  std::vector<bool> taken(ranks.size(), false);
  joins.assign(counters.size(), CounterJoin{});
  for (size_t f = 0; f < counters.size(); ++f) {
    const CounterTable& ct = counters[f];
    CounterJoin& j = joins[f];
    j.file = ct.file;
    j.dispatches = ct.dispatches();
    const size_t slot = counter_file_slot(ranks, ct);
    if (slot == SIZE_MAX) {
      const int64_t named = ct.rank >= 0 ? ct.rank : rank_from_file_name(ct.file);
      bool unread = false;
      for (const RankActivity& r : ranks) unread = unread || (r.rank == named && !r.ok);
      j.method =
          named < 0 ? "none: no rank in the file name, no matching process id"
          : unread  ? fmt::format(
                          "none: the trace of rank {} (as the file says) could not "
                           "be read",
                          named)
                   : fmt::format("none: rank {} (as the file says) has no trace in the run", named);
      continue;
    }
    j.rank = ranks[slot].rank;
    if (taken[slot]) {
      j.method = "none: the rank already has a counter file";
      continue;
    }
    taken[slot] = true;
    out[f] = slot;
  }
  return out;
}

namespace {

// A kernel name without a leading "void ", its argument list and, with `templates`, its template
// arguments.
std::string_view kernel_stem(std::string_view n, bool templates) {
  while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
  if (n.rfind("void ", 0) == 0) n.remove_prefix(5);
  size_t cut = n.find('(');
  if (templates) cut = std::min(cut, n.find('<'));
  if (cut != std::string_view::npos) n = n.substr(0, cut);
  while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
  return n;
}

bool contains_any(const std::string& lower, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (lower.find(k) != std::string::npos) return true;
  return false;
}

}  // namespace

bool kernel_names_agree(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (kernel_stem(a, false) == kernel_stem(b, false)) return true;
  const std::string_view sa = kernel_stem(a, true), sb = kernel_stem(b, true);
  return !sa.empty() && sa == sb;
}

std::string_view trace_vendor(const RankTrace& t) {
  if (t.meta.rocm) return "amd";
  for (const auto& [k, v] : t.meta.versions) {
    const std::string key = ascii_lower(k);
    if (contains_any(key, {"roctracer", "hip_", "rocm"})) return "amd";
    if (contains_any(key, {"cupti", "cuda_"})) return "nvidia";
  }
  for (const DeviceProps& d : t.meta.devices) {
    const std::string name = ascii_lower(d.name);
    if (contains_any(name, {"nvidia", "tesla", "geforce", "quadro"})) return "nvidia";
    if (contains_any(name, {"amd", "instinct", "radeon"})) return "amd";
  }
  return "";
}

std::string_view counter_vendor(const CounterTable& ct) {
  if (ct.format.rfind("rocprofv3", 0) == 0 || ct.format.rfind("chopper", 0) == 0) return "amd";
  if (ct.format.rfind("cupti", 0) == 0) return "nvidia";
  return "";
}

void join_counters(const RankTrace& tr, const CounterTable& ct, CounterJoin& j, RankHardware& rh) {
  const GpuActivities& g = tr.gpu;
  j.matched = j.ambiguous = 0;
  j.offset_ns = 0;
  j.same_run = rh.counters_same_run = false;
  j.name_match_rate = std::nan("");
  auto refuse = [&](std::string why) {
    j.method = "none: " + std::move(why);
    j.matched = 0;
    j.same_run = rh.counters_same_run = false;
    rh.counters = nullptr;
    rh.counter_row.clear();
  };
  // Another vendor's counters describe another machine.
  const std::string_view tv = trace_vendor(tr), cv = counter_vendor(ct);
  if (!tv.empty() && !cv.empty() && tv != cv) {
    refuse(
        fmt::format("{} counters ({}) on a trace of {} GPUs: not this run's hardware "
                    "(docs/counter_formats.md)",
                    cv == "amd" ? "AMD" : "NVIDIA", ct.format, tv == "amd" ? "AMD" : "NVIDIA"));
    return;
  }
  rh.counters = &ct;
  rh.counter_row.assign(g.size(), -1);
  std::unordered_map<int64_t, int32_t> by_corr;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] == GpuKind::kKernel && g.correlation[i] >= 0)
      by_corr.emplace(g.correlation[i], static_cast<int32_t>(i));
  uint64_t by_id = 0, id_ambiguous = 0, names_agree = 0;
  for (size_t row = 0; row < ct.size(); ++row) {
    if (ct.correlation_id[row] < 0) continue;
    auto it = by_corr.find(ct.correlation_id[row]);
    if (it == by_corr.end()) continue;
    if (rh.counter_row[static_cast<size_t>(it->second)] >= 0) {
      ++id_ambiguous;
      continue;
    }
    rh.counter_row[static_cast<size_t>(it->second)] = static_cast<int32_t>(row);
    ++by_id;
    if (kernel_names_agree(ct.kernel[row], tr.strings.str(g.name[static_cast<size_t>(it->second)])))
      ++names_agree;
  }
  // Counter clock − trace clock over the pairs made, median; and the share of timed pairs within
  // kTimeToleranceNs of it.
  auto offsets = [&](Ns& median) {
    std::vector<Ns> d;
    for (size_t i = 0; i < g.size(); ++i) {
      const int32_t row = rh.counter_row[i];
      if (row >= 0 && static_cast<size_t>(row) < ct.start_ns.size() &&
          ct.start_ns[static_cast<size_t>(row)] != kNoTime)
        d.push_back(ct.start_ns[static_cast<size_t>(row)] - g.start_ns[i]);
    }
    if (d.empty()) return std::nan("");
    std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
    median = d[d.size() / 2];
    size_t near = 0;
    for (Ns x : d) near += std::abs(x - median) <= kTimeToleranceNs ? 1 : 0;
    return static_cast<double>(near) / static_cast<double>(d.size());
  };
  // Correlation ids pair a dispatch with a kernel when one run recorded both (ids restart at 1 in
  // every process, so another run's file pairs half of them by chance): its kernel names must
  // agree and its times keep one offset.
  std::string id_refused;
  if (by_id * 2 >= ct.size() && by_id > 0) {
    const double rate = static_cast<double>(names_agree) / static_cast<double>(by_id);
    Ns median = 0;
    const double on_time = rate >= kNameAgreementMin ? offsets(median) : std::nan("");
    if (rate < kNameAgreementMin) {
      j.name_match_rate = rate;
      id_refused = fmt::format(
          "correlation ids pair {} of {} dispatches with kernels, but only {:.0f}% of their "
          "kernel names agree (at least {:.0f}% needed): not the traced run's",
          by_id, ct.dispatches(), 100 * rate, 100 * kNameAgreementMin);
    } else if (on_time < kTimeAgreementMin) {  // NaN (no times) passes
      j.name_match_rate = rate;
      id_refused = fmt::format(
          "correlation ids pair {} of {} dispatches with kernels of the same names, but only "
          "{:.0f}% of their times lie within {} ms of one offset (at least {:.0f}% needed): not "
          "the traced run's",
          by_id, ct.dispatches(), 100 * on_time, kTimeToleranceNs / 1000000,
          100 * kTimeAgreementMin);
    } else {
      j.method = "correlation id";
      j.matched = by_id;
      j.ambiguous = id_ambiguous;
      j.name_match_rate = rate;
      j.offset_ns = median;
      j.same_run = rh.counters_same_run = true;
      return;
    }
  }
  // Kernel name and occurrence order (Chopper): the k-th dispatch of a name is the k-th kernel
  // of that name in the trace, in start order. Names agree by construction.
  rh.counter_row.assign(g.size(), -1);
  std::vector<int32_t> kernels;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] == GpuKind::kKernel) kernels.push_back(static_cast<int32_t>(i));
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](int32_t a, int32_t b) { return g.start_ns[a] < g.start_ns[b]; });
  std::unordered_map<std::string_view, std::vector<int32_t>> by_name;
  for (int32_t i : kernels) by_name[tr.strings.str(g.name[i])].push_back(i);
  std::vector<size_t> rows(ct.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  if (!ct.start_ns.empty())
    std::stable_sort(rows.begin(), rows.end(),
                     [&](size_t a, size_t b) { return ct.start_ns[a] < ct.start_ns[b]; });
  std::unordered_map<std::string_view, size_t> seen;
  uint64_t matched = 0, ambiguous = 0;
  for (size_t row : rows) {
    auto it = by_name.find(ct.kernel[row]);
    if (it == by_name.end()) continue;
    size_t& k = seen[ct.kernel[row]];
    if (k < it->second.size()) {
      rh.counter_row[static_cast<size_t>(it->second[k])] = static_cast<int32_t>(row);
      ++matched;
    }
    ++k;
  }
  for (const auto& [name, n] : seen)
    if (n != by_name[name].size())
      ambiguous += n > by_name[name].size() ? n - by_name[name].size() : by_name[name].size() - n;
  if (matched == 0) {
    refuse(id_refused.empty() ? std::string("no dispatch's kernel name is in the trace")
                              : id_refused + "; and no dispatch's kernel name is in the trace");
    return;
  }
  j.method = "kernel name + order";
  if (!id_refused.empty()) j.method += " (" + id_refused + ")";
  j.matched = matched;
  j.ambiguous = ambiguous;
  j.name_match_rate = 1.0;
  Ns median = 0;
  offsets(median);
  j.offset_ns = median;
}

void note_unreadable(HardwareRun& hw, const std::vector<std::string>& errors,
                     const std::vector<std::string>& files) {
  for (size_t i = 0; i < errors.size(); ++i)
    hw.unreadable.emplace_back(i < files.size() ? files[i] : std::string(), errors[i]);
}

std::vector<DiagnosticRow> hardware_use_diagnostics(const HardwareRun& hw) {
  std::vector<DiagnosticRow> rows;
  for (const auto& [file, why] : hw.unreadable) {
    DiagnosticRow d;
    d.file = file;
    d.kind = file_diag_name(FileDiag::kHardwareFileUnreadable);
    d.severity = file_diag_severity(FileDiag::kHardwareFileUnreadable);
    d.stage = "read";
    d.count = 1;
    d.example = why;
    rows.push_back(std::move(d));
  }
  for (const TelemetryAlignment& a : hw.telemetry) {
    if (a.aligned()) continue;
    DiagnosticRow d;
    d.file = a.file;
    const bool conflict = a.method.find("also describes node") != std::string::npos;
    const FileDiag kind = conflict ? FileDiag::kTelemetryConflict : FileDiag::kTelemetryNotAligned;
    d.kind = file_diag_name(kind);
    d.severity = file_diag_severity(kind);
    d.stage = "link";
    d.count = 1;
    d.example = fmt::format("{}: {}", a.file, a.method.substr(6));  // after "none: "
    rows.push_back(std::move(d));
  }
  for (const CounterJoin& j : hw.counters) {
    if (j.method.rfind("none", 0) != 0) continue;
    DiagnosticRow d;
    d.rank = j.rank;
    d.file = j.file;
    d.kind = file_diag_name(FileDiag::kCounterFileRefused);
    d.severity = file_diag_severity(FileDiag::kCounterFileRefused);
    d.stage = "link";
    d.count = j.dispatches;
    d.example = fmt::format("{}: {}", j.file, j.method.substr(6));
    rows.push_back(std::move(d));
  }
  return rows;
}

HardwareRun align_hardware(const Run& run, std::vector<TelemetryData> telemetry,
                           std::vector<CounterTable> counters, const HardwareAlignOptions& o) {
  std::vector<RankActivity> acts(run.ranks.size());
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const RankSlot& s = run.ranks[i];
    if (s.ok)
      acts[i] = rank_activity(s.trace, s.rank);
    else
      acts[i].rank = s.rank;
  }
  HardwareRun hw = align_telemetry(acts, std::move(telemetry), o);
  hw.counter_data = std::move(counters);
  const std::vector<size_t> slot = assign_counter_files(acts, hw.counter_data, hw.counters);
  for (size_t f = 0; f < hw.counter_data.size(); ++f)
    if (slot[f] != SIZE_MAX)
      join_counters(run.ranks[slot[f]].trace, hw.counter_data[f], hw.counters[f],
                    hw.ranks[slot[f]]);
  return hw;
}

}  // namespace chopper
