#pragma once
// Renders the analyses (analysis/analysis.hpp): one table per result, and the terminal summary of
// findings, largest loss first. docs/schema.md documents every column.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

// ---- The run-wide analysis tables, each declared once (model/table_def.hpp). The per-rank ones
// (temporal_breakdown, idle_breakdown, ...) are in report/rank_tables.hpp.

// The rank column of a row whose member M is a rank (always known).
template <auto M>
constexpr auto rank_column() {
  return column<M>("rank", "rank", kNever);
}

inline constexpr auto kOperationInstancesTable = table<OpInstance>(
    "operation_instances",
    "Compute-operation instances (rank, iteration, phase, layer, operation): span, overlap "
    "with communication (Chopper's overlap ratio, communication as a union), lead",
    rank_column<&OpInstance::rank>(), label_columns<&OpInstance::key>(),
    column<OpInstance>("op_class", ColType::kText, "class of the operation", "unclassified",
                       [](const OpInstance& x) { return opt_text(op_class_name(x.op_class)); }),
    column<&OpInstance::kernels>("kernels", "compute kernels", kNever),
    column<&OpInstance::first_start_ns>("first_start_ns", "first kernel start (rank's clock)",
                                        kNever),
    column<OpInstance>(
        "elapsed_ns", ColType::kInt, "last end − first start", kNever,
        [](const OpInstance& x) { return Cell::of(x.last_end_ns - x.first_start_ns); }),
    column<&OpInstance::kernel_ns>("kernel_ns", "summed kernel time", kNever),
    column<&OpInstance::comm_overlap_ns>("comm_overlap_ns",
                                         "|[first start, last end) ∩ union(comm)|", kNever),
    column<OpInstance>("overlap_ratio", ColType::kReal, "comm_overlap_ns / elapsed_ns",
                       "elapsed_ns = 0",
                       [](const OpInstance& x) {
                         return ratio_cell(x.comm_overlap_ns, x.last_end_ns - x.first_start_ns);
                       }),
    column<&OpInstance::flops>(
        "flops", "FLOPs from the recorded shapes (docs/flops.md); 0 = unknown", kNever),
    column<OpInstance>(
        "lead_ns", ColType::kInt, "latest first start over ranks − own (aligned clocks)",
        "outside any iteration, or no other instance of its label (on one rank only)",
        [](const OpInstance& x) { return x.lead_ns < 0 ? Cell::null() : Cell::of(x.lead_ns); }));

// kernel_breakdown, operation_breakdown and class_breakdown: the rows of a NameStat list.
constexpr auto name_stat_table(std::string_view name, std::string_view doc,
                               std::string_view class_meaning, std::string_view class_null) {
  return table<NameStat>(
      name, doc,
      column<NameStat>("rank", ColType::kInt, "rank", "all ranks",
                       [](const NameStat& s) { return opt_rank(s.rank); }),
      column<&NameStat::name>("name", "name; 'others' = every name below the top N, folded",
                              kNever),
      column<NameStat>("class", ColType::kText, class_meaning, class_null,
                       [](const NameStat& s) { return opt_text(s.group); }),
      column<&NameStat::count>("count", "activities", kNever),
      column<&NameStat::total_ns>("total_ns", "summed duration", kNever),
      column<NameStat>("mean_ns", ColType::kReal, "total_ns / count", kNever,
                       [](const NameStat& s) {
                         return Cell::of(s.count ? static_cast<double>(s.total_ns) /
                                                       static_cast<double>(s.count)
                                                 : 0.0);
                       }),
      column<&NameStat::min_ns>("min_ns", "shortest", kNever),
      column<&NameStat::max_ns>("max_ns", "longest", kNever),
      column<&NameStat::share>("share", "of the GPU activity time of the rank (or run)", kNever));
}

inline constexpr auto kKernelBreakdownTable = name_stat_table(
    "kernel_breakdown", "GPU activities by kernel name, top N per rank and over all ranks",
    "GPU class: compute, communication, memcpy, memset, sync", "the folded 'others' row");
