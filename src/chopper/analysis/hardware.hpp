#pragma once
// The hardware view: telemetry and counters per activity and hierarchy node, power and energy,
// the waterfall and what-ifs (analysis/hardware.cpp, analysis/waterfall.cpp). docs/metrics.md,
// "Hardware".
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "chopper/analysis/label_key.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// Hardware view of one GPU activity (kernel_hw): telemetry at its time and its counters. NaN =
// not recorded.
struct KernelHw {
  int32_t row = -1;  // GPU activity row of the rank
  double clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double temp_c = std::numeric_limits<double>::quiet_NaN();
  // Counters (analysis/hardware.cpp, CounterMap): cycles at the clock run, matrix-unit busy
  // cycles, issued matrix FLOPs of the peak's dtype, CUDA-core FLOPs.
  double active_cycles = std::numeric_limits<double>::quiet_NaN();
  double matrix_busy_cycles = std::numeric_limits<double>::quiet_NaN();
  double matrix_flops = std::numeric_limits<double>::quiet_NaN();
  double vector_flops = std::numeric_limits<double>::quiet_NaN();
  // active_cycles ÷ duration, when the counters were taken in the traced run itself.
  double counter_clock_mhz = std::numeric_limits<double>::quiet_NaN();
};

// The waterfall of one compute kernel (Chopper's overhead breakdown, made additive): observed =
// theoretical + instruction + utilization + overlap + frequency + residual. docs/metrics.md.
struct WaterfallUnit {
  int32_t row = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  std::string_view signature;  // kernel, operation, phase, FLOPs: instances of the same work
  Ns observed_ns = 0;
  double theoretical_ns = 0;  // FLOPs (or bytes) at peak rate and maximum clock
  double issued_ns = 0;       // issued matrix work at peak (counters), else = theoretical
  double active_ns = 0;       // the kernel's cycles at the maximum clock
  double overlap_share = 0;   // of its time, with communication running on the GPU
  bool compute_bound = true;
  bool theoretical_known = false, instruction_known = false, frequency_known = false;
  // finalize: the parts
  double instruction_ns = 0, utilization_ns = 0, overlap_ns = 0, frequency_ns = 0, residual_ns = 0;
  // The compute-loss split of utilization (docs/metrics.md, Waterfall): the work's shape class
  // (operation, input shapes and types; "" = cost unknown), its FLOPs and bytes (the op's, shared
  // by duration), the time at the achievable rate (partial: the roofline at the documented
  // achievable efficiencies; finalize: the better of that and the class's best in the run, never
  // below the run's shortest kernel), and the part of utilization beyond it (finalize).
  std::string_view shape_class;
  double flops = 0, bytes = 0;
  double achievable_ns = 0, below_achievable_ns = 0;
  bool overlap_known = false;
  bool overlap_estimated = false;  // no reference of its own: the run's slowdown rate applied
};

// Power and energy of one rank over an iteration window (phase "" = the whole window; "idle" =
// no GPU activity), from aligned telemetry.
struct PowerRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  std::string phase;
  Ns time_ns = 0;
  double energy_j = 0;
  double peak_power_w = std::numeric_limits<double>::quiet_NaN();
  double mean_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double max_temp_c = std::numeric_limits<double>::quiet_NaN();
  double max_hotspot_c = std::numeric_limits<double>::quiet_NaN();
  double max_mem_temp_c = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, Ns> throttle_ns;                           // by reason name
  double busy_power_w = std::numeric_limits<double>::quiet_NaN();  // mean over busy samples
  double idle_power_w = std::numeric_limits<double>::quiet_NaN();  // mean over idle samples
  // Whole-window rows only (NaN elsewhere or when not recorded):
  double power_cv = std::numeric_limits<double>::quiet_NaN();           // σ / mean of the samples
  double max_dp_dt_w_per_s = std::numeric_limits<double>::quiet_NaN();  // largest |Δp| / Δt
  double max_clock_share = std::numeric_limits<double>::quiet_NaN();    // samples at ≥ 99% f_max
  double energy_counter_j = std::numeric_limits<double>::quiet_NaN();   // Δ of the energy counter
  double link_tx_bytes = std::numeric_limits<double>::quiet_NaN();      // Δ NVLink / XGMI sent
  double link_rx_bytes = std::numeric_limits<double>::quiet_NaN();
  double pcie_tx_bytes = std::numeric_limits<double>::quiet_NaN();
  double pcie_rx_bytes = std::numeric_limits<double>::quiet_NaN();
};

