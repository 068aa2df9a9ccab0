#pragma once
// The hardware's tables and terminal lines: how telemetry and counters were placed
// (telemetry_alignment, counter_join), the aligned samples (telemetry), per-activity hardware
// metrics (kernel_hw), power and energy per rank, iteration and phase (power_energy), the
// waterfall per operation instance, phase and iteration (waterfall), the shape classes
// (shape_classes) and the what-if iteration times (what_if). The tables that are not per-rank are
// declared once below (their columns in docs/schema.md come from these declarations); formulas:
// docs/metrics.md. Renders only.
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

namespace hw_tables {}  // namespace hw_tables

// ---- The hardware tables, each declared once (model/table_def.hpp).

// A telemetry file's placement with its ranks in words.
struct TelemetryAlignmentRow {
  const TelemetryAlignment* row = nullptr;
  std::string ranks;  // "0,1,..."
};

inline constexpr auto kTelemetryAlignmentTable = table<TelemetryAlignmentRow>(
    "telemetry_alignment",
    "Each telemetry file: the node and ranks it describes, and the offset that puts it on their "
    "trace clock (docs/metrics.md, Hardware alignment)",
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::file>("file", "telemetry file",
                                                                    kNever),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::format>(
        "format", "nvidia-smi, amd-smi, rocm-smi, dcgmi, zeus, chopper-record", kNever),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::node>(
        "node", "node index (ranks node × GPUs per node …)", kNever),
    column<TelemetryAlignmentRow>("ranks", ColType::kText,
                                  "ranks whose GPU the file describes, comma-separated",
                                  "the file describes no rank's GPU",
                                  [](const TelemetryAlignmentRow& a) { return opt_text(a.ranks); }),
    column<TelemetryAlignmentRow>(
        "clock", ColType::kText,
        "the file's clock: realtime_utc, realtime_local, monotonic, relative", kNever,
        [](const TelemetryAlignmentRow& a) { return Cell::of(clock_domain_name(a.row->clock)); }),
    column<TelemetryAlignmentRow>(
        "offset_ns", ColType::kInt, "telemetry clock − trace clock, subtracted from every sample",
        "not aligned (method 'none: …')",
        [](const TelemetryAlignmentRow& a) {
          return a.row->aligned() ? Cell::of(a.row->offset_ns) : Cell::null();
        }),
    column<TelemetryAlignmentRow>(
        "uncertainty_ns", ColType::kInt,
        "half-width of the offsets the correlation cannot tell apart (recorder clock: half "
        "a sample period; trace clock: 0)",
        "not aligned (method 'none: …')",
        [](const TelemetryAlignmentRow& a) {
          return a.row->aligned() ? Cell::of(a.row->uncertainty_ns) : Cell::null();
        }),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::period_ns>(
        "period_ns",
        "median interval of the file's own samples (of its non-cumulative metrics when it has "
        "any: chopper record reads energy and link counters less often)",
        kNever),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::correlation>(
        "correlation",
        "Pearson r of trace busy share vs utilization (or power) at offset_ns, in [-1, 1]",
        "nothing was correlated (the file was not placed by correlation), or no sample varied"),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::method>(
        "method",
        "how the offset was found: utc+correlation, zone+correlation, correlation, recorder "
        "clock or trace clock (nsys session) (with any caveat in parentheses); 'none: <why>' = "
        "not aligned",
        kNever),
    viewed_column<TelemetryAlignmentRow, &TelemetryAlignment::samples>(
        "samples", "samples of the series compared", kNever));

