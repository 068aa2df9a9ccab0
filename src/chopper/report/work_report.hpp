#pragma once
// The tables of the work of the GPU time (analysis/work.hpp), each declared once
// (model/table_def.hpp): the top kernels and operations with their achieved rates (top_kernels),
// each shape class against the device's roofline (roofline), kernel durations per rank and class
// in log bins (kernel_durations), hardware counters per operation (counter_operations).
// docs/metrics.md, "Top kernels, roofline and kernel durations"; docs/schema.md.
#include <cmath>

#include "chopper/analysis/analysis.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

namespace work_tables {
// amount ÷ time in units of 10^12 per second; NULL when the time is 0.
inline Cell per_ps(double amount, Ns time_ns) {
  return time_ns > 0 ? Cell::of(amount / (static_cast<double>(time_ns) * 1e-9) * 1e-12)
                     : Cell::null();
}
// The roofline's attainable rate at the row's intensity: min(peak, intensity × bandwidth).
inline double attainable_tflops(const WorkRow& w) {
  if (std::isnan(w.peak_tflops) || std::isnan(w.peak_tbs) || w.bytes <= 0) return std::nan("");
  return std::min(w.peak_tflops, w.flops / w.bytes * w.peak_tbs);
}
}  // namespace work_tables

inline constexpr auto kTopKernelsTable = table<WorkRow>(
    "top_kernels",
    "The kernels (by name) and the operations (by label) with the most GPU time over all ranks, "
    "the top N of each (--top), with the FLOPs and bytes of their compute kernels whose launching "
    "op's cost is known (docs/flops.md) and the rates they achieved",
    column<&WorkRow::level>("level", "kernel or operation", kNever),
    column<&WorkRow::name>("name", "kernel name, or operation label", kNever),
    column<WorkRow>("class", ColType::kText,
                    "kernel: GPU class (compute, communication, memcpy, memset); operation: op "
                    "class of its first activity",
                    "an operation without an op class",
                    [](const WorkRow& w) { return opt_text(w.group); }),
    column<&WorkRow::count>("count", "GPU activities, all ranks", kNever),
    column<&WorkRow::total_ns>("total_ns", "Σ duration, all ranks", kNever),
    column<WorkRow>("mean_ns", ColType::kReal, "total_ns / count", kNever,
                    [](const WorkRow& w) {
                      return Cell::of(w.count ? static_cast<double>(w.total_ns) /
                                                    static_cast<double>(w.count)
                                              : 0.0);
                    }),
    column<&WorkRow::share>("share", "total_ns ÷ Σ duration of every GPU activity of the run",
                            kNever),
    column<&WorkRow::known_ns>(
        "known_ns", "of total_ns: compute kernels whose launching op's FLOPs/bytes are known",
        kNever),
    column<&WorkRow::flops>("flops",
                            "Σ FLOPs of those kernels (the op's, shared among its compute kernels "
                            "by duration)",
                            kNever),
    column<&WorkRow::bytes>("bytes", "Σ bytes moved of those kernels, shared the same way", kNever),
    column<WorkRow>("achieved_tflops", ColType::kReal, "flops / known_ns", "known_ns = 0",
                    [](const WorkRow& w) { return work_tables::per_ps(w.flops, w.known_ns); }),
    column<WorkRow>("achieved_tbs", ColType::kReal, "bytes / known_ns", "known_ns = 0",
                    [](const WorkRow& w) { return work_tables::per_ps(w.bytes, w.known_ns); }));

inline constexpr auto kRooflineTable = table<WorkRow>(
    "roofline",
    "Compute work by shape class (operation, input dims and types; all ranks) on the device's "
    "roofline: its arithmetic intensity and achieved rate, the device's peaks (NULL when the "
    "device is unknown) and the rate attainable at its intensity; most time first",
    column<&WorkRow::name>("shape_class", "cost family, operation, input dims, input types",
                           kNever),
    column<&WorkRow::group>("family", "gemm, attention_fwd, attention_bwd, conv, norm, elementwise",
                            kNever),
    column<&WorkRow::count>("kernels", "compute kernels, all ranks", kNever),
    column<&WorkRow::total_ns>("time_ns", "Σ kernel duration as run", kNever),
    column<&WorkRow::flops>("flops", "Σ FLOPs (the op's, shared among its kernels by duration)",
                            kNever),
    column<&WorkRow::bytes>("bytes", "Σ bytes moved, shared the same way", kNever),
    with_unit(
        column<WorkRow>("intensity_flop_per_byte", ColType::kReal, "flops / bytes", "bytes = 0",
                        [](const WorkRow& w) {
                          return w.bytes > 0 ? Cell::of(w.flops / w.bytes) : Cell::null();
                        }),
        "FLOP/B"),
    column<WorkRow>("achieved_tflops", ColType::kReal, "flops / time_ns", "time_ns = 0",
                    [](const WorkRow& w) { return work_tables::per_ps(w.flops, w.total_ns); }),
    column<WorkRow>("achieved_tbs", ColType::kReal, "bytes / time_ns", "time_ns = 0",
                    [](const WorkRow& w) { return work_tables::per_ps(w.bytes, w.total_ns); }),
    column<&WorkRow::peak_tflops>(
        "peak_tflops",
        "the device's peak for the family: matrix at --dtype (gemm, attention, conv), else vector "
        "fp32, at the maximum clock",
        "the device is unknown"),
    column<&WorkRow::peak_tbs>("peak_tbs", "the device's memory bandwidth",
                               "the device is unknown"),
    column<WorkRow>("attainable_tflops", ColType::kReal,
                    "min(peak_tflops, intensity_flop_per_byte × peak_tbs): the roof at this "
                    "intensity",
                    "the device is unknown, or bytes = 0",
                    [](const WorkRow& w) { return opt_real(work_tables::attainable_tflops(w)); }),
    column<WorkRow>("roof_share", ColType::kReal, "achieved_tflops / attainable_tflops",
                    "attainable_tflops NULL, or time_ns = 0", [](const WorkRow& w) {
                      const double a = work_tables::attainable_tflops(w);
                      if (std::isnan(a) || a <= 0 || w.total_ns <= 0) return Cell::null();
                      return Cell::of(w.flops / (static_cast<double>(w.total_ns) * 1e-9) * 1e-12 /
                                      a);
                    }));

