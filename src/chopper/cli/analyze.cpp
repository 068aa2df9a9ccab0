#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "chopper/report/threaded_sink.hpp"

namespace chopper::cli {

int analyze_run(const AnalyzeOptions& in) {
  AnalyzeOptions o = in;
  try {
    if (!o.manifest.empty()) read_manifest(o.manifest, o.analysis, o.dtype_given);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper analyze: {}\n", e.what());
    return 2;
  }
  // --split-runs: the files grouped into runs (link/validate.hpp), each analysed into OUT/run-<k>.
  if (o.run.split_runs)
    return for_each_run(o.run, "analyze", [&o](const RunOptions& run, size_t k) {
      AnalyzeOptions one = o;
      one.run = run;
      one.out = (std::filesystem::path(o.out) / fmt::format("run-{}", k + 1)).string();
      fmt::print("== run-{} ({}/run-{})\n", k + 1, o.out, k + 1);
      std::fflush(stdout);
      return analyze_run(one);
    });
  // The output directory, locked for this run before the (long) load: a second analyze into it
  // stops here. Outputs are staged and renamed at the end (report/output_dir.hpp).
  std::optional<OutputDir> outdir;
  try {
    outdir.emplace(o.out);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper analyze: {}\n", e.what());
    return 2;
  }
  auto lr = load_labelled(o.run, "analyze");
  if (!lr) return 2;
  o.analysis.threads = o.run.threads;
  const std::vector<CoverageRow> coverage = label_coverage(lr->run);
  const std::vector<DiagnosticRow> diagnostics = run_diagnostics(lr->run);  // link/validate.hpp
  // The hardware's files: telemetry and counters in the run's directories and named with
  // --telemetry / --counters, put on the trace clock.
  HardwareRun hw;
  size_t hw_errors = 0;
  if (!o.no_hardware)
    hw = load_run_hardware(lr->run, o.run, o.telemetry, o.counters, o.align, "analyze", hw_errors);
  std::string out;
  try {
    SqliteSink db(outdir->stage("chopper.sqlite"));
    std::optional<CsvSink> csv;
    std::optional<ThreadedSink> csv_thread;  // the CSV files written while the database fills
    FanoutSink sink;
    sink.add(db);
    sink.add(outdir->recorder());
    if (!o.no_csv) {
      csv.emplace(o.out, &*outdir);
      csv_thread.emplace(*csv);
      sink.add(*csv_thread);
    }
    write_gpu_activities(lr->run, sink);
    {
      // The analyses' per-instance rows are written and freed before the hierarchy is
      // aggregated, so the two never take memory at the same time.
      const RunAnalysis ra = analyze_run(lr->run, o.analysis, &hw);
      InMemoryRankRows per_rank(lr->run, ra, o.analysis);
      analysis_tables(ra, o.analysis, sink, per_rank);
      hardware_tables(ra, o.analysis, sink, per_rank);
      const Findings findings = decide_findings(ra, o.analysis);
      findings_table(findings, sink);
      out = o.json ? findings_json(findings) : analysis_summary(ra, o.analysis, findings);
    }
    const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase, Level::kLayer,
                                       Level::kOperation};
    auto strings = std::make_shared<StringTable>();
    write_hierarchy(aggregate_prefixes(lr->run, levels, strings), sink);
    write_table(coverage_table(coverage), sink);
    write_table(rules_table(lr->taxonomy), sink);
    write_diagnostics(diagnostics, sink);
    if (csv_thread) csv_thread->finish();
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper analyze: {}\n", e.what());
    return 2;
  }
  try {
    outdir->commit();  // every file complete: rename into place, remove stale CSVs
  } catch (const Error& e) {
    fmt::print(stderr, "chopper analyze: {}\n", e.what());
    return 2;
  }
  if (!o.json) {
    out += "\n" + coverage_text(coverage);
    if (const std::string d = diagnostics_text(diagnostics); !d.empty()) out += "\n" + d;
    out += fmt::format("\nwrote {}/chopper.sqlite{}; per GPU and level: chopper tree\n", o.out,
                       o.no_csv ? "" : fmt::format(" and {}/*.csv", o.out));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return run_errors(lr->run) > 0 || hw_errors > 0 ? 1 : 0;
}

Command add_analyze(CLI::App& root) {
  auto* app = root.add_subcommand(
      "analyze",
      "Label every GPU activity, run every analysis, write the tables (DIR/chopper.sqlite and "
      "DIR/*.csv) and print the findings");
  auto o = std::make_shared<AnalyzeOptions>();
  auto dtype = std::make_shared<std::string>("bf16");
  add_run_options(app, o->run, true, /*split_runs=*/true);
  app->add_option("-o,--out", o->out, "Output directory")->required()->check(output_directory());
  app->add_flag("--no-csv", o->no_csv, "Write only the SQLite database");
  app->add_flag("--json", o->json,
                "Print the findings as one JSON object instead of the summary (they are also in "
                "the findings table)");
  app->add_option("--tokens-per-step", o->analysis.tokens_per_step,
                  "Tokens per iteration over all ranks (global batch x sequence length), for "
                  "tokens/s and time per token")
      ->check(integer_at_least(1));
  app->add_option(
      "--device", o->analysis.device,
      "Device for MFU (h100, h200, b200, a100, mi300x, mi250); default: from the trace");
  app->add_option("--dtype", *dtype, "Matrix dtype MFU is measured against")
      ->check(
          CLI::IsMember({"bf16", "fp16", "fp8", "tf32", "fp32", "bfloat16", "float16", "float32"}))
      ->capture_default_str();
  app->add_option("--manifest", o->manifest,
                  "TOML run manifest: tokens_per_step, device, dtype (flags win)")
      ->check(CLI::ExistingFile);
  app->add_option("--telemetry", o->telemetry,
                  "GPU telemetry files (nvidia-smi, amd-smi, rocm-smi, dcgmi, Zeus CSV) besides "
                  "those found in the run's directories and their telemetry/ folders")
      ->check(CLI::ExistingFile);
  app->add_option("--counters", o->counters,
                  "Hardware-counter files (rocprofv3 counter collection, kernel trace, JSON) "
                  "besides those found in the run's directories and their counters/ folders")
      ->check(CLI::ExistingFile);
  app->add_flag("--no-hardware", o->no_hardware, "Ignore telemetry and counter files");
  add_utc_offset_option(app, o->align);
  app->add_option("--top", o->analysis.top_n, "Rows per rank in the name breakdowns")
      ->check(CLI::Range(size_t{0}, size_t{1000000}))
      ->capture_default_str();
  app->add_flag(
      "--no-align", [o](int64_t) { o->analysis.align_clocks = false; },
      "Do not apply the clock offsets estimated from collectives");
  app->add_option("--launch-delay-cutoff-ns", o->analysis.launch_delay_cutoff_ns,
                  "Launch latency ends this long after the launch call's end; a kernel starting "
                  "later waited on the GPU (idle), and counts as a launch-delay outlier (HTA: "
                  "100 µs)")
      ->check(integer_at_least(0))
      ->capture_default_str();
  app->add_option("--kernel-wait-ns", o->analysis.kernel_wait_ns,
                  "Idle gaps shorter than this count as kernel wait (HTA: 30 µs)")
      ->check(integer_at_least(0))
      ->capture_default_str();
  return {app, [o, dtype, app]() -> int {
            o->dtype_given = app->count("--dtype") > 0;
            auto d = parse_dtype(*dtype);
            if (!d) {
              fmt::print(stderr, "chopper analyze: --dtype: unknown dtype '{}'\n", *dtype);
              return 2;
            }
            o->analysis.dtype = *d;
            if (!o->analysis.device.empty() && find_device(o->analysis.device) == nullptr) {
              fmt::print(stderr, "chopper analyze: --device: unknown device '{}'\n",
                         o->analysis.device);
              return 2;
            }
            return analyze_run(*o);
          }};
}

}  // namespace chopper::cli
