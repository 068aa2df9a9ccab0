#pragma once
// A small CSV toolkit for the counter readers: a line source over a ByteSource that keeps line
// numbers and byte offsets, and a field splitter for RFC 4180 quoting ("a ""b"", c" -> a "b", c).
// A field never spans lines here: none of the counter formats writes a newline inside a field,
// and a line with an unterminated quote is reported as bad instead of swallowing the file.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/input.hpp"

namespace chopper::csv {

// Splits one line into fields. Quoted fields are unquoted; unquoted fields are trimmed of spaces
// and tabs; a trailing '\r' is dropped. Views stay valid until the next split().
class Splitter {
 public:
  // False if the quoting is broken (an unterminated quote, text after a closing quote).
  bool split(std::string_view line);
  size_t size() const { return fields_.size(); }
  std::string_view operator[](size_t i) const { return fields_[i]; }
  const std::vector<std::string_view>& fields() const { return fields_; }
  // Whether field i was written in quotes.
  bool quoted(size_t i) const { return quoted_[i] != 0; }

 private:
  std::vector<std::string_view> fields_;
  std::vector<uint8_t> quoted_;
  std::vector<size_t> owned_;      // per field: offset+1 into unescaped_, or 0
  std::vector<size_t> owned_len_;  // per field: length in unescaped_
  std::string unescaped_;
};

// Lines of a byte stream, '\n'-terminated ('\r\n' is left to the splitter). A UTF-8 byte-order
// mark at the start is skipped. `head` holds bytes already read from `src` (by a sniffer).
class LineSource {
 public:
  // A line longer than this is skipped, never held whole (its bytes are dropped as they are
  // read), and counted in `diags` ("row_too_long"), with its line number and length.
  static constexpr size_t kMaxLine = size_t{1} << 20;

  LineSource(ByteSource& src, std::string head, Diagnostics* diags = nullptr);
  // The next line without its '\n'; false at the end. `terminated` is false for a last line that
  // has no '\n' (a file cut short, or one written without a final newline). Lines longer than
  // kMaxLine are skipped (above).
  bool next(std::string_view& line, bool& terminated);
  uint64_t long_lines() const { return long_lines_; }
  uint64_t line_no() const { return line_no_; }         // 1-based number of the last line
  uint64_t line_offset() const { return line_start_; }  // byte offset of its start
  const std::string& name() const { return src_.name(); }

 private:
  bool fill();
  ByteSource& src_;
  Diagnostics* diags_ = nullptr;
  uint64_t long_lines_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;  // byte offset of buf_[0] in the uncompressed stream
  uint64_t line_no_ = 0;
  uint64_t line_start_ = 0;
  bool eof_ = false;
};

// Lower-cased copy (ASCII), for case-insensitive header matching.
std::string lower(std::string_view s);

}  // namespace chopper::csv
