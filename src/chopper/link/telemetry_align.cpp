// Telemetry alignment: each telemetry file matched to its node, and the files of a node put on
// its ranks' trace clock at the offset where the traced activity best explains the recorded
// utilization and power (align_telemetry); and the window of samples worth reading
// (telemetry_window). Method: docs/metrics.md (Hardware / Alignment). Over 800 lines: the
// placements (correlation, recorder clock, nsys session) share the aligner's units and series.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "chopper/link/hardware_align.hpp"
#include "chopper/link/record_align.hpp"

namespace chopper {
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

// The sampling period a series gives its file: its median interval, but 0 for a cumulative
// counter (energy, link bytes), which chopper record reads only every --counter-interval-ms
// (500 ms against 10 ms for the rest); a file of counters alone takes theirs (period_fallback).
Ns file_period(const Series& s) {
  switch (s.metric) {
    case Metric::kEnergyJ:
    case Metric::kLinkTxBytes:
    case Metric::kLinkRxBytes:
    case Metric::kPcieTxBytes:
    case Metric::kPcieRxBytes:
      return 0;
    default:
      return median_interval(s);
  }
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
  bool recorder = false;            // chopper record's GPU files: placed by the recorder clock
  bool session = false;             // an Nsight Systems export's GPU metrics: the trace's clock
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

// The search for one unit's clock offset: its ranks' signals, the traced span [lo, hi] they
// cover, the recording's span [t_first, t_last], and the offsets tried.
struct OffsetSearch {
  std::vector<Pair> pairs;
  Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
  Ns t_first = std::numeric_limits<Ns>::max(), t_last = std::numeric_limits<Ns>::min();
  Ns period = 0;                      // T: the sample period (1 s when unknown)
  Ns near_range = 0, fine_range = 0;  // how far the refinement looks, near first
  std::vector<Ns> coarse;             // the candidates from what the file says

  double score_at(Ns c) const { return score(pairs, c, period, lo, hi); }
};

// Each rank's utilization and power series (a rank with neither is left out), into q; a.ranks,
// a.period_ns and a.clock from them. False (a.method says why) when no rank has one.
bool gather_signals(const Unit& u, TelemetryAlignment& a, const std::vector<RankInfo*>& ranks,
                    OffsetSearch& q) {
  for (RankInfo* r : ranks) {
    if (r->busy->empty()) continue;
    const Series* util = find_series(u, Metric::kUtilGpuPct, *r);
    const Series* power = find_series(u, Metric::kPowerW, *r);
    if (power == nullptr) power = find_series(u, Metric::kPowerAvgW, *r);
    const Series* sig = util != nullptr ? util : power;
    if (sig == nullptr) continue;
    a.ranks.push_back(r->rank);
    q.pairs.push_back({util, power, r});
    q.lo = std::min(q.lo, r->busy->first());
    q.hi = std::max(q.hi, r->busy->last());
    q.t_first = std::min(q.t_first, sig->t_ns.front());
    q.t_last = std::max(q.t_last, sig->t_ns.back());
    a.period_ns = std::max(a.period_ns, median_interval(*sig));
    a.clock = sig->clock;
  }
  if (q.pairs.empty()) {
    a.method = "none: no utilization or power series for this node's GPUs";
    return false;
  }
  q.period = a.period_ns > 0 ? a.period_ns : 1000000000;
  return true;
}

// Coarse candidates from what the file says (q.coarse), and the refinement's ranges. A file
// stamped on a wall clock is off by little (the time between reading a sample and stamping it,
// the hosts' clock sync): the refinement looks kNearPeriods periods (at least kNearMinNs) either
// side, and kFinePeriods (at least kFineMinNs) when nothing near correlates well. Near first: a
// training step repeats, so an offset of a whole step can correlate nearly as well as the true
// one. False (a.method says why) when no candidate can align the recording.
bool coarse_offsets(OffsetSearch& q, TelemetryAlignment& a, const HardwareAlignOptions& o) {
  const Ns T = q.period;
  q.near_range = std::max<Ns>(kNearPeriods * T, kNearMinNs);
  q.fine_range = std::max<Ns>(kFinePeriods * T, kFineMinNs);
  const Ns lo = q.lo, hi = q.hi, t_first = q.t_first, t_last = q.t_last, span = hi - lo;
  auto overlaps = [&](Ns c) {
    const Ns a0 = std::max(lo + c, t_first), a1 = std::min(hi + c, t_last);
    return a1 - a0 >= span / 2;
  };
  // On a wall clock whose offset is known (UTC, or local time in the zone given), the recording
  // must reach the traced span within the refinement's widest search, or nothing can align it.
  auto reaches = [&](Ns c, const char* clock) {
    if (t_first <= hi + c + q.fine_range && t_last >= lo + c - q.fine_range) return true;
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
    if (!reaches(0, "UTC")) return false;
    q.coarse.push_back(0);
    a.method = "utc+correlation";
  } else if (a.clock == ClockDomain::kRealtimeLocal) {
    if (o.utc_offset_known) {
      const Ns c = std::llround(o.utc_offset_h * 3600.0) * 1000000000LL;
      if (!reaches(c, "local (--telemetry-utc-offset)")) return false;
      q.coarse.push_back(c);
    } else {
      for (int k = -kQuarters; k <= kQuarters; ++k)
        if (overlaps(k * kQuarterNs)) q.coarse.push_back(k * kQuarterNs);
    }
    a.method = "zone+correlation";
  } else {
    // Origin unknown: every placement of the trace inside the recording, one period apart.
    const Ns from = t_first - hi, to = t_last - lo;
    const Ns step = std::max<Ns>(T, (to - from) / 200000);
    for (Ns c = from; c <= to; c += step) q.coarse.push_back(c);
    q.near_range = q.fine_range = step;
    a.method = "correlation";
  }
  if (q.coarse.empty()) {
    a.method = "none: the recording does not cover the traced time in any time zone";
    return false;
  }
  return true;
}

// The best-scoring coarse candidate, and how far apart the candidates the correlation cannot tell
// apart from it (within 0.05) are: 0 when one candidate only.
std::pair<Ns, Ns> best_coarse_offset(const OffsetSearch& q) {
  Ns best_c = q.coarse.front();
  double best = -3;
  Ns ambiguity = 0;
  if (q.coarse.size() > 1) {
    std::vector<double> sc(q.coarse.size());
    for (size_t i = 0; i < q.coarse.size(); ++i) {
      sc[i] = q.score_at(q.coarse[i]);
      if (sc[i] > best) best = sc[i], best_c = q.coarse[i];
    }
    for (size_t i = 0; i < q.coarse.size(); ++i)
      if (sc[i] >= best - 0.05) ambiguity = std::max(ambiguity, std::abs(q.coarse[i] - best_c));
  }
  return {best_c, ambiguity};
}

// Fine: around the coarse offset, in steps of a twentieth of the period; near first, then (when
// the best near score is below 0.9) the wide range, whose best is taken only if it beats the
// near one by 0.05. Sets a's offset, correlation and uncertainty.
void refine_offset(const OffsetSearch& q, Ns best_c, TelemetryAlignment& a) {
  const Ns T = q.period;
  const Ns step = std::max<Ns>(1000, T / 20);
  auto search = [&](Ns range) {
    std::vector<std::pair<Ns, double>> v;
    for (Ns dlt = -range; dlt <= range; dlt += step)
      v.push_back({best_c + dlt, q.score_at(best_c + dlt)});
    size_t b = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].second > v[b].second) b = i;
    return std::make_pair(std::move(v), b);
  };
  auto [fine, bi] = search(q.near_range);
  if (fine[bi].second < 0.9 && q.fine_range > q.near_range) {
    auto [wide, wb] = search(q.fine_range);
    if (wide[wb].second >= fine[bi].second + 0.05) {
      fine = std::move(wide);
      bi = wb;
      a.method += " (beyond the near range)";
    }
  }
  const double best = fine[bi].second;
  if (best < 0.2) {
    // Too little structure to tell offsets apart: keep what the file says.
    a.offset_ns = best_c;
    a.correlation = q.score_at(best_c);
    a.uncertainty_ns =
        a.clock == ClockDomain::kRealtimeUtc || a.clock == ClockDomain::kRealtimeLocal
            ? T
            : q.hi - q.lo;
    a.method += a.correlation <= -2
                    ? " (nothing to correlate: no sample varied; the file's clock used as is)"
                    : " (weak correlation: the file's clock used as is)";
    return;
  }
  a.offset_ns = fine[bi].first;
  a.correlation = best;
  // The offsets whose score is within 0.01 of the best cannot be told apart.
  size_t l = bi, r = bi;
  while (l > 0 && fine[l - 1].second >= best - 0.01) --l;
  while (r + 1 < fine.size() && fine[r + 1].second >= best - 0.01) ++r;
  a.uncertainty_ns = std::max<Ns>(step / 2, (fine[r].first - fine[l].first) / 2);
}

