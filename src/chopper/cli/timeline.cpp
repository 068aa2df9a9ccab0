#include "chopper/report/timeline.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/link/hardware_align.hpp"

namespace chopper::cli {

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
    const bool gz = o.gzip || (o.out.size() > 3 && o.out.compare(o.out.size() - 3, 3, ".gz") == 0);
    OutputFile f(o.out, gz);
    const TimelineStats st = write_timeline(lr->run, ra, &hw, to, f);
    if (st.gpu_slices == 0 && (!to.ranks.empty() || !to.iterations.empty())) {
      std::string its;
      if (!ra.iterations.empty())
        its = fmt::format(" (this run's iterations: {}..{})", ra.iterations.front().iteration,
                          ra.iterations.back().iteration);
      fmt::print(stderr, "chopper timeline: no GPU activity matches --ranks/--iterations{}\n", its);
      return 2;
    }
    const uint64_t bytes = f.commit();
    fmt::print(
        "wrote {} ({:.1f} MB{}): {} rank{}, {} GPU slices, {} hierarchy slices, {} host slices, "
        "{} launch flows, {} collective flows, {} counter samples; aligned clock (offsets in "
        "otherData)\nopen it in https://ui.perfetto.dev (Open trace file) or chrome://tracing\n",
        o.out, static_cast<double>(bytes) / 1e6, gz ? ", gzip" : "", st.ranks,
        st.ranks == 1 ? "" : "s", st.gpu_slices, st.hierarchy_slices, st.host_slices,
        st.launch_flows, st.collective_flows, st.counter_samples);
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper timeline: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return lr->run.failed() > 0 || hw_errors > 0 ? 1 : 0;
}

Command add_timeline(CLI::App& root) {
  auto* app = root.add_subcommand(
      "timeline",
      "Every rank in one Chrome-trace JSON file for Perfetto: GPU streams with their labels, the "
      "hierarchy as nested slices, host threads, launch and collective flows, telemetry counters; "
      "on the aligned clock");
  auto o = std::make_shared<TimelineCliOptions>();
  add_run_options(app, o->run);
  app->add_option("-o,--out", o->out, "Output file (.json, or .json.gz for gzip)")->required();
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
