// The NVML backend: libnvidia-ml.so.1 loaded at run time.
//
// The few types and constants used are declared here (nvml.h is not needed to build). They are
// those of NVIDIA's nvml.h as shipped with CUDA 12.x (NVML API version 12; the PCIe byte counters
// 197/198 only in recent headers: an older driver answers them as not supported and the columns
// are left out), unchanged since the calls were introduced:
//   nvmlReturn_t: int enum, NVML_SUCCESS = 0; nvmlDevice_t: pointer to an opaque struct;
//   nvmlClockType_t: NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2;
//   nvmlTemperatureSensors_t: NVML_TEMPERATURE_GPU = 0;
//   nvmlUtilization_t { unsigned int gpu, memory; };
//   nvmlFieldValue_t { unsigned int fieldId, scopeId; long long timestamp (us since 1970),
//     latencyUsec; nvmlValueType_t valueType; nvmlReturn_t nvmlReturn; nvmlValue_t value; }
//     (40 bytes), nvmlValue_t the union of double, unsigned int, unsigned long,
//     unsigned long long, long long, int, unsigned short (valueType 0..6 in that order);
//   field ids: NVML_FI_DEV_MEMORY_TEMP 82, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 / _RX 139
//     (KiB, scopeId UINT_MAX: summed over the links), NVML_FI_DEV_PCIE_COUNT_TX_BYTES 197 /
//     _RX_BYTES 198 (cumulative bytes);
//   NVML_DEVICE_NAME_V2_BUFFER_SIZE 96, NVML_DEVICE_UUID_V2_BUFFER_SIZE 80.
#include <climits>
#include <cstring>
#include <type_traits>

#include "chopper/record/gpu_backend.hpp"
#include "chopper/record/library.hpp"

namespace chopper::record {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes in nvml.h");

constexpr nvmlReturn_t kSuccess = 0;
constexpr int kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;
constexpr unsigned kFiMemoryTemp = 82, kFiNvlinkDataTx = 138, kFiNvlinkDataRx = 139,
                   kFiPcieTxBytes = 197, kFiPcieRxBytes = 198;
constexpr unsigned kNameSize = 96, kUuidSize = 80;

struct Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long*);
  // Optional: absent from older libraries.
  nvmlReturn_t (*event_reasons)(nvmlDevice_t, unsigned long long*);
  nvmlReturn_t (*field_values)(nvmlDevice_t, int, nvmlFieldValue_t*);
  nvmlReturn_t (*driver_version)(char*, unsigned);
  nvmlReturn_t (*nvml_version)(char*, unsigned);
};

std::optional<int64_t> field_value(const nvmlFieldValue_t& f) {
  if (f.nvmlReturn != kSuccess) return std::nullopt;
  switch (f.valueType) {
    case 0:
      return static_cast<int64_t>(f.value.dVal);
    case 1:
      return static_cast<int64_t>(f.value.uiVal);
    case 2:
      return static_cast<int64_t>(f.value.ulVal);
    case 3:
      return static_cast<int64_t>(f.value.ullVal);
    case 4:
      return static_cast<int64_t>(f.value.sllVal);
    case 5:
      return static_cast<int64_t>(f.value.siVal);
    case 6:
      return static_cast<int64_t>(f.value.usVal);
    default:
      return std::nullopt;
  }
}

// The field values asked for in each read, in this order, and the column each fills.
constexpr unsigned kFields[] = {kFiMemoryTemp, kFiPcieTxBytes, kFiPcieRxBytes, kFiNvlinkDataTx,
                                kFiNvlinkDataRx};
constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

class Nvml final : public GpuBackend {
 public:
  ~Nvml() override {
    if (initialized_) api_.shutdown();
  }
  const char* name() const override { return "nvml"; }
  std::string version() const override { return version_; }
  const std::vector<GpuDevice>& devices() const override { return devices_; }
  std::array<bool, kGpuExtraCount> extras() const override { return extras_; }

  std::string open();
  void read(size_t i, GpuSample& s, bool counters) override;

 private:
  std::string error(const char* call, nvmlReturn_t r) const {
    const char* e = api_.error_string(r);
    return std::string(call) + ": " + (e != nullptr ? e : "error " + std::to_string(r));
  }
  void probe_fields();

  Library lib_;
  Api api_{};
  bool initialized_ = false;
  std::string version_;
  std::vector<GpuDevice> devices_;
  std::vector<nvmlDevice_t> handles_;
  std::array<bool, kGpuExtraCount> extras_{};
  bool any_field_ = false;
  // The PCIe counters' previous reading per device (bytes, us), for the rate.
  struct Pcie {
    long long tx = -1, rx = -1, tx_us = 0, rx_us = 0;
  };
  std::vector<Pcie> pcie_;
};

