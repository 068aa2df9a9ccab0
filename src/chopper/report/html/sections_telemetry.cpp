// The telemetry figures of `chopper report` (hardware section): power, clock and temperature per
// GPU over time (a line per GPU, or quantile bands over the GPUs above kLineRanks), the same as
// GPU × time heatmaps with iteration boundaries and throttle reasons, memory clock, memory
// temperature and utilization, power bursts per iteration, link bandwidth over time and bus
// bandwidth against message size. Everything drawn is a table value, a mean of table values in a
// time bin, or the difference of a cumulative counter's consecutive samples (docs/report.md).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/devices/device_db.hpp"
#include "chopper/model/series.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {

namespace {

// Above this many GPUs a per-GPU line figure is drawn as quantile bands over the GPUs (lines
// would overlap and their colours repeat).
constexpr size_t kLineRanks = 8;

// The device the report names (its marketing name, as analyze stores it), or null.
const DeviceSpec* report_device(const ReportInfo& info) {
  if (info.device.empty()) return nullptr;
  for (const DeviceSpec* d : all_devices())
    if (d->marketing_name == info.device || d->name == info.device) return d;
  return find_device(info.device);
}

// One GPU's samples of one metric (or values derived from them), in table order.
struct Samples {
  std::vector<int64_t> t;
  std::vector<double> v;
};
using PerRank = std::map<int64_t, Samples>;

PerRank samples_of(const View<kTelemetryTable>& t, const std::vector<size_t>& rows) {
  PerRank per;
  Samples* s = nullptr;
  int64_t rank = 0;
  for (size_t r : rows) {
    const int64_t rk = t.i(r, "rank");
    if (s == nullptr || rk != rank) s = &per[rk], rank = rk;  // a rank's rows come together
    s->t.push_back(t.i(r, "t_ns"));
    s->v.push_back(t.d(r, "value"));
  }
  return per;
}

// Bytes/s of a cumulative byte counter: each pair of consecutive samples (later time, counter
// not decreasing) gives (Δbytes / Δt) at the later sample's time.
PerRank rates_of(const PerRank& counters) {
  PerRank out;
  for (const auto& [rank, s] : counters) {
    Samples& o = out[rank];
    for (size_t j = 1; j < s.t.size(); ++j)
      if (s.t[j] > s.t[j - 1] && s.v[j] >= s.v[j - 1]) {
        o.t.push_back(s.t[j]);
        o.v.push_back((s.v[j] - s.v[j - 1]) / (static_cast<double>(s.t[j] - s.t[j - 1]) * 1e-9));
      }
    if (o.t.empty()) out.erase(rank);
  }
  return out;
}

// A line chart of per-GPU series: a line per GPU up to kLineRanks GPUs, else each GPU's values
// averaged in 200 time bins and the min, quartiles and max over the GPUs per bin (band_csv gets
// them as CSV).
Lines rank_lines(const PerRank& per, const std::string& metric, const std::string& y_label,
                 double y_scale, const TimeAxis& ax, std::string& band_csv) {
  const int64_t origin = ax.origin;
  Lines l;
  l.x_label = "time since the first iteration's start (s)";
  l.y_label = y_label;
  l.x_scale = 1e9;
  l.y_scale = y_scale;
  l.markers = ax.marks;
  band_csv.clear();
  if (per.size() <= kLineRanks) {
    for (const auto& [rk, s] : per) {
      Line line;
      line.name = fmt::format("rank {}", rk);
      line.attrs = fmt::format(" data-rank=\"{}\" data-metric=\"{}\"", rk, esc(metric));
      line.color = l.lines.size();
      for (size_t k = 0; k < s.t.size(); ++k) {
        line.x.push_back(static_cast<double>(s.t[k] - origin));
        line.xi.push_back(s.t[k]);
        line.y.push_back(s.v[k]);
      }
      l.lines.push_back(std::move(line));
    }
    return l;
  }
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& kv : per)
    for (int64_t t : kv.second.t) {
      const double rel = static_cast<double>(t - origin);
      lo = std::min(lo, rel), hi = std::max(hi, rel);
    }
  const size_t bins = 200;
  const double width = std::max(1.0, (hi - lo) / static_cast<double>(bins));
  std::vector<std::vector<std::pair<double, double>>> acc;  // [rank][bin] (sum, n)
  for (const auto& kv : per) {
    auto& v = acc.emplace_back(bins);
    for (size_t k = 0; k < kv.second.t.size(); ++k) {
      const double rel = static_cast<double>(kv.second.t[k] - origin);
      const size_t b = std::min(bins - 1, static_cast<size_t>((rel - lo) / width));
      v[b].first += kv.second.v[k], v[b].second += 1;
    }
  }
  Band band;
  band.name = fmt::format("median of {} GPUs", per.size());
  band.attrs = fmt::format(" data-metric=\"{}\" data-ranks=\"{}\" data-origin-ns=\"{}\"",
                           esc(metric), per.size(), origin);
  for (size_t k = 0; k < bins; ++k) {
    std::vector<double> v;
    for (const auto& a : acc)
      if (a[k].second > 0) v.push_back(a[k].first / a[k].second);
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    band.x.push_back(lo + width * (static_cast<double>(k) + 0.5));
    band.lo.push_back(v.front()), band.q1.push_back(quantile(v, 0.25));
    band.med.push_back(quantile(v, 0.5)), band.q3.push_back(quantile(v, 0.75));
    band.hi.push_back(v.back());
  }
  Csv bc({"metric", "t_ns", "min", "q1", "median", "q3", "max"});
  for (size_t k = 0; k < band.x.size(); ++k)
    bc.add({metric, std::to_string(static_cast<int64_t>(band.x[k]) + origin), num(band.lo[k]),
            num(band.q1[k]), num(band.med[k]), num(band.q3[k]), num(band.hi[k])});
  band_csv = bc.text;
  l.bands.push_back(std::move(band));
  return l;
}

