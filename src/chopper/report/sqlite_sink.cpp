#include "chopper/report/sqlite_sink.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace chopper {

namespace {

std::string quote_ident(std::string_view s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"') o.push_back('"');
    o.push_back(ch);
  }
  o.push_back('"');
  return o;
}

// Finalizes a statement on every path out of a scope.
struct StmtGuard {
  sqlite3_stmt* s;
  ~StmtGuard() { sqlite3_finalize(s); }
};

}  // namespace

SqliteSink::SqliteSink(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path_);
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec)
      throw Error(fmt::format("{}: cannot create directory {}: {}", path_, p.parent_path().string(),
                              ec.message()));
  }
  if (fs::is_directory(p, ec)) throw Error(fmt::format("{}: is a directory", path_));
  // Replace the file, and any journal left beside it that SQLite would otherwise roll back into it.
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) {
    fs::remove(path_ + suffix, ec);
    if (ec) throw Error(fmt::format("{}{}: cannot remove: {}", path_, suffix, ec.message()));
  }
  if (sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = fmt::format("{}: cannot open database: {}", path_,
                                  db_ ? sqlite3_errmsg(db_) : "out of memory");
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw Error(msg);
  }
  try {
    exec("PRAGMA journal_mode=OFF");
    exec("PRAGMA synchronous=OFF");
    // One writer, start to end: the file lock is taken once, not at every table's transaction.
    exec("PRAGMA locking_mode=EXCLUSIVE");
    exec(
        "CREATE TABLE chopper_tables (table_name TEXT PRIMARY KEY, doc TEXT);"
        "CREATE TABLE chopper_columns (table_name TEXT, column_name TEXT, type TEXT, doc TEXT, "
        "unit "
        "TEXT, null_when TEXT)");
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

SqliteSink::~SqliteSink() {
  sqlite3_finalize(insert_);
  sqlite3_finalize(insert_batch_);
  if (in_table_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close_v2(db_);
}

void SqliteSink::fail(std::string_view what) {
  throw Error(fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_)));
}

void SqliteSink::exec(const std::string& sql) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
}

void SqliteSink::describe_run(const std::vector<std::pair<std::string, std::string>>& info) {
  if (in_table_) throw Error(fmt::format("{}: describe_run inside a table", path_));
  exec("BEGIN");
  in_table_ = true;
  exec("CREATE TABLE chopper_run (name TEXT PRIMARY KEY, value TEXT)");
  StmtGuard ins{prepare("INSERT INTO chopper_run VALUES (?1, ?2)")};
  for (const auto& [name, value] : info) {
    sqlite3_bind_text64(ins.s, 1, name.data(), name.size(), SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text64(ins.s, 2, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8);
    if (sqlite3_step(ins.s) != SQLITE_DONE) fail("INSERT INTO chopper_run");
    sqlite3_reset(ins.s);
  }
  exec("COMMIT");
  in_table_ = false;
}

sqlite3_stmt* SqliteSink::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK)
    fail(sql);
  return s;
}

void SqliteSink::begin(const TableSchema& schema) {
  if (in_table_)
    throw Error(fmt::format("{}: SqliteSink::begin while '{}' is open", path_, schema_.name));
  validate_schema(schema);
  if (schema.name == "chopper_tables" || schema.name == "chopper_columns" ||
      schema.name == "chopper_run")
    throw Error(fmt::format("{}: table name '{}' is reserved", path_, schema.name));
  schema_ = schema;

  exec("BEGIN");
  in_table_ = true;
  try {
    start_table(schema);
  } catch (...) {
    sqlite3_finalize(insert_);
    sqlite3_finalize(insert_batch_);
    insert_ = insert_batch_ = nullptr;
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    in_table_ = false;
    throw;
  }
}

