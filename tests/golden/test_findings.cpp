// Golden tests for the findings (analysis/findings.hpp): on synthetic runs with one effect
// injected, the finding of that effect is significant, names its cause (and rank) and costs what
// truth.json says, within 2 points of the iteration, while a healthy run has no straggler and no
// stall. Cost = mean over iterations of the slowest rank's time; truth is averaged the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct Result {
  std::vector<TruthRank> truth;
  RunAnalysis ra;
  Findings f;
};

Result run(const std::string& name, const SynthConfig& c) {
  const fs::path dir = temp_dir("findings_" + name);
  synthesize(c, dir.string());
  Run r = load_run({dir.string()});
  label_run(Taxonomy::builtin(), r, 2);
  Result out;
  out.truth = read_truth(dir);
  AnalysisOptions o;
  o.threads = 2;
  out.ra = analyze_run(r, o);
  out.f = decide_findings(out.ra, o);
  fs::remove_all(dir);
  return out;
}

SynthConfig eight(const char* device, Parallelism par) {
  SynthConfig c = small(device, par);
  c.ranks = 8;
  c.gpus_per_node = 8;
  c.layers = 4;
  c.iterations = 3;
  return c;
}

const Finding* find(const Findings& f, FindingKind k) {
  for (const Finding& x : f.all)
    if (x.kind == k) return &x;
  return nullptr;
}

bool significant(const Findings& f, FindingKind k) {
  const Finding* x = find(f, k);
  return x != nullptr && x->significant;
}

// Truth's mean over iterations of one effect of the slowest rank (host_stall_ns, ...).
double truth_mean(const Result& r, int64_t TruthKernel::*effect) {
  double sum = 0;
  for (const IterationRow& it : r.ra.iterations)
    for (const TruthKernel& k : r.truth.at(static_cast<size_t>(it.slowest_rank)).kernels)
      if (k.iteration == it.iteration) sum += static_cast<double>(k.*effect);
  return sum / static_cast<double>(r.ra.iterations.size());
}
double truth_stall(const Result& r) {
  return truth_mean(r, &TruthKernel::host_stall_ns);
}
// Truth's host late of the slowest rank's kernels in (optimizer) or outside the optimizer phase:
// chopper's host_optimizer and host_late (the optimizer's launches are inside its
// Optimizer.step# / Optimizer.zero_grad# annotations).
double truth_late(const Result& r, bool optimizer) {
  double sum = 0;
  for (const IterationRow& it : r.ra.iterations)
    for (const TruthKernel& k : r.truth.at(static_cast<size_t>(it.slowest_rank)).kernels)
      if (k.iteration == it.iteration && (k.phase == "optimizer") == optimizer)
        sum += static_cast<double>(k.host_late_ns);
  return sum / static_cast<double>(r.ra.iterations.size());
}

double mean_iteration(const Result& r) {
  return r.f.iteration_ns;
}

}  // namespace

TEST(FindingsGolden, HealthyRunHasNoStragglerAndNoStall) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"mi300x", Parallelism::kFsdp},
        std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig c = eight(dev, par);
    ASSERT_TRUE(apply_scenario("healthy", c));
    const Result r = run(std::string("healthy_") + dev, c);
    ASSERT_EQ(r.f.iterations, 3u);
    EXPECT_EQ(find(r.f, FindingKind::kStraggler), nullptr);
    EXPECT_FALSE(significant(r.f, FindingKind::kHostStall));
    EXPECT_FALSE(significant(r.f, FindingKind::kDataLoading));
    EXPECT_FALSE(significant(r.f, FindingKind::kHostSync));
    EXPECT_FALSE(significant(r.f, FindingKind::kIdle));
    // Sorted: significant first, each group by cost.
    for (size_t i = 1; i < r.f.all.size(); ++i) {
      const Finding &a = r.f.all[i - 1], &b = r.f.all[i];
      EXPECT_TRUE(a.significant > b.significant ||
                  (a.significant == b.significant && a.cost_ns >= b.cost_ns));
    }
  }
}

