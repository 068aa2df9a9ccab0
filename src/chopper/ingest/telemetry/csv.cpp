#include "chopper/ingest/telemetry/csv.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace chopper::telemetry {

namespace {

constexpr size_t kChunk = 64 * 1024;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Reads exactly `n` digits at s[i...] into v.
bool digits(std::string_view s, size_t& i, int n, int& v) {
  v = 0;
  for (int k = 0; k < n; ++k, ++i) {
    if (i >= s.size() || !is_digit(s[i])) return false;
    v = v * 10 + (s[i] - '0');
  }
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t mp = (m + 9) % 12;
  const int64_t doy = (153 * mp + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::string where(uint64_t line_or_byte) {
  if (line_or_byte & kByteOffsetMark)
    return fmt::format("byte {}", line_or_byte & ~kByteOffsetMark);
  return fmt::format("line {}", line_or_byte);
}

void LineReader::use_block(const char* data, size_t size) {
  blk_ = data;
  blk_size_ = size;
  pos_ = 0;
}

bool LineReader::fill() {
  if (eof_) return false;
  const size_t old = buf_.size();
  buf_.resize(old + kChunk);
  size_t n = 0;
  try {
    n = src_.read(buf_.data() + old, kChunk);
  } catch (...) {
    buf_.resize(old);
    throw;
  }
  buf_.resize(old + n);
  if (n == 0) eof_ = true;
  return n > 0;
}

std::string_view LineReader::head(size_t n) {
  if (blk_ != nullptr) return std::string_view(blk_ + pos_, std::min(n, blk_size_ - pos_));
  while (buf_.size() - pos_ < n && fill()) {
  }
  std::string_view h(buf_.data() + pos_, std::min(n, buf_.size() - pos_));
  return h;
}

bool LineReader::next(std::string_view& line, bool& complete) {
  for (;;) {
    if (unsafe_) return false;
    if (draining_) {  // the end of a windowed stream: the rows held
      if (held_count_ == 0) return false;
      const Held& h = held_[held_begin_];
      held_begin_ = (held_begin_ + 1) & (held_.size() - 1);
      --held_count_;
      line = h.text;
      complete = h.complete;
      line_no_ = h.line_no;
      line_offset_ = h.offset;
      ++lines_returned_;
      bytes_returned_ += line.size() + 1;
      return true;
    }
    if (!(blk_ != nullptr ? block_next(line, complete) : raw_next(line, complete))) {
      if (pending_.rows > 0) skipped_.push_back(std::exchange(pending_, SkippedRows{}));
      if (window_on_ && blk_ == nullptr && held_count_ > 0) {
        draining_ = true;
        continue;
      }
      return false;
    }
    if (window_on_ && blk_ == nullptr) {
      if (!complete) {
        // A cut last line: after the rows held, as the reader would have met them.
        if (held_count_ > 0) {
          Ns t = 0;
          if (!row_time_(line, t, false)) t = last_t_;
          Held& h = hold();
          h.text.assign(line);
          h.t = t;
          h.line_no = line_no_;
          h.offset = line_offset_;
          h.complete = false;
          draining_ = true;
          continue;
        }
      } else if (!stream_filter(line, line_no_, line_offset_)) {
        continue;
      }
      if (pending_.rows > 0) skipped_.push_back(std::exchange(pending_, SkippedRows{}));
    }
    ++lines_returned_;
    bytes_returned_ += line.size() + 1;
    return true;
  }
}

bool LineReader::block_next(std::string_view& line, bool& complete) {
  if (window_on_) {
    while (span_ < spans_.size() && pos_ >= spans_[span_].second) ++span_;
    if (span_ == spans_.size()) return false;
    if (pos_ < spans_[span_].first) {
      pos_ = spans_[span_].first;
      lines_known_ = false;
    }
  }
  if (pos_ >= blk_size_) return false;
  // A mapped file read through: the pages behind are given back every 4 MiB.
  constexpr size_t kRelease = size_t{4} << 20;
  if (!window_on_ && pos_ - released_ >= kRelease) {
    src_.release_below(blk_ + pos_);
    released_ = pos_;
  }
  const char* p = blk_ + pos_;
  const size_t rem = blk_size_ - pos_;
  line_offset_ = pos_;
  const void* nl = std::memchr(p, '\n', std::min(rem, max_line_ + 1));
  while (nl == nullptr && rem > max_line_) {
    // A row over the limit: skipped to its end, 4 MiB at a time, its pages given back.
    size_t q = pos_ + max_line_ + 1;
    const char* end = nullptr;
    while (q < blk_size_ && end == nullptr) {
      const size_t step = std::min(blk_size_ - q, kRelease);
      end = static_cast<const char*>(std::memchr(blk_ + q, '\n', step));
      q += step;
      if (!window_on_ && end == nullptr) {
        src_.release_below(blk_ + q);
        released_ = q;
      }
    }
    ++line_no_;
    const size_t stop = end != nullptr ? static_cast<size_t>(end - blk_) + 1 : blk_size_;
    long_row(stop - pos_ - (end != nullptr ? 1 : 0));
    pos_ = stop;
    if (pos_ >= blk_size_) return false;
    p = blk_ + pos_;
    line_offset_ = pos_;
    nl = std::memchr(p, '\n', std::min(blk_size_ - pos_, max_line_ + 1));
    if (nl == nullptr && blk_size_ - pos_ <= max_line_) break;
  }
  const size_t rem2 = blk_size_ - pos_;
  if (nl != nullptr) {
    const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - p);
    line = std::string_view(p, len);
    complete = true;
    pos_ += len + 1;
  } else {
    line = std::string_view(p, rem2);
    complete = false;
    pos_ = blk_size_;
  }
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line_offset_ == 0 && line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF")
    line.remove_prefix(3);  // UTF-8 byte order mark
  return true;
}

void LineReader::enable_window(std::vector<std::pair<Ns, Ns>> utc,
                               std::vector<std::pair<Ns, Ns>> local, Ns edge) {
  window_enabled_ = true;
  win_utc_ = std::move(utc);
  win_local_ = std::move(local);
  edge_ = edge;
}

void LineReader::rows_of_interest(ClockDomain clock, RowTime row_time) {
  if (!window_enabled_) return;
  window_enabled_ = false;  // asked once, at the first header
  const std::vector<std::pair<Ns, Ns>>* r = clock == ClockDomain::kRealtimeUtc     ? &win_utc_
                                            : clock == ClockDomain::kRealtimeLocal ? &win_local_
                                                                                   : nullptr;
  if (r == nullptr || r->empty()) return;
  ranges_ = *r;
  row_time_ = std::move(row_time);
  if (blk_ != nullptr)
    plan_block(ranges_);
  else
    window_on_ = true;
}

void LineReader::window_unsafe(std::string why) {
  if (!window_on_ || unsafe_) return;
  unsafe_ = true;
  unsafe_why_ = std::move(why);
}

// Stream: every row's time is read; the rows outside the ranges are counted and passed over
// (the last ones held, in case the data ends within `edge` of them). Time must not go back: a
// windowed read assumes rows in time order, and a file that breaks it is read again whole.
bool LineReader::stream_filter(std::string_view line, uint64_t line_no, uint64_t offset) {
  Ns t = 0;
  // Every line is seen: a header that changes is met before the rows of its layout, so the
  // number of fields need not be checked here.
  if (!row_time_(line, t, false)) {  // not a data row: the format reader decides
    drop_held(held_count_);
    return true;
  }
  if (seen_first_ && t < last_t_) {
    window_unsafe(fmt::format("line {}: time goes back", line_no));
    return false;
  }
  if (!seen_first_) {
    seen_first_ = true;
    first_t_ = t;
  }
  last_t_ = t;
  while (cursor_ < ranges_.size() && ranges_[cursor_].second < t) ++cursor_;
  if (head_rows_ <= kEdgeRows) ++head_rows_;
  if (t <= first_t_ + edge_ || head_rows_ <= kEdgeRows ||
      (cursor_ < ranges_.size() && t >= ranges_[cursor_].first)) {
    drop_held(held_count_);
    return true;
  }
  // Held while within `edge` of the latest time, or among the last kEdgeRows; the older ones are
  // left out.
  while (held_count_ > kEdgeRows && held_[held_begin_].t < t - edge_) drop_held(1);
  Held& h = hold();
  h.text.assign(line);
  h.t = t;
  h.line_no = line_no;
  h.offset = offset;
  h.complete = true;
  return false;
}

void LineReader::skip(Ns t, uint64_t line_no) {
  if (pending_.rows == 0) {
    pending_.from = line_no;
    pending_.lines = true;
    pending_.first_t = t;
  }
  ++pending_.rows;
  pending_.to = line_no;
  pending_.last_t = t;
}

void LineReader::drop_held(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const Held& h = held_[held_begin_];
    skip(h.t, h.line_no);
    held_begin_ = (held_begin_ + 1) & (held_.size() - 1);
    --held_count_;
  }
}

LineReader::Held& LineReader::hold() {
  if (held_count_ == held_.size()) {  // a power of two, doubled when full
    std::vector<Held> grown(std::max<size_t>(64, held_.size() * 2));
    for (size_t i = 0; i < held_count_; ++i)
      grown[i] = std::move(held_[(held_begin_ + i) & (held_.size() - 1)]);
    held_ = std::move(grown);
    held_begin_ = 0;
  }
  return held_[(held_begin_ + held_count_++) & (held_.size() - 1)];
}

// Mapped data: the first data row at or after the line start `p` and before `end`. Up to 16 lines
// that are not data rows (blank lines, a repeated header) are passed over; more than that and the
// layout is not what the format reader said: the plan is abandoned (plan_failed_).
bool LineReader::probe(size_t p, size_t end, size_t& row, Ns& t) {
  for (int k = 0; k < 16; ++k) {
    if (p >= end) return false;
    const char* s = blk_ + p;
    const void* nl = std::memchr(s, '\n', blk_size_ - p);
    if (nl == nullptr) return false;  // the cut last line is not a row
    const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - s);
    std::string_view line(s, len);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (row_time_(line, t, true)) {
      row = p;
      probes_.push_back({p, t});
      return true;
    }
    p += len + 1;
  }
  plan_failed_ = true;
  return false;
}