// Hardware view of one hierarchy node of one rank (hierarchy_hw): each moment of GPU time is
// given to the activity that started first and covers it (as the phase rows of PowerRow), and
// summed over the node's activities. level: "gpu", "iteration", "phase", "layer", "operation".
struct HwLevelRow {
  int64_t rank = -1;
  const char* level = "gpu";
  LabelKey key;
  Ns time_ns = 0;  // GPU time given to the node
  double energy_j = 0;
  double clock_mhz_ns = 0;  // ∫ clock dt over the time with clock samples
  Ns clock_ns = 0;
  double max_temp_c = std::numeric_limits<double>::quiet_NaN();
};

// The operation of the waterfall's rows of kernels that no operation launched.
inline constexpr std::string_view kUnlabelledOperation = "(unlabelled)";

// Waterfall parts summed over a group (an operation instance, a phase of an iteration).
struct WaterfallRow {
  int64_t rank = -1;
  LabelKey key;  // operation "" = every operation of the phase; phase kNone = the iteration
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns observed_ns = 0;
  double theoretical_ns = 0, instruction_ns = 0, utilization_ns = 0, overlap_ns = 0,
         frequency_ns = 0, residual_ns = 0;
  double below_achievable_ns = 0;  // of utilization_ns: beyond the achievable time (the loss)
  uint64_t unknown_theoretical = 0, unknown_instruction = 0, unknown_overlap = 0,
           unknown_frequency = 0;  // kernels whose part could not be measured
  uint64_t estimated_overlap = 0;  // of unknown_overlap: estimated with the run's slowdown rate
};

// Achievable efficiencies (docs/metrics.md, Waterfall): the share of the datasheet peak that tuned
// libraries reach on large, well-shaped work (cuBLAS/hipBLASLt GEMMs and flash attention 70–80% of
// the dense matrix peak, streaming kernels ~80% of HBM bandwidth), and half the vector peak.
inline constexpr double kAchievableMatrix = 0.75;
inline constexpr double kAchievableVector = 0.5;
inline constexpr double kAchievableBandwidth = 0.8;

// One shape class of compute work over the run (all ranks): what it achieves against its
// roofline, the best instances of the class and the achievable efficiency (docs/metrics.md,
// Waterfall).
struct ShapeClassRow {
  std::string shape_class;  // operation, input dims, input types
  std::string family;       // gemm, attention_fwd, ... (flops.hpp)
  bool compute_bound = true;
  uint64_t kernels = 0;
  double time_ns = 0;         // Σ solo time at the maximum clock (the waterfall's reference)
  double theoretical_ns = 0;  // Σ roofline time
  double achievable_ns = 0;   // Σ time at the achievable rate
  double below_achievable_ns = 0;
  double flops = 0, bytes = 0;
  double roofline_share = 0;       // theoretical_ns / time_ns
  double best_roofline_share = 0;  // p90 over the class's kernels of theoretical / reference
  // median over the class's kernels of theoretical / reference: what the work typically reaches
  // in this run (the class's achievable reference: docs/metrics.md, Waterfall)
  double median_roofline_share = 0;
};

// What an iteration would take (slowest rank), first order: one loss removed at a time.
struct WhatIfRow {
  int64_t iteration = 0;
  int64_t rank = -1;
  Ns observed_ns = 0;
  Ns max_clock_ns = -1;            // compute at the maximum clock (-1: clocks unknown)
  Ns perfect_overlap_ns = 0;       // no exposed communication
  Ns no_launch_gaps_ns = 0;        // no launch overhead
  Ns no_overlap_slowdown_ns = -1;  // compute not slowed by co-running communication
  Ns no_straggler_ns = 0;          // the straggler running like the median rank (StragglerCost)
};

}  // namespace chopper
