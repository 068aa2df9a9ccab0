// op_cost() on hand-written shapes. Every expected number is worked out by hand in the comment
// beside it; shapes marked "real" are copied from the public traces in ../shared/traces
// (tracelens_h100_qwen0.5b, tracelens_mi300x_resnet_ddp_rank0, hta_sampled_2rank,
// kineto_v100_resnet50_2021_legacy).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "chopper/analysis/flops.hpp"

using namespace chopper;

namespace {

constexpr const char* kBf16x2 = R"(["c10::BFloat16", "c10::BFloat16"])";
constexpr const char* kBf16x3 = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"])";

void expect_cost(const OpCost& c, CostFamily f, double flops, double bytes) {
  EXPECT_EQ(c.family, f) << cost_family_name(c.family);
  EXPECT_TRUE(c.known());
  EXPECT_DOUBLE_EQ(c.flops, flops);
  EXPECT_DOUBLE_EQ(c.bytes, bytes);
}

void expect_unknown(const OpCost& c) {
  EXPECT_FALSE(c.known());
  EXPECT_EQ(c.family, CostFamily::kNone);
  EXPECT_EQ(c.flops, 0);
  EXPECT_EQ(c.bytes, 0);
}

}  // namespace

// ---------------------------------------------------------------- GEMM

TEST(Flops, Mm) {
  // 2·2048·4096·4096 = 68,719,476,736 FLOPs;
  // bytes (2048·4096 + 4096·4096 + 2048·4096)·2 = 33,554,432·2 = 67,108,864.
  expect_cost(op_cost("aten::mm", "[[2048, 4096], [4096, 4096]]", kBf16x2, ""), CostFamily::kGemm,
              68719476736.0, 67108864.0);
  // No "Input type": 2 bytes per element. [2,3]x[3,4]: 2·2·4·3 = 48; (6 + 12 + 8)·2 = 52.
  expect_cost(op_cost("aten::mm", "[[2, 3], [3, 4]]", "", ""), CostFamily::kGemm, 48, 52);
  // float: [2,3]x[3,4] bytes (6 + 12 + 8)·4 = 104.
  expect_cost(op_cost("aten::mm", "[[2, 3], [3, 4]]", R"(["float", "float"])", ""),
              CostFamily::kGemm, 48, 104);
}

TEST(Flops, AddmmAndLinearAgree) {
  // real: aten::addmm(bias [1024], mat1 [8944, 1024], mat2 [1024, 1024]), bf16.
  // 2·8944·1024·1024 + 8944·1024 = 18,756,927,488 + 9,158,656 = 18,766,086,144 FLOPs;
  // bytes (8944·1024 + 1024·1024 + 8944·1024 + 1024)·2 = 38,733,824.
  const char* types = R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])";
  expect_cost(op_cost("aten::addmm", "[[1024], [8944, 1024], [1024, 1024], [], []]", types,
                      R"(["", "", "", "1", "1"])"),
              CostFamily::kGemm, 18766086144.0, 38733824.0);
  // real: the aten::linear above it: input [16, 559, 1024] (M = 16·559 = 8944), weight [1024,
  // 1024], bias [1024] -> the same numbers.
  expect_cost(op_cost("aten::linear", "[[16, 559, 1024], [1024, 1024], [1024]]", kBf16x3, ""),
              CostFamily::kGemm, 18766086144.0, 38733824.0);
  // linear without bias, float (real, resnet fc shape): 2·32·1000·2048 = 131,072,000;
  // bytes (32·2048 + 1000·2048 + 32·1000)·4 = 8,582,144.
  expect_cost(
      op_cost("aten::linear", "[[32, 2048], [1000, 2048], []]", R"(["float", "float", ""])", ""),
      CostFamily::kGemm, 131072000, 8582144);
}

