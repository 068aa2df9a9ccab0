#include "chopper/ingest/nsys/nsys_db.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "chopper/base/error.hpp"

namespace chopper::nsys {

Db::Db(const std::string& path) : path_(path) {
  // A constructor that throws runs no destructor: the connection (opened even when the open
  // fails) is closed here before the error leaves.
  try {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK)
      fail("cannot open as SQLite");
    query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
          [&](const Row& r) { tables_.emplace_back(r.text(0)); });
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

Db::~Db() {
  sqlite3_close(db_);
}

void Db::fail(const std::string& what) const {
  const char* msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
  throw InputError(path_, 0,
                   fmt::format("{}: {} (an Nsight Systems SQLite export that is truncated or "
                               "corrupt; export it again with nsys export --type sqlite)",
                               what, msg));
}

bool Db::has_table(std::string_view name) const {
  return std::binary_search(tables_.begin(), tables_.end(), name);
}

std::vector<std::string> Db::columns(const std::string& table) {
  std::vector<std::string> out;
  if (!has_table(table)) return out;
  query(fmt::format("PRAGMA table_info(\"{}\")", table),
        [&](const Row& r) { out.emplace_back(r.text(1)); });
  return out;
}

bool Db::has_column(const std::string& table, std::string_view column) {
  const std::vector<std::string> cols = columns(table);
  return std::find(cols.begin(), cols.end(), column) != cols.end();
}

int64_t Db::row_count(const std::string& table) {
  int64_t n = 0;
  query(fmt::format("SELECT count(*) FROM \"{}\"", table), [&](const Row& r) { n = r.i64(0); });
  return n;
}

std::string_view Db::Row::text(int c) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
  if (p == nullptr) return {};
  return {p, static_cast<size_t>(sqlite3_column_bytes(s_, c))};
}

void Db::query(const std::string& sql, const std::function<void(const Row&)>& f) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK)
    fail(fmt::format("cannot query it ({})", sql.substr(0, 80)));
  struct Finalize {
    sqlite3_stmt* s;
    ~Finalize() { sqlite3_finalize(s); }
  } fin{s};
  const Row row(s);
  for (;;) {
    const int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) fail(fmt::format("cannot read it ({})", sql.substr(0, 80)));
    f(row);
  }
}

}  // namespace chopper::nsys
