#pragma once
// The GPU file `chopper record` writes, `<host>.gpu.csv` (format "chopper-record"; the contract:
// docs/telemetry_formats.md, "Reading a recorded run"): one row per GPU per tick, integer ns
// CLOCK_REALTIME stamps, the fixed header
// `time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,util_mem_pct,
// throttle_reasons` and optional columns after it. Read like the other telemetry formats
// (telemetry_reader.hpp): one Series per (GPU, metric) on ClockDomain::kRealtimeUtc, empty cells
// and bad rows counted, never fatal; windowed when a window is given.
#include <string_view>
#include <vector>

#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

// Whether a CSV header (split) is the recorder's GPU file's: its first 11 fields exactly.
bool record_gpu_header(const std::vector<std::string_view>& fields);

// Reads the file; `in` is positioned at the start.
void read_record_gpu(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);

}  // namespace chopper::telemetry
