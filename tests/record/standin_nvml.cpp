// A stand-in libnvidia-ml.so.1 for the tests of chopper record: the calls chopper uses, with the
// values of standin_values.hpp. nvmlDeviceGetCurrentClocksEventReasons (optional) is absent, as in
// libraries older than R535; nvmlDeviceGetFieldValues answers the memory temperature only.
// Types as in nvml.h (see src/chopper/record/nvml.cpp).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "standin_values.hpp"

namespace {
struct nvmlDevice_st {
  unsigned index;
};
nvmlDevice_st g_devices[64];
bool g_init = false;
union Value {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};
struct FieldValue {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  int nvmlReturn;
  Value value;
};
constexpr int kSuccess = 0, kUninitialized = 1, kInvalid = 2, kNotSupported = 3;
int check(nvmlDevice_st* d) {
  if (!g_init) return kUninitialized;
  return d == nullptr || d->index >= standin::gpu_count() ? kInvalid : kSuccess;
}
}  // namespace

extern "C" {
using Device = nvmlDevice_st*;
int nvmlInit_v2() {
  g_init = true;
  return kSuccess;
}
int nvmlShutdown() {
  g_init = false;
  return kSuccess;
}
const char* nvmlErrorString(int r) {
  return r == kSuccess ? "Success" : "Stand-in error";
}
int nvmlSystemGetNVMLVersion(char* v, unsigned n) {
  std::snprintf(v, n, "12.999.0-standin");
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  if (!g_init) return kUninitialized;
  *n = standin::gpu_count();
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, Device* d) {
  if (!g_init) return kUninitialized;
  if (i >= standin::gpu_count() || i >= 64) return kInvalid;
  g_devices[i].index = i;
  *d = &g_devices[i];
  return kSuccess;
}
int nvmlDeviceGetName(Device d, char* name, unsigned n) {
  if (int r = check(d)) return r;
  std::snprintf(name, n, "Standin H100 80GB HBM3");
  return kSuccess;
}
int nvmlDeviceGetUUID(Device d, char* uuid, unsigned n) {
  if (int r = check(d)) return r;
  std::snprintf(uuid, n, "GPU-5ad0c0de-0000-4000-8000-%012u", d->index);
  return kSuccess;
}
// STANDIN_LOG=FILE: each power read of device 0 appends a line to FILE as it happens (write(2)),
// an account of the ticks sampled that does not depend on chopper's own files.
void log_read(unsigned index) {
  static const int fd = [] {
    const char* path = std::getenv("STANDIN_LOG");
    return path != nullptr ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
  }();
  if (fd < 0 || index != 0) return;
  char line[32];
  const int n =
      std::snprintf(line, sizeof line, "%lld\n", static_cast<long long>(standin::now_ms()));
  if (write(fd, line, static_cast<size_t>(n)) < 0) return;
}
int nvmlDeviceGetPowerUsage(Device d, unsigned* mw) {
  if (int r = check(d)) return r;
  log_read(d->index);
  *mw = static_cast<unsigned>(standin::nvml_power_mw(d->index, standin::now_ms()));
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(Device d, unsigned long long* mj) {
  if (int r = check(d)) return r;
  *mj = standin::nvml_energy_mj(d->index, standin::now_ms());
  return kSuccess;
}
int nvmlDeviceGetClockInfo(Device d, int type, unsigned* mhz) {
  if (int r = check(d)) return r;
  const int64_t ms = standin::now_ms();
  if (type == 1)
    *mhz = standin::nvml_sm_mhz(d->index, ms);
  else if (type == 2)
    *mhz = standin::nvml_mem_mhz(d->index, ms);
  else
    return kNotSupported;
  return kSuccess;
}
int nvmlDeviceGetTemperature(Device d, int sensor, unsigned* c) {
  if (int r = check(d)) return r;
  if (sensor != 0) return kInvalid;
  *c = standin::nvml_temp_c(d->index, standin::now_ms());
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(Device d, unsigned* util) {
  if (int r = check(d)) return r;
  if (!standin::nvml_has_util(d->index)) return kNotSupported;
  const int64_t ms = standin::now_ms();
  util[0] = standin::nvml_util_gpu(d->index, ms);
  util[1] = standin::nvml_util_mem(d->index, ms);
  return kSuccess;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(Device d, unsigned long long* mask) {
  if (int r = check(d)) return r;
  *mask = standin::nvml_throttle(d->index, standin::now_ms());
  return kSuccess;
}
int nvmlDeviceGetFieldValues(Device d, int count, FieldValue* values) {
  if (int r = check(d)) return r;
  const int64_t ms = standin::now_ms();
  for (int i = 0; i < count; ++i) {
    FieldValue& f = values[i];
    f.timestamp = ms * 1000;
    f.latencyUsec = 0;
    if (f.fieldId == 82) {  // NVML_FI_DEV_MEMORY_TEMP
      f.valueType = 1;
      f.value.uiVal = standin::nvml_mem_temp_c(d->index, ms);
      f.nvmlReturn = kSuccess;
    } else {
      f.nvmlReturn = kNotSupported;
    }
  }
  return kSuccess;
}
}
