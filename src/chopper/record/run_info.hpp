#pragma once
// What chopper record says about the run besides the samples: <host>.record.json (rewritten as
// the run goes) and the clock pairs of <host>.clock.csv.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chopper/record/csv_stream.hpp"
#include "chopper/record/gpu_backend.hpp"

namespace chopper::record {

struct RunInfo {
  std::string host;
  std::vector<std::string> command;
  unsigned interval_ms = 10, thread_interval_ms = 100, counter_interval_ms = 500;
  std::string gpu_backend = "none", gpu_note;
  std::vector<GpuDevice> gpus;
  unsigned logical_cpus = 0;
  int64_t start_realtime_ns = 0;
  std::optional<int64_t> end_realtime_ns;
  std::optional<int> exit_status;
  std::vector<pid_t> pids;
  // chopper record's own CPU time (user + system, the child excluded), written at the end.
  std::optional<int64_t> recorder_cpu_ns;
};

// The JSON text of record.json (docs/telemetry_formats.md, "chopper record").
std::string record_json(const RunInfo& info);
// Writes record.json as `path`: to a temporary file beside it, then renamed over it, so a reader
// never sees half of it. Throws Error naming the file.
void write_record_json(const std::string& path, const RunInfo& info);
// Appends a clock row: CLOCK_REALTIME and CLOCK_MONOTONIC read back to back.
void append_clock_row(CsvStream& out);
// gethostname() with every character outside [A-Za-z0-9._-] replaced by '_'.
std::string file_host_name();

}  // namespace chopper::record
