// The sections of `chopper compare --html`, from the tables compare writes: the runs and the
// sweep, where the difference is, the operations, kernels and collectives that changed, the
// findings that changed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/report/compare_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"

namespace chopper::html {

namespace {

// A nullable column × mul at `decimals` places (signed when `plus`), then `unit`.
template <const auto& Def>
std::string opt_num(const View<Def>& v, size_t r, typename View<Def>::Col col, double mul,
                    int decimals, const char* unit, bool plus = false) {
  return v.null(r, col) ? std::string("–") : fixed(v.d(r, col) * mul, decimals, plus) + unit;
}

// A signed difference in ns as "+1.234 ms" ("0.000 ms" when it rounds to zero).
std::string diff_ms(double ns) {
  return fixed(ns / kMs, 3, true) + " ms";
}

}  // namespace

void compare_runs_section(Doc& doc, const TableStore& ts) {
  const View<kSweepTable> sw(ts);
  if (sw.rows() == 0) return;
  doc.section("runs", "Runs",
              "Every run against the first (the baseline): the slowest rank's iteration time, "
              "mean over iterations, and what it gives per token.");
  std::string t =
      "<table><tr><th>run</th><th>ranks</th><th>iterations</th><th>iteration</th><th>vs "
      "baseline</th><th>tokens/s</th><th>time per token</th><th>energy per token</th></tr>";
  for (size_t r = 0; r < sw.rows(); ++r)
    t += fmt::format(
        "<tr data-run=\"{}\" data-iteration-ns=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(sw.s(r, "run")), num(sw.d(r, "iteration_ns")), esc(sw.s(r, "run")), sw.i(r, "ranks"),
        sw.i(r, "iterations"), ms_text(sw.d(r, "iteration_ns")),
        opt_num(sw, r, "iteration_diff_points", 1, 1, " points", true),
        opt_num(sw, r, "tokens_per_s", 1, 0, ""),
        opt_num(sw, r, "time_per_token_ns", 1e-3, 3, " µs"),
        opt_num(sw, r, "energy_per_token_j", 1e3, 3, " mJ"));
  doc.body += t + "</table>\n";
  // The sweep: one bar per run for each measure the runs have.
  struct Measure {
    View<kSweepTable>::Col col;
    const char* id;
    const char* title;
    const char* axis;
    double scale;
    const char* how;
  };
  const Measure ms[] = {
      {"iteration_ns", "fig-sweep-iteration", "Iteration time per run", "iteration time (ms)", kMs,
       "The slowest rank's iteration time, mean over the run's iterations (sweep.iteration_ns)."},
      {"tokens_per_s", "fig-sweep-throughput", "Tokens per second per run", "tokens per second", 1,
       "Tokens per step divided by the iteration time (sweep.tokens_per_s)."},
      {"time_per_token_ns", "fig-sweep-time-per-token", "Time per token per run",
       "time per token (µs)", 1e3,
       "Iteration time divided by tokens per step "
       "(sweep.time_per_token_ns)."},
      {"energy_per_token_j", "fig-sweep-energy-per-token", "Energy per token per run",
       "energy per token (mJ)", 1e-3,
       "The job's energy over the iterations (all GPUs, from telemetry) divided by the tokens "
       "(sweep.energy_per_token_j)."}};
  for (const Measure& m : ms) {
    bool any = false;
    for (size_t r = 0; r < sw.rows(); ++r) any = any || !sw.null(r, m.col);
    if (!any) continue;
    StackedBars c;
    c.value_label = m.axis;
    c.category_label = "run";
    c.scale = m.scale;
    c.series = {std::string(m.col.h.name)};
    c.series_names = {m.axis};
    c.series_colors = {std::string(palette(0))};
    for (size_t r = 0; r < sw.rows(); ++r) {
      c.categories.push_back(sw.s(r, "run"));
      c.cat_attrs.push_back(fmt::format(" data-run=\"{}\"", esc(sw.s(r, "run"))));
      c.values.push_back({sw.null(r, m.col) ? std::nan("") : sw.d(r, m.col)});
    }
    doc.figure({m.id, "sweep", m.title, stacked_bars(c), m.how, "Comparison",
                csv_of(sw.table(), all_rows(sw)), ""});
  }
}

void compare_components_section(Doc& doc, const TableStore& ts) {
  const View<kCompareComponentsTable> cc(ts);
  if (cc.rows() == 0) return;
  doc.section("components", "Where the difference is",
              "The slowest rank's iteration split into the same components as analyze's "
              "end_to_end (compute by phase.class, exposed communication, waiting for a "
              "straggler, host stall, host late, launch latency, idle ...), per run, and each "
              "run's difference from the baseline, largest first.");
  // Runs in order: the baseline, then each compared run.
  std::vector<std::string> runs;
  std::vector<std::string> comps;
  std::map<std::pair<std::string, std::string>, double> v;  // (run, component) -> ns
  for (size_t r = 0; r < cc.rows(); ++r) {
    const std::string a = cc.s(r, "baseline"), b = cc.s(r, "run"), k = cc.s(r, "component");
    if (runs.empty()) runs.push_back(a);
    if (std::find(runs.begin(), runs.end(), b) == runs.end()) runs.push_back(b);
    if (std::find(comps.begin(), comps.end(), k) == comps.end()) comps.push_back(k);
    v[{a, k}] = cc.d(r, "a_ns");
    v[{b, k}] = cc.d(r, "b_ns");
  }
  std::sort(comps.begin(), comps.end());
  StackedBars c;
  c.value_label = "time per iteration (ms)";
  c.category_label = "run";
  c.scale = kMs;
  c.series = comps;
  for (const std::string& k : comps) c.series_colors.push_back(component_color(k));
  for (const std::string& run : runs) {
    c.categories.push_back(run);
    c.cat_attrs.push_back(fmt::format(" data-run=\"{}\"", esc(run)));
    std::vector<double> row;
    for (const std::string& k : comps) {
      auto f = v.find({run, k});
      row.push_back(f == v.end() ? std::nan("") : f->second);
    }
    c.values.push_back(std::move(row));
  }
  doc.figure({"fig-compare-split", "compare_components", "Iteration time split per run",
              stacked_bars(c),
              "Each run's mean per iteration of the slowest rank's components "
              "(compare_components.a_ns for the baseline, b_ns for the run).",
              "Comparison", csv_of(cc.table(), all_rows(cc)), ""});
  // The differences, largest |diff| first (the table's order), up to 16 bars.
  StackedBars d;
  d.value_label = "difference from the baseline (ms per iteration)";
  d.category_label = "run: component";
  d.scale = kMs;
  d.horizontal = true;
  // signed: a diverging pair, red = the run spends longer, blue = shorter; 0 in the middle
  d.series = {"diff_ns", "diff_ns"};
  d.series_names = {"run longer (ms)", "run shorter (ms)"};
  d.series_colors = {diverging(1), diverging(-1)};
  d.symmetric = true;
  std::vector<size_t> rows;
  for (size_t r = 0; r < cc.rows(); ++r)
    if (cc.d(r, "diff_ns") != 0) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t x, size_t y) {
    return std::fabs(cc.d(x, "diff_ns")) > std::fabs(cc.d(y, "diff_ns"));
  });
  if (rows.size() > 16) rows.resize(16);
  if (rows.empty()) {
    doc.empty_note("No component differs from the baseline.");
    return;
  }
  for (size_t r : rows) {
    d.categories.push_back(cc.s(r, "run") + ": " + cc.s(r, "component"));
    d.cat_attrs.push_back(fmt::format(" data-run=\"{}\" data-component=\"{}\"", esc(cc.s(r, "run")),
                                      esc(cc.s(r, "component"))));
    const double diff = cc.d(r, "diff_ns");
    d.values.push_back({diff > 0 ? diff : std::nan(""), diff < 0 ? diff : std::nan("")});
  }
  doc.figure({"fig-compare-diff", "compare_components", "Largest differences from the baseline",
              stacked_bars(d),
              "b_ns − a_ns per component (compare_components.diff_ns), the 16 largest in "
              "magnitude (zero differences left out); positive (red, right of 0) = the run "
              "spends longer, negative (blue, left of 0) = shorter.",
              "Comparison", csv_of(cc.table(), rows), "the rows drawn"});
}
namespace {

// The rows of a pair table with the largest |diff_ns| (up to n), as an HTML table.
// A column of a comparison list and its heading.
template <const auto& Def>
struct ListCol {
  typename View<Def>::Col col;
  const char* heading;
};

template <const auto& Def>
void compare_list(Doc& doc, const TableStore& ts, const char* id, const char* title,
                  const std::vector<ListCol<Def>>& cols, size_t n) {
  const View<Def> v(ts);
  const std::string_view table = Def.name;
  if (v.rows() == 0) return;
  std::vector<size_t> rows = all_rows(v);
  std::stable_sort(rows.begin(), rows.end(), [&](size_t x, size_t y) {
    return std::fabs(v.d(x, "diff_ns")) > std::fabs(v.d(y, "diff_ns"));
  });
  if (rows.size() > n) rows.resize(n);
  std::string t = fmt::format("<h3 id=\"{}\">{}</h3><table><tr><th>run</th>", id, esc(title));
  for (const auto& c : cols) t += fmt::format("<th>{}</th>", esc(c.heading));
  t += "<th>baseline</th><th>run</th><th>difference</th><th>status</th></tr>";
  for (size_t r : rows) {
    t += fmt::format("<tr data-diff-ns=\"{}\"><td>{}</td>", num(v.d(r, "diff_ns")),
                     esc(v.s(r, "run")));
    for (const auto& c : cols) {
      std::string x;
      if (!v.null(r, c.col)) {
        const Cell cell = v.table()->cell(r, c.col.h.index);
        x = cell.kind == Cell::kText  ? std::string(cell.s)
            : cell.kind == Cell::kInt ? std::to_string(cell.i)
                                      : label_num(cell.r);
      }
      t += "<td>" + esc(x) + "</td>";
    }
    t += fmt::format("<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", ms_text(v.d(r, "a_ns")),
                     ms_text(v.d(r, "b_ns")), diff_ms(v.d(r, "diff_ns")), esc(v.s(r, "status")));
  }
  doc.body += t + "</table>\n";
  doc.body += fmt::format(
      "<p><a class=\"csv\" download=\"{}.csv\" href=\"data:text/csv;base64,"
      "{}\">Download table {} (CSV, {} rows)</a></p>\n",
      table, base64(csv_of(v.table(), all_rows(v))), table, v.rows());
}

}  // namespace

