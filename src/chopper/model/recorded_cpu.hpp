#pragma once
// What `chopper record` wrote of one host's CPUs (docs/telemetry_formats.md, "chopper record"):
// the per-CPU utilization of <host>.cpu.csv and the per-thread CPU time of <host>.threads.csv, as
// read (ingest/record/cpu_reader.hpp). Times are CLOCK_REALTIME ns, the clock of Kineto traces:
// they need no alignment. The analysis of them: analysis/cpu.hpp.
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/time.hpp"

namespace chopper {

// One <host>.cpu.csv: one row per logical CPU per tick, each value covering the interval since
// the previous tick. NaN = the cell was empty (not available).
struct CpuUtilization {
  std::string file;
  std::vector<Ns> time_ns;
  std::vector<int32_t> cpu;
  std::vector<double> util_pct, user_pct, system_pct, iowait_pct;
  Diagnostics diagnostics;
  uint64_t rows_read = 0;  // data lines after the header, used or not
  size_t size() const { return time_ns.size(); }
};

// One <host>.threads.csv: a row per thread of the recorded command's process tree whenever its
// CPU time changed (and at its first sighting). cpu_time_ns is cumulative (utime + stime).
struct ThreadSamples {
  std::string file;
  std::vector<Ns> time_ns;
  std::vector<int64_t> pid, ppid, tid;
  std::vector<std::string> comm;
  std::vector<int32_t> processor;  // -1 = empty cell
  std::vector<Ns> cpu_time_ns;
  Diagnostics diagnostics;
  uint64_t rows_read = 0;  // data lines after the header, used or not
  size_t size() const { return time_ns.size(); }
};

// One host's recorded CPU files (either may be missing: its `file` is then empty).
struct RecordedCpu {
  std::string host;  // the files' name before ".cpu.csv" / ".threads.csv"
  CpuUtilization cpus;
  ThreadSamples threads;
};

}  // namespace chopper
