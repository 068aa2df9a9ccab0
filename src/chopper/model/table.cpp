#include "chopper/model/table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace chopper {

namespace {

std::string_view cell_kind_name(Cell::Kind k) {
  switch (k) {
    case Cell::kNull:
      return "NULL";
    case Cell::kInt:
      return "an integer";
    case Cell::kReal:
      return "a real";
    case Cell::kText:
      return "text";
  }
  return "?";
}

bool fits(Cell::Kind k, ColType t) {
  switch (k) {
    case Cell::kNull:
      return true;
    case Cell::kInt:
      return t == ColType::kInt || t == ColType::kReal;
    case Cell::kReal:
      return t == ColType::kReal;
    case Cell::kText:
      return t == ColType::kText;
  }
  return false;
}

}  // namespace

void Cell::unsigned_out_of_range() {
  throw Error("Cell::of: unsigned value does not fit in int64");
}

void validate_schema(const TableSchema& schema) {
  if (schema.name.empty()) throw Error("table schema: empty table name");
  std::unordered_set<std::string_view> seen;
  for (const ColumnSpec& c : schema.columns) {
    if (c.name.empty()) throw Error(fmt::format("table '{}': empty column name", schema.name));
    if (!seen.insert(c.name).second)
      throw Error(fmt::format("table '{}': duplicate column '{}'", schema.name, c.name));
  }
}

void validate_row(const TableSchema& schema, std::span<const Cell> cells) {
  if (cells.size() != schema.columns.size())
    throw Error(fmt::format("table '{}': row has {} cells, the table has {} columns", schema.name,
                            cells.size(), schema.columns.size()));
  for (size_t c = 0; c < cells.size(); ++c) {
    const ColType t = schema.columns[c].type;
    if (!fits(cells[c].kind, t))
      throw Error(fmt::format("table '{}': column '{}' ({}) cannot hold {} value", schema.name,
                              schema.columns[c].name, col_type_name(t),
                              cell_kind_name(cells[c].kind)));
  }
}

bool selects_table(const TableSelection& selection, std::string_view name) {
  return selection.empty() || selection.find(name) != selection.end();
}

TableSchema select_columns(const TableSchema& schema, const TableSelection& selection,
                           std::vector<size_t>* kept) {
  auto it = selection.find(schema.name);
  const bool whole = it == selection.end() || it->second.empty();
  TableSchema out{schema.name, schema.doc, {}};
  if (kept) kept->clear();
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    if (!whole &&
        std::find(it->second.begin(), it->second.end(), schema.columns[c].name) == it->second.end())
      continue;
    out.columns.push_back(schema.columns[c]);
    if (kept) kept->push_back(c);
  }
  return out;
}

Table::Table(TableSchema schema) : schema_(std::move(schema)) {
  validate_schema(schema_);
  columns_.resize(schema_.columns.size());
}

size_t Table::col(std::string_view name) const {
  for (size_t c = 0; c < schema_.columns.size(); ++c)
    if (schema_.columns[c].name == name) return c;
  throw Error(fmt::format("table '{}': no column '{}'", schema_.name, name));
}

void Table::reserve(size_t rows) {
  for (size_t c = 0; c < columns_.size(); ++c) {
    Column& col = columns_[c];
    col.null.reserve(rows);
    switch (schema_.columns[c].type) {
      case ColType::kInt:
        col.ints.reserve(rows);
        break;
      case ColType::kReal:
        col.reals.reserve(rows);
        break;
      case ColType::kText:
        col.codes.reserve(rows);
        break;
    }
  }
}

