#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <ostream>
#include <streambuf>

#include "chopper/base/comm.hpp"
#include "chopper/base/memory.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/base/version.hpp"
#include "chopper/cli/commands.hpp"

namespace {

// Where the processes other than 0 of an MPI run write help, --version and usage errors: every
// process parses the same command line, one prints what it says.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
};

// The command line parsed and its command run: the exit status. `parse_failed`: the command line
// itself was wrong (or asked for help), the same on every process.
int run(int argc, char** argv, const chopper::Comm& comm, bool& parse_failed) {
  CLI::App root{
      "chopper: where the time and energy of distributed LLM training on GPUs go.\n"
      "Reads PyTorch-profiler (Kineto) traces of every rank and explains them."};
  root.require_subcommand(1);
  root.set_version_flag("--version", "chopper " + std::string(chopper::kVersion));
  std::vector<chopper::cli::Command> cmds;
  cmds.push_back(chopper::cli::add_demo(root));
  cmds.push_back(chopper::cli::add_info(root));
  cmds.push_back(chopper::cli::add_synth(root));
  cmds.push_back(chopper::cli::add_tree(root));
  cmds.push_back(chopper::cli::add_analyze(root));
  cmds.push_back(chopper::cli::add_timeline(root));
  cmds.push_back(chopper::cli::add_compare(root));
  cmds.push_back(chopper::cli::add_report(root));
  cmds.push_back(chopper::cli::add_record(root));
  cmds.push_back(chopper::cli::add_chakra(root));
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    parse_failed = true;
    if (comm.rank() == 0) return root.exit(e) == 0 ? 0 : 2;
    NullBuffer discard;
    std::ostream quiet(&discard);
    return root.exit(e, quiet, quiet) == 0 ? 0 : 2;
  }
  for (auto& c : cmds) {
    if (!c.app->parsed()) continue;
    if (comm.size() > 1 && !c.mpi) {
      // Only analyze divides its work among processes: the others run once, on process 0.
      if (comm.rank() != 0) return 0;
      fmt::print(stderr,
                 "chopper {}: runs in one process (process 0 of {}); analyze is the "
                 "command that divides its work among MPI processes\n",
                 c.app->get_name(), comm.size());
    }
    return c.run();
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  chopper::tune_allocator();
  // Temporary files go with the process however it ends (SIGINT, SIGTERM; base/output_file.hpp).
  chopper::install_temp_file_cleanup();
  // One process; or, built with MPI and started by mpirun or srun, MPI's world (base/comm.hpp).
  chopper::Comm& comm = chopper::init_comm(argc, argv);
  bool parse_failed = false;
  int status = 0;
  if (comm.size() == 1) {
    // An error no command caught is still an error, not std::terminate: caught here, the stack
    // unwinds and every temporary file is removed by its owner.
    try {
      status = run(argc, argv, comm, parse_failed);
    } catch (const std::exception& e) {
      fmt::print(stderr, "chopper: {}\n", chopper::terminal_safe(e.what()));
      status = 2;
    }
    chopper::finalize_comm();
    return status;
  }
  // Several processes: one that fails may leave the others waiting for it in a collective (and
  // MPI_Finalize waits for every process), so an exception on any process ends the job. A command
  // returns normally on every process: analyze agrees on one status (process 0's) before it
  // returns, the other commands run on process 0 alone, and a usage error is the same everywhere.
  try {
    status = run(argc, argv, comm, parse_failed);
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper: process {} of {}: {}\n", comm.rank(), comm.size(),
               chopper::terminal_safe(e.what()));
    chopper::abort_comm(1);
  }
  chopper::finalize_comm();
  return status;
}