TEST(Flops, BmmAndBaddbmm) {
  // real: aten::bmm [2048, 160, 45] x [2048, 45, 20], float: 2·2048·160·20·45 = 589,824,000;
  // bytes 2048·(160·45 + 45·20 + 160·20)·4 = 2048·11,300·4 = 92,569,600.
  expect_cost(
      op_cost("aten::bmm", "[[2048, 160, 45], [2048, 45, 20]]", R"(["float", "float"])", ""),
      CostFamily::kGemm, 589824000, 92569600);
  // baddbmm(bias [8, 64, 32], [8, 64, 16], [8, 16, 32]), bf16:
  // 8·(2·64·32·16 + 64·32) = 8·(65,536 + 2,048) = 540,672 FLOPs;
  // bytes 8·(64·16 + 16·32 + 64·32)·2 + 8·64·32·2 = 57,344 + 32,768 = 90,112.
  expect_cost(
      op_cost("aten::baddbmm", "[[8, 64, 32], [8, 64, 16], [8, 16, 32], [], []]", kBf16x3, ""),
      CostFamily::kGemm, 540672, 90112);
  // Batch mismatch -> unknown.
  expect_unknown(op_cost("aten::bmm", "[[4, 2, 3], [5, 3, 2]]", kBf16x2, ""));
}

TEST(Flops, Matmul) {
  // real: [1024, 96, 50] x [50, 15], float: the batch folds into M = 98,304;
  // 2·98,304·15·50 = 147,456,000; bytes (1024·96·50 + 50·15 + 98,304·15)·4 = 25,562,040.
  expect_cost(op_cost("aten::matmul", "[[1024, 96, 50], [50, 15]]", R"(["float", "float"])", ""),
              CostFamily::kGemm, 147456000, 25562040);
  // Broadcast batch: [2, 1, 8, 4] x [3, 4, 5] -> batch [2, 3] = 6 GEMMs of [8,4]x[4,5]:
  // 2·6·8·5·4 = 1,920; bytes (64 + 60 + 6·8·5)·2 = 728.
  expect_cost(op_cost("aten::matmul", "[[2, 1, 8, 4], [3, 4, 5]]", kBf16x2, ""), CostFamily::kGemm,
              1920, 728);
  // real: [1, 32, 1] x [1, 1, 559]: 2·32·559·1 = 35,776; bytes (32 + 559 + 32·559)·4 = 73,916.
  expect_cost(op_cost("aten::matmul", "[[1, 32, 1], [1, 1, 559]]", R"(["float", "float"])", ""),
              CostFamily::kGemm, 35776, 73916);
  // Vector · vector: 2·K = 8; bytes (4 + 4 + 1)·2 = 18.
  expect_cost(op_cost("aten::matmul", "[[4], [4]]", kBf16x2, ""), CostFamily::kGemm, 8, 18);
}

TEST(Flops, ScaledMmFp8) {
  // [4096, 8192] x [8192, 4096] FP8: 2·4096·4096·8192 = 274,877,906,944 FLOPs;
  // bytes 4096·8192·1 + 8192·4096·1 + 4096·4096·2 (bf16 out) = 100,663,296.
  const char* types =
      R"(["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "", "", "", "Scalar"])";
  expect_cost(op_cost("aten::_scaled_mm", "[[4096, 8192], [8192, 4096], [], [], [], [], [], []]",
                      types, ""),
              CostFamily::kGemm, 274877906944.0, 100663296);
}

// ---------------------------------------------------------------- attention

namespace {
// real (tracelens_h100_qwen0.5b): aten::_flash_attention_forward, q/k/v [16, 559, 16, 64].
constexpr const char* kFlashDims =
    "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], [], [], [], [], [], [], [], "
    "[], [], [], []]";
constexpr const char* kFlashTypes =
    R"(["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""])";
constexpr const char* kFlashCausal =
    R"(["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125", "", "", "", ""])";
constexpr const char* kFlashNonCausal =
    R"(["", "", "", "", "", "559", "559", "0.", "False", "False", "0.125", "", "", "", ""])";
