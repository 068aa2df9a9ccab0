#pragma once
// Links a rank's PyTorch host execution trace to its Kineto trace (docs/formats.md, "PyTorch host
// execution trace (ET)"): an ET operator node and a Kineto host op (cpu_op, user_annotation) are
// one operation when the node's rf_id is the host op's `Record function id` and their names agree.
// Each linked host op that recorded no Input Dims takes the ET's shapes, types and scalar values
// (RankTrace::shapes), so its FLOPs and bytes come from the ET (analysis/flops.cpp). Every input
// tensor's producer is the node that last output the same tensor id before it (in id order).
#include "chopper/model/exec_trace.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// Fills et.host_op, et.producer and the link counts; adds shapes rows to `t` for linked host ops
// without Input Dims; one et_link diagnostic line (the link rate) in t.diagnostics (and
// et_no_counterpart when no operator has a Kineto host op of its rf_id), and the ET's own
// diagnostics. Then holds `et` in t.exec_trace.
void link_exec_trace(RankTrace& t, ExecTrace et);

// Only the producers (data dependencies), without a Kineto trace.
void link_et_producers(ExecTrace& et);

// The ET's type for the Kineto "Input type" spelling: "Tensor(float)" -> "float", "Int",
// "Double", "Bool", ... -> "Scalar", "None" -> "".
std::string_view et_type_as_kineto(std::string_view et_type);

}  // namespace chopper
