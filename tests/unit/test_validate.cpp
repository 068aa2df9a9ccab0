// Validation of a run before analysis (link/validate.hpp): one run, every rank once, one world
// size; unknown ranks get unique ids; the diagnostics rows (link rate, reader anomalies).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/error.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

// tests/data/mini_train.json (rank 1 of 2, nccl, 1.5 ms from baseTimeNanoseconds
// 1700000000000000000) with its rank, world size, base time and backend replaced; rank < 0 drops
// distributedInfo.
std::string mini(int64_t rank, int64_t world_size, int64_t base_ns = 1700000000000000000,
                 const std::string& backend = "nccl") {
  std::string t = test::read_file(test::data_path("mini_train.json"));
  auto replace = [&t](const std::string& from, const std::string& to) {
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
  };
  if (rank < 0) {
    const size_t a = t.find("\"distributedInfo\"");
    const size_t b = t.find("\"cupti_version\"");
    t.erase(a, b - a);
  } else {
    replace("\"rank\": 1, \"world_size\": 2",
            fmt::format("\"rank\": {}, \"world_size\": {}", rank, world_size));
    replace("\"backend\": \"nccl\"", "\"backend\": \"" + backend + "\"");
  }
  replace("\"baseTimeNanoseconds\": 1700000000000000000",
          fmt::format("\"baseTimeNanoseconds\": {}", base_ns));
  return t;
}

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name) {
    path =
        fs::temp_directory_path() / ("chopper_validate_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string put(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

size_t count_kind(const chopper::Run& run, RunDiag k) {
  size_t n = 0;
  for (const RunProblem& p : run.problems) n += p.kind == k;
  return n;
}
const RunProblem* find_kind(const chopper::Run& run, RunDiag k) {
  for (const RunProblem& p : run.problems)
    if (p.kind == k) return &p;
  return nullptr;
}

constexpr int64_t kDay = 86'400'000'000'000;

}  // namespace

// The kinds are declared once (X-macro): every name parses back to its kind, names are distinct,
// each has a doc. The severities the policy relies on: a file unread and files of two runs are
// errors, missing ranks a warning, the link rate info.
TEST(Validate, DiagnosticKindsRoundTrip) {
  std::set<std::string_view> names;
  for (RunDiag k : all_run_diags()) {
    RunDiag back{};
    ASSERT_TRUE(parse_run_diag(run_diag_name(k), back)) << run_diag_name(k);
    EXPECT_EQ(back, k);
    EXPECT_TRUE(names.insert(run_diag_name(k)).second) << "duplicate " << run_diag_name(k);
    EXPECT_FALSE(run_diag_doc(k).empty());
  }
  EXPECT_EQ(names.size(), 11u);
  RunDiag k{};
  EXPECT_FALSE(parse_run_diag("trailing_data", k)) << "a reader kind is not a run-level kind";
  EXPECT_EQ(run_diag_severity(RunDiag::kUnreadableFile), Severity::kError);
  EXPECT_EQ(run_diag_severity(RunDiag::kDifferentRuns), Severity::kError);
  EXPECT_EQ(run_diag_severity(RunDiag::kMissingRanks), Severity::kWarning);
  EXPECT_EQ(run_diag_severity(RunDiag::kGpuActivityUnlinked), Severity::kInfo);
  EXPECT_EQ(severity_name(Severity::kError), "error");
}

// Two ranks of one run (0 and 1 of 2, same clock): nothing to say, one group of both.
TEST(Validate, OneRunIsClean) {
  Dir d("clean");
  d.put("rank0.json", mini(0, 2));
  d.put("rank1.json", mini(1, 2));
  chopper::Run run = load_run({d.path.string()});
  const std::vector<RunGroup> g = validate_run(run);
  EXPECT_TRUE(run.problems.empty()) << run.problems.front().message;
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0], (RunGroup{0, 1}));
  EXPECT_FALSE(run_is_mixed(run));
}