inline constexpr auto kCounterJoinTable = table<CounterJoin>(
    "counter_join", "Each counter file: its rank and how its dispatches joined kernels",
    column<&CounterJoin::file>("file", "counter file", kNever),
    column<CounterJoin>("rank", ColType::kInt, "the rank the file was given to",
                        "no rank found for the file (method says why)",
                        [](const CounterJoin& j) { return opt_rank(j.rank); }),
    column<&CounterJoin::dispatches>("dispatches", "dispatch rows in the file", kNever),
    column<&CounterJoin::matched>("matched", "dispatches joined to a kernel of the rank's trace",
                                  kNever),
    column<CounterJoin>(
        "match_rate", ColType::kReal, "matched / dispatches", "the file has no dispatch rows",
        [](const CounterJoin& j) {
          return j.dispatches > 0
                     ? Cell::of(static_cast<double>(j.matched) / static_cast<double>(j.dispatches))
                     : Cell::null();
        }),
    column<&CounterJoin::ambiguous>("ambiguous", "dispatches or kernels left over or claimed twice",
                                    kNever),
    column<&CounterJoin::method>("method",
                                 "correlation id, or kernel name + order (Chopper); 'none: <why>' "
                                 "= refused, no counter of the file used",
                                 kNever),
    column<CounterJoin>(
        "offset_ns", ColType::kInt, "counter clock − trace clock (median over matched dispatches)",
        "refused (method 'none: …')",
        [](const CounterJoin& j) {
          return j.method.rfind("none", 0) != 0 ? Cell::of(j.offset_ns) : Cell::null();
        }),
    column<&CounterJoin::name_match_rate>(
        "name_match_rate",
        "of the dispatches the join paired with a kernel (a refused file: the pairing tried), the "
        "share whose kernel names agree",
        "no dispatch was paired with a kernel"));

// A power_energy row: the rank's PowerRow and what the table derives from it.
struct PowerEnergyRow {
  const PowerRow* row = nullptr;
  int64_t rank = -1;
  std::string throttle_ns;                                   // 'reason=ns,…'
  double mean_power_w = 0, tokens_per_j = 0, link_util = 0;  // NaN = not known
};