// The operations, kernels and collectives that changed: the largest differences of each pair
// table.
void compare_operations_section(Doc& doc, const TableStore& ts) {
  if (ts.get(std::string(kCompareOperationsTable.name)) != nullptr ||
      ts.get(std::string(kCompareKernelsTable.name)) != nullptr) {
    doc.section("operations", "Operations, kernels and collectives",
                "Matched by place in the hierarchy (phase, layer, operation), kernel name, and "
                "collective type and size; the largest differences per iteration (per rank) "
                "first; slower or faster only beyond run-to-run noise (docs/metrics.md, "
                "Comparison).");
    compare_list<kCompareOperationsTable>(
        doc, ts, "tbl-operations", "Operations",
        {{"phase", "phase"}, {"layer", "layer"}, {"operation", "operation"}}, 20);
    compare_list<kCompareKernelsTable>(doc, ts, "tbl-kernels", "Kernels", {{"name", "kernel"}}, 20);
    compare_list<kCompareCollectivesTable>(doc, ts, "tbl-collectives", "Collectives",
                                           {{"type", "type"}, {"size_bytes", "size (bytes)"}}, 20);
  }
}

void compare_findings_section(Doc& doc, const TableStore& ts) {
  const View<kCompareFindingsTable> f(ts);
  if (f.rows() == 0) return;
  doc.section("findings", "Findings that changed",
              "Each run's significant findings (analyze's findings) against the baseline's: "
              "appeared, disappeared, grew or shrank.");
  std::string t =
      "<table class=\"findings\"><tr><th>run</th><th>finding</th><th>change</th><th>baseline"
      "</th><th>run</th><th>difference</th></tr>";
  for (size_t r = 0; r < f.rows(); ++r)
    t += fmt::format(
        "<tr data-finding=\"{}\" data-change=\"{}\" data-diff-ns=\"{}\"><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(f.s(r, "finding")), esc(f.s(r, "change")), num(f.d(r, "diff_ns")), esc(f.s(r, "run")),
        esc(f.s(r, "title")), esc(f.s(r, "change")), ms_text(f.d(r, "a_cost_ns")),
        ms_text(f.d(r, "b_cost_ns")), diff_ms(f.d(r, "diff_ns")));
  doc.body += t + "</table>\n";
}

}  // namespace chopper::html
