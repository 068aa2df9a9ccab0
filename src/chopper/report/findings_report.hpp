#pragma once
// Renders the findings (analysis/findings.hpp): the `findings` table, the terminal list and the
// JSON of `analyze --json`. Decides nothing. Columns: docs/schema.md; formulas: docs/metrics.md.
#include <string>

#include "chopper/analysis/findings.hpp"
#include "chopper/model/table.hpp"

namespace chopper {

void findings_table(const Findings& f, TableSink& sink);
// The terminal list: significant findings, largest cost first, then one line naming the rest.
std::string findings_text(const Findings& f);
// One JSON object: the run's iteration statistics and every finding.
std::string findings_json(const Findings& f);

}  // namespace chopper