size_t LineReader::lower_bound(size_t a, size_t b, Ns x) {
  // Invariant: every row starting before a is earlier than x; the answer is a line start in [a, b].
  while (a < b && !plan_failed_) {
    const size_t mid = a + (b - a) / 2;
    const void* r = mid > a ? memrchr(blk_ + a, '\n', mid - a) : nullptr;
    const size_t s = r != nullptr ? static_cast<size_t>(static_cast<const char*>(r) - blk_) + 1 : a;
    size_t row = 0;
    Ns t = 0;
    if (!probe(s, b, row, t) || t >= x) {
      b = s;
    } else {
      const void* nl = std::memchr(blk_ + row, '\n', blk_size_ - row);
      a = static_cast<size_t>(static_cast<const char*>(nl) - blk_) + 1;
    }
  }
  return a;
}

// Mapped data: which bytes to read. Rows must ascend in time: the first and last rows, 63 probes
// spread over the file and every probe of the searches are checked, and if any two disagree the
// file is read whole (nothing was skipped yet).
void LineReader::plan_block(const std::vector<std::pair<Ns, Ns>>& ranges) {
  const size_t begin = pos_, end = blk_size_;
  // The file is read where the probes land, not in order: no read-ahead around each (back to
  // sequential if it is read whole after all).
  struct Advice {
    void* a = nullptr;
    size_t n = 0;
    bool keep = false;
    Advice(const char* p, size_t len) {
      const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
      const uintptr_t x = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
      const uintptr_t z = reinterpret_cast<uintptr_t>(p + len) & ~(page - 1);
      if (z > x) {
        a = reinterpret_cast<void*>(x);
        n = z - x;
        ::madvise(a, n, MADV_RANDOM);
      }
    }
    ~Advice() {
      if (n > 0 && !keep) ::madvise(a, n, MADV_SEQUENTIAL);
    }
  } advice(blk_, end);
  probes_.clear();
  plan_failed_ = false;
  size_t row0 = 0;
  Ns t0 = 0;
  if (!probe(begin, end, row0, t0)) return;
  // The last complete data row: back from the last end of line, over up to 16 other lines.
  Ns t1 = 0;
  bool have_last = false;
  const void* q = memrchr(blk_ + begin, '\n', end - begin);
  const size_t last_nl =
      q != nullptr ? static_cast<size_t>(static_cast<const char*>(q) - blk_) : begin;
  size_t line_end = last_nl;
  for (int k = 0; k < 16 && line_end > begin && !have_last; ++k) {
    const void* r = memrchr(blk_ + begin, '\n', line_end - begin);
    const size_t ls =
        r != nullptr ? static_cast<size_t>(static_cast<const char*>(r) - blk_) + 1 : begin;
    std::string_view line(blk_ + ls, line_end - ls);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (row_time_(line, t1, true)) {
      have_last = true;
      probes_.push_back({ls, t1});
    }
    line_end = ls > begin ? ls - 1 : begin;
  }
  if (!have_last || t1 < t0) return;
  for (int i = 1; i < 64 && !plan_failed_; ++i) {
    const size_t off = begin + static_cast<size_t>(static_cast<double>(end - begin) * i / 64.0);
    const void* r = off > begin ? memrchr(blk_ + begin, '\n', off - begin) : nullptr;
    const size_t ls =
        r != nullptr ? static_cast<size_t>(static_cast<const char*>(r) - blk_) + 1 : begin;
    size_t row = 0;
    Ns t = 0;
    probe(ls, end, row, t);
  }
  // The first and last rows: within `edge` of the first and last row's time, and at least
  // kEdgeRows lines (a few samples of every GPU, for the sample interval).
  size_t head = begin, tail = last_nl + 1;
  for (size_t k = 0; k < kEdgeRows && head < end; ++k) {
    const void* nl = std::memchr(blk_ + head, '\n', end - head);
    head = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - blk_) + 1 : end;
  }
  for (size_t k = 0; k < kEdgeRows && tail > begin; ++k) {
    const void* r = tail - 1 > begin ? memrchr(blk_ + begin, '\n', tail - 1 - begin) : nullptr;
    tail = r != nullptr ? static_cast<size_t>(static_cast<const char*>(r) - blk_) + 1 : begin;
  }
  std::vector<std::pair<size_t, size_t>> spans;
  spans.push_back({begin, std::max(head, lower_bound(begin, end, t0 + edge_ + 1))});
  for (const auto& [f, t] : ranges) {
    if (t < t0 || f > t1) continue;
    const size_t b = lower_bound(begin, end, f), e = lower_bound(b, end, t + 1);
    if (b < e) spans.push_back({b, e});
  }
  spans.push_back({std::min(tail, lower_bound(begin, end, t1 - edge_)), end});
  if (plan_failed_) return;
  std::sort(probes_.begin(), probes_.end());
  for (size_t i = 1; i < probes_.size(); ++i)
    if (probes_[i].second < probes_[i - 1].second) return;  // not in time order: read it all
  std::sort(spans.begin(), spans.end());
  spans_.clear();
  for (const auto& sp : spans) {
    if (sp.first >= sp.second) continue;
    if (!spans_.empty() && sp.first <= spans_.back().second)
      spans_.back().second = std::max(spans_.back().second, sp.second);
    else
      spans_.push_back(sp);
  }
  if (spans_.empty() || (spans_.size() == 1 && spans_[0].first == begin && spans_[0].second == end))
    return;  // every row is of interest
  for (size_t i = 0; i + 1 < spans_.size(); ++i) {
    SkippedRows g;
    g.from = spans_[i].second;
    g.to = spans_[i + 1].first;
    size_t row = 0;
    Ns t = 0;
    if (probe(g.from, g.to, row, t)) g.first_t = t;
    const void* r = g.to - 1 > g.from ? memrchr(blk_ + g.from, '\n', g.to - 1 - g.from) : nullptr;
    const size_t ls =
        r != nullptr ? static_cast<size_t>(static_cast<const char*>(r) - blk_) + 1 : g.from;
    if (probe(ls, g.to, row, t)) g.last_t = t;
    skipped_.push_back(g);
  }
  plan_failed_ = false;
  window_on_ = true;
  span_ = 0;
  advice.keep = true;
}

