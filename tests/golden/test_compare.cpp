// Golden tests for run-to-run comparison (analysis/compare.hpp): two synthetic runs with the same
// seed that differ by one known effect; the comparison's largest component difference is that
// effect's component, and its size is truth.json's difference (mean over iterations of the
// slowest rank's effect, B − A) within 2 points of the baseline's iteration time. And a 3-run
// sequence-length sweep: one sweep row per run, tokens/s = tokens per step / iteration time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chopper/analysis/compare.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/compare_report.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

// Which truth a case measures: a per-kernel effect of the slowest rank, or the straggler's cost.
enum class Truth { kHostStall, kHostLate, kExposedComm, kStragglerCost };

struct Profiled {
  CompareRun run;
  double truth_ns = 0;  // mean over iterations of the effect on the slowest rank
};

double truth_of(const std::vector<TruthRank>& truth, const RunAnalysis& ra, Truth what) {
  if (ra.iterations.empty()) return 0;
  double sum = 0;
  for (const IterationRow& it : ra.iterations) {
    if (what == Truth::kStragglerCost) {
      auto c = truth.at(0).straggler_cost_ns.find(it.iteration);
      if (c != truth.at(0).straggler_cost_ns.end()) sum += static_cast<double>(c->second);
      continue;
    }
    for (const TruthKernel& k : truth.at(static_cast<size_t>(it.slowest_rank)).kernels) {
      if (k.iteration != it.iteration) continue;
      // The optimizer's host late is chopper's host_optimizer (its launches are inside
      // Optimizer.step# / Optimizer.zero_grad# annotations), not host_late.
      if (what == Truth::kHostLate && k.phase == "optimizer") continue;
      sum += static_cast<double>(what == Truth::kHostStall  ? k.host_stall_ns
                                 : what == Truth::kHostLate ? k.host_late_ns
                                                            : k.exposed_comm_ns);
    }
  }
  return sum / static_cast<double>(ra.iterations.size());
}

Profiled profile(const std::string& name, const SynthConfig& c, Truth what,
                 int64_t tokens_per_step = 0) {
  const fs::path dir = temp_dir("compare_" + name);
  synthesize(c, dir.string());
  Run r = load_run({dir.string()});
  label_run(Taxonomy::builtin(), r, 2);
  AnalysisOptions o;
  o.threads = 2;
  o.tokens_per_step = tokens_per_step;
  const RunAnalysis ra = analyze_run(r, o);
  const Findings f = decide_findings(ra, o);
  Profiled p;
  p.run = profile_run(r, ra, f, o, name, dir.string());
  p.truth_ns = truth_of(read_truth(dir), ra, what);
  fs::remove_all(dir);
  return p;
}

SynthConfig base(const char* device, Parallelism par) {
  SynthConfig c = small(device, par);
  c.iterations = 3;
  c.telemetry = false;
  c.counters = false;
  return c;
}

// Compares A and B; expects `component` to be the largest difference, at truth's size (with the
// differences of the components in `with` added: parts of the same truth chopper names apart).
void expect_effect(const std::string& name, const SynthConfig& a, const SynthConfig& b, Truth what,
                   const char* component, std::vector<std::string> with = {}) {
  const Profiled pa = profile(name + "_a", a, what), pb = profile(name + "_b", b, what);
  const Comparison c = compare_runs({pa.run, pb.run});
  ASSERT_EQ(c.pairs.size(), 1u);
  const PairComparison& p = c.pairs[0];
  ASSERT_FALSE(p.components.empty());
  const ComponentDiff& top = p.components.front();
  const double want = pb.truth_ns - pa.truth_ns;
  const double it = pa.run.iteration_ns;
  double got = top.diff_ns;
  for (const ComponentDiff& d : p.components)
    if (std::find(with.begin(), with.end(), d.component) != with.end()) got += d.diff_ns;
  std::printf(
      "%s: largest %s %+.3f ms (%+.2f points), with %zu more %+.3f ms, truth %+.3f ms (%+.2f "
      "points); error %.2f points; iteration %.3f -> %.3f ms; second %s %+.2f points\n",
      name.c_str(), top.component.c_str(), top.diff_ns / 1e6, top.diff_points, with.size(),
      got / 1e6, want / 1e6, 100 * want / it, 100 * std::abs(got - want) / it, it / 1e6,
      pb.run.iteration_ns / 1e6, p.components.size() > 1 ? p.components[1].component.c_str() : "",
      p.components.size() > 1 ? p.components[1].diff_points : 0.0);
  EXPECT_EQ(top.component, component);
  EXPECT_NEAR(got, want, 0.02 * it);
  // The summary names it first.
  const std::string s = compare_summary(c);
  EXPECT_NE(s.find("1. " + component_title(component)), std::string::npos) << s;
}

}  // namespace