std::string band_note(size_t gpus) {
  return fmt::format(
      " With {} GPUs (more than {}) each GPU's values are averaged in 200 time bins; the bands "
      "show the min–max and p25–p75 over the GPUs, the line their median.",
      gpus, kLineRanks);
}

// The first of `metrics` the telemetry has, or "".
std::string first_metric(const std::map<std::string, std::vector<size_t>>& by_metric,
                         const std::vector<std::string>& metrics) {
  for (const std::string& m : metrics)
    if (by_metric.count(m)) return m;
  return {};
}

// The largest value of a series map (−inf when empty).
double largest(const PerRank& per) {
  double m = -std::numeric_limits<double>::infinity();
  for (const auto& kv : per)
    for (double v : kv.second.v) m = std::max(m, v);
  return m;
}

// What a figure's value axis or colour scale is anchored at: 0 and the device's limit when known
// (the data's largest value when that is larger, or no limit is known).
struct Anchor {
  double lo = 0, hi = 1;
  std::string lo_name, hi_name, words;
};
Anchor anchor_at(double lo, const std::string& lo_words, double limit,
                 const std::string& limit_words, double data_max, const std::string& unit) {
  Anchor a;
  const std::string u = unit.empty() ? std::string() : " " + unit;
  a.lo = lo;
  a.lo_name = label_num(lo) + u;
  const std::string from =
      a.lo_name + (lo_words.empty() ? std::string() : " (" + lo_words + ")") + " to ";
  if (!std::isnan(limit) && limit > 0 && !(data_max > limit)) {
    a.hi = limit;
    a.hi_name = label_num(limit) + u;
    a.words = from + fmt::format("{} ({})", a.hi_name, limit_words);
  } else {
    a.hi = data_max > lo ? data_max : lo + 1;
    a.hi_name = label_num(a.hi) + u;
    a.words = from + a.hi_name +
              (std::isnan(limit) ? std::string(", the largest value (no limit known)")
                                 : fmt::format(", the largest value, above the {} ({}{})",
                                               limit_words, label_num(limit), u));
  }
  return a;
}

// One metric's per-GPU line (or band) figure: fig-power, fig-clock, fig-temp.
struct LineSpec {
  const char* id;
  std::vector<std::string> metrics;  // the first present is drawn
  const char* title;
  const char* label;
};

void line_figure(Doc& doc, const View<kTelemetryTable>& t,
                 const std::map<std::string, std::vector<size_t>>& by_metric, const LineSpec& sp,
                 const TimeAxis& ax, const Anchor& anchor) {
  const std::string metric = first_metric(by_metric, sp.metrics);
  if (metric.empty()) return;
  const std::vector<size_t>& rows = by_metric.at(metric);
  const PerRank per = samples_of(t, rows);
  std::string band_csv;
  Lines l = rank_lines(per, metric, sp.label, 1, ax, band_csv);
  l.y_min = anchor.lo;
  l.y_max = anchor.hi;
  doc.figure(
      {sp.id, "telemetry", sp.title, lines(l),
       fmt::format("The {} samples of each GPU (telemetry, metric {}) on the rank's trace "
                   "clock; vertical lines mark the iteration boundaries of rank {} "
                   "(temporal_breakdown). Value axis from {}.{}",
                   metric, metric, ax.low_rank, anchor.words,
                   band_csv.empty() ? std::string() : band_note(per.size())),
       "Alignment", band_csv.empty() ? csv_of(t.table(), rows) : band_csv,
       band_csv.empty() ? std::string() : "the bands drawn; the samples are in chopper.sqlite"});
}

// The time bins of the heatmaps: the telemetry's span cut into bins no shorter than the longest
// sampling period (so that a GPU has a sample in each bin), at most 120, fewer with many GPUs.
struct Grid {
  int64_t t0 = 0, bin_ns = 1;
  size_t bins = 1;
};

