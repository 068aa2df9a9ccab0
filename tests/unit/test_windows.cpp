// Analysis windows without ProfilerStep (hierarchy/label.cpp): repeated top-level annotations, the
// whole trace, --iteration-regex; MTIA device events (the Kineto reader); chopper's own files not
// read as traces and a lone trace without a rank warning (ingest/load.cpp, link/validate.cpp).
// Every expected number follows from the hand-made fixture named beside it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

size_t by_correlation(const RankTrace& t, int64_t c) {
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.correlation[i] == c) return i;
  ADD_FAILURE() << "no activity with correlation " << c;
  return 0;
}

std::string rule_of(const RankTrace& t, size_t a) {
  const uint16_t r = t.gpu.iteration_rule[a];
  return r == kNoRule ? std::string() : t.label_rules[r];
}

const Diagnostics::Entry* source_of(const RankTrace& t) {
  for (const Diagnostics::Entry& e : t.diagnostics.entries())
    if (e.kind == kIterationSourceDiag) return &e;
  return nullptr;
}

RankTrace labelled(const std::string& text, const Taxonomy& tx) {
  RankTrace t = test::parse(text);
  label_trace(tx, t);
  return t;
}

struct Dir {
  fs::path path;
  explicit Dir(const std::string& name) {
    path =
        fs::temp_directory_path() / ("chopper_windows_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string put(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

}  // namespace

// tests/data/decode_steps.json: no ProfilerStep; `serve` (once) holds `prefill` (once) and
// `decode` (three times), each launching one kernel (correlations 1-4), and one kernel
// (correlation 5) launched in `serve` outside them. `serve` alone at the top launches all 5
// kernels, so the search goes inside it; there `decode` repeats and launches 3 of the 4 kernels
// (at least half), so prefill and the decodes are the 4 windows, numbered 0-3 by start.
TEST(Windows, RepeatedAnnotationsAreTheIterations) {
  const RankTrace t =
      labelled(test::read_file(test::data_path("decode_steps.json")), Taxonomy::builtin());
  ASSERT_EQ(t.steps.size(), 4u);
  const Ns starts_us[] = {10, 250, 450, 650};
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(t.steps[k].number, static_cast<int64_t>(k));
    EXPECT_EQ(t.steps[k].start_ns, starts_us[k] * 1000);
  }
  for (int64_t c = 1; c <= 4; ++c) {
    const size_t a = by_correlation(t, c);
    EXPECT_EQ(t.gpu.iteration[a], c - 1) << "correlation " << c;
    EXPECT_EQ(rule_of(t, a), "repeated_annotation");
    // The window's annotation is structural: the operation is the op inside it.
    EXPECT_EQ(t.strings.str(t.gpu.operation[a]), "aten::mm");
  }
  EXPECT_EQ(t.gpu.iteration[by_correlation(t, 5)], kNoId) << "launched outside every window";
  const Diagnostics::Entry* src = source_of(t);
  ASSERT_NE(src, nullptr);
  EXPECT_EQ(src->count, 4u);
  EXPECT_EQ(src->examples.front(), "repeated annotation 'prefill', 'decode'");
}

// --iteration-regex without a group: the matching ops, numbered by occurrence from 0 (the three
// decodes), and it wins over the fallback: prefill's kernel has no iteration now.
TEST(Windows, IterationRegexNumbersByOccurrence) {
  Taxonomy tx = Taxonomy::builtin();
  tx.add_iteration_regex("^decode$");
  const RankTrace t = labelled(test::read_file(test::data_path("decode_steps.json")), tx);
  ASSERT_EQ(t.steps.size(), 3u);
  for (int64_t c = 2; c <= 4; ++c) {
    const size_t a = by_correlation(t, c);
    EXPECT_EQ(t.gpu.iteration[a], c - 2);
    EXPECT_EQ(rule_of(t, a), "iteration_regex");
  }
  EXPECT_EQ(t.gpu.iteration[by_correlation(t, 1)], kNoId);
  ASSERT_NE(source_of(t), nullptr);
  EXPECT_EQ(source_of(t)->examples.front(), "--iteration-regex '^decode$'");
  EXPECT_EQ(source_of(t)->count, 3u);
}

// Two annotations `iter 7` and `iter 9`, one kernel each. Their names differ, so nothing repeats
// and neither launches more than half: the whole trace is iteration 0. With a regex whose group
// is the number, the windows are 7 and 9.
TEST(Windows, DistinctNamesAreOneWindowUnlessARegexNumbersThem) {
  std::string ev;
  for (int k : {7, 9}) {
    const int ts = k * 100;
    ev += fmt::format(
        R"({}{{"ph":"X","cat":"user_annotation","name":"iter {}","pid":1,"tid":1,"ts":{},"dur":80}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":{},"dur":10,"args":{{"device":0,"stream":7,"correlation":{}}}}})",
        ev.empty() ? "" : ",", k, ts, ts + 10, k, ts + 20, k);
  }
  const std::string text = test::trace_of(ev);
  const RankTrace whole = labelled(text, Taxonomy::builtin());
  ASSERT_EQ(whole.steps.size(), 1u);
  EXPECT_EQ(whole.steps[0].start_ns, 720'000);  // the first kernel's start
  EXPECT_EQ(whole.steps[0].end_ns, 930'000);    // the last kernel's end
  for (int64_t c : {7, 9}) {
    EXPECT_EQ(whole.gpu.iteration[by_correlation(whole, c)], 0);
    EXPECT_EQ(rule_of(whole, by_correlation(whole, c)), "whole_trace");
  }
  EXPECT_EQ(source_of(whole)->examples.front(), "whole trace (no range repeats)");

  Taxonomy tx = Taxonomy::builtin();
  tx.add_iteration_regex(R"(^iter (\d+)$)");
  const RankTrace t = labelled(text, tx);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.gpu.iteration[by_correlation(t, 7)], 7);
  EXPECT_EQ(t.gpu.iteration[by_correlation(t, 9)], 9);
}

