// Golden test for op_cost(): on synthetic runs, the FLOPs computed from the shapes the synthetic
// trace records for each GEMM and attention kernel's launching host op equal the FLOPs the
// generator used for that kernel (truth.json), to 1e-9 relative; and for GEMMs (forward, dgrad,
// wgrad), norms and elementwise ops the bytes too: the shapes describe the work the nominal time
// is made of. This checks the reader (Input
// Dims, Input type, Concrete Inputs), the link from kernel to host op, and the formulas against
// an independent statement of them (synth.cpp: GEMM 2·m·n·k; causal attention 2·seq·T·h forward,
// 2.5× backward).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "chopper/analysis/flops.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

void check_flops(const std::string& name, const SynthConfig& c) {
  const fs::path dir = temp_dir("flops_" + name);
  synthesize(c, dir.string());
  Run run = load_run({dir.string()});
  const std::vector<TruthRank> truth = read_truth(dir);
  ASSERT_EQ(run.ranks.size(), truth.size());
  for (size_t r = 0; r < truth.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankTrace& t = run.ranks[r].trace;
    std::map<int64_t, size_t> by_corr;
    for (size_t i = 0; i < t.gpu.size(); ++i) by_corr[t.gpu.correlation[i]] = i;
    size_t gemms = 0, fwd = 0, bwd = 0;
    int shown = 0;
    size_t vector_ops = 0;
    for (const TruthKernel& k : truth[r].kernels) {
      const bool vec = k.op_class == "norm" || k.op_class == "elementwise";
      if (k.op_class != "gemm" && k.op_class != "attention" && !vec) continue;
      const auto it = by_corr.find(k.correlation);
      ASSERT_NE(it, by_corr.end()) << "correlation " << k.correlation;
      const int32_t h = t.gpu.host_op_idx[it->second];
      ASSERT_GE(h, 0) << "correlation " << k.correlation << " has no host op";
      const auto hi = static_cast<size_t>(h);
      const std::string_view op = t.strings.str(t.host.name[hi]);
      const OpCost cost = op_cost(op, t.strings.str(t.shapes_of(hi).input_dims),
                                  t.strings.str(t.shapes_of(hi).input_types),
                                  t.strings.str(t.shapes_of(hi).concrete_inputs));
      if (vec) {
        // Norms and elementwise ops (the FSDP copy-out aside: a split, no formula): the shapes
        // give the generator's W and Q, forward and backward (docs/flops.md).
        if (op == "aten::split_with_sizes_copy") continue;
        const CostFamily want = k.op_class == "norm" ? CostFamily::kNorm : CostFamily::kElementwise;
        const bool ok = cost.family == want && k.flops > 0 && k.bytes > 0 &&
                        std::abs(cost.flops - k.flops) <= 1e-9 * k.flops &&
                        std::abs(cost.bytes - k.bytes) <= 1e-9 * k.bytes;
        if (!ok && shown++ < 8)
          ADD_FAILURE() << "correlation " << k.correlation << " " << op << " "
                        << t.strings.str(t.shapes_of(hi).input_dims) << ": got "
                        << cost_family_name(cost.family) << " " << cost.flops << " FLOPs, "
                        << cost.bytes << " B; truth " << k.op_class << " " << k.phase << " "
                        << k.flops << " FLOPs, " << k.bytes << " B";
        vector_ops += ok;
        continue;
      }
      CostFamily want = CostFamily::kGemm;
      if (k.op_class == "attention")
        want = k.phase == "backward" ? CostFamily::kAttentionBwd : CostFamily::kAttentionFwd;
      // GEMMs: the bytes too (forward, dgrad and wgrad: the three products of the same sizes).
      const bool ok =
          cost.family == want && k.flops > 0 && std::abs(cost.flops - k.flops) <= 1e-9 * k.flops &&
          (want != CostFamily::kGemm || std::abs(cost.bytes - k.bytes) <= 1e-9 * k.bytes);
      if (!ok && shown++ < 8)
        ADD_FAILURE() << "correlation " << k.correlation << " " << op << ": got "
                      << cost_family_name(cost.family) << " " << cost.flops << " FLOPs, truth "
                      << k.op_class << " " << k.phase << " " << k.flops;
      (want == CostFamily::kGemm ? gemms : want == CostFamily::kAttentionFwd ? fwd : bwd) += ok;
    }
    EXPECT_EQ(shown, 0);
    // Every layer has 7 GEMMs forward and 14 backward, plus the output projection (1 + 2); one
    // attention forward and one backward per layer; per iteration.
    const size_t layers = static_cast<size_t>(c.layers), its = static_cast<size_t>(c.iterations);
    EXPECT_EQ(gemms, its * (layers * 21 + 3));
    EXPECT_EQ(fwd, its * layers);
    EXPECT_EQ(bwd, its * layers);
    // Per layer 2 norms and 4 elementwise ops forward, as many backward; the final norm (1 + 1).
    EXPECT_EQ(vector_ops, its * (layers * 12 + 2));
  }
  fs::remove_all(dir);
}

}  // namespace

TEST(FlopsGolden, FsdpNvidiaMatchesTruth) {
  check_flops("fsdp_h100", small("h100", Parallelism::kFsdp));
}

TEST(FlopsGolden, DdpAmdMatchesTruth) {
  check_flops("ddp_mi300x", small("mi300x", Parallelism::kDdp));
}

TEST(FlopsGolden, GqaPresetMatchesTruth) {
  // llama3-70b: 64 query heads, 8 KV heads, head_dim 128.
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.preset = "llama3-70b";
  c.layers = 1;
  c.iterations = 1;
  c.batch = 2;
  c.seq = 512;
  check_flops("gqa_70b", c);
}

TEST(FlopsGolden, HostEtShapesMatchTruth) {
  // chopper synth --et --et-drop-dims 0.5: half the launching ops' Input Dims are only in the host
  // ET; linked by rf_id, they take the ET's shapes, and every op's FLOPs still equal the truth's.
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.et = true;
  c.et_drop_dims = 0.5;
  check_flops("et_h100", c);
}
