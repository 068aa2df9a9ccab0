// chopper report RUN -o report.html: the analyze pipeline (load, label, hardware, analyses,
// findings) with its tables kept in memory instead of written, rendered as one self-contained
// HTML file (report/html/report_html.hpp). Nothing is computed here that analyze does not.
// chopper report DIR -o report.html, where DIR is what analyze wrote (or its chopper.sqlite):
// the same report drawn from the tables there, without reading the traces again.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/progress.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/base/thread_pool.hpp"
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
#include "chopper/report/sqlite_source.hpp"

namespace chopper::cli {

namespace {

// The report drawn from `store` written to `out`; the "wrote ..." line and the findings' terminal
// list on stdout unless `quiet`.
void write_report_file(const html::TableStore& store, const html::ReportInfo& info,
                       const Findings& findings, const std::string& out, bool quiet,
                       std::optional<LoadProgress>& progress) {
  progress_phase("drawing the report");
  std::vector<std::string> ids;
  const std::string doc = html::render_report(store, info, &ids);
  OutputFile f(out, false);
  f.write(doc);
  f.commit();
  progress.reset();  // the line cleared before what is printed
  if (quiet) return;
  fmt::print("wrote {} ({:.1f} KiB, {} figures); open it in a browser: file://{}\n", out,
             static_cast<double>(doc.size()) / 1024, ids.size(),
             std::filesystem::absolute(out).string());
  const std::string text = terminal_safe(findings_text(findings), true);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// The report of an analysis analyze wrote: its tables read back from `db`.
int report_database(const ReportCliOptions& o, const std::string& db) {
  std::optional<LoadProgress> progress(std::in_place, o.run, "report");
  try {
    progress_phase("reading " + db);
    html::TableStore store(html::report_tables());
    const unsigned threads = o.run.threads > 0 ? o.run.threads : default_threads();
    for (Table& t : read_sqlite_tables(db, html::report_tables(), threads)) store.add(std::move(t));
    const std::map<std::string, std::string> run = read_run_info(db);
    html::ReportInfo info;
    info.threads = threads;
    if (auto it = run.find("inputs"); it != run.end()) info.title = it->second;
    if (auto it = run.find("device"); it != run.end()) info.device = it->second;
    if (info.title.empty()) info.title = o.run.paths.front();
    info.command = "chopper report " + o.run.paths.front();
    const Table* findings = store.get(std::string(kFindingsTable.name));
    write_report_file(store, info,
                      findings != nullptr ? findings_from_table(*findings) : Findings{}, o.out,
                      o.quiet, progress);
  } catch (const std::exception& e) {
    progress.reset();
    fmt::print(stderr, "chopper report: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return 0;
}

}  // namespace

std::string analysis_database(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const std::string db = (fs::path(path) / "chopper.sqlite").string();
    return fs::is_regular_file(db, ec) && is_chopper_database(db) ? db : std::string();
  }
  return fs::is_regular_file(path, ec) && is_chopper_database(path) ? path : std::string();
}

int report_run(const ReportCliOptions& o) {
  if (o.run.paths.size() == 1)
    if (const std::string db = analysis_database(o.run.paths.front()); !db.empty())
      return report_database(o, db);
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
  std::optional<LoadProgress> progress(std::in_place, o.run, "report");
  try {
    progress_phase("analysing");
    html::TableStore store(html::report_tables());
    html::ReportInfo info;
    info.threads = o.run.threads;
    for (const std::string& p : o.run.paths) info.title += (info.title.empty() ? "" : " ") + p;
    info.command = "chopper report " + info.title;
    Findings findings;
    {
      const RunAnalysis ra = analyze_run(lr->run, ao, &hw);
      if (ra.device != nullptr) info.device = std::string(ra.device->marketing_name);
      InMemoryRankRows per_rank(lr->run, ra, ao);
      analysis_tables(ra, ao, store, per_rank);
      hardware_tables(ra, ao, store, per_rank);
      findings = decide_findings(ra, ao);
      findings_table(findings, store);
    }
    write_coverage(label_coverage(lr->run), store);
    std::vector<DiagnosticRow> diags = run_diagnostics(lr->run);
    for (DiagnosticRow& d : hardware_diagnostics(hw.telemetry_data, hw.counter_data))
      diags.push_back(std::move(d));
    for (DiagnosticRow& d : hardware_use_diagnostics(hw)) diags.push_back(std::move(d));
    write_diagnostics(diags, store);
    write_report_file(store, info, findings, o.out, o.quiet, progress);
  } catch (const std::exception& e) {
    progress.reset();
    fmt::print(stderr, "chopper report: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return run_errors(lr->run) > 0 || hw_errors > 0 ? 1 : 0;
}

Command add_report(CLI::App& root) {
  auto* app = root.add_subcommand(
      "report",
      "Analyze a run and write one self-contained HTML report (inline SVG figures, each with "
      "its data as CSV; no network). Given the directory chopper analyze wrote (or its "
      "chopper.sqlite), draws that analysis without reading the traces again");
  auto o = std::make_shared<ReportCliOptions>();
  add_run_options(app, o->run, true);
  app->add_option("-o,--out", o->out, "The HTML file to write")->required();
  add_analysis_options(app, *o);
  return {app, [o, app]() -> int {
            // An analysis analyze wrote is drawn as it is: options that would change it say so.
            if (o->run.paths.size() == 1 && !analysis_database(o->run.paths.front()).empty()) {
              std::string given;
              for (const CLI::Option* opt : app->get_options()) {
                if (opt->count() == 0 || opt->check_name("paths") || opt->check_name("--out") ||
                    opt->check_name("--threads"))
                  continue;
                given += (given.empty() ? "" : ", ") + opt->get_name();
              }
              if (!given.empty()) {
                fmt::print(stderr,
                           "chopper report: {} is an analysis chopper analyze wrote: it is drawn "
                           "as it was analysed, and {} would change the analysis (run chopper "
                           "analyze again with them, or give the traces)\n",
                           terminal_safe(o->run.paths.front()), given);
                return 2;
              }
              return report_run(*o);
            }
            if (int rc = resolve_analysis_options("report", app, *o); rc != 0) return rc;
            o->run.et_files = o->et;
            return report_run(*o);
          }};
}

}  // namespace chopper::cli
