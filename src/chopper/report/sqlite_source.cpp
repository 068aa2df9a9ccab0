#include "chopper/report/sqlite_source.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/base/thread_pool.hpp"

namespace chopper {

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
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(s, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(s, col)))
             : std::string();
  }
};

std::string quoted(std::string_view ident) {
  std::string o = "\"";
  for (char c : ident) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + '"';
}

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
// The rows a table has, from its last row id (analyze's tables are only appended to: the count;
// otherwise an estimate, for reserving and for reading the largest first).
size_t row_estimate(const Db& db, const TableSchema& schema) {
  Stmt st(db, "SELECT max(rowid) FROM " + quoted(schema.name));
  return sqlite3_step(st.s) == SQLITE_ROW
             ? static_cast<size_t>(std::max<sqlite3_int64>(sqlite3_column_int64(st.s, 0), 0))
             : 0;
}

Table read_table(const Db& db, const TableSchema& schema, size_t rows) {
  std::string sql = "SELECT ";
  for (size_t c = 0; c < schema.columns.size(); ++c)
    sql += (c ? ", " : "") + quoted(schema.columns[c].name);
  sql += " FROM " + quoted(schema.name) + " ORDER BY rowid";
  Stmt st(db, sql);
  std::vector<Cell> cells(schema.columns.size());
  Table t(schema);
  t.reserve(std::min<size_t>(rows, size_t{1} << 22));  // a row id far beyond the rows: grown
  int rc = 0;
  while ((rc = sqlite3_step(st.s)) == SQLITE_ROW) {
    for (size_t c = 0; c < cells.size(); ++c) {
      // The column's value once (sqlite3_column_* each find it again and check the statement),
      // then read as its type.
      sqlite3_value* v = sqlite3_column_value(st.s, static_cast<int>(c));
      const ColType type = schema.columns[c].type;
      switch (sqlite3_value_type(v)) {
        case SQLITE_NULL:
          cells[c] = Cell::null();
          break;
        case SQLITE_INTEGER:
          cells[c] = type == ColType::kReal
                         ? Cell::of(sqlite3_value_double(v))
                         : Cell::of(static_cast<int64_t>(sqlite3_value_int64(v)));
          break;
        case SQLITE_FLOAT:
          cells[c] = Cell::of(sqlite3_value_double(v));
          break;
        default: {
          const unsigned char* p = sqlite3_value_text(v);
          cells[c] = Cell::of(std::string_view(reinterpret_cast<const char*>(p),
                                               static_cast<size_t>(sqlite3_value_bytes(v))));
        }
      }
    }
    try {
      t.add_row(cells);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: table {}: {}", db.path, schema.name, e.what()));
    }
  }
  if (rc != SQLITE_DONE) db.fail("reading table " + schema.name);
  return t;
}

bool has_table(const Db& db, const char* name) {
  Stmt st(db, fmt::format("SELECT count(*) FROM sqlite_master WHERE name = '{}'", name));
  return sqlite3_step(st.s) == SQLITE_ROW && sqlite3_column_int(st.s, 0) != 0;
}

// Opens `path` read-only; throws unless it is a database chopper wrote.
void open_chopper_db(Db& db, const std::string& path) {
  db.path = path;
  // One thread reads the connection: no mutex around each call.
  if (sqlite3_open_v2(path.c_str(), &db.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK)
    db.fail("cannot open");
  // Read through a memory map (no copy of each page into SQLite's cache), up to 64 GiB.
  sqlite3_exec(db.db, "PRAGMA mmap_size=68719476736", nullptr, nullptr, nullptr);
  if (!has_table(db, "chopper_tables"))
    throw Error(fmt::format("{}: not a database chopper analyze wrote (no chopper_tables)", path));
}

}  // namespace

bool is_sqlite_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[16] = {};
  if (!f.read(head, sizeof head)) return false;
  return std::memcmp(head, "SQLite format 3", 16) == 0;
}

std::vector<Table> read_sqlite_tables(const std::string& path, const TableSelection& keep,
                                      unsigned threads) {
  std::vector<TableSchema> schemas;
  std::vector<size_t> rows;
  {
    Db db;
    open_chopper_db(db, path);
    for (TableSchema& s : read_schemas(db))
      if (selects_table(keep, s.name)) {  // only the columns kept are read
        rows.push_back(row_estimate(db, s));
        schemas.push_back(select_columns(s, keep));
      }
  }
  // The largest tables first, so that the threads finish together.
  std::vector<size_t> order(schemas.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rows[a] > rows[b]; });
  std::vector<std::optional<Table>> read(schemas.size());
  const size_t conns = std::min<size_t>(std::max(threads, 1U), schemas.size());
  std::vector<Db> dbs(conns);
  for (Db& db : dbs) open_chopper_db(db, path);
  std::atomic<size_t> next{0};
  // Each thread its own connection, taking the next table until none is left.
  parallel_for(conns, static_cast<unsigned>(conns), [&](size_t c) {
    for (size_t i = next.fetch_add(1); i < schemas.size(); i = next.fetch_add(1)) {
      const size_t k = order[i];
      read[k].emplace(read_table(dbs[c], schemas[k], rows[k]));
    }
  });
  std::vector<Table> tables;
  tables.reserve(read.size());
  for (std::optional<Table>& t : read) tables.push_back(std::move(*t));
  return tables;
}

bool is_chopper_database(const std::string& path) {
  if (!is_sqlite_file(path)) return false;
  try {
    Db db;
    open_chopper_db(db, path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::map<std::string, std::string> read_run_info(const std::string& path) {
  Db db;
  open_chopper_db(db, path);
  std::map<std::string, std::string> info;
  if (!has_table(db, "chopper_run")) return info;
  Stmt st(db, "SELECT name, value FROM chopper_run ORDER BY rowid");
  while (sqlite3_step(st.s) == SQLITE_ROW) info[st.text(0)] = st.text(1);
  return info;
}

}  // namespace chopper
