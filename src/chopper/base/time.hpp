#pragma once
// Time is int64 nanoseconds everywhere. Trace formats that write decimal microseconds are converted
// from their text, exactly, never through a double: epoch microseconds with three decimals
// (1712169098466282.750) have more significant digits than a double holds.
#include <cstdint>
#include <string_view>

namespace chopper {

using Ns = int64_t;
inline constexpr Ns kNoTime = INT64_MIN;

enum class DecimalStatus : uint8_t {
  kExact,     // converted exactly
  kRounded,   // more digits than the target resolution: rounded half away from zero
  kInvalid,   // not a number
  kOverflow,  // does not fit in int64 after scaling
};

// Parses a JSON number (or its text inside a string) in units of 10^-scale_exp and returns the
// value scaled by 10^scale_exp: parse_scaled("12.3456", 3) == 12346 (kRounded). Accepts a sign, a
// fraction and an exponent (1.5e3). Leading/trailing spaces are ignored.
DecimalStatus parse_scaled(std::string_view text, int scale_exp, int64_t& out);

// Microseconds as written by Chrome-trace/Kineto JSON -> nanoseconds.
inline DecimalStatus parse_us_to_ns(std::string_view text, Ns& out) {
  return parse_scaled(text, 3, out);
}

// Plain integer (no fraction, no exponent) -> int64. Returns kOverflow above INT64_MAX.
DecimalStatus parse_int64(std::string_view text, int64_t& out);
// Plain non-negative integer -> uint64 (for ids above int64, e.g. "Comms Id").
DecimalStatus parse_uint64(std::string_view text, uint64_t& out);

}  // namespace chopper
