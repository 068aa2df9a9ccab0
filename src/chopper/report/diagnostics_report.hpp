#pragma once
// The `diagnostics` table (docs/schema.md) and analyze's short summary of it on the terminal.
#include <string>
#include <vector>

#include "chopper/link/validate.hpp"
#include "chopper/model/series.hpp"
#include "chopper/model/table.hpp"

namespace chopper {

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