// The defect: three unrelated single-rank traces (each "rank 0 of 1", a day apart) were merged
// into one run of three rank 0s. Wanted: one different_runs error naming the three files (count 3:
// three runs), and with split_runs three groups of one rank, no error, one run_split note.
TEST(Validate, UnrelatedTracesAreDifferentRuns) {
  Dir d("unrelated");
  const std::string a = d.put("a.json", mini(0, 1, 1700000000000000000));
  const std::string b = d.put("b.json", mini(0, 1, 1700000000000000000 + kDay));
  const std::string c = d.put("c.json", mini(0, 1, 1700000000000000000 + 2 * kDay));
  chopper::Run run = load_run({d.path.string()});
  const std::vector<RunGroup> g = validate_run(run);
  ASSERT_EQ(count_kind(run, RunDiag::kDifferentRuns), 1u);
  const RunProblem& p = *find_kind(run, RunDiag::kDifferentRuns);
  EXPECT_EQ(p.count, 3u);
  EXPECT_EQ(p.files, (std::vector<std::string>{a, b, c}));
  EXPECT_NE(p.message.find("3 different runs"), std::string::npos) << p.message;
  EXPECT_NE(p.message.find("2023-11-14 22:13:20 UTC"), std::string::npos) << p.message;
  EXPECT_EQ(count_kind(run, RunDiag::kDuplicateRank), 0u) << "a rank 0 per run is no duplicate";
  EXPECT_TRUE(run_is_mixed(run));
  EXPECT_EQ(g.size(), 3u);

  chopper::Run split = load_run({d.path.string()});
  ValidateOptions vo;
  vo.split_runs = true;
  const std::vector<RunGroup> gs = validate_run(split, vo);
  EXPECT_FALSE(run_is_mixed(split));
  ASSERT_EQ(gs.size(), 3u);
  ASSERT_EQ(count_kind(split, RunDiag::kRunSplit), 1u);
  const std::vector<chopper::Run> runs = split_run(std::move(split), gs);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].ranks.at(0).file, a) << "runs in time order";
  EXPECT_EQ(runs[2].ranks.at(0).file, c);
  for (const chopper::Run& r : runs) {
    ASSERT_EQ(r.ranks.size(), 1u);
    ASSERT_EQ(count_kind(r, RunDiag::kRunSplit), 1u);
    EXPECT_EQ(find_kind(r, RunDiag::kRunSplit)->files, std::vector<std::string>{r.ranks[0].file});
  }
}

