#pragma once
// Text helpers shared by the telemetry readers: a line reader over a ByteSource, CSV field
// splitting with quotes, numbers with units ("350.12 W", "(1900Mhz)"), not-available markers and
// timestamps (nvidia-smi calendar time, epoch seconds / ms / us / ns).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/series.hpp"

namespace chopper::telemetry {

// A data row's time as a format reader reads it, with the layout of its current header; false
// when the line is not a data row of that layout (a blank or header line, a bad timestamp and,
// when `check_layout`, a row with another number of fields).
using RowTime = std::function<bool(std::string_view line, Ns& t, bool check_layout)>;

// A row's place for messages: the line number, or, once rows were skipped unseen (a windowed read
// of a plain file, where lines before are not counted), the byte offset with this bit set.
inline constexpr uint64_t kByteOffsetMark = uint64_t{1} << 63;
// "line N" or "byte N".
std::string where(uint64_t line_or_byte);

// Rows a windowed read left out (see LineReader::rows_of_interest): one run of them.
struct SkippedRows {
  uint64_t from = 0,
           to = 0;     // where they were: bytes [from, to) (mapped), lines [from, to] (stream)
  bool lines = false;  // from/to are line numbers (every row's time was read), else bytes
  uint64_t rows = 0;   // counted (lines) or 0 (to be estimated from the bytes)
  Ns first_t = 0, last_t = 0;  // the times of the first and last of them (0: unknown)
};

// Rows (lines) longer than this are skipped without being held and counted ("row_too_long") by
// every telemetry reader, compressed or not.
inline constexpr size_t kMaxRowBytes = size_t{1} << 20;

// Splits a decompressed stream into lines without holding it whole.
class LineReader {
 public:
  explicit LineReader(ByteSource& src) : src_(src) {}
  // Reads `size` bytes at `data` (the source's content mapped in place) instead of the source.
  void use_block(const char* data, size_t size);
  // Up to `n` first bytes of the data, read ahead (for sniffing); does not consume them.
  std::string_view head(size_t n);
  // The next line without its end ("\n", "\r\n"). `complete` is false for a last line that has no
  // "\n" (a truncated write). Returns false at the end of the data.
  bool next(std::string_view& line, bool& complete);
  // 1-based number of the last line returned, or its byte offset | kByteOffsetMark once a
  // windowed read skipped rows it did not count.
  uint64_t line_no() const { return lines_known_ ? line_no_ : line_offset_ | kByteOffsetMark; }
  uint64_t line_offset() const { return line_offset_; }  // decompressed byte offset of its start
  const std::string& name() const { return src_.name(); }
  // Rows longer than `n` bytes (default kMaxRowBytes, detail.hpp) are skipped without being held
  // and counted in `diags` ("row_too_long"; not counted when `diags` is null).
  void limit_rows(size_t n, Diagnostics* diags) {
    max_line_ = n;
    diags_ = diags;
  }
  uint64_t long_rows() const { return long_rows_; }

  // Rows of interest (telemetry_reader.hpp, TelemetryWindow). read_telemetry enables them with the
  // time ranges (already widened) for each clock, and `edge`: the rows within it of the first and
  // last row are read too, so that the recording's extent stays known. A format reader calls
  // rows_of_interest() once it knows its layout (after its first header), with the clock its
  // rows are stamped on and how to read a row's time; from then on next() returns only the rows
  // whose time is in a range (and lines that are not data rows: headers, blank lines), if the
  // file allows it: mapped data is searched by binary search on the rows' times, after probes
  // across the file found them ascending (else everything is read); a stream is read on, every
  // row's time read, and stops after the last range. Nothing happens when it was not enabled or
  // the clock has no ranges.
  void enable_window(std::vector<std::pair<Ns, Ns>> utc, std::vector<std::pair<Ns, Ns>> local,
                     Ns edge);
  void rows_of_interest(ClockDomain clock, RowTime row_time);
  // The reader met what a windowed read cannot be trusted with (a header that changes, time going
  // back): next() returns false from now on, and read_telemetry reads the file again, whole.
  void window_unsafe(std::string why);
  bool window_is_unsafe() const { return unsafe_; }
  const std::string& window_unsafe_why() const { return unsafe_why_; }
  // Whether rows were left out; the runs of them; lines returned and their bytes.
  bool windowed() const { return !skipped_.empty(); }
  const std::vector<SkippedRows>& skipped() const { return skipped_; }
  uint64_t lines_returned() const { return lines_returned_; }
  uint64_t bytes_returned() const { return bytes_returned_; }