// B = 16, Hq = 16, Sq = Sk = 559, D = 64:
//   full   4·16·16·559·559·64 = 20,478,754,816 FLOPs; causal: half = 10,239,377,408;
//   bytes  (Q + K + V + O)·2 = 4·(16·559·16·64)·2 = 73,269,248;
//   backward 2.5 × causal = 25,598,443,520 FLOPs; bytes (2·(Q + K + V) + dO)·2 = 7·9,158,656·2
//   = 128,221,184.
constexpr double kFull = 20478754816.0, kCausal = 10239377408.0, kBwd = 25598443520.0;
constexpr double kFwdBytes = 73269248.0, kBwdBytes = 128221184.0;
}  // namespace

TEST(Flops, FlashAttentionCausalVsNot) {
  expect_cost(op_cost("aten::_flash_attention_forward", kFlashDims, kFlashTypes, kFlashCausal),
              CostFamily::kAttentionFwd, kCausal, kFwdBytes);
  expect_cost(op_cost("aten::_flash_attention_forward", kFlashDims, kFlashTypes, kFlashNonCausal),
              CostFamily::kAttentionFwd, kFull, kFwdBytes);
  // No Concrete Inputs: taken as non-causal.
  expect_cost(op_cost("aten::_flash_attention_forward", kFlashDims, kFlashTypes, ""),
              CostFamily::kAttentionFwd, kFull, kFwdBytes);
}

TEST(Flops, SdpaLayoutsAgree) {
  // The same attention as [B, H, S, D] through the SDPA ops (real Concrete Inputs).
  const char* dims = "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]";
  expect_cost(op_cost("aten::_scaled_dot_product_flash_attention", dims, kBf16x3,
                      R"(["", "", "", "0.", "True", "False", "0.125"])"),
              CostFamily::kAttentionFwd, kCausal, kFwdBytes);
  expect_cost(
      op_cost("aten::scaled_dot_product_attention",
              "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], [], []]",
              kBf16x3, R"(["", "", "", "", "0.", "True", "0.125", "False"])"),
      CostFamily::kAttentionFwd, kCausal, kFwdBytes);
  // _scaled_dot_product_efficient_attention(q, k, v, attn_bias, compute_log_sumexp, dropout_p,
  // is_causal): is_causal at 6.
  expect_cost(op_cost("aten::_scaled_dot_product_efficient_attention",
                      "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], []]",
                      kBf16x3, R"(["", "", "", "", "True", "0.", "True"])"),
              CostFamily::kAttentionFwd, kCausal, kFwdBytes);
  // cuDNN: is_causal at 6 too; here False.
  expect_cost(
      op_cost("aten::_scaled_dot_product_cudnn_attention",
              "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [], [], [], [], []]",
              kBf16x3, R"(["", "", "", "", "True", "0.", "False", "False"])"),
      CostFamily::kAttentionFwd, kFull, kFwdBytes);
}

TEST(Flops, AttentionBackwardIs2Point5x) {
  // _flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k,
  // max_q, max_k, dropout_p, is_causal, rng_state, unused, scale, ...): is_causal at 11.
  const char* dims =
      "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], "
      "[16, 559, 16, 64], [16, 16, 559], [], [], [], [], [], [], [2], [0], [], [], []]";
  const char* concrete =
      R"(["", "", "", "", "", "", "", "", "559", "559", "0.", "True", "", "", "0.125", "", ""])";
  expect_cost(op_cost("aten::_flash_attention_backward", dims, "", concrete),
              CostFamily::kAttentionBwd, kBwd, kBwdBytes);
  // _scaled_dot_product_flash_attention_backward: [B, H, S, D], is_causal at 11.
  const char* sdpa_dims =
      "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], "
      "[16, 16, 559, 64], [16, 16, 559], [], [], [], [], [], [], [], [], []]";
  expect_cost(
      op_cost("aten::_scaled_dot_product_flash_attention_backward", sdpa_dims, "",
              R"(["", "", "", "", "", "", "", "", "559", "559", "0.", "True", "", "", ""])"),
      CostFamily::kAttentionBwd, kBwd, kBwdBytes);
  // Efficient-attention backward, PyTorch >= 2.2 (13 arguments, is_causal at 11) and 2.0-2.1
  // (9 arguments, is_causal at 6): both causal here.
  expect_cost(
      op_cost(
          "aten::_scaled_dot_product_efficient_attention_backward",
          "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], "
          "[], [16, 16, 559, 64], [16, 16, 576], [], [], [], [], [], []]",
          "",
          R"(["", "", "", "", "", "", "", "", "", "0.", "[True, True, True, False]", "True", ""])"),
      CostFamily::kAttentionBwd, kBwd, kBwdBytes);
  expect_cost(
      op_cost("aten::_scaled_dot_product_efficient_attention_backward",
              "[[16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], [16, 16, 559, 64], "
              "[16, 16, 559, 64], [16, 16, 576], [], [], []]",
              "", R"(["", "", "", "", "", "", "True", "False", ""])"),
      CostFamily::kAttentionBwd, kBwd, kBwdBytes);
}

