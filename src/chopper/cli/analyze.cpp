#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "chopper/base/error.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/sqlite_sink.hpp"

namespace chopper::cli {

Command add_analyze(CLI::App& root) {
  auto* app = root.add_subcommand(
      "analyze",
      "Label every GPU activity and write the tables (DIR/chopper.sqlite and DIR/*.csv)");
  struct Opts {
    RunOptions run;
    std::string out;
    bool no_csv = false;
  };
  auto o = std::make_shared<Opts>();
  add_run_options(app, o->run);
  app->add_option("-o,--out", o->out, "Output directory")->required();
  app->add_flag("--no-csv", o->no_csv, "Write only the SQLite database");
  return {app, [o]() -> int {
            auto lr = load_labelled(o->run, "analyze");
            if (!lr) return 2;
            const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase,
                                               Level::kLayer, Level::kOperation};
            std::vector<Aggregation> prefixes;
            auto strings = std::make_shared<StringTable>();
            for (size_t k = 1; k <= levels.size(); ++k)
              prefixes.push_back(aggregate(lr->run, std::span(levels.data(), k), strings));
            const std::vector<CoverageRow> coverage = label_coverage(lr->run);
            try {
              std::filesystem::create_directories(o->out);
              SqliteSink db(o->out + "/chopper.sqlite");
              std::optional<CsvSink> csv;
              FanoutSink sink;
              sink.add(db);
              if (!o->no_csv) {
                csv.emplace(o->out);
                sink.add(*csv);
              }
              write_gpu_activities(lr->run, sink);
              write_table(hierarchy_table(prefixes), sink);
              write_table(coverage_table(coverage), sink);
              write_table(rules_table(lr->taxonomy), sink);
            } catch (const std::exception& e) {
              fmt::print(stderr, "chopper analyze: {}\n", e.what());
              return 2;
            }
            TreeOptions to;
            to.depth = 3;
            to.top = 4;
            std::string out =
                tree_text(std::vector<Aggregation>(prefixes.begin(), prefixes.begin() + 3), to);
            out += "\n" + coverage_text(coverage);
            out += fmt::format("\nwrote {}/chopper.sqlite{}\n", o->out,
                               o->no_csv ? "" : fmt::format(" and {}/*.csv", o->out));
            std::fwrite(out.data(), 1, out.size(), stdout);
            return lr->run.failed() > 0 ? 1 : 0;
          }};
}

}  // namespace chopper::cli