inline constexpr auto kOperationBreakdownTable = name_stat_table(
    "operation_breakdown", "GPU activities by operation label, top N per rank and overall",
    "op class of the operation's first activity",
    "the folded 'others' row, or an operation without an op class");
inline constexpr auto kClassBreakdownTable =
    name_stat_table("class_breakdown", "GPU activities by op class, per rank and overall",
                    "unused (the op class is the name)", "always");

inline constexpr auto kCollectivesTable = table<CollectiveRow>(
    "collectives",
    "Each collective matched across ranks (process group, order within it), on the aligned "
    "clock: latency, arrival and end skew, algorithm and bus bandwidth (NCCL's formulas); a "
    "group of which one rank was loaded (a single-rank trace) lists that rank's collectives "
    "with ranks = 1",
    column<CollectiveRow>("group", ColType::kText, "process group name (or its ranks)",
                          "the default group (neither name nor ranks recorded)",
                          [](const CollectiveRow& x) { return opt_text(x.group); }),
    column<&CollectiveRow::index>("seq", "order within the group", kNever),
    column<CollectiveRow>("type", ColType::kText, "collective the kernel ran", kNever,
                          [](const CollectiveRow& x) { return Cell::of(coll_type_name(x.type)); }),
    column<CollectiveRow>(
        "called", ColType::kText, "collective the framework called", "not recorded",
        [](const CollectiveRow& x) {
          return x.called == CollType::kUnknown ? Cell::null() : Cell::of(coll_type_name(x.called));
        }),
    label_columns<&CollectiveRow::key>(),
    column<&CollectiveRow::ranks>(
        "ranks",
        "ranks that ran it (1: only one rank of its group loaded; latency_ns is then its "
        "duration, waiting included, and the skews are NULL)",
        kNever),
    column<CollectiveRow>("group_size", ColType::kInt, "process group size", "not recorded",
                          [](const CollectiveRow& x) {
                            return x.group_size > 0 ? Cell::of(x.group_size) : Cell::null();
                          }),
    column<CollectiveRow>(
        "size_bytes", ColType::kInt, "message size: output for all-gather, input otherwise",
        "unknown (element count or type not recorded)",
        [](const CollectiveRow& x) { return x.bytes >= 0 ? Cell::of(x.bytes) : Cell::null(); }),
    column<CollectiveRow>("dtype", ColType::kText, "element type", "not recorded",
                          [](const CollectiveRow& x) { return opt_text(x.dtype); }),
    column<CollectiveRow>("algorithm", ColType::kText, "NCCL algorithm from the kernel name",
                          "not in the kernel name",
                          [](const CollectiveRow& x) { return opt_text(x.algorithm); }),
    column<&CollectiveRow::start_ns>("start_ns", "earliest start (aligned)", kNever),
    column<&CollectiveRow::latency_ns>(
        "latency_ns", "shortest duration over ranks (the transfer itself)", kNever),
    column<&CollectiveRow::max_dur_ns>(
        "max_dur_ns", "longest duration (includes waiting for late ranks)", kNever),
    column<CollectiveRow>(
        "arrival_skew_ns", ColType::kInt, "latest start − earliest start", "one rank (ranks = 1)",
        [](const CollectiveRow& x) {
          return x.arrival_skew_ns < 0 ? Cell::null() : Cell::of(x.arrival_skew_ns);
        }),
    column<CollectiveRow>("end_skew_ns", ColType::kInt, "latest end − earliest end",
                          "one rank (ranks = 1)",
                          [](const CollectiveRow& x) {
                            return x.end_skew_ns < 0 ? Cell::null() : Cell::of(x.end_skew_ns);
                          }),
    column<&CollectiveRow::first_rank>("first_rank", "rank that started first", kNever),
    column<&CollectiveRow::last_rank>("last_rank",
                                      "rank that started last (the others waited for it)", kNever),
    column<CollectiveRow>(
        "algbw_gbs", ColType::kReal, "size_bytes / latency_ns", "size unknown or 0, or latency 0",
        [](const CollectiveRow& x) {
          return x.bytes > 0 && x.algbw_gbs > 0 ? Cell::of(x.algbw_gbs) : Cell::null();
        }),
    column<CollectiveRow>(
        "busbw_gbs", ColType::kReal, "algbw × NCCL bus factor of the type and group size",
        "algbw_gbs NULL, group size unknown (ranks = 1), a group of one, or a type without a bus "
        "factor",
        [](const CollectiveRow& x) {
          return x.bytes > 0 && x.busbw_gbs > 0 ? Cell::of(x.busbw_gbs) : Cell::null();
        }),
    column<CollectiveRow>("imbalance", ColType::kReal, "all-to-all: max/mean rank input bytes",
                          "not an all-to-all matched across ranks, or its input sizes unknown",
                          [](const CollectiveRow& x) {
                            return x.imbalance > 0 ? Cell::of(x.imbalance) : Cell::null();
                          }));

