#pragma once
// SQLite output of result tables: one database file, one SQL table per result table, and two
// tables that document the others: chopper_tables(table_name, doc) and
// chopper_columns(table_name, column_name, type, doc, unit, null_when); and, when the writer says
// what it analysed, chopper_run(name, value) (describe_run).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chopper/model/table.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace chopper {

// Creates the database at `path`, replacing any file there (and creating its parent directory).
// Each table is written in one transaction (DROP TABLE IF EXISTS, CREATE TABLE with INTEGER, REAL
// or TEXT columns, then prepared INSERTs of kBatchRows rows each, the last rows one by one: a
// statement per row cost as much again in statement start and end as the rows' records and
// B-tree inserts); journal and fsync are off, so a crash leaves
// an unusable file, never a half-trusted one: `chopper analyze` writes it under a temporary name
// and renames it when complete (report/output_dir.hpp). Errors throw chopper::Error with the path
// and SQLite's message. Identifiers are double-quoted; "chopper_tables", "chopper_columns" and
// "chopper_run" are reserved.
class SqliteSink : public TableSink {
 public:
  explicit SqliteSink(std::string path);
  ~SqliteSink() override;
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;

  const std::string& path() const { return path_; }

  // Writes chopper_run(name TEXT PRIMARY KEY, value TEXT): what the tables are the analysis of
  // (`chopper report DIR` titles its report with them; read back by read_run_info in
  // report/sqlite_source.hpp). Between tables, once.
  void describe_run(const std::vector<std::pair<std::string, std::string>>& info);

 private:
  void start_table(const TableSchema& schema);
  // Binds row `r` of the pending rows to `stmt`'s parameters from `first` (1-based).
  void bind_row(sqlite3_stmt* stmt, size_t r, int first);
  // Inserts the pending rows: a full batch with one statement, fewer one by one.
  void flush_rows();
  void exec(const std::string& sql);
  sqlite3_stmt* prepare(const std::string& sql);
  [[noreturn]] void fail(std::string_view what);

  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;        // one row
  sqlite3_stmt* insert_batch_ = nullptr;  // batch_rows_ rows, prepared at the first full batch
  std::string insert_sql_;                // the one-row INSERT
  std::set<std::string> created_;         // the tables written so far
  size_t batch_rows_ = 1;
  // The rows waiting for a batch: their cells (text cells point into texts_, one string per
  // cell, reused from batch to batch) and how many.
  std::vector<Cell> pending_;
  std::vector<std::string> texts_;
  size_t pending_rows_ = 0;
  bool in_table_ = false;
  TableSchema schema_;
};

}  // namespace chopper