TEST(CompareGolden, DataLoaderStallIsTheLargestDifference) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    const SynthConfig a = base(dev, par);
    SynthConfig b = a;
    b.data_loader_stall_ns = 3000000;
    // The generator's stall runs under a enumerate(DataLoader)#... annotation: data loading.
    expect_effect(std::string("stall_") + dev, a, b, Truth::kHostStall, "data_loading");
  }
}

// Launch-bound: a slow host (410 µs per op) behind the same kernels. On one node of 8 GPUs, where
// NVLink keeps the collectives shorter than the host's work (synth.cpp, "launch-bound"); across
// the two nodes of small() the host hides behind inter-node communication.
TEST(CompareGolden, LaunchBoundHostIsTheLargestDifference) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    SynthConfig b = base(dev, par);
    b.ranks = 8;
    b.gpus_per_node = 8;
    ASSERT_TRUE(apply_scenario("launch-bound", b));
    SynthConfig a = b;
    a.host_op_ns = SynthConfig{}.host_op_ns;  // the healthy host, same kernels
    a.launch_ns = SynthConfig{}.launch_ns;
    // Truth's host late includes the gap after each step's loss.item() (the generator's DtoH copy
    // and stream sync at the step's end): the GPU drained while the host waited, so chopper names
    // the host's time from there to its next launch host_sync.
    expect_effect(std::string("launch_") + dev, a, b, Truth::kHostLate, "host_late", {"host_sync"});
  }
}

// FSDP without prefetching: each layer's all-gather waits in front of its compute.
TEST(CompareGolden, NoPrefetchExposesCommunication) {
  SynthConfig a = base("h100", Parallelism::kFsdp);
  SynthConfig b = a;
  b.prefetch = false;
  expect_effect("no_prefetch_h100", a, b, Truth::kExposedComm, "exposed_comm");
  // The exposed-comm scenario: no prefetch and collectives 3 times slower.
  ASSERT_TRUE(apply_scenario("exposed-comm", b));
  expect_effect("exposed_comm_h100", a, b, Truth::kExposedComm, "exposed_comm");
}

TEST(CompareGolden, StragglerWaitIsTheLargestDifference) {
  for (const auto& [dev, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(dev);
    const SynthConfig a = base(dev, par);
    SynthConfig b = a;
    ASSERT_TRUE(apply_scenario("straggler", b));
    expect_effect(std::string("straggler_") + dev, a, b, Truth::kStragglerCost, "straggler_wait");
  }
}

// Three sequence lengths: three sweep rows, tokens/s = tokens per step / mean iteration time.
TEST(CompareGolden, SequenceSweep) {
  std::vector<CompareRun> runs;
  for (int seq : {1024, 2048, 4096}) {
    SynthConfig c = base("h100", Parallelism::kFsdp);
    c.seq = seq;
    const int64_t tokens = static_cast<int64_t>(c.batch) * c.seq * c.ranks;
    runs.push_back(profile("sweep_" + std::to_string(seq), c, Truth::kHostStall, tokens).run);
  }
  const Comparison c = compare_runs(runs);
  ASSERT_EQ(c.runs.size(), 3u);
  ASSERT_EQ(c.pairs.size(), 2u);
  for (const CompareRun& r : c.runs) {
    ASSERT_GT(r.iteration_ns, 0);
    EXPECT_NEAR(r.tokens_per_s, static_cast<double>(r.tokens_per_step) / (r.iteration_ns * 1e-9),
                1e-6 * r.tokens_per_s);
    EXPECT_NEAR(r.time_per_token_ns * static_cast<double>(r.tokens_per_step), r.iteration_ns,
                1e-6 * r.iteration_ns);
    std::printf("sweep %s: iteration %.3f ms, %.0f tokens/s, %.3f us/token\n", r.label.c_str(),
                r.iteration_ns / 1e6, r.tokens_per_s, r.time_per_token_ns / 1e3);
  }
  // Longer sequences take longer per iteration.
  EXPECT_LT(c.runs[0].iteration_ns, c.runs[1].iteration_ns);
  EXPECT_LT(c.runs[1].iteration_ns, c.runs[2].iteration_ns);
  // The sweep table: one row per run, in order.
  struct Capture : TableSink {
    std::map<std::string, std::vector<std::vector<Cell>>> rows;
    std::string current;
    void begin(const TableSchema& s) override { current = s.name; }
    void row(std::span<const Cell> c) override { rows[current].emplace_back(c.begin(), c.end()); }
    void end() override {}
  } cap;
  compare_tables(c, cap);
  ASSERT_EQ(cap.rows["sweep"].size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const std::vector<Cell>& row = cap.rows["sweep"][k];
    EXPECT_EQ(row[0].i, static_cast<int64_t>(k));
    EXPECT_EQ(std::string(row[1].s), c.runs[k].label);
    EXPECT_DOUBLE_EQ(row[9].r, c.runs[k].tokens_per_s);  // tokens_per_s
  }
  const std::string s = compare_summary(c);
  EXPECT_NE(s.find("(sweep)"), std::string::npos) << s;
}
