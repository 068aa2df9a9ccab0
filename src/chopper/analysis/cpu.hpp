#pragma once
// The CPU side of a run recorded by `chopper record` (analysis/cpu.cpp): per rank and iteration,
// the host's CPU utilization, the rank process's and its data-loader workers' CPU time, and the
// cores left idle while the GPU waits for the host. docs/metrics.md, "CPU utilization".
#include <cstdint>
#include <limits>
#include <string>

#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// One rank's iteration window (cpu_utilization). NaN / -1 = not measurable (no sample covers the
// window, or the rank's process is not in the threads file).
struct CpuRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  std::string host;
  int64_t pid = -1;  // the rank's process (RankHardware::cpu_pid)
  Ns window_ns = 0;  // the iteration window's length
  int64_t cpus = 0;  // logical CPUs in the host's cpu file
  // The host, time-weighted over the window's part that cpu samples cover; utilization is the
  // mean over CPUs, busy cores the sum of util / 100.
  double host_util_pct = std::numeric_limits<double>::quiet_NaN();
  double host_user_pct = std::numeric_limits<double>::quiet_NaN();
  double host_system_pct = std::numeric_limits<double>::quiet_NaN();
  double host_iowait_pct = std::numeric_limits<double>::quiet_NaN();
  double host_busy_cores = std::numeric_limits<double>::quiet_NaN();
  // The rank's process: Σ over its threads of the CPU time in the window; the main thread's
  // (tid == pid) share of the window.
  Ns process_cpu_time_ns = -1;
  double process_cores = std::numeric_limits<double>::quiet_NaN();
  double main_thread_busy_share = std::numeric_limits<double>::quiet_NaN();
  // The data-loader workers (the rank's child processes; only those naming a thread
  // pt_data_worker when any does): their CPU time, the cores it takes, its share of one core per
  // worker, and the busiest worker's share of its core.
  int64_t workers = 0;
  Ns worker_cpu_time_ns = -1;
  double worker_cores = std::numeric_limits<double>::quiet_NaN();
  double worker_busy_share = std::numeric_limits<double>::quiet_NaN();
  double busiest_worker_share = std::numeric_limits<double>::quiet_NaN();
  // While the GPU waits for the host (the host side of the launch gaps: launch_overhead's prep
  // and call time, whatever its cause): how long, and the host's utilization and idle cores then.
  Ns host_wait_ns = 0;
  double host_wait_util_pct = std::numeric_limits<double>::quiet_NaN();
  double host_wait_idle_cores = std::numeric_limits<double>::quiet_NaN();
};

// The host-wait and worker thresholds of the CPU findings (analysis/findings.cpp; docs/metrics.md,
// Findings): the host's cores mostly idle, one thread doing the work, the workers saturated.
inline constexpr double kHostMostlyIdlePct = 50;
inline constexpr double kMainThreadSerialShare = 0.8;
inline constexpr double kWorkersSaturatedShare = 0.9;

}  // namespace chopper
