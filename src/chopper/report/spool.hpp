#pragma once
// Rows kept on disk between the per-rank stage and the final writer. `chopper analyze` streams
// ranks (pipeline/): as each rank is done, its rows of the per-rank tables are encoded into a
// spool file and its events freed; once every rank is done, the writer replays each table's rows
// rank by rank into SQLite and CSV. Every cell comes back exactly (integers as zigzag varints,
// reals as their 8 bytes, text as length and bytes), so a replayed table is the table.
//
// A row is varint(body bytes) then the body: per cell a kind byte (0 NULL, 1 integer, 2 real,
// 3 text) and its payload.
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper {

// Where one rank's rows of one stream lie: a byte range of a spool file.
struct SpoolChunk {
  uint64_t offset = 0, bytes = 0, rows = 0;
};

// Appends encoded cells to `out` (one row).
void encode_row(std::span<const Cell> cells, std::string& out);
// Decodes the rows of `bytes` (whole rows only) and hands each to `sink.row()`. Throws Error
// (naming `what`) on bytes that are not rows.
void decode_rows(std::string_view bytes, TableSink& sink, std::string_view what);

// One spool file, written by one thread: rows are encoded into a buffer and appended in blocks.
// Chunks are contiguous: a stream's rows of one rank are written between begin_chunk() and
// end_chunk(), with nothing else in between.
class SpoolFile : public TableSink {
 public:
  // Creates (truncates) the file. Throws Error naming it.
  explicit SpoolFile(std::string path);
  ~SpoolFile() override;
  SpoolFile(const SpoolFile&) = delete;
  SpoolFile& operator=(const SpoolFile&) = delete;

  void begin_chunk();
  SpoolChunk end_chunk();
  // Gives up the open chunk (if any) after an error: its bytes stay, unreferenced.
  void abort_chunk() { open_ = false; }
  // TableSink: row() appends a row to the open chunk; begin()/end() are not used.
  void begin(const TableSchema&) override {}
  void row(std::span<const Cell> cells) override;
  void end() override {}
  // Writes what is buffered (the file then holds every chunk ended so far).
  void flush();
  const std::string& path() const { return path_; }
  uint64_t size() const { return written_ + buf_.size(); }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buf_;
  uint64_t written_ = 0;
  SpoolChunk cur_;
  bool open_ = false;
};

// Reads chunks back (any spool file, any order).
class SpoolReader {
 public:
  explicit SpoolReader(std::string path);  // throws Error naming the file
  ~SpoolReader();
  SpoolReader(const SpoolReader&) = delete;
  SpoolReader& operator=(const SpoolReader&) = delete;
  // Hands every row of the chunk to sink.row(), reading it in blocks of at most a few MiB.
  void replay(const SpoolChunk& c, TableSink& sink);

 private:
  std::string path_;
  int fd_ = -1;
  std::string buf_;
};

}  // namespace chopper
