// chopper compare RUN_A RUN_B [RUN_C ...]: each run loaded, labelled and analysed as analyze
// does it (one at a time, reduced to its comparison profile before the next is read), then every
// run compared with the first (analysis/compare.hpp); the summary on stdout, the tables in
// DIR/chopper.sqlite (+ CSV) with -o.
#include "chopper/analysis/compare.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include "chopper/analysis/findings.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/report/compare_report.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/sqlite_sink.hpp"

namespace chopper::cli {
namespace {

// The analysis options are analyze's (AnalysisCliOptions), but for --tokens-per-step (one value
// per run) and the hardware files named explicitly.
struct CompareOptions : AnalysisCliOptions {
  RunOptions run;  // run.paths: one run per path
  std::string out;
  std::string html;  // the comparison as a self-contained HTML page ("" = none)
  bool no_csv = false, json = false;
  bool per_layer = false;  // operations per layer (default: summed over their layers)
  std::vector<std::string> labels;
  std::vector<int64_t> tokens;  // one for all runs, or one per run
};

// The run's default label: the last component of its path ("runs/mb4/" -> "mb4").
std::string default_label(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();
  std::string s = p.filename().string();
  return s.empty() ? path : s;
}

int compare_main(const CompareOptions& o) {
  const size_t n = o.run.paths.size();
  if (n < 2) {
    fmt::print(stderr, "chopper compare: give at least two runs (got {})\n", n);
    return 2;
  }
  if (!o.labels.empty() && o.labels.size() != n) {
    fmt::print(stderr, "chopper compare: --labels: {} labels for {} runs\n", o.labels.size(), n);
    return 2;
  }
  if (o.tokens.size() > 1 && o.tokens.size() != n) {
    fmt::print(stderr,
               "chopper compare: --tokens-per-step: {} values for {} runs (give one for "
               "all, or one per run)\n",
               o.tokens.size(), n);
    return 2;
  }
  AnalysisOptions analysis = o.analysis;  // with the manifest's values the flags leave unset
  try {
    if (!o.manifest.empty()) read_manifest(o.manifest, analysis, o.dtype_given);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper compare: {}\n", terminal_safe(e.what()));
    return 2;
  }
  std::optional<OutputDir> outdir;
  if (!o.out.empty()) {
    try {
      outdir.emplace(o.out);
    } catch (const Error& e) {
      fmt::print(stderr, "chopper compare: {}\n", terminal_safe(e.what()));
      return 2;
    }
  }
  std::vector<CompareRun> runs;
  bool partial = false;
  for (size_t k = 0; k < n; ++k) {
    RunOptions ro = o.run;
    ro.paths = {o.run.paths[k]};
    AnalysisOptions ao = analysis;
    ao.threads = o.run.threads;
    if (!o.tokens.empty()) ao.tokens_per_step = o.tokens.size() == 1 ? o.tokens[0] : o.tokens[k];
    std::string label = o.labels.empty() ? default_label(o.run.paths[k]) : o.labels[k];
    for (const CompareRun& r : runs)
      if (r.label == label) label += fmt::format("#{}", k + 1);  // labels must tell runs apart
    auto lr = load_labelled(ro, "compare");
    if (!lr) {
      fmt::print(stderr, "chopper compare: {}: nothing to compare\n",
                 terminal_safe(o.run.paths[k]));
      return 2;
    }
    partial = partial || run_errors(lr->run) > 0;
    HardwareRun hw;
    if (!o.no_hardware) {
      size_t hw_errors = 0;
      hw = load_run_hardware(lr->run, ro, {}, {}, o.align, "compare", hw_errors);
      partial = partial || hw_errors > 0;
    }
    const RunAnalysis ra = analyze_run(lr->run, ao, &hw);
    const Findings f = decide_findings(ra, ao);
    runs.push_back(profile_run(lr->run, ra, f, ao, std::move(label), o.run.paths[k]));
    if (!o.per_layer) merge_operation_layers(runs.back());
  }
  const Comparison c = compare_runs(std::move(runs));
  if (outdir) {
    try {
      SqliteSink db(outdir->stage("chopper.sqlite"));
      std::optional<CsvSink> csv;
      FanoutSink sink;
      sink.add(db);
      sink.add(outdir->recorder());
      if (!o.no_csv) {
        csv.emplace(o.out, &*outdir);
        sink.add(*csv);
      }
      compare_tables(c, sink);
    } catch (const std::exception& e) {
      fmt::print(stderr, "chopper compare: {}\n", terminal_safe(e.what()));
      return 2;
    }
    try {
      outdir->commit();
    } catch (const Error& e) {
      fmt::print(stderr, "chopper compare: {}\n", terminal_safe(e.what()));
      return 2;
    }
  }
  if (!o.html.empty()) {
    try {
      html::TableStore ts;
      compare_tables(c, ts);
      html::ReportInfo info;
      for (const CompareRun& r : c.runs) info.title += (info.title.empty() ? "" : " vs ") + r.label;
      OutputFile f(o.html, false);
      f.write(html::render_compare_report(ts, info));
      f.commit();
    } catch (const std::exception& e) {
      fmt::print(stderr, "chopper compare: {}\n", terminal_safe(e.what()));
      return 2;
    }
  }
  std::string out = o.json ? compare_json(c) : compare_summary(c);
  if (!o.json && !o.html.empty()) out += fmt::format("\nwrote {} (open it in a browser)\n", o.html);
  if (!o.json && outdir)
    out += fmt::format("\nwrote {}/chopper.sqlite{}\n", o.out,
                       o.no_csv ? "" : fmt::format(" and {}/*.csv", o.out));
  if (!o.json) out = terminal_safe(out, true);  // names with control characters, escaped
  std::fwrite(out.data(), 1, out.size(), stdout);
  return partial ? 1 : 0;
}

}  // namespace

Command add_compare(CLI::App& root) {
  auto* app = root.add_subcommand(
      "compare",
      "Compare runs side by side: iteration time and its components, operations, kernels, "
      "collectives and findings of each run against the first; three or more runs make a sweep "
      "table (throughput, time and energy per token)");
  auto o = std::make_shared<CompareOptions>();
  add_run_options(app, o->run, true);
  app->get_option("paths")->description(
      "Runs, one argument each: a trace directory (every rank's file) or one trace file; the "
      "first is the baseline");
  app->add_option("-o,--out", o->out, "Output directory for chopper.sqlite and the CSV tables")
      ->check(output_directory());
  app->add_flag("--no-csv", o->no_csv, "Write only the SQLite database");
  app->add_flag("--per-layer", o->per_layer,
                "Compare operations per layer (default: each operation summed over its layers)");
  app->add_option("--html", o->html,
                  "Also write the comparison as one self-contained HTML page (the runs, sweep "
                  "figures, the split per run and the largest differences)");
  app->add_flag("--json", o->json,
                "Print the comparison as one JSON object instead of the summary");
  app->add_option("--labels", o->labels, "Run labels, comma-separated, one per run")
      ->delimiter(',');
  app->add_option("--tokens-per-step", o->tokens,
                  "Tokens per iteration over all ranks: one value for every run, or one per run "
                  "(comma-separated)")
      ->delimiter(',')
      ->check(integer_at_least(1));
  AnalysisOptionsExcept except;
  except.tokens_per_step = true;
  except.hardware_files = true;
  add_analysis_options(app, *o, except);
  return {app, [o, app]() -> int {
            if (int rc = resolve_analysis_options("compare", app, *o); rc != 0) return rc;
            return compare_main(*o);
          }};
}

}  // namespace chopper::cli
