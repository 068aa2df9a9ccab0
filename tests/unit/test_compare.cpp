// Run-to-run comparison on small hand-built profiles (analysis/compare.hpp): operations matched by
// phase, layer and label, kernels by name, each added / removed / slower / faster / same with the
// noise thresholds; components sorted by |difference| in points of the baseline's iteration;
// findings that appeared, disappeared, grew.
#include <gtest/gtest.h>

#include <cmath>

#include "chopper/analysis/compare.hpp"
#include "chopper/base/size_text.hpp"
#include "chopper/report/compare_report.hpp"

using namespace chopper;

namespace {

CompareRun run(const char* label, double iteration_ns) {
  CompareRun r;
  r.label = label;
  r.iteration_ns = iteration_ns;
  r.iterations = 3;
  r.ranks = 2;
  return r;
}

const OperationDiff* op(const PairComparison& p, Phase ph, int32_t layer, const char* name) {
  for (const OperationDiff& d : p.operations)
    if (d.key == OperationKey{ph, layer, name}) return &d;
  return nullptr;
}

}  // namespace

TEST(Compare, ClassifyChangeThresholds) {
  // Iteration 100 ms: the absolute floor is 0.1 ms; the relative one 5% of A.
  const double it = 100e6;
  EXPECT_EQ(classify_change(10e6, 10.4e6, it), ChangeStatus::kSame);    // +4%
  EXPECT_EQ(classify_change(10e6, 10.6e6, it), ChangeStatus::kSlower);  // +6%, 0.6 ms
  EXPECT_EQ(classify_change(10e6, 9.4e6, it), ChangeStatus::kFaster);
  EXPECT_EQ(classify_change(1e6, 1.5e6, it), ChangeStatus::kSlower);   // +50%, 0.5 ms
  EXPECT_EQ(classify_change(0.05e6, 0.1e6, it), ChangeStatus::kSame);  // +100% but 0.05 ms
  EXPECT_EQ(classify_change(0, 1, it), ChangeStatus::kAdded);
  EXPECT_EQ(classify_change(1, 0, it), ChangeStatus::kRemoved);
}

TEST(Compare, OperationsMatchedByPhaseLayerAndLabel) {
  CompareRun a = run("a", 100e6), b = run("b", 110e6);
  // Same label, different layers and phases: four different operations.
  a.operations[{Phase::kForward, 0, "qkv"}] = {"gemm", 10e6, 4};
  a.operations[{Phase::kForward, 1, "qkv"}] = {"gemm", 10e6, 4};
  a.operations[{Phase::kBackward, 0, "qkv"}] = {"gemm", 20e6, 8};
  a.operations[{Phase::kOptimizer, -1, "adam"}] = {"optimizer", 5e6, 1};
  b.operations[{Phase::kForward, 0, "qkv"}] = {"gemm", 12e6, 4};     // +2 ms: slower
  b.operations[{Phase::kForward, 1, "qkv"}] = {"gemm", 10.2e6, 4};   // +2%: same
  b.operations[{Phase::kBackward, 0, "qkv"}] = {"gemm", 15e6, 8};    // −5 ms: faster
  b.operations[{Phase::kOther, -1, "loader"}] = {"memcpy", 3e6, 2};  // added
  // adam: removed
  const PairComparison p = compare_pair(a, b);
  ASSERT_EQ(p.operations.size(), 5u);
  const OperationDiff* f0 = op(p, Phase::kForward, 0, "qkv");
  ASSERT_NE(f0, nullptr);
  EXPECT_EQ(f0->status, ChangeStatus::kSlower);
  EXPECT_DOUBLE_EQ(f0->diff_ns, 2e6);
  EXPECT_DOUBLE_EQ(f0->diff_points, 2.0);  // 2 ms of 100 ms
  EXPECT_EQ(op(p, Phase::kForward, 1, "qkv")->status, ChangeStatus::kSame);
  const OperationDiff* b0 = op(p, Phase::kBackward, 0, "qkv");
  EXPECT_EQ(b0->status, ChangeStatus::kFaster);
  EXPECT_DOUBLE_EQ(b0->diff_points, -5.0);
  const OperationDiff* add = op(p, Phase::kOther, -1, "loader");
  EXPECT_EQ(add->status, ChangeStatus::kAdded);
  EXPECT_EQ(add->op_class, "memcpy");
  EXPECT_DOUBLE_EQ(add->a_ns, 0);
  EXPECT_DOUBLE_EQ(add->b_count, 2);
  const OperationDiff* rem = op(p, Phase::kOptimizer, -1, "adam");
  EXPECT_EQ(rem->status, ChangeStatus::kRemoved);
  EXPECT_DOUBLE_EQ(rem->diff_ns, -5e6);
  // Sorted by |diff|: the two 5 ms changes (backward qkv first: stable in key order), then the
  // 3 ms added, 2 ms, 0.2 ms.
  EXPECT_EQ(p.operations[0].key.phase, Phase::kBackward);
  EXPECT_EQ(p.operations[1].key.phase, Phase::kOptimizer);
  EXPECT_EQ(p.operations[2].key.operation, "loader");
  EXPECT_EQ(p.operations[4].key.layer, 1);
}

