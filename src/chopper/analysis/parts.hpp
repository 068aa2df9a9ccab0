#pragma once
// The analyses' steps, as analysis.cpp strings them together (internal to analysis/).
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/flops.hpp"
#include "chopper/analysis/rank_context.hpp"

namespace chopper {

// breakdown.cpp: temporal breakdown, idle by cause, exposed communication per label, operation
// instances with their overlap, kernel/operation/class statistics, compute components.
void breakdown_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out);
// launch.cpp: launch overhead (prep/call), HTA launch statistics, queue length; the launch and
// idle components.
void launch_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out);
// launch.cpp: the GPU waiting for the host, as time: the host-side pieces of the launch gaps
// before compute kernels (launch_overhead's prep and call time, whatever cause the idle causes
// give them), as launch_partial splits them.
Intervals host_wait_intervals(const RankContext& c, const AnalysisOptions& o);
// cpu.cpp: with `chopper record`'s CPU files (hw->cpu), the cpu_utilization rows of each
// iteration window (nothing without them).
void cpu_partial(const RankContext& c, const AnalysisOptions& o, const RankHardware* hw,
                 RankAnalysis& out);
// collectives.cpp: this rank's communication activities as match records.
void collective_partial(const RankContext& c, RankAnalysis& out);

// hardware.cpp: per-kernel telemetry and counters, the waterfall units, power and energy per
// iteration window and phase (nothing without hardware data, except the waterfall's theoretical
// and overlap parts).
void hardware_partial(const RankContext& c, const AnalysisOptions& o, const RankHardware* hw,
                      RankAnalysis& out);

// work.cpp: GPU time, FLOPs and bytes per kernel name, operation and shape class; kernel durations
// per class in log bins.
void work_partial(const RankContext& c, RankAnalysis& out);
// work.cpp: the counters of out.kernel_hw summed per operation (after kernel_hw's rows are made);
// `matrix_units`: the units the matrix busy cycles are summed over (SMs; CUs × 4 SIMDs on AMD),
// 0 = unknown (no busy share).
void counter_partial(const RankContext& c, double matrix_units, RankAnalysis& out);
// work.cpp: a compute kernel's shape class, "family op dims types" (the shapes on one line).
std::string shape_class_name(const RankTrace& t, int32_t op, const OpCost& oc);

// collectives.cpp: matches records across ranks (process group, order), estimates the clock
// offsets from the ends of matched collectives, and computes each collective's cross-rank
// numbers on the aligned clock.
void finalize_collectives(RunAnalysis& ra, const AnalysisOptions& o);
// stragglers.cpp: lead per operation instance and per (rank, iteration).
void finalize_stragglers(RunAnalysis& ra);
// stragglers.cpp: the counterfactual of one iteration from its ranks' breakdown rows.
StragglerCost straggler_cost(int64_t iteration, const std::vector<const BreakdownRow*>& rows);
// end_to_end.cpp: iterations (slowest rank), tokens, FLOPs, MFU; folded name breakdowns.
void finalize_end_to_end(RunAnalysis& ra, const AnalysisOptions& o);

// work.cpp: the work rows summed over ranks (the top_n kernels and operations by time, every shape
// class with the device's peaks), the duration bins and counters per operation of every rank.
void finalize_work(RunAnalysis& ra, const AnalysisOptions& o);

// hardware.cpp: the waterfall's overlap reference (solo instances of the same work over all ranks),
// its parts, their sums per operation instance, phase and iteration; the what-if iteration times.
void finalize_hardware(RunAnalysis& ra, const AnalysisOptions& o);

// end_to_end.cpp: the device a trace names ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"), or
// nullptr.
const DeviceSpec* device_from_name(std::string_view name);

// Offset of `rank` (0 if unknown), from ra.clock_offsets.
Ns clock_offset(const RunAnalysis& ra, int64_t rank);

}  // namespace chopper