inline constexpr auto kPowerEnergyTable = table<PowerEnergyRow>(
    "power_energy",
    "Power and energy of each rank's GPU per iteration window (phase NULL) and per phase (GPU "
    "time of that phase's activities; idle = no activity), from aligned telemetry",
    column<&PowerEnergyRow::rank>("rank", "rank", kNever),
    column<PowerEnergyRow>("iteration", ColType::kInt, "iteration window", kNever,
                           [](const PowerEnergyRow& p) { return opt_iter(p.row->iteration); }),
    column<PowerEnergyRow>(
        "phase", ColType::kText, "forward, backward, optimizer, other, data_dist, idle",
        "the whole window", [](const PowerEnergyRow& p) { return opt_text(p.row->phase); }),
    viewed_column<PowerEnergyRow, &PowerRow::time_ns>(
        "time_ns", "time in the window (phase rows: GPU time of the phase)", kNever),
    viewed_column<PowerEnergyRow, &PowerRow::energy_j>(
        "energy_j", "∫ power dt (each sample holds over the interval ending at it)", kNever),
    column<&PowerEnergyRow::mean_power_w>("mean_power_w", "energy_j ÷ time_ns", "time_ns = 0"),
    viewed_column<PowerEnergyRow, &PowerRow::peak_power_w>(
        "peak_power_w", "largest sample in the window", "a phase row"),
    column<PowerEnergyRow>(
        "peak_to_mean", ColType::kReal, "peak_power_w ÷ mean_power_w (CharLLM-PPT's burstiness)",
        "peak_power_w or mean_power_w is NULL",
        [](const PowerEnergyRow& p) { return opt_real(p.row->peak_power_w / p.mean_power_w); }),
    viewed_column<PowerEnergyRow, &PowerRow::busy_power_w>(
        "busy_power_w", "mean of samples whose interval the GPU was ≥ 90% busy",
        "a phase row, or no such sample (or fewer than two power samples)"),
    viewed_column<PowerEnergyRow, &PowerRow::idle_power_w>(
        "idle_power_w", "mean of samples whose interval the GPU was ≤ 10% busy",
        "a phase row, or no such sample (or fewer than two power samples)"),
    viewed_column<PowerEnergyRow, &PowerRow::mean_clock_mhz>(
        "mean_clock_mhz", "SM/GFX clock, time-weighted", "a phase row, or no clock series"),
    viewed_column<PowerEnergyRow, &PowerRow::max_temp_c>(
        "max_temp_c", "GPU (edge) temperature, largest sample",
        "a phase row, or no GPU temperature series"),
    viewed_column<PowerEnergyRow, &PowerRow::max_hotspot_c>(
        "max_hotspot_c", "hotspot temperature, largest sample",
        "a phase row, or no hotspot temperature series"),
    viewed_column<PowerEnergyRow, &PowerRow::max_mem_temp_c>(
        "max_mem_temp_c", "memory temperature, largest sample",
        "a phase row, or no memory temperature series"),
    column<PowerEnergyRow>("throttle_ns", ColType::kText,
                           "time under each throttle reason: 'reason=ns,…'",
                           "a phase row, or no throttle reason recorded in the window",
                           [](const PowerEnergyRow& p) { return opt_text(p.throttle_ns); }),
    with_unit(column<&PowerEnergyRow::tokens_per_j>(
                  "tokens_per_j", "tokens per step ÷ (energy_j × ranks)",
                  "a phase row, no tokens per step given, or energy_j = 0"),
              "tokens/J"),
    viewed_column<PowerEnergyRow, &PowerRow::power_cv>(
        "power_cv", "σ ÷ mean of the power samples in the window (burstiness)",
        "a phase row, fewer than two power samples in the window, or their mean ≤ 0"),
    with_unit(viewed_column<PowerEnergyRow, &PowerRow::max_dp_dt_w_per_s>(
                  "max_dp_dt_w_per_s", "steepest change between consecutive power samples",
                  "a phase row, or fewer than two power samples in the window"),
              "W/s"),
    viewed_column<PowerEnergyRow, &PowerRow::max_clock_share>(
        "max_clock_share", "share of clock samples at ≥ 99% of the maximum clock",
        "a phase row, no clock series or maximum clock, or no clock sample in the window"),
    viewed_column<PowerEnergyRow, &PowerRow::energy_counter_j>(
        "energy_counter_j", "growth of the GPU's energy counter (cross-check of energy_j)",
        "a phase row, or no energy counter"),
    viewed_column<PowerEnergyRow, &PowerRow::link_tx_bytes>(
        "link_tx_bytes", "NVLink / XGMI bytes sent (counter growth)",
        "a phase row, or no such counter"),
    viewed_column<PowerEnergyRow, &PowerRow::link_rx_bytes>(
        "link_rx_bytes", "NVLink / XGMI bytes received (counter growth)",
        "a phase row, or no such counter"),
    column<&PowerEnergyRow::link_util>(
        "link_util",
        "max(link_tx_bytes, link_rx_bytes) ÷ time ÷ the device's per-direction link bandwidth",
        "both link byte counts NULL, or the device's link bandwidth unknown"),
    viewed_column<PowerEnergyRow, &PowerRow::pcie_tx_bytes>(
        "pcie_tx_bytes", "PCIe bytes sent (counter growth)", "a phase row, or no such counter"),
    viewed_column<PowerEnergyRow, &PowerRow::pcie_rx_bytes>("pcie_rx_bytes",
                                                            "PCIe bytes received (counter growth)",
                                                            "a phase row, or no such counter"));

