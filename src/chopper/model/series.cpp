#include "chopper/model/series.hpp"

namespace chopper {

std::string_view metric_name(Metric m) {
  switch (m) {
    case Metric::kPowerW:
      return "power_w";
    case Metric::kPowerAvgW:
      return "power_avg_w";
    case Metric::kEnergyJ:
      return "energy_j";
    case Metric::kSmClockMhz:
      return "sm_clock_mhz";
    case Metric::kMemClockMhz:
      return "mem_clock_mhz";
    case Metric::kTempGpuC:
      return "temp_gpu_c";
    case Metric::kTempHotspotC:
      return "temp_hotspot_c";
    case Metric::kTempMemC:
      return "temp_mem_c";
    case Metric::kUtilGpuPct:
      return "util_gpu_pct";
    case Metric::kUtilMemPct:
      return "util_mem_pct";
    case Metric::kThrottleReasons:
      return "throttle_reasons";
    case Metric::kLinkTxBytes:
      return "link_tx_bytes";
    case Metric::kLinkRxBytes:
      return "link_rx_bytes";
    case Metric::kPcieTxBytes:
      return "pcie_tx_bytes";
    case Metric::kPcieRxBytes:
      return "pcie_rx_bytes";
  }
  return "";
}

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

std::string_view clock_domain_name(ClockDomain d) {
  switch (d) {
    case ClockDomain::kUnknown:
      return "unknown";
    case ClockDomain::kRealtimeUtc:
      return "realtime_utc";
    case ClockDomain::kRealtimeLocal:
      return "realtime_local";
    case ClockDomain::kMonotonic:
      return "monotonic";
    case ClockDomain::kRelative:
      return "relative";
  }
  return "unknown";
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
