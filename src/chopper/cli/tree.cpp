#include <fmt/format.h>

#include <cstdio>

#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/report/hierarchy_report.hpp"

namespace chopper::cli {

Command add_tree(CLI::App& root) {
  auto* app = root.add_subcommand(
      "tree",
      "The hierarchy GPU -> iteration -> phase -> layer -> operation with GPU times, and "
      "how much of the time each labelling rule covered");
  struct Opts {
    RunOptions run;
    std::string levels = "gpu,iteration,phase,layer,operation";
    int depth = 0;
    int top = 8;
  };
  auto o = std::make_shared<Opts>();
  add_run_options(app, o->run);
  app->add_option("--levels", o->levels,
                  "Levels in order, any subset of gpu,iteration,phase,layer,operation")
      ->capture_default_str();
  app->add_option("--depth", o->depth, "Levels to print (default: all)")->check(CLI::Range(0, 5));
  app->add_option("--top", o->top, "Children shown per node, the rest folded (0 = all)")
      ->check(integer_at_least(0))
      ->capture_default_str();
  return {app, [o]() -> int {
            std::vector<Level> levels;
            try {
              levels = parse_levels(o->levels);
            } catch (const Error& e) {
              fmt::print(stderr, "chopper tree: --levels: {}\n", terminal_safe(e.what()));
              return 2;
            }
            auto lr = load_labelled(o->run, "tree");
            if (!lr) return 2;
            const std::vector<Aggregation> prefixes = aggregate_prefixes(lr->run, levels);
            TreeOptions to;
            to.depth = o->depth;
            to.top = o->top;
            // Operation names may hold control characters (ESC sequences, NUL): shown escaped.
            const std::string out = terminal_safe(
                tree_text(prefixes, to) + "\n" + coverage_text(label_coverage(lr->run)), true);
            std::fwrite(out.data(), 1, out.size(), stdout);
            return lr->run.failed() > 0 ? 1 : 0;
          }};
}

}  // namespace chopper::cli
