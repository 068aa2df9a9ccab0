#pragma once
// chopper record's GPU files -> the ranks they describe (docs/metrics.md, Hardware / Alignment,
// "Recorder clock"); telemetry_align.cpp places them on the trace clock (align_recorder).
#include <string>
#include <vector>

#include "chopper/link/hardware_align.hpp"
#include "chopper/model/series.hpp"

namespace chopper {

// Per telemetry file (parallel to it): `ranks`, the indices into the ranks whose trace has a
// process id the file's record.json lists (the recorded command's tree; of an Nsight Systems
// export's GPU metrics, the export's processes with GPU work), in rank order; with one recorded
// host and no such rank, every readable rank (an export: none, placed by node). A rank several
// hosts' pids hold (process ids repeat across hosts, as in containers) is left out of each. Empty
// for files of other formats and for one host of several that no rank matches (placed by node, as
// any other file). `notes`: what the placement needs said ("" when matched by process id).
struct RecordedRanks {
  std::vector<std::vector<size_t>> ranks;
  std::vector<std::string> notes;
};
RecordedRanks recorded_host_ranks(const std::vector<RankActivity>& ranks,
                                  const std::vector<TelemetryData>& telemetry);

}  // namespace chopper
