#pragma once
// chopper record: runs a command and samples the GPUs and CPUs beside it until it ends, writing
// RUN/telemetry/<host>.{gpu,cpu,threads,clock}.csv and <host>.record.json
// (docs/telemetry_formats.md, "chopper record").
#include <string>
#include <vector>

namespace chopper::record {

struct RecordOptions {
  std::string run_dir;                // "": chopper-run-<YYYYmmdd-HHMMSS> in the current directory
  unsigned interval_ms = 10;          // GPU and /proc/stat ticks
  unsigned thread_interval_ms = 100;  // CMD's process tree
  // The GPUs' cumulative counters (energy, PCIe and NVLink bytes): read at the first tick, then at
  // the first tick at least this long after the last read (they are costly: GpuBackend::read).
  unsigned counter_interval_ms = 500;
  std::string gpu = "auto";  // auto, nvml, amdsmi, none
  bool no_cpu = false;       // no cpu.csv, no threads.csv
  std::vector<std::string> command;
};

// Records around `o.command` and returns the exit status chopper record ends with: CMD's (128 +
// the signal when a signal ended it); 2 when the recording cannot start (a GPU library asked for
// is missing, the run directory cannot be made), before CMD starts; 127 when CMD is not found,
// 126 when it is found but cannot be run (as a shell).
int record(const RecordOptions& o);

}  // namespace chopper::record
