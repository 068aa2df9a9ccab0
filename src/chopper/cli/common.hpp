#pragma once
// What the analysis subcommands share: loading a run (with the diagnostics printed on stderr)
// and labelling it with the built-in taxonomy plus an optional user rules file.
#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/model/run.hpp"
#include "chopper/pipeline/load.hpp"

namespace chopper::cli {

struct RunOptions {
  std::vector<std::string> paths;
  std::string rules;  // user TOML
  // --iteration-regex: host ops whose names match are the iterations
  // (Taxonomy::add_iteration_regex)
  std::string iteration_regex;
  bool keep_python = false;
  unsigned threads = 0;
  bool progress = true;  // a progress line on stderr while loading, when it is a terminal
  // Input limits (docs/formats.md): decompressed bytes per file, JSON bytes per event.
  uint64_t max_decompressed_gib = 64;
  uint64_t max_event_mib = 16;
  size_t max_files = kDefaultMaxFiles;  // trace files per run (ingest/load.hpp)
  // Host execution traces named with --et (AnalysisCliOptions::et, copied here by the command).
  std::vector<std::string> et_files;
  // --split-runs (analyze): files of several runs are grouped and each run analysed on its own
  // (for_each_run), instead of being refused (link/validate.hpp).
  bool split_runs = false;
  // Set by for_each_run: this run, already loaded and validated, instead of loading `paths`
  // (which still name the run's directories, where hardware files are found).
  std::shared_ptr<Run> preloaded;
};
// Adds paths, --rules and --iteration-regex (unless `rules` is false), --keep-python, -j,
// --max-files, the input limits and, when `split_runs`, --split-runs to `app`.
void add_run_options(CLI::App* app, RunOptions& o, bool rules = true, bool split_runs = false);
// The built-in taxonomy with the user's --rules file and --iteration-regex (throws Error).
Taxonomy run_taxonomy(const RunOptions& o);
// " (truth.json, timeline.json.gz written by chopper, not traces: ...)" when the run's skipped
// files include chopper's own outputs (ingest/load.hpp, kOwnOutput), else "".
std::string own_outputs_note(const Run& run);

// Option validators (CLI11) whose messages name the value and the range.
// A number in [lo, hi): "must be at least LO and below HI".
CLI::Validator in_half_open(double lo, double hi);
// A number in (lo, hi].
CLI::Validator in_open_closed(double lo, double hi);
// A number in [lo, hi].
CLI::Validator in_closed(double lo, double hi);
// An integer >= lo.
CLI::Validator integer_at_least(int64_t lo);
// An output directory: a path that is a directory or does not exist yet.
CLI::Validator output_directory();
// Threads: 0 (all cores) to 1024.
CLI::Validator thread_count();

// Whether a path is read as a stream: "-" (standard input), a FIFO or a pipe (<(zcat ...)).
bool is_stream_path(const std::string& path);

// Loads and validates the run (link/validate.hpp); prints skipped files and the problems found
// (unreadable files, missing paths, duplicate ranks, ...) on stderr. nullopt (after printing
// "chopper CMD: ...") when the paths cannot be listed or are too many (--max-files).
std::optional<Run> load_reporting(const RunOptions& o, const char* cmd);

// The files skipped (not traces, counter passes) and the problems found, on stderr, as loading
// a run prints them.
void print_run_problems(const Run& run);

// The reader's options from the command line's (and the decompression limit set).
LoadOptions load_options(const RunOptions& o);

// A progress line on stderr while a long command runs (only on a terminal, from the first second):
// the files read (sets lo.progress), then the phase the pipeline names (base/progress.hpp:
// finalizing, writing tables, drawing the report). The line is cleared, and the phase forgotten,
// when this is destroyed.
class LoadProgress {
 public:
  LoadProgress(const RunOptions& o, const char* cmd, LoadOptions& lo);
  // Phases only (what follows a load made elsewhere).
  LoadProgress(const RunOptions& o, const char* cmd);
  ~LoadProgress();
  LoadProgress(const LoadProgress&) = delete;
  LoadProgress& operator=(const LoadProgress&) = delete;

