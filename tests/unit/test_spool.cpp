// Spooled rows (report/spool.hpp) come back cell for cell: every kind, the extremes of each, text
// with any byte, rows across the writer's blocks and the reader's windows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>

#include "chopper/report/spool.hpp"

namespace chopper {
namespace {

namespace fs = std::filesystem;

struct Keep : TableSink {
  std::vector<std::vector<Cell>> rows;
  std::deque<std::string> texts;  // owns the text of the cells kept (a deque: it never moves them)
  void begin(const TableSchema&) override {}
  void row(std::span<const Cell> cells) override {
    std::vector<Cell> r(cells.begin(), cells.end());
    for (Cell& c : r)
      if (c.kind == Cell::kText) {
        texts.emplace_back(c.s);
        c.s = texts.back();
      }
    rows.push_back(std::move(r));
  }
  void end() override {}
};

bool same(const Cell& a, const Cell& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Cell::kNull:
      return true;
    case Cell::kInt:
      return a.i == b.i;
    case Cell::kReal:
      return std::memcmp(&a.r, &b.r, 8) == 0;  // the bits: NaN, -0.0
    case Cell::kText:
      return a.s == b.s;
  }
  return false;
}

TEST(Spool, EveryCellComesBack) {
  const fs::path path = fs::temp_directory_path() / ("chopper_spool_" + std::to_string(::getpid()));
  std::vector<std::string> texts = {"", "a", std::string("nul\0byte", 8), "é ünïcode ✓",
                                    std::string(70000, 'x')};
  std::vector<Cell> cells = {Cell::null(),
                             Cell::of(int64_t{0}),
                             Cell::of(int64_t{-1}),
                             Cell::of(std::numeric_limits<int64_t>::min()),
                             Cell::of(std::numeric_limits<int64_t>::max()),
                             Cell::of(1e-300),
                             Cell::of(-0.0),
                             Cell::of(std::numeric_limits<double>::quiet_NaN()),
                             Cell::of(-std::numeric_limits<double>::infinity())};
  for (const std::string& t : texts) cells.push_back(Cell::of(std::string_view(t)));
  SpoolChunk first, second, empty;
  {
    SpoolFile f(path.string());
    f.begin_chunk();
    f.row(cells);
    first = f.end_chunk();
    // Enough rows to cross the 1 MiB write buffer and the reader's 4 MiB window several times.
    f.begin_chunk();
    for (int64_t i = 0; i < 200000; ++i)
      f.row(std::vector<Cell>{Cell::of(i), Cell::of(std::string_view(texts[4]).substr(0, i % 97)),
                              Cell::of(static_cast<double>(i) / 7)});
    second = f.end_chunk();
    f.begin_chunk();
    empty = f.end_chunk();
    f.flush();
    EXPECT_EQ(f.size(), second.offset + second.bytes);
  }
  EXPECT_EQ(first.rows, 1u);
  EXPECT_EQ(second.rows, 200000u);
  EXPECT_EQ(empty.rows, 0u);
  EXPECT_GT(second.bytes, 4u << 20);
  SpoolReader r(path.string());
  {
    Keep k;
    r.replay(second, k);  // out of order
    ASSERT_EQ(k.rows.size(), 200000u);
    for (int64_t i = 0; i < 200000; i += 997) {
      EXPECT_EQ(k.rows[static_cast<size_t>(i)][0].i, i);
      EXPECT_EQ(k.rows[static_cast<size_t>(i)][1].s.size(), static_cast<size_t>(i % 97));
      EXPECT_EQ(k.rows[static_cast<size_t>(i)][2].r, static_cast<double>(i) / 7);
    }
  }
  {
    Keep k;
    r.replay(first, k);
    ASSERT_EQ(k.rows.size(), 1u);
    ASSERT_EQ(k.rows[0].size(), cells.size());
    for (size_t c = 0; c < cells.size(); ++c) EXPECT_TRUE(same(k.rows[0][c], cells[c])) << c;
  }
  {
    Keep k;
    r.replay(empty, k);
    EXPECT_TRUE(k.rows.empty());
  }
  fs::remove(path);
}

TEST(Spool, DamagedBytesAreAnErrorNotAGuess) {
  std::string bytes;
  encode_row(std::vector<Cell>{Cell::of(int64_t{5}), Cell::of("text")}, bytes);
  struct Null : TableSink {
    void begin(const TableSchema&) override {}
    void row(std::span<const Cell>) override {}
    void end() override {}
  } sink;
  EXPECT_NO_THROW(decode_rows(bytes, sink, "ok"));
  EXPECT_THROW(decode_rows(bytes.substr(0, bytes.size() - 1), sink, "cut"), Error);
  std::string bad = bytes;
  bad[1] = 9;  // no such cell kind
  EXPECT_THROW(decode_rows(bad, sink, "kind"), Error);
}

}  // namespace
}  // namespace chopper
