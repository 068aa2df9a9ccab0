#pragma once
// Builds an SQLite database from a SQL text file with the SQLite C API (sqlite3_exec), for the
// fixtures kept as SQL (tests/data/nsys/*.sql): no sqlite3 command-line tool needed.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace chopper::test {

// Runs `sql` on the database at `db_path` (created if absent). Throws std::runtime_error with
// SQLite's message on failure.
inline void sqlite_exec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) {
    const std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error(db_path + ": " + msg);
  }
  char* err = nullptr;
  // One transaction, not synced: a statement per commit and fsync would take seconds.
  const std::string all = "PRAGMA synchronous = OFF; BEGIN;\n" + sql + "\nCOMMIT;";
  const int rc = sqlite3_exec(db, all.c_str(), nullptr, nullptr, &err);
  std::string msg = err != nullptr ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error(db_path + ": " + msg);
}

// Writes `db_path` afresh from the SQL file `sql_path`.
inline void sqlite_from_sql(const std::string& sql_path, const std::string& db_path) {
  std::ifstream in(sql_path, std::ios::binary);
  if (!in) throw std::runtime_error(sql_path + ": cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  std::error_code ec;
  std::filesystem::remove(db_path, ec);
  sqlite_exec(db_path, ss.str());
}

}  // namespace chopper::test
