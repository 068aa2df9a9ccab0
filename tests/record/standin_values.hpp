#pragma once
// The values the stand-in GPU libraries (standin_nvml.cpp, standin_amdsmi.cpp) return: each a
// function of the device and of CLOCK_REALTIME in ms at the moment of the call, so that a test can
// check a recorded sample against the value at its stamped time (test_record.cpp).
#include <time.h>

#include <cstdint>
#include <cstdlib>

namespace standin {

inline int64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
// STANDIN_GPUS devices (default 2), read once (a library call costs what the real one would not).
inline unsigned gpu_count() {
  static const unsigned n = [] {
    const char* e = std::getenv("STANDIN_GPUS");
    return e != nullptr ? static_cast<unsigned>(std::atoi(e)) : 2u;
  }();
  return n;
}

// NVML: power in mW, energy in mJ, clocks in MHz, temperatures in C, utilization in %.
inline uint64_t nvml_power_mw(unsigned d, int64_t ms) {
  return static_cast<uint64_t>(100000 + 1000 * d + ms % 997);
}
inline uint64_t nvml_energy_mj(unsigned d, int64_t ms) {
  return static_cast<uint64_t>(static_cast<uint64_t>(ms) * (d + 1));
}
inline unsigned nvml_sm_mhz(unsigned d, int64_t ms) {
  return static_cast<unsigned>(1000 + 10 * d + ms % 491);
}
inline unsigned nvml_mem_mhz(unsigned d, int64_t ms) {
  return static_cast<unsigned>(1500 + d + (ms / 10) % 89);
}
inline unsigned nvml_temp_c(unsigned d, int64_t ms) {
  return static_cast<unsigned>(30 + d + (ms / 100) % 40);
}
inline unsigned nvml_util_gpu(unsigned d, int64_t ms) {
  return static_cast<unsigned>((ms + d) % 101);
}
inline unsigned nvml_util_mem(unsigned d, int64_t ms) {
  return static_cast<unsigned>((ms / 3 + d) % 101);
}
inline uint64_t nvml_throttle(unsigned d, int64_t ms) {
  return static_cast<uint64_t>(uint64_t{1} << ((ms + d) % 9));
}
inline unsigned nvml_mem_temp_c(unsigned d, int64_t ms) {
  return static_cast<unsigned>(50 + d + (ms / 1000) % 20);
}
// Device 1 has no utilization (NVML_ERROR_NOT_SUPPORTED): its cells are empty.
inline bool nvml_has_util(unsigned d) {
  return static_cast<bool>(d != 1);
}

// AMD SMI: power in W, the energy counter in units of kAmdResolutionUj micro-joules.
constexpr float kAmdResolutionUj = 15.25f;
inline uint32_t amd_power_w(unsigned d, int64_t ms) {
  return static_cast<uint32_t>(200 + 10 * d + ms % 97);
}
inline uint64_t amd_energy_count(unsigned d, int64_t ms) {
  return static_cast<uint64_t>(static_cast<uint64_t>(ms) * 4 * (d + 1));
}
inline uint32_t amd_gfx_mhz(unsigned d, int64_t ms) {
  return static_cast<uint32_t>(1200 + 5 * d + ms % 300);
}
inline uint32_t amd_mem_mhz(unsigned, int64_t ms) {
  return static_cast<uint32_t>(900 + (ms / 10) % 50);
}
// Device 1 has no edge sensor (as MI300): temp_c is its hotspot.
inline int64_t amd_edge_c(unsigned d, int64_t ms) {
  return static_cast<int64_t>(40 + d + (ms / 100) % 30);
}
inline int64_t amd_hotspot_c(unsigned, int64_t ms) {
  return static_cast<int64_t>(60 + (ms / 100) % 30);
}
inline int64_t amd_vram_c(unsigned, int64_t ms) {
  return static_cast<int64_t>(70 + (ms / 1000) % 10);
}
inline uint32_t amd_gfx_pct(unsigned d, int64_t ms) {
  return static_cast<uint32_t>((ms + d) % 101);
}
inline uint32_t amd_umc_pct(unsigned, int64_t ms) {
  return static_cast<uint32_t>((ms / 3) % 101);
}

}  // namespace standin