inline constexpr auto kWaterfallTable = table<WaterfallRow>(
    "waterfall",
    "The gap from theoretical to observed compute time, per operation instance, per phase of an "
    "iteration (operation NULL) and per iteration (phase and operation NULL); the parts add up to "
    "observed_ns. The kernels no operation launched have a row per class, operation "
    "'(unlabelled)'",
    column<&WaterfallRow::rank>("rank", "rank", kNever), label_columns<&WaterfallRow::key>(),
    column<WaterfallRow>("op_class", ColType::kText, "class of the operation",
                         "not an operation row (operation NULL), or the operation has no class",
                         [](const WaterfallRow& w) {
                           return w.key.operation.empty() ? Cell::null()
                                                          : opt_text(op_class_name(w.op_class));
                         }),
    column<&WaterfallRow::kernels>("kernels", "compute kernels summed", kNever),
    column<&WaterfallRow::observed_ns>("observed_ns", "Σ kernel durations", kNever),
    column<&WaterfallRow::theoretical_ns>(
        "theoretical_ns", "FLOPs at peak (or bytes at peak bandwidth) at the max clock", kNever),
    column<&WaterfallRow::instruction_ns>(
        "instruction_ns", "issued matrix work beyond the theoretical (counters)", kNever),
    column<&WaterfallRow::utilization_ns>(
        "utilization_ns", "solo cycles at max clock beyond the issued work", kNever),
    column<&WaterfallRow::overlap_ns>(
        "overlap_ns", "cycles beyond solo instances of the same work, beside comm", kNever),
    column<&WaterfallRow::frequency_ns>(
        "frequency_ns", "the same cycles at the clock run vs the max clock", kNever),
    column<&WaterfallRow::residual_ns>(
        "residual_ns",
        "observed − the parts: the time of kernels with no FLOPs/bytes "
        "known, and any utilization clamped at 0",
        kNever),
    column<&WaterfallRow::unknown_theoretical>(
        "unknown_theoretical", "kernels without FLOPs/bytes (theoretical 0)", kNever),
    column<&WaterfallRow::unknown_instruction>(
        "unknown_instruction", "kernels without issued-work counters (instruction 0)", kNever),
    column<&WaterfallRow::unknown_overlap>(
        "unknown_overlap", "kernels beside comm with no solo instance to compare", kNever),
    column<&WaterfallRow::estimated_overlap>(
        "estimated_overlap", "of those: overlap from the run's slowdown rate", kNever),
    column<&WaterfallRow::unknown_frequency>(
        "unknown_frequency", "kernels with no clock or cycle counter (frequency 0)", kNever),
    column<&WaterfallRow::below_achievable_ns>(
        "below_achievable_ns",
        "of utilization_ns, the time beyond what is achievable for the same work (the better of "
        "the roofline at the achievable efficiency and the median of its shape class in the run): "
        "the compute loss a user can act on",
        kNever));

namespace hw_tables {
// Achieved FLOP/s or bytes/s of a shape class in units of 10^12, NULL when it took no time.
inline Cell per_ps(double amount, double time_ns) {
  const double secs = time_ns * 1e-9;
  return secs > 0 ? Cell::of(amount / secs * 1e-12) : Cell::null();
}
}  // namespace hw_tables

