#pragma once
// The result tables of one analysis held in memory for Python (src/python/module.cpp): every table
// `chopper analyze` writes, in its order, as chopper::Table (column-wise), filled from the
// analysis (TableList, a TableSink) or read back from a chopper.sqlite (read_sqlite_tables). Their
// columns reach numpy without a copy where the layout allows (module.cpp).
#include <memory>
#include <string>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper::python {

// A sink that keeps every table given to it, in order.
class TableList : public TableSink {
 public:
  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;

  const std::vector<std::shared_ptr<Table>>& tables() const { return tables_; }
  void add(std::shared_ptr<Table> t) { tables_.push_back(std::move(t)); }

 private:
  std::vector<std::shared_ptr<Table>> tables_;
  std::shared_ptr<Table> cur_;
};

// The two tables a chopper.sqlite documents the others with (report/sqlite_sink.hpp):
// chopper_tables(table_name, doc) and chopper_columns(table_name, column_name, type, doc, unit,
// null_when), one row per table and per column of `tables`, in their order.
std::vector<std::shared_ptr<Table>> self_description(
    const std::vector<std::shared_ptr<Table>>& tables);

// Every result table of the chopper.sqlite at `path` (all but chopper_tables, chopper_columns and
// chopper_run, in the order they were written), their schemas from chopper_tables and
// chopper_columns (report/sqlite_source.hpp). Throws Error naming the file when it cannot be
// opened or is not chopper's.
std::vector<std::shared_ptr<Table>> read_sqlite_tables(const std::string& path);

// Writes `tables` to DIR/chopper.sqlite and, with `csv`, DIR/<table>.csv, as `chopper analyze`
// does (staged under the directory's lock, renamed when complete), the database's chopper_run
// saying they are the analysis of `inputs` on `device`. Throws Error.
void write_tables(const std::vector<std::shared_ptr<Table>>& tables, const std::string& dir,
                  bool csv, const std::string& inputs, const std::string& device);

// The HTML report (`chopper report`) drawn from `tables`, titled `title` (the run), for
// `device` ("" = unknown), written to `path`; returns the number of figures. Throws Error.
size_t write_report(const std::vector<std::shared_ptr<Table>>& tables, const std::string& path,
                    const std::string& title, const std::string& device);

}  // namespace chopper::python
