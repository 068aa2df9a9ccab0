#pragma once
// What the table declarations share (model/table_def.hpp): the cells of values that may be unknown
// (NULL) and the label columns.
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