std::string Nvml::open() {
  if (!lib_.open("libnvidia-ml.so.1")) return lib_.error();
  std::string missing;
  auto need = [&](auto& slot, const char* symbol) {
    slot = lib_.get<std::remove_reference_t<decltype(slot)>>(symbol);
    if (slot == nullptr && missing.empty()) missing = symbol;
  };
  need(api_.init, "nvmlInit_v2");
  need(api_.shutdown, "nvmlShutdown");
  need(api_.error_string, "nvmlErrorString");
  need(api_.count, "nvmlDeviceGetCount_v2");
  need(api_.handle, "nvmlDeviceGetHandleByIndex_v2");
  need(api_.name, "nvmlDeviceGetName");
  need(api_.uuid, "nvmlDeviceGetUUID");
  need(api_.power, "nvmlDeviceGetPowerUsage");
  need(api_.energy, "nvmlDeviceGetTotalEnergyConsumption");
  need(api_.clock, "nvmlDeviceGetClockInfo");
  need(api_.temperature, "nvmlDeviceGetTemperature");
  need(api_.utilization, "nvmlDeviceGetUtilizationRates");
  need(api_.throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!missing.empty()) return "libnvidia-ml.so.1 has no " + missing;
  auto optional = [&](auto& slot, const char* symbol) {
    slot = lib_.get<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  optional(api_.event_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  optional(api_.field_values, "nvmlDeviceGetFieldValues");
  optional(api_.driver_version, "nvmlSystemGetDriverVersion");
  optional(api_.nvml_version, "nvmlSystemGetNVMLVersion");
  nvmlReturn_t r = api_.init();
  if (r != kSuccess) return error("nvmlInit_v2", r);
  initialized_ = true;
  char text[kNameSize];
  if (api_.nvml_version != nullptr && api_.nvml_version(text, sizeof text) == kSuccess)
    version_ = std::string("NVML ") + text;
  if (api_.driver_version != nullptr && api_.driver_version(text, sizeof text) == kSuccess)
    version_ += (version_.empty() ? "driver " : ", driver ") + std::string(text);
  unsigned count = 0;
  r = api_.count(&count);
  if (r != kSuccess) return error("nvmlDeviceGetCount_v2", r);
  if (count == 0) return "NVML found no GPU";
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t h = nullptr;
    r = api_.handle(i, &h);
    if (r != kSuccess) return error("nvmlDeviceGetHandleByIndex_v2", r);
    GpuDevice d;
    d.index = i;
    char name[kNameSize] = {}, uuid[kUuidSize] = {};
    if (api_.name(h, name, sizeof name) == kSuccess) d.name = name;
    if (api_.uuid(h, uuid, sizeof uuid) == kSuccess) d.uuid = uuid;
    devices_.push_back(std::move(d));
    handles_.push_back(h);
  }
  pcie_.assign(count, {});
  probe_fields();
  return {};
}

// An optional column is in the file when its field reads on at least one device.
void Nvml::probe_fields() {
  if (api_.field_values == nullptr) return;
  for (nvmlDevice_t h : handles_) {
    nvmlFieldValue_t f[kFieldCount] = {};
    for (size_t k = 0; k < kFieldCount; ++k) {
      f[k].fieldId = kFields[k];
      f[k].scopeId = kFields[k] == kFiNvlinkDataTx || kFields[k] == kFiNvlinkDataRx ? UINT_MAX : 0;
    }
    if (api_.field_values(h, static_cast<int>(kFieldCount), f) != kSuccess) continue;
    for (size_t k = 0; k < kFieldCount; ++k)
      if (f[k].nvmlReturn == kSuccess) extras_[k] = true;
  }
  for (bool e : extras_) any_field_ = any_field_ || e;
}

void Nvml::read(size_t i, GpuSample& s, bool counters) {
  nvmlDevice_t h = handles_[i];
  s = GpuSample{};
  unsigned u = 0;
  unsigned long long ull = 0;
  if (api_.power(h, &u) == kSuccess) s.power_mw = u;
  if (counters && api_.energy(h, &ull) == kSuccess) s.energy_mj = ull;
  if (api_.clock(h, kClockSm, &u) == kSuccess) s.sm_clock_mhz = u;
  if (api_.clock(h, kClockMem, &u) == kSuccess) s.mem_clock_mhz = u;
  if (api_.temperature(h, kTemperatureGpu, &u) == kSuccess) s.temp_c = u;
  nvmlUtilization_t util{};
  if (api_.utilization(h, &util) == kSuccess) {
    s.util_gpu_pct = util.gpu;
    s.util_mem_pct = util.memory;
  }
  // The newer name of the same mask where the library has it.
  auto reasons = api_.event_reasons != nullptr ? api_.event_reasons : api_.throttle;
  if (reasons(h, &ull) == kSuccess) s.throttle_reasons = ull;
  if (!any_field_) return;
  nvmlFieldValue_t f[kFieldCount] = {};
  int n = 0;
  size_t column[kFieldCount];
  for (size_t k = 0; k < kFieldCount; ++k) {
    if (!extras_[k] || (!counters && k != kMemTempC)) continue;  // counters: all but the memory's
    f[n].fieldId = kFields[k];
    f[n].scopeId = kFields[k] == kFiNvlinkDataTx || kFields[k] == kFiNvlinkDataRx ? UINT_MAX : 0;
    column[n++] = k;
  }
  if (n == 0 || api_.field_values(h, n, f) != kSuccess) return;
  Pcie& p = pcie_[i];
  for (int j = 0; j < n; ++j) {
    const std::optional<int64_t> v = field_value(f[j]);
    const size_t k = column[j];
    if (k == kMemTempC) {
      s.extra[k] = v;
    } else if (k == kNvlinkTxBytes || k == kNvlinkRxBytes) {
      if (v) s.extra[k] = *v * 1024;  // KiB
    } else {
      // PCIe: bytes per second between this reading and the previous one (none on the first, or
      // when the counter went back).
      long long& last = k == kPcieTxBytesPerS ? p.tx : p.rx;
      long long& last_us = k == kPcieTxBytesPerS ? p.tx_us : p.rx_us;
      if (!v) {
        last = -1;
        continue;
      }
      const long long dt_us = f[j].timestamp - last_us;
      if (last >= 0 && *v >= last && dt_us > 0)
        s.extra[k] =
            static_cast<int64_t>(static_cast<double>(*v - last) * 1e6 / static_cast<double>(dt_us));
      last = *v;
      last_us = f[j].timestamp;
    }
  }
}

}  // namespace

GpuOpen open_nvml() {
  auto n = std::make_unique<Nvml>();
  std::string err = n->open();
  if (!err.empty()) return {nullptr, std::move(err)};
  return {std::move(n), {}};
}

}  // namespace chopper::record
