// chopper report RUN -o report.html: the analyze pipeline (load, label, hardware, analyses,
// findings) with its tables kept in memory instead of written, rendered as one self-contained
// HTML file (report/html/report_html.hpp). Nothing is computed here that analyze does not.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/html/report_html.hpp"

namespace chopper::cli {

int report_run(const ReportCliOptions& o) {
  AnalysisOptions ao = o.analysis;
  try {
    if (!o.manifest.empty()) read_manifest(o.manifest, ao, o.dtype_given);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper report: {}\n", terminal_safe(e.what()));
    return 2;
  }
  auto lr = load_labelled(o.run, "report");
  if (!lr) return 2;
  ao.threads = o.run.threads;
  HardwareRun hw;
  size_t hw_errors = 0;
  if (!o.no_hardware)
    hw = load_run_hardware(lr->run, o.run, o.telemetry, o.counters, o.align, "report", hw_errors);
  try {
    html::TableStore store(html::report_tables());
    html::ReportInfo info;
    for (const std::string& p : o.run.paths) info.title += (info.title.empty() ? "" : " ") + p;
    info.command = "chopper report " + info.title;
    {
      const RunAnalysis ra = analyze_run(lr->run, ao, &hw);
      if (ra.device != nullptr) info.device = std::string(ra.device->marketing_name);
      InMemoryRankRows per_rank(lr->run, ra, ao);
      analysis_tables(ra, ao, store, per_rank);
      hardware_tables(ra, ao, store, per_rank);
      findings_table(decide_findings(ra, ao), store);
    }
    write_coverage(label_coverage(lr->run), store);
    std::vector<DiagnosticRow> diags = run_diagnostics(lr->run);
    for (DiagnosticRow& d : hardware_diagnostics(hw.telemetry_data, hw.counter_data))
      diags.push_back(std::move(d));
    for (DiagnosticRow& d : hardware_use_diagnostics(hw)) diags.push_back(std::move(d));
    write_diagnostics(diags, store);
    std::vector<std::string> ids;
    const std::string doc = html::render_report(store, info, &ids);
    OutputFile f(o.out, false);
    f.write(doc);
    f.commit();
    if (!o.quiet)
      fmt::print("wrote {} ({:.1f} KiB, {} figures); open it in a browser: file://{}\n", o.out,
                 static_cast<double>(doc.size()) / 1024, ids.size(),
                 std::filesystem::absolute(o.out).string());
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper report: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return run_errors(lr->run) > 0 || hw_errors > 0 ? 1 : 0;
}

Command add_report(CLI::App& root) {
  auto* app = root.add_subcommand(
      "report",
      "Analyze a run and write one self-contained HTML report (inline SVG figures, each with "
      "its data as CSV; no network)");
  auto o = std::make_shared<ReportCliOptions>();
  add_run_options(app, o->run, true);
  app->add_option("-o,--out", o->out, "The HTML file to write")->required();
  add_analysis_options(app, *o);
  return {app, [o, app]() -> int {
            if (int rc = resolve_analysis_options("report", app, *o); rc != 0) return rc;
            return report_run(*o);
          }};
}

}  // namespace chopper::cli
