#pragma once
// The hardware's tables and terminal lines: how telemetry and counters were placed
// (telemetry_alignment, counter_join), the aligned samples (telemetry), per-activity hardware
// metrics (kernel_hw), power and energy per rank, iteration and phase (power_energy), the
// waterfall per operation instance, phase and iteration (waterfall) and the what-if iteration
// times (what_if). Columns and formulas: docs/schema.md, docs/metrics.md. Renders only.
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper {

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
