// A stand-in libamd_smi.so for the tests of chopper record: the calls chopper uses, with the values
// of standin_values.hpp, in the structs of the library version STANDIN_AMDSMI_MAJOR (default 26;
// 24 gives the layout of ROCm 6.2, where amdsmi_power_info_t starts with current_socket_power).
// Optional amdsmi_status_code_to_string is absent. Layouts: see src/chopper/record/amdsmi.cpp.
#include <cstdio>
#include <cstring>

#include "standin_values.hpp"

namespace {
struct Processor {
  unsigned index;
};
Processor g_processors[64];
int g_socket = 0;
bool g_init = false;
constexpr int kSuccess = 0, kInval = 1, kNotSupported = 2, kNotInit = 32;
uint32_t major() {
  const char* e = std::getenv("STANDIN_AMDSMI_MAJOR");
  return e != nullptr ? static_cast<uint32_t>(std::atoi(e)) : 26u;
}
int check(void* h) {
  if (!g_init) return kNotInit;
  auto* p = static_cast<Processor*>(h);
  return p == nullptr || p->index >= standin::gpu_count() ? kInval : kSuccess;
}
unsigned index_of(void* h) {
  return static_cast<Processor*>(h)->index;
}
}  // namespace

extern "C" {
int amdsmi_init(uint64_t flags) {
  if (flags != (1u << 1)) return kInval;  // chopper asks for AMD GPUs only
  g_init = true;
  return kSuccess;
}
int amdsmi_shut_down() {
  g_init = false;
  return kSuccess;
}
int amdsmi_get_lib_version(void* v) {
  // ROCm 6.4+: { major, minor, release, build }; before: { year, major, minor, release, build }.
  const uint32_t parts[4] = {major(), 1, 0, 0};
  std::memcpy(v, parts, sizeof parts);
  return kSuccess;
}
int amdsmi_get_socket_handles(uint32_t* count, void** sockets) {
  if (!g_init) return kNotInit;
  if (sockets != nullptr && *count >= 1) sockets[0] = &g_socket;
  *count = 1;
  return kSuccess;
}
int amdsmi_get_processor_handles(void* socket, uint32_t* count, void** procs) {
  if (!g_init) return kNotInit;
  if (socket != &g_socket) return kInval;
  const uint32_t n = standin::gpu_count();
  if (procs != nullptr) {
    for (uint32_t i = 0; i < n && i < *count && i < 64; ++i) {
      g_processors[i].index = i;
      procs[i] = &g_processors[i];
    }
  }
  *count = n;
  return kSuccess;
}
int amdsmi_get_gpu_device_uuid(void* h, unsigned* len, char* uuid) {
  if (int r = check(h)) return r;
  std::snprintf(uuid, *len, "5a0000c0-de00-4000-8000-00000000000%u", index_of(h));
  return kSuccess;
}
int amdsmi_get_gpu_asic_info(void* h, char* info) {
  if (int r = check(h)) return r;
  std::snprintf(info, 256, "Standin MI300X");
  return kSuccess;
}
int amdsmi_get_power_info(void* h, unsigned char* info) {
  if (int r = check(h)) return r;
  const uint32_t w = standin::amd_power_w(index_of(h), standin::now_ms());
  const uint32_t unsupported = 0xFFFFFFFFu;
  if (major() >= 25) {  // uint64_t socket_power; uint32_t current, average; ...
    const uint64_t socket = w;
    std::memcpy(info, &socket, 8);
    std::memcpy(info + 8, &w, 4);
    std::memcpy(info + 12, &unsupported, 4);
  } else {  // uint32_t current, average; ...
    std::memcpy(info, &unsupported, 4);
    std::memcpy(info + 4, &w, 4);
  }
  return kSuccess;
}
int amdsmi_get_energy_count(void* h, uint64_t* acc, float* resolution, uint64_t* ts) {
  if (int r = check(h)) return r;
  const int64_t ms = standin::now_ms();
  *acc = standin::amd_energy_count(index_of(h), ms);
  *resolution = standin::kAmdResolutionUj;
  *ts = static_cast<uint64_t>(ms) * 1000000;
  return kSuccess;
}
int amdsmi_get_clock_info(void* h, int type, uint32_t* info) {
  if (int r = check(h)) return r;
  const int64_t ms = standin::now_ms();
  if (type == 0)
    info[0] = standin::amd_gfx_mhz(index_of(h), ms);
  else if (type == 4)
    info[0] = standin::amd_mem_mhz(index_of(h), ms);
  else
    return kNotSupported;
  info[1] = 100;   // min_clk
  info[2] = 2100;  // max_clk
  return kSuccess;
}
int amdsmi_get_temp_metric(void* h, int sensor, int metric, int64_t* c) {
  if (int r = check(h)) return r;
  if (metric != 0) return kNotSupported;
  const int64_t ms = standin::now_ms();
  const unsigned d = index_of(h);
  if (sensor == 0 && d != 1)
    *c = standin::amd_edge_c(d, ms);
  else if (sensor == 1)
    *c = standin::amd_hotspot_c(d, ms);
  else if (sensor == 2)
    *c = standin::amd_vram_c(d, ms);
  else
    return kNotSupported;
  return kSuccess;
}
int amdsmi_get_gpu_activity(void* h, uint32_t* usage) {
  if (int r = check(h)) return r;
  const int64_t ms = standin::now_ms();
  usage[0] = standin::amd_gfx_pct(index_of(h), ms);
  usage[1] = standin::amd_umc_pct(index_of(h), ms);
  usage[2] = 0;
  return kSuccess;
}
}