void LineReader::long_row(uint64_t bytes) {
  ++long_rows_;
  if (diags_ == nullptr) return;
  diags_->add("row_too_long", [&] {
    return fmt::format("{}: {} bytes, over the limit of {} bytes per row: skipped",
                       where(line_no()), bytes, max_line_);
  });
}

bool LineReader::raw_next(std::string_view& line, bool& complete) {
  size_t scan = pos_;
  for (;;) {
    const size_t nl = buf_.find('\n', scan);
    if (nl != std::string::npos && nl - pos_ > max_line_) {  // over the limit, all buffered
      line_offset_ = base_ + pos_;
      ++line_no_;
      long_row(nl - pos_);
      pos_ = nl + 1;
      scan = pos_;
      continue;
    }
    if (nl != std::string::npos) {
      line = std::string_view(buf_.data() + pos_, nl - pos_);
      complete = true;
      line_offset_ = base_ + pos_;
      pos_ = nl + 1;
      break;
    }
    // No end of line buffered: drop the consumed bytes and read more.
    if (pos_ > 0) {
      buf_.erase(0, pos_);
      base_ += pos_;
      pos_ = 0;
    }
    if (buf_.size() > max_line_) {
      // A row over the limit: its bytes are dropped as they come, up to its end, never held.
      line_offset_ = base_;
      uint64_t bytes = buf_.size();
      base_ += buf_.size();
      buf_.clear();
      bool ended = false;
      while (!ended && fill()) {
        const size_t e = buf_.find('\n');
        const size_t drop = e == std::string::npos ? buf_.size() : e + 1;
        ended = e != std::string::npos;
        bytes += ended ? e : buf_.size();
        buf_.erase(0, drop);
        base_ += drop;
      }
      ++line_no_;
      long_row(bytes);
      scan = 0;
      continue;
    }
    scan = buf_.size();
    if (!fill()) {
      if (buf_.empty()) return false;
      line = std::string_view(buf_.data(), buf_.size());
      complete = false;
      line_offset_ = base_;
      pos_ = buf_.size();
      break;
    }
  }
  ++line_no_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line_no_ == 1 && line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF")
    line.remove_prefix(3);  // UTF-8 byte order mark
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

void split_csv(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  if (line.find('"') == std::string_view::npos) {  // the usual row: no quotes
    for (size_t i = 0;;) {
      const size_t c = line.find(',', i);
      out.push_back(trim(line.substr(i, c == std::string_view::npos ? c : c - i)));
      if (c == std::string_view::npos) return;
      i = c + 1;
    }
  }
  size_t i = 0;
  const size_t n = line.size();
  for (;;) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < n && line[i] == '"') {
      const size_t start = ++i;
      size_t end = n;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            i += 2;
            continue;
          }
          end = i;
          ++i;
          break;
        }
        ++i;
      }
      out.push_back(line.substr(start, end - start));
      while (i < n && line[i] != ',') ++i;  // text after the closing quote is dropped
    } else {
      const size_t start = i;
      while (i < n && line[i] != ',') ++i;
      out.push_back(trim(line.substr(start, i - start)));
    }
    if (i >= n) break;
    ++i;  // the comma
  }
}