TEST(Compare, KernelsMatchedByName) {
  CompareRun a = run("a", 50e6), b = run("b", 50e6);
  a.kernels["sm90_gemm"] = {"compute", 20e6, 10};
  a.kernels["ncclAllGather"] = {"communication", 5e6, 2};
  b.kernels["sm90_gemm"] = {"compute", 20e6, 10};
  b.kernels["ncclAllGather"] = {"communication", 8e6, 2};
  b.kernels["flash_fwd"] = {"compute", 1e6, 2};
  const PairComparison p = compare_pair(a, b);
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].name, "ncclAllGather");
  EXPECT_EQ(p.kernels[0].status, ChangeStatus::kSlower);
  EXPECT_DOUBLE_EQ(p.kernels[0].diff_points, 6.0);  // 3 ms of 50 ms
  EXPECT_EQ(p.kernels[1].name, "flash_fwd");
  EXPECT_EQ(p.kernels[1].status, ChangeStatus::kAdded);
  EXPECT_EQ(p.kernels[2].status, ChangeStatus::kSame);
}

TEST(Compare, ComponentsSortedByDifferenceInPoints) {
  CompareRun a = run("a", 200e6), b = run("b", 212e6);
  a.components = {{"forward.gemm", 100e6}, {"exposed_comm", 20e6}, {"idle", 80e6}};
  b.components = {
      {"forward.gemm", 101e6}, {"exposed_comm", 32e6}, {"idle", 78e6}, {"host_stall", 1e6}};
  const PairComparison p = compare_pair(a, b);
  EXPECT_DOUBLE_EQ(p.iteration_diff_ns, 12e6);
  EXPECT_DOUBLE_EQ(p.iteration_diff_points, 6.0);
  ASSERT_EQ(p.components.size(), 4u);
  EXPECT_EQ(p.components[0].component, "exposed_comm");
  EXPECT_DOUBLE_EQ(p.components[0].diff_ns, 12e6);
  EXPECT_DOUBLE_EQ(p.components[0].diff_points, 6.0);
  EXPECT_EQ(p.components[1].component, "idle");
  EXPECT_DOUBLE_EQ(p.components[1].diff_points, -1.0);
  EXPECT_EQ(p.components[3].component, "host_stall");  // |1 ms| ties forward.gemm: key order
  EXPECT_DOUBLE_EQ(p.components[3].a_ns, 0);
}

TEST(Compare, CollectivesMatchedByTypeAndSize) {
  CompareRun a = run("a", 100e6), b = run("b", 100e6);
  a.collectives[{"all_gather", 1 << 20}] = {4, 1e6, 100};
  b.collectives[{"all_gather", 1 << 20}] = {4, 2e6, 50};
  b.collectives[{"all_reduce", 4096}] = {1, 0.5e6, 10};
  const PairComparison p = compare_pair(a, b);
  ASSERT_EQ(p.collectives.size(), 2u);
  EXPECT_EQ(p.collectives[0].type, "all_gather");
  EXPECT_DOUBLE_EQ(p.collectives[0].diff_ns, 4e6);  // 4 per iteration × 1 ms
  EXPECT_EQ(p.collectives[0].status, ChangeStatus::kSlower);
  EXPECT_EQ(p.collectives[1].status, ChangeStatus::kAdded);
}

