#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "chopper/base/memory.hpp"
#include "chopper/cli/commands.hpp"

int main(int argc, char** argv) {
  chopper::tune_allocator();
  CLI::App root{
      "chopper: where the time and energy of distributed LLM training on GPUs go.\n"
      "Reads PyTorch-profiler (Kineto) traces of every rank and explains them."};
  root.require_subcommand(1);
  root.set_version_flag("--version", "chopper 0.1.0");
  std::vector<chopper::cli::Command> cmds;
  cmds.push_back(chopper::cli::add_demo(root));
  cmds.push_back(chopper::cli::add_info(root));
  cmds.push_back(chopper::cli::add_synth(root));
  cmds.push_back(chopper::cli::add_tree(root));
  cmds.push_back(chopper::cli::add_analyze(root));
  cmds.push_back(chopper::cli::add_timeline(root));
  cmds.push_back(chopper::cli::add_compare(root));
  cmds.push_back(chopper::cli::add_report(root));
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root.exit(e) == 0 ? 0 : 2;
  }
  for (auto& c : cmds)
    if (c.app->parsed()) return c.run();
  return 2;
}