void split_ws(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < n && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

ValueStatus parse_quantity(std::string_view s, double& v, std::string_view& unit) {
  s = trim(s);
  unit = {};
  if (s.empty() || iequals(s, "N/A") || iequals(s, "[N/A]") || iequals(s, "NA") ||
      iequals(s, "-") || iequals(s, "nan"))
    return ValueStatus::kNotAvailable;
  if (s.front() == '[') {
    if (istarts_with(s, "[Not Supported")) return ValueStatus::kNotSupported;
    return ValueStatus::kUnknownError;  // "[Unknown Error]", "[GPU requires reset]", ...
  }
  if (iequals(s, "Not Supported")) return ValueStatus::kNotSupported;
  if (s.front() == '(' && s.back() == ')') s = trim(s.substr(1, s.size() - 2));
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    uint64_t x = 0;
    auto r = std::from_chars(s.data() + 2, s.data() + s.size(), x, 16);
    if (r.ec != std::errc() || r.ptr == s.data() + 2) return ValueStatus::kInvalid;
    unit = trim(std::string_view(r.ptr, static_cast<size_t>(s.data() + s.size() - r.ptr)));
    if (!unit.empty()) return ValueStatus::kInvalid;
    v = static_cast<double>(x);
    return ValueStatus::kOk;
  }
  const char* b = s.data();
  if (*b == '+') ++b;
  double x = 0;
  std::from_chars_result r{b, std::errc()};
  // A plain decimal of up to 15 digits ("350.12"): the integer of its digits divided by a power of
  // ten, both exact in a double, so the quotient is the correctly rounded value from_chars gives.
  const char* const e = s.data() + s.size();
  const char* p = b;
  uint64_t m = 0;
  int digits = 0, frac = 0;
  bool dot = false;
  while (p < e && is_digit(*p) && digits < 16) {
    m = m * 10 + static_cast<uint64_t>(*p++ - '0');
    ++digits;
  }
  if (p < e && *p == '.' && digits > 0) {
    dot = true;
    const char* q = ++p;
    while (p < e && is_digit(*p) && digits < 16) {
      m = m * 10 + static_cast<uint64_t>(*p++ - '0');
      ++digits;
    }
    frac = static_cast<int>(p - q);
  }
  static constexpr double kPow10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  if (digits > 0 && digits <= 15 && !(dot && frac == 0) &&
      (p == e ||
       (!is_digit(*p) && *p != 'e' && *p != 'E' && *p != '.' && *p != 'x' && *p != 'X'))) {
    x = static_cast<double>(m) / kPow10[frac];
    r.ptr = p;
  } else {
    r = std::from_chars(b, e, x);
  }
  if (r.ec != std::errc() || r.ptr == b) return ValueStatus::kInvalid;
  if (!std::isfinite(x)) return ValueStatus::kInvalid;
  unit = trim(std::string_view(r.ptr, static_cast<size_t>(s.data() + s.size() - r.ptr)));
  for (char c : unit)  // a unit is letters, %, ° (UTF-8), '/'
    if (is_digit(c) || c == '.' || c == ',') return ValueStatus::kInvalid;
  v = x;
  return ValueStatus::kOk;
}

