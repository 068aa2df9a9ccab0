#pragma once
// A GPU library as chopper record samples it: the devices it found and one pass of reads per
// device per tick (record/nvml.cpp, record/amdsmi.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace chopper::record {

struct GpuDevice {
  unsigned index = 0;  // the library's index (NVML index, AMD SMI processor order)
  std::string name, uuid;
};

// The optional columns of <host>.gpu.csv, in the order the file has them
// (docs/telemetry_formats.md, "chopper record").
enum GpuExtra : unsigned {
  kMemTempC = 0,
  kPcieTxBytesPerS,
  kPcieRxBytesPerS,
  kNvlinkTxBytes,
  kNvlinkRxBytes,
  kGpuExtraCount
};
inline constexpr const char* kGpuExtraColumns[kGpuExtraCount] = {
    "mem_temp_c", "pcie_tx_bytes_per_s", "pcie_rx_bytes_per_s", "nvlink_tx_bytes",
    "nvlink_rx_bytes"};

// One device's values in one tick; a value is absent when its call failed or does not exist.
// Power and energy in milli-units so that the file's 3 decimals are exact.
struct GpuSample {
  std::optional<uint64_t> power_mw, energy_mj;
  std::optional<int64_t> sm_clock_mhz, mem_clock_mhz, temp_c, util_gpu_pct, util_mem_pct;
  std::optional<uint64_t> throttle_reasons;
  std::array<std::optional<int64_t>, kGpuExtraCount> extra;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  // "nvml" or "amdsmi" (record.json's gpu_backend).
  virtual const char* name() const = 0;
  // The library's version, for record.json's gpu_note ("" when it does not say).
  virtual std::string version() const = 0;
  virtual const std::vector<GpuDevice>& devices() const = 0;
  // Which optional columns the library offers (on at least one device).
  virtual std::array<bool, kGpuExtraCount> extras() const = 0;
  // Reads device `i` (an index into devices()) once: every value in one pass; the cumulative
  // counters (energy, PCIe and NVLink bytes) only when `counters` (they can cost milliseconds of
  // CPU per call: NVML's total energy took 4.0 ms on an H200, its PCIe fields 0.27 ms, every
  // other value 2-5 us), else left empty.
  virtual void read(size_t i, GpuSample& out, bool counters) = 0;
};

// A library opened, or why not (the library missing, a required call absent, no device).
struct GpuOpen {
  std::unique_ptr<GpuBackend> backend;
  std::string error;
};
GpuOpen open_nvml();
GpuOpen open_amdsmi();

}  // namespace chopper::record
