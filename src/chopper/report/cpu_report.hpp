#pragma once
// The cpu_utilization table (the rows: analysis/cpu.hpp, from `chopper record`'s CPU files),
// declared once below; docs/metrics.md, "CPU utilization". Renders only.
#include "chopper/analysis/analysis.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

inline constexpr auto kCpuUtilizationTable = table<CpuRow>(
    "cpu_utilization",
    "Each rank's iteration window on its host's CPUs, from the CPU files `chopper record` wrote: "
    "the host's utilization, the rank process's and its data-loader workers' CPU time, and the "
    "cores idle while the GPU waits for the host (docs/metrics.md, CPU utilization). Empty without "
    "recorded CPU files",
    column<&CpuRow::rank>("rank", "rank", kNever),
    column<CpuRow>("iteration", ColType::kInt, "iteration window", kNever,
                   [](const CpuRow& r) { return opt_iter(r.iteration); }),
    column<&CpuRow::host>("host", "the host's name in its files' names (<host>.cpu.csv)", kNever),
    column<CpuRow>("pid", ColType::kInt,
                   "the rank's process: the trace's process id found in the host's threads file",
                   "none of the trace's process ids is in the threads file",
                   [](const CpuRow& r) { return opt_rank(r.pid); }),
    column<&CpuRow::window_ns>("window_ns", "the iteration window's length", kNever),
    column<&CpuRow::cpus>("cpus", "logical CPUs in the host's cpu file", kNever),
    column<&CpuRow::host_util_pct>("host_util_pct",
                                   "mean over CPUs and the window of util_pct (time-weighted)",
                                   "no cpu sample covers the window"),
    column<&CpuRow::host_user_pct>("host_user_pct", "the same of user_pct (user + nice)",
                                   "no cpu sample with user_pct covers the window"),
    column<&CpuRow::host_system_pct>("host_system_pct",
                                     "the same of system_pct (system + irq + softirq)",
                                     "no cpu sample with system_pct covers the window"),
    column<&CpuRow::host_iowait_pct>("host_iowait_pct", "the same of iowait_pct",
                                     "no cpu sample with iowait_pct covers the window"),
    column<&CpuRow::host_busy_cores>("host_busy_cores",
                                     "Σ over CPUs of util_pct / 100, mean over the window",
                                     "no cpu sample covers the window"),
    column<CpuRow>("process_cpu_time_ns", ColType::kInt,
                   "CPU time of the rank process's threads in the window",
                   "the rank's process is not in the threads file",
                   [](const CpuRow& r) {
                     return r.process_cpu_time_ns < 0 ? Cell::null()
                                                      : Cell::of(r.process_cpu_time_ns);
                   }),
    column<&CpuRow::process_cores>("process_cores", "process_cpu_time_ns ÷ window_ns",
                                   "the rank's process is not in the threads file"),
    column<&CpuRow::main_thread_busy_share>("main_thread_busy_share",
                                            "CPU time of the main thread (tid = pid) ÷ window_ns",
                                            "the rank's main thread is not in the threads file"),
    column<CpuRow>(
        "workers", ColType::kInt,
        "data-loader worker processes: the rank's child processes (only those naming a thread "
        "pt_data_worker when any does)",
        "the rank's process is not in the threads file",
        [](const CpuRow& r) { return r.pid < 0 ? Cell::null() : Cell::of(r.workers); }),
    column<CpuRow>("worker_cpu_time_ns", ColType::kInt,
                   "CPU time of the workers' threads in the window", "no worker",
                   [](const CpuRow& r) {
                     return r.worker_cpu_time_ns < 0 ? Cell::null()
                                                     : Cell::of(r.worker_cpu_time_ns);
                   }),
    column<&CpuRow::worker_cores>("worker_cores", "worker_cpu_time_ns ÷ window_ns", "no worker"),
    column<&CpuRow::worker_busy_share>("worker_busy_share", "worker_cores ÷ workers", "no worker"),
    column<&CpuRow::busiest_worker_share>(
        "busiest_worker_share", "the busiest worker's CPU time (all its threads) ÷ window_ns",
        "no worker"),
    column<&CpuRow::host_wait_ns>(
        "host_wait_ns",
        "GPU idle waiting for the host in the window: the host side of the launch gaps before "
        "compute kernels (launch_overhead's prep_ns + call_ns)",
        kNever),
    column<&CpuRow::host_wait_util_pct>("host_wait_util_pct",
                                        "host_util_pct over the host_wait_ns time only",
                                        "host_wait_ns = 0, or no cpu sample covers it"),
    column<&CpuRow::host_wait_idle_cores>(
        "host_wait_idle_cores", "Σ over CPUs of (1 − util_pct / 100), mean over host_wait_ns",
        "host_wait_ns = 0, or no cpu sample covers it"));

// Writes cpu_utilization: every rank's rows, in rank order (the table is empty without CPU files).
void cpu_utilization_table(const RunAnalysis& ra, TableSink& sink);

}  // namespace chopper