Grid time_grid(const TableStore& ts, const View<kTelemetryTable>& t, size_t gpus) {
  Grid g;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (size_t r = 0; r < t.rows(); ++r)
    lo = std::min(lo, t.i(r, "t_ns")), hi = std::max(hi, t.i(r, "t_ns"));
  const View<kTelemetryAlignmentTable> al(ts);
  int64_t period = 1;
  for (size_t r = 0; r < al.rows(); ++r)
    if (!al.null(r, "period_ns")) period = std::max(period, al.i(r, "period_ns"));
  const int64_t span = hi - lo + 1;
  const size_t cap = std::clamp<size_t>(4000 / std::max<size_t>(gpus, 1), 40, 120);
  g.t0 = lo;
  g.bins = std::clamp<size_t>(static_cast<size_t>(span / period), 1, cap);
  g.bin_ns = std::max<int64_t>(
      1, (span + static_cast<int64_t>(g.bins) - 1) / static_cast<int64_t>(g.bins));
  return g;
}

// Each rank's node, from telemetry_alignment (the file that describes its GPU); −1 = unknown.
std::map<int64_t, int64_t> rank_nodes(const TableStore& ts) {
  const View<kTelemetryAlignmentTable> al(ts);
  std::map<int64_t, int64_t> out;
  for (size_t r = 0; r < al.rows(); ++r) {
    if (al.null(r, "ranks")) continue;
    const std::string s = al.s(r, "ranks");
    size_t at = 0;
    while (at < s.size()) {
      size_t end = s.find(',', at);
      if (end == std::string::npos) end = s.size();
      const std::string part = s.substr(at, end - at);
      if (!part.empty() && std::isdigit(static_cast<unsigned char>(part[0])))
        out.emplace(std::stoll(part), al.i(r, "node"));
      at = end + 1;
    }
  }
  return out;
}

// The names of a throttle mask's bits, comma-separated.
std::string throttle_names(uint32_t mask) {
  std::string s;
  for (uint32_t b = 1; b != 0; b <<= 1)
    if (mask & b) {
      const std::string_view n = throttle_bit_name(b);
      s += (s.empty() ? "" : ", ") + (n.empty() ? fmt::format("0x{:x}", b) : std::string(n));
    }
  return s;
}

struct HeatSpec {
  const char* id;
  std::vector<std::string> metrics;
  const char* title;
  const char* label;  // value with unit
  bool low_is_worse;  // a folded row shows its lowest GPU (clocks), else its highest
};

// Above this many GPUs the GPU × time heatmaps draw a row per node (or per block of GPUs) instead
// of a row per GPU: 1,024 rows were 3,500 px tall and 8 MB a figure.
constexpr size_t kHeatRows = 128;

// One GPU's row of a GPU × time heatmap: per bin, the mean of its samples (NaN: none), how many,
// and the throttle reasons other than idle OR-ed over the bin.
struct GpuRow {
  int64_t rank = 0, node = -1;
  std::vector<double> mean;
  std::vector<int64_t> samples;
  std::vector<uint32_t> mask;
};

// The GPUs' rows of one metric, grouped by node (unknown node last), by rank within a node.
std::vector<GpuRow> gpu_rows(const View<kTelemetryTable>& t,
                             const std::map<std::string, std::vector<size_t>>& by_metric,
                             const std::string& metric, const Grid& g,
                             const std::map<int64_t, int64_t>& nodes) {
  const PerRank per = samples_of(t, by_metric.at(metric));
  std::map<int64_t, std::vector<uint32_t>> thr;
  if (auto it = by_metric.find("throttle_reasons"); it != by_metric.end())
    for (size_t r : it->second) {
      const uint32_t m = static_cast<uint32_t>(t.d(r, "value")) & ~uint32_t{kThrottleGpuIdle};
      auto& v = thr[t.i(r, "rank")];
      v.resize(g.bins);
      v[static_cast<size_t>((t.i(r, "t_ns") - g.t0) / g.bin_ns)] |= m;
    }
  std::vector<GpuRow> rows;
  for (const auto& [rk, smp] : per) {
    GpuRow row;
    row.rank = rk;
    if (auto n = nodes.find(rk); n != nodes.end()) row.node = n->second;
    std::vector<double> sum(g.bins);
    row.samples.assign(g.bins, 0);
    for (size_t k = 0; k < smp.t.size(); ++k) {
      const size_t b = static_cast<size_t>((smp.t[k] - g.t0) / g.bin_ns);
      sum[b] += smp.v[k], row.samples[b] += 1;
    }
    for (size_t b = 0; b < g.bins; ++b)
      row.mean.push_back(row.samples[b] > 0 ? sum[b] / static_cast<double>(row.samples[b])
                                            : std::nan(""));
    const auto th = thr.find(rk);
    row.mask = th != thr.end() ? th->second : std::vector<uint32_t>(g.bins, 0);
    rows.push_back(std::move(row));
  }
  auto key = [](const GpuRow& r) {
    return std::pair(r.node < 0 ? std::numeric_limits<int64_t>::max() : r.node, r.rank);
  };
  std::sort(rows.begin(), rows.end(),
            [&](const GpuRow& a, const GpuRow& b) { return key(a) < key(b); });
  return rows;
}

