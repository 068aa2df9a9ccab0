#include "chopper/report/timeline.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/report/timeline_perfetto.hpp"

namespace chopper::cli {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

bool perfetto_name(std::string_view path) {
  if (ends_with(path, ".gz")) path.remove_suffix(3);
  return ends_with(path, ".perfetto-trace") || ends_with(path, ".pftrace") ||
         ends_with(path, ".pb");
}

}  // namespace

std::string write_timeline_file(const std::string& path, const std::string& format, bool gzip,
                                const std::vector<TimelineRank>& ranks, const RunAnalysis& ra,
                                const TimelineOptions& o, TimelineStats& st) {
  if (format != "auto" && format != "json" && format != "perfetto")
    throw Error(fmt::format("--format {}: expected json, perfetto or auto", format));
  const bool perfetto = format == "perfetto" || (format == "auto" && perfetto_name(path));
  const bool gz = gzip || ends_with(path, ".gz");
  OutputFile f(path, gz && !perfetto);  // the protobuf sink compresses its own file
  const std::unique_ptr<TimelineSink> sink =
      perfetto ? perfetto_timeline_sink(f, gz) : json_timeline_sink(f);
  st = write_timeline(ranks, ra, o, *sink);
  // Nothing selected: no file (an earlier one is left as it was).
  if (st.gpu_slices == 0 && (!o.ranks.empty() || !o.iterations.empty())) return "";
  const uint64_t bytes = f.commit();
  std::string out = fmt::format(
      "wrote {} ({:.1f} MB{}{}): {} rank{}, {} GPU slices, {} hierarchy slices, {} host slices, "
      "{} launch flows, {} collective flows, {} counter samples; aligned clock{}\n",
      path, static_cast<double>(bytes) / 1e6, perfetto ? ", Perfetto protobuf" : "",
      gz ? ", gzip" : "", st.ranks, st.ranks == 1 ? "" : "s", st.gpu_slices, st.hierarchy_slices,
      st.host_slices, st.launch_flows, st.collective_flows, st.counter_samples,
      perfetto ? "" : " (offsets in otherData)");
  out += perfetto ? "open it in https://ui.perfetto.dev (Open trace file)\n"
                  : "open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing\n";
  if (!perfetto) out += json_timeline_size_note(f.bytes_in());
  return out;
}

int timeline_run(const TimelineCliOptions& o) {
  TimelineOptions to;
  to.host = !o.no_host;
  try {
    if (!o.ranks.empty()) to.ranks = parse_ranges(o.ranks);
    if (!o.iterations.empty()) to.iterations = parse_ranges(o.iterations);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper timeline: {}\n", terminal_safe(e.what()));
    return 2;
  }
  auto lr = load_labelled(o.run, "timeline");
  if (!lr) return 2;
  HardwareRun hw;
  size_t hw_errors = 0;
  if (!o.no_hardware)
    hw = load_run_hardware(lr->run, o.run, o.telemetry, {}, {}, "timeline", hw_errors);
  AnalysisOptions ao;
  ao.threads = o.run.threads;
  ao.align_clocks = !o.no_align;
  try {
    // The analysis gives the clock offsets and the matched collectives.
    const RunAnalysis ra = analyze_run(lr->run, ao, &hw);
    TimelineStats st;
    const std::string said =
        write_timeline_file(o.out, o.format, o.gzip, timeline_ranks(lr->run, &hw), ra, to, st);
    if (said.empty()) {
      std::string its;
      if (!ra.iterations.empty())
        its = fmt::format(" (this run's iterations: {}..{})", ra.iterations.front().iteration,
                          ra.iterations.back().iteration);
      fmt::print(stderr, "chopper timeline: no GPU activity matches --ranks/--iterations{}\n", its);
      return 2;
    }
    std::fwrite(said.data(), 1, said.size(), stdout);
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper timeline: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return lr->run.failed() > 0 || hw_errors > 0 ? 1 : 0;
}

Command add_timeline(CLI::App& root) {
  auto* app = root.add_subcommand(
      "timeline",
      "Every rank in one Chrome-trace JSON file, or Perfetto protobuf trace, for Perfetto: GPU "
      "streams with their labels, the hierarchy as nested slices, host threads, launch and "
      "collective flows, telemetry counters; on the aligned clock");
  auto o = std::make_shared<TimelineCliOptions>();
  add_run_options(app, o->run);
  app->add_option("-o,--out", o->out,
                  "Output file (.json; .perfetto-trace for Perfetto's protobuf format; .gz after "
                  "either for gzip)")
      ->required();
  app->add_option("--format", o->format,
                  "json (Chrome trace JSON), perfetto (Perfetto's protobuf trace: several times "
                  "smaller, for runs whose JSON Perfetto cannot load), or auto: perfetto when the "
                  "file's name ends in .perfetto-trace, .pftrace or .pb (then .gz or not), json "
                  "otherwise")
      ->check(CLI::IsMember({"auto", "json", "perfetto"}))
      ->capture_default_str();
  app->add_option("--ranks", o->ranks, "Ranks to include, e.g. 0-3,7 (default: all)");
  app->add_option("--iterations", o->iterations,
                  "Iterations (ProfilerStep numbers) to include, e.g. 5-6 (default: the whole "
                  "trace, outside iterations too)");
  app->add_flag("--no-host", o->no_host, "Leave out host ops, runtime calls and launch flows");
  app->add_flag("--gzip", o->gzip, "Compress with gzip (also when the name ends in .gz)");
  app->add_option("--telemetry", o->telemetry,
                  "GPU telemetry files besides those found in the run's directories")
      ->check(CLI::ExistingFile);
  app->add_flag("--no-hardware", o->no_hardware, "Ignore telemetry (no counter tracks)");
  app->add_flag("--no-align", o->no_align,
                "Keep each rank's own clock (do not apply the offsets from collectives)");
  return {app, [o]() -> int { return timeline_run(*o); }};
}

}  // namespace chopper::cli
