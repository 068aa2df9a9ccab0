#pragma once
// `chopper report`: one self-contained HTML file (inline SVG drawn by report/html/svg.hpp, a
// strict Content-Security-Policy, no external script, font or request). It renders the result
// tables analyze writes (the same Table rows as chopper.sqlite, collected by TableStore), so every
// number drawn is a number of a table; it computes no analysis (docs/report.md).
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper::html {

// A sink that keeps tables in memory: the tables and columns `keep` selects (empty = every table
// whole).
class TableStore : public TableSink {
 public:
  explicit TableStore(TableSelection keep = {}) : keep_(std::move(keep)) {}
  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;
  // A whole table, as if written row by row (kept or not, and its columns, as `keep` says).
  void add(Table t);
  // The table called `name`, or nullptr when it was not written (or not kept).
  const Table* get(const std::string& name) const;

 private:
  TableSelection keep_;
  std::map<std::string, Table> tables_;
  Table* cur_ = nullptr;
  std::vector<size_t> kept_;  // the current table's columns kept (empty: all of them)
  std::vector<Cell> cells_;   // a row's kept cells
};

// The tables the report draws from, and of the largest the columns it draws (a figure's data
// download holds the columns kept): `report DIR` reads no more of chopper.sqlite, and
// `analyze --html` copies no more of the rows.
TableSelection report_tables();

struct ReportInfo {
  std::string title;    // the run (its paths)
  std::string device;   // device name ("" = unknown)
  std::string command;  // how it was made
  size_t many_ranks =
      64;                // above this many ranks: heatmaps and quantile bands, not a mark per rank
  unsigned threads = 0;  // sections drawn side by side on this many threads (0: every core)
};

// The whole HTML document; `figure_ids` (may be null) receives the ids of the figures drawn.
std::string render_report(const TableStore& tables, const ReportInfo& info,
                          std::vector<std::string>* figure_ids = nullptr);

// The comparison of runs (`chopper compare --html`), from the tables compare writes (sweep,
// compare_components, compare_operations, compare_kernels, compare_collectives,
// compare_findings): the runs, the sweep figures, the split per run and the largest differences,
// the operations, kernels and collectives that changed, the findings that appeared or
// disappeared.
std::string render_compare_report(const TableStore& tables, const ReportInfo& info,
                                  std::vector<std::string>* figure_ids = nullptr);

// SHA-256 (FIPS 180-4) of `bytes`: its 32 bytes. The Content-Security-Policy names the page's one
// inline script by it (script-src 'sha256-BASE64'), so that no other inline script runs.
std::string sha256(std::string_view bytes);

}  // namespace chopper::html