// Consecutive GPU rows drawn as one row: [first, last) of the sorted rows.
struct Fold {
  size_t first = 0, last = 0;
};

// The folds of n sorted rows into at most kHeatRows: a fold per node when every GPU's node is
// known and there are at most kHeatRows nodes, else blocks of ⌈n / kHeatRows⌉ consecutive GPUs;
// a fold per row up to kHeatRows rows.
std::vector<Fold> heat_folds(const std::vector<GpuRow>& rows) {
  std::vector<Fold> f;
  const size_t n = rows.size();
  if (n <= kHeatRows) {
    for (size_t i = 0; i < n; ++i) f.push_back({i, i + 1});
    return f;
  }
  size_t node_folds = 0;
  bool known = true;
  for (size_t i = 0; i < n; ++i) {
    known = known && rows[i].node >= 0;
    node_folds += i == 0 || rows[i].node != rows[i - 1].node;
  }
  if (known && node_folds <= kHeatRows) {
    for (size_t i = 0; i < n; ++i)
      if (i == 0 || rows[i].node != rows[i - 1].node)
        f.push_back({i, i + 1});
      else
        f.back().last = i + 1;
    return f;
  }
  const size_t k = (n + kHeatRows - 1) / kHeatRows;
  for (size_t i = 0; i < n; i += k) f.push_back({i, std::min(n, i + k)});
  return f;
}

std::string_view view(const fmt::format_int& f) {
  return {f.data(), f.size()};
}