// One row of collective_summary: the collectives of one type and message size, their sums.
struct CollectiveSummaryRow {
  std::string type;                        // called, else the kernel's
  int64_t bytes = -1;                      // message size, -1 unknown
  uint64_t count = 0, skews = 0, bws = 0;  // collectives; of which with skews, with busbw
  int64_t ranks = 0;                       // most ranks in one
  double latency_ns = 0, arrival_skew_ns = 0, end_skew_ns = 0, algbw_gbs = 0, busbw_gbs = 0;
};

inline constexpr auto kCollectiveSummaryTable = table<CollectiveSummaryRow>(
    "collective_summary",
    "Collectives per type and message size (matched across ranks, and one rank's where no "
    "other rank of the group was loaded)",
    column<&CollectiveSummaryRow::type>("type", "collective called (else the kernel's)", kNever),
    column<CollectiveSummaryRow>("size_bytes", ColType::kInt, "message size",
                                 "unknown (element count or type not recorded)",
                                 [](const CollectiveSummaryRow& a) {
                                   return a.bytes >= 0 ? Cell::of(a.bytes) : Cell::null();
                                 }),
    column<&CollectiveSummaryRow::count>("count", "collectives", kNever),
    column<&CollectiveSummaryRow::ranks>("ranks", "most ranks in one", kNever),
    column<CollectiveSummaryRow>("latency_mean_ns", ColType::kReal, "mean latency", kNever,
                                 [](const CollectiveSummaryRow& a) {
                                   return Cell::of(a.latency_ns / static_cast<double>(a.count));
                                 }),
    column<CollectiveSummaryRow>("arrival_skew_mean_ns", ColType::kReal,
                                 "mean arrival skew of those on several ranks", "each on one rank",
                                 [](const CollectiveSummaryRow& a) {
                                   return a.skews ? Cell::of(a.arrival_skew_ns /
                                                             static_cast<double>(a.skews))
                                                  : Cell::null();
                                 }),
    column<CollectiveSummaryRow>(
        "end_skew_mean_ns", ColType::kReal, "mean end skew of those on several ranks",
        "each on one rank",
        [](const CollectiveSummaryRow& a) {
          return a.skews ? Cell::of(a.end_skew_ns / static_cast<double>(a.skews)) : Cell::null();
        }),
    column<CollectiveSummaryRow>(
        "algbw_mean_gbs", ColType::kReal, "mean algorithm bandwidth (0 for a latency of 0)",
        "size unknown or 0",
        [](const CollectiveSummaryRow& a) {
          return a.bytes > 0 ? Cell::of(a.algbw_gbs / static_cast<double>(a.count)) : Cell::null();
        }),
    column<CollectiveSummaryRow>(
        "busbw_mean_gbs", ColType::kReal, "mean bus bandwidth of those with one",
        "none has one (collectives.busbw_gbs NULL)", [](const CollectiveSummaryRow& a) {
          return a.bws ? Cell::of(a.busbw_gbs / static_cast<double>(a.bws)) : Cell::null();
        }));

