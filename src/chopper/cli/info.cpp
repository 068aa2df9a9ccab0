#include <fmt/format.h>

#include <cstdio>

#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/info_report.hpp"

namespace chopper::cli {

Command add_info(CLI::App& root) {
  auto* app = root.add_subcommand(
      "info",
      "Per rank: devices, time span, events per category, iterations, link rate, "
      "collectives and diagnostics");
  struct Opts {
    RunOptions run;
    bool json = false;
    std::vector<std::string> telemetry, counters;
  };
  auto o = std::make_shared<Opts>();
  add_run_options(app, o->run, false);
  app->add_flag("--json", o->json, "Print a JSON array with one object per file");
  app->add_option("--telemetry", o->telemetry, "GPU telemetry files to list besides the run's")
      ->check(CLI::ExistingFile);
  app->add_option("--counters", o->counters, "Hardware-counter files to list besides the run's")
      ->check(CLI::ExistingFile);
  return {app, [o]() -> int {
            // Chakra execution traces: read and checked (cli/chakra.cpp).
            if (chakra_paths(o->run.paths)) return chakra_info(o->run.paths, o->json);
            std::optional<Run> run = load_reporting(o->run, "info");
            if (!run) return 2;
            if (run->ranks.empty()) {
              fmt::print(stderr, "chopper info: no trace files found\n");
              return 2;
            }
            std::string out = o->json ? info_json(*run) : info_text(*run);
            size_t hw_errors = 0;
            if (!o->json) {
              // The hardware's files found beside the traces, and the ranks they describe.
              std::vector<std::string> counters = o->counters;
              counters.insert(counters.end(), run->counter_passes.begin(),
                              run->counter_passes.end());
              HardwareFiles hf = load_hardware(o->run.paths, o->telemetry, counters, o->run.threads,
                                               telemetry_window(*run));
              auto skipped = std::move(hf.skipped);
              auto errors = std::move(hf.errors);
              const HardwareRun hw =
                  align_hardware(*run, std::move(hf.telemetry), std::move(hf.counters));
              errors.insert(errors.end(), hw.errors.begin(), hw.errors.end());
              hw_errors = errors.size();
              out += hardware_info_text(hw, skipped, errors);
              // File names and metadata may hold control characters: shown escaped (JSON
              // escapes its own).
              out = terminal_safe(out, true);
            }
            std::fwrite(out.data(), 1, out.size(), stdout);
            // No file could be read: nothing to show (as analyze and tree, exit 2).
            if (run->failed() == run->ranks.size()) {
              fmt::print(stderr, "chopper info: no readable trace files\n");
              return 2;
            }
            return run->failed() > 0 || hw_errors > 0 ? 1 : 0;
          }};
}

}  // namespace chopper::cli
