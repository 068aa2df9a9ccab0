// Golden tests for the straggler's cost: the generator runs every job twice, with its straggler
// and without (same seed, so the same noise), and truth.json gives per rank and iteration the step
// time the straggler adds. chopper's counterfactual (the median rank's exposed communication minus
// the least one's; analysis.hpp, StragglerCost) must name the straggler and its cost within 2
// points of the iteration time, per rank and iteration, when it is significant, and report no
// straggler where truth has none (a healthy run, or DVFS holding every rank below the straggler's
// clock cap, as in the demo after its first iteration).
#include <gtest/gtest.h>

#include <cstdio>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct Case {
  const char* name;
  const char* device;
  Parallelism par;
  const char* scenario;  // applied to an 8-rank, 4-layer, 3-iteration run
};

void run_case(const Case& k) {
  SCOPED_TRACE(k.name);
  SynthConfig c = small(k.device, k.par);
  c.ranks = 8;
  c.gpus_per_node = 8;
  c.layers = 4;
  c.iterations = 3;
  ASSERT_TRUE(apply_scenario(k.scenario, c));
  const fs::path dir = temp_dir(std::string("strag_") + k.name);
  synthesize(c, dir.string());
  Run run = load_run({dir.string()});
  label_run(Taxonomy::builtin(), run, 2);
  const std::vector<TruthRank> truth = read_truth(dir);
  AnalysisOptions o;
  o.threads = 2;
  const RunAnalysis ra = analyze_run(run, o);
  fs::remove_all(dir);
  ASSERT_EQ(ra.iterations.size(), 3u);
  double worst = 0;
  int named = 0;
  for (const IterationRow& it : ra.iterations) {
    const Ns reported = it.straggler.significant ? it.straggler.cost_ns : 0;
    if (it.straggler.significant) {
      ++named;
      EXPECT_EQ(it.straggler_rank, c.straggler_rank) << "iteration " << it.iteration;
    }
    for (const TruthRank& tr : truth) {
      SCOPED_TRACE("rank " + std::to_string(tr.rank) + " iteration " +
                   std::to_string(it.iteration));
      ASSERT_TRUE(tr.straggler_cost_ns.count(it.iteration));
      const double want = static_cast<double>(tr.straggler_cost_ns.at(it.iteration));
      const double step = static_cast<double>(it.time_ns);
      EXPECT_NEAR(static_cast<double>(reported), want, 0.02 * step);
      worst = std::max(worst, std::abs(static_cast<double>(reported) - want) / step);
    }
  }
  std::printf("%s: straggler named in %d of 3 iterations; largest error %.3f%% of the step\n",
              k.name, named, 100 * worst);
  if (std::string(k.scenario) == "healthy") {
    EXPECT_EQ(named, 0);
  }
  if (std::string(k.scenario) == "straggler") {
    EXPECT_EQ(named, 3);
  }
}

}  // namespace

TEST(StragglerGolden, H100Fsdp) {
  for (const char* sc : {"healthy", "straggler", "demo"})
    run_case({sc, "h100", Parallelism::kFsdp, sc});
}

TEST(StragglerGolden, Mi300xFsdp) {
  for (const char* sc : {"healthy", "straggler", "demo"})
    run_case({sc, "mi300x", Parallelism::kFsdp, sc});
}

TEST(StragglerGolden, A100Ddp) {
  for (const char* sc : {"healthy", "straggler", "demo"})
    run_case({sc, "a100", Parallelism::kDdp, sc});
}
