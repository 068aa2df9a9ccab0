#pragma once
// The `diagnostics` table (docs/schema.md) and analyze's short summary of it on the terminal.
#include <string>
#include <vector>

#include "chopper/link/validate.hpp"
#include "chopper/model/table.hpp"

namespace chopper {

// Writes the rows (link/validate.hpp, run_diagnostics) as the table `diagnostics`.
void write_diagnostics(const std::vector<DiagnosticRow>& rows, TableSink& sink);

// A few lines for analyze's output, empty when there is nothing worth a word: the run's errors
// and warnings (by kind, naming files), the ranks whose reader anomalies touch more than
// kDiagnosticsShareShown of their events or GPU time, and the link rate when it is below
// kLinkRateShown. Each line names the files concerned.
inline constexpr double kDiagnosticsShareShown = 0.001;
inline constexpr double kLinkRateShown = 0.99;
std::string diagnostics_text(const std::vector<DiagnosticRow>& rows);

}  // namespace chopper