inline constexpr auto kClockOffsetsTable = table<ClockOffset>(
    "clock_offsets",
    "Per-rank clock offsets estimated from the ends of matched collectives; aligned time = rank "
    "time − offset_ns",
    rank_column<&ClockOffset::rank>(),
    column<&ClockOffset::reference_rank>("reference_rank",
                                         "rank whose clock the offset is relative to", kNever),
    column<&ClockOffset::offset_ns>(
        "offset_ns", "median of (own end − reference end), chained across groups", kNever),
    column<&ClockOffset::collectives>("collectives",
                                      "matched collectives of this rank the estimate used", kNever),
    column<&ClockOffset::spread_ns>(
        "spread_ns", "median absolute deviation of the per-collective estimates", kNever),
    column<ClockOffset>("applied", ColType::kInt,
                        "1 if cross-rank metrics used it (|offset| > spread)", kNever,
                        [](const ClockOffset& c) { return Cell::of(c.applied ? 1 : 0); }));

inline constexpr auto kStragglersTable = table<StragglerRow>(
    "stragglers",
    "Chopper's lead per rank and iteration (how far ahead of the latest rank each operation "
    "started, aligned clocks), waits at collectives, and the waiting for a significant "
    "straggler (the counterfactual in iterations)",
    rank_column<&StragglerRow::rank>(),
    column<StragglerRow>("iteration", ColType::kInt, "iteration",
                         "collectives outside any iteration",
                         [](const StragglerRow& s) { return opt_iter(s.iteration); }),
    column<&StragglerRow::op_instances>("op_instances",
                                        "operation instances found on several ranks", kNever),
    column<&StragglerRow::total_lead_ns>("total_lead_ns", "Σ lead", kNever),
    column<&StragglerRow::mean_lead_ns>("mean_lead_ns", "total_lead_ns / op_instances (0: none)",
                                        kNever),
    column<&StragglerRow::max_lead_ns>("max_lead_ns", "largest lead", kNever),
    column<&StragglerRow::collectives>("collectives", "matched collectives", kNever),
    column<&StragglerRow::arrived_last>("arrived_last", "collectives this rank started last",
                                        kNever),
    column<&StragglerRow::coll_wait_ns>(
        "coll_wait_ns", "Σ (latest start − own start) over its collectives", kNever),
    column<StragglerRow>("waited_for", ColType::kInt,
                         "1 = the rank with the least total lead (Chopper's waited-for rank)",
                         kNever,
                         [](const StragglerRow& s) { return Cell::of(s.waited_for ? 1 : 0); }),
    column<&StragglerRow::exposed_comm_ns>(
        "exposed_comm_ns", "its exposed communication in the iteration (temporal_breakdown)",
        kNever),
    column<&StragglerRow::straggler_wait_ns>(
        "straggler_wait_ns",
        "of that, waiting for the iteration's significant straggler: its exposed communication "
        "− the straggler's (0 when none)",
        kNever));

