#pragma once
// Launch overhead, idle causes, launch statistics and queue length of one rank
// (analysis/launch.cpp, launch_partial). docs/metrics.md, "Launch overhead".
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/analysis/label_key.hpp"
#include "chopper/base/time.hpp"

namespace chopper {

// A runtime or driver call that blocks the host until the GPU is done: a synchronize, or a copy
// that is not async (cudaMemcpy, hipMemcpy, cuMemcpyDtoH_v2).
bool blocking_call(std::string_view name);

// Launch overhead per label (Chopper's prep/call split, with waits on other GPU work removed).
// docs/metrics.md ("Launch overhead"): gap = gpu_wait + prep + call + wait + graph + no_launch.
struct LaunchRow {
  int64_t rank = -1;
  LabelKey key;
  uint64_t kernels = 0, gaps = 0;
  Ns gap_ns = 0;        // GPU idle before the kernel (between compute kernels)
  Ns gpu_wait_ns = 0;   // of which communication or copies ran (not launch overhead)
  Ns prep_ns = 0;       // of the rest: before the host issued the launch (host late)
  Ns call_ns = 0;       // of the rest: launch call start to kernel start (launch latency), up to
                        // the call's end + the launch-delay cutoff
  Ns wait_ns = 0;       // of the rest: later still (launched, GPU idle: an event, a sync)
  Ns graph_ns = 0;      // of the rest: before a kernel of a graph launch after its first kernel
                        // started (the GPU between the graph's kernels, not the host)
  Ns no_launch_ns = 0;  // of the rest: kernel with no launch in the trace (cannot split)
  Ns overhead_ns() const { return prep_ns + call_ns; }
};

// What the host was doing while the GPU sat idle waiting for it, per rank, iteration window and
// end-to-end component (launch.cpp; docs/metrics.md, "Idle causes"): the host-side pieces of the
// gaps between compute kernels, each given to the cause its host frames show.
struct IdleCauseRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  std::string cause;  // the end-to-end component: data_loading, host_sync, host_optimizer,
                      // host_stall, host_late or launch_overhead
  uint64_t gaps = 0;  // gaps between compute kernels with time of this cause in the window
  Ns idle_ns = 0;     // Σ of it: equals the component of the window
  Ns median_gap_ns = 0, max_gap_ns = 0;  // of the cause's time per gap
  // The host frames that cover it, largest first (at most 5): name, ns.
  std::vector<std::pair<std::string, Ns>> frames;
};

// HTA's launch statistics, per rank, one row per launch call: a graph launch is one launch (its
// call duration counted once), its delay to the first of its activities.
struct LaunchStats {
  int64_t rank = -1;
  uint64_t launches = 0;                              // launch calls with at least one GPU activity
  uint64_t activities = 0;                            // GPU activities with a launch call
  uint64_t graph_launches = 0, graph_activities = 0;  // of those: graph launches, their activities
  Ns cpu_mean_ns = 0, cpu_p50_ns = 0, cpu_p95_ns = 0, cpu_max_ns = 0;
  Ns delay_mean_ns = 0, delay_p50_ns = 0, delay_p95_ns = 0, delay_max_ns = 0;
  uint64_t short_kernels = 0, runtime_outliers = 0, delay_outliers = 0;
};

struct QueueRow {
  int64_t rank = -1;
  int32_t device = -1;
  int64_t stream = -1;
  uint64_t launches = 0;  // launch calls with an activity on the stream (a graph launch once)
  int64_t max_queue = 0;
  double mean_queue = 0;  // time-weighted, from the first launch to the last start
  Ns full_ns = 0;         // time with queue length >= queue_full
};

}  // namespace chopper
