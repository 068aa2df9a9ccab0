// Real traces and the device table: the V100 traces find their device from deviceProperties, and
// the one with recorded shapes gets a waterfall with theoretical times; a trace whose FLOPs are
// known for a minority of its compute time gets no MFU.
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

RunAnalysis analyze_real(const std::string& file) {
  chopper::Run run = load_run({test::shared_path("traces/kineto/" + file)});
  EXPECT_EQ(run.ranks.size(), 1u);
  label_run(Taxonomy::builtin(), run, 1);
  AnalysisOptions o;
  o.threads = 1;
  return analyze_run(run, o);
}

}  // namespace

TEST(RealDevices, V100TracesGetAWaterfall) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace device test skipped";
  for (const char* f :
       {"hta_v100_float_epoch_ts.json.gz", "kineto_v100_resnet50_2021_legacy.json.gz"}) {
    SCOPED_TRACE(f);
    const RunAnalysis ra = analyze_real(f);
    ASSERT_NE(ra.device, nullptr);
    EXPECT_EQ(ra.device->name, "v100");
    // Every kernel whose op's FLOPs or bytes are known has a theoretical time now (before, the
    // V100 was unknown and every row's parts were 0).
    double theoretical = 0, observed = 0;
    uint64_t kernels = 0, unknown = 0;
    for (const WaterfallRow& w : ra.waterfall)
      if (w.key.phase == Phase::kNone && w.key.operation.empty()) {
        theoretical += w.theoretical_ns, observed += static_cast<double>(w.observed_ns);
        kernels += w.kernels, unknown += w.unknown_theoretical;
      }
    std::printf("%s: %llu kernels, %llu without a theoretical time; theoretical %.3f of %.3f ms\n",
                f, static_cast<unsigned long long>(kernels),
                static_cast<unsigned long long>(unknown), theoretical / 1e6, observed / 1e6);
    EXPECT_GT(kernels, 0u);
    if (std::string(f).rfind("hta_", 0) == 0) {
      // This trace was recorded without record_shapes (no "Input Dims"): no op's FLOPs or bytes
      // can be known, so every kernel is counted unknown rather than guessed.
      EXPECT_EQ(unknown, kernels);
      continue;
    }
    // ResNet-50: 6,000 of its 8,136 kernels have shapes (convolutions, batch norms, ...).
    EXPECT_LT(unknown, kernels);
    EXPECT_GT(theoretical, 0);
    EXPECT_LT(theoretical, observed);
  }
}

TEST(RealDevices, MfuOnlyWithEnoughFlopCoverage) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace device test skipped";
  // Two ranks of a 128-rank job (HTA's sampled trace), read as A100s: the ops with recorded
  // shapes cover 35% of the compute operations' kernel time (34.7% and 35.3% per iteration), so
  // an MFU would describe a minority of the work: none is given. Iteration 551's windows differ
  // by 0.1% (607.361 vs 607.954 ms): no slowest rank is named; in 552 rank 1 is 1.5% slower than
  // rank 0 (the other rank's σ is 0, so 1% decides) and is named.
  {
    chopper::Run run = load_run({test::shared_path("traces/kineto/hta_sampled_2rank")});
    label_run(Taxonomy::builtin(), run, 1);
    AnalysisOptions o;
    o.threads = 1;
    o.device = "a100";
    const RunAnalysis ra = analyze_run(run, o);
    ASSERT_EQ(ra.iterations.size(), 2u);
    for (const IterationRow& it : ra.iterations) {
      EXPECT_GT(it.flops, 0);
      EXPECT_NEAR(it.flops_coverage, 0.35, 0.01);
      EXPECT_LT(it.mfu, 0) << "iteration " << it.iteration;
    }
    EXPECT_FALSE(ra.iterations[0].slowest_significant);
    EXPECT_EQ(ra.iterations[0].slowest_rank, 0);
    EXPECT_TRUE(ra.iterations[1].slowest_significant);
    EXPECT_EQ(ra.iterations[1].slowest_rank, 1);
  }
  // TraceLens's Qwen 0.5B on an H100: shapes for 75% of the compute time: MFU given.
  const RunAnalysis ra = analyze_real("tracelens_h100_qwen0.5b.json.gz");
  ASSERT_FALSE(ra.iterations.empty());
  for (const IterationRow& it : ra.iterations) {
    EXPECT_GT(it.flops_coverage, 0.5);
    EXPECT_GT(it.mfu, 0);
  }
}

// A GPU-only trace (TraceLens' MI210 sample: kernels and ProfilerStep, no CPU operation): its 562
// kernels belong to no operation. Their waterfall rows are per class under the operation
// "(unlabelled)", so the rows with no operation are exactly the phase's and the iteration's, one
// each per (rank, iteration, phase) (before, four class rows read as four more forward rows), and
// the class rows add up to the phase row.
TEST(RealDevices, WaterfallRowsOfUnlabelledKernelsApart) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace device test skipped";
  const RunAnalysis ra = analyze_real("tracelens_mi210_gpu_only.json.gz");
  std::map<std::pair<int64_t, Phase>, int> group_rows;
  std::map<std::pair<int64_t, Phase>, Ns> op_sum, group_ns;
  for (const WaterfallRow& w : ra.waterfall) {
    const auto k = std::pair(w.key.iteration, w.key.phase);
    if (w.key.operation.empty()) {
      ++group_rows[k];
      group_ns[k] = w.observed_ns;
    } else {
      EXPECT_EQ(w.key.operation, kUnlabelledOperation);
      op_sum[k] += w.observed_ns;
    }
  }
  ASSERT_FALSE(group_rows.empty());
  for (const auto& [k, n] : group_rows) EXPECT_EQ(n, 1) << "iteration " << k.first;
  for (const auto& [k, ns] : op_sum) EXPECT_EQ(ns, group_ns[k]) << "iteration " << k.first;
}
