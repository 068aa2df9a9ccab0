#include <fmt/format.h>

#include <cstdio>

#include "chopper/base/error.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/report/info_report.hpp"

namespace chopper::cli {

Command add_info(CLI::App& root) {
  auto* app = root.add_subcommand(
      "info",
      "Per rank: devices, time span, events per category, iterations, link rate, "
      "collectives and diagnostics");
  struct Opts {
    std::vector<std::string> paths;
    bool json = false;
    bool keep_python = false;
    unsigned threads = 0;
  };
  auto o = std::make_shared<Opts>();
  app->add_option("paths", o->paths,
                  "Trace files or directories of them (.json, .json.gz, .json.zst)")
      ->required();
  app->add_flag("--json", o->json, "Print a JSON array with one object per file");
  app->add_flag("--keep-python", o->keep_python,
                "Keep every python_function event as a host op (nn.Module ranges are always kept)");
  app->add_option("-j,--threads", o->threads, "Parsing threads (default: all cores)");
  return {app, [o]() -> int {
            LoadOptions lo;
            lo.kineto.keep_python = o->keep_python;
            lo.threads = o->threads;
            Run run;
            try {
              run = load_run(o->paths, lo);
            } catch (const Error& e) {
              fmt::print(stderr, "chopper info: {}\n", e.what());
              return 2;
            }
            for (const auto& [file, why] : run.skipped)
              fmt::print(stderr, "chopper: skipped {} (not a trace: {})\n", file, why);
            if (run.ranks.empty()) {
              fmt::print(stderr, "chopper info: no trace files found\n");
              return 2;
            }
            for (const auto& r : run.ranks)
              if (!r.ok) fmt::print(stderr, "chopper: {}\n", r.error);
            const std::string out = o->json ? info_json(run) : info_text(run);
            std::fwrite(out.data(), 1, out.size(), stdout);
            return run.failed() > 0 ? 1 : 0;
          }};
}

}  // namespace chopper::cli