void Table::add_row(std::span<const Cell> cells) {
  validate_row(schema_, cells);  // before any column changes: a bad row adds nothing
  // Grown four-fold up to a million rows, not doubled: the columns copied and fresh pages
  // touched a third as often (room reserved and not yet written costs no memory); doubled above,
  // so that room reserved stays within twice the rows.
  if (!columns_.empty() && columns_[0].null.size() == columns_[0].null.capacity())
    reserve(std::max<size_t>(64, rows_ < (size_t{1} << 20) ? rows_ * 4 : rows_ * 2));
  for (size_t c = 0; c < cells.size(); ++c) {
    const Cell& v = cells[c];
    Column& col = columns_[c];
    col.null.push_back(v.kind == Cell::kNull ? 1 : 0);
    switch (schema_.columns[c].type) {
      case ColType::kInt:
        col.ints.push_back(v.kind == Cell::kInt ? v.i : 0);
        break;
      case ColType::kReal:
        col.reals.push_back(v.kind == Cell::kReal  ? v.r
                            : v.kind == Cell::kInt ? static_cast<double>(v.i)
                                                   : 0.0);
        break;
      case ColType::kText:
        col.codes.push_back(v.kind == Cell::kText ? col.add_text(v.s) : kNoText);
        break;
    }
  }
  ++rows_;
}

void Table::fail_range(size_t row, size_t col) const {
  throw Error(fmt::format("table '{}': cell ({}, {}) out of range ({} rows, {} columns)",
                          schema_.name, row, col, rows_, schema_.columns.size()));
}

void Table::fail_check(size_t row, size_t col, ColType want) const {
  if (col >= schema_.columns.size() || row >= rows_) fail_range(row, col);
  const ColumnSpec& spec = schema_.columns[col];
  throw Error(fmt::format("table '{}': column '{}' is {}, not {}", schema_.name, spec.name,
                          col_type_name(spec.type), col_type_name(want)));
}

const Table::Column& Table::column(size_t col, ColType want) const {
  if (col >= schema_.columns.size())
    throw Error(fmt::format("table '{}': column {} out of range ({} columns)", schema_.name, col,
                            schema_.columns.size()));
  const ColumnSpec& spec = schema_.columns[col];
  if (spec.type != want)
    throw Error(fmt::format("table '{}': column '{}' is {}, not {}", schema_.name, spec.name,
                            col_type_name(spec.type), col_type_name(want)));
  return columns_[col];
}

std::span<const uint8_t> Table::null_flags(size_t col) const {
  if (col >= schema_.columns.size())
    throw Error(fmt::format("table '{}': column {} out of range ({} columns)", schema_.name, col,
                            schema_.columns.size()));
  return columns_[col].null;
}

std::span<const int64_t> Table::int_values(size_t col) const {
  return column(col, ColType::kInt).ints;
}

std::span<const double> Table::real_values(size_t col) const {
  return column(col, ColType::kReal).reals;
}

uint32_t Table::Column::add_text(std::string_view s) {
  if (last != kNoText && text_of(last) == s) return last;
  auto it = entry.find(s);
  if (it == entry.end()) {
    if (text_end.size() >= kNoText) throw Error("Table: more than 4 billion distinct texts");
    text.append(s);
    text_end.push_back(text.size());
    it = entry.emplace(std::string(s), static_cast<uint32_t>(text_end.size() - 1)).first;
  }
  return last = it->second;
}

std::span<const uint32_t> Table::text_codes(size_t col) const {
  return column(col, ColType::kText).codes;
}

std::string_view Table::text_bytes(size_t col) const {
  return column(col, ColType::kText).text;
}

std::span<const uint64_t> Table::text_ends(size_t col) const {
  return column(col, ColType::kText).text_end;
}

TableSink::~TableSink() = default;

void write_table(const Table& table, TableSink& sink) {
  sink.begin(table.schema());
  std::vector<Cell> cells(table.cols());
  for (size_t r = 0; r < table.rows(); ++r) {
    for (size_t c = 0; c < cells.size(); ++c) cells[c] = table.cell(r, c);
    sink.row(cells);
  }
  sink.end();
}

void FanoutSink::begin(const TableSchema& schema) {
  for (TableSink* s : sinks_) s->begin(schema);
}

void FanoutSink::row(std::span<const Cell> cells) {
  for (TableSink* s : sinks_) s->row(cells);
}

void FanoutSink::end() {
  for (TableSink* s : sinks_) s->end();
}

}  // namespace chopper
