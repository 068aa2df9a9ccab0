#pragma once
// The `diagnostics` table (docs/schema.md) and analyze's short summary of it on the terminal.
#include <string>
#include <vector>

#include "chopper/link/validate.hpp"
#include "chopper/model/series.hpp"
#include "chopper/model/table.hpp"
#include "chopper/model/table_def.hpp"

namespace chopper {

// The diagnostics table, declared once (model/table_def.hpp).
inline constexpr auto kDiagnosticsTable = table<DiagnosticRow>(
    "diagnostics",
    "What loading, validating, reading and linking found, per rank and kind: files that could "
    "not be read, files that are not one run, ranks missing or assigned, the readers' and "
    "linking's anomalies (docs/formats.md) and, for every rank, the GPU activities that reached "
    "no host op (the link rate)",
    column<DiagnosticRow>(
        "rank", ColType::kInt, "rank the row concerns",
        "the whole run, a file whose rank is unknown, a telemetry file, or a counter file's reader "
        "row (see file)",
        [](const DiagnosticRow& d) { return d.rank < 0 ? Cell::null() : Cell::of(d.rank); }),
    column<DiagnosticRow>(
        "file", ColType::kText, "the file the row concerns",
        "several files or none (example names them)",
        [](const DiagnosticRow& d) { return d.file.empty() ? Cell::null() : Cell::of(d.file); }),
    column<&DiagnosticRow::kind>(
        "kind",
        "what was found: a run-level kind (missing_path, unreadable_file, duplicate_rank, "
        "world_size_mismatch, rank_out_of_range, different_runs, missing_ranks, rank_assigned, "
        "not_a_trace, run_split, gpu_activity_unlinked; src/chopper/base/diagnostics.hpp) or a "
        "reader's, labeller's or linking's kind",
        kNever),
    column<DiagnosticRow>(
        "severity", ColType::kText,
        "error (the result is partial or would be wrong), warning (less was used than the input "
        "held), info",
        kNever, [](const DiagnosticRow& d) { return Cell::of(severity_name(d.severity)); }),
    column<&DiagnosticRow::stage>(
        "stage",
        "where it was found: load, validate, read (the readers and linking), label "
        "(iteration_source), link (gpu_activity_unlinked; hardware files not used)",
        kNever),
    column<&DiagnosticRow::count>("count",
                                  "how many: events, files, ranks (missing_ranks), runs "
                                  "(different_runs), unlinked activities (gpu_activity_unlinked), "
                                  "dispatches (counter_file_refused)",
                                  kNever),
    column<DiagnosticRow>(
        "of_count", ColType::kInt,
        "what count is out of: linkable kernels/memcpys/memsets (gpu_activity_unlinked), the "
        "world size (missing_ranks), a hardware file's rows (its data rows read and skipped; "
        "dispatches for counter files)",
        "not applicable: every other row",
        [](const DiagnosticRow& d) {
          return d.of_count < 0 ? Cell::null() : Cell::of(d.of_count);
        }),
    column<DiagnosticRow>("example", ColType::kText,
                          "the message, or the first example with its byte offset",
                          "the kind kept no example",
                          [](const DiagnosticRow& d) {
                            return d.example.empty() ? Cell::null() : Cell::of(d.example);
                          }),
    column<DiagnosticRow>(
        "gpu_time_ns", ColType::kInt, "summed duration of the GPU activities concerned",
        "not known: every row but gpu_activity_unlinked (skipped events have no duration)",
        [](const DiagnosticRow& d) {
          return d.gpu_time_ns < 0 ? Cell::null() : Cell::of(d.gpu_time_ns);
        }),
    column<&DiagnosticRow::share_of_gpu_time>(
        "share_of_gpu_time",
        "gpu_time_ns / the rank's GPU time (summed duration of its kernels, memcpys, memsets)",
        "gpu_time_ns is NULL, or the rank has no GPU time"),
    column<&DiagnosticRow::share_of_events>(
        "share_of_events",
        "count / the rank's trace events (a rank's reader and linking rows); count / of_count "
        "(a hardware file's reader rows)",
        "every other row, and a trace with no events or a hardware file with no rows"));

// The hardware files' anomalies (their readers' Diagnostics), one row per file and kind: rank
// NULL, file the file, stage "read", of_count the file's rows (telemetry: the data rows read and
// those skipped whole; counter files: the dispatches kept and the rows skipped whole),
// share_of_events = count / of_count. Kinds that say what was not read by design
// (unused_field, unsupported_metric, unsupported_entity, rows_outside_window) are info, the
// others warnings.
std::vector<DiagnosticRow> hardware_diagnostics(const std::vector<TelemetryData>& telemetry,
                                                const std::vector<CounterTable>& counters);

// Writes the rows (link/validate.hpp, run_diagnostics) as the table `diagnostics`.
void write_diagnostics(const std::vector<DiagnosticRow>& rows, TableSink& sink);

// A few lines for analyze's output, empty when there is nothing worth a word: the run's errors
// and warnings (by kind, naming files), the ranks whose reader anomalies touch more than
// kDiagnosticsShareShown of their events or GPU time, the hardware files whose anomalies
// (warnings) touch more than kDiagnosticsShareShown of their rows, and the link rate when it is
// below kLinkRateShown. Each line names the files concerned.
inline constexpr double kDiagnosticsShareShown = 0.001;
inline constexpr double kLinkRateShown = 0.99;
std::string diagnostics_text(const std::vector<DiagnosticRow>& rows);

}  // namespace chopper