inline constexpr auto kKernelDurationsTable = table<DurationBin>(
    "kernel_durations",
    "Kernel durations per rank and kernel class in log-spaced bins (10 per decade): how many "
    "GPU activities of the class took a duration in [lo_ns, hi_ns)",
    column<&DurationBin::rank>("rank", "rank", kNever),
    column<&DurationBin::kernel_class>(
        "kernel_class",
        "op class of the activity, else its GPU class (compute, communication, ...)", kNever),
    column<&DurationBin::bin>("bin", "floor(log10(dur_ns) × 10); 0 also holds durations under 1 ns",
                              kNever),
    column<DurationBin>("lo_ns", ColType::kReal, "10^(bin / 10)", kNever,
                        [](const DurationBin& b) {
                          return Cell::of(std::pow(10.0, b.bin / double(kDurationBinsPerDecade)));
                        }),
    column<DurationBin>("hi_ns", ColType::kReal, "10^((bin + 1) / 10)", kNever,
                        [](const DurationBin& b) {
                          return Cell::of(
                              std::pow(10.0, (b.bin + 1) / double(kDurationBinsPerDecade)));
                        }),
    column<&DurationBin::kernels>("kernels", "activities in the bin", kNever),
    column<&DurationBin::total_ns>("total_ns", "their Σ duration", kNever));

inline constexpr auto kCounterOperationsTable = table<CounterOpRow>(
    "counter_operations",
    "Hardware counters summed per operation over all ranks (kernel_hw's counters by the "
    "operation that launched each kernel): matrix-unit busy share, counted matrix and vector "
    "rates, the clock the cycle counts imply; most time first",
    column<CounterOpRow>("operation", ColType::kText, "operation label", "no operation label",
                         [](const CounterOpRow& x) { return opt_text(x.operation); }),
    column<CounterOpRow>("op_class", ColType::kText, "op class of its first counted kernel",
                         "unclassified",
                         [](const CounterOpRow& x) { return opt_text(x.op_class); }),
    column<&CounterOpRow::kernels>("kernels", "kernels with a counter recorded", kNever),
    column<&CounterOpRow::dur_ns>("dur_ns", "their Σ duration", kNever),
    column<&CounterOpRow::matrix_busy_cycles>(
        "matrix_busy_cycles",
        "Σ matrix-unit busy cycles, summed over the units (kernels with busy and active cycles; "
        "0 with the device unknown)",
        kNever),
    column<&CounterOpRow::busy_active_cycles>(
        "unit_active_cycles",
        "Σ active cycles × the device's matrix units (SMs; CUs × 4 SIMDs on AMD), same kernels",
        kNever),
    column<CounterOpRow>(
        "matrix_busy_share", ColType::kReal, "matrix_busy_cycles / unit_active_cycles",
        "no kernel with both counters, or the device unknown",
        [](const CounterOpRow& x) {
          return x.busy_active_cycles > 0 ? Cell::of(x.matrix_busy_cycles / x.busy_active_cycles)
                                          : Cell::null();
        }),
    column<&CounterOpRow::matrix_flops>("matrix_flops", "Σ issued matrix FLOPs (counters)", kNever),
    column<CounterOpRow>(
        "matrix_tflops", ColType::kReal, "matrix_flops ÷ Σ duration of the kernels counted",
        "no kernel with the counter",
        [](const CounterOpRow& x) { return work_tables::per_ps(x.matrix_flops, x.matrix_dur_ns); }),
    column<&CounterOpRow::vector_flops>("vector_flops", "Σ CUDA-core FLOPs (SASS counters)",
                                        kNever),
    column<CounterOpRow>(
        "vector_tflops", ColType::kReal, "vector_flops ÷ Σ duration of the kernels counted",
        "no kernel with the counter",
        [](const CounterOpRow& x) { return work_tables::per_ps(x.vector_flops, x.vector_dur_ns); }),
    column<CounterOpRow>("counter_clock_mhz", ColType::kReal,
                         "Σ active cycles ÷ Σ duration of the kernels counted in the traced run",
                         "no cycles counted in the traced run", [](const CounterOpRow& x) {
                           return x.clock_dur_ns > 0
                                      ? Cell::of(x.clock_cycles /
                                                 static_cast<double>(x.clock_dur_ns) * 1000.0)
                                      : Cell::null();
                         }));

// Writes top_kernels, roofline, kernel_durations and counter_operations (each only its rows).
void work_tables_write(const RunAnalysis& ra, TableSink& sink);

// Terminal lines: the operations with the most GPU time (at most `n`), with their share and rate.
std::string top_operations_text(const RunAnalysis& ra, size_t n);

}  // namespace chopper
