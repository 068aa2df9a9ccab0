#include <gtest/gtest.h>

#include "chopper/base/time.hpp"

using namespace chopper;

// Kineto writes microseconds; chopper keeps exact integer nanoseconds.
TEST(Time, MicrosecondsToNanosecondsExactly) {
  Ns v = 0;
  EXPECT_EQ(parse_us_to_ns("0", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(parse_us_to_ns("30.500", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 30500);
  EXPECT_EQ(parse_us_to_ns("1.5", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 1500);
  // Integer epoch microseconds (2023 and older Kineto): 16 digits.
  EXPECT_EQ(parse_us_to_ns("1623143089861372", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 1623143089861372000);
  // Fractional epoch microseconds (early 2024): 19 significant digits, more than a double holds.
  // A double gives 1712195495519689.0 + 0.046875: the text is exact, the double is not.
  EXPECT_EQ(parse_us_to_ns("1712195495519689.047", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 1712195495519689047);
  EXPECT_EQ(parse_us_to_ns("-2.25", v), DecimalStatus::kExact);
  EXPECT_EQ(v, -2250);
  EXPECT_EQ(parse_us_to_ns("  7.000 \n", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 7000);
}

TEST(Time, ExponentsAndRounding) {
  Ns v = 0;
  EXPECT_EQ(parse_us_to_ns("1.5e3", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 1500000);
  EXPECT_EQ(parse_us_to_ns("2E-3", v), DecimalStatus::kExact);
  EXPECT_EQ(v, 2);
  // Sub-nanosecond digits round half away from zero and say so.
  EXPECT_EQ(parse_us_to_ns("12.3456", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 12346);
  EXPECT_EQ(parse_us_to_ns("12.3454", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 12345);
  EXPECT_EQ(parse_us_to_ns("0.0004", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 0);
  EXPECT_EQ(parse_us_to_ns("0.0005", v), DecimalStatus::kRounded);
  EXPECT_EQ(v, 1);
}

TEST(Time, RejectsGarbageAndOverflow) {
  Ns v = 42;
  EXPECT_EQ(parse_us_to_ns("", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_us_to_ns("abc", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_us_to_ns("1.2.3", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_us_to_ns("1e", v), DecimalStatus::kInvalid);
  EXPECT_EQ(parse_us_to_ns("-", v), DecimalStatus::kInvalid);
  // 9.3e18 ns does not fit int64 (max 9.22e18).
  EXPECT_EQ(parse_us_to_ns("9300000000000000", v), DecimalStatus::kOverflow);
  EXPECT_EQ(parse_us_to_ns("1e400", v), DecimalStatus::kOverflow);
  EXPECT_EQ(v, 42);
}

TEST(Time, Integers) {
  int64_t v = 0;
  EXPECT_EQ(parse_int64("9223372036854775807", v), DecimalStatus::kExact);
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_EQ(parse_int64("-9223372036854775808", v), DecimalStatus::kExact);
  EXPECT_EQ(v, INT64_MIN);
  // "Comms Id" values above int64 exist in real traces.
  EXPECT_EQ(parse_int64("18446744073709551615", v), DecimalStatus::kOverflow);
  uint64_t u = 0;
  EXPECT_EQ(parse_uint64("18446744073709551615", u), DecimalStatus::kExact);
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_EQ(parse_uint64("18446744073709551616", u), DecimalStatus::kOverflow);
  EXPECT_EQ(parse_int64("12a", v), DecimalStatus::kInvalid);
}