void heatmap_figure(Doc& doc, const View<kTelemetryTable>& t,
                    const std::map<std::string, std::vector<size_t>>& by_metric, const HeatSpec& sp,
                    const TimeAxis& ax, const Grid& g, const Anchor& anchor,
                    const std::map<int64_t, int64_t>& nodes) {
  const std::string metric = first_metric(by_metric, sp.metrics);
  if (metric.empty()) {
    doc.empty_note(fmt::format("{}: no {} telemetry.", sp.id, sp.metrics.front()));
    return;
  }
  const std::vector<GpuRow> gpus = gpu_rows(t, by_metric, metric, g, nodes);
  const std::vector<Fold> folds = heat_folds(gpus);
  const bool folded = folds.size() < gpus.size();
  const char* worst = sp.low_is_worse ? "lowest" : "highest";
  TimeHeatmap h;
  h.row_label = folded ? "node · GPUs" : "node · rank";
  h.value_label = sp.label;
  h.x_label = "time since the first iteration's start (s)";
  h.lo = anchor.lo, h.hi = anchor.hi, h.lo_name = anchor.lo_name, h.hi_name = anchor.hi_name;
  h.t0_ns = g.t0, h.bin_ns = g.bin_ns, h.bins = g.bins;
  h.origin_ns = ax.origin;
  h.markers = ax.marks;
  h.attrs = fmt::format(" data-metric=\"{}\" data-t0-ns=\"{}\" data-bin-ns=\"{}\" data-bins=\"{}\"",
                        esc(metric), g.t0, g.bin_ns, g.bins);
  if (folded) h.attrs += fmt::format(" data-fold=\"{}\"", sp.low_is_worse ? "min" : "max");
  Csv csv = folded ? Csv({"ranks", "node", "gpus", "bin", "start_ns", "end_ns", worst, "at_rank",
                          "gpus_with_sample", "throttle_reasons"})
                   : Csv({"rank", "node", "bin", "start_ns", "end_ns", "mean", "samples",
                          "throttle_reasons"});
  bool flagged = false;
  std::map<uint32_t, std::pair<std::string, std::string>> mask_words;  // names, data attribute
  std::string rows_words = "Each row a GPU (rows grouped by node, telemetry_alignment)";
  for (const Fold& f : folds) {
    const GpuRow& a = gpus[f.first];
    const GpuRow& z = gpus[f.last - 1];
    const size_t n = f.last - f.first;
    const bool one_node = a.node >= 0 && a.node == z.node;
    if (folded && &f == &folds.front())
      rows_words = fmt::format(
          "{} GPUs, more than {}: each row {} (telemetry_alignment), each cell the {} of its "
          "GPUs' means (the GPU in the cell's tooltip and data-at-rank)",
          gpus.size(), kHeatRows, one_node ? "a node's GPUs" : fmt::format("a block of {} GPUs", n),
          worst);
    TimeRow row;
    if (!folded) {
      row.label = a.node >= 0 ? fmt::format("n{} r{}", a.node, a.rank) : fmt::format("r{}", a.rank);
      row.attrs = fmt::format(" data-rank=\"{}\" data-node=\"{}\"", a.rank, a.node);
    } else {
      row.label = one_node ? fmt::format("n{}", a.node) : fmt::format("r{}–r{}", a.rank, z.rank);
      row.attrs = fmt::format(" data-ranks=\"{}-{}\" data-node=\"{}\" data-gpus=\"{}\"", a.rank,
                              z.rank, one_node ? a.node : -1, n);
    }
    row.group = a.node;
    // the fold's CSV fields that every bin repeats
    const std::string ranks_s =
                          folded ? fmt::format("{}-{}", a.rank, z.rank) : std::to_string(a.rank),
                      node_s = one_node ? std::to_string(a.node) : std::string(),
                      gpus_s = std::to_string(n);
    for (size_t b = 0; b < g.bins; ++b) {
      // the row's value: the GPU's mean, or the worst of the fold's GPUs' means and whose it is
      double v = std::nan("");
      int64_t at = -1, with = 0;
      uint32_t m = 0;
      for (size_t i = f.first; i < f.last; ++i) {
        const GpuRow& r = gpus[i];
        m |= r.mask[b];
        if (r.samples[b] == 0) continue;
        ++with;
        if (std::isnan(v) || (sp.low_is_worse ? r.mean[b] < v : r.mean[b] > v))
          v = r.mean[b], at = r.rank;
      }
      row.values.push_back(v);
      if (folded) row.at_rank.push_back(at);
      if (m != 0) {  // a few distinct masks: named once each
        auto it = mask_words.find(m);
        if (it == mask_words.end())
          it = mask_words
                   .emplace(m, std::pair(throttle_names(m), fmt::format(" data-mask=\"{}\"", m)))
                   .first;
        row.flags.push_back(it->second.first);
        row.flag_attrs.push_back(it->second.second);
      } else {
        row.flags.emplace_back();
        row.flag_attrs.emplace_back();
      }
      flagged = flagged || m != 0;
      if (!std::isnan(v) || m != 0) {
        const fmt::format_int start(g.t0 + static_cast<int64_t>(b) * g.bin_ns),
            end(g.t0 + static_cast<int64_t>(b + 1) * g.bin_ns), bin(b), at_s(at), with_s(with),
            samples_s(a.samples[b]);
        const std::string value = num(v);
        const std::string_view reasons = m ? std::string_view(row.flags.back()) : "";
        if (folded)
          csv.add_views({ranks_s, node_s, gpus_s, view(bin), view(start), view(end), value,
                         at >= 0 ? view(at_s) : "", view(with_s), reasons});
        else
          csv.add_views({ranks_s, node_s, view(bin), view(start), view(end), value, view(samples_s),
                         reasons});
      }
    }
    h.rows.push_back(std::move(row));
  }
  if (flagged) h.flag_label = "throttle reason";
  doc.figure(
      {sp.id, "telemetry", sp.title, time_heatmap(h),
       fmt::format(
           "{}, each column {} of the run: the mean of the GPU's {} samples in it (telemetry; "
           "grey: no sample). Colour scale fixed from {}. {}Dashed lines: the iteration starts "
           "of rank {} (temporal_breakdown).",
           rows_words, ms_text(static_cast<double>(g.bin_ns)), metric, anchor.words,
           flagged ? "A dark bar under a cell: a throttle reason other than idle was active in "
                     "a sample of the bin (telemetry metric throttle_reasons; the reasons in "
                     "its tooltip). "
                   : (by_metric.count("throttle_reasons")
                          ? "No throttle reason other than idle was recorded. "
                          : "The telemetry has no throttle reasons. "),
           ax.low_rank),
       "Alignment", csv.text, "the bins drawn; the samples are in chopper.sqlite"});
}

// A panel of a figure with several charts: a chart with a key the test finds it by.
std::string panel(const std::string& attrs, const std::string& svg) {
  return "<div class=\"panel\"" + attrs + ">" + svg + "</div>";
}

