#pragma once
// A result table declared once (docs/architecture.md, "Tables declared once"): its name, its doc
// and, for each column, the name, type, unit, meaning, when it is NULL and how a row gives its
// cell. The schema every sink receives, the cells of each row, the self-description in the SQLite
// database (chopper_tables, chopper_columns) and the column tables of docs/schema.md
// (scripts/schema_doc.py) all come from this one declaration, and the report reads columns by
// typed handle (ColumnHandle), checked when it compiles.
//
//   constexpr auto kOverlapTable = table<BreakdownRow>(
//       "overlap", "Communication-computation overlap ...",
//       column<&BreakdownRow::rank>("rank", "rank", kNever),
//       column<BreakdownRow>("overlap_share", ColType::kReal, "overlapped_comm_ns / comm_ns",
//                            "no communication",
//                            [](const BreakdownRow& b) { return ratio(b.overlapped_comm_ns,
//                                                                     b.comm_ns); }));
//
// A column's unit follows from its name (unit_of_name: `_ns` ns, `_share` fraction, ...), as every
// result column carries its unit in its name.
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "chopper/model/table.hpp"

namespace chopper {

// The NULL meaning of a column that is never NULL.
inline constexpr std::string_view kNever = "never";

// The unit a column's name carries: its suffix (`dur_ns` → ns, `power_w` → W, `busbw_gbs` →
// GB/s, `compute_share` → fraction, ...); "" for counts, labels and names.
constexpr std::string_view unit_of_name(std::string_view name) {
  struct Suffix {
    std::string_view suffix, unit;
  };
  // A suffix that ends another (`_s` of `_per_s`) comes after it.
  constexpr Suffix kSuffixes[] = {
      {"_w_per_s", "W/s"},
      {"_per_s", "1/s"},
      {"_ns", "ns"},
      {"_us", "µs"},
      {"_ms", "ms"},
      {"_s", "s"},
      {"_share", "fraction"},
      {"_fraction", "fraction"},
      {"_pct", "%"},
      {"_w", "W"},
      {"_j", "J"},
      {"_mhz", "MHz"},
      {"_c", "°C"},
      {"_gbs", "GB/s"},
      {"_tbs", "TB/s"},
      {"_tflops", "TFLOP/s"},
      {"_bytes", "bytes"},
      {"_flops", "FLOP"},
      {"_cycles", "cycles"},
      {"_mib", "MiB"},
      {"_gib", "GiB"},
      {"_ratio", "ratio"},
      {"_cores", "cores"},
  };
  for (const Suffix& s : kSuffixes)
    if (name.size() > s.suffix.size() && name.ends_with(s.suffix)) return s.unit;
  if (name == "share" || name == "fraction" || name.starts_with("share_of_")) return "fraction";
  if (name == "bytes") return "bytes";
  if (name == "flops") return "FLOP";
  return "";
}

// One column of a table whose rows are `Row`s.
template <class Row>
struct Column {
  std::string_view name;
  ColType type = ColType::kInt;
  std::string_view unit;
  std::string_view meaning;
  std::string_view null_when;  // kNever, or when the cell is NULL
  Cell (*cell)(const Row&) = nullptr;
};

namespace table_detail {

template <class T>
struct member_of;
template <class S, class M>
struct member_of<M S::*> {
  using cls = S;
  using type = M;
};

template <class T>
constexpr ColType col_type_of() {
  if constexpr (std::is_floating_point_v<T>)
    return ColType::kReal;
  else if constexpr (std::is_integral_v<T>)
    return ColType::kInt;
  else
    return ColType::kText;
}

// The cell of a stored value: integers as they are, reals with NaN as NULL, text as it is.
template <auto M>
Cell member_cell(const typename member_of<decltype(M)>::cls& r) {
  using T = typename member_of<decltype(M)>::type;
  const T& v = r.*M;
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v) ? Cell::null() : Cell::of(static_cast<double>(v));
  else if constexpr (std::is_same_v<T, std::string>)
    return Cell::of(std::string_view(v));
  else
    return Cell::of(v);
}

template <class Row>
constexpr std::array<Column<Row>, 1> as_columns(const Column<Row>& c) {
  return {c};
}
template <class Row, size_t K>
constexpr std::array<Column<Row>, K> as_columns(const std::array<Column<Row>, K>& a) {
  return a;
}
template <class Row, class A>
inline constexpr size_t column_count = 1;
template <class Row, size_t K>
inline constexpr size_t column_count<Row, std::array<Column<Row>, K>> = K;

}  // namespace table_detail

