#pragma once
// A read-only SQLite database as the Nsight Systems reader uses it: open, list tables and columns,
// run a query row by row. Every SQLite error becomes an InputError naming the file (a truncated or
// corrupt export reads as "database disk image is malformed" or "file is not a database").
#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace chopper::nsys {

class Db {
 public:
  explicit Db(const std::string& path);  // throws InputError
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  const std::string& path() const { return path_; }
  // The tables, in name order.
  const std::vector<std::string>& tables() const { return tables_; }
  bool has_table(std::string_view name) const;
  // The columns of `table` (empty if it does not exist).
  std::vector<std::string> columns(const std::string& table);
  bool has_column(const std::string& table, std::string_view column);
  int64_t row_count(const std::string& table);

  class Row {
   public:
    explicit Row(sqlite3_stmt* s) : s_(s) {}
    bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
    int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
    double f64(int c) const { return sqlite3_column_double(s_, c); }
    std::string_view text(int c) const;

   private:
    sqlite3_stmt* s_;
  };
  // Runs `sql`, calling f(row) for each row; throws InputError on any SQLite error.
  void query(const std::string& sql, const std::function<void(const Row&)>& f);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<std::string> tables_;
};

}  // namespace chopper::nsys
