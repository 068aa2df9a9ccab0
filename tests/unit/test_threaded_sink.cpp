// ThreadedSink: the inner sink receives exactly the calls made, in order, whatever the batch size;
// an error thrown by the inner sink reaches the caller and nothing after it reaches the sink.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chopper/report/threaded_sink.hpp"

using namespace chopper;

namespace {

// Logs every call as text (the cells' text copied during the call, as a sink must).
class Recorder : public TableSink {
 public:
  explicit Recorder(size_t fail_at_row = SIZE_MAX) : fail_at_(fail_at_row) {}
  void begin(const TableSchema& s) override { log.push_back("begin " + s.name); }
  void row(std::span<const Cell> cells) override {
    if (rows == fail_at_) throw Error("disk full");
    ++rows;
    std::string line = "row";
    for (const Cell& c : cells) {
      switch (c.kind) {
        case Cell::kNull:
          line += " null";
          break;
        case Cell::kInt:
          line += fmt::format(" i{}", c.i);
          break;
        case Cell::kReal:
          line += fmt::format(" r{}", c.r);
          break;
        case Cell::kText:
          line += fmt::format(" t[{}]", c.s);
          break;
      }
    }
    log.push_back(line);
  }
  void end() override { log.push_back("end"); }
  std::vector<std::string> log;
  size_t rows = 0;

 private:
  size_t fail_at_;
};

const TableSchema kSchema{
    "t", "doc", {{"a", ColType::kInt, ""}, {"b", ColType::kReal, ""}, {"c", ColType::kText, ""}}};

// Three tables, 0, 1 and 1000 rows; text short (kept inside std::string) and long, empty, NULL.
void play(TableSink& s) {
  for (int t = 0; t < 3; ++t) {
    TableSchema schema = kSchema;
    schema.name = fmt::format("table{}", t);
    s.begin(schema);
    const int rows = t == 0 ? 0 : t == 1 ? 1 : 1000;
    for (int r = 0; r < rows; ++r) {
      // The text lives only during the call, as a caller's cells may.
      std::string text =
          r % 3 == 0 ? fmt::format("x{}", r) : std::string(static_cast<size_t>(r % 50), 'y');
      const Cell cells[] = {Cell::of(r), r % 7 == 0 ? Cell::null() : Cell::of(r * 0.5),
                            r % 11 == 0 ? Cell::null() : Cell::of(std::string_view(text))};
      s.row(cells);
      text.assign(text.size(), '#');  // overwritten at once: a copy must have been taken
    }
    s.end();
  }
}

}  // namespace

TEST(ThreadedSink, InnerSinkSeesEveryCallInOrderAtAnyBatchSize) {
  Recorder direct;
  play(direct);
  ASSERT_EQ(direct.log.size(), 3u * 2 + 1 + 1000);
  for (size_t batch : {1ul, 3ul, 64ul, 4096ul}) {
    Recorder inner;
    ThreadedSink ts(inner, batch);
    play(ts);
    ts.finish();
    EXPECT_EQ(inner.log, direct.log) << "batch " << batch;
  }
}

TEST(ThreadedSink, DestructorDeliversWhatFinishWouldHave) {
  Recorder direct, inner;
  play(direct);
  {
    ThreadedSink ts(inner, 7);
    play(ts);
  }
  EXPECT_EQ(inner.log, direct.log);
}

TEST(ThreadedSink, InnerErrorReachesTheCallerAndStopsTheSink) {
  // The inner sink throws on its 6th row (table2's 5th: table1 has one row); the caller sees the
  // error by finish() at the latest, and no row after it reaches the sink.
  Recorder inner(5);
  ThreadedSink ts(inner, 2);
  try {
    play(ts);
    ts.finish();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "disk full");
  }
  EXPECT_EQ(inner.rows, 5u);
  EXPECT_EQ(inner.log.back(), "row i3 r1.5 t[x3]");
  EXPECT_THROW(ts.row(std::span<const Cell>()), Error) << "calls after finish()";
}

TEST(ThreadedSink, SeveralSinksEachSeeEveryCallFromOneCopy) {
  // Two or three inner sinks, each on its own thread, fed the same batches: each sees exactly the
  // calls made, in order (the batch is shared, not copied per sink), at any batch size.
  Recorder direct;
  play(direct);
  for (size_t batch : {1ul, 5ul, 4096ul}) {
    for (size_t n : {2ul, 3ul}) {
      std::vector<Recorder> inner(n);
      std::vector<TableSink*> sinks;
      for (Recorder& r : inner) sinks.push_back(&r);
      ThreadedSink ts(sinks, batch);
      play(ts);
      ts.finish();
      for (size_t k = 0; k < n; ++k)
        EXPECT_EQ(inner[k].log, direct.log) << "batch " << batch << ", sink " << k << " of " << n;
    }
  }
}

TEST(ThreadedSink, OneSinksErrorStopsEveryOneAndReachesTheCaller) {
  // The second sink throws on its 6th row: the caller gets its error, the failing sink saw no row
  // after it, and the other sink stopped too (at most the batches already queued: 2 rows each).
  Recorder ok, failing(5);
  ThreadedSink ts(std::vector<TableSink*>{&ok, &failing}, 2);
  try {
    play(ts);
    ts.finish();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "disk full");
  }
  EXPECT_EQ(failing.rows, 5u);
  EXPECT_LT(ok.rows, 1001u) << "the other sink did not get every row";
}
