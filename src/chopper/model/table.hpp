#pragma once
// Result tables: the one shape every report writer consumes. A table is a schema (name, doc, typed
// columns whose names carry their unit: dur_ns, share, ...) and rows of cells. Producers either
// fill an in-memory Table or stream rows straight into a TableSink (CSV, SQLite, ...), so tables
// with tens of millions of rows never have to sit in memory.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chopper/base/enum_names.hpp"
#include "chopper/base/error.hpp"

namespace chopper {

// The SQL type names.
#define CHOPPER_COL_TYPES(X) \
  X(kInt, "INTEGER")         \
  X(kReal, "REAL")           \
  X(kText, "TEXT")
CHOPPER_ENUM(ColType, CHOPPER_COL_TYPES)
inline std::string_view col_type_name(ColType t) {
  return enum_name(t);
}

struct ColumnSpec {
  ColumnSpec(std::string name_, ColType type_, std::string doc_ = {}, std::string unit_ = {},
             std::string null_when_ = {})
      : name(std::move(name_)),
        type(type_),
        doc(std::move(doc_)),
        unit(std::move(unit_)),
        null_when(std::move(null_when_)) {}
  std::string name;
  ColType type;
  std::string doc;        // what the column means
  std::string unit;       // from the name's suffix (unit_of_name); "" for counts and labels
  std::string null_when;  // "never", or when a cell is NULL
};

struct TableSchema {
  std::string name;
  std::string doc;
  std::vector<ColumnSpec> columns;
};

// Throws chopper::Error unless the table name is non-empty and the column names are non-empty and
// distinct (every sink and Table check this in begin()/their constructor).
void validate_schema(const TableSchema& schema);

// Which tables a reader keeps, and of each which columns: an empty selection keeps every table
// whole; a table mapped to no columns is kept whole, else only the columns named (in the table's
// own order). The report keeps what it draws (report/html/report_html.hpp, report_tables).
using TableSelection = std::map<std::string, std::vector<std::string>, std::less<>>;

// Whether `selection` keeps the table called `name`.
bool selects_table(const TableSelection& selection, std::string_view name);

// `schema` with only the columns `selection` keeps of it, in the schema's order; `kept` (may be
// null) receives the index in `schema` of each column kept. A name that is not a column is not an
// error (an older file may lack it): the reader of the table finds it missing.
TableSchema select_columns(const TableSchema& schema, const TableSelection& selection,
                           std::vector<size_t>* kept = nullptr);

// One value of a row. A view: text cells point at bytes owned by the caller, which must stay valid
// until the cell has been handed to Table::add_row or TableSink::row.
struct Cell {
  enum Kind : uint8_t { kNull, kInt, kReal, kText } kind = kNull;
  int64_t i = 0;
  double r = 0;
  std::string_view s;

  static Cell null() { return {}; }
  // Any integer type except bool (and char types, which are text, not numbers). An unsigned value
  // above INT64_MAX throws chopper::Error rather than wrapping.
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char> && !std::same_as<T, char8_t> &&
           !std::same_as<T, char16_t> && !std::same_as<T, char32_t> &&
           !std::same_as<T, wchar_t>) static Cell of(T v) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (v > static_cast<T>(std::numeric_limits<int64_t>::max())) unsigned_out_of_range();
    }
    Cell c;
    c.kind = kInt;
    c.i = static_cast<int64_t>(v);
    return c;
  }
  static Cell of(double v) {
    Cell c;
    c.kind = kReal;
    c.r = v;
    return c;
  }
  static Cell of(std::string_view v) {
    Cell c;
    c.kind = kText;
    c.s = v;
    return c;
  }
  // A C string is text (not a pointer converted to bool); nullptr is NULL.
  static Cell of(const char* v) { return v ? of(std::string_view(v)) : null(); }
  static Cell of(bool) = delete;

  bool is_null() const { return kind == kNull; }

 private:
  [[noreturn]] static void unsigned_out_of_range();
};

// Throws chopper::Error unless `cells` has one cell per column and each cell fits its column: NULL
// fits any column, an int fits an INTEGER or REAL column, a real a REAL one, text a TEXT one. The
// message names the table and the column.
void validate_row(const TableSchema& schema, std::span<const Cell> cells);

// An in-memory table, stored column-wise. Text is owned by the table; every cell has a null flag.
class Table {
 public:
  explicit Table(TableSchema schema);

  const TableSchema& schema() const { return schema_; }
  const std::string& name() const { return schema_.name; }
  size_t rows() const { return rows_; }
  size_t cols() const { return schema_.columns.size(); }
  // The index of the column called `name`; throws chopper::Error naming the table if there is none.
  size_t col(std::string_view name) const;

  // Appends a row (validated as validate_row does; nothing is added when it throws). An int cell in
  // a REAL column is stored as a double.
  void add_row(std::span<const Cell> cells);
  void add_row(std::initializer_list<Cell> cells) {
    add_row(std::span<const Cell>(cells.begin(), cells.size()));
  }
  void reserve(size_t rows);

