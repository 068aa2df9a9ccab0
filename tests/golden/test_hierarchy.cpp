// Golden tests for the hierarchy: on synthetic runs every GPU activity's iteration, phase, layer,
// operation and operation class must equal truth.json's, for FSDP and DDP, NVIDIA and AMD naming.
#include <gtest/gtest.h>

#include <map>

#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

void check_labels(const std::string& name, SynthConfig c) {
  const fs::path dir = temp_dir("hier_" + name);
  synthesize(c, dir.string());
  Run run = load_run({dir.string()});
  const Taxonomy tx = Taxonomy::builtin();
  label_run(tx, run, 2);
  const std::vector<TruthRank> truth = read_truth(dir);
  ASSERT_EQ(run.ranks.size(), truth.size());
  for (size_t r = 0; r < truth.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankTrace& t = run.ranks[r].trace;
    ASSERT_TRUE(t.labelled());
    std::map<int64_t, size_t> by_corr;
    for (size_t i = 0; i < t.gpu.size(); ++i) by_corr[t.gpu.correlation[i]] = i;
    ASSERT_EQ(by_corr.size(), truth[r].kernels.size());
    int shown = 0;
    size_t wrong = 0;
    for (const TruthKernel& k : truth[r].kernels) {
      const size_t i = by_corr.at(k.correlation);
      const std::string phase(phase_name(t.gpu.phase[i]));
      const std::string op(t.strings.str(t.gpu.operation[i]));
      const std::string cls(op_class_name(t.gpu.op_class[i]));
      const bool ok = t.gpu.iteration[i] == k.iteration && phase == k.phase &&
                      t.gpu.layer[i] == k.layer && op == k.operation && cls == k.op_class;
      if (!ok) {
        ++wrong;
        if (shown++ < 8)
          ADD_FAILURE() << "correlation " << k.correlation << " ("
                        << t.strings.str(t.gpu.name[i]).substr(0, 60) << "): got iteration "
                        << t.gpu.iteration[i] << " phase " << phase << " layer " << t.gpu.layer[i]
                        << " op " << op << " class " << cls << "; truth " << k.iteration << " "
                        << k.phase << " " << k.layer << " " << k.operation << " " << k.op_class;
      }
      // Every label says which rule set it (layer and phase may legitimately be unset).
      EXPECT_NE(t.gpu.iteration_rule[i], kNoRule);
      EXPECT_NE(t.gpu.phase_rule[i], kNoRule);
      EXPECT_NE(t.gpu.operation_rule[i], kNoRule);
      EXPECT_NE(t.gpu.op_class_rule[i], kNoRule);
    }
    EXPECT_EQ(wrong, 0u) << "of " << truth[r].kernels.size() << " activities";
  }
  fs::remove_all(dir);
}

}  // namespace

TEST(Hierarchy, FsdpNvidiaMatchesTruth) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  ASSERT_TRUE(apply_scenario("demo", c));
  check_labels("fsdp_h100", c);
}

TEST(Hierarchy, FsdpAmdMatchesTruth) {
  check_labels("fsdp_mi300x", small("mi300x", Parallelism::kFsdp));
}

TEST(Hierarchy, FsdpNoPrefetchMatchesTruth) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.prefetch = false;
  check_labels("fsdp_noprefetch", c);
}

TEST(Hierarchy, DdpNvidiaMatchesTruth) {
  check_labels("ddp_a100", small("a100", Parallelism::kDdp));
}

TEST(Hierarchy, DdpAmdMatchesTruth) {
  check_labels("ddp_mi250", small("mi250", Parallelism::kDdp));
}