TEST(Flops, GroupedQueryAttention) {
  // q [2, 1024, 32, 128], k/v [2, 1024, 8, 128] (8 KV heads), no Concrete Inputs (non-causal):
  // 4·2·32·1024·1024·128 = 34,359,738,368 FLOPs;
  // bytes (Q 2·1024·32·128 + K, V 2·1024·8·128 each + O like Q)·2
  //     = (8,388,608 + 2·2,097,152 + 8,388,608)·2 = 41,943,040.
  expect_cost(op_cost("aten::_flash_attention_forward",
                      "[[2, 1024, 32, 128], [2, 1024, 8, 128], [2, 1024, 8, 128], [], [], [], [], "
                      "[], [], [], []]",
                      "", ""),
              CostFamily::kAttentionFwd, 34359738368.0, 41943040);
  // Heads that do not divide: unknown.
  expect_unknown(op_cost("aten::_flash_attention_forward",
                         "[[2, 1024, 30, 128], [2, 1024, 8, 128], [2, 1024, 8, 128]]", "", ""));
}

TEST(Flops, AttentionUnknownCases) {
  // Causal with Sq != Sk: the mask's alignment is the kernel's choice -> unknown.
  expect_unknown(op_cost("aten::_flash_attention_forward",
                         "[[1, 1, 4, 64], [1, 16, 4, 64], [1, 16, 4, 64], [], [], [], [], [], []]",
                         "", R"(["", "", "", "", "", "1", "16", "0.", "True"])"));
  // ... but non-causal decode is fine: 4·1·4·1·16·64 = 16,384.
  EXPECT_DOUBLE_EQ(
      op_cost("aten::_flash_attention_forward",
              "[[1, 1, 4, 64], [1, 16, 4, 64], [1, 16, 4, 64], [], [], [], [], [], []]", "",
              R"(["", "", "", "", "", "1", "16", "0.", "False"])")
          .flops,
      16384);
  // Packed variable-length batch (q [total, H, D], cum_seq_q given): unknown.
  expect_unknown(op_cost("aten::_flash_attention_forward",
                         "[[4096, 16, 64], [4096, 16, 64], [4096, 16, 64], [9], [9], [], []]", "",
                         ""));
  // _efficient_attention_forward with cu_seqlens (argument 4) on [1, total, H, D]: unknown.
  expect_unknown(op_cost("aten::_efficient_attention_forward",
                         "[[1, 4096, 16, 64], [1, 4096, 16, 64], [1, 4096, 16, 64], [], [9], [9], "
                         "[], [], [], []]",
                         "", R"(["", "", "", "", "", "", "", "", "0.", "1"])"));
  // Without them, custom_mask_type 1 is causal: [B, S, H, D] like the flash op.
  expect_cost(op_cost("aten::_efficient_attention_forward",
                      "[[16, 559, 16, 64], [16, 559, 16, 64], [16, 559, 16, 64], [], [], [], [], "
                      "[], [], []]",
                      "", R"(["", "", "", "", "", "", "", "", "0.", "1"])"),
              CostFamily::kAttentionFwd, kCausal, kFwdBytes);
}

// ---------------------------------------------------------------- convolution

