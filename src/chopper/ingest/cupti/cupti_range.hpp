#pragma once
// NVIDIA per-kernel hardware counters as Kineto records them with the CUPTI range profiler
// (torch.profiler's experimental_config profiler_metrics=[...], profiler_measure_per_kernel=True):
// a Kineto JSON trace whose "cuda_profiler_range" complete events each name one kernel and carry
// its metrics in args ("sm__ops_path_tensor_src_bf16_dst_fp32.sum": 1.2e9, ...). The range
// profiler replays kernels one at a time, so such a pass has no kernel events and its ranges'
// ts/dur are not the kernels' times: rows keep their file order (the order the kernels ran) and no
// time, and are joined to a timing trace's kernels by kernel name and occurrence order.
// docs/counter_formats.md.
#include <string>
#include <string_view>

#include "chopper/base/input.hpp"
#include "chopper/model/series.hpp"

namespace chopper {

// Whether `head` (the first bytes, uncompressed) starts a Kineto/Chrome-trace JSON object.
bool sniff_kineto_json(std::string_view head);

// Reads every cuda_profiler_range event of a Kineto JSON into a CounterTable (format
// "cupti-range-json"; kernel = the event's name, agent = its pid (the device), rank =
// distributedInfo.rank). Throws NotATraceError if the document holds no such event (a plain
// trace), InputError naming the file and byte offset if it cannot be read. Events that are not
// complete ("X") or whose args are not numbers are counted in diagnostics.
CounterTable read_cupti_ranges(ByteSource& src, std::string head);

}  // namespace chopper
