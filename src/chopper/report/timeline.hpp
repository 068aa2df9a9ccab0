#pragma once
// The merged timeline (`chopper timeline`): every selected rank of a labelled run in one Chrome
// trace JSON file that Perfetto (ui.perfetto.dev) and chrome://tracing load, on the aligned clock
// (each rank's clock offset from analysis/collectives subtracted). docs/formats.md, Timeline.
//
// Per rank one process (pid = rank) with
//   - a "hierarchy" thread: nested slices iteration ▸ phase ▸ layer ▸ operation, each spanning its
//     GPU activities (first start to last end, cut at the next sibling's start so they nest);
//   - one thread per GPU stream: every GPU activity as a slice, its labels in args;
//   - one thread per host thread: host ops and runtime calls (unless host is off);
//   - flow arrows from each launch call to its GPU activity, and across ranks through each matched
//     collective;
//   - counter tracks of the aligned telemetry: power, SM clock, temperatures.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

struct TimelineOptions {
  std::vector<std::pair<int64_t, int64_t>> ranks;       // inclusive ranges; empty = every rank
  std::vector<std::pair<int64_t, int64_t>> iterations;  // inclusive ranges; empty = everything
  bool host = true;  // host ops and runtime calls (and the launch flows)
};

struct TimelineStats {
  uint64_t ranks = 0, gpu_slices = 0, hierarchy_slices = 0, host_slices = 0, launch_flows = 0,
           collective_flows = 0, counter_samples = 0;
  Ns base_ns = 0;  // aligned time of ts 0
};

// Parses "0-3,7,9-10" into inclusive ranges (throws Error naming the text).
std::vector<std::pair<int64_t, int64_t>> parse_ranges(const std::string& text);

// Writes the timeline of `run` (labelled) to `out`. `ra` gives the clock offsets and the matched
// collectives; `hw` (may be null) the aligned telemetry.
TimelineStats write_timeline(const Run& run, const RunAnalysis& ra, const HardwareRun* hw,
                             const TimelineOptions& o, OutputFile& out);

}  // namespace chopper
