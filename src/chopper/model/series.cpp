#include "chopper/model/series.hpp"

namespace chopper {

std::string_view throttle_bit_name(uint32_t bit) {
  switch (bit) {
    case kThrottleGpuIdle:
      return "gpu_idle";
    case kThrottleAppClocks:
      return "app_clocks";
    case kThrottleSwPowerCap:
      return "sw_power_cap";
    case kThrottleHwSlowdown:
      return "hw_slowdown";
    case kThrottleSyncBoost:
      return "sync_boost";
    case kThrottleSwThermal:
      return "sw_thermal";
    case kThrottleHwThermal:
      return "hw_thermal";
    case kThrottleHwPowerBrake:
      return "hw_power_brake";
    case kThrottleDisplayClocks:
      return "display_clocks";
    case kThrottleOther:
      return "other";
    default:
      return "";
  }
}

void CounterTable::drop_rows() {
  if (size() == 0) return;
  dropped_first_pid = first_row_pid();
  dropped_rows += size();
  std::vector<int64_t>().swap(correlation_id);
  std::vector<int64_t>().swap(dispatch_id);
  std::vector<int32_t>().swap(agent);
  std::vector<int64_t>().swap(pid);
  std::vector<std::string>().swap(kernel);
  std::vector<Ns>().swap(start_ns);
  std::vector<Ns>().swap(end_ns);
  std::vector<double>().swap(values);
}

}  // namespace chopper
