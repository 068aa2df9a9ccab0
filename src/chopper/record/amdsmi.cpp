// The AMD SMI backend: libamd_smi.so loaded at run time.
//
// Declared here from ROCm/amdsmi's include/amd_smi/amdsmi.h (amdsmi.h is not needed to build):
//   amdsmi_status_t: int enum, AMDSMI_STATUS_SUCCESS = 0; handles: void*;
//   amdsmi_init(uint64_t flags), AMDSMI_INIT_AMD_GPUS = 1 << 1; amdsmi_shut_down();
//   amdsmi_get_socket_handles(uint32_t*, handle*), amdsmi_get_processor_handles(socket, uint32_t*,
//     handle*) (with nullptr: the count);
//   amdsmi_get_gpu_device_uuid(handle, unsigned int* length, char*);
//   amdsmi_get_energy_count(handle, uint64_t* accumulator, float* resolution_uj, uint64_t* ts);
//   amdsmi_get_temp_metric(handle, sensor, metric, int64_t*) in degrees C (the library divides
//     the driver's millidegrees): sensor EDGE 0, HOTSPOT (JUNCTION) 1, VRAM 2; metric CURRENT 0;
//   amdsmi_get_clock_info(handle, clk_type, amdsmi_clk_info_t*): first member uint32_t clk (MHz);
//     clk_type GFX 0, MEM 4;
//   amdsmi_get_gpu_activity(handle, amdsmi_engine_usage_t*): uint32_t gfx_activity, umc_activity
//     first (%);
//   amdsmi_get_gpu_asic_info(handle, amdsmi_asic_info_t*): char market_name[] first;
//   amdsmi_get_lib_version(amdsmi_version_t*): its first uint32_t is the year (23, 24: the
//     YEAR.MAJOR.MINOR.RELEASE versions up to ROCm 6.3) or the major version (25 and later: ROCm
//     6.4 dropped the year);
//   amdsmi_get_power_info(handle, amdsmi_power_info_t*): version 23 (ROCm 5.7 docs)
//     { uint32_t average_socket_power; uint32_t gfx_voltage; ... }; 24 (ROCm 6.2 docs)
//     { uint32_t current_socket_power, average_socket_power; ... }; from 25 (ROCm 6.4.1, 7.0 docs)
//     { uint64_t socket_power; uint32_t current_socket_power, average_socket_power; ... }; power
//     in W, unsupported members UINT32_MAX (some cards: 0xFFFF). Without a version: the first
//     uint32_t only (a power in every layout up to 24).
// The structs only grew at their ends between versions: each is read from a zeroed buffer larger
// than any version's struct, and only the leading members named above are used.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "chopper/record/gpu_backend.hpp"
#include "chopper/record/library.hpp"

namespace chopper::record {

namespace {

using amdsmi_status_t = int;
using Handle = void*;
constexpr amdsmi_status_t kSuccess = 0;
constexpr uint64_t kInitAmdGpus = 1u << 1;
constexpr int kClkGfx = 0, kClkMem = 4;
constexpr int kTempEdge = 0, kTempHotspot = 1, kTempVram = 2, kTempCurrent = 0;
// Larger than every version's struct (amdsmi_asic_info_t, the largest used, is about 1 KiB).
constexpr size_t kStructBuffer = 4096;

struct Api {
  amdsmi_status_t (*init)(uint64_t);
  amdsmi_status_t (*shut_down)();
  amdsmi_status_t (*sockets)(uint32_t*, Handle*);
  amdsmi_status_t (*processors)(Handle, uint32_t*, Handle*);
  amdsmi_status_t (*uuid)(Handle, unsigned*, char*);
  amdsmi_status_t (*power_info)(Handle, void*);
  amdsmi_status_t (*energy)(Handle, uint64_t*, float*, uint64_t*);
  amdsmi_status_t (*clock_info)(Handle, int, void*);
  amdsmi_status_t (*temp)(Handle, int, int, int64_t*);
  amdsmi_status_t (*activity)(Handle, void*);
  // Optional.
  amdsmi_status_t (*asic_info)(Handle, void*);
  amdsmi_status_t (*lib_version)(void*);
  amdsmi_status_t (*status_string)(amdsmi_status_t, const char**);
};

uint32_t u32_at(const unsigned char* p, size_t offset) {
  uint32_t v;
  std::memcpy(&v, p + offset, sizeof v);
  return v;
}

// A power reading in W is usable when it is neither 0 nor one of the library's "unsupported".
bool valid_watts(uint32_t w) {
  return w != 0 && w != 0xFFFFu && w != UINT32_MAX;
}

class AmdSmi final : public GpuBackend {
 public:
  ~AmdSmi() override {
    if (initialized_) api_.shut_down();
  }
  const char* name() const override { return "amdsmi"; }
  std::string version() const override { return version_; }
  const std::vector<GpuDevice>& devices() const override { return devices_; }
  std::array<bool, kGpuExtraCount> extras() const override { return extras_; }

