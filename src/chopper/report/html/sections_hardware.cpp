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

// The whole-window rows' energy_j as a rank × iteration heatmap, its colour scale from 0 J.
Heatmap energy_heatmap(const View<kPowerEnergyTable>& pe) {
  Heatmap h = window_heatmap(pe, "energy_j", "energy (J)", 1);
  h.lo = 0;
  h.lo_name = "0 J";
  return h;
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
    doc.figure(
        {"fig-energy", "power_energy", "Energy per iteration per GPU", heatmap(energy_heatmap(pe)),
         "∫ power dt of each rank's GPU over each iteration window (power_energy, "
         "whole-window rows).",
         "Energy model (`power_energy`, `kernel_hw.energy_j`)", csv_of(pe.table(), whole), ""});
  }
}

}  // namespace

// power_energy's whole-window rows as a rank × iteration heatmap of one column.
Heatmap window_heatmap(const View<kPowerEnergyTable>& pe, View<kPowerEnergyTable>::Col col,
                       const char* label, double scale) {
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < pe.rows(); ++r)
    if (!pe.null(r, "iteration") && pe.null(r, "phase"))
      ranks.push_back(pe.i(r, "rank")), iters.push_back(pe.i(r, "iteration"));
  ranks = sorted_unique(ranks);
  iters = sorted_unique(iters);
  Heatmap h = rank_iter_grid(ranks, iters, label, scale);
  for (size_t r = 0; r < pe.rows(); ++r) {
    if (pe.null(r, "iteration") || !pe.null(r, "phase")) continue;
    const size_t ri = static_cast<size_t>(
        std::lower_bound(ranks.begin(), ranks.end(), pe.i(r, "rank")) - ranks.begin());
    const size_t ci = static_cast<size_t>(
        std::lower_bound(iters.begin(), iters.end(), pe.i(r, "iteration")) - iters.begin());
    h.values[ri][ci] = pe.d(r, col);
  }
  return h;
}

double heat_max(const Heatmap& h) {
  double m = -std::numeric_limits<double>::infinity();
  for (const auto& r : h.values)
    for (double v : r)
      if (!std::isnan(v)) m = std::max(m, v);
  return m;
}

void hardware_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTelemetryTable> t(ts);
  const View<kPowerEnergyTable> pe(ts);
  doc.section("hardware", "Power, clocks and temperature");
  if (t.rows() == 0 && pe.rows() == 0)
    doc.empty_note("No telemetry: give --telemetry files or put them in the run's directory.");
  telemetry_figures(doc, ts, info);
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < pe.rows(); ++r) ranks.push_back(pe.i(r, "rank"));
  energy_figure(doc, pe, sorted_unique(ranks).size() > info.many_ranks);
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