TEST(Compare, FindingsAppearDisappearAndGrow) {
  CompareRun a = run("a", 100e6), b = run("b", 100e6);
  Finding stall;
  stall.kind = FindingKind::kHostStall;
  stall.significant = true;
  stall.cost_ns = 3e6;
  stall.stderr_ns = 0.1e6;
  b.findings.push_back(stall);  // appeared
  Finding comm;
  comm.kind = FindingKind::kExposedComm;
  comm.significant = true;
  comm.cost_ns = 10e6;
  comm.stderr_ns = 0.2e6;
  a.findings.push_back(comm);
  comm.cost_ns = 15e6;
  b.findings.push_back(comm);  // grew by 5 ms > 2 σ and 1 ms
  Finding idle;
  idle.kind = FindingKind::kIdle;
  idle.significant = true;
  idle.cost_ns = 2e6;
  a.findings.push_back(idle);  // disappeared (insignificant in b)
  idle.significant = false;
  idle.cost_ns = 0.5e6;
  b.findings.push_back(idle);
  const PairComparison p = compare_pair(a, b);
  ASSERT_EQ(p.findings.size(), 3u);
  EXPECT_EQ(p.findings[0].kind, FindingKind::kHostStall);
  EXPECT_EQ(p.findings[0].change, FindingChange::kAppeared);
  EXPECT_DOUBLE_EQ(p.findings[0].diff_points, 3.0);
  EXPECT_EQ(p.findings[1].kind, FindingKind::kIdle);
  EXPECT_EQ(p.findings[1].change, FindingChange::kDisappeared);
  EXPECT_EQ(p.findings[2].kind, FindingKind::kExposedComm);
  EXPECT_EQ(p.findings[2].change, FindingChange::kGrew);
}

TEST(Compare, SweepComparesEveryRunWithTheFirst) {
  const Comparison c = compare_runs({run("a", 100e6), run("b", 90e6), run("c", 80e6)});
  ASSERT_EQ(c.pairs.size(), 2u);
  EXPECT_EQ(c.pairs[0].a, 0u);
  EXPECT_EQ(c.pairs[0].b, 1u);
  EXPECT_EQ(c.pairs[1].b, 2u);
  EXPECT_DOUBLE_EQ(c.pairs[1].iteration_diff_points, -20.0);
}

// The summary names the largest difference first, in ms per iteration and points; identical runs
// have none.
TEST(Compare, SummaryNamesTheLargestDifference) {
  CompareRun a = run("a", 200e6), b = run("b", 212e6);
  a.components = {{"forward.gemm", 180e6}, {"exposed_comm", 20e6}};
  b.components = {{"forward.gemm", 180e6}, {"exposed_comm", 32e6}};
  const std::string s = compare_summary(compare_runs({a, b}));
  EXPECT_NE(s.find("1. exposed communication +12.000 ms per iteration (+6.0 points)"),
            std::string::npos)
      << s;
  const std::string same = compare_summary(compare_runs({a, a}));
  EXPECT_NE(same.find("none: no component differs"), std::string::npos) << same;
  EXPECT_EQ(same.find("1. "), std::string::npos) << same;
}

// compare's default: an operation summed over its layers, so that a change common to every
// layer shows once (qkv: 2 layers × 10 ms = 20 ms forward; backward stays apart).
TEST(Compare, OperationsSummedOverLayersByDefault) {
  CompareRun a = run("a", 100e6);
  a.operations[{Phase::kForward, 0, "qkv"}] = {"gemm", 10e6, 4};
  a.operations[{Phase::kForward, 1, "qkv"}] = {"gemm", 10e6, 4};
  a.operations[{Phase::kBackward, 0, "qkv"}] = {"gemm", 20e6, 8};
  merge_operation_layers(a);
  ASSERT_EQ(a.operations.size(), 2u);
  const CompareAmount& f = a.operations.at({Phase::kForward, -1, "qkv"});
  EXPECT_DOUBLE_EQ(f.ns, 20e6);
  EXPECT_DOUBLE_EQ(f.count, 8);
  EXPECT_EQ(f.group, "gemm");
  EXPECT_DOUBLE_EQ(a.operations.at({Phase::kBackward, -1, "qkv"}).ns, 20e6);
}