// Clocks of one run's nodes differ by seconds at most; jobs are minutes apart. A rank 30 s off
// (a 1.5 ms profile) is the same run; one 5 minutes off is another (rule: gap <= max(60 s, the
// longer span)).
TEST(Validate, SkewWithinAMinuteIsOneRun) {
  Dir d("skew");
  d.put("rank0.json", mini(0, 2));
  d.put("rank1.json", mini(1, 2, 1700000000000000000 + 30'000'000'000));
  chopper::Run run = load_run({d.path.string()});
  EXPECT_EQ(validate_run(run).size(), 1u);
  EXPECT_TRUE(run.problems.empty());
  d.put("rank1.json", mini(1, 2, 1700000000000000000 + 300'000'000'000));
  chopper::Run apart = load_run({d.path.string()});
  EXPECT_EQ(validate_run(apart).size(), 2u);
  EXPECT_EQ(count_kind(apart, RunDiag::kDifferentRuns), 1u);
}

// The defect: two copies of one rank gave "2 ranks". Wanted: duplicate_rank for rank 1 naming
// both files (count 2), and two groups (the n-th copy in the n-th) for --split-runs.
TEST(Validate, TwoCopiesOfOneRankAreADuplicate) {
  Dir d("dup");
  const std::string a = d.put("rank1.json", mini(1, 2));
  const std::string b = d.put("rank1_copy.json", mini(1, 2));
  chopper::Run run = load_run({d.path.string()});
  const std::vector<RunGroup> g = validate_run(run);
  ASSERT_EQ(count_kind(run, RunDiag::kDuplicateRank), 1u);
  const RunProblem& p = *find_kind(run, RunDiag::kDuplicateRank);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.count, 2u);
  EXPECT_EQ(p.files, (std::vector<std::string>{a, b}));
  EXPECT_EQ(count_kind(run, RunDiag::kDifferentRuns), 0u) << "same clock, same metadata";
  EXPECT_TRUE(run_is_mixed(run));
  EXPECT_EQ(g.size(), 2u);
}

// World sizes 2 and 4 in one directory: world_size_mismatch naming both (count 2: two sizes).
TEST(Validate, WorldSizeMismatch) {
  Dir d("ws");
  d.put("rank0.json", mini(0, 2));
  d.put("rank1.json", mini(1, 4));
  chopper::Run run = load_run({d.path.string()});
  validate_run(run);
  ASSERT_EQ(count_kind(run, RunDiag::kWorldSizeMismatch), 1u);
  const RunProblem& p = *find_kind(run, RunDiag::kWorldSizeMismatch);
  EXPECT_EQ(p.count, 2u);
  EXPECT_EQ(p.files.size(), 2u);
  EXPECT_TRUE(run_is_mixed(run));
}

// World size 8, files for ranks 0, 1 and 4: the five others are named, as ranges; a warning (a
// subset of ranks is often profiled), so the run is still analysed.
TEST(Validate, MissingRanksAreNamed) {
  Dir d("missing");
  for (int r : {0, 1, 4}) d.put(fmt::format("rank{}.json", r), mini(r, 8));
  chopper::Run run = load_run({d.path.string()});
  validate_run(run);
  ASSERT_EQ(count_kind(run, RunDiag::kMissingRanks), 1u) << run.problems.size();
  const RunProblem& p = *find_kind(run, RunDiag::kMissingRanks);
  EXPECT_EQ(p.count, 5u);
  EXPECT_EQ(p.of_count, 8);
  EXPECT_NE(p.message.find("rank(s) 2-3, 5-7 (5 of 8 missing)"), std::string::npos) << p.message;
  EXPECT_FALSE(run_is_mixed(run));
}

// The defect: ranks neither distributedInfo nor the file name gives were all -1 (NULL = "all
// ranks" in the tables). Wanted: ids after the highest known rank and world size, in path order:
// ranks 0 and 1 of world size 2 known, so a.json gets 2 and b.json 3, each with a rank_assigned
// warning; the ranks are re-sorted.
TEST(Validate, UnknownRanksGetUniqueIds) {
  Dir d("unknown");
  d.put("rank0.json", mini(0, 2));
  d.put("rank1.json", mini(1, 2));
  const std::string b = d.put("b.json", mini(-1, -1));
  const std::string a = d.put("a.json", mini(-1, -1));
  chopper::Run run = load_run({d.path.string()});
  validate_run(run);
  ASSERT_EQ(run.ranks.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(run.ranks[i].rank, static_cast<int64_t>(i));
  EXPECT_EQ(run.ranks[2].file, a);
  EXPECT_EQ(run.ranks[3].file, b);
  EXPECT_EQ(run.ranks[2].trace.meta.rank, 2);
  EXPECT_EQ(run.ranks[2].trace.meta.rank_source, "assigned");
  EXPECT_EQ(count_kind(run, RunDiag::kRankAssigned), 2u);
  EXPECT_FALSE(run_is_mixed(run)) << "files without distributedInfo join the run they overlap";
  EXPECT_EQ(count_kind(run, RunDiag::kRankOutOfRange), 0u) << "assigned ids are not checked";
}

// A missing path and a corrupt file are problems of their own (errors), the others read.
TEST(Validate, UnreadableAndMissingFilesAreErrors) {
  Dir d("unreadable");
  d.put("rank0.json", mini(0, 2));
  std::string bad = mini(1, 2);
  bad[0] = 'X';
  const std::string badf = d.put("rank1.json", bad);
  const std::string gone = (d.path / "rank2.json").string();
  chopper::Run run = load_run({d.path.string(), gone});
  validate_run(run);
  ASSERT_EQ(count_kind(run, RunDiag::kUnreadableFile), 1u);
  EXPECT_EQ(find_kind(run, RunDiag::kUnreadableFile)->files, std::vector<std::string>{badf});
  EXPECT_NE(find_kind(run, RunDiag::kUnreadableFile)->message.find("rank1.json: byte 0: "),
            std::string::npos);
  ASSERT_EQ(count_kind(run, RunDiag::kMissingPath), 1u);
  EXPECT_EQ(find_kind(run, RunDiag::kMissingPath)->message, gone + ": no such file or directory");
  EXPECT_FALSE(run_is_mixed(run));
}

// The diagnostics rows: mini_train.json links 7 of its 8 kernels/memcpys/memsets (`chopper info`
// says 87.5%); the unlinked one is the 20 µs AllGather without a runtime call, of 439.75 µs of
// GPU time (sync excluded): gpu_activity_unlinked count 1 of 8, 20000 ns, share 20000/439750.
TEST(Validate, DiagnosticsRowsHoldTheLinkRate) {
  Dir d("rows");
  d.put("rank1.json", mini(1, 2));
  chopper::Run run = load_run({d.path.string()});
  validate_run(run);
  const std::vector<DiagnosticRow> rows = run_diagnostics(run);
  const DiagnosticRow* link = nullptr;
  for (const DiagnosticRow& r : rows)
    if (r.kind == "gpu_activity_unlinked") link = &r;
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->rank, 1);
  EXPECT_EQ(link->severity, Severity::kInfo);
  EXPECT_EQ(link->count, 1u);
  EXPECT_EQ(link->of_count, 8);
  EXPECT_EQ(link->gpu_time_ns, 20000);
  EXPECT_EQ(link->rank_gpu_time_ns, 439750);
  EXPECT_NEAR(link->share_of_gpu_time, 20000.0 / 439750.0, 1e-12);
  EXPECT_NE(link->example.find("link rate 87.5%"), std::string::npos) << link->example;
}

// The defect: an array-form trace of 1,300 events with one flipped byte (the ',' after the 13th
// event became ']') kept 13 events, exit 0, and analyze said nothing. (That trace is now an error
// for its file: KinetoReader, trailing data.) A reader anomaly of the same weight, one event of 13
// with a negative duration (counted, taken as 0: 1 of 13 = 7.7%, far above the 0.1% shown), must
// give a row in the diagnostics and a line in analyze's summary naming the rank, the file and the
// kind.
TEST(Validate, ReaderAnomaliesAreSummarised) {
  Dir d("flipped");
  std::string text = "[";
  for (int i = 0; i < 13; ++i) {
    if (i) text += ",\n";
    text += fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, "dur": {}, "args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
        1700000000000000 + 10 * i, i == 5 ? -1 : 1, i + 1);
  }
  text += "]";
  const std::string f = d.put("rank0.json", text);
  chopper::Run run = load_run({f});
  validate_run(run);
  ASSERT_TRUE(run.ranks.at(0).ok);
  EXPECT_EQ(run.ranks[0].trace.gpu.size(), 13u);
  const std::vector<DiagnosticRow> rows = run_diagnostics(run);
  const DiagnosticRow* anomaly = nullptr;
  for (const DiagnosticRow& r : rows)
    if (r.kind == "negative_dur") anomaly = &r;
  ASSERT_NE(anomaly, nullptr);
  EXPECT_EQ(anomaly->rank, 0);
  EXPECT_EQ(anomaly->file, f);
  EXPECT_EQ(anomaly->severity, Severity::kWarning);
  EXPECT_NEAR(anomaly->share_of_events, 1.0 / 13.0, 1e-12);
  const std::string text_out = diagnostics_text(rows);
  EXPECT_NE(text_out.find("reader anomalies above 0.1% of the events in 1 rank(s)"),
            std::string::npos)
      << text_out;
  EXPECT_NE(text_out.find("rank 0 (" + f + "): negative_dur 1"), std::string::npos) << text_out;
  // No host side at all: every kernel unlinked, link rate 0% is printed.
  EXPECT_NE(text_out.find("link rate 0.0%: 13 of 13"), std::string::npos) << text_out;
}

// Nothing worth a word (one clean rank of a world of one, all linked): no summary at all.
TEST(Validate, CleanRunHasNoSummary) {
  std::vector<DiagnosticRow> rows(1);
  rows[0].rank = 0;
  rows[0].kind = "gpu_activity_unlinked";
  rows[0].severity = Severity::kInfo;
  rows[0].stage = "link";
  rows[0].count = 1;
  rows[0].of_count = 1000;  // 99.9% linked: above the 99% shown
  rows[0].gpu_time_ns = 5;
  rows[0].rank_gpu_time_ns = 100000;
  EXPECT_EQ(diagnostics_text(rows), "");
  rows[0].count = 11;  // 98.9%
  EXPECT_NE(diagnostics_text(rows).find("link rate 98.9%: 11 of 1000"), std::string::npos);
}
