#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chopper/base/error.hpp"
#include "chopper/pipeline/load.hpp"
#include "compress_util.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

TEST(Load, RankFromFileName) {
  EXPECT_EQ(rank_from_file_name("/x/rank-3.json.gz"), 3);
  EXPECT_EQ(rank_from_file_name("rank3_trace.json"), 3);
  EXPECT_EQ(rank_from_file_name("trace_rank_12.pt.trace.json"), 12);
  EXPECT_EQ(rank_from_file_name("RANK7.json"), 7);
  EXPECT_EQ(rank_from_file_name("/runs/rank9/worker.json"), -1) << "only the file name counts";
  EXPECT_EQ(rank_from_file_name("trace.json"), -1);
  EXPECT_EQ(rank_from_file_name("ranking-1.json"), -1);
}

namespace {

// A run directory: ranks 0..n-1 written as rank-N.json without distributedInfo (so the name
// decides), plus one corrupt file.
fs::path make_run(int n) {
  const fs::path dir =
      fs::temp_directory_path() / ("chopper_load_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text = chopper::test::read_file(chopper::test::data_path("mini_train.json"));
  const size_t a = text.find("\"distributedInfo\"");
  const size_t b = text.find("\"cupti_version\"");
  text.erase(a, b - a);
  for (int r = 0; r < n; ++r) {
    std::ofstream(dir / ("rank-" + std::to_string(r) + ".json")) << text;
  }
  std::ofstream(dir / "rank-99.json") << text.substr(0, 500);  // truncated
  std::ofstream(dir / "notes.txt") << "not a trace";
  return dir;
}

}  // namespace

TEST(Load, OrdersRanksNumericallyAndKeepsGoingPastABadFile) {
  const fs::path dir = make_run(12);
  chopper::Run run = load_run({dir.string()});
  ASSERT_EQ(run.ranks.size(), 13u);  // 12 good + 1 truncated; notes.txt is not a trace name
  for (int r = 0; r < 12; ++r) {
    EXPECT_TRUE(run.ranks[r].ok) << run.ranks[r].error;
    EXPECT_EQ(run.ranks[r].rank, r) << "numeric, not lexical (rank-10 after rank-9)";
    EXPECT_EQ(run.ranks[r].trace.meta.rank_source, "file name");
  }
  EXPECT_FALSE(run.ranks[12].ok);
  EXPECT_EQ(run.ranks[12].rank, 99);
  EXPECT_NE(run.ranks[12].error.find("rank-99.json: byte "), std::string::npos)
      << run.ranks[12].error;
  EXPECT_EQ(run.failed(), 1u);
  fs::remove_all(dir);
}

TEST(Load, ResultDoesNotDependOnThreadsOrArgumentOrder) {
  const fs::path dir = make_run(6);
  std::vector<std::string> files;
  for (int r = 5; r >= 0; --r)
    files.push_back((dir / ("rank-" + std::to_string(r) + ".json")).string());
  LoadOptions one;
  one.threads = 1;
  LoadOptions many;
  many.threads = 4;
  chopper::Run a = load_run({dir.string()}, one);
  chopper::Run b = load_run(files, many);
  ASSERT_EQ(b.ranks.size(), 6u);
  for (size_t i = 0; i < b.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].file, b.ranks[i].file);
    EXPECT_EQ(a.ranks[i].trace.gpu.start_ns, b.ranks[i].trace.gpu.start_ns);
    EXPECT_EQ(a.ranks[i].trace.gpu.host_op_idx, b.ranks[i].trace.gpu.host_op_idx);
    EXPECT_EQ(a.ranks[i].trace.total_events, b.ranks[i].trace.total_events);
  }
  fs::remove_all(dir);
}

// One missing path on the command line used to drop every rank (exit 2). Wanted: the missing
// path is a failed slot of its own (missing, "no such file or directory"), the others are read.
TEST(Load, MissingPathIsReportedAndTheOthersRead) {
  const fs::path dir = make_run(2);
  chopper::Run run = load_run(
      {(dir / "rank-0.json").string(), "/nonexistent/rank-7.json", (dir / "rank-1.json").string()});
  ASSERT_EQ(run.ranks.size(), 3u);
  EXPECT_TRUE(run.ranks[0].ok);
  EXPECT_TRUE(run.ranks[1].ok);
  EXPECT_FALSE(run.ranks[2].ok);
  EXPECT_TRUE(run.ranks[2].missing);
  EXPECT_EQ(run.ranks[2].rank, 7) << "the rank its name gives";
  EXPECT_EQ(run.ranks[2].error, "/nonexistent/rank-7.json: no such file or directory");
  EXPECT_EQ(run.failed(), 1u);
  // Nothing at all: still no exception; every slot failed (the CLI's exit 2).
  chopper::Run none = load_run({"/nonexistent/dir"});
  ASSERT_EQ(none.ranks.size(), 1u);
  EXPECT_EQ(none.failed(), 1u);
  fs::remove_all(dir);
}

