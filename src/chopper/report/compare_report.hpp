#pragma once
// Renders a run-to-run comparison (analysis/compare.hpp): the tables sweep, compare_components,
// compare_operations, compare_kernels, compare_collectives and compare_findings, the terminal
// summary (largest difference first) and `compare --json`. Decides nothing. Columns:
// docs/schema.md ("Comparison tables"); formulas: docs/metrics.md ("Comparison").
#include <string>

#include "chopper/analysis/compare.hpp"
#include "chopper/model/table.hpp"

namespace chopper {

// Every comparison table, streamed to `sink`.
void compare_tables(const Comparison& c, TableSink& sink);
// The terminal summary: the runs (a sweep table for three or more), then for each run against the
// baseline the largest component differences ("exposed communication +12.300 ms per iteration
// (+8.9 points)"), the operations, kernels and collectives that changed most, and the findings
// that appeared or disappeared.
std::string compare_summary(const Comparison& c);
// One JSON object: the runs and, per run against the baseline, every difference.
std::string compare_json(const Comparison& c);
// What the terminal calls an end-to-end component ("exposed_comm" -> "exposed communication",
// "forward.gemm" -> "compute, forward.gemm").
std::string component_title(const std::string& component);

}  // namespace chopper