TEST(Flops, Convolution) {
  // real: aten::convolution, input [10, 256, 14, 14], weight [512, 256, 3, 3], stride 2, pad 1:
  // Ho = Wo = ⌊(14 + 2 − 2 − 1) / 2⌋ + 1 = 7; output 10·512·7·7 = 250,880;
  // FLOPs 2·250,880·256·3·3 = 1,156,055,040; bytes (501,760 + 1,179,648 + 250,880)·2 = 3,864,576.
  const char* dims = "[[10, 256, 14, 14], [512, 256, 3, 3], [], [], [], [], [], [], []]";
  expect_cost(op_cost("aten::convolution", dims, kBf16x2,
                      R"(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])"),
              CostFamily::kConv, 1156055040, 3864576);
  // real: the aten::miopen_convolution below it (padding at 3, stride at 4): the same.
  expect_cost(op_cost("aten::miopen_convolution", dims, kBf16x2,
                      R"(["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"])"),
              CostFamily::kConv, 1156055040, 3864576);
  // real (2021 trace, no Concrete Inputs): aten::cudnn_convolution [32, 3, 224, 224] with
  // [64, 3, 7, 7] float: 'same' output 224×224 assumed;
  // 2·32·64·224·224·3·49 = 30,211,571,712; bytes (32·3·224² + 64·3·49 + 32·64·224²)·4.
  expect_cost(op_cost("aten::cudnn_convolution",
                      "[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
                      R"(["float", "float"])", ""),
              CostFamily::kConv, 30211571712.0,
              (32.0 * 3 * 224 * 224 + 64 * 3 * 49 + 32.0 * 64 * 224 * 224) * 4);
  // Grouped (depthwise) with a bias: input [1, 8, 10, 10], weight [8, 1, 3, 3], groups 8, pad 1:
  // output 1·8·10·10 = 800; 2·800·1·9 + 800 = 15,200; bytes (800 + 72 + 8 + 800)·2 = 3,360.
  expect_cost(
      op_cost("aten::convolution", "[[1, 8, 10, 10], [8, 1, 3, 3], [8], [], [], [], [], [], []]",
              kBf16x3, R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "8"])"),
      CostFamily::kConv, 15200, 3360);
  // Channels that do not match weight × groups: unknown.
  expect_unknown(op_cost("aten::convolution",
                         "[[1, 8, 10, 10], [8, 1, 3, 3], [], [], [], [], [], [], []]", kBf16x2,
                         R"(["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2"])"));
}

TEST(Flops, ConvolutionBackward) {
  // real: convolution_backward(grad_output [10, 512, 7, 7], input [10, 512, 7, 7], weight
  // [512, 512, 3, 3], ..., output_mask [True, True, False]): each gradient costs the forward's
  // 2·250,880·512·9 = 2,312,110,080 -> 4,624,220,160 FLOPs;
  // bytes 2·(250,880 + 2,359,296 + 250,880)·2 = 11,444,224.
  const char* dims =
      "[[10, 512, 7, 7], [10, 512, 7, 7], [512, 512, 3, 3], [], [], [], [], [], [], [], []]";
  expect_cost(
      op_cost(
          "aten::convolution_backward", dims, kBf16x3,
          R"(["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"])"),
      CostFamily::kConv, 4624220160.0, 11444224);
  // Weight gradient only (a first layer needs no input gradient): half the FLOPs and bytes.
  expect_cost(
      op_cost(
          "aten::convolution_backward", dims, kBf16x3,
          R"(["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, False]"])"),
      CostFamily::kConv, 2312110080.0, 5722112);
}

// ---------------------------------------------------------------- normalization

