// The sections of `chopper report` on the hardware and the data: power, clocks, temperature and
// energy (telemetry), label coverage and diagnostics.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {

namespace {

// Where the hardware figures put time zero and the iteration boundaries: the lowest rank's
// iteration windows (its trace clock); times are drawn relative to the first iteration's start
// (exact int64 differences; the data-x attributes keep the table's nanoseconds).
struct TimeAxis {
  int64_t low_rank = 0;
  int64_t origin = 0;
  std::vector<Marker> marks;
};

TimeAxis iteration_axis(const TableStore& ts, const View<kTelemetryTable>& t) {
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

// One telemetry metric's figure: the first of `metrics` present, a line per rank, or quantile
// bands over the ranks when there are many.
struct TelemetryFigure {
  const char* id;
  std::vector<std::string> metrics;  // the first present is drawn
  const char* title;
  const char* label;
};

void telemetry_figure(Doc& doc, const View<kTelemetryTable>& t, const TelemetryFigure& sp,
                      std::map<std::string, std::vector<size_t>>& by_metric, const TimeAxis& ax,
                      size_t rank_count, bool many) {
  const int64_t origin = ax.origin;
  const int64_t low = ax.low_rank;
  const std::vector<Marker>& marks = ax.marks;
  std::string metric;
  for (const std::string& m : sp.metrics)
    if (by_metric.count(m)) {
      metric = m;
      break;
    }
  if (metric.empty()) return;
  const std::vector<size_t>& rows = by_metric[metric];
  Lines l;
  l.x_label = "time since the first iteration's start (s)";
  l.y_label = std::string(sp.label);
  l.x_scale = 1e9;
  l.markers = marks;
  std::string note, band_csv;
  if (!many) {
    std::map<int64_t, Line> per;
    for (size_t r : rows) {
      const int64_t rk = t.i(r, "rank");
      Line& line = per[rk];
      if (line.name.empty()) {
        line.name = fmt::format("rank {}", rk);
        line.attrs = fmt::format(" data-rank=\"{}\" data-metric=\"{}\"", rk, esc(metric));
        line.color = static_cast<size_t>(rk);
      }
      line.x.push_back(static_cast<double>(t.i(r, "t_ns") - origin));
      line.xi.push_back(t.i(r, "t_ns"));
      line.y.push_back(t.d(r, "value"));
    }
    for (auto& kv : per) l.lines.push_back(std::move(kv.second));
  } else {
    // quantile bands over ranks: each rank's mean in 200 time bins
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    auto rel = [&t, origin](size_t r) { return static_cast<double>(t.i(r, "t_ns") - origin); };
    for (size_t r : rows) lo = std::min(lo, rel(r)), hi = std::max(hi, rel(r));
    const size_t bins = 200;
    const double width = std::max(1.0, (hi - lo) / static_cast<double>(bins));
    std::map<int64_t, std::vector<std::pair<double, double>>> acc;  // rank -> (sum, n) per bin
    for (size_t r : rows) {
      auto& v = acc[t.i(r, "rank")];
      v.resize(bins);
      const size_t k = std::min(bins - 1, static_cast<size_t>((rel(r) - lo) / width));
      v[k].first += t.d(r, "value"), v[k].second += 1;
    }
    Band band;
    band.name = "ranks";
    band.attrs = fmt::format(" data-metric=\"{}\" data-ranks=\"{}\"", esc(metric), acc.size());
    for (size_t k = 0; k < bins; ++k) {
      std::vector<double> v;
      for (const auto& kv : acc)
        if (kv.second[k].second > 0) v.push_back(kv.second[k].first / kv.second[k].second);
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
    note = fmt::format(
        " With {} ranks each rank's samples are averaged in 200 time bins and the bands show "
        "the min–max and quartiles over the ranks, the line their median.",
        rank_count);
  }
  doc.figure(
      {sp.id, "telemetry", sp.title, lines(l),
       fmt::format("The {} samples of each GPU (telemetry, metric {}) on the rank's "
                   "trace clock; vertical lines mark the iteration boundaries of rank "
                   "{} (temporal_breakdown).{}",
                   metric, metric, low, note),
       "Alignment", band_csv.empty() ? csv_of(t.table(), rows) : band_csv,
       band_csv.empty() ? std::string() : "the bands drawn; the samples are in chopper.sqlite"});
}

// power_energy: phase rows stacked per rank and iteration, or a heatmap with many ranks.
void energy_figure(Doc& doc, const View<kPowerEnergyTable>& pe, bool many) {
  std::vector<size_t> whole, phases;
  std::vector<std::string> names;
  for (size_t r = 0; r < pe.rows(); ++r) {
    if (pe.null(r, "iteration")) continue;
    if (pe.null(r, "phase")) {
      whole.push_back(r);
    } else {
      phases.push_back(r);
      names.push_back(pe.s(r, "phase"));
    }
  }
  if (whole.empty()) return;
  if (!many) {
    StackedBars c;
    c.value_label = "energy (J)";
    c.category_label = "rank / iteration";
    c.series = sorted_unique_s(names);
    std::map<std::pair<int64_t, int64_t>, size_t> cat;
    std::sort(whole.begin(), whole.end(), [&pe](size_t x, size_t y) {
      return std::pair(pe.i(x, "rank"), pe.i(x, "iteration")) <
             std::pair(pe.i(y, "rank"), pe.i(y, "iteration"));
    });
    for (size_t r : whole) {
      cat[{pe.i(r, "rank"), pe.i(r, "iteration")}] = c.categories.size();
      c.categories.push_back(fmt::format("r{} i{}", pe.i(r, "rank"), pe.i(r, "iteration")));
      c.cat_attrs.push_back(
          fmt::format(" data-rank=\"{}\" data-iteration=\"{}\" data-energy-j=\"{}\"",
                      pe.i(r, "rank"), pe.i(r, "iteration"), num(pe.d(r, "energy_j"))));
      c.values.emplace_back(c.series.size(), std::nan(""));
    }
    for (size_t r : phases) {
      auto k = cat.find({pe.i(r, "rank"), pe.i(r, "iteration")});
      if (k == cat.end()) continue;
      const size_t s = static_cast<size_t>(
          std::lower_bound(c.series.begin(), c.series.end(), pe.s(r, "phase")) - c.series.begin());
      c.values[k->second][s] = pe.d(r, "energy_j");
    }
    std::vector<size_t> rows = whole;
    rows.insert(rows.end(), phases.begin(), phases.end());
    doc.figure({"fig-energy", "power_energy", "Energy per iteration per GPU", stacked_bars(c),
                "∫ power dt of each rank's GPU over each iteration window, split by the phase "
                "whose activity held the GPU (idle = none) (power_energy, phase rows; the whole "
                "window's energy_j is the bar's data-energy-j).",
                "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), rows),
                ""});
  } else {
    doc.figure({"fig-energy", "power_energy", "Energy per iteration per GPU",
                heatmap(rank_iter_heatmap(pe, "energy_j", "energy (J)", 1)),
                "∫ power dt of each rank's GPU over each iteration window (power_energy, "
                "whole-window rows).",
                "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), whole),
                ""});
  }
}

}  // namespace

void hardware_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTelemetryTable> t(ts);
  const View<kPowerEnergyTable> pe(ts);
  if (t.rows() == 0 && pe.rows() == 0) {
    doc.section("hardware", "Power, clocks and temperature");
    doc.empty_note("No telemetry: give --telemetry files or put them in the run's directory.");
    return;
  }
  doc.section("hardware", "Power, clocks and temperature");
  const TimeAxis ax = iteration_axis(ts, t);
  std::map<std::string, std::vector<size_t>> by_metric;
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < t.rows(); ++r) {
    by_metric[t.s(r, "metric")].push_back(r);
    ranks.push_back(t.i(r, "rank"));
  }
  ranks = sorted_unique(ranks);
  const bool many = ranks.size() > info.many_ranks;
  for (const TelemetryFigure& sp :
       {TelemetryFigure{
            "fig-power", {"power_w", "power_avg_w"}, "Board power per GPU", "power (W)"},
        TelemetryFigure{"fig-clock", {"sm_clock_mhz"}, "SM/GFX clock per GPU", "clock (MHz)"},
        TelemetryFigure{"fig-temp",
                        {"temp_hotspot_c", "temp_gpu_c"},
                        "Temperature per GPU",
                        "temperature (°C)"}})
    telemetry_figure(doc, t, sp, by_metric, ax, ranks.size(), many);
  energy_figure(doc, pe, many);
}

