#pragma once
// Finding and reading the hardware's files of a run: GPU telemetry (ingest/telemetry/) and
// hardware counters (ingest/rocprof/). A run directory is searched, not recursively, in itself and
// in its telemetry/ and counters/ subdirectories; each candidate file (.csv, .txt, .log and, in
// those subdirectories, .json, each possibly .gz or .zst) is recognised by its content. Files that
// are neither are listed as skipped, never fatal; a file that cannot be read is reported with the
// reader's "FILE: byte N: ..." line and the others go on. The GPU metrics of the Nsight Systems
// exports among the run's traces are telemetry too (ingest/nsys/nsys_gpu_metrics.hpp).
#include <functional>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "chopper/ingest/record/record_meta.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"
#include "chopper/model/recorded_cpu.hpp"
#include "chopper/model/series.hpp"

namespace chopper {

struct HardwareFiles {
  std::vector<TelemetryData> telemetry;
  std::vector<CounterTable> counters;  // kernel traces already joined into the counter tables
  // `chopper record`'s CPU files (<host>.cpu.csv, <host>.threads.csv), by host
  // (ingest/record/cpu_reader.hpp).
  std::vector<RecordedCpu> recorded_cpu;
  std::vector<std::pair<std::string, std::string>> skipped;  // file, why
  std::vector<std::string> errors;                           // one line per unreadable file
  std::vector<std::string> error_files;                      // their paths, parallel to errors
  // A run `chopper record` wrote (docs/telemetry_formats.md, "Reading a recorded run"): its GPU
  // files are in `telemetry` (format "chopper-record", with their host's record.json and clock
  // check attached as TelemetryData::recorder); each host's record.json and clock.csv as read;
  // and the paths of its CPU files (<host>.cpu.csv, <host>.threads.csv), recognised here and
  // read by ingest/record/cpu_*.
  std::vector<RecordMeta> recorded_hosts;
  std::vector<ClockCheck> recorded_clocks;
  std::vector<std::string> recorded_cpu_files;
};

// `run_paths` as given to analyze (directories are searched); `telemetry` and `counters` name
// files explicitly (an explicit file that is not of its kind is an error, not a skip). `window`:
// the telemetry rows the run can use (telemetry_window() in link/hardware_align.hpp); telemetry
// files are read only there when they allow it, the rows left out counted in their diagnostics
// ("rows_outside_window"). Empty: every row is read.
// `keep_counter_rows` (may be empty: keep all): a counter file it says no to keeps only what lists
// the file (CounterTable::drop_rows), as soon as it is whole (a JSON one, a CUPTI pass or
// rocprofv3's, at once: a kernel trace only ever times a rocprofv3 counter CSV; a CSV once timed).
// An MPI process keeps the rows of its own ranks' files only; read_counters_file() gives a JSON
// file's rows again.
using CounterFilter = std::function<bool(const CounterTable&)>;
HardwareFiles load_hardware(const std::vector<std::string>& run_paths,
                            const std::vector<std::string>& telemetry,
                            const std::vector<std::string>& counters, unsigned threads = 0,
                            const TelemetryWindow& window = {},
                            const CounterFilter& keep_counter_rows = {});

// Whether the run has any hardware file: one is named, or a candidate of its directories is
// telemetry or counters by its first bytes (nothing is read beyond them). A streamed analyze asks
// before reading the traces: aligning telemetry needs every rank's busy time first.
// As above, with the telemetry window not known yet: counter files are read at once, telemetry
// files wait for `window` (fulfilled by the caller once the traces are read), so that reading the
// hardware files overlaps reading the traces. The result is the same as with the window given.
HardwareFiles load_hardware(const std::vector<std::string>& run_paths,
                            const std::vector<std::string>& telemetry,
                            const std::vector<std::string>& counters, unsigned threads,
                            std::shared_future<TelemetryWindow> window,
                            const CounterFilter& keep_counter_rows = {});

bool has_hardware_files(const std::vector<std::string>& run_paths,
                        const std::vector<std::string>& telemetry,
                        const std::vector<std::string>& counters);

}  // namespace chopper