TEST(Flops, Norms) {
  // real: aten::layer_norm [2048, 125] with weight and bias [125], float: 5 + 1 + 1 = 7 FLOPs per
  // element: 7·256,000 = 1,792,000; bytes (2·256,000 + 250)·4 = 2,049,000.
  expect_cost(op_cost("aten::layer_norm", "[[2048, 125], [], [125], [125], [], []]",
                      R"(["float", "", "float", "float", "Scalar", "Scalar"])", ""),
              CostFamily::kNorm, 1792000, 2049000);
  // rms_norm [4, 512] with weight [512], bf16: 3 + 1 = 4 per element: 4·2,048 = 8,192;
  // bytes (2·2,048 + 512)·2 = 9,216.
  expect_cost(op_cost("aten::rms_norm", "[[4, 512], [], [512], []]", kBf16x3, ""),
              CostFamily::kNorm, 8192, 9216);
  // Without a weight: 3 per element; bytes 2·2,048·2.
  expect_cost(op_cost("aten::_fused_rms_norm", "[[4, 512], [], [], []]", kBf16x3, ""),
              CostFamily::kNorm, 6144, 8192);
  // real: native_layer_norm_backward, x [2048, 1, 742] (1,519,616 elements), weight and bias
  // [1, 742], float: 2·7 per element = 21,274,624; bytes (3·1,519,616 + 2·1,484)·4 = 18,247,264.
  expect_cost(op_cost("aten::native_layer_norm_backward",
                      "[[2048, 1, 742], [2048, 1, 742], [], [2048, 1, 1], [2048, 1, 1], [1, 742], "
                      "[1, 742], []]",
                      R"(["float", "float", "", "float", "float", "float", "float", ""])", ""),
              CostFamily::kNorm, 21274624, 18247264);
  // real: native_batch_norm [10, 512, 7, 7] (250,880) with weight, bias [512], bf16:
  // 7·250,880 = 1,756,160; bytes (2·250,880 + 1,024)·2 = 1,005,568.
  expect_cost(op_cost("aten::native_batch_norm",
                      "[[10, 512, 7, 7], [512], [512], [512], [512], [], [], []]", kBf16x3, ""),
              CostFamily::kNorm, 1756160, 1005568);
}

// ---------------------------------------------------------------- elementwise

TEST(Flops, ElementwiseBroadcasting) {
  // aten::add([16, 559, 1024], [1024], alpha): output [16, 559, 1024] = 9,158,656 elements, 1 FLOP
  // each; bytes (9,158,656 + 1,024 + 9,158,656)·2 = 36,636,672.
  expect_cost(op_cost("aten::add", "[[16, 559, 1024], [1024], []]",
                      R"(["c10::BFloat16", "c10::BFloat16", "Scalar"])", R"(["", "", "1"])"),
              CostFamily::kElementwise, 9158656, 36636672);
  // Both sides broadcast: [8, 1, 4] * [1, 5, 4] -> [8, 5, 4] = 160; bytes (32 + 20 + 160)·4 = 848.
  expect_cost(op_cost("aten::mul", "[[8, 1, 4], [1, 5, 4]]", R"(["float", "float"])", ""),
              CostFamily::kElementwise, 160, 848);
  // Type promotion: bf16 [4, 4] * float [4, 4] -> float output: 16·2 + 16·4 + 16·4 = 160.
  expect_cost(op_cost("aten::mul", "[[4, 4], [4, 4]]", R"(["c10::BFloat16", "float"])", ""),
              CostFamily::kElementwise, 16, 160);
  // real: mul.out(self [1000], other (a 0-dim double), out [1000]): the out= tensor is the
  // output, counted once: bytes 1,000·2 + 1·8 + 1,000·2 = 4,008.
  expect_cost(op_cost("aten::mul", "[[1000], [], [1000]]",
                      R"(["c10::BFloat16", "double", "c10::BFloat16"])", ""),
              CostFamily::kElementwise, 1000, 4008);
  // real: where(condition bool [2048], self float [2048], other 0-dim float): 2,048 FLOPs;
  // bytes 2,048·1 + 2,048·4 + 1·4 + 2,048·4 (output float) = 18,436.
  expect_cost(op_cost("aten::where", "[[2048], [2048], []]", R"(["bool", "float", "float"])", ""),
              CostFamily::kElementwise, 2048, 18436);
  // real: a Python number multiplies as a 0-dim double tensor and does not widen the float output:
  // [1, 559, 64] = 35,776 elements; bytes 35,776·4 + 1·8 + 35,776·4 = 286,216.
  expect_cost(op_cost("aten::mul", "[[1, 559, 64], []]", R"(["float", "double"])", ""),
              CostFamily::kElementwise, 35776, 286216);
  // real: add_ on 0-dim long tensors (num_batches_tracked += 1): 1 FLOP, 3·8 bytes.
  expect_cost(op_cost("aten::add_", "[[], [], []]", R"(["long int", "long int", "Scalar"])",
                      R"(["", "", "1"])"),
              CostFamily::kElementwise, 1, 24);
  // Only scalars (no tensor dtype): unknown.
  expect_unknown(op_cost("aten::add", "[[], [], []]", R"(["Scalar", "Scalar", "Scalar"])", ""));
  // Shapes that do not broadcast: unknown.
  expect_unknown(op_cost("aten::add", "[[3, 4], [5]]", kBf16x2, ""));
}