DiagKind value_status_kind(ValueStatus s) {
  switch (s) {
    case ValueStatus::kOk:  // never counted: the readers count only a status that is not kOk
      return "bad_value";
    case ValueStatus::kNotAvailable:
      return "value_not_available";
    case ValueStatus::kNotSupported:
      return "value_not_supported";
    case ValueStatus::kUnknownError:
      return "value_error";
    case ValueStatus::kInvalid:
      return "bad_value";
  }
  return "bad_value";
}

bool parse_calendar(std::string_view s, Ns& out) {
  s = trim(s);
  size_t i = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  if (!digits(s, i, 4, y)) return false;
  if (i >= s.size() || (s[i] != '/' && s[i] != '-')) return false;
  ++i;
  if (!digits(s, i, 2, mo)) return false;
  if (i >= s.size() || (s[i] != '/' && s[i] != '-')) return false;
  ++i;
  if (!digits(s, i, 2, d)) return false;
  if (i >= s.size() || (s[i] != ' ' && s[i] != 'T')) return false;
  ++i;
  if (!digits(s, i, 2, h)) return false;
  if (i >= s.size() || s[i] != ':') return false;
  ++i;
  if (!digits(s, i, 2, mi)) return false;
  if (i >= s.size() || s[i] != ':') return false;
  ++i;
  if (!digits(s, i, 2, se)) return false;
  int64_t frac = 0;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    int64_t scale = 100000000;
    const size_t start = i;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      frac += (s[i] - '0') * scale;
      scale /= 10;
    }
    if (i == start) return false;
  }
  if (i < s.size() && s[i] == 'Z') ++i;
  if (i != s.size()) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return false;
  if (y < 1970 || y > 2200) return false;  // int64 ns since the epoch reach 2262
  const int64_t days = days_from_civil(y, mo, d);
  out = ((days * 24 + h) * 60 + mi) * int64_t{60} * 1000000000 + se * int64_t{1000000000} + frac;
  return true;
}

