#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <future>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/comm.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/memory.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/phase_log.hpp"
#include "chopper/base/progress.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/base/version.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/ingest/et/et_files.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/pipeline/stream.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/html/report_html.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "chopper/report/threaded_sink.hpp"

namespace chopper::cli {

namespace {

// One line: where every rank's iterations came from (its iteration_source diagnostic), with the
// iteration count per rank; sources in order of the first rank that used each.
std::string iteration_source_text(const std::vector<DiagnosticRow>& rows) {
  struct Source {
    std::string what;
    size_t ranks = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
  };
  std::vector<Source> sources;
  for (const DiagnosticRow& d : rows) {
    if (d.kind != kIterationSourceDiag) continue;
    auto it = std::find_if(sources.begin(), sources.end(),
                           [&](const Source& x) { return x.what == d.example; });
    if (it == sources.end()) it = sources.insert(sources.end(), Source{d.example});
    ++it->ranks;
    it->lo = std::min(it->lo, d.count);
    it->hi = std::max(it->hi, d.count);
  }
  if (sources.empty()) return "";
  // Each rank chooses from its own trace: ranks that chose differently are compared across
  // different windows, which the line says first.
  std::string o =
      sources.size() > 1 ? "iteration windows (differ between ranks): " : "iteration windows: ";
  bool fallback = false;
  for (size_t k = 0; k < sources.size() && k < 3; ++k) {
    const Source& x = sources[k];
    fallback = fallback || x.what.rfind("repeated", 0) == 0 || x.what.rfind("whole", 0) == 0;
    o += fmt::format("{}{}: {}", k ? "; " : "", x.what,
                     x.lo == x.hi ? fmt::format("{}", x.lo) : fmt::format("{}-{}", x.lo, x.hi));
    if (x.ranks > 1) o += fmt::format(" per rank on {} ranks", x.ranks);
  }
  if (sources.size() > 3) o += fmt::format("; and {} more sources", sources.size() - 3);
  if (fallback) o += " (no iteration rule matched: --iteration-regex REGEX names the iterations)";
  return o + "\n";
}

}  // namespace

std::string write_analysis_tables(const AnalyzeOptions& o, const Taxonomy& taxonomy,
                                  StreamedRun& sr, TableSink& sink, std::string* json) {
  {
    // gpu_activities needs no finalize: written while the run finalizes on another thread.
    std::future<void> finalized = std::async(std::launch::async, [&sr] { finalize_streamed(sr); });
    write_rank_table(RankStream::kGpuActivities, *sr.rows, sink);
    phase_mark("gpu_activities written");
    finalized.get();
  }
  analysis_tables(sr.ra, o.analysis, sink, *sr.rows);
  phase_mark("analysis tables written");
  hardware_tables(sr.ra, o.analysis, sink, *sr.rows);
  phase_mark("hardware tables written");
  const Findings findings = decide_findings(sr.ra, o.analysis);
  findings_table(findings, sink);
  std::string out =
      o.json ? findings_json(findings) : analysis_summary(sr.ra, o.analysis, findings);
  if (json != nullptr) *json = o.json ? out : findings_json(findings);
  write_hierarchy(sr.gpu_level, *sr.rows, sink);
  write_coverage(sr.coverage, sink);
  write_table(rules_table(taxonomy), sink);
  write_diagnostics(sr.diagnostics, sink);
  return out;
}

std::string analysis_notes(const StreamedRun& sr) {
  std::string out = "\n" + iteration_source_text(sr.diagnostics) + coverage_text(sr.coverage);
  if (const std::string d = diagnostics_text(sr.diagnostics); !d.empty()) out += "\n" + d;
  return out;
}

namespace {

// Names each table as it begins on the progress line (base/progress.hpp).
class ProgressSink : public TableSink {
 public:
  void begin(const TableSchema& schema) override {
    progress_phase(fmt::format("writing tables: {} ({})", ++tables_, schema.name));
  }
  void row(std::span<const Cell>) override {}
  void end() override {}