namespace {
std::string mini_text() {
  return chopper::test::read_file(chopper::test::data_path("mini_train.json"));
}
fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("chopper_load_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
}  // namespace

// A rank file whose first byte is corrupt was "skipped (not a trace)": one rank fewer, exit 0.
// Wanted: in a directory, a file under a trace name whose content is not JSON is a failed rank
// naming the file and byte 0; a JSON file that is not a trace (truth.json) is still skipped.
TEST(Load, CorruptFirstByteInADirectoryIsAnError) {
  const fs::path d = scratch("corrupt");
  std::string bad = mini_text();
  bad[0] = 'z';  // was '{'
  std::ofstream(d / "rank0.json") << mini_text();
  std::ofstream(d / "rank1.json") << bad;
  std::ofstream(d / "truth.json") << "{\"seed\": 1}";
  chopper::Run run = load_run({d.string()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_TRUE(run.ranks[0].ok || run.ranks[1].ok);
  const chopper::RankSlot& failed = run.ranks[0].ok ? run.ranks[1] : run.ranks[0];
  EXPECT_EQ(failed.file, (d / "rank1.json").string());
  EXPECT_EQ(failed.error.rfind((d / "rank1.json").string() + ": byte 0: not a JSON trace", 0), 0u)
      << failed.error;
  ASSERT_EQ(run.skipped.size(), 1u);
  EXPECT_EQ(run.skipped[0].first, (d / "truth.json").string());
  fs::remove_all(d);
}

// pzstd output (each frame preceded by a skippable frame holding its size) began with the
// skippable magic, was taken for plain text and skipped as "not a trace". Wanted: read, the same
// trace as the plain file; likewise plain concatenated frames (cat a.zst b.zst).
TEST(Load, MultiFrameAndPzstdZstdAreRead) {
  const fs::path d = scratch("zstd");
  const std::string text = mini_text();
  const size_t half = text.size() / 2;
  const std::string a = chopper::test::zstd(text.substr(0, half));
  const std::string b = chopper::test::zstd(text.substr(half));
  auto skippable = [](const std::string& frame) {
    std::string s = "\x50\x2a\x4d\x18";  // magic 0x184D2A50, little-endian
    const uint32_t len = 4;
    s.append(reinterpret_cast<const char*>(&len), 4);
    const uint32_t size = static_cast<uint32_t>(frame.size());
    s.append(reinterpret_cast<const char*>(&size), 4);
    return s + frame;
  };
  std::ofstream(d / "rank1.json") << text;
  std::ofstream(d / "cat.json.zst", std::ios::binary) << a + b;
  std::ofstream(d / "pzstd.json.zst", std::ios::binary) << skippable(a) + skippable(b);
  const chopper::RankTrace plain = load_rank_file((d / "rank1.json").string());
  for (const char* f : {"cat.json.zst", "pzstd.json.zst"}) {
    chopper::Run run = load_run({d.string() + "/" + f, (d / "rank1.json").string()});
    ASSERT_EQ(run.ranks.size(), 2u) << f;
    ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
    EXPECT_TRUE(run.skipped.empty());
    EXPECT_EQ(run.ranks[0].trace.gpu.start_ns, plain.gpu.start_ns) << f;
    EXPECT_EQ(run.ranks[0].trace.total_events, plain.total_events) << f;
    EXPECT_EQ(run.ranks[0].trace.diagnostics.total(), plain.diagnostics.total()) << f;
  }
  fs::remove_all(d);
}

// More trace files than the limit: an error naming the count, the limit and --max-files, before
// any file is opened (5 files, limit 4); at the limit, read.
TEST(Load, TooManyFilesIsAnError) {
  const fs::path dir = make_run(4);  // rank-0..3 and rank-99: 5 trace names
  LoadOptions lo;
  lo.max_files = 4;
  try {
    load_run({dir.string()}, lo);
    ADD_FAILURE() << "no error";
  } catch (const chopper::Error& e) {
    EXPECT_NE(std::string(e.what()).find("5 trace files found, more than the limit of 4"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--max-files"), std::string::npos);
  }
  lo.max_files = 5;
  EXPECT_EQ(load_run({dir.string()}, lo).ranks.size(), 5u);
  fs::remove_all(dir);
}

// A small trace keeps no more column capacity than it uses: the reader's first reserve is 1,024
// rows per column, so without trimming an 8 KB trace (mini_train.json: 8 GPU activities) held
// ~150 KB of slack and 5,000 such ranks took 1.1 GB (`chopper info`; 148 MB with it). Every column
// must end with at most 256 bytes or a quarter of its contents unused.
TEST(Load, SmallTraceKeepsNoColumnSlack) {
  chopper::Run run = load_run({chopper::test::data_path("mini_train.json")});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok);
  RankTrace& r = run.ranks[0].trace;
  size_t columns = 0, slack_bytes = 0;
  auto check = [&](const auto& col) {
    using T = typename std::decay_t<decltype(col)>::value_type;
    const size_t slack = (col.capacity() - col.size()) * sizeof(T);
    EXPECT_TRUE(slack <= 256 || slack <= col.size() * sizeof(T) / 4)
        << "a column of " << col.size() << " rows keeps " << slack << " bytes unused";
    ++columns;
    slack_bytes += slack;
  };
  r.gpu.for_each_column(check);
  r.host.for_each_column(check);
  r.runtime.for_each_column(check);
  EXPECT_GT(columns, 40u);
  EXPECT_LT(slack_bytes, columns * 256);
}
