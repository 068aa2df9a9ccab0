// op_cost() on public traces (../shared/traces; skipped when absent): the reader keeps "Concrete
// Inputs", every FlashAttention forward of the Qwen trace is the causal [16, 559, 16, 64] one
// (its cost worked out in tests/unit/test_flops.cpp), every convolution of the ResNet trace is
// understood, and most of the Qwen trace's GPU time is launched by ops whose cost is known.
#include <gtest/gtest.h>

#include "chopper/analysis/flops.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

RankTrace load(const char* file) {
  return load_rank_file(chopper::test::shared_path(std::string("traces/kineto/") + file));
}

OpCost cost_of(const RankTrace& t, size_t h) {
  return op_cost(t.strings.str(t.host.name[h]), t.strings.str(t.shapes_of(h).input_dims),
                 t.strings.str(t.shapes_of(h).input_types),
                 t.strings.str(t.shapes_of(h).concrete_inputs));
}

// Share of the GPU time of kernels linked to a host op that is launched by an op of known cost.
double known_share(const RankTrace& t) {
  double known = 0, all = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.host_op_idx[i] < 0) continue;
    const double d = static_cast<double>(t.gpu.dur_ns[i]);
    all += d;
    if (cost_of(t, static_cast<size_t>(t.gpu.host_op_idx[i])).known()) known += d;
  }
  return all > 0 ? known / all : 0;
}

}  // namespace

TEST(RealFlops, QwenFlashAttentionIsCausal) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  for (const char* file :
       {"tracelens_h100_qwen0.5b.json.gz", "tracelens_mi300x_qwen0.5b.json.gz"}) {
    SCOPED_TRACE(file);
    const RankTrace t = load(file);
    size_t n = 0;
    for (size_t h = 0; h < t.host.size(); ++h) {
      if (t.strings.str(t.host.name[h]) != "aten::_flash_attention_forward") continue;
      ++n;
      EXPECT_NE(t.shapes_of(h).concrete_inputs, 0u);
      const OpCost c = cost_of(t, h);
      EXPECT_EQ(c.family, CostFamily::kAttentionFwd);
      EXPECT_DOUBLE_EQ(c.flops, 10239377408.0);  // 4·16·16·559·559·64 / 2
      EXPECT_DOUBLE_EQ(c.bytes, 73269248.0);     // 4·(16·559·16·64)·2
    }
    EXPECT_EQ(n, 24u);  // one per layer
    // Measured 0.911 (H100) and 0.932 (MI300X); the rest is reductions, cat, indexing.
    EXPECT_GT(known_share(t), 0.9);
  }
}

TEST(RealFlops, ResnetConvolutionsAreKnown) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  const RankTrace t = load("tracelens_mi300x_resnet_ddp_rank0.json.gz");
  size_t convs = 0, bwd = 0, stride2 = 0;
  for (size_t h = 0; h < t.host.size(); ++h) {
    const std::string_view name = t.strings.str(t.host.name[h]);
    if (name != "aten::miopen_convolution" && name != "aten::convolution_backward") continue;
    const OpCost c = cost_of(t, h);
    EXPECT_EQ(c.family, CostFamily::kConv)
        << name << " " << t.strings.str(t.shapes_of(h).input_dims);
    EXPECT_GT(c.flops, 0);
    (name == "aten::miopen_convolution" ? convs : bwd) += 1;
    // The stride-2 3×3 convolution worked out in tests/unit/test_flops.cpp.
    if (name == "aten::miopen_convolution" &&
        t.strings.str(t.shapes_of(h).input_dims)
            .starts_with("[[10, 256, 14, 14], [512, 256, 3, 3]")) {
      ++stride2;
      EXPECT_DOUBLE_EQ(c.flops, 1156055040.0);
    }
  }
  EXPECT_GT(convs, 0u);
  EXPECT_GT(bwd, 0u);
  EXPECT_EQ(stride2, 6u);
}
