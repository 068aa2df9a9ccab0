#pragma once
// A CSV file written as it is sampled: rows are formatted into one buffer and handed to the kernel
// (write(2)) by flush(), once per tick, so that a crash loses at most the tick being formatted.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace chopper::record {

class CsvStream {
 public:
  CsvStream() = default;
  CsvStream(const CsvStream&) = delete;
  CsvStream& operator=(const CsvStream&) = delete;
  ~CsvStream();
  // Creates (or truncates) `path` and writes `header` and a line end. Throws Error naming the file.
  void open(const std::string& path, std::string_view header);
  bool is_open() const { return fd_ >= 0; }
  // The pending text; rows are appended with fmt::format_to(std::back_inserter(buf()), ...).
  fmt::memory_buffer& buf() { return buf_; }
  // Writes the pending text. A failed write (disk full) is said once on stderr; later rows of
  // this file are counted in lost_bytes() and dropped.
  void flush();
  void close();
  uint64_t lost_bytes() const { return lost_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  bool failed_ = false;
  uint64_t lost_ = 0;
  std::string path_;
  fmt::memory_buffer buf_;
};

// Appends an integer in decimal (fmt::format_int: no format string to parse on every sample).
template <typename Int>
inline void append_int(fmt::memory_buffer& b, Int v) {
  const fmt::format_int f(v);
  b.append(f.data(), f.data() + f.size());
}
// Appends `v` as a decimal with one decimal (v / 10: tenths of a percent -> percent).
void append_tenths(fmt::memory_buffer& b, uint64_t v);
// Appends `v` as a decimal with 3 decimals (v / 1000: mW -> W, mJ -> J).
void append_milli(fmt::memory_buffer& b, uint64_t v);
// Appends `s` as one CSV cell: in quotes, quotes doubled, when it holds a comma or a quote; a line
// end in it (a thread may name itself so) becomes a space, so that every row stays one line.
void append_cell(fmt::memory_buffer& b, std::string_view s);

}  // namespace chopper::record
