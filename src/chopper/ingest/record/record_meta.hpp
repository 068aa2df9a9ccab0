#pragma once
// The files `chopper record` writes beside its GPU file (docs/telemetry_formats.md, "Reading a
// recorded run"), recognised by their content: `<host>.record.json` (the host, the recorded
// command's process tree, its GPUs, the interval, the exit status) and `<host>.clock.csv`
// (CLOCK_REALTIME and CLOCK_MONOTONIC read back to back, once a second), whose drift or step says
// whether the recorder's clock (the trace's) can be trusted. The CPU files (`<host>.cpu.csv`,
// `<host>.threads.csv`) are only recognised here; ingest/record/cpu_* reads them.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/time.hpp"

namespace chopper {

enum class RecordFile : uint8_t { kNone, kGpu, kCpu, kThreads, kClock, kMeta };

// Which recorder file the first bytes (decompressed) are: the header line of a CSV, the
// `"format": "chopper-record"` key of the JSON. kNone if none.
RecordFile sniff_record_file(std::string_view head);

// The host a recorder file's name gives: "<dir>/<host>.gpu.csv[.gz|.zst]" -> "<host>" (the part
// before the kind: gpu, cpu, threads, clock, record). "" when the name is not of that shape.
std::string record_file_host(std::string_view path);

// <host>.record.json. Times in ns; -1 where the file says null (still running) or lacks the key.
struct RecordMeta {
  struct Gpu {
    int32_t index = -1;
    std::string name, uuid;
  };
  std::string file;
  std::string host;
  std::vector<std::string> command;
  int64_t version = -1;
  int64_t interval_ms = -1, thread_interval_ms = -1;
  int64_t counter_interval_ms = -1;  // absent before it was written: every tick
  std::string gpu_backend, gpu_note;
  std::vector<Gpu> gpus;
  int64_t logical_cpus = -1;
  Ns start_realtime_ns = -1, end_realtime_ns = -1;
  int64_t exit_status = -1;   // -1: null (the recorder did not finish: killed, or still running)
  std::vector<int64_t> pids;  // the command first
};
// Throws InputError naming the file when it is not such a document.
RecordMeta read_record_meta(const std::string& path);

// <host>.clock.csv: the change of (realtime − monotonic) over the recording and its largest step
// between two consecutive pairs. A change over kClockDriftLimitNs over the recording, or a step
// over kClockStepLimitNs (one pair a second: more than an NTP slew can do), makes the clock
// suspect (note()).
inline constexpr Ns kClockDriftLimitNs = 1000000;
inline constexpr Ns kClockStepLimitNs = 1000000;
struct ClockCheck {
  std::string file;
  uint64_t pairs = 0;      // rows read
  uint64_t bad_rows = 0;   // rows that are not two integers (a cut last line too)
  Ns span_ns = 0;          // monotonic time from the first pair to the last
  Ns drift_ns = 0;         // (realtime − monotonic) at the last pair − at the first
  Ns step_ns = 0;          // the largest change of (realtime − monotonic) between two pairs
  uint64_t step_line = 0;  // the line of the pair after that step
  double drift_ns_per_s() const {
    return span_ns > 0 ? static_cast<double>(drift_ns) / (static_cast<double>(span_ns) * 1e-9) : 0;
  }
  bool suspect() const {
    return std::abs(drift_ns) > kClockDriftLimitNs || std::abs(step_ns) > kClockStepLimitNs;
  }
  // "" when steady; else "realtime − monotonic changed by +3.000 ms over 12.0 s (250 ns/s);
  // stepped by +5.000 ms at line 7 (a clock jump)".
  std::string note() const;
};
// Throws InputError naming the file when it has no `realtime_ns,monotonic_ns` header.
ClockCheck read_record_clock(const std::string& path);

}  // namespace chopper
