// Real traces: the host-side idle components (docs/metrics.md, End to end and Idle causes) summed
// over every iteration window of each Kineto trace under ../shared/traces/kineto with GPU
// activity, pinned to the ns, so that a change in how gaps are classified shows up per file. The
// numbers were read off chopper and checked for sense against what the traces hold (the comments
// say what the host was doing); each window's components add up to it exactly, and each
// idle_causes row equals its component.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

constexpr const char* kCauses[] = {"data_loading", "host_sync", "host_optimizer",
                                   "host_stall",   "host_late", "launch_overhead"};

struct IdleCase {
  const char* file;  // under traces/kineto
  // Σ over the windows of data_loading, host_sync, host_optimizer, host_stall, host_late,
  // launch_overhead (0 = none).
  Ns ns[6];
};

const std::vector<IdleCase>& idle_cases() {
  static const std::vector<IdleCase> c = {
      // No ProfilerStep: one whole-trace window (docs/hierarchy.md, Iteration). AlexNet's trace
      // holds the first, cold calls: one 6.98 s gap in aten::cudnn_convolution (cuDNN's algorithm
      // search) and launch calls of 31.8 ms on average (lazy module loading).
      {"hta_a100_alexnet_cuda_sync.json.gz", {0, 161000, 0, 0, 9797800000, 3056076000}},
      {"hta_event_sync_multi_stream.json.gz", {0, 0, 0, 15000, 19045000, 113000}},
      {"tracelens_b200_eager_rank0.json.gz", {0, 9282, 0, 0, 66205886, 6254410}},
      {"tracelens_mi210_gpu_only.json.gz", {0, 0, 0, 0, 425698, 210016}},
      // No GPU activity: no window.
      {"hta_no_distributed_info.json.gz", {0, 0, 0, 0, 0, 0}},
      // ProfilerSteps whose GPU never waited for the host (communication and compute fill it).
      {"tracelens_mi300x_resnet_ddp_rank0.json.gz", {0, 0, 0, 0, 0, 0}},
      // DDP training: most of the host side is framework time between kernels; the optimizer's
      // Optimizer.step / zero_grad annotations cover 43 ms; one short sync.
      {"hta_a100_ddp_nccl_rank0.json.gz", {0, 78736, 43288774, 15385910, 429764469, 20320926}},
      {"hta_mi250_minitoy_rocm6.2.json.gz", {0, 57611, 167825, 250862, 1822434, 6730880}},
      {"hta_sampled_2rank/rank-0.json.gz", {0, 350000, 77784000, 5725000, 200011000, 4642000}},
      {"hta_sampled_2rank/rank-1.json.gz", {0, 826000, 89988000, 5718000, 226348000, 3718000}},
      // One step, its host time before the first launch unnamed: host_stall.
      {"hta_triton_culaunch.json.gz", {0, 0, 0, 1309066, 0, 45426}},
      {"hta_v100_float_epoch_ts.json.gz", {0, 0, 354201, 3094374, 2052197, 78166}},
      // ResNet-50 on a V100, 6 steps, single-process DataLoader: 352 ms (58.7 ms per step) inside
      // enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, one gap per step (57-69 ms;
      // before the split it was host_stall, 58.9 ms per step); 24.6 ms in
      // Optimizer.zero_grad#SGD.zero_grad between its memsets; host_late 9.2 ms per step.
      {"kineto_v100_resnet50_2021_legacy.json.gz",
       {352401000, 74000, 24574000, 922000, 55064000, 19563000}},
      // Inference-style steps: short syncs (aten::item / cudaStreamSynchronize), framework time.
      {"tracelens_h100_qwen0.5b.json.gz", {0, 296987, 0, 0, 1029368, 290801}},
      {"tracelens_mi300x_qwen0.5b.json.gz", {0, 175720, 0, 588480, 1815104, 1414969}},
  };
  return c;
}

class RealIdleCauses : public ::testing::TestWithParam<size_t> {};

