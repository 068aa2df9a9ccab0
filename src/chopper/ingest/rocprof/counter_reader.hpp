#pragma once
// Readers for per-dispatch hardware counters and kernel-dispatch traces, into a CounterTable (one
// row per kernel dispatch, counters as columns). Formats are detected from the content, never from
// the file name; any input may be gzip or zstd compressed. See docs/counter_formats.md.
//
//   "rocprofv3-counter-csv"        rocprofv3 counter_collection.csv (long: one row per dispatch x
//                                  counter; gathered into one row per dispatch)
//   "rocprofv3-kernel-trace-csv"   rocprofv3 kernel_trace.csv (dispatches with start/end, no
//                                  counters)
//   "rocprofv3-json"               rocprofv3 --output-format json (kernel_dispatch buffer records
//                                  and counter_collection callback records)
//   "cupti-range-json"             a Kineto JSON holding CUPTI range-profiler events
//                                  (cuda_profiler_range: one per kernel, metrics in args;
//                                  ingest/cupti/cupti_range.hpp)
//   "chopper-kernel-csv"           Chopper's device-sampling kernel_traces_rank<r>.csv
//   "chopper-counter-samples-csv"  Chopper's device-sampling counter_samples_rank<r>.csv (one row
//                                  per agent and sample time; cumulative values)
#include <string>
#include <string_view>

#include "chopper/base/input.hpp"
#include "chopper/model/series.hpp"

namespace chopper {

// The format name (above) of a file whose first bytes (uncompressed) are `head`, or "" if none.
// `head` may end anywhere; 4 KiB or more is enough.
std::string_view sniff_counters(std::string_view head);

// Reads a counter or dispatch file. Throws NotATraceError if it is not one of the formats above,
// InputError (naming the file, the byte offset and "line N" for text formats) if it cannot be
// read at all. Bad rows are counted in CounterTable::diagnostics by kind, with examples
// ("line N: ..."), never fatal; a truncated last line is counted and every complete row kept.
CounterTable read_counters(ByteSource& src);
CounterTable read_counters_file(const std::string& path);

// Fills the start/end times (and the kernel name and agent where missing) of `counters` rows that
// lack them from the matching dispatch of `kernel_trace`: by dispatch id where both tables have
// one, else by correlation id. Rows with no match are counted in counters.diagnostics
// ("join_unmatched"); matches whose kernel names differ are counted ("join_kernel_mismatch"); a
// dispatch id the kernel trace holds twice is counted ("join_ambiguous") and its first row used.
// The kernel trace's own diagnostics are added to counters.diagnostics, each kind prefixed
// "kernel_trace_" and each example with the kernel trace's file name.
void join_kernel_trace(CounterTable& counters, const CounterTable& kernel_trace);

}  // namespace chopper
