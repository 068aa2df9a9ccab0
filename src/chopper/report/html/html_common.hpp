#pragma once
// Internal to report/html (not a public header): what the HTML report's files share. The page
// and its plumbing are in report_html.cpp; the sections in sections_*.cpp, declared here.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/csv_sink.hpp"         // append_csv_field
#include "chopper/report/hardware_report.hpp"  // kPowerEnergyTable
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/html/svg.hpp"

namespace chopper::html {

constexpr double kMs = 1e6;
constexpr int64_t kNull = std::numeric_limits<int64_t>::min();

// A table read through its declaration (model/table_def.hpp): columns by typed handle, so a name
// that is not a column of the table does not compile (View<kXxxTable>::Col is made at compile
// time). A missing table has no rows. The table may hold a selection of the declaration's columns
// (report_tables): reading one it does not hold is an error naming it, as is a table whose
// columns are not the declaration's.
template <const auto& Def>
class View {
 public:
  // A column of Def, found when compiled.
  struct Col {
    consteval Col(const char* name) : h(Def.handle(name)) {}  // NOLINT: implicit by design
    ColumnHandle h;
  };

  explicit View(const TableStore& ts) : View(ts.get(std::string(Def.name))) {}
  explicit View(const Table* t) : t_(t) {
    if (t_ == nullptr) return;
    const auto& cols = t_->schema().columns;
    // The table's columns are the declaration's, or some of them in the same order.
    at_.assign(Def.columns.size(), kAbsent);
    size_t k = 0;
    bool same = t_->name() == Def.name;
    for (size_t c = 0; same && c < cols.size(); ++c) {
      while (k < Def.columns.size() && Def.columns[k].name != cols[c].name) ++k;
      same = k < Def.columns.size();
      if (same) at_[k++] = c;
    }
    if (!same)
      throw Error(fmt::format("report: table {} is not as declared ({} columns)", t_->name(),
                              Def.columns.size()));
  }
  size_t rows() const { return t_ ? t_->rows() : 0; }
  bool null(size_t r, Col c) const { return t_->is_null(r, at(c)); }
  double d(size_t r, Col c) const {
    const Cell x = t_->cell(r, at(c));
    return x.kind == Cell::kInt    ? static_cast<double>(x.i)
           : x.kind == Cell::kReal ? x.r
                                   : std::nan("");
  }
  int64_t i(size_t r, Col c) const {
    const size_t k = at(c);
    return t_->is_null(r, k) ? kNull : t_->get_int(r, k);
  }
  std::string s(size_t r, Col c) const { return std::string(t_->get_text(r, at(c))); }
  // The text without a copy: valid while the table is (the report only reads its tables).
  std::string_view sv(size_t r, Col c) const { return t_->get_text(r, at(c)); }
  const Table* table() const { return t_; }
  // A text column as its dictionary (model/table.hpp): per row its entry (Table::kNoText where
  // NULL), the number of entries, and an entry's text. Grouping rows by entry compares no text.
  std::span<const uint32_t> codes(Col c) const {
    return t_ ? t_->text_codes(at(c)) : std::span<const uint32_t>();
  }
  size_t entries(Col c) const { return t_ ? t_->text_ends(at(c)).size() : 0; }
  std::string_view entry(Col c, uint32_t k) const {
    const size_t col = at(c);
    const std::span<const uint64_t> ends = t_->text_ends(col);
    const uint64_t b = k ? ends[k - 1] : 0;
    return t_->text_bytes(col).substr(b, ends[k] - b);
  }

