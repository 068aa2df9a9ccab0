#pragma once
// GPU metrics sampling of an Nsight Systems SQLite export (nsys profile --gpu-metrics-devices):
// GPU_METRICS rows named through TARGET_INFO_GPU_METRICS (joined by metricName, since metric ids
// are not stable across exports) as telemetry series, on the export's own clock (UTC epoch ns when
// TARGET_INFO_SESSION_START_TIME gives the session start, else ns from the session start).
#include <string>

#include "chopper/model/series.hpp"

namespace chopper {

// The series of the metrics chopper has a Metric for ("GPC Clock Frequency [MHz]" ->
// sm_clock_mhz, "GR Active [Throughput %]" -> util_gpu_pct), one per GPU (typeId's low byte);
// every other metric is counted (nsys_unread, with its sample count). An export without GPU
// metrics gives no series. Throws InputError naming the file when it cannot be read.
TelemetryData read_nsys_gpu_metrics(const std::string& file);

}  // namespace chopper
