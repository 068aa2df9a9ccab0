#include <fmt/format.h>

#include <cstdio>

#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
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
  };
  auto o = std::make_shared<Opts>();
  add_run_options(app, o->run, false);
  app->add_flag("--json", o->json, "Print a JSON array with one object per file");
  return {app, [o]() -> int {
            std::optional<Run> run = load_reporting(o->run, "info");
            if (!run) return 2;
            if (run->ranks.empty()) {
              fmt::print(stderr, "chopper info: no trace files found\n");
              return 2;
            }
            const std::string out = o->json ? info_json(*run) : info_text(*run);
            std::fwrite(out.data(), 1, out.size(), stdout);
            return run->failed() > 0 ? 1 : 0;
          }};
}

}  // namespace chopper::cli