void memory_figure(Doc& doc, const View<kTelemetryTable>& t,
                   const std::map<std::string, std::vector<size_t>>& by_metric, const TimeAxis& ax,
                   const DeviceSpec* dev) {
  struct P {
    const char* metric;
    const char* label;
    double limit;
    const char* limit_words;
  };
  const double mem_clock = dev != nullptr && dev->mem_clock_mhz > 0
                               ? static_cast<double>(dev->mem_clock_mhz)
                               : std::nan("");
  const P ps[] = {{"mem_clock_mhz", "memory clock (MHz)", mem_clock, "the device's memory clock"},
                  {"temp_mem_c", "memory temperature (°C)", NAN, ""},
                  {"util_gpu_pct", "GPU utilization (%)", 100, "all of the window"},
                  {"util_mem_pct", "memory-controller utilization (%)", 100, "all of the window"}};
  std::string svgs, csv, words, names;
  size_t gpus = 0;
  for (const P& p : ps) {
    auto it = by_metric.find(p.metric);
    if (it == by_metric.end()) continue;
    const PerRank per = samples_of(t, it->second);
    gpus = std::max(gpus, per.size());
    std::string band_csv;
    Lines l = rank_lines(per, p.metric, p.label, 1, ax, band_csv);
    const std::string unit = std::string(p.label).substr(std::string(p.label).rfind('(') + 1);
    const Anchor a =
        anchor_at(0, "", p.limit, p.limit_words, largest(per), unit.substr(0, unit.size() - 1));
    l.y_min = a.lo, l.y_max = a.hi;
    l.width = 600, l.height = 240;
    svgs += panel(fmt::format(" data-metric=\"{}\"", p.metric), lines(l));
    csv += band_csv.empty() ? csv_of(t.table(), it->second) : band_csv;
    words += fmt::format("{}{}: {}", words.empty() ? "" : "; ", p.metric, a.words);
    names += (names.empty() ? "" : ", ") + std::string(p.metric);
  }
  if (svgs.empty()) {
    doc.empty_note("fig-memory: no memory clock, memory temperature or utilization telemetry.");
    return;
  }
  doc.figure(
      {"fig-memory", "telemetry", "Memory clock, memory temperature and utilization per GPU", svgs,
       fmt::format("The samples of each GPU (telemetry, metrics {}) over the run, on the "
                   "rank's trace clock; dashed lines: the iteration starts of rank {}. "
                   "Value axes from {}.{}",
                   names, ax.low_rank, words, gpus > kLineRanks ? band_note(gpus) : std::string()),
       "Alignment", csv,
       gpus > kLineRanks ? "the bands drawn, one table per panel"
                         : "the samples drawn, one table per panel"});
}