inline constexpr auto kShapeClassesTable = table<ShapeClassRow>(
    "shape_classes",
    "Compute work by shape class (operation, input dims and types; all ranks): what it achieves "
    "against its roofline, its best kernels and the achievable efficiency, and the time lost "
    "against what is achievable (docs/metrics.md, Waterfall); largest loss first",
    column<&ShapeClassRow::shape_class>("shape_class",
                                        "cost family, operation, input dims, input types", kNever),
    column<&ShapeClassRow::family>(
        "family", "gemm, attention_fwd, attention_bwd, conv, norm, elementwise", kNever),
    column<ShapeClassRow>(
        "bound", ColType::kText,
        "compute or memory (the longer of FLOPs at peak and bytes at bandwidth)", kNever,
        [](const ShapeClassRow& c) { return Cell::of(c.compute_bound ? "compute" : "memory"); }),
    column<&ShapeClassRow::kernels>("kernels", "compute kernels", kNever),
    column<&ShapeClassRow::time_ns>(
        "time_ns", "Σ solo time at the maximum clock (the waterfall's reference)", kNever),
    column<&ShapeClassRow::theoretical_ns>(
        "theoretical_ns", "Σ roofline time (FLOPs at peak or bytes at peak bandwidth)", kNever),
    column<&ShapeClassRow::achievable_ns>(
        "achievable_ns",
        "Σ achievable time: the better of the roofline at the achievable efficiency and the "
        "class's median roofline share, never below the run's shortest kernel",
        kNever),
    column<&ShapeClassRow::below_achievable_ns>(
        "below_achievable_ns", "Σ time beyond the achievable (the compute loss)", kNever),
    column<&ShapeClassRow::flops>("flops", "Σ FLOPs", kNever),
    column<&ShapeClassRow::bytes>("bytes", "Σ bytes moved", kNever),
    column<ShapeClassRow>(
        "achieved_tflops", ColType::kReal, "flops / time_ns", "time_ns = 0",
        [](const ShapeClassRow& c) { return hw_tables::per_ps(c.flops, c.time_ns); }),
    column<ShapeClassRow>(
        "achieved_tbs", ColType::kReal, "bytes / time_ns", "time_ns = 0",
        [](const ShapeClassRow& c) { return hw_tables::per_ps(c.bytes, c.time_ns); }),
    column<&ShapeClassRow::roofline_share>("roofline_share",
                                           "theoretical_ns / time_ns (0 when time_ns = 0)", kNever),
    column<&ShapeClassRow::best_roofline_share>(
        "best_roofline_share", "p90 over the class's kernels of theoretical / solo time", kNever),
    column<&ShapeClassRow::median_roofline_share>(
        "median_roofline_share",
        "median over the class's kernels of theoretical / solo time (the class's reference)",
        kNever));

inline constexpr auto kWhatIfTable = table<WhatIfRow>(
    "what_if",
    "Each iteration (its shown rank: iterations.shown_rank) with one loss removed at a time, "
    "first order",
    column<&WhatIfRow::iteration>("iteration", "iteration", kNever),
    column<WhatIfRow>("rank", ColType::kInt, "the rank shown (iterations.shown_rank)",
                      "no rank shown in the iteration",
                      [](const WhatIfRow& w) { return opt_rank(w.rank); }),
    column<&WhatIfRow::observed_ns>("observed_ns", "iteration time", kNever),
    column<WhatIfRow>("max_clock_ns", ColType::kInt, "compute at the maximum clock",
                      "the clock of no compute kernel of the shown rank in the iteration is known",
                      [](const WhatIfRow& w) {
                        return w.max_clock_ns < 0 ? Cell::null() : Cell::of(w.max_clock_ns);
                      }),
    column<&WhatIfRow::perfect_overlap_ns>("perfect_overlap_ns", "no exposed communication",
                                           kNever),
    column<&WhatIfRow::no_launch_gaps_ns>(
        "no_launch_gaps_ns", "no launch overhead: host late and launch latency removed", kNever),
    column<WhatIfRow>(
        "no_overlap_slowdown_ns", ColType::kInt, "compute not slowed beside communication",
        "the slowdown beside communication of no compute kernel of the shown rank in the "
        "iteration could be measured",
        [](const WhatIfRow& w) {
          return w.no_overlap_slowdown_ns < 0 ? Cell::null() : Cell::of(w.no_overlap_slowdown_ns);
        }),
    column<&WhatIfRow::no_straggler_ns>(
        "no_straggler_ns", "the significant straggler running like the median rank (iterations)",
        kNever));

// The per-rank tables among them (telemetry, kernel_hw, hierarchy_hw) take their rows from
// `per_rank` (report/rank_tables.hpp).
void hardware_tables(const RunAnalysis& ra, const AnalysisOptions& o, TableSink& sink,
                     RankRows& per_rank);

// `chopper info`: each telemetry and counter file, what it holds and whom it describes; skipped
// files and unreadable ones.
std::string hardware_info_text(const HardwareRun& hw,
                               const std::vector<std::pair<std::string, std::string>>& skipped,
                               const std::vector<std::string>& errors);

// Terminal lines: what was found and how it was aligned, the waterfall and energy per iteration.
std::string hardware_summary(const RunAnalysis& ra, const AnalysisOptions& o);

}  // namespace chopper