// A GPU-only trace (no host op, no runtime call): both kernels are iteration 0 of the whole trace.
TEST(Windows, GpuOnlyTraceIsOneWindow) {
  const RankTrace t = labelled(
      test::trace_of(
          R"({"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0,"stream":7}},)"
          R"({"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":30,"dur":5,"args":{"device":0,"stream":7}})"),
      Taxonomy::builtin());
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.gpu.iteration[0], 0);
  EXPECT_EQ(t.gpu.iteration[1], 0);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(source_of(t)->examples.front(), "whole trace (no host ops)");
}

// A ProfilerStep trace keeps its steps, and says so.
TEST(Windows, ProfilerStepIsTheSourceWhenPresent) {
  const RankTrace t =
      labelled(test::read_file(test::data_path("labels_fixture.json")), Taxonomy::builtin());
  ASSERT_NE(source_of(t), nullptr);
  EXPECT_EQ(source_of(t)->examples.front(), "rule profiler_step");
  EXPECT_EQ(source_of(t)->count, t.steps.size());
}

TEST(Windows, BadIterationRegexIsAnError) {
  Taxonomy tx = Taxonomy::builtin();
  EXPECT_THROW(tx.add_iteration_regex("(decode"), Error);
}

// tests/data/mtia_fixture.json, in the shape Kineto writes for MTIA: two `mtia_runtime` calls
// inside aten::add, two `mtia_ccp_events` device events (the first linked by correlation 101, the
// second only by its ac2g flow, whose start lies in the second call) and two events of a category
// chopper does not read (`accel_events`), which must be a warning with their count.
TEST(Windows, MtiaDeviceEventsAreKernels) {
  const RankTrace t = test::parse(test::read_file(test::data_path("mtia_fixture.json")));
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.gpu.kind[0], GpuKind::kKernel);
  EXPECT_EQ(t.gpu.kind[1], GpuKind::kKernel);
  EXPECT_EQ(t.runtime.size(), 2u);
  EXPECT_EQ(t.linkable_gpu_activities, 2u);
  EXPECT_EQ(t.linked_gpu_activities, 2u);
  const size_t second = t.gpu.correlation[0] == 101 ? 1 : 0;
  EXPECT_EQ(t.gpu.runtime_idx[second], 1) << "the ac2g flow names the second runtime call";
  EXPECT_EQ(t.diagnostics.count("unread_device_category"), 2u);
}

// A directory holding a trace, a synthetic run's truth.json and a chopper timeline (Kineto-shaped,
// named like a trace): both are chopper's own, told by their content, and skipped as such.
TEST(Windows, OwnOutputIsNotATrace) {
  Dir d("own");
  d.put("rank0.json", test::read_file(test::data_path("labels_fixture.json")));
  d.put("truth.json", "{\n\"generator\": \"chopper synth\",\n\"config\": {}\n}\n");
  d.put(
      "timeline.json",
      R"({"displayTimeUnit":"ns","otherData":{"tool":"chopper timeline","clock":"x"},"traceEvents":[)"
      R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"device":0}}]})");
  chopper::Run run = load_run({d.path.string()});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_EQ(run.skipped.size(), 2u);
  for (const auto& [file, why] : run.skipped)
    EXPECT_TRUE(is_own_output(why)) << file << ": " << why;
}

// One trace without a rank is rank 0 with no warning; two such traces warn for each.
TEST(Windows, LoneTraceNeedsNoRankWarning) {
  Dir d("lone");
  d.put("a.json", test::read_file(test::data_path("decode_steps.json")));
  chopper::Run one = load_run({d.path.string()});
  validate_run(one);
  ASSERT_EQ(one.ranks.size(), 1u);
  EXPECT_EQ(one.ranks[0].rank, 0);
  for (const RunProblem& p : one.problems) EXPECT_NE(p.kind, RunDiag::kRankAssigned) << p.message;
  d.put("b.json", test::read_file(test::data_path("decode_steps.json")));
  chopper::Run two = load_run({d.path.string()});
  validate_run(two);
  size_t assigned = 0;
  for (const RunProblem& p : two.problems) assigned += p.kind == RunDiag::kRankAssigned;
  EXPECT_EQ(assigned, 2u);
}