  std::string open();
  void read(size_t i, GpuSample& s, bool counters) override;

 private:
  std::string error(const char* call, amdsmi_status_t r) const {
    const char* e = nullptr;
    if (api_.status_string != nullptr) api_.status_string(r, &e);
    return std::string(call) + ": " + (e != nullptr ? e : "status " + std::to_string(r));
  }
  std::string find_devices();
  void describe(Handle h, GpuDevice& d);

  Library lib_;
  Api api_{};
  bool initialized_ = false;
  // Where the power is in amdsmi_power_info_t: current_socket_power (0 up to version 24, 8 from
  // 25), and whether average_socket_power follows it (not in version 23, where the first member
  // is the average and the second a voltage).
  size_t power_offset_ = 0;
  bool average_follows_ = false;
  std::string version_;
  std::vector<GpuDevice> devices_;
  std::vector<Handle> handles_;
  // Per device: the temperature sensor temp_c reads (edge, or the hotspot where there is none).
  std::vector<int> temp_sensor_;
  std::array<bool, kGpuExtraCount> extras_{};
  alignas(8) unsigned char buf_[kStructBuffer];
};

std::string AmdSmi::open() {
  if (!lib_.open("libamd_smi.so")) {
    // ROCm's default place, when it is not on the loader's path.
    const std::string first = lib_.error();
    if (!lib_.open("/opt/rocm/lib/libamd_smi.so")) return first;
  }
  std::string missing;
  auto need = [&](auto& slot, const char* symbol) {
    slot = lib_.get<std::remove_reference_t<decltype(slot)>>(symbol);
    if (slot == nullptr && missing.empty()) missing = symbol;
  };
  need(api_.init, "amdsmi_init");
  need(api_.shut_down, "amdsmi_shut_down");
  need(api_.sockets, "amdsmi_get_socket_handles");
  need(api_.processors, "amdsmi_get_processor_handles");
  need(api_.uuid, "amdsmi_get_gpu_device_uuid");
  need(api_.power_info, "amdsmi_get_power_info");
  need(api_.energy, "amdsmi_get_energy_count");
  need(api_.clock_info, "amdsmi_get_clock_info");
  need(api_.temp, "amdsmi_get_temp_metric");
  need(api_.activity, "amdsmi_get_gpu_activity");
  if (!missing.empty()) return "libamd_smi.so has no " + missing;
  auto optional = [&](auto& slot, const char* symbol) {
    slot = lib_.get<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  optional(api_.asic_info, "amdsmi_get_gpu_asic_info");
  optional(api_.lib_version, "amdsmi_get_lib_version");
  optional(api_.status_string, "amdsmi_status_code_to_string");
  const amdsmi_status_t r = api_.init(kInitAmdGpus);
  if (r != kSuccess) return error("amdsmi_init", r);
  initialized_ = true;
  if (api_.lib_version != nullptr) {
    std::memset(buf_, 0, sizeof buf_);
    if (api_.lib_version(buf_) == kSuccess) {
      const uint32_t first = u32_at(buf_, 0), second = u32_at(buf_, 4), third = u32_at(buf_, 8);
      power_offset_ = first >= 25 ? 8 : 0;
      average_follows_ = first >= 24;
      version_ = "AMD SMI " + std::to_string(first) + "." + std::to_string(second) + "." +
                 std::to_string(third);
    }
  }
  return find_devices();
}

std::string AmdSmi::find_devices() {
  uint32_t sockets = 0;
  amdsmi_status_t r = api_.sockets(&sockets, nullptr);
  if (r != kSuccess) return error("amdsmi_get_socket_handles", r);
  std::vector<Handle> socket_handles(sockets);
  if (sockets > 0 && (r = api_.sockets(&sockets, socket_handles.data())) != kSuccess)
    return error("amdsmi_get_socket_handles", r);
  socket_handles.resize(sockets);
  for (Handle s : socket_handles) {
    uint32_t n = 0;
    if ((r = api_.processors(s, &n, nullptr)) != kSuccess)
      return error("amdsmi_get_processor_handles", r);
    std::vector<Handle> procs(n);
    if (n > 0 && (r = api_.processors(s, &n, procs.data())) != kSuccess)
      return error("amdsmi_get_processor_handles", r);
    procs.resize(n);
    for (Handle h : procs) {
      GpuDevice d;
      d.index = static_cast<unsigned>(devices_.size());
      describe(h, d);
      devices_.push_back(std::move(d));
      handles_.push_back(h);
    }
  }
  if (devices_.empty()) return "AMD SMI found no GPU";
  return {};
}

// Name, UUID, the temperature sensor to read, and which optional columns the device offers.
void AmdSmi::describe(Handle h, GpuDevice& d) {
  char uuid[64] = {};
  unsigned len = sizeof uuid - 1;
  if (api_.uuid(h, &len, uuid) == kSuccess) {
    d.uuid.assign(uuid, ::strnlen(uuid, sizeof uuid - 1));
    for (char& c : d.uuid)
      if (c == ',') c = '_';
  }
  if (api_.asic_info != nullptr) {
    std::memset(buf_, 0, sizeof buf_);
    if (api_.asic_info(h, buf_) == kSuccess)
      d.name.assign(reinterpret_cast<const char*>(buf_),
                    ::strnlen(reinterpret_cast<const char*>(buf_), 256));
  }
  int64_t t = 0;
  temp_sensor_.push_back(api_.temp(h, kTempEdge, kTempCurrent, &t) == kSuccess ? kTempEdge
                                                                               : kTempHotspot);
  if (api_.temp(h, kTempVram, kTempCurrent, &t) == kSuccess) extras_[kMemTempC] = true;
}

void AmdSmi::read(size_t i, GpuSample& s, bool counters) {
  Handle h = handles_[i];
  s = GpuSample{};
  std::memset(buf_, 0, 64);
  if (api_.power_info(h, buf_) == kSuccess) {
    const uint32_t current = u32_at(buf_, power_offset_);
    const uint32_t average = average_follows_ ? u32_at(buf_, power_offset_ + 4) : 0;
    if (valid_watts(current))
      s.power_mw = uint64_t{current} * 1000;
    else if (valid_watts(average))
      s.power_mw = uint64_t{average} * 1000;
  }
  uint64_t acc = 0, ts = 0;
  float resolution_uj = 0;
  if (counters && api_.energy(h, &acc, &resolution_uj, &ts) == kSuccess && resolution_uj > 0)
    s.energy_mj =
        static_cast<uint64_t>(std::llround(static_cast<double>(acc) * resolution_uj / 1e3));
  std::memset(buf_, 0, 64);
  if (api_.clock_info(h, kClkGfx, buf_) == kSuccess) s.sm_clock_mhz = u32_at(buf_, 0);
  std::memset(buf_, 0, 64);
  if (api_.clock_info(h, kClkMem, buf_) == kSuccess) s.mem_clock_mhz = u32_at(buf_, 0);
  int64_t t = 0;
  if (api_.temp(h, temp_sensor_[i], kTempCurrent, &t) == kSuccess) s.temp_c = t;
  if (extras_[kMemTempC] && api_.temp(h, kTempVram, kTempCurrent, &t) == kSuccess)
    s.extra[kMemTempC] = t;
  std::memset(buf_, 0, 64);
  if (api_.activity(h, buf_) == kSuccess) {
    s.util_gpu_pct = u32_at(buf_, 0);
    s.util_mem_pct = u32_at(buf_, 4);
  }
  // throttle_reasons: AMD SMI's violation status has no one-to-one NVML bit: left empty.
}

}  // namespace

GpuOpen open_amdsmi() {
  auto a = std::make_unique<AmdSmi>();
  std::string err = a->open();
  if (!err.empty()) return {nullptr, std::move(err)};
  return {std::move(a), {}};
}

}  // namespace chopper::record