 private:
  size_t tables_ = 0;
};

// What the database's tables are the analysis of (its chopper_run rows; `chopper report DIR`
// titles the report with them).
std::vector<std::pair<std::string, std::string>> run_description(const AnalyzeOptions& o,
                                                                 const StreamedRun& sr) {
  std::string inputs;
  for (const std::string& p : o.run.paths) inputs += (inputs.empty() ? "" : " ") + p;
  return {{"chopper_version", std::string(kVersion)},
          {"inputs", inputs},
          {"device", sr.ra.device != nullptr ? std::string(sr.ra.device->marketing_name) : ""}};
}

// The tables of a streamed run, and the terminal text.
int write_streamed(const AnalyzeOptions& o, const Taxonomy& taxonomy, StreamedRun& sr,
                   OutputDir& outdir, std::optional<LoadProgress>& progress) {
  std::string out;
  std::string html_doc;
  size_t html_figures = 0;
  try {
    SqliteSink db(outdir.stage("chopper.sqlite"));
    std::optional<CsvSink> csv;
    if (!o.no_csv) csv.emplace(o.out, &outdir);
    // The database filled on a thread of its own, as the CSV files are on theirs, from one copy
    // of the rows: they are made on this one.
    std::vector<TableSink*> formats = {&db};
    if (csv) formats.push_back(&*csv);
    ThreadedSink written(formats);
    ProgressSink named;
    FanoutSink sink;
    sink.add(named);
    sink.add(written);
    sink.add(outdir.recorder());
    // --html: the report's tables kept as they are written, drawn once all are.
    std::optional<html::TableStore> store;
    if (!o.html.empty()) sink.add(store.emplace(html::report_tables()));
    out = write_analysis_tables(o, taxonomy, sr, sink, nullptr);
    // The report is drawn while the database's and the CSV files' threads finish: every row has
    // been handed to them (and kept in `store`), and at the end the database's thread was
    // working alone.
    if (store) {
      written.flush();
      progress_phase("drawing the report");
      html::ReportInfo info;
      info.threads = o.run.threads;
      info.title = run_description(o, sr)[1].second;
      if (sr.ra.device != nullptr) info.device = std::string(sr.ra.device->marketing_name);
      info.command = fmt::format("chopper analyze {} -o {} --html {}", info.title, o.out, o.html);
      std::vector<std::string> ids;
      html_doc = html::render_report(*store, info, &ids);
      html_figures = ids.size();
      phase_mark("report drawn");
    }
    progress_phase("writing tables: finishing chopper.sqlite" +
                   std::string(o.no_csv ? "" : " and the CSV files"));
    written.finish();
    db.describe_run(run_description(o, sr));
    phase_mark("all tables written");
  } catch (const std::exception& e) {
    progress.reset();
    fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
    return 2;
  }
  // --timeline: from the ranks kept in memory (analyze_run keeps them when it is asked for).
  std::string timeline_said;
  if (!o.timeline.empty()) {
    try {
      const auto* kept = dynamic_cast<const KeptRows*>(sr.rows.get());
      if (kept == nullptr) throw Error("--timeline: the ranks were not kept in memory");
      std::vector<TimelineRank> ranks;
      for (const std::shared_ptr<KeptRank>& k : kept->ranks())
        if (k != nullptr) ranks.push_back({&k->slot, k->has_hw ? &k->hw : nullptr});
      progress_phase("writing the timeline");
      TimelineStats st;
      timeline_said = write_timeline_file(o.timeline, "auto", false, ranks, sr.ra, {}, st);
      phase_mark("timeline written");
    } catch (const std::exception& e) {
      progress.reset();
      fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
      return 2;
    }
  }
  progress.reset();  // the line cleared before the summary
  try {
    outdir.commit();  // every file complete: rename into place, remove stale CSVs
    if (!o.html.empty()) {
      OutputFile f(o.html, false);
      f.write(html_doc);
      f.commit();
    }
  } catch (const Error& e) {
    fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
    return 2;
  }
  if (!o.json) {
    out += analysis_notes(sr);
    out += fmt::format("\nwrote {}/chopper.sqlite{}; per GPU and level: chopper tree\n", o.out,
                       o.no_csv ? "" : fmt::format(" and {}/*.csv", o.out));
    if (!o.html.empty())
      out += fmt::format("wrote {} ({:.1f} KiB, {} figures); open it in a browser: file://{}\n",
                         o.html, static_cast<double>(html_doc.size()) / 1024, html_figures,
                         std::filesystem::absolute(o.html).string());
  }
  if (!o.json) out += timeline_said;
  if (!o.json) out = terminal_safe(out, true);  // names with control characters, escaped
  std::fwrite(out.data(), 1, out.size(), stdout);
  return run_errors(sr.run) > 0 || !sr.hw_errors.empty() ? 1 : 0;
}

// What the streamed analysis of the run needs from the command's options.
StreamOptions stream_options(const AnalyzeOptions& o) {
  StreamOptions so;
  so.paths = o.run.paths;
  so.load = load_options(o.run);
  // The run's host execution traces, linked to their ranks as each is read (pipeline/load.cpp).
  if (!o.run.preloaded) so.load.kineto.host_et = find_host_et_files(o.run.paths, o.et);
  so.analysis = o.analysis;
  so.hardware = !o.no_hardware;
  so.telemetry = o.telemetry;
  so.counters = o.counters;
  so.align = o.align;
  so.preloaded = o.run.preloaded;
  so.mpi_shared_files = o.mpi_shared_files;
  so.rows = o.rows;
  so.defer_finalize = true;  // write_streamed finalizes
  return so;
}

// Process 0's exit status to every process (the others wait for it: process 0 may be reading
// their spool files).
int share_status(Comm& c, int rc) {
  if (c.size() <= 1) return rc;
  std::string s = std::to_string(rc);
  c.broadcast(s, 0);
  return std::stoi(s);
}

// --split-runs: the files grouped into runs (link/validate.hpp), each analysed into OUT/run-<k>.
int analyze_split_runs(const AnalyzeOptions& o, Comm& c) {
  if (c.size() > 1) {
    if (c.rank() == 0)
      fmt::print(stderr, "chopper analyze: --split-runs runs in one process, not under MPI\n");
    return 2;
  }
  size_t runs = 0;
  const int rc = for_each_run(o.run, "analyze", [&o, &runs](const RunOptions& run, size_t k) {
    AnalyzeOptions one = o;
    one.run = run;
    one.out = (std::filesystem::path(o.out) / fmt::format("run-{}", k + 1)).string();
    fmt::print("== run-{} ({}/run-{})\n", k + 1, o.out, k + 1);
    std::fflush(stdout);
    runs = k + 1;
    return analyze_run(one);
  });
  // The run-<k> directories an earlier split wrote beyond this one's runs (run-2 of an earlier
  // split beside a single new run-1 would read as this run's).
  if (runs > 0) {
    std::vector<std::string> kept;
    for (const std::string& d : remove_stale_run_dirs(o.out, runs, kept))
      fmt::print(stderr, "chopper analyze: removed {} (an earlier split's run)\n",
                 terminal_safe(d));
    for (const std::string& d : kept)
      fmt::print(stderr,
                 "chopper analyze: left {}: not one of this split's runs, but it holds files "
                 "analyze did not write\n",
                 terminal_safe(d));
  }
  return rc;
}

}  // namespace

std::unique_ptr<StreamedRun> analyze_into(
    const AnalyzeOptions& in, const std::string& scratch, TableSink& sink, AnalysisText& text,
    const std::function<void(size_t, size_t, uint64_t)>& progress) {
  AnalyzeOptions o = in;
  o.json = false;
  o.distributed = false;
  if (!o.manifest.empty()) read_manifest(o.manifest, o.analysis, o.dtype_given);
  const Taxonomy taxonomy = run_taxonomy(o.run);
  o.analysis.threads = o.run.threads;
  StreamOptions so = stream_options(o);
  so.load.progress = progress;
  std::unique_ptr<StreamedRun> sr = stream_run(so, taxonomy, scratch, self_comm());
  if (!sr->analysed) return sr;
  if (!sr->kept) {
    release_free_memory();
    return_freed_memory();
  }
  text.summary =
      terminal_safe(write_analysis_tables(o, taxonomy, *sr, sink, &text.findings_json), true);
  text.notes = terminal_safe(analysis_notes(*sr), true);
  return sr;
}

int analyze_run(const AnalyzeOptions& in) {
  AnalyzeOptions o = in;
  Comm& c = o.distributed ? comm() : self_comm();
  const bool root = c.rank() == 0;
  try {
    if (!o.manifest.empty()) read_manifest(o.manifest, o.analysis, o.dtype_given);
  } catch (const Error& e) {
    if (root) fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
    return 2;
  }
  if (!o.timeline.empty() && (o.run.split_runs || o.rows == RowStore::kSpool || c.size() > 1)) {
    // The timeline is written from the ranks held in memory: one process, one run.
    if (root)
      fmt::print(stderr,
                 "chopper analyze: --timeline writes the timeline from the ranks held in memory: "
                 "not with --split-runs, --rows spool or under MPI; write it with chopper "
                 "timeline\n");
    return 2;
  }
  if (o.run.split_runs) return analyze_split_runs(o, c);
  Taxonomy taxonomy;
  try {
    taxonomy = run_taxonomy(o.run);
  } catch (const Error& e) {
    if (root) fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
    return 2;
  }
  // The output directory, locked for this run before the (long) load: a second analyze into it
  // stops here. Outputs are staged and renamed at the end (report/output_dir.hpp). Under MPI,
  // process 0 holds it and the others write their spool files into it once it exists.
  std::optional<OutputDir> outdir;
  int ready = 0;
  if (root) {
    try {
      outdir.emplace(o.out);
    } catch (const Error& e) {
      fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
      ready = 2;
    }
  }
  if (share_status(c, ready) != 0) return 2;
  if (!root) {
    std::error_code ec;
    std::filesystem::create_directories(o.out, ec);  // a directory not shared with process 0
  }
  // A trace read from standard input or a pipe can be read once: the run is loaded whole first
  // (as --split-runs loads it), and the stage works on the loaded ranks.
  if (!o.run.preloaded && std::any_of(o.run.paths.begin(), o.run.paths.end(), is_stream_path)) {
    if (c.size() > 1) {
      if (root)
        fmt::print(stderr,
                   "chopper analyze: standard input and pipes are read in one process, not "
                   "under MPI\n");
      return 2;
    }
    std::optional<Run> run = load_reporting(o.run, "analyze");  // prints its problems
    if (!run) return 2;
    o.run.preloaded = std::make_shared<Run>(std::move(*run));
  }
  o.analysis.threads = o.run.threads;
  StreamOptions so = stream_options(o);  // not const: the progress line hooks its load options
  if (!o.timeline.empty()) so.rows = RowStore::kMemory;  // the timeline is drawn from the ranks
  std::unique_ptr<StreamedRun> sr;
  // Shown through the load and the phases after it (finalize, tables), until the summary.
  std::optional<LoadProgress> progress;
  try {
    if (root) progress.emplace(o.run, "analyze", so.load);
    sr = stream_run(so, taxonomy, o.out, c);
  } catch (const std::exception& e) {
    progress.reset();
    if (root || c.size() > 1) fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e.what()));
    if (c.size() > 1) abort_comm(2);  // the others may be waiting for this process
    return 2;
  }
  // A process other than 0 is done once process 0 has its parts; it waits for process 0 only when
  // process 0 reads its spool files in place (an MPI process waiting in a collective spins: it
  // would burn a core while process 0 writes the tables). Process 0's status is the job's.
  if (!root) return o.mpi_shared_files ? share_status(c, 0) : 0;
  int rc = 0;
  progress.reset();  // the line cleared before the run's problems are printed
  if (!o.run.preloaded) print_run_problems(sr->run);  // for_each_run printed a split run's
  if (!sr->analysed) {
    if (sr->run.ranks.size() == sr->run.failed())
      fmt::print(stderr, "chopper analyze: no readable trace files{}\n", own_outputs_note(sr->run));
    else
      fmt::print(stderr,
                 "chopper analyze: the files are not one run (above): nothing analysed; name one "
                 "run's files, or use --split-runs\n");
    rc = 2;
  } else {
    for (const auto& [f, why] : sr->hw_skipped)
      fmt::print(stderr, "chopper analyze: skipped {} ({})\n", terminal_safe(f),
                 terminal_safe(why));
    for (const std::string& e : sr->hw_errors)
      fmt::print(stderr, "chopper analyze: {}\n", terminal_safe(e));
    if (!sr->kept) {  // a kept run's memory is held to the end anyway (pipeline/stream.hpp)
      release_free_memory();
      return_freed_memory();
    }
    progress.emplace(o.run, "analyze");  // the finalize and the tables
    rc = write_streamed(o, taxonomy, *sr, *outdir, progress);
  }
  sr.reset();
  return o.mpi_shared_files ? share_status(c, rc) : rc;
}

