#pragma once
// What the table writers share: a table streamed to a sink row by row, and the cells for values
// that may be unknown (NULL).
#include <cmath>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"

namespace chopper {

// One table streamed to a sink: begun on construction, rows handed on as they are made (the
// largest tables have a row per operation instance or launch: millions on a long run), ended by
// end().
class Rows {
 public:
  Rows(TableSink& sink, TableSchema schema) : sink_(sink) { sink_.begin(schema); }
  void add_row(std::span<const Cell> cells) { sink_.row(cells); }
  void add_row(std::initializer_list<Cell> cells) {
    sink_.row(std::span<const Cell>(cells.begin(), cells.size()));
  }
  void end() { sink_.end(); }

 private:
  TableSink& sink_;
};

inline Rows make_rows(TableSink& sink, std::string name, std::string doc,
                      std::vector<ColumnSpec> cols) {
  return Rows(sink, TableSchema{std::move(name), std::move(doc), std::move(cols)});
}

inline Cell opt_iter(int64_t it) {
  return it == kNoId ? Cell::null() : Cell::of(it);
}
inline Cell opt_rank(int64_t r) {
  return r < 0 ? Cell::null() : Cell::of(r);
}
inline Cell opt_text(std::string_view s) {
  return s.empty() ? Cell::null() : Cell::of(s);
}
// NaN (not recorded) is NULL.
inline Cell opt_real(double v) {
  return std::isnan(v) ? Cell::null() : Cell::of(v);
}

// The label columns (iteration, phase, layer, operation) and their cells.
inline std::vector<ColumnSpec> label_cols() {
  return {{"iteration", ColType::kInt, "ProfilerStep number (NULL = none)"},
          {"phase", ColType::kText, "forward, backward, optimizer, other, data_dist (NULL = none)"},
          {"layer", ColType::kInt, "transformer block (NULL = none)"},
          {"operation", ColType::kText, "operation label (NULL = none)"}};
}
inline void push_label(std::vector<Cell>& c, const LabelKey& k) {
  c.push_back(opt_iter(k.iteration));
  c.push_back(opt_text(phase_name(k.phase)));
  c.push_back(k.layer < 0 ? Cell::null() : Cell::of(k.layer));
  c.push_back(opt_text(k.operation));
}

// a / b, NULL when b is 0 (a share of nothing).
inline Cell ratio_cell(Ns a, Ns b) {
  return b > 0 ? Cell::of(static_cast<double>(a) / static_cast<double>(b)) : Cell::null();
}

// The label columns (iteration, phase, layer, operation) of a row whose member `K` is a LabelKey,
// as every labelled table shows them.
template <auto K, class Row = typename table_detail::member_of<decltype(K)>::cls>
constexpr std::array<Column<Row>, 4> label_columns() {
  return {{
      column<Row>("iteration", ColType::kInt, "ProfilerStep number", "none",
                  [](const Row& r) { return opt_iter((r.*K).iteration); }),
      column<Row>("phase", ColType::kText, "forward, backward, optimizer, other, data_dist", "none",
                  [](const Row& r) { return opt_text(phase_name((r.*K).phase)); }),
      column<Row>(
          "layer", ColType::kInt, "transformer block", "none",
          [](const Row& r) { return (r.*K).layer < 0 ? Cell::null() : Cell::of((r.*K).layer); }),
      column<Row>("operation", ColType::kText, "operation label", "none",
                  [](const Row& r) { return opt_text((r.*K).operation); }),
  }};
}

}  // namespace chopper