 private:
  static constexpr size_t kAbsent = SIZE_MAX;
  // The table's index of the declared column `c`.
  size_t at(Col c) const {
    const size_t k = at_[c.h.index];
    if (k == kAbsent)
      throw Error(
          fmt::format("report: column {}.{} was not kept (report_tables)", Def.name, c.h.name));
    return k;
  }
  const Table* t_;
  std::vector<size_t> at_;  // per declared column, its index in the table (kAbsent: not kept)
};

// The columns of Def that `cols` name (checked when compiled), as a TableSelection entry.
template <const auto& Def>
std::pair<std::string, std::vector<std::string>> columns_of(
    std::initializer_list<typename View<Def>::Col> cols) {
  std::vector<std::string> names;
  for (const auto& c : cols) names.emplace_back(c.h.name);
  return {std::string(Def.name), std::move(names)};
}

// Base64 (RFC 4648, with padding) of `in`.
std::string base64(std::string_view in);

// One CSV field, quoted where it must be.
std::string csv_field(std::string_view s);

// The rows of a table as CSV, as the CSV files write them (docs/schema.md): every column, NULL an
// empty field, empty text "".
std::string csv_of(const Table* t, const std::vector<size_t>& rows);

// Every row of a View, in order.
template <class V>
std::vector<size_t> all_rows(const V& v) {
  std::vector<size_t> r(v.rows());
  for (size_t i = 0; i < r.size(); ++i) r[i] = i;
  return r;
}

// A small CSV of derived (aggregated for display) values.
struct Csv {
  std::string text;
  explicit Csv(const std::vector<std::string>& header) { add(header); }
  void add(const std::vector<std::string>& cells) { add_fields(cells); }
  // The same from views (a figure with a row per heatmap cell builds no strings per row).
  void add_views(std::initializer_list<std::string_view> cells) { add_fields(cells); }

 private:
  template <class Fields>
  void add_fields(const Fields& cells) {
    bool first = true;
    for (std::string_view c : cells) {
      if (!first) text += ',';
      first = false;
      append_csv_field(text, c);
    }
    text += '\n';
  }
};

// One figure of the page: its chart, caption, definition and data.
struct Figure {
  std::string id, table, title, svg, caption;
  std::string section;  // docs/metrics.md heading the metric is defined under
  std::string csv, csv_note;
};

// The page being built: its sections, figures and table of contents.
struct Doc {
  std::string body;
  std::vector<std::string> ids;
  std::vector<std::pair<std::string, std::string>> toc;  // section id, title

  // Where the first section began when nothing before it had to be closed (the page's first
  // section, or a part's: append closes the section before it there).
  size_t first_open = std::string::npos;

  void section(const std::string& id, const std::string& title, const std::string& intro = "");
  void figure(const Figure& f);
  void empty_note(const std::string& what) { body += "<p class=\"none\">" + what + "</p>\n"; }
  // `part` (made on a Doc of its own, e.g. on another thread) as if its calls had been made on
  // this one: the same bytes, ids and contents.
  void append(Doc&& part);
};

// Nanoseconds as "1.234 ms".
std::string ms_text(double ns);
// `v` sorted, duplicates dropped.
std::vector<std::string> sorted_unique_s(std::vector<std::string> v);
std::vector<int64_t> sorted_unique(std::vector<int64_t> v);

// The figures' colours for the named parts of an iteration.
std::string component_color(const std::string& k);

// An empty rank x iteration heatmap (every cell NaN) over sorted, unique ranks and iterations.
inline Heatmap rank_iter_grid(const std::vector<int64_t>& ranks, const std::vector<int64_t>& iters,
                              std::string label, double scale) {
  Heatmap h;
  h.row_label = "rank";
  h.col_label = "iteration";
  h.value_label = std::move(label);
  h.scale = scale;
  h.row_attr = "data-rank";
  h.col_attr = "data-iteration";
  for (int64_t r : ranks) h.rows.push_back(std::to_string(r));
  for (int64_t i : iters) h.cols.push_back(std::to_string(i));
  h.values.assign(ranks.size(), std::vector<double>(iters.size(), std::nan("")));
  return h;
}

// A rank x iteration heatmap of one column of a table with rank and iteration columns.
template <const auto& Def>
Heatmap rank_iter_heatmap(const View<Def>& v, typename View<Def>::Col value, const char* label,
                          double scale) {
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < v.rows(); ++r)
    if (!v.null(r, "iteration"))
      ranks.push_back(v.i(r, "rank")), iters.push_back(v.i(r, "iteration"));
  ranks = sorted_unique(ranks);
  iters = sorted_unique(iters);
  Heatmap h = rank_iter_grid(ranks, iters, label, scale);
  for (size_t r = 0; r < v.rows(); ++r) {
    if (v.null(r, "iteration")) continue;
    const size_t ri = static_cast<size_t>(
        std::lower_bound(ranks.begin(), ranks.end(), v.i(r, "rank")) - ranks.begin());
    const size_t ci = static_cast<size_t>(
        std::lower_bound(iters.begin(), iters.end(), v.i(r, "iteration")) - iters.begin());
    h.values[ri][ci] = v.d(r, value);
  }
  return h;
}