void burst_figure(Doc& doc, const TableStore& ts, const DeviceSpec* dev) {
  const View<kPowerEnergyTable> pe(ts);
  std::vector<size_t> rows;
  for (size_t r = 0; r < pe.rows(); ++r)
    if (!pe.null(r, "iteration") && pe.null(r, "phase") && !pe.null(r, "peak_power_w"))
      rows.push_back(r);
  if (rows.empty()) {
    if (pe.rows() > 0) doc.empty_note("fig-power-burst: no power samples in an iteration window.");
    return;
  }
  const double tdp = dev != nullptr && dev->tdp_w > 0 ? dev->tdp_w : NAN;
  std::string svgs, words;
  auto add = [&](const char* col, Heatmap h, const Anchor& a) {
    h.lo = a.lo, h.hi = a.hi, h.lo_name = a.lo_name, h.hi_name = a.hi_name;
    h.width = 600;
    svgs += panel(fmt::format(" data-col=\"{}\"", col), heatmap(h));
    words += fmt::format("{}{}: {}", words.empty() ? "" : "; ", col, a.words);
  };
  Heatmap peak = window_heatmap(pe, "peak_power_w", "peak power (W)", 1);
  Heatmap mean = window_heatmap(pe, "mean_power_w", "mean power (W)", 1);
  const double pmax = std::max(heat_max(peak), heat_max(mean));
  add("peak_power_w", peak, anchor_at(0, "", tdp, "TDP", pmax, "W"));
  add("mean_power_w", mean, anchor_at(0, "", tdp, "TDP", pmax, "W"));
  Heatmap ptm = window_heatmap(pe, "peak_to_mean", "peak-to-mean (ratio)", 1);
  Anchor a = anchor_at(1, "flat power", 2, "a peak twice the mean", heat_max(ptm), "");
  a.lo_name = "1 (flat)", a.hi_name = label_num(a.hi) + (a.hi == 2 ? " (2× mean)" : "");
  add("peak_to_mean", ptm, a);
  Heatmap dp = window_heatmap(pe, "max_dp_dt_w_per_s", "max |dP/dt| (kW/s)", 1e3);
  const double dmax = heat_max(dp);
  Anchor d;  // no device limit: 0 to the largest value
  d.lo = 0, d.hi = dmax > 0 ? dmax : 1e3;
  d.lo_name = "0 kW/s", d.hi_name = label_num(d.hi / 1e3) + " kW/s";
  d.words = fmt::format("0 to {}, the largest value (no device limit)", d.hi_name);
  add("max_dp_dt_w_per_s", dp, d);
  doc.figure(
      {"fig-power-burst", "power_energy", "Power bursts per iteration and GPU", svgs,
       fmt::format("Per rank and iteration window (power_energy, whole-window rows): the largest "
                   "power sample (peak_power_w), the mean power (mean_power_w = energy ÷ time), "
                   "their ratio (peak_to_mean, CharLLM-PPT's burstiness) and the steepest change "
                   "between consecutive power samples (max_dp_dt_w_per_s, shown in kW/s). Colour "
                   "scales fixed: {}.",
                   words),
       "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), rows), ""});
}

void links_figure(Doc& doc, const TableStore& ts, const View<kTelemetryTable>& t,
                  const std::map<std::string, std::vector<size_t>>& by_metric, const TimeAxis& ax) {
  struct P {
    const char* metric;
    const char* label;
  };
  const P ps[] = {{"link_tx_bytes", "NVLink/XGMI sent (GB/s)"},
                  {"link_rx_bytes", "NVLink/XGMI received (GB/s)"},
                  {"pcie_tx_bytes", "PCIe sent (GB/s)"},
                  {"pcie_rx_bytes", "PCIe received (GB/s)"}};
  std::string svgs, names;
  Csv rates({"metric", "rank", "t_ns", "bytes_per_s"});
  std::string band_csvs;
  size_t gpus = 0;
  for (const P& p : ps) {
    auto it = by_metric.find(p.metric);
    if (it == by_metric.end()) continue;
    const PerRank per = rates_of(samples_of(t, it->second));
    if (per.empty()) continue;
    gpus = std::max(gpus, per.size());
    std::string band_csv;
    Lines l = rank_lines(per, p.metric, p.label, 1e9, ax, band_csv);
    l.y_min = 0;
    l.width = 600, l.height = 240;
    svgs += panel(fmt::format(" data-metric=\"{}\" data-kind=\"rate\"", p.metric), lines(l));
    names += (names.empty() ? "" : ", ") + std::string(p.metric);
    if (!band_csv.empty()) band_csvs += band_csv;
    for (const auto& [rk, s] : per)
      for (size_t k = 0; k < s.t.size() && band_csv.empty(); ++k)
        rates.add({p.metric, std::to_string(rk), std::to_string(s.t[k]), num(s.v[k])});
  }
  // bus bandwidth against message size, per collective type
  const View<kCollectiveSummaryTable> cs(ts);
  std::map<std::string, std::vector<std::pair<double, double>>> by_type;
  std::vector<size_t> cs_rows;
  size_t without = 0;
  for (size_t r = 0; r < cs.rows(); ++r) {
    if (cs.null(r, "size_bytes") || cs.null(r, "busbw_mean_gbs") || cs.i(r, "size_bytes") <= 0) {
      ++without;
      continue;
    }
    by_type[cs.s(r, "type")].push_back({cs.d(r, "size_bytes"), cs.d(r, "busbw_mean_gbs")});
    cs_rows.push_back(r);
  }
  if (!by_type.empty()) {
    Lines l;
    l.x_label = "message size (log scale)";
    l.y_label = "bus bandwidth (GB/s)";
    l.x_log = l.x_bytes = true;
    l.y_min = 0;
    l.width = 600, l.height = 240;
    for (auto& [type, pts] : by_type) {
      std::sort(pts.begin(), pts.end());
      Line line;
      line.name = type;
      line.attrs = fmt::format(" data-type=\"{}\"", esc(type));
      line.color = l.lines.size();
      for (const auto& [x, y] : pts) line.x.push_back(x), line.y.push_back(y);
      l.lines.push_back(std::move(line));
    }
    svgs += panel(" data-kind=\"busbw\"", lines(l));
  }
  if (svgs.empty()) {
    doc.empty_note(
        "fig-links: no link or PCIe byte counters in the telemetry and no collective with a bus "
        "bandwidth.");
    return;
  }
  std::string csv = names.empty() ? std::string() : (band_csvs.empty() ? rates.text : band_csvs);
  if (!cs_rows.empty()) csv += csv_of(cs.table(), cs_rows);
  doc.figure(
      {"fig-links", "telemetry", "Link bandwidth over time and bus bandwidth by message size", svgs,
       fmt::format(
           "{}{}",
           names.empty()
               ? std::string("The telemetry has no NVLink/XGMI or PCIe byte counters. ")
               : fmt::format("Bytes per second of each GPU's cumulative byte counters (telemetry, "
                             "metrics {}): the growth between consecutive samples ÷ their "
                             "interval, at the later sample (a counter going back is skipped); "
                             "dashed lines: the iteration starts of rank {}.{} ",
                             names, ax.low_rank, gpus > kLineRanks ? band_note(gpus) : ""),
           by_type.empty()
               ? std::string("No collective has a message size and a bus bandwidth.")
               : fmt::format("Bus bandwidth (NCCL's bus factor × size ÷ latency) against message "
                             "size, the mean per collective type and size (collective_summary."
                             "busbw_mean_gbs); {} rows without a size or bus bandwidth left out.",
                             without)),
       "Collectives across ranks (`collectives`, `collective_summary`)", csv,
       "the rates or bands and the collective_summary rows drawn"});
}

}  // namespace

// The lowest rank's iteration starts (and the last one's end) as markers, time zero at the first.
TimeAxis iteration_axis(const TableStore& ts) {
  const View<kTelemetryTable> t(ts);
  TimeAxis ax;
  const View<kTemporalBreakdownTable> b(ts);
  int64_t low = std::numeric_limits<int64_t>::max();
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration")) low = std::min(low, b.i(r, "rank"));
  std::vector<std::pair<int64_t, int64_t>> starts;  // (start_ns, iteration)
  int64_t end = kNull;
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration") && b.i(r, "rank") == low) {
      starts.emplace_back(b.i(r, "start_ns"), b.i(r, "iteration"));
      end = std::max(end, b.i(r, "start_ns") + b.i(r, "total_ns"));
    }
  std::sort(starts.begin(), starts.end());
  int64_t origin = starts.empty() ? kNull : starts.front().first;
  if (origin == kNull)
    for (size_t r = 0; r < t.rows(); ++r)
      origin = std::min(t.i(r, "t_ns"), origin == kNull ? t.i(r, "t_ns") : origin);
  if (origin == kNull) origin = 0;
  std::vector<Marker> marks;
  for (const auto& st : starts)
    marks.push_back({static_cast<double>(st.first - origin), fmt::format("iter {}", st.second),
                     fmt::format(" data-iteration=\"{}\"", st.second), std::to_string(st.first)});
  if (end != kNull)
    marks.push_back(
        {static_cast<double>(end - origin), "end", " data-iteration=\"end\"", std::to_string(end)});
  ax.low_rank = low;
  ax.origin = origin;
  ax.marks = std::move(marks);
  return ax;
}