// One unit's clock offset: the offset at which the trace's activity best explains the recorded
// utilization and power (coarse candidates from the file's clock, then refined).
void align_one(const Unit& u, TelemetryAlignment& a, const std::vector<RankInfo*>& ranks,
               const HardwareAlignOptions& o) {
  OffsetSearch q;
  if (!gather_signals(u, a, ranks, q) || !coarse_offsets(q, a, o)) return;
  const auto [best_c, ambiguity] = best_coarse_offset(q);
  refine_offset(q, best_c, a);
  if (ambiguity > 0) {
    a.uncertainty_ns = std::max(a.uncertainty_ns, ambiguity);
    a.method += " (ambiguous: other offsets correlate as well; give --telemetry-utc-offset)";
  }
  for (const Pair& p : q.pairs) a.samples += (p.util != nullptr ? p.util : p.power)->size();
  // A score of -2 says nothing varied: no correlation (NULL), never a number outside [-1, 1].
  if (!(a.correlation >= -1.0)) a.correlation = std::nan("");
  a.correlation = std::min(a.correlation, 1.0);
}

// A unit of chopper record's GPU files: offset 0 (CLOCK_REALTIME, the trace's clock), uncertainty
// T/2; still checked: the correlation at 0 is the row's, and the search the other methods run says
// when the activity clearly prefers another offset (offset 0 kept; docs/metrics.md).
constexpr double kClearlyBetter = 0.05;
// `clock_note`: the recorder clock's drift or step (record_meta.hpp).
void align_recorder(const Unit& u, TelemetryAlignment& a, const std::vector<RankInfo*>& ranks,
                    const HardwareAlignOptions& o, const std::string& clock_note) {
  OffsetSearch q;
  if (!gather_signals(u, a, ranks, q) || !coarse_offsets(q, a, o)) return;
  const Ns T = q.period;
  a.method = "recorder clock";
  a.offset_ns = 0;
  a.uncertainty_ns = T / 2;
  const double at_zero = q.score_at(0);
  a.correlation = at_zero;
  TelemetryAlignment best;
  best.clock = a.clock;
  refine_offset(q, 0, best);
  const double r0 = at_zero >= -1.0 ? at_zero : -1.0;
  if (best.correlation >= -1.0 && std::abs(best.offset_ns) > a.uncertainty_ns + T &&
      best.correlation >= r0 + kClearlyBetter) {
    a.method += fmt::format(
        " (disagrees with the activity: best offset {:.3f} ms, r={:.2f}, vs r={} at 0; offset 0 "
        "kept)",
        static_cast<double>(best.offset_ns) * 1e-6, std::min(best.correlation, 1.0),
        at_zero >= -1.0 ? fmt::format("{:.2f}", at_zero) : std::string("none"));
  } else if (!(at_zero >= -1.0)) {
    a.method += " (nothing to correlate: no sample varied)";
  }
  if (!clock_note.empty()) a.method += " (recorder clock suspect: " + clock_note + ")";
  for (const Pair& p : q.pairs) a.samples += (p.util != nullptr ? p.util : p.power)->size();
  if (!(a.correlation >= -1.0)) a.correlation = std::nan("");
  a.correlation = std::min(a.correlation, 1.0);
}

