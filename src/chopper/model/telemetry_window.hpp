#pragma once
// The telemetry rows a run can use: the times a caller will look at, on each clock a telemetry file
// may be stamped on. link/ computes it from the traces (telemetry_window() in
// link/hardware_align.hpp); the telemetry readers (ingest/telemetry/telemetry_reader.hpp) read only
// those rows of a long recording, and say there how. It lives in model/ because both sides use it
// and link/ must not depend on ingest/ (docs/architecture.md, "Layers").
#include <cstdint>
#include <utility>
#include <vector>

#include "chopper/base/time.hpp"

namespace chopper {

struct TelemetryWindow {
  std::vector<std::pair<Ns, Ns>> utc;    // [from, to] for rows stamped in UTC (epoch time)
  std::vector<std::pair<Ns, Ns>> local;  // [from, to] for rows stamped in local time, no zone
  // Each range is widened by max(pad_ns, pad_periods × the file's sample interval).
  Ns pad_ns = 0;
  int pad_periods = 0;
  // Files smaller than this (on disk) are read whole: they cost little, and keep every diagnostic.
  uint64_t min_file_bytes = uint64_t{1} << 20;
  bool empty() const { return utc.empty() && local.empty(); }
};

}  // namespace chopper
