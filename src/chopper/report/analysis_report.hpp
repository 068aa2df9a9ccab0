#pragma once
// Renders the analyses (analysis/analysis.hpp): one table per result, and the terminal summary of
// findings, largest loss first. docs/schema.md documents every column.
#include <string>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper {

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
