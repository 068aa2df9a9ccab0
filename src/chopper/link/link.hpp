#pragma once
// Joins that the Kineto format only implies:
//   GPU activity --correlation--> runtime call --External id--> host op
// with fallbacks: the ac2g flow when the activity has no usable correlation, the activity's own
// External id, and the innermost host op on the launching thread that contains the runtime call.
// Also builds the per-thread host-op tree and the ProfilerStep list. CUDA/HIP graph launches need
// no special case: every kernel of a graph carries the correlation of its cudaGraphLaunch call.
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// Fills host.parent, runtime.host_op_idx, gpu.runtime_idx/host_op_idx/link_path, steps, and the
// link statistics. Idempotent.
void link_trace(RankTrace& t);

// Fills gpu.cls, gpu.memcpy_dir, gpu.collective and RankTrace::collectives. Needs link_trace().
void classify_trace(RankTrace& t);

// PyTorch collective names ("allreduce", "_allgather_base", "nccl:all_reduce", ...) -> type.
CollType coll_from_pytorch_name(std::string_view name);

// Parses "ProfilerStep#12" -> 12; false for other names.
bool parse_profiler_step(std::string_view name, int64_t& n);

}  // namespace chopper
