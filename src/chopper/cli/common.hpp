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
};
// Adds paths, --rules (unless `rules` is false), --keep-python and -j to `app`.
void add_run_options(CLI::App* app, RunOptions& o, bool rules = true);

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