 private:
  std::atomic<size_t> done_{0}, total_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<bool> finished_{false};
  std::atomic<bool> loads_{false};  // files are read (the first constructor)
  std::thread ticker_;
};

// The error-severity problems of a run (unreadable files, missing paths, ...): the exit status is
// 1 when there are any and the rest was analysed.
size_t run_errors(const Run& run);

// --split-runs: loads and validates once, then calls each(options, k) for every run found, k from
// 0, with RunOptions::preloaded holding run k. The exit status: 2 when nothing could be analysed
// (loading failed, or every call returned 2), 1 when a call returned non-zero, else 0.
int for_each_run(const RunOptions& o, const char* cmd,
                 const std::function<int(const RunOptions&, size_t)>& each);

struct LabelledRun {
  Taxonomy taxonomy;
  Run run;
};
// Loads, validates and labels; prints errors as "chopper CMD: ..." and returns nullopt when
// nothing can be analysed (exit status 2): no readable file, or files that are not one run
// (different runs, a rank twice, world sizes that differ) without --split-runs.
std::optional<LabelledRun> load_labelled(const RunOptions& o, const char* cmd);

// Reads a TOML run manifest (tokens_per_step, device, dtype) into `a`; a value given on the
// command line wins (tokens_per_step and device are unset until given; dtype has a default, so
// whether it was given is passed). Throws Error naming the file and line.
void read_manifest(const std::string& path, AnalysisOptions& a, bool dtype_given);
// The same, from the manifest's text (`path` names it in messages).
void apply_manifest(std::string_view text, const std::string& path, AnalysisOptions& a,
                    bool dtype_given);
// --device-spec and --device: adds the spec file's device (and names it, unless --device does),
// then checks the device is known. 0, or 2 after a message naming the file, key or known devices.
int device_options(const char* cmd, const std::string& spec, AnalysisOptions& a);

// The analysis options analyze, report and compare share, declared once (add_analysis_options):
// what AnalysisOptions holds, the --dtype, --device-spec and --manifest that resolve into it, and
// the hardware files and their alignment. A command's options struct derives from it.
struct AnalysisCliOptions {
  AnalysisOptions analysis;    // --tokens-per-step, --device, --top, --no-align, the cutoffs
  std::string dtype = "bf16";  // --dtype as given (resolve_analysis_options parses it)
  std::string device_spec;     // --device-spec FILE; "" = none
  std::string manifest;        // TOML run manifest (tokens_per_step, device, dtype); "" = none
  bool dtype_given = false;    // --dtype was given: the manifest's dtype does not override it
  std::vector<std::string> telemetry, counters;  // named explicitly (besides the run's own)
  std::vector<std::string> et;                   // --et: host execution traces (ingest/et)
  bool no_hardware = false;                      // ignore telemetry and counters
  HardwareAlignOptions align;                    // --telemetry-utc-offset
};
// Which of the shared options a command leaves out: compare takes its own --tokens-per-step (one
// value per run) and no --telemetry or --counters (a file named once belongs to no one run).
struct AnalysisOptionsExcept {
  bool tokens_per_step = false;
  bool hardware_files = false;
};
// Adds --tokens-per-step, --device, --device-spec, --dtype, --manifest, --telemetry, --counters,
// --et, --no-hardware, --telemetry-utc-offset, --top, --no-align, --launch-delay-cutoff-ns and
// --kernel-wait-ns (less `except`) to `app`, filling `o` (which must outlive `app`).
void add_analysis_options(CLI::App* app, AnalysisCliOptions& o, AnalysisOptionsExcept except = {});
// After parsing: whether --dtype was given, the dtype parsed into o.analysis, the device spec
// file added and the device checked (device_options). The manifest is read where the run is
// (read_manifest, with o.dtype_given). 0, or 2 after a message "chopper CMD: ...".
int resolve_analysis_options(const char* cmd, const CLI::App* app, AnalysisCliOptions& o);

// The run's hardware files, on its trace clock: telemetry and counters found in the run's
// directories (and their telemetry/, counters/ folders), those named, and the CUPTI counter passes
// found among the traces; read only around the traced span (telemetry_window), then aligned.
// Skipped files and read errors are printed as "chopper CMD: ..."; `errors` receives how many
// files could not be read.
HardwareRun load_run_hardware(const Run& run, const RunOptions& o,
                              const std::vector<std::string>& telemetry,
                              const std::vector<std::string>& counters,
                              const HardwareAlignOptions& align, const char* cmd, size_t& errors);

// Adds --telemetry-utc-offset HOURS (|hours| <= 14), filling `align` (which must outlive `app`).
void add_utc_offset_option(CLI::App* app, HardwareAlignOptions& align);

}  // namespace chopper::cli
