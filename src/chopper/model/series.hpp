#pragma once
// Sampled hardware signals: GPU telemetry (power, clocks, temperature, utilization, throttle
// reasons, link counters) as one Series per (GPU, metric), and per-dispatch hardware counters
// (rocprofv3 counter collection) as a CounterTable. Readers fill these; link/ puts their times on
// the trace clock; analyses read them. Values are in the unit their Metric names.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/enum_names.hpp"
#include "chopper/base/time.hpp"

namespace chopper {

// What a series measures; its name is the column-style name with its unit (metric_name):
//   kPowerW: instantaneous (or the tool's shortest-window) board power
//   kPowerAvgW: averaged power as the tool reports it (nvidia-smi power.draw.average)
//   kEnergyJ: cumulative energy counter since an arbitrary origin
//   kSmClockMhz: graphics / SM / gfx clock
//   kMemClockMhz: memory clock
//   kTempGpuC: GPU (edge) temperature
//   kTempHotspotC: hotspot / junction temperature
//   kTempMemC: memory (HBM) temperature
//   kUtilGpuPct: GPU busy share of the tool's window, 0-100
//   kUtilMemPct: memory-controller busy share, 0-100
//   kThrottleReasons: bit mask in NVML's encoding (see ThrottleBit); 0 = none
//   kLinkTxBytes: NVLink / XGMI bytes sent, cumulative
//   kLinkRxBytes: NVLink / XGMI bytes received, cumulative
//   kPcieTxBytes: PCIe bytes sent, cumulative
//   kPcieRxBytes: PCIe bytes received, cumulative
#define CHOPPER_METRICS(X)                \
  X(kPowerW, "power_w")                   \
  X(kPowerAvgW, "power_avg_w")            \
  X(kEnergyJ, "energy_j")                 \
  X(kSmClockMhz, "sm_clock_mhz")          \
  X(kMemClockMhz, "mem_clock_mhz")        \
  X(kTempGpuC, "temp_gpu_c")              \
  X(kTempHotspotC, "temp_hotspot_c")      \
  X(kTempMemC, "temp_mem_c")              \
  X(kUtilGpuPct, "util_gpu_pct")          \
  X(kUtilMemPct, "util_mem_pct")          \
  X(kThrottleReasons, "throttle_reasons") \
  X(kLinkTxBytes, "link_tx_bytes")        \
  X(kLinkRxBytes, "link_rx_bytes")        \
  X(kPcieTxBytes, "pcie_tx_bytes")        \
  X(kPcieRxBytes, "pcie_rx_bytes")
CHOPPER_ENUM(Metric, CHOPPER_METRICS)
inline constexpr int kMetricCount = static_cast<int>(enum_count<Metric>);
inline std::string_view metric_name(Metric m) {
  return enum_name(m);
}

// Throttle / clock-event reasons in NVML's bit encoding (nvmlClocksEventReasons); AMD's text
// reasons are mapped onto the same bits.
enum ThrottleBit : uint32_t {
  kThrottleGpuIdle = 0x1,
  kThrottleAppClocks = 0x2,  // applications clocks setting (a user or admin cap)
  kThrottleSwPowerCap = 0x4,
  kThrottleHwSlowdown = 0x8,
  kThrottleSyncBoost = 0x10,
  kThrottleSwThermal = 0x20,
  kThrottleHwThermal = 0x40,
  kThrottleHwPowerBrake = 0x80,
  kThrottleDisplayClocks = 0x100,
  // Throttled for a reason the tool does not name (amd-smi's THROTTLED); no NVML bit uses it.
  kThrottleOther = 0x80000000u,
};
// "gpu_idle", "app_clocks", "sw_power_cap", ... for one bit; "" for an unknown bit.
std::string_view throttle_bit_name(uint32_t bit);

// Which clock a file's timestamps are on, before alignment.
// kUnknown; kRealtimeUtc: seconds since the Unix epoch (UTC); kRealtimeLocal: a calendar date and
// time with no zone (nvidia-smi, dcgmi): local wall time; kMonotonic: CLOCK_MONOTONIC / BOOTTIME,
// time since boot; kRelative: seconds from the start of the recording, origin unknown.
#define CHOPPER_CLOCK_DOMAINS(X)      \
  X(kUnknown, "unknown")              \
  X(kRealtimeUtc, "realtime_utc")     \
  X(kRealtimeLocal, "realtime_local") \
  X(kMonotonic, "monotonic")          \
  X(kRelative, "relative")
CHOPPER_ENUM(ClockDomain, CHOPPER_CLOCK_DOMAINS)
inline std::string_view clock_domain_name(ClockDomain d) {
  return enum_name(d);
}

// Which GPU a series or counter row belongs to, as the file names it. Any part may be unknown.
struct GpuRef {
  int32_t index = -1;  // index on its host as the tool numbers it
  std::string bus_id;  // PCI bus id ("00000000:18:00.0"), "" if absent
  std::string uuid;    // "GPU-…", "" if absent
  std::string host;    // host name when the file says it, else ""
  int64_t rank = -1;   // the global rank the file names (Zeus `power_3.csv`), else -1
};

// One sampled signal of one GPU. t_ns is the sample time on `clock` (ns), ascending after reading
// (readers sort and count out-of-order samples); value in the unit of `metric`; NaN never stored
// (N/A and [Not Supported] samples are skipped and counted).
struct Series {
  GpuRef gpu;
  Metric metric = Metric::kPowerW;
  std::string source;  // the field as the file names it ("power.draw [W]", "gfx_clock")
  ClockDomain clock = ClockDomain::kUnknown;
  std::vector<Ns> t_ns;
  std::vector<double> value;
  size_t size() const { return t_ns.size(); }
};

// What `chopper record` wrote beside its GPU file (<host>.record.json, <host>.clock.csv; read by
// ingest/record/record_meta.hpp, attached by load_hardware): the host, the process ids of the
// recorded command's tree (the alignment gives the file to the ranks whose trace has one), and
// what its clock did when that makes the recorder's clock suspect.
struct RecorderHost {
  bool found = false;  // the host's record.json was read
  std::string host;    // record.json's "host", else the file name's
  std::vector<int64_t> pids;
  std::string clock_note;  // "" = steady (or no clock.csv); else the drift or step seen
};

// What one telemetry file holds.
struct TelemetryData {
  std::string file;
  std::string format;  // "nvidia-smi", "amd-smi", "rocm-smi", "dcgmi", "zeus", "chopper-record",
                       // "nsys-gpu-metrics"
  std::vector<Series> series;
  Diagnostics diagnostics;
  uint64_t samples = 0;  // rows read
  // Format "chopper-record"; of format "nsys-gpu-metrics" (an Nsight Systems export's GPU metrics),
  // `host` is the export and `pids` its processes with GPU work (placed on ranks by process id).
  RecorderHost recorder;
};

// Per-dispatch hardware counters (rocprofv3 counter collection; Chopper's kernel CSVs). One row
// per dispatch; the counters are columns (values[row * counter_names.size() + c], NaN = not
// collected for that dispatch).
struct CounterTable {
  std::string file;
  std::string format;                           // "rocprofv3-csv", "rocprofv3-json", ...
  int64_t rank = -1;                            // the rank the file says it is (-1: unknown)
  ClockDomain clock = ClockDomain::kMonotonic;  // rocprofv3 timestamps: BOOTTIME ns
  std::vector<int64_t> correlation_id;          // -1 when absent
  std::vector<int64_t> dispatch_id;             // -1 when absent
  std::vector<int32_t> agent;                   // GPU agent / device id as the file numbers it
  std::vector<int64_t> pid;                     // process id, -1 when absent
  std::vector<std::string> kernel;              // kernel name as written
  std::vector<Ns> start_ns, end_ns;             // kNoTime when absent
  std::vector<std::string> counter_names;
  std::vector<double> values;
  // True when the rows are device samples, not dispatches (Chopper's counter_samples CSV): each
  // row is one (agent, sample time) with start_ns == end_ns == the sample time, kernel empty, and
  // each value a running total since an arbitrary origin (difference consecutive rows of an agent).
  bool cumulative = false;
  Diagnostics diagnostics;

  // Rows given up once read (drop_rows: a process of an MPI run keeps the rows of its own ranks'
  // files only): how many, and the process id the first one named (-1: none).
  uint64_t dropped_rows = 0;
  int64_t dropped_first_pid = -1;

  size_t size() const { return kernel.size(); }
  uint64_t dispatches() const { return size() + dropped_rows; }  // rows read
  int64_t first_row_pid() const { return !pid.empty() ? pid.front() : dropped_first_pid; }
  // Frees the rows (what the tables that list the files say of it stays).
  void drop_rows();
  double value(size_t row, size_t counter) const {
    return values[row * counter_names.size() + counter];
  }
  // Index of a counter by name, or -1.
  int counter_index(std::string_view name) const {
    for (size_t i = 0; i < counter_names.size(); ++i)
      if (counter_names[i] == name) return static_cast<int>(i);
    return -1;
  }
};

}  // namespace chopper
