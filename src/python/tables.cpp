#include "tables.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <map>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/sqlite_sink.hpp"

namespace chopper::python {

void TableList::begin(const TableSchema& schema) {
  cur_ = std::make_shared<Table>(schema);
}

void TableList::row(std::span<const Cell> cells) {
  cur_->add_row(cells);
}

void TableList::end() {
  tables_.push_back(std::move(cur_));
}

std::vector<std::shared_ptr<Table>> self_description(
    const std::vector<std::shared_ptr<Table>>& tables) {
  auto docs = std::make_shared<Table>(
      TableSchema{"chopper_tables", "", {{"table_name", ColType::kText}, {"doc", ColType::kText}}});
  auto cols = std::make_shared<Table>(TableSchema{"chopper_columns",
                                                  "",
                                                  {{"table_name", ColType::kText},
                                                   {"column_name", ColType::kText},
                                                   {"type", ColType::kText},
                                                   {"doc", ColType::kText},
                                                   {"unit", ColType::kText},
                                                   {"null_when", ColType::kText}}});
  for (const auto& t : tables) {
    const TableSchema& s = t->schema();
    docs->add_row({Cell::of(s.name), Cell::of(s.doc)});
    for (const ColumnSpec& c : s.columns)
      cols->add_row({Cell::of(s.name), Cell::of(c.name), Cell::of(col_type_name(c.type)),
                     Cell::of(c.doc), Cell::of(c.unit), Cell::of(c.null_when)});
  }
  return {docs, cols};
}

namespace {

// An open database, closed when this goes.
struct Db {
  sqlite3* db = nullptr;
  std::string path;
  ~Db() { sqlite3_close_v2(db); }
  [[noreturn]] void fail(std::string_view what) const {
    throw Error(fmt::format("{}: {}: {}", path, what, db ? sqlite3_errmsg(db) : "cannot open"));
  }
};

// A prepared statement, finalized when this goes.
struct Stmt {
  sqlite3_stmt* s = nullptr;
  Stmt(const Db& db, const std::string& sql) {
    if (sqlite3_prepare_v2(db.db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) db.fail(sql);
  }
  ~Stmt() { sqlite3_finalize(s); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(s, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s, col)))
             : std::string();
  }
};

// The schemas of the result tables, in the order they were written (chopper_tables' rowids).
std::vector<TableSchema> read_schemas(const Db& db) {
  std::vector<TableSchema> schemas;
  std::map<std::string, size_t> index;
  {
    Stmt st(db, "SELECT table_name, doc FROM chopper_tables ORDER BY rowid");
    while (sqlite3_step(st.s) == SQLITE_ROW) {
      index[st.text(0)] = schemas.size();
      schemas.push_back({st.text(0), st.text(1), {}});
    }
  }
  Stmt st(db,
          "SELECT table_name, column_name, type, doc, unit, null_when FROM chopper_columns "
          "ORDER BY rowid");
  while (sqlite3_step(st.s) == SQLITE_ROW) {
    auto it = index.find(st.text(0));
    if (it == index.end()) continue;
    ColType type = ColType::kText;
    if (!parse_enum(st.text(2), type))
      throw Error(fmt::format("{}: column {}.{} has type '{}', not INTEGER, REAL or TEXT", db.path,
                              st.text(0), st.text(1), st.text(2)));
    schemas[it->second].columns.emplace_back(st.text(1), type, st.text(3), st.text(4), st.text(5));
  }
  return schemas;
}

// One table's rows, as stored.
std::shared_ptr<Table> read_table(const Db& db, const TableSchema& schema) {
  auto t = std::make_shared<Table>(schema);
  std::string sql = "SELECT ";
  for (size_t c = 0; c < schema.columns.size(); ++c)
    sql += fmt::format("{}\"{}\"", c ? ", " : "", schema.columns[c].name);
  sql += fmt::format(" FROM \"{}\" ORDER BY rowid", schema.name);
  Stmt st(db, sql);
  std::vector<Cell> cells(schema.columns.size());
  int rc = 0;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    for (size_t c = 0; c < cells.size(); ++c) {
      const int k = static_cast<int>(c);
      switch (sqlite3_column_type(st.s, k)) {
        case SQLITE_NULL:
          cells[c] = Cell::null();
          break;
        case SQLITE_INTEGER:
          cells[c] = schema.columns[c].type == ColType::kReal
                         ? Cell::of(sqlite3_column_double(st.s, k))
                         : Cell::of(static_cast<int64_t>(sqlite3_column_int64(st.s, k)));
          break;
        case SQLITE_FLOAT:
          cells[c] = Cell::of(sqlite3_column_double(st.s, k));
          break;
        default: {
          const unsigned char* p = sqlite3_column_text(st.s, k);
          cells[c] = Cell::of(std::string_view(reinterpret_cast<const char*>(p),
                                               static_cast<size_t>(sqlite3_column_bytes(st.s, k))));
        }
      }
    }
    t->add_row(cells);
  }
  if (rc != SQLITE_DONE) db.fail("reading table " + schema.name);
  return t;
}

}  // namespace

std::vector<std::shared_ptr<Table>> read_sqlite_tables(const std::string& path) {
  Db db;
  db.path = path;
  if (sqlite3_open_v2(path.c_str(), &db.db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    db.fail("cannot open");
  {
    Stmt st(db, "SELECT count(*) FROM sqlite_master WHERE name = 'chopper_tables'");
    if (sqlite3_step(st.s) != SQLITE_ROW || sqlite3_column_int(st.s, 0) == 0)
      throw Error(
          fmt::format("{}: not a database chopper analyze wrote (no chopper_tables)", path));
  }
  std::vector<std::shared_ptr<Table>> tables;
  for (const TableSchema& s : read_schemas(db)) tables.push_back(read_table(db, s));
  return tables;
}

void write_tables(const std::vector<std::shared_ptr<Table>>& tables, const std::string& dir,
                  bool csv) {
  OutputDir out(dir);
  {
    SqliteSink db(out.stage("chopper.sqlite"));
    std::optional<CsvSink> csv_sink;
    FanoutSink sink;
    sink.add(db);
    sink.add(out.recorder());
    if (csv) {
      csv_sink.emplace(dir, &out);
      sink.add(*csv_sink);
    }
    for (const auto& t : tables) write_table(*t, sink);
  }
  out.commit();
}

size_t write_report(const std::vector<std::shared_ptr<Table>>& tables, const std::string& path,
                    const std::string& title, const std::string& device) {
  html::TableStore store(html::report_tables());
  for (const auto& t : tables) write_table(*t, store);
  html::ReportInfo info;
  info.title = title;
  info.device = device;
  info.command = "chopper.Analysis.report (Python)";
  std::vector<std::string> ids;
  const std::string doc = html::render_report(store, info, &ids);
  OutputFile f(path, false);
  f.write(doc);
  f.commit();
  return ids.size();
}

}  // namespace chopper::python
