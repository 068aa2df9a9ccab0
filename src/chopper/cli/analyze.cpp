#include <fmt/format.h>

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

int analyze_run(const RunOptions& ro, const std::string& out_dir, bool no_csv) {
  auto lr = load_labelled(ro, "analyze");
  if (!lr) return 2;
  const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase, Level::kLayer,
                                     Level::kOperation};
  auto strings = std::make_shared<StringTable>();
  const std::vector<Aggregation> prefixes = aggregate_prefixes(lr->run, levels, strings);
  const std::vector<CoverageRow> coverage = label_coverage(lr->run);
  try {
    std::filesystem::create_directories(out_dir);
    SqliteSink db(out_dir + "/chopper.sqlite");
    std::optional<CsvSink> csv;
    FanoutSink sink;
    sink.add(db);
    if (!no_csv) {
      csv.emplace(out_dir);
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
  // The summary: all GPUs together, iteration > phase > top operations (`chopper tree` shows
  // every level per GPU).
  const std::vector<Level> summary = {Level::kIteration, Level::kPhase, Level::kOperation};
  const std::vector<Aggregation> sp = aggregate_prefixes(lr->run, summary, strings);
  TreeOptions to;
  to.top = 4;
  size_t gpus = 0;
  for (const RankSlot& r : lr->run.ranks) gpus += r.ok ? 1 : 0;
  std::string out =
      fmt::format("{} rank{} labelled; GPU time summed over them.\n\n", gpus, gpus == 1 ? "" : "s");
  out += tree_text(sp, to);
  out += "\n" + coverage_text(coverage);
  out += fmt::format("\nwrote {}/chopper.sqlite{}\n", out_dir,
                     no_csv ? "" : fmt::format(" and {}/*.csv", out_dir));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return lr->run.failed() > 0 ? 1 : 0;
}

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
  return {app, [o]() -> int { return analyze_run(o->run, o->out, o->no_csv); }};
}

}  // namespace chopper::cli
