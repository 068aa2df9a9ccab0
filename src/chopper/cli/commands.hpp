#pragma once
#include <CLI/CLI.hpp>

namespace chopper::cli {

// Each subcommand registers itself and returns a callback run when it was chosen; the callback's
// return value is the process exit status.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_info(CLI::App& root);
Command add_synth(CLI::App& root);
Command add_demo(CLI::App& root);
Command add_tree(CLI::App& root);
Command add_analyze(CLI::App& root);

struct RunOptions;
// chopper analyze: load, label, write DIR/chopper.sqlite (+ CSV), print the summary.
int analyze_run(const RunOptions& run, const std::string& out_dir, bool no_csv);

}  // namespace chopper::cli