// A column holding a member of the row as it is (a real NaN is NULL). Type and unit follow from
// the member and the name.
template <auto M>
constexpr Column<typename table_detail::member_of<decltype(M)>::cls> column(
    std::string_view name, std::string_view meaning, std::string_view null_when) {
  using T = typename table_detail::member_of<decltype(M)>::type;
  return {name,      table_detail::col_type_of<T>(), unit_of_name(name), meaning,
          null_when, &table_detail::member_cell<M>};
}

// A column computed from the row.
template <class Row>
constexpr Column<Row> column(std::string_view name, ColType type, std::string_view meaning,
                             std::string_view null_when, Cell (*cell)(const Row&)) {
  return {name, type, unit_of_name(name), meaning, null_when, cell};
}

// The column with a unit its name does not carry (`mfu`: fraction; `tflops_per_gpu`: TFLOP/s;
// `tokens_per_j`: tokens/J).
template <class Row>
constexpr Column<Row> with_unit(Column<Row> c, std::string_view unit) {
  c.unit = unit;
  return c;
}

// A column holding member `M` of the row a view points at (`View::row`, a pointer), as
// column<M> holds it of that row (a real NaN is NULL): for tables whose rows are a stored row
// plus context.
template <class View, auto M>
constexpr Column<View> viewed_column(std::string_view name, std::string_view meaning,
                                     std::string_view null_when) {
  const auto c = column<M>(name, meaning, null_when);
  return {c.name,      c.type,
          c.unit,      c.meaning,
          c.null_when, [](const View& v) { return table_detail::member_cell<M>(*v.row); }};
}

// Where a column sits in its table, for reading it back from a Table by position with its type
// known (the HTML report). Made by TableDef::handle at compile time: a name that is not a column
// of the table does not compile.
struct ColumnHandle {
  std::string_view table;
  size_t index = 0;
  ColType type = ColType::kInt;
  std::string_view name;
};

template <class Row, size_t N>
struct TableDef {
  std::string_view name;
  std::string_view doc;
  std::array<Column<Row>, N> columns;

  using row_type = Row;
  static constexpr size_t size() { return N; }

  TableSchema schema() const {
    TableSchema s{std::string(name), std::string(doc), {}};
    s.columns.reserve(N);
    for (const Column<Row>& c : columns)
      s.columns.push_back(ColumnSpec{std::string(c.name), c.type, std::string(c.meaning),
                                     std::string(c.unit), std::string(c.null_when)});
    return s;
  }
  // The row's cells, in column order (text cells view the row's bytes).
  std::array<Cell, N> cells(const Row& r) const {
    std::array<Cell, N> out;
    for (size_t k = 0; k < N; ++k) out[k] = columns[k].cell(r);
    return out;
  }
  // Hands the row to the sink.
  void put(TableSink& sink, const Row& r) const {
    const std::array<Cell, N> c = cells(r);
    sink.row(std::span<const Cell>(c.data(), c.size()));
  }
  consteval ColumnHandle handle(std::string_view col) const {
    for (size_t k = 0; k < N; ++k)
      if (columns[k].name == col) return ColumnHandle{name, k, columns[k].type, columns[k].name};
    throw "no such column";  // not a constant expression: the name is not a column of the table
  }
};

// Declares a table: its name, its doc (one paragraph, docs/schema.md's first under its heading)
// and its columns in order; an argument may be one Column or an array of them (a group shared by
// several tables, such as the label columns).
template <class Row, class... A>
constexpr auto table(std::string_view name, std::string_view doc, const A&... cols) {
  constexpr size_t n = (table_detail::column_count<Row, A> + ...);
  TableDef<Row, n> t{name, doc, {}};
  size_t k = 0;
  (
      [&] {
        for (const Column<Row>& c : table_detail::as_columns<Row>(cols)) t.columns[k++] = c;
      }(),
      ...);
  return t;
}

}  // namespace chopper