  // Typed getters; each throws chopper::Error if `col` is not of that type or row/col are out of
  // range. A NULL cell reads as 0, 0.0 or "". get_text's view is valid until the table is modified.
  bool is_null(size_t row, size_t col) const;
  int64_t get_int(size_t row, size_t col) const;
  double get_real(size_t row, size_t col) const;
  std::string_view get_text(size_t row, size_t col) const;
  // The cell as a Cell (kNull for NULL; a REAL column's cells are kReal).
  Cell cell(size_t row, size_t col) const;

  // A whole column's storage, for readers that take columns at once (the Python module hands them
  // to numpy without a copy); valid until the table is modified. Each throws chopper::Error if
  // `col` is out of range or, for the typed ones, not of that type.
  // One flag per row, 1 where the cell is NULL.
  std::span<const uint8_t> null_flags(size_t col) const;
  // An INTEGER column's values (0 where NULL), a REAL column's (0.0 where NULL).
  std::span<const int64_t> int_values(size_t col) const;
  std::span<const double> real_values(size_t col) const;
  // A TEXT column, kept as a dictionary: each distinct text once (its bytes back to back in
  // text_bytes, entry k ending at text_ends[k]), and per row the entry of its text (kNoText where
  // NULL). A name repeated on a million rows is held once.
  static constexpr uint32_t kNoText = UINT32_MAX;
  std::string_view text_bytes(size_t col) const;
  std::span<const uint64_t> text_ends(size_t col) const;
  std::span<const uint32_t> text_codes(size_t col) const;

 private:
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Column {
    std::vector<uint8_t> null;
    std::vector<int64_t> ints;       // kInt columns
    std::vector<double> reals;       // kReal columns
    std::vector<uint32_t> codes;     // kText columns: the row's dictionary entry
    std::string text;                // kText columns: the distinct texts' bytes, back to back
    std::vector<uint64_t> text_end;  // kText columns: end offset of each distinct text
    std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>> entry;  // text -> entry
    uint32_t last = kNoText;  // the entry of the last text added (rows repeat their neighbour's)
    uint32_t add_text(std::string_view s);
    std::string_view text_of(uint32_t k) const {
      if (k == kNoText) return {};
      const uint64_t b = k ? text_end[k - 1] : 0;
      return std::string_view(text).substr(b, text_end[k] - b);
    }
  };
  // Throws unless (row, col) is a cell of a column of type `want`. Inline: the report reads
  // millions of cells through the getters; the throwing half is out of line.
  void check(size_t row, size_t col, ColType want) const {
    if (col >= schema_.columns.size() || row >= rows_ || schema_.columns[col].type != want)
        [[unlikely]]
      fail_check(row, col, want);
  }
  [[noreturn]] void fail_check(size_t row, size_t col, ColType want) const;
  [[noreturn]] void fail_range(size_t row, size_t col) const;
  // Throws unless `col` is a column of type `want`.
  const Column& column(size_t col, ColType want) const;

  TableSchema schema_;
  std::vector<Column> columns_;
  size_t rows_ = 0;
};

inline bool Table::is_null(size_t row, size_t col) const {
  if (col >= schema_.columns.size() || row >= rows_) [[unlikely]]
    fail_range(row, col);
  return columns_[col].null[row] != 0;
}
inline int64_t Table::get_int(size_t row, size_t col) const {
  check(row, col, ColType::kInt);
  return columns_[col].ints[row];
}
inline double Table::get_real(size_t row, size_t col) const {
  check(row, col, ColType::kReal);
  return columns_[col].reals[row];
}
inline std::string_view Table::get_text(size_t row, size_t col) const {
  check(row, col, ColType::kText);
  return columns_[col].text_of(columns_[col].codes[row]);
}
inline Cell Table::cell(size_t row, size_t col) const {
  if (is_null(row, col)) return Cell::null();
  const Column& c = columns_[col];
  switch (schema_.columns[col].type) {
    case ColType::kInt:
      return Cell::of(c.ints[row]);
    case ColType::kReal:
      return Cell::of(c.reals[row]);
    case ColType::kText:
      return Cell::of(c.text_of(c.codes[row]));
  }
  return Cell::null();
}

// Where rows go. A sink receives any number of tables in turn: begin(schema), row()... , end().
// The cells passed to row() are valid only during the call.
class TableSink {
 public:
  virtual ~TableSink();
  virtual void begin(const TableSchema& schema) = 0;
  virtual void row(std::span<const Cell> cells) = 0;
  virtual void end() = 0;
};

// Streams `table` into `sink` (begin, one row() per row, end).
void write_table(const Table& table, TableSink& sink);

// Forwards every call to each of several sinks, in order. Does not own them.
class FanoutSink : public TableSink {
 public:
  FanoutSink() = default;
  explicit FanoutSink(std::vector<TableSink*> sinks) : sinks_(std::move(sinks)) {}
  void add(TableSink& sink) { sinks_.push_back(&sink); }

  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;

 private:
  std::vector<TableSink*> sinks_;
};

}  // namespace chopper