inline constexpr auto kIterationsTable = table<IterationRow>(
    "iterations",
    "Each iteration end to end: time of the rank shown (the significantly slowest, else the "
    "lowest), throughput, FLOPs, MFU, straggler",
    column<&IterationRow::iteration>("iteration", "ProfilerStep number", kNever),
    column<&IterationRow::ranks>("ranks", "ranks with this iteration", kNever),
    column<&IterationRow::time_ns>("time_ns", "the shown rank's iteration window", kNever),
    column<&IterationRow::min_time_ns>("min_time_ns", "fastest rank's", kNever),
    column<&IterationRow::mean_time_ns>("mean_time_ns", "mean over ranks", kNever),
    column<IterationRow>(
        "slowest_rank", ColType::kInt,
        "the rank significantly slower than the others (window − their median > max(3 robust "
        "σ, 1% of the median))",
        "ranks equal within noise",
        [](const IterationRow& x) {
          return x.slowest_significant ? Cell::of(x.slowest_rank) : Cell::null();
        }),
    column<IterationRow>(
        "tokens", ColType::kInt, "tokens per step (given)", "not given",
        [](const IterationRow& x) { return x.tokens > 0 ? Cell::of(x.tokens) : Cell::null(); }),
    with_unit(column<IterationRow>("tokens_per_s", ColType::kReal,
                                   "tokens / time (0 for a time of 0)", "tokens not given",
                                   [](const IterationRow& x) {
                                     return x.tokens > 0 ? Cell::of(x.tokens_per_s) : Cell::null();
                                   }),
              "1/s"),
    column<IterationRow>("time_per_token_ns", ColType::kReal, "time / tokens", "tokens not given",
                         [](const IterationRow& x) {
                           return x.tokens > 0 ? Cell::of(x.time_per_token_ns) : Cell::null();
                         }),
    column<&IterationRow::flops>("flops", "Σ FLOPs of the operations with known shapes, all ranks",
                                 kNever),
    with_unit(column<IterationRow>("tflops_per_gpu", ColType::kReal, "flops / ranks / time",
                                   "flops = 0 (no FLOPs known)",
                                   [](const IterationRow& x) {
                                     return x.flops > 0 ? Cell::of(x.tflops_per_gpu) : Cell::null();
                                   }),
              "TFLOP/s"),
    with_unit(
        column<IterationRow>(
            "mfu", ColType::kReal, "flops / (time × ranks × peak matrix rate)",
            "device unknown, flops_coverage_share < 0.5, flops = 0 or time_ns = 0",
            [](const IterationRow& x) { return x.mfu >= 0 ? Cell::of(x.mfu) : Cell::null(); }),
        "fraction"),
    column<IterationRow>("straggler_rank", ColType::kInt, "the significant straggler",
                         "none significant",
                         [](const IterationRow& x) { return opt_rank(x.straggler_rank); }),
    column<IterationRow>(
        "straggler_cost_ns", ColType::kInt,
        "median rank's exposed communication − the least one's: the time the iteration would "
        "save if the rank the others wait for ran like the median rank (0: one rank)",
        kNever, [](const IterationRow& x) { return Cell::of(x.straggler.cost_ns); }),
    column<IterationRow>("straggler_sigma_ns", ColType::kInt,
                         "1.4826 × MAD of the ranks' exposed communication (0: one rank)", kNever,
                         [](const IterationRow& x) { return Cell::of(x.straggler.sigma_ns); }),
    column<IterationRow>("straggler_candidate", ColType::kInt,
                         "the rank with the least exposed communication", "one rank",
                         [](const IterationRow& x) { return opt_rank(x.straggler.rank); }),
    column<IterationRow>(
        "straggler_excess_compute_ns", ColType::kInt,
        "its compute time − the median rank's (0: one rank)", kNever,
        [](const IterationRow& x) { return Cell::of(x.straggler.excess_compute_ns); }),
    column<IterationRow>(
        "straggler_excess_other_ns", ColType::kInt,
        "its time outside compute and exposed communication − the median rank's (0: one rank)",
        kNever, [](const IterationRow& x) { return Cell::of(x.straggler.excess_other_ns); }),
    column<IterationRow>("least_lead_rank", ColType::kInt,
                         "Chopper's waited-for rank: the least total lead",
                         "fewer than two ranks with operation instances matched across ranks",
                         [](const IterationRow& x) { return opt_rank(x.least_lead_rank); }),
    column<IterationRow>(
        "straggler_lead_ns", ColType::kInt, "mean lead of the other ranks over least_lead_rank",
        "least_lead_rank NULL",
        [](const IterationRow& x) {
          return x.least_lead_rank >= 0 ? Cell::of(x.straggler_lead_ns) : Cell::null();
        }),
    column<&IterationRow::slowest_rank>(
        "shown_rank",
        "the rank whose figures are shown (end_to_end, findings, waterfall): slowest_rank, "
        "else the lowest rank",
        kNever),
    column<&IterationRow::max_time_ns>("max_time_ns", "slowest rank's window", kNever),
    column<&IterationRow::flops_coverage>(
        "flops_coverage_share",
        "share of the compute operations' kernel time (all ranks) whose FLOPs are known", kNever));

// One row of rank_components: a component of one rank's iteration window.
struct RankComponentRow {
  int64_t rank = -1, iteration = kNoId;
  std::string_view component;
  Ns time_ns = 0, window_ns = 0;  // the component's time; Σ of the window's components
};