TEST_P(RealIdleCauses, ComponentsPinnedPerFile) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace idle-cause test skipped";
  const IdleCase& c = idle_cases()[GetParam()];
  SCOPED_TRACE(c.file);
  chopper::Run run = load_run({chopper::test::shared_path(std::string("traces/kineto/") + c.file)});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
  label_run(Taxonomy::builtin(), run, 1);
  AnalysisOptions o;
  o.threads = 1;
  const RunAnalysis ra = analyze_run(run, o);
  const RankAnalysis& r = ra.ranks.at(0);
  Ns got[6] = {0, 0, 0, 0, 0, 0};
  for (const auto& [it, comp] : r.components) {
    Ns sum = 0;
    for (const auto& [k, v] : comp) sum += v;
    Ns window = -1;
    for (const BreakdownRow& b : r.breakdown)
      if (b.iteration == it) window = b.total_ns;
    EXPECT_EQ(sum, window) << "iteration " << it;
    for (size_t k = 0; k < 6; ++k) {
      auto f = comp.find(kCauses[k]);
      if (f != comp.end()) got[k] += f->second;
    }
  }
  for (const IdleCauseRow& x : r.idle_causes)
    EXPECT_EQ(x.idle_ns, r.components.at(x.iteration).at(x.cause)) << x.iteration << x.cause;
  std::printf("[ idle ] {\"%s\", {%lld, %lld, %lld, %lld, %lld, %lld}},\n", c.file,
              static_cast<long long>(got[0]), static_cast<long long>(got[1]),
              static_cast<long long>(got[2]), static_cast<long long>(got[3]),
              static_cast<long long>(got[4]), static_cast<long long>(got[5]));
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(got[k], c.ns[k]) << kCauses[k];
}

INSTANTIATE_TEST_SUITE_P(Real, RealIdleCauses, ::testing::Range<size_t>(0, idle_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           std::string n = idle_cases()[i.param].file;
                           n = n.substr(0, n.find(".json"));
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// Every Kineto trace with GPU activity under ../shared/traces/kineto is pinned above.
TEST(RealIdleCauses, EveryTraceWithGpuActivityIsPinned) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  const std::string root = chopper::test::shared_path("traces/kineto");
  std::set<std::string> pinned;
  for (const IdleCase& c : idle_cases()) pinned.insert(c.file);
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), root).generic_string();
    if (rel.find(".json") == std::string::npos) continue;
    chopper::Run run = load_run({e.path().string()});
    if (run.ranks.size() != 1 || !run.ranks[0].ok || run.ranks[0].trace.gpu.size() == 0) continue;
    EXPECT_TRUE(pinned.count(rel)) << rel << " has GPU activity but no idle-cause case";
  }
}

// The advice follows the distribution of the gaps. AlexNet's trace (first, cold calls): one gap of
// 6,978 ms is 71% of its 9,798 ms host-late time and its 98 launch calls take 31.8 ms each, so
// neither finding may say "use graphs": one-off work and first-call work, profile after warm-up.
// The A100 DDP trace's host-late time is 1,520 gaps of median 0.156 ms, the largest 31 ms (7% of
// it): per-launch framework overhead, the graphs advice.
TEST(RealIdleCauses, AdviceFollowsTheGaps) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  auto findings = [](const char* file) {
    chopper::Run run = load_run({chopper::test::shared_path(std::string("traces/kineto/") + file)});
    label_run(Taxonomy::builtin(), run, 1);
    AnalysisOptions o;
    o.threads = 1;
    return decide_findings(analyze_run(run, o), o);
  };
  auto get = [](const Findings& f, FindingKind k) -> const Finding* {
    for (const Finding& x : f.all)
      if (x.kind == k) return &x;
    return nullptr;
  };
  const Findings cold = findings("hta_a100_alexnet_cuda_sync.json.gz");
  const Finding* late = get(cold, FindingKind::kHostLate);
  ASSERT_NE(late, nullptr);
  EXPECT_NE(finding_advice(*late).find("one-off host work"), std::string_view::npos)
      << finding_advice(*late);
  EXPECT_NE(finding_advice(*late).find("71.2%"), std::string_view::npos);
  const Finding* launch = get(cold, FindingKind::kLaunchOverhead);
  ASSERT_NE(launch, nullptr);
  EXPECT_NE(finding_advice(*launch).find("31.772 ms each are not launch latency"),
            std::string_view::npos)
      << finding_advice(*launch);
  const Findings warm = findings("hta_a100_ddp_nccl_rank0.json.gz");
  const Finding* framework = get(warm, FindingKind::kHostLate);
  ASSERT_NE(framework, nullptr);
  EXPECT_TRUE(framework->suggestion.empty());
  EXPECT_EQ(finding_advice(*framework), finding_suggestion(FindingKind::kHostLate));
}

}  // namespace
