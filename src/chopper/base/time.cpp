#include "chopper/base/time.hpp"

#include <limits>

namespace chopper {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

DecimalStatus parse_scaled(std::string_view text, int scale_exp, int64_t& out) {
  std::string_view s = trim(text);
  if (s.empty()) return DecimalStatus::kInvalid;
  bool neg = false;
  size_t i = 0;
  if (s[0] == '-' || s[0] == '+') {
    neg = s[0] == '-';
    i = 1;
  }
  // Collect significant digits (integer and fraction) and the decimal exponent of the last one.
  // value = digits * 10^(exp10)
  constexpr int kMaxDigits = 40;
  char digits[kMaxDigits];
  int nd = 0;
  int exp10 = 0;
  bool any = false;
  bool dropped_nonzero = false;  // digits beyond kMaxDigits (only matter for rounding)
  for (; i < s.size() && is_digit(s[i]); ++i) {
    any = true;
    if (nd == 0 && s[i] == '0') continue;  // leading zeros
    if (nd < kMaxDigits) {
      digits[nd++] = s[i];
    } else {
      ++exp10;
      dropped_nonzero |= s[i] != '0';
    }
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      any = true;
      if (nd == 0 && s[i] == '0') {
        --exp10;
        continue;
      }
      if (nd < kMaxDigits) {
        digits[nd++] = s[i];
        --exp10;
      } else {
        dropped_nonzero |= s[i] != '0';
      }
    }
  }
  if (!any) return DecimalStatus::kInvalid;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool eneg = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
      eneg = s[i] == '-';
      ++i;
    }
    if (i >= s.size() || !is_digit(s[i])) return DecimalStatus::kInvalid;
    int e = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      if (e < 100000) e = e * 10 + (s[i] - '0');
    }
    exp10 += eneg ? -e : e;
  }
  if (i != s.size()) return DecimalStatus::kInvalid;
  exp10 += scale_exp;
  // Strip trailing zeros of the digit string into the exponent.
  while (nd > 0 && digits[nd - 1] == '0') {
    --nd;
    ++exp10;
  }
  if (nd == 0) {
    out = 0;
    return dropped_nonzero ? DecimalStatus::kRounded : DecimalStatus::kExact;
  }
  // Integer part: digits[0 .. nd+exp10), fraction: the rest.
  int int_digits = nd + exp10;
  if (int_digits > 19) return DecimalStatus::kOverflow;
  uint64_t v = 0;  // <= 19 digits (+1 from rounding) fits in uint64
  for (int k = 0; k < int_digits; ++k) {
    int d = k < nd ? digits[k] - '0' : 0;
    v = v * 10 + static_cast<unsigned>(d);
  }
  DecimalStatus st = DecimalStatus::kExact;
  if (int_digits < nd || dropped_nonzero) {
    st = DecimalStatus::kRounded;
    // First digit after the unit's decimal point; a value below 0.1 units rounds down.
    // (Digits are only dropped past kMaxDigits when int_digits <= 19 < nd, so int_digits < nd.)
    int first_frac = int_digits >= 0 && int_digits < nd ? digits[int_digits] - '0' : 0;
    if (first_frac >= 5) v += 1;
  }
  const uint64_t limit = neg ? static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
                             : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (v > limit) return DecimalStatus::kOverflow;
  if (neg) {
    out = v == limit ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  } else {
    out = static_cast<int64_t>(v);
  }
  return st;
}

DecimalStatus parse_uint64(std::string_view text, uint64_t& out) {
  std::string_view s = trim(text);
  if (s.empty()) return DecimalStatus::kInvalid;
  uint64_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) return DecimalStatus::kInvalid;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return DecimalStatus::kOverflow;
    v = v * 10 + d;
  }
  out = v;
  return DecimalStatus::kExact;
}

DecimalStatus parse_int64(std::string_view text, int64_t& out) {
  std::string_view s = trim(text);
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  uint64_t u = 0;
  DecimalStatus st = parse_uint64(s, u);
  if (st != DecimalStatus::kExact) return st;
  if (neg) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1)
      return DecimalStatus::kOverflow;
    out = u == static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
              ? std::numeric_limits<int64_t>::min()
              : -static_cast<int64_t>(u);
  } else {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return DecimalStatus::kOverflow;
    out = static_cast<int64_t>(u);
  }
  return DecimalStatus::kExact;
}

}  // namespace chopper