 private:
  bool fill();                    // appends a chunk; false at the end
  void long_row(uint64_t bytes);  // counts a row over max_line_ (line_no_ is its line)
  size_t max_line_ = kMaxRowBytes;
  Diagnostics* diags_ = nullptr;
  uint64_t long_rows_ = 0;
  bool raw_next(std::string_view& line, bool& complete);
  bool block_next(std::string_view& line, bool& complete);
  // Stream windowing: whether to return the line (false: it is held or skipped).
  bool stream_filter(std::string_view line, uint64_t line_no, uint64_t offset);
  void skip(Ns t, uint64_t line_no);  // counts one row left out
  void drop_held(size_t n);           // the first n held rows are left out
  void plan_block(const std::vector<std::pair<Ns, Ns>>& ranges);
  // Mapped data: the first data row starting at or after byte `p` (false if none before `end`).
  bool probe(size_t p, size_t end, size_t& row, Ns& t);
  size_t lower_bound(size_t a, size_t b, Ns x);  // first row in [a, b) with time >= x
  ByteSource& src_;
  std::string buf_;
  size_t pos_ = 0;
  uint64_t base_ = 0;  // offset of buf_[0] in the data
  bool eof_ = false;
  uint64_t line_no_ = 0, line_offset_ = 0;
  bool lines_known_ = true;
  // Mapped data.
  const char* blk_ = nullptr;
  size_t blk_size_ = 0, released_ = 0;
  // Windowing.
  bool window_enabled_ = false, window_on_ = false, unsafe_ = false, plan_failed_ = false;
  std::string unsafe_why_;
  std::vector<std::pair<Ns, Ns>> win_utc_, win_local_, ranges_;
  Ns edge_ = 0;
  RowTime row_time_;
  std::vector<std::pair<size_t, size_t>> spans_;  // mapped: byte ranges to return
  size_t span_ = 0;
  // The first and last rows read in any case: those within `edge` of the first and last row's
  // time, and at least this many lines at each end (a few samples of every GPU).
  static constexpr size_t kEdgeRows = 64;
  size_t head_rows_ = 0;  // stream: data rows met so far, up to kEdgeRows + 1
  size_t cursor_ = 0;     // stream: the first range not yet behind
  bool seen_first_ = false;
  Ns first_t_ = 0, last_t_ = 0;
  SkippedRows pending_;  // stream: the run being skipped
  // Stream: the rows outside the ranges since the last row returned that are within `edge` of
  // the latest time: returned at the end of the data if it comes before they fall behind (the
  // last rows of the recording), left out otherwise. A ring of lines, in file order.
  struct Held {
    std::string text;
    Ns t = 0;
    uint64_t line_no = 0, offset = 0;
    bool complete = true;
  };
  Held& hold();             // a new slot at the end of the ring
  std::vector<Held> held_;  // size: 0 or a power of two
  size_t held_begin_ = 0, held_count_ = 0;
  bool draining_ = false;
  std::vector<std::pair<size_t, Ns>> probes_;
  std::vector<SkippedRows> skipped_;
  uint64_t lines_returned_ = 0, bytes_returned_ = 0;
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
DiagKind value_status_kind(ValueStatus s);

// "2026/01/01 00:00:05.123" (nvidia-smi; also with '-' and 'T') as if UTC -> ns since the epoch.
bool parse_calendar(std::string_view s, Ns& out);
// Epoch time as a number: with a fraction (or exponent) it is seconds; an integer is taken as
// seconds, ms, us or ns by its magnitude (< 1e11 s, < 1e14 ms, < 1e17 us, else ns).
bool parse_epoch(std::string_view s, Ns& out);
// Plain seconds (with a fraction) -> ns, for relative times.
bool parse_seconds(std::string_view s, Ns& out);
// parse_calendar for a column whose rows repeat a stamp (one row per GPU per sample): the last
// text and its time are remembered.
struct CalendarMemo {
  std::string text;
  Ns t = 0;
  bool ok = false;
  bool parse(std::string_view s, Ns& out) {
    if (!(ok && s == text)) {
      text.assign(s);
      ok = parse_calendar(s, t);
    }
    out = t;
    return ok;
  }
};
// ns since the epoch -> "2026/01/01 00:00:05.123" (nvidia-smi's layout; ms, truncated).
std::string format_calendar(Ns t);

// Case-insensitive ASCII comparison.
bool iequals(std::string_view a, std::string_view b);
bool istarts_with(std::string_view s, std::string_view prefix);

}  // namespace chopper::telemetry