std::string format_calendar(Ns t) {
  int64_t days = t / (86400 * int64_t{1000000000});
  Ns rem = t - days * 86400 * int64_t{1000000000};
  if (rem < 0) rem += 86400 * int64_t{1000000000}, --days;
  // civil_from_days (Howard Hinnant).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const int64_t ms = rem / 1000000;
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", y, m, d, ms / 3600000,
                     ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
}

bool parse_seconds(std::string_view s, Ns& out) {
  int64_t v = 0;
  const DecimalStatus st = parse_scaled(s, 9, v);
  if (st != DecimalStatus::kExact && st != DecimalStatus::kRounded) return false;
  out = v;
  return true;
}

bool parse_epoch(std::string_view s, Ns& out) {
  s = trim(s);
  if (s.empty() || s[0] == '-') return false;
  bool integer = true;
  for (char c : s)
    if (!is_digit(c)) integer = false;
  if (!integer) return parse_seconds(s, out);
  int64_t v = 0;
  if (parse_int64(s, v) != DecimalStatus::kExact) return false;
  int64_t scale = 1;
  if (v < 100000000000LL)
    scale = 1000000000;  // seconds
  else if (v < 100000000000000LL)
    scale = 1000000;  // ms
  else if (v < 100000000000000000LL)
    scale = 1000;  // us
  if (v > INT64_MAX / scale) return false;
  out = v * scale;
  return true;
}

}  // namespace chopper::telemetry
