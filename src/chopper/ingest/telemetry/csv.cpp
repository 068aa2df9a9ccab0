#include "chopper/ingest/telemetry/csv.hpp"

#include <charconv>
#include <cmath>

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
  while (buf_.size() - pos_ < n && fill()) {
  }
  std::string_view h(buf_.data() + pos_, std::min(n, buf_.size() - pos_));
  return h;
}

bool LineReader::next(std::string_view& line, bool& complete) {
  size_t scan = pos_;
  for (;;) {
    const size_t nl = buf_.find('\n', scan);
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
  auto r = std::from_chars(b, s.data() + s.size(), x);
  if (r.ec != std::errc() || r.ptr == b) return ValueStatus::kInvalid;
  if (!std::isfinite(x)) return ValueStatus::kInvalid;
  unit = trim(std::string_view(r.ptr, static_cast<size_t>(s.data() + s.size() - r.ptr)));
  for (char c : unit)  // a unit is letters, %, ° (UTF-8), '/'
    if (is_digit(c) || c == '.' || c == ',') return ValueStatus::kInvalid;
  v = x;
  return ValueStatus::kOk;
}

std::string_view value_status_kind(ValueStatus s) {
  switch (s) {
    case ValueStatus::kOk:
      return "ok";
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
