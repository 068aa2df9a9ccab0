#pragma once
// GPU metrics sampling of an Nsight Systems SQLite export (nsys profile --gpu-metrics-devices):
// GPU_METRICS rows named through TARGET_INFO_GPU_METRICS (joined by metricName, since metric ids
// are not stable across exports) as telemetry series, on the export's own clock (UTC epoch ns when
// TARGET_INFO_SESSION_START_TIME gives the session start, else ns from the session start).
#include <string>
#include <vector>

#include "chopper/model/series.hpp"

namespace chopper {

// The series of the metrics chopper has a Metric for ("GPC Clock Frequency [MHz]" ->
// sm_clock_mhz, "GR Active [Throughput %]" -> util_gpu_pct), one per GPU (typeId's low byte);
// every other metric is counted (nsys_unread, with its sample count). An export without GPU
// metrics gives no series. Format "nsys-gpu-metrics"; recorder.host is the file and
// recorder.pids the processes with GPU work, by which the alignment gives the series to the ranks
// read from the same export (on its clock: offset 0, link/telemetry_align.cpp). Throws InputError
// naming the file when it cannot be read.
TelemetryData read_nsys_gpu_metrics(const std::string& file);

// Whether an export holds GPU metrics samples (a GPU_METRICS row); false for any other file,
// readable or not.
bool nsys_has_gpu_metrics(const std::string& file);

// The Nsight Systems exports among a run's trace paths (the files named and those analyze finds
// in the directories named) that hold GPU metrics, in path order.
std::vector<std::string> nsys_exports_with_gpu_metrics(const std::vector<std::string>& run_paths);

}  // namespace chopper