TEST(Flops, Activations) {
  // real: silu [16, 559, 2816] = 25,186,304 elements × 5 = 125,931,520; bytes 2·25,186,304·2.
  expect_cost(op_cost("aten::silu", "[[16, 559, 2816]]", R"(["c10::BFloat16"])", R"([""])"),
              CostFamily::kElementwise, 125931520, 100745216);
  // gelu: 5 per element (erf form); approximate="tanh": 9.
  expect_cost(op_cost("aten::gelu", "[[10, 10], []]", R"(["float", ""])", R"(["", "none"])"),
              CostFamily::kElementwise, 500, 800);
  expect_cost(op_cost("aten::gelu", "[[10, 10], []]", R"(["float", ""])", R"(["", "tanh"])"),
              CostFamily::kElementwise, 900, 800);
  // sigmoid 4 per element, relu_ 1.
  EXPECT_DOUBLE_EQ(op_cost("aten::sigmoid", "[[2048]]", R"(["float"])", "").flops, 8192);
  EXPECT_DOUBLE_EQ(op_cost("aten::relu_", "[[10, 512, 7, 7]]", R"(["c10::BFloat16"])", "").flops,
                   250880);
}

TEST(Flops, CopiesAndFillsHaveBytesOnly) {
  // real: copy_(self float [2048, 256], src bool [2048, 256]): 524,288·4 + 524,288·1 = 2,621,440.
  expect_cost(op_cost("aten::copy_", "[[2048, 256], [2048, 256], []]",
                      R"(["float", "bool", "Scalar"])", R"(["", "", "False"])"),
              CostFamily::kElementwise, 0, 2621440);
  // real: fill_(self bf16 [10, 1000], 0): 10,000·2 = 20,000.
  expect_cost(
      op_cost("aten::fill_", "[[10, 1000], []]", R"(["c10::BFloat16", "Scalar"])", R"(["", "0"])"),
      CostFamily::kElementwise, 0, 20000);
  expect_cost(op_cost("aten::zero_", "[[256]]", R"(["float"])", ""), CostFamily::kElementwise, 0,
              1024);
  // A host-to-device copy recorded without tensor shapes: unknown.
  expect_unknown(op_cost("aten::copy_", "[]", "", ""));
}

// ---------------------------------------------------------------- unknown and malformed