// A unit of an Nsight Systems export's GPU metrics: sampled in the session that traced its ranks,
// on the same clock, so placed at offset 0 exactly (no search); the correlation at 0 is the row's
// when a GPU has GR Active (util_gpu_pct) and its activity varies.
void align_session(const Unit& u, TelemetryAlignment& a, const std::vector<RankInfo*>& ranks) {
  a.method = "trace clock (nsys session)";
  a.offset_ns = 0;
  a.uncertainty_ns = 0;
  std::vector<bool> used(u.series.size(), false);
  Ns counters_period = 0;  // the period of cumulative counters alone
  for (RankInfo* r : ranks) {
    bool any = false;
    for (size_t k = 0; k < u.series.size(); ++k) {
      const Series& se = *u.series[k];
      if (se.size() == 0 || !describes(se, *r, u.single_gpu)) continue;
      any = true;
      used[k] = true;
      a.clock = se.clock;
      a.period_ns = std::max(a.period_ns, file_period(se));
      counters_period = std::max(counters_period, median_interval(se));
    }
    if (any) a.ranks.push_back(r->rank);
  }
  if (a.period_ns == 0) a.period_ns = counters_period;
  if (a.ranks.empty()) {
    a.method = "none: the export's GPU metrics are of no GPU its ranks ran on";
    return;
  }
  for (size_t k = 0; k < u.series.size(); ++k)
    if (used[k]) a.samples += u.series[k]->size();
  OffsetSearch q;
  TelemetryAlignment scratch;
  if (gather_signals(u, scratch, ranks, q)) {
    const double r0 = q.score_at(0);
    if (r0 >= -1.0) a.correlation = std::min(r0, 1.0);
  }
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

namespace {

// The telemetry of a run aligned pass by pass (align_telemetry below): the ranks placed on nodes,
// the files on nodes, what each file says of itself, the files that conflict, the alignment units,
// then each unit aligned and its series given to its node's ranks.
class TelemetryAligner {
 public:
  TelemetryAligner(const std::vector<RankActivity>& ranks, HardwareRun& hw,
                   const HardwareAlignOptions& o)
      : ranks_(ranks), hw_(hw), o_(o), info_(ranks.size()) {}

  void run() {
    place_ranks();
    place_files_on_nodes();
    read_file_facts();
    refuse_conflicting_files();
    for (auto& [key, u] : group_units()) align_unit(std::get<0>(key), u);
  }

 private:
  using UnitKey = std::tuple<int64_t, std::string, int>;  // node, format, clock

  // Ranks: their GPU (the most common device of their activities) and node, gpu_per_node_ GPUs
  // to a node (the most any rank's metadata lists or its device index needs).
  void place_ranks() {
    hw_.ranks.resize(ranks_.size());
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const RankActivity& a = ranks_[i];
      hw_.ranks[i].rank = a.rank;
      if (!a.ok) continue;
      RankInfo& r = info_[i];
      r.rank = a.rank;
      r.act = &a;
      r.device = a.device;
      hw_.ranks[i].device = r.device;
      r.busy = &a.busy;
      r.compute = &a.compute;
      r.other = &a.other;
      gpu_per_node_ = std::max<int64_t>(gpu_per_node_, a.devices);
      gpu_per_node_ = std::max<int64_t>(gpu_per_node_, r.device + 1);
    }
    if (gpu_per_node_ <= 0) gpu_per_node_ = 1;
    for (RankInfo& r : info_)
      if (r.rank >= 0) r.node = r.rank / gpu_per_node_;
  }

  // The node of the first rank a file's series name (Zeus), -1 if none.
  int64_t named_rank_node(const TelemetryData& d) const {
    for (const Series& s : d.series)
      if (s.gpu.rank >= 0) {
        for (const RankInfo& r : info_)
          if (r.rank == s.gpu.rank) return r.node;
        return s.gpu.rank / gpu_per_node_;  // a rank with no readable trace: its node all the same
      }
    return -1;
  }

  // Telemetry files -> nodes: the node of the rank a file names (Zeus), else the number in the
  // file name, else the free nodes in file order.
  void place_files_on_nodes() {
    order_.resize(hw_.telemetry_data.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
      return hw_.telemetry_data[a].file < hw_.telemetry_data[b].file;
    });
    hw_.telemetry.resize(hw_.telemetry_data.size());
    std::vector<bool> taken;
    auto take = [&](int64_t n) {
      if (n < 0) return;
      if (static_cast<size_t>(n) >= taken.size()) taken.resize(static_cast<size_t>(n) + 1, false);
      taken[static_cast<size_t>(n)] = true;
    };
    rec_ = recorded_host_ranks(ranks_, hw_.telemetry_data);
    for (size_t i : order_) {
      TelemetryAlignment& t = hw_.telemetry[i];
      t.file = hw_.telemetry_data[i].file;
      t.format = hw_.telemetry_data[i].format;
      t.node = !rec_.ranks[i].empty() ? info_[rec_.ranks[i].front()].node
                                      : named_rank_node(hw_.telemetry_data[i]);
      if (t.node < 0) t.node = node_from_file_name(hw_.telemetry_data[i].file);
      take(t.node);
    }
    int64_t next = 0;
    for (size_t i : order_) {
      if (hw_.telemetry[i].node >= 0) continue;
      while (static_cast<size_t>(next) < taken.size() && taken[static_cast<size_t>(next)]) ++next;
      hw_.telemetry[i].node = next;
      take(next);
    }
  }

  // What each file says of itself (its clock and period are its own, placed or not). One GPU's
  // metric, however a file names the GPU: a rank the file names is its GPU's index when its
  // trace says it, so a Zeus file of rank 3 and an nvidia-smi file's GPU 3 meet.
  void read_file_facts() {
    std::unordered_map<int64_t, int32_t> device_of_rank;
    for (const RankInfo& r : info_)
      if (r.rank >= 0 && r.device >= 0) device_of_rank[r.rank] = r.device;
    auto gpu_key = [&](const Series& se) -> SeriesKey {
      if (se.gpu.rank >= 0)
        if (auto it = device_of_rank.find(se.gpu.rank); it != device_of_rank.end())
          return {-1, it->second, static_cast<int>(se.metric)};
      return series_key(se);
    };
    facts_.resize(hw_.telemetry_data.size());
    for (size_t f = 0; f < facts_.size(); ++f) {
      FileFacts& ff = facts_[f];
      Ns counters_period = 0;  // the period of a file of cumulative counters alone
      for (const Series& se : hw_.telemetry_data[f].series) {
        if (se.size() == 0) continue;
        ff.clock = se.clock;
        ff.period_ns = std::max(ff.period_ns, file_period(se));
        counters_period = std::max(counters_period, median_interval(se));
        ff.first = std::min(ff.first, se.t_ns.front());
        ff.last = std::max(ff.last, se.t_ns.back());
        ff.keys.insert(gpu_key(se));
      }
      if (ff.period_ns == 0) ff.period_ns = counters_period;
      hw_.telemetry[f].clock = ff.clock;
      hw_.telemetry[f].period_ns = ff.period_ns;
    }
  }

  // Two files of one node holding one GPU's metric: one recording split in time (one tool, one
  // clock, spans apart) is put together; anything else (two tools, or samples of one time twice)
  // cannot tell which to believe, and neither file is used.
  void refuse_conflicting_files() {
    conflict_.assign(hw_.telemetry_data.size(), std::string());
    std::map<int64_t, std::vector<size_t>> files_of_node;
    for (size_t f : order_) files_of_node[hw_.telemetry[f].node].push_back(f);
    for (const auto& [nd, fs] : files_of_node)
      for (size_t x = 0; x < fs.size(); ++x)
        for (size_t y = x + 1; y < fs.size(); ++y) refuse_if_conflicting(fs[x], fs[y]);
    for (size_t f = 0; f < conflict_.size(); ++f)
      if (!conflict_[f].empty()) hw_.telemetry[f].method = conflict_[f];
  }

  void refuse_if_conflicting(size_t f, size_t g) {
    // Hosts chopper record recorded: their ranks are told by process id, not node.
    if (!rec_.ranks[f].empty() && !rec_.ranks[g].empty()) return;
    const FileFacts &a = facts_[f], &b = facts_[g];
    std::string shared;
    size_t n_shared = 0;
    for (const SeriesKey& k : a.keys)
      if (b.keys.count(k) > 0 && n_shared++ == 0)
        shared = fmt::format("{} {} {}", std::get<0>(k) >= 0 ? "rank" : "GPU",
                             std::get<0>(k) >= 0 ? std::get<0>(k) : std::get<1>(k),
                             metric_name(static_cast<Metric>(std::get<2>(k))));
    if (n_shared == 0) return;
    const TelemetryData &df = hw_.telemetry_data[f], &dg = hw_.telemetry_data[g];
    const bool apart = a.last < b.first || b.last < a.first;
    if (df.format == dg.format && a.clock == b.clock && apart) return;  // merged in the unit
    const std::string why =
        df.format != dg.format ? fmt::format("{} and {} files", df.format, dg.format)
        : a.clock != b.clock   ? fmt::format("{} and {} clocks", clock_domain_name(a.clock),
                                             clock_domain_name(b.clock))
                               : std::string("their samples overlap in time");
    const int64_t node = hw_.telemetry[f].node;
    hw_.errors.push_back(fmt::format(
        "{} and {}: two telemetry files for the GPUs of node {} ({}{}; {}): neither is used; "
        "give one file per node, or one recording split in time "
        "(docs/telemetry_formats.md)",
        df.file, dg.file, node, shared,
        n_shared > 1 ? fmt::format(" and {} more series", n_shared - 1) : std::string(), why));
    for (const auto& [me, other] : {std::pair{f, g}, std::pair{g, f}})
      if (conflict_[me].empty())
        conflict_[me] = fmt::format("none: {} also describes node {}'s GPUs ({}); neither is used",
                                    hw_.telemetry_data[other].file, node, why);
  }

  // Units: the files of one node, format and clock are aligned together (a Zeus sampler writes
  // one file per metric and GPU: the energy or link counters of a GPU carry no signal of their
  // own to place them, its power file does, and all were stamped by the same host clock; one
  // recording split into files is one unit, each GPU's metric put together in time order).
  std::map<UnitKey, Unit> group_units() const {
    std::map<UnitKey, Unit> units;
    for (size_t f : order_) {
      if (!conflict_[f].empty()) continue;
      const TelemetryData& d = hw_.telemetry_data[f];
      const bool rec = !rec_.ranks[f].empty();  // a recorded host: a unit of its own
      Unit& u = units[{hw_.telemetry[f].node, rec ? d.format + "\x1f" + d.recorder.host : d.format,
                       static_cast<int>(facts_[f].clock)}];
      u.files.push_back(f);
      u.recorder = d.format == "chopper-record";
      u.session = d.format == "nsys-gpu-metrics";
    }
    return units;
  }

  // A unit's series: one series of a metric from each of several files put together (a file's
  // own series of one metric after a clock reset stay apart, each on its own clock, as from one
  // file).
  void merge_unit_series(Unit& u) const {
    std::map<SeriesKey, std::vector<std::pair<size_t, const Series*>>> by_key;
    for (size_t f : u.files)
      for (const Series& se : hw_.telemetry_data[f].series)
        by_key[series_key(se)].push_back({f, &se});
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
  }

  // Whether rank i is one the unit describes: a recorded host's (its first file's), else its
  // node's.
  bool unit_has_rank(int64_t node, const Unit& u, size_t i) const {
    if (info_[i].rank < 0) return false;
    const std::vector<size_t>& rec = rec_.ranks[u.files.front()];
    if (!rec.empty()) return std::find(rec.begin(), rec.end(), i) != rec.end();
    return info_[i].node == node;
  }

  void align_unit(int64_t node, Unit& u) {
    merge_unit_series(u);
    std::vector<RankInfo*> node_ranks;
    for (size_t i = 0; i < info_.size(); ++i)
      if (unit_has_rank(node, u, i)) node_ranks.push_back(&info_[i]);
    TelemetryAlignment a;
    if (node_ranks.empty()) {
      int64_t last_node = -1;
      for (const RankInfo& r : info_) last_node = std::max(last_node, r.node);
      a.method = last_node < 0 ? fmt::format("none: no ranks on node {} (no readable trace)", node)
                               : fmt::format(
                                     "none: no ranks on node {} (the traces' ranks are on "
                                     "nodes 0 to {})",
                                     node, last_node);
    } else if (u.session) {
      align_session(u, a, node_ranks);
    } else if (u.recorder) {
      align_recorder(u, a, node_ranks, o_, hw_.telemetry_data[u.files.front()].recorder.clock_note);
    } else {
      align_one(u, a, node_ranks, o_);
    }
    if (!rec_.notes[u.files.front()].empty()) a.method += " (" + rec_.notes[u.files.front()] + ")";
    for (size_t f : u.files) record_file_alignment(f, node, u, a, node_ranks);
    if (a.aligned()) give_series_to_ranks(node, u, a);
  }

  // A file of the unit gets the unit's alignment, keeping what it says of itself; of a unit of
  // several files, only the ranks and samples the file itself describes.
  void record_file_alignment(size_t f, int64_t node, const Unit& u, const TelemetryAlignment& a,
                             const std::vector<RankInfo*>& node_ranks) {
    TelemetryAlignment& fa = hw_.telemetry[f];
    const std::string file = fa.file, format = fa.format;
    const ClockDomain clock = fa.clock;
    const Ns period = fa.period_ns;
    fa = a;
    fa.file = file;
    fa.format = format;
    fa.node = node;
    fa.clock = clock;
    fa.period_ns = period;
    if (u.files.size() <= 1) return;
    fa.ranks.clear();
    fa.samples = 0;
    for (RankInfo* r : node_ranks) {
      bool any = false;
      for (const Series& se : hw_.telemetry_data[f].series)
        if (describes(se, *r, u.single_gpu)) any = true;
      if (any && std::find(a.ranks.begin(), a.ranks.end(), r->rank) != a.ranks.end())
        fa.ranks.push_back(r->rank);
    }
    if (fa.aligned())
      for (const Series& se : hw_.telemetry_data[f].series) fa.samples += se.size();
  }

  // The node's ranks get their GPU's series, shifted onto the trace clock. Only the samples
  // around the traced span are kept: the analyses look at nothing else, and a recording may run
  // for hours around a profile of seconds.
  void give_series_to_ranks(int64_t node, const Unit& u, const TelemetryAlignment& a) {
    for (size_t i = 0; i < info_.size(); ++i) {
      if (!unit_has_rank(node, u, i) || info_[i].busy->empty()) continue;
      RankHardware& rh = hw_.ranks[i];
      const Ns margin = margin_ns(info_[i].busy->last() - info_[i].busy->first());
      const Ns lo = info_[i].busy->first() - margin, hi = info_[i].busy->last() + margin;
      for (size_t k = 0; k < u.series.size(); ++k) {
        const Series& se = *u.series[k];
        if (!describes(se, info_[i], u.single_gpu)) continue;
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

  const std::vector<RankActivity>& ranks_;
  HardwareRun& hw_;
  const HardwareAlignOptions& o_;
  std::vector<RankInfo> info_;         // parallel to ranks_
  int64_t gpu_per_node_ = 0;           // GPUs per node
  std::vector<size_t> order_;          // the telemetry files by name
  std::vector<FileFacts> facts_;       // parallel to hw_.telemetry_data
  std::vector<std::string> conflict_;  // per file: why it is not used ("" = it is)
  RecordedRanks rec_;  // chopper record's files: their ranks (indices into info_) and notes
};

}  // namespace

HardwareRun align_telemetry(const std::vector<RankActivity>& ranks,
                            std::vector<TelemetryData> telemetry, const HardwareAlignOptions& o) {
  HardwareRun hw;
  hw.telemetry_data = std::move(telemetry);
  TelemetryAligner(ranks, hw, o).run();
  return hw;
}

}  // namespace chopper
