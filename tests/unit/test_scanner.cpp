#include <gtest/gtest.h>

#include <random>
#include <string>

#include "chopper/ingest/json_scanner.hpp"

using namespace chopper;
using Elem = ArrayElementScanner::Element;

namespace {

// Builds the inside of a JSON array: `n` objects whose strings hold brackets, quotes, escaped
// quotes and runs of backslashes, and records where each object starts and ends.
std::string make_elements(int n, std::mt19937& rng, std::vector<std::pair<size_t, size_t>>& where,
                          size_t offset) {
  const char* pieces[] = {"{",  "}",  "[",   "]", "\\\"", "\\\\", "\\\\\\\"", "x",
                          "é", ", ", "\\n", ":", "\\u005d"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += (rng() % 2) ? ",\n  " : ",";
    const size_t begin = offset + s.size();
    s += "{\"name\": \"";
    const int len = static_cast<int>(rng() % 12);
    for (int k = 0; k < len; ++k) s += pieces[rng() % (sizeof(pieces) / sizeof(pieces[0]))];
    s += "\", \"args\": {\"grid\": [1, [2, {}], 3], \"s\": \"]}\"}, \"ts\": " + std::to_string(i) + "}";
    where.emplace_back(begin, offset + s.size());
  }
  return s;
}

std::vector<Elem> scan_in_pieces(const std::string& buf, size_t from, bool scalar, std::mt19937& rng,
                                 size_t& stop) {
  ArrayElementScanner sc;
  sc.force_scalar(scalar);
  sc.reset();
  std::vector<Elem> out;
  size_t p = from;
  while (p < buf.size() && !sc.closed()) {
    const size_t end = std::min(buf.size(), p + 1 + rng() % 200);
    p = sc.scan(buf.data(), p, end, out);
  }
  stop = p;
  return out;
}

}  // namespace

// Both paths (64-byte blocks and byte by byte) find exactly the objects that were written, wherever
// the input is cut between calls.
TEST(ArrayElementScanner, FindsEveryElementAcrossArbitraryCuts) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<size_t, size_t>> where;
    std::string buf = "[";
    buf += make_elements(1 + static_cast<int>(rng() % 60), rng, where, 1);
    const size_t close = buf.size();
    buf += "], \"after\": [1, 2]";
    for (bool scalar : {false, true}) {
      size_t stop = 0;
      std::vector<Elem> got = scan_in_pieces(buf, 1, scalar, rng, stop);
      ASSERT_EQ(got.size(), where.size()) << "round " << round << " scalar " << scalar;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].begin, where[i].first);
        EXPECT_EQ(got[i].end, where[i].second);
        EXPECT_TRUE(got[i].is_object);
      }
      EXPECT_EQ(stop, close + 1) << "stops one past the closing ']'";
    }
  }
}

TEST(ArrayElementScanner, ReportsArraysAsNonObjects) {
  const std::string buf = "[{\"a\": 1}, [1, 2], 3, {\"b\": \"}\"}]";
  for (bool scalar : {false, true}) {
    ArrayElementScanner sc;
    sc.force_scalar(scalar);
    sc.reset();
    std::vector<Elem> out;
    const size_t stop = sc.scan(buf.data(), 1, buf.size(), out);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(out[0].is_object);
    EXPECT_FALSE(out[1].is_object);
    EXPECT_TRUE(out[2].is_object);
    EXPECT_EQ(buf.substr(out[2].begin, out[2].end - out[2].begin), "{\"b\": \"}\"}");
    EXPECT_TRUE(sc.closed());
    EXPECT_EQ(stop, buf.size());
  }
}

TEST(ArrayElementScanner, PendingElementSurvivesRebase) {
  // The reader moves unparsed bytes to the front of its window between calls.
  std::string part1 = "[{\"a\": \"x{";
  std::string part2 = "\"}, {\"b\": 2}]";
  ArrayElementScanner sc;
  sc.reset();
  std::vector<Elem> out;
  sc.scan(part1.data(), 1, part1.size(), out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(sc.inside_element());
  std::string moved = part1.substr(1) + part2;  // dropped the '[': positions move by -1
  sc.rebase(-1);
  sc.scan(moved.data(), part1.size() - 1, moved.size(), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(moved.substr(out[0].begin, out[0].end - out[0].begin), "{\"a\": \"x{\"}");
  EXPECT_EQ(moved.substr(out[1].begin, out[1].end - out[1].begin), "{\"b\": 2}");
}