TEST(Flops, UnknownOpsAndMalformedShapes) {
  expect_unknown(op_cost("aten::embedding", "[[128256, 4096], [1, 2048]]", kBf16x2, ""));
  expect_unknown(op_cost("MyModule.forward", "[[2, 3], [3, 4]]", "", ""));
  expect_unknown(op_cost("mm", "[[2, 3], [3, 4]]", "", ""));  // no aten:: prefix
  expect_unknown(op_cost("aten::mm", "", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "[]", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "[[2048, 4096], [4096", kBf16x2, ""));  // truncated
  expect_unknown(op_cost("aten::mm", "[[2048, 4096], [4096, 4096]] x", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "not json", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "[[2, 3], [4, 5]]", kBf16x2, ""));    // K mismatch
  expect_unknown(op_cost("aten::mm", "[[-2, 3], [3, 5]]", kBf16x2, ""));   // negative size
  expect_unknown(op_cost("aten::mm", "[[2.5, 3], [3, 5]]", kBf16x2, ""));  // fractional size
  expect_unknown(op_cost("aten::mm", "[[99999999999999999999, 3], [3, 5]]", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "[[2, 3, 4], [3, 5]]", kBf16x2, ""));  // wrong rank
  expect_unknown(op_cost("aten::mm", R"([[2, 3], "x"])", kBf16x2, ""));
  expect_unknown(op_cost("aten::mm", "[[[2, 3]], [3, 5]]", kBf16x2, ""));  // a tensor list
  expect_unknown(op_cost("aten::add", "[[1, 2, 3, 4, 5, 6, 7, 8, 9], []]", kBf16x2, ""));  // rank 9
  // Deep nesting is refused, not recursed into without bound.
  std::string deep = "[[" + std::string(10000, '[') + std::string(10000, ']') + "], [3, 4]]";
  expect_unknown(op_cost("aten::mm", deep, kBf16x2, ""));
  // A bad "Input type" only loses element sizes (2 bytes assumed): [2,3]x[3,4] -> 48 FLOPs, 52 B.
  expect_cost(op_cost("aten::mm", "[[2, 3], [3, 4]]", "[\"c10::BFl", ""), CostFamily::kGemm, 48,
              52);
  // Malformed Concrete Inputs for a convolution's stride: unknown.
  expect_unknown(op_cost(
      "aten::convolution", "[[10, 256, 14, 14], [512, 256, 3, 3], [], [], [], [], [], [], []]",
      kBf16x2, R"(["", "", "", "[2, x]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])"));
  // Whitespace anywhere is fine.
  expect_cost(op_cost("aten::mm", " [ [2 ,3] ,\n[ 3, 4 ] ] ", kBf16x2, ""), CostFamily::kGemm, 48,
              52);
}

TEST(Flops, RandomBytesNeverCrash) {
  // Mutations of real shapes and plain noise: any result, no crash, no exception (op_cost is
  // noexcept), and unknown results are all zero.
  std::mt19937_64 rng(7);
  const std::string seeds[] = {kFlashDims, "[[2048, 4096], [4096, 4096]]", kFlashCausal,
                               "[[10, 256, 14, 14], [512, 256, 3, 3], [], [], [], [], [], [], []]"};
  const char* ops[] = {"aten::mm",          "aten::_flash_attention_forward",
                       "aten::convolution", "aten::add",
                       "aten::layer_norm",  "aten::matmul",
                       "aten::gelu",        "aten::convolution_backward"};
  const char alphabet[] = "[]0123456789,- \"eE.truefalsnTF";
  for (int i = 0; i < 20000; ++i) {
    std::string dims = seeds[rng() % std::size(seeds)];
    std::string conc = seeds[rng() % std::size(seeds)];
    for (int m = 0; m < 3; ++m) {
      if (!dims.empty()) dims[rng() % dims.size()] = alphabet[rng() % (sizeof(alphabet) - 1)];
      if (!conc.empty()) conc[rng() % conc.size()] = alphabet[rng() % (sizeof(alphabet) - 1)];
    }
    if (rng() % 4 == 0) dims.resize(rng() % (dims.size() + 1));
    const OpCost c = op_cost(ops[rng() % std::size(ops)], dims, kFlashTypes, conc);
    if (!c.known()) {
      EXPECT_EQ(c.flops, 0);
      EXPECT_EQ(c.bytes, 0);
    } else {
      EXPECT_GE(c.flops, 0);
      EXPECT_GE(c.bytes, 0);
    }
  }
}

TEST(Flops, FamilyNames) {
  EXPECT_EQ(cost_family_name(CostFamily::kNone), "");
  EXPECT_EQ(cost_family_name(CostFamily::kGemm), "gemm");
  EXPECT_EQ(cost_family_name(CostFamily::kAttentionFwd), "attention_fwd");
  EXPECT_EQ(cost_family_name(CostFamily::kAttentionBwd), "attention_bwd");
  EXPECT_EQ(cost_family_name(CostFamily::kConv), "conv");
  EXPECT_EQ(cost_family_name(CostFamily::kNorm), "norm");
  EXPECT_EQ(cost_family_name(CostFamily::kElementwise), "elementwise");
}