TEST(FindingsGolden, DataLoaderStallIsAFindingOfItsOwn) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig c = eight(dev, par);
    c.data_loader_stall_ns = 3000000;
    const Result r = run(std::string("stall_") + dev, c);
    // The generator's stall runs under PyTorch's enumerate(DataLoader)#... annotation: it is data
    // loading, named by that frame, with one gap of the stall's size per iteration; what is left
    // of the step start (the host's 2 µs around the annotation and its first op) is no finding.
    const Finding* f = find(r.f, FindingKind::kDataLoading);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->significant);
    EXPECT_EQ(f->material_iterations, 3u);
    EXPECT_NEAR(f->cost_ns, truth_stall(r), 0.02 * mean_iteration(r));
    EXPECT_EQ(f->evidence.rfind(
                  "host in enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ (100.0%); "
                  "3 gaps, median ",
                  0),
              0u)
        << f->evidence;
    EXPECT_FALSE(significant(r.f, FindingKind::kHostStall));
    EXPECT_EQ(find(r.f, FindingKind::kStraggler), nullptr);
    std::printf("%s stall: finding %.3f ms, truth %.3f ms\n", dev, f->cost_ns / 1e6,
                truth_stall(r) / 1e6);
  }
}

TEST(FindingsGolden, StragglerIsNamedWithItsCost) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"mi300x", Parallelism::kFsdp},
        std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig c = eight(dev, par);
    ASSERT_TRUE(apply_scenario("straggler", c));
    const Result r = run(std::string("straggler_") + dev, c);
    const Finding* f = find(r.f, FindingKind::kStraggler);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->significant);
    EXPECT_EQ(f->rank, c.straggler_rank);
    // Truth: the step time the straggler adds, averaged over iterations (the same on every rank:
    // the ranks end their steps together).
    double want = 0;
    for (const IterationRow& it : r.ra.iterations)
      want += static_cast<double>(r.truth.at(0).straggler_cost_ns.at(it.iteration));
    want /= static_cast<double>(r.ra.iterations.size());
    EXPECT_NEAR(f->cost_ns, want, 0.02 * mean_iteration(r));
    EXPECT_FALSE(significant(r.f, FindingKind::kHostStall));
    // Every rank's components (rank_components) carry the same split as the slowest rank's:
    // where the straggler is significant, each other rank's waiting for it is straggler_wait,
    // not exposed communication, and the parts still add up to the rank's window.
    size_t split = 0;
    for (const RankAnalysis& ra : r.ra.ranks)
      for (const auto& [it, comp] : ra.components) {
        Ns sum = 0;
        for (const auto& [k, v] : comp) sum += v;
        Ns window = -1;
        for (const BreakdownRow& b : ra.breakdown)
          if (b.iteration == it) window = b.total_ns;
        EXPECT_EQ(sum, window);
        for (const StragglerRow& w : r.ra.stragglers)
          if (w.rank == ra.rank && w.iteration == it && w.straggler_wait_ns > 0 &&
              ra.rank != c.straggler_rank) {
            auto sw = comp.find("straggler_wait");
            ASSERT_NE(sw, comp.end()) << "rank " << ra.rank << " iteration " << it;
            EXPECT_GT(sw->second, 0);
            ++split;
          }
      }
    EXPECT_GT(split, 0u);
    std::printf("%s straggler: rank %lld, finding %.3f ms, truth %.3f ms\n", dev,
                static_cast<long long>(f->rank), f->cost_ns / 1e6, want / 1e6);
  }
}

// A launch-bound run (short kernels behind a slow host): the host late between kernels is the
// largest significant finding, launch latency its own finding, each at truth's cost (host_late_ns,
// launch_overhead_ns of the slowest rank) within 2 points of the iteration.
TEST(FindingsGolden, LaunchBoundHostLateAndLaunchLatency) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig c = eight(dev, par);
    ASSERT_TRUE(apply_scenario("launch-bound", c));
    const Result r = run(std::string("launch_") + dev, c);
    ASSERT_FALSE(r.f.all.empty());
    EXPECT_EQ(r.f.all.front().kind, FindingKind::kHostLate);
    const Finding* late = find(r.f, FindingKind::kHostLate);
    const Finding* call = find(r.f, FindingKind::kLaunchOverhead);
    ASSERT_NE(late, nullptr);
    ASSERT_NE(call, nullptr);
    EXPECT_TRUE(late->significant);
    const double want_late = truth_late(r, false);
    const double want_call = truth_mean(r, &TruthKernel::launch_overhead_ns);
    EXPECT_NEAR(late->cost_ns, want_late, 0.02 * mean_iteration(r));
    EXPECT_NEAR(call->cost_ns, want_call, 0.02 * mean_iteration(r));
    // The optimizer's launches, inside Optimizer.step# / zero_grad#: host_optimizer (none here:
    // the optimizer waits for the gradients' collectives, which hide the host's time).
    const Finding* opt = find(r.f, FindingKind::kHostOptimizer);
    EXPECT_NEAR(opt != nullptr ? opt->cost_ns : 0.0, truth_late(r, true), 0.02 * mean_iteration(r));
    std::printf(
        "%s launch-bound: host late %.3f ms (truth %.3f), launch latency %.3f ms (truth "
        "%.3f) of %.3f ms\n",
        dev, late->cost_ns / 1e6, want_late / 1e6, call->cost_ns / 1e6, want_call / 1e6,
        mean_iteration(r) / 1e6);
  }
}