// Where the hardware figures put time zero and the iteration boundaries: the lowest rank's
// iteration windows (its trace clock); times are drawn relative to the first iteration's start
// (exact int64 differences; the data-x attributes keep the table's nanoseconds).
struct TimeAxis {
  int64_t low_rank = 0;
  int64_t origin = 0;
  std::vector<Marker> marks;
};

// The sections of `chopper report` (render_report), in page order.
// sections_time.cpp
void summary_section(Doc& doc, const TableStore& ts, const ReportInfo& info);
void findings_section(Doc& doc, const TableStore& ts);
void time_section(Doc& doc, const TableStore& ts, const ReportInfo& info);
void throughput_section(Doc& doc, const TableStore& ts);
void waterfall_section(Doc& doc, const TableStore& ts);
void launch_section(Doc& doc, const TableStore& ts);
// sections_iteration.cpp: the iteration's cascade (fig-waterfall, called by waterfall_section);
// the rank's idle and, as a secondary view, idle per stream (called by time_section)
void cascade_figure(Doc& doc, const TableStore& ts);
void idle_figures(Doc& doc, const TableStore& ts, const ReportInfo& info,
                  const std::vector<int64_t>& ranks, const std::vector<int64_t>& iters);
// sections_parallel.cpp
void distributions_section(Doc& doc, const TableStore& ts);
void collectives_section(Doc& doc, const TableStore& ts);
void stragglers_section(Doc& doc, const TableStore& ts);
void overlap_section(Doc& doc, const TableStore& ts);
// sections_hardware.cpp
void hardware_section(Doc& doc, const TableStore& ts, const ReportInfo& info);
void coverage_section(Doc& doc, const TableStore& ts);
// power_energy's whole-window rows (phase NULL) as a rank × iteration heatmap of one column, and
// the largest value of a heatmap (the power-burst figure's scales).
Heatmap window_heatmap(const View<kPowerEnergyTable>& pe, View<kPowerEnergyTable>::Col col,
                       const char* label, double scale);
double heat_max(const Heatmap& h);
// sections_telemetry.cpp (called by hardware_section): per-GPU lines or bands of power, clock
// and temperature, their GPU × time heatmaps, memory, power bursts, links.
void telemetry_figures(Doc& doc, const TableStore& ts, const ReportInfo& info);
TimeAxis iteration_axis(const TableStore& ts);
// sections_work.cpp: top kernels and operations, roofline, kernel-duration violins; counters
void kernels_section(Doc& doc, const TableStore& ts, const ReportInfo& info);
void counters_section(Doc& doc, const TableStore& ts);
// sections_cpu.cpp (nothing without recorded CPU files)
void cpu_section(Doc& doc, const TableStore& ts);

// The sections of `chopper compare --html` (render_compare_report), in page order
// (sections_compare.cpp).
void compare_runs_section(Doc& doc, const TableStore& ts);
void compare_components_section(Doc& doc, const TableStore& ts);
void compare_operations_section(Doc& doc, const TableStore& ts);
void compare_findings_section(Doc& doc, const TableStore& ts);

}  // namespace chopper::html
