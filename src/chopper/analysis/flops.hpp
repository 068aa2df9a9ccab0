#pragma once
// FLOPs and bytes moved of one host operation, from its name and the shapes PyTorch recorded for it
// ("Input Dims", "Input type", "Concrete Inputs" with record_shapes=True). This is what achieved
// TFLOP/s, achieved bandwidth and MFU are computed from. Formulas, units and sources:
// docs/flops.md.
//
// Conventions (TraceLens perf model, AMD-AGI/TraceLens TraceLens/PerfModel/perf_model.py):
//   - one multiply-accumulate = 2 FLOPs; a GEMM [M,K]x[K,N] is 2·M·N·K (+M·N with a bias);
//   - bytes = every input read once + every output written once (a lower bound on DRAM traffic);
//   - an op whose name or shapes are not understood is unknown (family kNone, zero FLOPs and
//     bytes): it is counted as unknown by callers, never guessed.
// The cost is the op's own: composite ops (aten::linear, aten::matmul,
// aten::scaled_dot_product_attention, aten::convolution) also have one, so summing over a parent
// and the child that launched the kernel counts twice; callers take the op that launched the
// kernel.
#include <cstdint>
#include <string_view>

#include "chopper/base/enum_names.hpp"

namespace chopper {

// kNone (""): unknown op, or shapes missing or not understood; kElementwise includes copies and
// fills (0 FLOPs, bytes only).
#define CHOPPER_COST_FAMILIES(X)    \
  X(kNone, "")                      \
  X(kGemm, "gemm")                  \
  X(kAttentionFwd, "attention_fwd") \
  X(kAttentionBwd, "attention_bwd") \
  X(kConv, "conv")                  \
  X(kNorm, "norm")                  \
  X(kElementwise, "elementwise")
CHOPPER_ENUM(CostFamily, CHOPPER_COST_FAMILIES)

struct OpCost {
  double flops = 0;  // floating-point operations
  double bytes = 0;  // bytes read + written
  CostFamily family = CostFamily::kNone;
  bool known() const { return family != CostFamily::kNone; }
};

// The FLOPs and bytes moved of one host op, from its name ("aten::mm") and its recorded
// "Input Dims", "Input type" and "Concrete Inputs" (raw JSON text as in the trace; any may be
// empty). Unknown op or unparsable shapes -> family kNone, zeros. Never throws, never asserts on
// input; allocates nothing.
OpCost op_cost(std::string_view op_name, std::string_view input_dims, std::string_view input_types,
               std::string_view concrete_inputs) noexcept;

// "gemm", "attention_fwd", "attention_bwd", "conv", "norm", "elementwise"; "" for kNone.
inline std::string_view cost_family_name(CostFamily f) {
  return enum_name(f);
}

}  // namespace chopper
