#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chopper/base/error.hpp"
#include "chopper/ingest/load.hpp"
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

TEST(Load, MissingPathIsAnError) {
  EXPECT_THROW(load_run({"/nonexistent/dir"}), chopper::Error);
}