// The demo's straggler: every effect at once (DVFS to 85% of the max clock, matrix-unit loss,
// comm interference, a data-loader stall, noise) and rank 7 capped at 80%, under the DVFS floor,
// so it binds in every iteration. The straggler finding names rank 7 at truth's cost (the step
// time the straggler adds, averaged over the iterations) within 2 points of the iteration.
TEST(FindingsGolden, DemoStragglerIsNamedWithItsCost) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"mi300x", Parallelism::kFsdp},
        std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig c = eight(dev, par);
    ASSERT_TRUE(apply_scenario("demo", c));
    const Result r = run(std::string("demo_") + dev, c);
    const Finding* f = find(r.f, FindingKind::kStraggler);
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->significant);
    EXPECT_EQ(f->rank, c.straggler_rank);
    double want = 0;
    for (const IterationRow& it : r.ra.iterations)
      want += static_cast<double>(r.truth.at(0).straggler_cost_ns.at(it.iteration));
    want /= static_cast<double>(r.ra.iterations.size());
    EXPECT_GT(want, 0.01 * mean_iteration(r));  // it matters: over 1% of the step
    EXPECT_NEAR(f->cost_ns, want, 0.02 * mean_iteration(r));
    std::printf("%s demo straggler: rank %lld, finding %.3f ms, truth %.3f ms of %.3f ms\n", dev,
                static_cast<long long>(f->rank), f->cost_ns / 1e6, want / 1e6,
                mean_iteration(r) / 1e6);
  }
}

// The demo (every effect at once, 2% noise) with its telemetry: the compute-loss finding
// ("kernels below achievable") is the injected matrix-unit loss — truth.json's mfu_loss_ns of the
// shown rank's kernels, mean over iterations — within 2 points of the iteration, not the gap to
// the datasheet peak (the waterfall's utilization, which includes the 75% matrix efficiency no
// kernel library beats). The reference is the roofline at the achievable efficiency: every GEMM
// of a shape runs equally slow, so the best of its class is no better.
TEST(FindingsGolden, ComputeLossIsTheInjectedLossNotTheDatasheetGap) {
  SynthConfig c = eight("h100", Parallelism::kFsdp);
  ASSERT_TRUE(apply_scenario("demo", c));
  c.telemetry_interval_ms = 2;
  const fs::path dir = temp_dir("findings_compute_loss");
  synthesize(c, dir.string());
  chopper::Run trace = load_run({dir.string()});
  label_run(Taxonomy::builtin(), trace, 2);
  Result r;
  r.truth = read_truth(dir);
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 2);
  ASSERT_TRUE(hf.errors.empty());
  const HardwareRun hw = align_hardware(trace, std::move(hf.telemetry), std::move(hf.counters));
  AnalysisOptions o;
  o.threads = 2;
  r.ra = analyze_run(trace, o, &hw);
  r.f = decide_findings(r.ra, o);
  fs::remove_all(dir);
  const Finding* f = find(r.f, FindingKind::kUtilization);
  ASSERT_NE(f, nullptr);
  const double want = truth_mean(r, &TruthKernel::mfu_ns);
  double datasheet = 0;
  for (const IterationRow& it : r.ra.iterations)
    for (const WaterfallRow& w : r.ra.waterfall)
      if (w.rank == it.slowest_rank && w.key.iteration == it.iteration &&
          w.key.phase == Phase::kNone && w.key.operation.empty())
        datasheet += w.utilization_ns;
  datasheet /= static_cast<double>(r.ra.iterations.size());
  std::printf(
      "compute loss: finding %.3f ms, truth mfu_loss %.3f ms, datasheet gap %.3f ms, "
      "iteration %.3f ms\n",
      f->cost_ns / 1e6, want / 1e6, datasheet / 1e6, mean_iteration(r) / 1e6);
  EXPECT_GT(want, 0);
  EXPECT_NEAR(f->cost_ns, want, 0.02 * mean_iteration(r));
  EXPECT_GT(datasheet - f->cost_ns, 0.05 * mean_iteration(r));  // the gap is context, not the loss
  EXPECT_NE(f->evidence.find("datasheet peak"), std::string::npos);
  ASSERT_FALSE(r.ra.shape_classes.empty());
  EXPECT_EQ(r.ra.shape_classes.front().family.rfind("gemm", 0) == 0 ||
                r.ra.shape_classes.front().family.rfind("attention", 0) == 0,
            true)
      << r.ra.shape_classes.front().shape_class;
}

