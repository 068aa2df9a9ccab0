#include "tables.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/base/version.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "chopper/report/sqlite_source.hpp"

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

std::vector<std::shared_ptr<Table>> read_sqlite_tables(const std::string& path) {
  std::vector<std::shared_ptr<Table>> out;
  for (Table& t : chopper::read_sqlite_tables(path, {}, default_threads()))
    out.push_back(std::make_shared<Table>(std::move(t)));
  return out;
}

void write_tables(const std::vector<std::shared_ptr<Table>>& tables, const std::string& dir,
                  bool csv, const std::string& inputs, const std::string& device) {
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
    db.describe_run(
        {{"chopper_version", std::string(kVersion)}, {"inputs", inputs}, {"device", device}});
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
