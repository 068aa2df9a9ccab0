#pragma once
// Renders the findings (analysis/findings.hpp): the `findings` table, the terminal list and the
// JSON of `analyze --json`. Decides nothing. Columns: docs/schema.md; formulas: docs/metrics.md.
#include <string>

#include "chopper/analysis/findings.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"

namespace chopper {

// The findings table, declared once (model/table_def.hpp).
inline constexpr auto kFindingsTable = table<Finding>(
    "findings",
    "What costs the run time, decided from the analysis: each loss with its cost per iteration "
    "(the rank shown: iterations.shown_rank), its significance against the run's own variation, "
    "confidence and evidence (docs/metrics.md, Findings). Significant findings first, then by "
    "cost",
    column<Finding>("finding", ColType::kText,
                    "exposed_comm, straggler, host_stall, data_loading, host_sync, "
                    "host_optimizer, host_late, launch_overhead, graph_gap, idle, exposed_memcpy, "
                    "dvfs, utilization, comm_slowdown, rank_variation",
                    kNever, [](const Finding& x) { return Cell::of(finding_key(x.kind)); }),
    column<Finding>("title", ColType::kText, "what the terminal calls it", kNever,
                    [](const Finding& x) { return Cell::of(finding_title(x.kind)); }),
    column<Finding>("rank", ColType::kInt, "the rank it concerns (the straggler)",
                    "the rank shown in each iteration (iterations.shown_rank)",
                    [](const Finding& x) { return x.rank < 0 ? Cell::null() : Cell::of(x.rank); }),
    column<Finding>(
        "significant", ColType::kInt,
        "1 = a one-sided Student t test puts the samples' mean above 1% of the iteration at "
        "confidence ≥ 0.975; from one sample (no variance): cost_ns > threshold_ns alone (a "
        "straggler: significant in an iteration against the ranks' spread); see test",
        kNever, [](const Finding& x) { return Cell::of(int64_t{x.significant ? 1 : 0}); }),
    column<&Finding::cost_ns>(
        "cost_ns", "mean over iterations of the time it takes from the iteration", kNever),
    column<&Finding::cost_share>("cost_share",
                                 "cost_ns / mean iteration time (0 when that time is 0)", kNever),
    column<&Finding::stderr_ns>("stderr_ns",
                                "standard error of the samples' mean: sample σ / √samples",
                                "one sample (no variance; a straggler: one iteration)"),
    column<&Finding::threshold_ns>("threshold_ns", "1% of the mean iteration time", kNever),
    column<&Finding::confidence>(
        "confidence",
        "F_t((mean − threshold) / stderr_ns; samples − 1 degrees of freedom): chance the true "
        "cost exceeds the threshold (a straggler: Φ in its strongest iteration)",
        "one sample: no variance (never for a straggler)"),
    column<&Finding::energy_j>(
        "energy_j", "the job's energy (all GPUs) in cost_ns at its mean power, per iteration",
        "no iteration has power_energy rows (no aligned telemetry), or the finding is dvfs"),
    column<&Finding::iterations>("iterations", "iterations measured", kNever),
    column<&Finding::material_iterations>(
        "material_iterations", "iterations in which the loss took ≥ 1% of the iteration", kNever),
    column<Finding>(
        "evidence", ColType::kText, "what points to the cause",
        "nothing beyond the kind points to a cause (always for exposed_memcpy)",
        [](const Finding& x) { return x.evidence.empty() ? Cell::null() : Cell::of(x.evidence); }),
    column<Finding>("suggestion", ColType::kText, "what to try", kNever,
                    [](const Finding& x) { return Cell::of(finding_advice(x)); }),
    column<&Finding::samples>(
        "samples", "samples the test used: iterations, or every rank's iteration", kNever),
    column<&Finding::test>("test", "how significance was decided", kNever));

void findings_table(const Findings& f, TableSink& sink);
// The findings again from their table (as read back from a chopper.sqlite: `chopper report DIR`
// prints them as analyze does): each row a Finding, its suggestion the row's; the run's mean
// iteration time from threshold_ns (1% of it) and its iteration count the largest of the rows'.
// Throws Error when a column is missing or a finding's key is unknown.
Findings findings_from_table(const Table& t);
// The terminal list: significant findings, largest cost first, then one line naming the rest.
std::string findings_text(const Findings& f);
// One JSON object: the run's iteration statistics and every finding.
std::string findings_json(const Findings& f);

}  // namespace chopper