// Similarity = Σ min(share_A, share_B): a = {mm 75%, softmax 25%}, b = {mm 50%, conv 50%} share
// min(75, 50) = 50% (across layers); the same run shares 100%.
TEST(Compare, OperationSimilarityIsTheCommonShareOfGpuTime) {
  CompareRun a = run("a", 100e6), b = run("b", 100e6);
  a.operations[{Phase::kForward, 0, "aten::mm"}] = {"gemm", 30e6, 1};
  a.operations[{Phase::kForward, 1, "aten::mm"}] = {"gemm", 30e6, 1};
  a.operations[{Phase::kForward, 0, "aten::softmax"}] = {"softmax", 20e6, 1};
  b.operations[{Phase::kForward, 3, "aten::mm"}] = {"gemm", 10e6, 1};
  b.operations[{Phase::kForward, -1, "aten::conv2d"}] = {"conv", 10e6, 1};
  EXPECT_DOUBLE_EQ(operation_similarity(a, b), 0.5);
  EXPECT_DOUBLE_EQ(operation_similarity(a, a), 1.0);
  EXPECT_TRUE(std::isnan(operation_similarity(a, run("empty", 1))));
}

// Runs that differ in world size, device or workload are compared with a warning, printed before
// the comparison; runs alike get none.
TEST(Compare, WarnsWhenRunsDifferInWorldSizeDeviceOrWorkload) {
  CompareRun a = run("a", 100e6), b = run("b", 100e6);
  a.device = "NVIDIA H100";
  b.device = "AMD MI300X";
  b.ranks = 8;
  a.operations[{Phase::kForward, 0, "aten::mm"}] = {"gemm", 30e6, 1};
  b.operations[{Phase::kForward, 0, "aten::conv2d"}] = {"conv", 30e6, 1};
  const Comparison c = compare_runs({a, b});
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_NE(c.warnings[0].find("b has 8 ranks, a has 2"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[1].find("b ran on AMD MI300X, a on NVIDIA H100"), std::string::npos);
  EXPECT_NE(c.warnings[2].find("only 0% of their GPU time in the same operations"),
            std::string::npos)
      << c.warnings[2];
  const std::string s = compare_summary(c);
  EXPECT_EQ(s.find("warning: b has 8 ranks"), s.find('\n') + 1) << s;  // right after the header
  EXPECT_TRUE(compare_runs({a, a}).warnings.empty());
}

// The terminal: findings that appeared come first in a sweep too (they were printed only for two
// runs, after the kernels); a message size in MiB, not 436224000 B; kernel names cut to fit keep
// where they differ (cut at 60 characters, these two read the same).
TEST(Compare, SummaryPrintsFindingsFirstSizesInMibAndKernelsApart) {
  CompareRun a = run("a", 100e6), b = run("b", 100e6), c = run("c", 100e6);
  Finding dvfs;
  dvfs.kind = FindingKind::kFrequency;
  dvfs.significant = true;
  dvfs.cost_ns = 21e6;
  dvfs.stderr_ns = 0.1e6;
  c.findings.push_back(dvfs);
  c.components = {{"forward.gemm", 16e6}};
  const std::string sweep = compare_summary(compare_runs({a, b, c}));
  const size_t at = sweep.find("c against a");
  ASSERT_NE(at, std::string::npos) << sweep;
  const size_t appeared = sweep.find("appeared    clock throttling (DVFS)", at);
  EXPECT_NE(appeared, std::string::npos) << sweep;
  EXPECT_LT(appeared, sweep.find("largest differences", at)) << sweep;

  const std::string prefix =
      "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<";
  a.kernels[prefix + "AddFunctor<float>>"] = {"elementwise", 10e6, 1};
  b.kernels[prefix + "MulFunctor<float>>"] = {"elementwise", 10e6, 1};
  a.collectives[{"all_gather", 436224000}] = {1, 1e6, 100};
  b.collectives[{"all_gather", 436224000}] = {1, 3e6, 50};
  const std::string two = compare_summary(compare_runs({a, b}));
  EXPECT_NE(two.find("all_gather 416 MiB"), std::string::npos) << two;
  // Each cut name keeps its start and, after "…", a little before where the two differ on.
  EXPECT_NE(two.find("void at::native::ele…el_impl<AddFunctor<float>>"), std::string::npos) << two;
  EXPECT_NE(two.find("void at::native::ele…el_impl<MulFunctor<float>>"), std::string::npos) << two;
}

TEST(Compare, SizeTextUsesBinaryUnits) {
  EXPECT_EQ(size_text(512), "512 B");
  EXPECT_EQ(size_text(436224000), "416 MiB");
  EXPECT_EQ(size_text(1610612736), "1.50 GiB");
  EXPECT_EQ(size_text(20 * 1024 + 512), "20.5 KiB");
}
