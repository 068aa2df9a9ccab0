// Every public trace with GPU activity gets at least one analysis window and at least one finding,
// also those without ProfilerStep#N (hierarchy/label.cpp's fallback: repeated top-level
// annotations, else the whole trace). The window counts and sources are pinned per trace; why each
// is right is said beside it (from the trace's own top-level host ranges, which
// `python3 -c` over the gzip JSON lists: see the comments). Skips when ../shared is absent.
#include <gtest/gtest.h>

#include <filesystem>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

struct Case {
  const char* file;    // under traces/kineto
  size_t windows;      // iterations (RankTrace::steps) of its one rank
  const char* source;  // the iteration_source diagnostic
  const char* why;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"hta_a100_alexnet_cuda_sync.json.gz", 1, "whole trace (no range repeats)",
       "one top-level annotation, [param|cuda], with no repeated annotation inside it"},
      {"hta_event_sync_multi_stream.json.gz", 1, "whole trace (no range repeats)",
       "no annotation at all: three top-level aten::matmul cpu_ops, which are not annotations"},
      {"tracelens_b200_eager_rank0.json.gz", 1, "whole trace (no range repeats)",
       "one top-level annotation (execute_context_1(...)_generation_0(0)) and nothing repeating "
       "inside it that launches most of the work"},
      {"tracelens_mi210_gpu_only.json.gz", 1, "whole trace (no host ops)",
       "kernels and runtime calls only"},
      {"hta_mi250_minitoy_rocm6.2.json.gz", 2, "rule profiler_step", "ProfilerStep#1 and #2"},
  };
  return c;
}

}  // namespace

TEST(RealWindows, EveryTraceHasWindowsAndFindings) {
  if (!test::have_shared_traces()) GTEST_SKIP() << "../shared/traces not present";
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.file);
    chopper::Run run = load_run({test::shared_path(std::string("traces/kineto/") + c.file)});
    validate_run(run);
    ASSERT_EQ(run.ranks.size(), 1u);
    ASSERT_TRUE(run.ranks[0].ok);
    label_run(Taxonomy::builtin(), run, 2);
    const RankTrace& t = run.ranks[0].trace;
    EXPECT_EQ(t.steps.size(), c.windows) << c.why;
    std::string source;
    for (const Diagnostics::Entry& e : t.diagnostics.entries())
      if (e.kind == kIterationSourceDiag) source = e.examples.front();
    EXPECT_EQ(source, c.source) << c.why;
    AnalysisOptions o;
    o.threads = 2;
    const RunAnalysis ra = analyze_run(run, o);
    const Findings f = decide_findings(ra, o);
    EXPECT_GE(f.iterations, 1u);
    EXPECT_GE(f.all.size(), 1u) << "every trace with GPU activity gets a finding";
  }
}

// Every public Kineto trace (each file a run of its own): a rank with GPU activity has at least
// one window and the run at least one finding.
TEST(RealWindows, EveryPublicTraceHasAWindow) {
  if (!test::have_shared_traces()) GTEST_SKIP() << "../shared/traces not present";
  size_t with_gpu = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::shared_path("traces/kineto"))) {
    if (!e.is_regular_file()) continue;
    SCOPED_TRACE(e.path().string());
    chopper::Run run = load_run({e.path().string()});
    validate_run(run);
    if (run.ranks.size() != 1 || !run.ranks[0].ok || run.ranks[0].trace.gpu.size() == 0) continue;
    ++with_gpu;
    label_run(Taxonomy::builtin(), run, 2);
    EXPECT_GE(run.ranks[0].trace.steps.size(), 1u);
    AnalysisOptions o;
    o.threads = 2;
    const Findings f = decide_findings(analyze_run(run, o), o);
    EXPECT_GE(f.iterations, 1u);
    EXPECT_GE(f.all.size(), 1u);
  }
  // All but hta_cpu_only_rank34, hta_no_distributed_info (no GPU events) and the CUPTI counter
  // pass (not a rank).
  EXPECT_EQ(with_gpu, 12u);
}