void telemetry_figures(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTelemetryTable> t(ts);
  const DeviceSpec* dev = report_device(info);
  const TimeAxis ax = iteration_axis(ts);
  // The rows of each metric, grouped by its dictionary entry (no text compared a row).
  std::vector<std::vector<size_t>> of_entry(t.entries("metric"));
  const std::span<const uint32_t> mc = t.codes("metric");
  std::vector<int64_t> ranks;
  std::vector<size_t> unnamed;  // a NULL metric: read as "", as an empty name would be
  for (size_t r = 0; r < t.rows(); ++r) {
    (mc[r] != Table::kNoText ? of_entry[mc[r]] : unnamed).push_back(r);
    if (const int64_t rk = t.i(r, "rank"); ranks.empty() || ranks.back() != rk)
      ranks.push_back(rk);  // once per run of a rank's rows (sorted_unique does the rest)
  }
  std::map<std::string, std::vector<size_t>> by_metric;
  for (uint32_t k = 0; k < of_entry.size(); ++k)
    if (!of_entry[k].empty()) by_metric.emplace(t.entry("metric", k), std::move(of_entry[k]));
  if (!unnamed.empty()) {
    std::vector<size_t>& v = by_metric[""];
    v.insert(v.end(), unnamed.begin(), unnamed.end());
    std::sort(v.begin(), v.end());  // in table order
  }
  ranks = sorted_unique(ranks);
  const double tdp = dev != nullptr && dev->tdp_w > 0 ? dev->tdp_w : NAN;
  const double max_mhz = dev != nullptr && dev->max_clock_mhz > 0
                             ? static_cast<double>(dev->max_clock_mhz)
                             : std::nan("");
  // no thermal limit in the device table: 100 °C (about where GPUs slow down) anchors the top
  const double hot = 100;
  auto data_max = [&](const std::vector<std::string>& ms) {
    const std::string m = first_metric(by_metric, ms);
    return m.empty() ? NAN : largest(samples_of(t, by_metric.at(m)));
  };
  const std::vector<std::string> power = {"power_w", "power_avg_w"}, clock = {"sm_clock_mhz"},
                                 temp = {"temp_hotspot_c", "temp_gpu_c"};
  const Anchor pa = anchor_at(0, "", tdp, "TDP", data_max(power), "W");
  const Anchor ca = anchor_at(0, "", max_mhz, "the device's maximum clock", data_max(clock), "MHz");
  const Anchor ta = anchor_at(0, "", hot, "the device table has no thermal limit: 100 °C used",
                              data_max(temp), "°C");
  if (t.rows() > 0) {
    line_figure(doc, t, by_metric, {"fig-power", power, "Board power per GPU", "power (W)"}, ax,
                pa);
    line_figure(doc, t, by_metric, {"fig-clock", clock, "SM/GFX clock per GPU", "clock (MHz)"}, ax,
                ca);
    line_figure(doc, t, by_metric, {"fig-temp", temp, "Temperature per GPU", "temperature (°C)"},
                ax, ta);
    const Grid g = time_grid(ts, t, ranks.size());
    const std::map<int64_t, int64_t> nodes = rank_nodes(ts);
    heatmap_figure(doc, t, by_metric,
                   {"fig-power-heatmap", power, "Board power, GPU × time", "power (W)", false}, ax,
                   g, pa, nodes);
    heatmap_figure(doc, t, by_metric,
                   {"fig-clock-heatmap", clock, "SM/GFX clock, GPU × time", "clock (MHz)", true},
                   ax, g, ca, nodes);
    heatmap_figure(doc, t, by_metric,
                   {"fig-temp-heatmap", temp, "Temperature, GPU × time", "temperature (°C)", false},
                   ax, g, ta, nodes);
    memory_figure(doc, t, by_metric, ax, dev);
  }
  burst_figure(doc, ts, dev);
  links_figure(doc, ts, t, by_metric, ax);
}

}  // namespace chopper::html