Command add_analyze(CLI::App& root) {
  auto* app = root.add_subcommand(
      "analyze",
      "Label every GPU activity, run every analysis, write the tables (DIR/chopper.sqlite and "
      "DIR/*.csv) and print the findings");
  auto o = std::make_shared<AnalyzeOptions>();
  add_run_options(app, o->run, true, /*split_runs=*/true);
  app->add_option("-o,--out", o->out, "Output directory")->required()->check(output_directory());
  app->add_flag("--no-csv", o->no_csv, "Write only the SQLite database");
  app->add_option("--html", o->html,
                  "Also write the HTML report (what chopper report writes) to this file, drawn "
                  "from the same pass");
  app->add_option("--timeline", o->timeline,
                  "Also write the timeline (what chopper timeline writes, every rank) to this file "
                  "from the same pass: Perfetto's protobuf format when the name ends in "
                  ".perfetto-trace, .pftrace or .pb, Chrome trace JSON otherwise; .gz after either "
                  "for gzip. Keeps the run's ranks in memory until it is written (--rows memory)");
  app->add_flag("--json", o->json,
                "Print the findings as one JSON object instead of the summary (they are also in "
                "the findings table)");
  add_analysis_options(app, *o);
  app->add_flag("--mpi-shared-files", o->mpi_shared_files,
                "Under mpirun: process 0 reads the other processes' per-rank rows from the output "
                "directory (which must be on a filesystem every process sees) instead of "
                "receiving them over MPI");
  auto rows = std::make_shared<std::string>("auto");
  app->add_option("--rows", *rows,
                  "Where the per-rank rows wait for the tables: memory (the ranks kept until "
                  "written: no second read, no spool), spool (files in the output directory: "
                  "memory follows the largest rank, not the run), or auto: memory for one "
                  "process when the traces are at most as many bytes as the threads' largest "
                  "files and a quarter of the machine's memory")
      ->check(CLI::IsMember({"auto", "spool", "memory"}))
      ->capture_default_str();
  return {app,
          [o, app, rows]() -> int {
            o->rows = *rows == "spool"    ? RowStore::kSpool
                      : *rows == "memory" ? RowStore::kMemory
                                          : RowStore::kAuto;
            if (int rc = resolve_analysis_options("analyze", app, *o); rc != 0) return rc;
            o->run.et_files = o->et;
            o->distributed = true;
            return analyze_run(*o);
          },
          /*mpi=*/true};
}

}  // namespace chopper::cli