void coverage_section(Doc& doc, const TableStore& ts) {
  const View<kLabelCoverageTable> c(ts);
  const View<kDiagnosticsTable> d(ts);
  doc.section("coverage", "Label coverage and diagnostics");
  if (c.rows() > 0) {
    std::map<std::string, std::array<double, 2>> lv;
    std::vector<size_t> rows;
    for (size_t r = 0; r < c.rows(); ++r) {
      if (c.s(r, "scope") != "in_iterations") continue;
      lv[c.s(r, "level")][c.null(r, "rule") ? 1 : 0] += c.d(r, "kernel_ns");
      rows.push_back(r);
    }
    StackedBars b;
    b.horizontal = true;
    b.scale = kMs;
    b.value_label = "GPU time of activities launched in an iteration, all ranks (ms)";
    b.category_label = "level";
    b.series = {"labelled", "not labelled"};
    b.series_colors = {"#59a14f", "#e15759"};
    Csv csv({"level", "labelled_kernel_ns", "unlabelled_kernel_ns"});
    for (const char* level : {"iteration", "phase", "layer", "operation", "op_class"}) {
      auto it = lv.find(level);
      if (it == lv.end()) continue;
      b.categories.emplace_back(level);
      b.cat_attrs.push_back(fmt::format(" data-level=\"{}\"", level));
      b.values.push_back({it->second[0], it->second[1]});
      csv.add({level, num(it->second[0]), num(it->second[1])});
    }
    if (!b.categories.empty())
      doc.figure({"fig-coverage", "label_coverage", "Label coverage per level", stacked_bars(b),
                  "GPU time of the activities launched inside an iteration that a rule labelled "
                  "at each level, and the time left unlabelled (label_coverage, scope "
                  "in_iterations, summed over ranks and rules; the table has each rule).",
                  "Hierarchy aggregation (`chopper tree`, `chopper analyze`)", csv.text,
                  "label_coverage summed per level"});
  }
  std::string t =
      "<div class=\"scroll\"><table><tr><th>severity</th><th>kind</th><th>rank</th>"
      "<th>file</th><th>count</th><th>example</th></tr>";
  const size_t shown = std::min<size_t>(d.rows(), 200);
  for (size_t r = 0; r < shown; ++r)
    t += fmt::format(
        "<tr data-kind=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td></tr>",
        esc(d.s(r, "kind")), esc(d.s(r, "severity")), esc(d.s(r, "kind")),
        d.null(r, "rank") ? std::string() : std::to_string(d.i(r, "rank")), esc(d.s(r, "file")),
        d.null(r, "count")
            ? std::string()
            : std::to_string(d.i(r, "count")) + (d.null(r, "of_count")
                                                     ? std::string()
                                                     : " of " + std::to_string(d.i(r, "of_count"))),
        esc(d.s(r, "example")));
  t += "</table></div>";
  if (d.rows() == 0)
    t = "<p>No diagnostics: every file read cleanly and the run is consistent.</p>";
  doc.figure({"tbl-diagnostics", "diagnostics", "Diagnostics", t,
              fmt::format("What the readers and the validation found ({} rows{}): unreadable "
                          "files, anomalies by kind with an example, link rates.",
                          d.rows(), d.rows() > shown ? ", the first 200 shown" : ""),
              "`chopper info`", csv_of(d.table(), all_rows(d)), ""});
}

}  // namespace chopper::html
