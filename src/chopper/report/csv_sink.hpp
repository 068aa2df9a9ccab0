#pragma once
// CSV output of result tables: one file DIR/<table name>.csv per table (RFC 4180).
#include <cstdio>
#include <string>

#include "chopper/model/table.hpp"

namespace chopper {

// Writes each table to DIR/<name>.csv: a header line of column names, then one line per row.
// Fields containing a comma, double quote, CR or LF are quoted (quotes doubled); NULL is an empty
// field and empty text is "" so the two stay apart. Integers print in decimal, reals in fmt's
// shortest round-trip form ("0.1", "1e-09", "inf", "nan"; no locale). Lines end in "\n".
// The constructor creates DIR if missing; any open or write failure throws chopper::Error naming
// the file. A table name must be usable as a file name (no '/', not "." or "..").
class OutputDir;

// `s` as one CSV field (RFC 4180) appended to `out`: as it is, or in double quotes (inner ones
// doubled) when it holds a comma, a quote or a line break. Empty text appends nothing.
void append_csv_field(std::string& out, std::string_view s);

class CsvSink : public TableSink {
 public:
  // With `staging`, each file is written to staging->stage("<name>.csv") (a temporary name in
  // DIR, renamed by OutputDir::commit()).
  explicit CsvSink(std::string dir, OutputDir* staging = nullptr);
  ~CsvSink() override;
  CsvSink(const CsvSink&) = delete;
  CsvSink& operator=(const CsvSink&) = delete;

  void begin(const TableSchema& schema) override;
  void row(std::span<const Cell> cells) override;
  void end() override;

  const std::string& dir() const { return dir_; }

 private:
  void append_field(std::string_view s);
  void append_real(double x);
  void flush();
  [[noreturn]] void fail(std::string_view what);

  std::string dir_;
  OutputDir* staging_ = nullptr;
  std::string path_;  // the open file
  std::FILE* file_ = nullptr;
  std::string buf_;
  TableSchema schema_;
};

}  // namespace chopper
