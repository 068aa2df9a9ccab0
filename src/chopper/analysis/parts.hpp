#pragma once
// The analyses' steps, as analysis.cpp strings them together (internal to analysis/).
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/rank_context.hpp"

namespace chopper {

// breakdown.cpp: temporal breakdown, idle by cause, exposed communication per label, operation
// instances with their overlap, kernel/operation/class statistics, compute components.
void breakdown_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out);
// launch.cpp: launch overhead (prep/call), HTA launch statistics, queue length; the launch and
// idle components.
void launch_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out);
// collectives.cpp: this rank's communication activities as match records.
void collective_partial(const RankContext& c, RankAnalysis& out);

// collectives.cpp: matches records across ranks (process group, order), estimates the clock
// offsets from the ends of matched collectives, and computes each collective's cross-rank
// numbers on the aligned clock.
void finalize_collectives(RunAnalysis& ra, const AnalysisOptions& o);
// stragglers.cpp: lead per operation instance and per (rank, iteration).
void finalize_stragglers(RunAnalysis& ra);
// end_to_end.cpp: iterations (slowest rank), tokens, FLOPs, MFU; folded name breakdowns.
void finalize_end_to_end(RunAnalysis& ra, const AnalysisOptions& o);

// Offset of `rank` (0 if unknown), from ra.clock_offsets.
Ns clock_offset(const RunAnalysis& ra, int64_t rank);

}  // namespace chopper
