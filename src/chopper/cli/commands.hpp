#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "chopper/analysis/analysis.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/pipeline/stream.hpp"
#include "chopper/report/timeline.hpp"

namespace chopper::cli {

// Each subcommand registers itself and returns a callback run when it was chosen; the callback's
// return value is the process exit status.
struct Command {
  CLI::App* app;
  std::function<int()> run;
  // Runs on every process of an MPI job and returns the same status on each (analyze); the other
  // commands run on process 0 alone.
  bool mpi = false;
};

Command add_info(CLI::App& root);
Command add_synth(CLI::App& root);
Command add_demo(CLI::App& root);
Command add_tree(CLI::App& root);
Command add_analyze(CLI::App& root);
Command add_timeline(CLI::App& root);
// chopper compare: runs side by side (cli/compare.cpp, analysis/compare.hpp).
Command add_compare(CLI::App& root);
Command add_report(CLI::App& root);
// chopper record -- CMD: GPU telemetry and CPU use recorded around a command (record/).
Command add_record(CLI::App& root);
// chopper chakra: one Chakra ET per rank (cli/chakra.cpp, chakra/et.hpp).
Command add_chakra(CLI::App& root);
// chopper info x.et ...: whether every path names a Chakra ET file (*.et, *.et.gz), and the
// files read and checked (the exit status).
bool chakra_paths(const std::vector<std::string>& paths);
int chakra_info(const std::vector<std::string>& paths, bool json);

// chopper analyze: load, label, write DIR/chopper.sqlite (+ CSV), print the summary. The analysis
// options (analysis, manifest, telemetry, ...) are the shared ones (cli/common.hpp).
struct AnalyzeOptions : AnalysisCliOptions {
  RunOptions run;
  std::string out;
  bool no_csv = false;
  std::string html;  // --html FILE: the report (`chopper report`) drawn in the same pass
  // --timeline FILE: the timeline (`chopper timeline`) written in the same pass, its format by
  // the file's name (timeline_format).
  std::string timeline;
  bool json = false;  // print the findings as JSON instead of the summary
  // Under MPI: process 0 reads the other processes' spool files from the output directory (a
  // shared filesystem) instead of receiving them (--mpi-shared-files).
  bool mpi_shared_files = false;
  // Where the per-rank rows wait for the tables (--rows): auto, spool or memory.
  RowStore rows = RowStore::kAuto;
  // Divide the work among the processes of an MPI job (the analyze command itself); false when
  // another command (demo) runs an analysis on its own process.
  bool distributed = false;
};
int analyze_run(const AnalyzeOptions& o);

// The parts of analyze that make its results, for the command and for callers that keep the
// tables instead of writing them (the Python module, src/python/): the same tables, in the same
// order, from the same code.
//
// Every table analyze writes (gpu_activities, the analysis and hardware tables, findings,
// hierarchy, coverage, rules, diagnostics) into `sink`, after finalizing the run; returns the
// summary analyze prints (the findings as JSON with o.json), and, when `json` is not null, the
// findings as JSON in *json.
std::string write_analysis_tables(const AnalyzeOptions& o, const Taxonomy& taxonomy,
                                  StreamedRun& sr, TableSink& sink, std::string* json);
// What analyze prints after the summary: the iteration windows, the label coverage and the
// diagnostics (each after a blank line).
std::string analysis_notes(const StreamedRun& sr);

// The terminal text of analyze_into: the summary (without the "wrote ..." line), the notes that
// follow it, the findings as JSON. Control characters escaped as analyze prints them.
struct AnalysisText {
  std::string summary, notes, findings_json;
};
// The analysis `chopper analyze` runs, on this process alone, its tables into `sink` instead of an
// output directory: the manifest read, the run streamed (spool files, if any, in `scratch`, a
// directory that must exist) and, when the run was analysed, every table written as
// write_analysis_tables writes it. Throws Error for a manifest, rules file or paths that cannot
// be read (the message names the file); the run's own problems (unreadable files, files that are
// not one run: StreamedRun::analysed false) are in the returned run, as analyze prints them.
// o.run.paths must be files or directories (not standard input or pipes). `progress` (may be
// empty) is called after each file is read, as LoadOptions::progress is.
std::unique_ptr<StreamedRun> analyze_into(
    const AnalyzeOptions& o, const std::string& scratch, TableSink& sink, AnalysisText& text,
    const std::function<void(size_t, size_t, uint64_t)>& progress = {});

// chopper timeline: every rank in one Chrome-trace JSON file, or Perfetto protobuf trace, on the
// aligned clock.
struct TimelineCliOptions {
  RunOptions run;
  std::string out;
  std::string format = "auto";    // json, perfetto, or auto: by the file's name
  std::string ranks, iterations;  // "0-3,7"; "" = all
  bool no_host = false, gzip = false, no_hardware = false, no_align = false;
  std::vector<std::string> telemetry;
};
int timeline_run(const TimelineCliOptions& o);

// The timeline file `path` in `format` (json, perfetto, or auto: perfetto when the name ends in
// .perfetto-trace, .pftrace or .pb, each optionally followed by .gz; json otherwise); gzip when
// asked or the name ends in .gz. Written from `ranks` (the run's, labelled) and their analysis;
// returns the line that says what was written, with a note when a JSON file passes the size at
// which Perfetto's JSON import struggles (kJsonTimelineLimitBytes). Throws Error (a file that
// cannot be written, an unknown format); `stats` says what it held. Returns "" and writes no file
// when --ranks or --iterations select no GPU activity.
std::string write_timeline_file(const std::string& path, const std::string& format, bool gzip,
                                const std::vector<TimelineRank>& ranks, const RunAnalysis& ra,
                                const TimelineOptions& o, TimelineStats& stats);

// chopper report: every analysis rendered as one self-contained HTML file (report/html/).
// The analysis options are analyze's (AnalysisCliOptions).
struct ReportCliOptions : AnalysisCliOptions {
  RunOptions run;
  std::string out;     // the HTML file
  bool quiet = false;  // no "wrote ..." line
};
int report_run(const ReportCliOptions& o);
// The chopper.sqlite `path` names (the file itself, or DIR/chopper.sqlite; a database chopper
// wrote, not an Nsight Systems export): an analysis `report` draws without reading traces; ""
// when it names neither.
std::string analysis_database(const std::string& path);

}  // namespace chopper::cli