inline constexpr auto kRankComponentsTable = table<RankComponentRow>(
    "rank_components",
    "Every rank's iteration window split into the components of end_to_end, which add up to "
    "the window: compute by phase.class, exposed_comm, straggler_wait, exposed_memcpy, "
    "data_loading, host_sync, host_optimizer, host_stall, host_late, launch_overhead, "
    "graph_gap, idle",
    rank_column<&RankComponentRow::rank>(),
    column<&RankComponentRow::iteration>("iteration", "iteration window", kNever),
    column<&RankComponentRow::component>("component", "as in end_to_end", kNever),
    column<&RankComponentRow::time_ns>("time_ns", "time", kNever),
    column<RankComponentRow>(
        "share", ColType::kReal, "of the rank's iteration window (Σ of its components)",
        "the window's components add up to 0",
        [](const RankComponentRow& c) { return ratio_cell(c.time_ns, c.window_ns); }));

// One row of end_to_end: a component of an iteration's shown rank.
struct EndToEndRow {
  const IterationRow& it;
  std::string_view component;
  Ns time_ns = 0;
};

inline constexpr auto kEndToEndTable = table<EndToEndRow>(
    "end_to_end",
    "The shown rank's iteration time (iterations.shown_rank) split into components that add "
    "up to it: compute by phase.class (union, no double counting), exposed_comm, "
    "straggler_wait, exposed_memcpy, data_loading, host_sync, host_optimizer, host_stall, "
    "host_late, launch_overhead, graph_gap, idle",
    column<EndToEndRow>("iteration", ColType::kInt, "ProfilerStep number", kNever,
                        [](const EndToEndRow& e) { return Cell::of(e.it.iteration); }),
    column<EndToEndRow>("rank", ColType::kInt, "the shown rank (iterations.shown_rank)", kNever,
                        [](const EndToEndRow& e) { return Cell::of(e.it.slowest_rank); }),
    column<&EndToEndRow::component>(
        "component",
        "phase.class, exposed_comm, straggler_wait, exposed_memcpy, data_loading, host_sync, "
        "host_optimizer, host_stall, host_late, launch_overhead, graph_gap or idle",
        kNever),
    column<&EndToEndRow::time_ns>("time_ns", "time", kNever),
    column<EndToEndRow>("share", ColType::kReal, "of the iteration time",
                        "an empty iteration (its time_ns = 0)",
                        [](const EndToEndRow& e) { return ratio_cell(e.time_ns, e.it.time_ns); }),
    column<EndToEndRow>("per_token_ns", ColType::kReal, "time_ns / tokens", "tokens not given",
                        [](const EndToEndRow& e) {
                          return e.it.tokens > 0 ? Cell::of(static_cast<double>(e.time_ns) /
                                                            static_cast<double>(e.it.tokens))
                                                 : Cell::null();
                        }));

// Every analysis table, in the order analyze writes them: temporal_breakdown, idle_breakdown,
// overlap, exposed_comm, operation_instances, launch_overhead, launch_stats, queue_length,
// kernel_breakdown, operation_breakdown, class_breakdown, collectives, collective_summary,
// clock_offsets, stragglers, iterations, end_to_end.
// Each table is streamed to `sink` row by row (begin, rows, end), never held whole in memory. The
// per-rank tables (report/rank_tables.hpp) take their rows from `per_rank`: the run's ranks in
// memory (InMemoryRankRows), or the spool of a streamed analyze.
void analysis_tables(const RunAnalysis& ra, const AnalysisOptions& o, TableSink& sink,
                     RankRows& per_rank);

// The terminal summary: run, iteration time, throughput, MFU, where the time goes, the hardware
// summary, and the significant findings (decided by decide_findings) ordered by their cost.
std::string analysis_summary(const RunAnalysis& ra, const AnalysisOptions& o, const Findings& f);
// Which rank the figures show and why: "slowest rank 7", or "rank 0 (ranks equal within noise;
// showing the lowest rank)" (IterationRow::slowest_significant).
std::string shown_rank_text(const RunAnalysis& ra);

}  // namespace chopper
