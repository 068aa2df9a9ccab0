#pragma once
// What the analysis subcommands share: loading a run (with the diagnostics printed on stderr)
// and labelling it with the built-in taxonomy plus an optional user rules file.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/model/run.hpp"

namespace chopper::cli {

struct RunOptions {
  std::vector<std::string> paths;
  std::string rules;  // user TOML
  bool keep_python = false;
  unsigned threads = 0;
  bool progress = true;  // a progress line on stderr while loading, when it is a terminal
  // Input limits (docs/formats.md): decompressed bytes per file, JSON bytes per event.
  uint64_t max_decompressed_gib = 64;
  uint64_t max_event_mib = 16;
};
// Adds paths, --rules (unless `rules` is false), --keep-python, -j and the input limits to `app`.
void add_run_options(CLI::App* app, RunOptions& o, bool rules = true);

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

// Loads the run; prints skipped files and unreadable ranks on stderr. nullopt (after printing
// "chopper CMD: ...") when the paths cannot be listed.
std::optional<Run> load_reporting(const RunOptions& o, const char* cmd);

struct LabelledRun {
  Taxonomy taxonomy;
  Run run;
};
// Loads and labels; prints errors as "chopper CMD: ..." and returns nullopt when nothing can be
// analysed (exit status 2).
std::optional<LabelledRun> load_labelled(const RunOptions& o, const char* cmd);

}  // namespace chopper::cli