// Three iterations on eight ranks: the findings test against the iterations; one iteration: the
// eight ranks are the samples; one iteration of one rank: no variance, no confidence.
TEST(FindingsGolden, FewIterationsAndOneIteration) {
  SynthConfig c = eight("h100", Parallelism::kFsdp);
  c.data_loader_stall_ns = 3000000;
  c.iterations = 1;
  const Result r = run("one_iteration_8", c);
  // The stall is under the generator's enumerate(DataLoader) annotation: data loading.
  const Finding* f = find(r.f, FindingKind::kDataLoading);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->samples, 8u);
  EXPECT_FALSE(std::isnan(f->confidence));
  EXPECT_TRUE(f->significant);
  c.ranks = 1;
  c.gpus_per_node = 1;
  const Result one = run("one_iteration_1", c);
  for (const Finding& x : one.f.all) {
    SCOPED_TRACE(finding_key(x.kind));
    EXPECT_EQ(x.samples, 1u);
    EXPECT_TRUE(std::isnan(x.confidence));
    EXPECT_EQ(x.significant, x.cost_ns > x.threshold_ns);
  }
}

// Noise alone (5% of every kernel's duration, a seeded N(0, 1) per rank, op and iteration): no
// rank is slow, yet the ranks wait at the collectives for whichever is slowest. The finding
// "ranks waiting on each other's variation" carries what that costs: the mean over the
// iterations without a significant straggler of the median rank's exposed communication over the
// least (StragglerCost.cost_ns, computed here again from the iterations), and it is within 2
// points of truth's noise_cost_ns (the step time the noise adds, from the same job run without
// it), averaged over the ranks. The noise is not a compute loss: the kernels below achievable are
// measured against their class's median instance, so the noise cancels (under 0.5% of the step;
// against the class's best instances it read 4.2%). Without noise there is no variation cost.
TEST(FindingsGolden, NoiseIsRankVariationNotComputeLoss) {
  SynthConfig c = eight("h100", Parallelism::kFsdp);
  c.noise = 0.05;
  const Result r = run("noise_h100", c);
  const Finding* f = find(r.f, FindingKind::kRankVariation);
  ASSERT_NE(f, nullptr);
  double want = 0, truth = 0;
  for (const IterationRow& it : r.ra.iterations) {
    if (!it.straggler.significant) want += static_cast<double>(it.straggler.cost_ns);
    for (const TruthRank& tr : r.truth)
      truth += static_cast<double>(tr.noise_cost_ns.at(it.iteration)) / c.ranks;
  }
  want /= static_cast<double>(r.ra.iterations.size());
  truth /= static_cast<double>(r.ra.iterations.size());
  std::printf("rank variation: finding %.3f ms, truth noise cost %.3f ms, iteration %.3f ms\n",
              f->cost_ns / 1e6, truth / 1e6, mean_iteration(r) / 1e6);
  EXPECT_DOUBLE_EQ(f->cost_ns, want);
  EXPECT_GT(truth, 0.005 * mean_iteration(r));
  EXPECT_NEAR(f->cost_ns, truth, 0.02 * mean_iteration(r));
  EXPECT_NE(f->evidence.find("no rank is significantly slower"), std::string::npos);
  double below = 0;
  for (const ShapeClassRow& s : r.ra.shape_classes) below += s.below_achievable_ns;
  EXPECT_LT(below / static_cast<double>(r.ra.iterations.size() * c.ranks),
            0.005 * mean_iteration(r));

  SynthConfig h = eight("h100", Parallelism::kFsdp);
  const Result healthy = run("noise_none_h100", h);
  const Finding* g = find(healthy.f, FindingKind::kRankVariation);
  if (g != nullptr) {
    EXPECT_FALSE(g->significant);
    EXPECT_LT(g->cost_ns, 1e-4 * mean_iteration(healthy));
  }
}