void SqliteSink::start_table(const TableSchema& schema) {
  const std::string name = quote_ident(schema.name);
  // The database is new (the constructor replaced the file): only a table this sink wrote can be
  // there to drop.
  if (!created_.insert(schema.name).second) exec("DROP TABLE IF EXISTS " + name);
  std::string create = "CREATE TABLE " + name + " (";
  std::string insert = "INSERT INTO " + name + " VALUES (";
  for (size_t c = 0; c < schema.columns.size(); ++c) {
    if (c) {
      create += ", ";
      insert += ", ";
    }
    create += quote_ident(schema.columns[c].name);
    create += ' ';
    create += col_type_name(schema.columns[c].type);
    insert += '?';
  }
  create += ')';
  insert += ')';
  exec(create);

  // The self-documentation: replace whatever an earlier table of this name said.
  {
    StmtGuard del{prepare("DELETE FROM chopper_columns WHERE table_name = ?1")};
    sqlite3_bind_text64(del.s, 1, schema.name.data(), schema.name.size(), SQLITE_STATIC,
                        SQLITE_UTF8);
    if (sqlite3_step(del.s) != SQLITE_DONE) fail("DELETE FROM chopper_columns");
  }
  {
    StmtGuard doc{prepare("INSERT OR REPLACE INTO chopper_tables VALUES (?1, ?2)")};
    sqlite3_bind_text64(doc.s, 1, schema.name.data(), schema.name.size(), SQLITE_STATIC,
                        SQLITE_UTF8);
    sqlite3_bind_text64(doc.s, 2, schema.doc.c_str(), schema.doc.size(), SQLITE_STATIC,
                        SQLITE_UTF8);
    if (sqlite3_step(doc.s) != SQLITE_DONE) fail("INSERT INTO chopper_tables");
  }
  {
    StmtGuard col{prepare("INSERT INTO chopper_columns VALUES (?1, ?2, ?3, ?4, ?5, ?6)")};
    for (const ColumnSpec& c : schema.columns) {
      const std::string_view type = col_type_name(c.type);
      sqlite3_bind_text64(col.s, 1, schema.name.data(), schema.name.size(), SQLITE_STATIC,
                          SQLITE_UTF8);
      sqlite3_bind_text64(col.s, 2, c.name.data(), c.name.size(), SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_text64(col.s, 3, type.data(), type.size(), SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_text64(col.s, 4, c.doc.c_str(), c.doc.size(), SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_text64(col.s, 5, c.unit.c_str(), c.unit.size(), SQLITE_STATIC, SQLITE_UTF8);
      sqlite3_bind_text64(col.s, 6, c.null_when.c_str(), c.null_when.size(), SQLITE_STATIC,
                          SQLITE_UTF8);
      if (sqlite3_step(col.s) != SQLITE_DONE) fail("INSERT INTO chopper_columns");
      sqlite3_reset(col.s);
    }
  }
  insert_ = prepare(insert);
  // Rows per batch: 64, or fewer so that a statement stays within SQLite's 32,766 parameters.
  const size_t ncols = std::max<size_t>(schema.columns.size(), 1);
  batch_rows_ = std::clamp<size_t>(32766 / ncols, 1, 64);
  // The batch statement is prepared when a first batch is full (parsing it costs more than a
  // small table's rows: most tables have a few dozen).
  insert_sql_ = std::move(insert);
  pending_.assign(batch_rows_ * schema.columns.size(), Cell());
  texts_.resize(pending_.size());
  pending_rows_ = 0;
}

void SqliteSink::bind_row(sqlite3_stmt* stmt, size_t r, int first) {
  const size_t ncols = schema_.columns.size();
  for (size_t c = 0; c < ncols; ++c) {
    const Cell& v = pending_[r * ncols + c];
    const int i = first + static_cast<int>(c);
    int rc = SQLITE_OK;
    switch (v.kind) {
      case Cell::kNull:
        rc = sqlite3_bind_null(stmt, i);
        break;
      case Cell::kInt:
        rc = schema_.columns[c].type == ColType::kReal
                 ? sqlite3_bind_double(stmt, i, static_cast<double>(v.i))
                 : sqlite3_bind_int64(stmt, i, v.i);
        break;
      case Cell::kReal:
        rc = sqlite3_bind_double(stmt, i, v.r);
        break;
      case Cell::kText:
        // SQLITE_STATIC: the text is in texts_ until the statement has been stepped and reset.
        // A null data pointer would bind NULL, so empty text points at a literal.
        rc = sqlite3_bind_text64(stmt, i, v.s.empty() ? "" : v.s.data(), v.s.size(), SQLITE_STATIC,
                                 SQLITE_UTF8);
        break;
    }
    if (rc != SQLITE_OK)
      fail(fmt::format("table '{}': bind column '{}'", schema_.name, schema_.columns[c].name));
  }
}

void SqliteSink::flush_rows() {
  if (pending_rows_ == 0) return;
  const size_t ncols = schema_.columns.size();
  if (pending_rows_ == batch_rows_ && batch_rows_ > 1 && insert_batch_ == nullptr) {
    const std::string values = insert_sql_.substr(insert_sql_.find("VALUES ") + 7);
    std::string many = insert_sql_;
    for (size_t r = 1; r < batch_rows_; ++r) (many += ", ") += values;
    insert_batch_ = prepare(many);
  }
  if (pending_rows_ == batch_rows_ && insert_batch_ != nullptr) {
    for (size_t r = 0; r < pending_rows_; ++r)
      bind_row(insert_batch_, r, static_cast<int>(r * ncols) + 1);
    const int rc = sqlite3_step(insert_batch_);
    sqlite3_reset(insert_batch_);
    if (rc != SQLITE_DONE) fail(fmt::format("table '{}': INSERT", schema_.name));
  } else {
    for (size_t r = 0; r < pending_rows_; ++r) {
      bind_row(insert_, r, 1);
      const int rc = sqlite3_step(insert_);
      sqlite3_reset(insert_);
      if (rc != SQLITE_DONE) fail(fmt::format("table '{}': INSERT", schema_.name));
    }
  }
  pending_rows_ = 0;
}

void SqliteSink::row(std::span<const Cell> cells) {
  if (!in_table_) throw Error(fmt::format("{}: SqliteSink::row outside begin/end", path_));
  validate_row(schema_, cells);
  const size_t base = pending_rows_ * cells.size();
  for (size_t c = 0; c < cells.size(); ++c) {
    Cell& d = pending_[base + c];
    d = cells[c];
    if (d.kind == Cell::kText) {
      std::string& t = texts_[base + c];
      t.assign(d.s);
      d.s = t;
    }
  }
  if (++pending_rows_ == batch_rows_) flush_rows();
}

void SqliteSink::end() {
  if (!in_table_) throw Error(fmt::format("{}: SqliteSink::end outside begin/end", path_));
  flush_rows();
  sqlite3_finalize(insert_);
  sqlite3_finalize(insert_batch_);
  insert_ = insert_batch_ = nullptr;
  exec("COMMIT");
  in_table_ = false;
}

}  // namespace chopper
