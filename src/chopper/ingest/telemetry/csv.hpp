#pragma once
// Text helpers shared by the telemetry readers: a line reader over a ByteSource, CSV field
// splitting with quotes, numbers with units ("350.12 W", "(1900Mhz)"), not-available markers and
// timestamps (nvidia-smi calendar time, epoch seconds / ms / us / ns).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/input.hpp"
#include "chopper/base/time.hpp"

namespace chopper::telemetry {

// Splits a decompressed stream into lines without holding it whole.
class LineReader {
 public:
  explicit LineReader(ByteSource& src) : src_(src) {}
  // Up to `n` first bytes of the data, read ahead (for sniffing); does not consume them.
  std::string_view head(size_t n);
  // The next line without its end ("\n", "\r\n"). `complete` is false for a last line that has no
  // "\n" (a truncated write). Returns false at the end of the data.
  bool next(std::string_view& line, bool& complete);
  uint64_t line_no() const { return line_no_; }          // 1-based, of the last line returned
  uint64_t line_offset() const { return line_offset_; }  // decompressed byte offset of its start
  const std::string& name() const { return src_.name(); }

 private:
  bool fill();  // appends a chunk; false at the end
  ByteSource& src_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;  // offset of buf_[0] in the data
  bool eof_ = false;
  uint64_t line_no_ = 0, line_offset_ = 0;
};

// Trims ASCII spaces and tabs at both ends.
std::string_view trim(std::string_view s);
// Splits one CSV line at commas; a field in double quotes may hold commas ("" is a quote, kept
// doubled in the view). Fields are trimmed and unquoted.
void split_csv(std::string_view line, std::vector<std::string_view>& out);
// Splits at runs of spaces and tabs.
void split_ws(std::string_view line, std::vector<std::string_view>& out);

enum class ValueStatus : uint8_t {
  kOk,
  kNotAvailable,  // "N/A", "[N/A]", "", "NA"
  kNotSupported,  // "[Not Supported]"
  kUnknownError,  // "[Unknown Error]" and other "[...]" messages of nvidia-smi
  kInvalid,       // not a number
};
// Parses a number with an optional unit after it: "350.12 W" -> 350.12, "W"; "(1900Mhz)" -> 1900,
// "Mhz"; "0x04" -> 4; "45 %" -> 45, "%". `unit` is empty when there is none.
ValueStatus parse_quantity(std::string_view s, double& v, std::string_view& unit);
// The diagnostic kind for a status that is not kOk.
std::string_view value_status_kind(ValueStatus s);

// "2026/01/01 00:00:05.123" (nvidia-smi; also with '-' and 'T') as if UTC -> ns since the epoch.
bool parse_calendar(std::string_view s, Ns& out);
// Epoch time as a number: with a fraction (or exponent) it is seconds; an integer is taken as
// seconds, ms, us or ns by its magnitude (< 1e11 s, < 1e14 ms, < 1e17 us, else ns).
bool parse_epoch(std::string_view s, Ns& out);
// Plain seconds (with a fraction) -> ns, for relative times.
bool parse_seconds(std::string_view s, Ns& out);

// Case-insensitive ASCII comparison.
bool iequals(std::string_view a, std::string_view b);
bool istarts_with(std::string_view s, std::string_view prefix);

}  // namespace chopper::telemetry
