// Golden tests for the straggler's cost: the generator runs every job twice, with its straggler
// and without (same seed, so the same noise), and truth.json gives per rank and iteration the step
// time the straggler adds. chopper's counterfactual (the median rank's exposed communication minus
// the least one's; analysis.hpp, StragglerCost) must name the straggler and its cost within 2
// points of the iteration time, per rank and iteration, when it is significant, and report no
// straggler where truth has none (a healthy run). The demo's straggler (a clock cap under its DVFS
// floor) is named in every iteration. And where only the ranks' kernel durations vary (noise),
// what that costs at the collectives, the iteration's straggler cost whether significant or not
// (the median rank's waiting minus the least one's: the rank the others waited for that time),
// matches truth's noise_cost_ns (the same job run again without the noise).
#include <gtest/gtest.h>

#include <cstdio>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct Case {
  const char* name;
  void (*apply)(SynthConfig&);
};
const Case kCases[] = {
    {"healthy", [](SynthConfig&) {}},
    {"straggler", [](SynthConfig& c) { apply_scenario("straggler", c); }},
    // Kernel durations vary from rank to rank (σ = 5% per kernel): no straggler, but a cost at
    // the collectives, where every rank waits for the one that happened to be slowest.
    {"noise", [](SynthConfig& c) { c.noise = 0.05; }},
    // The demo's straggler alone: rank 7's clock capped at 80% of the max.
    {"clock_cap",
     [](SynthConfig& c) {
       c.straggler_rank = c.ranks - 1;
       c.straggler_clock = 0.8;
     }},
    {"demo", [](SynthConfig& c) { apply_scenario("demo", c); }},
};

struct Platform {
  const char* name;
  const char* device;
  Parallelism par;
};
const Platform kPlatforms[] = {
    {"H100Fsdp", "h100", Parallelism::kFsdp},
    {"Mi300xFsdp", "mi300x", Parallelism::kFsdp},
    {"A100Ddp", "a100", Parallelism::kDdp},
};

class StragglerMatrix : public ::testing::TestWithParam<std::tuple<Platform, Case>> {};

}  // namespace

TEST_P(StragglerMatrix, CostWithinTwoPointsOfTruth) {
  const auto& [p, k] = GetParam();
  SynthConfig c = small(p.device, p.par);
  c.ranks = 8;
  c.gpus_per_node = 8;
  c.layers = 4;
  c.iterations = 3;
  k.apply(c);
  const fs::path dir = temp_dir(std::string("strag_") + p.name + "_" + k.name);
  synthesize(c, dir.string());
  chopper::Run run = load_run({dir.string()});
  label_run(Taxonomy::builtin(), run, 2);
  const std::vector<TruthRank> truth = read_truth(dir);
  AnalysisOptions o;
  o.threads = 2;
  const RunAnalysis ra = analyze_run(run, o);
  fs::remove_all(dir);
  ASSERT_EQ(ra.iterations.size(), 3u);
  double worst = 0, worst_var = 0;
  int named = 0;
  for (const IterationRow& it : ra.iterations) {
    const Ns reported = it.straggler.significant ? it.straggler.cost_ns : 0;
    if (it.straggler.significant) {
      ++named;
      // (Under noise alone a rank may be slow enough by chance, once in a while.)
      if (c.noise == 0 || c.straggler_rank >= 0) {
        EXPECT_EQ(it.straggler_rank, c.straggler_rank) << "iteration " << it.iteration;
      }
    }
    for (const TruthRank& tr : truth) {
      SCOPED_TRACE("rank " + std::to_string(tr.rank) + " iteration " +
                   std::to_string(it.iteration));
      ASSERT_TRUE(tr.straggler_cost_ns.count(it.iteration));
      const double want = static_cast<double>(tr.straggler_cost_ns.at(it.iteration));
      const double step = static_cast<double>(it.time_ns);
      if (c.straggler_rank >= 0 || c.noise == 0) {
        EXPECT_NEAR(static_cast<double>(reported), want, 0.02 * step);
        worst = std::max(worst, std::abs(static_cast<double>(reported) - want) / step);
      }
    }
    // Without a straggler, what the ranks' variation costs: the iteration's straggler cost
    // whether significant or not (the rank the others waited for, that time: by chance, so
    // sometimes significant) against truth's noise_cost_ns (0 without noise), averaged over the
    // ranks: a rank's own step also moves with the noise of its kernels after the last collective
    // (DDP's optimizer: ±2 ms a rank, which the next step gives back), not a cost of the job.
    if (c.straggler_rank < 0) {
      double var = 0;
      for (const TruthRank& tr : truth) {
        ASSERT_TRUE(tr.noise_cost_ns.count(it.iteration));
        var += static_cast<double>(tr.noise_cost_ns.at(it.iteration)) / c.ranks;
        if (c.noise == 0) {
          EXPECT_EQ(tr.noise_cost_ns.at(it.iteration), 0);
        }
      }
      const double got = static_cast<double>(it.straggler.cost_ns);
      const double step = static_cast<double>(it.time_ns);
      EXPECT_NEAR(got, var, 0.02 * step) << "iteration " << it.iteration;
      worst_var = std::max(worst_var, std::abs(got - var) / step);
      if (c.noise > 0) {
        EXPECT_GT(var, 0.005 * step);  // it costs: half a point or more
      }
    }
  }
  std::printf(
      "%s %s: straggler named in %d of 3 iterations; largest error %.3f points of the step; "
      "variation at collectives %.3f points\n",
      p.name, k.name, named, 100 * worst, 100 * worst_var);
  const std::string sc = k.name;
  if (sc == "healthy") {
    EXPECT_EQ(named, 0);
  }
  // The demo's straggler (80% clock cap, under its DVFS floor of 85%) slows every iteration.
  if (sc == "straggler" || sc == "demo" || sc == "clock_cap") {
    EXPECT_EQ(named, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Fidelity, StragglerMatrix,
                         ::testing::Combine(::testing::ValuesIn(kPlatforms),
                                            ::testing::ValuesIn(kCases)),
                         [](const ::testing::TestParamInfo<StragglerMatrix::ParamType>& i) {
                           return std::string(std::get<0>(i.param).name) + "_" +
                                  std::get<1>(i.param).name;
                         });
