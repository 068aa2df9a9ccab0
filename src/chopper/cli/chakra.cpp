// chopper chakra: one Chakra ET per rank (chakra/et.hpp, docs/formats.md "Chakra ET"); and
// chopper info x.et: Chakra ET files read and checked.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "chopper/analysis/parts.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/chakra/et.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/link/hardware_align.hpp"

namespace chopper::cli {

bool chakra_paths(const std::vector<std::string>& paths) {
  return !paths.empty() && std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
    return chakra::is_et_name(p) && !std::filesystem::is_directory(p);
  });
}

int chakra_info(const std::vector<std::string>& paths, bool json) {
  if (json) {
    fmt::print(stderr, "chopper info: --json is for traces; Chakra ET files are shown as text\n");
    return 2;
  }
  std::vector<chakra::EtFile> files;
  std::vector<chakra::EtCheck> checks;
  size_t unreadable = 0;
  for (const std::string& p : paths) {
    try {
      files.push_back(chakra::read_et(p));
      checks.push_back(chakra::check_et(files.back()));
    } catch (const Error& e) {
      fmt::print(stderr, "chopper info: {}\n", terminal_safe(e.what()));
      ++unreadable;
    }
  }
  if (files.empty()) return 2;
  size_t problems = 0;
  const std::string out = terminal_safe(chakra::et_info_text(files, checks, problems), true);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return unreadable > 0 || problems > 0 ? 1 : 0;
}

namespace {

struct ChakraOptions {
  RunOptions run;
  std::string out;
  std::string prefix = "chakra";
  bool attrs = false, ctrl_as_data = false;
  std::vector<std::string> telemetry;
};

int chakra_run(const ChakraOptions& o) {
  auto lr = load_labelled(o.run, "chakra");
  if (!lr) return 2;
  HardwareRun hw;
  size_t hw_errors = 0;
  if (o.attrs) hw = load_run_hardware(lr->run, o.run, o.telemetry, {}, {}, "chakra", hw_errors);
  try {
    AnalysisOptions ao;
    ao.threads = o.run.threads;
    // The analysis gives the clock offsets (matched collectives) and, with --attrs, each
    // kernel's telemetry (kernel_hw).
    const RunAnalysis ra = analyze_run(lr->run, ao, o.attrs ? &hw : nullptr);
    const Run& run = lr->run;
    Ns run_start = std::numeric_limits<Ns>::max();
    for (const RankSlot& s : run.ranks)
      if (s.ok && s.trace.first_ns() != kNoTime)
        run_start = std::min(run_start, s.trace.first_ns() - clock_offset(ra, s.rank));
    std::filesystem::create_directories(o.out);
    const chakra::WriteOptions wo{o.attrs, o.ctrl_as_data};
    for (size_t i = 0; i < run.ranks.size(); ++i) {
      const RankSlot& s = run.ranks[i];
      if (!s.ok) continue;
      const int64_t rank = s.rank >= 0 ? s.rank : static_cast<int64_t>(i);
      const RankAnalysis* rk = nullptr;
      for (const RankAnalysis& r : ra.ranks)
        if (r.rank == s.rank) rk = &r;
      // With the rank's host execution trace linked: its tensors' producers as data deps.
      const std::vector<chakra::DataDep> data_deps = chakra::et_data_deps(s.trace);
      chakra::RankEt et = chakra::build_rank_et(s.trace, rank, clock_offset(ra, s.rank), run_start,
                                                rk, data_deps, wo);
      const std::string path =
          (std::filesystem::path(o.out) / fmt::format("{}.{}.et", o.prefix, rank)).string();
      et.stats.bytes = chakra::write_et(et, path);
      const chakra::RankEtStats& st = et.stats;
      fmt::print(
          "wrote {} ({} bytes): {} nodes ({} host COMP, {} GPU COMP, {} COMM_COLL, {} COMM_SEND, "
          "{} COMM_RECV, {} METADATA), {} control deps of which {} sync{}, {} tensor data deps\n",
          path, st.bytes, st.nodes, st.comp_host, st.comp_gpu, st.coll, st.send, st.recv,
          st.metadata, st.ctrl_edges, st.sync_edges, o.ctrl_as_data ? " (as data_deps)" : "",
          st.data_edges);
      if (st.dropped_edges > 0)
        fmt::print("  {} dependencies left out: they would point to a later node (clock skew)\n",
                   st.dropped_edges);
      if (st.untyped_collectives > 0)
        fmt::print("  {} collectives of a type Chakra has no comm_type for: no comm_type\n",
                   st.untyped_collectives);
      if (st.sync_activities > 0)
        fmt::print("  {} GPU sync activities (cuda_sync) are not nodes\n", st.sync_activities);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "chopper chakra: {}\n", terminal_safe(e.what()));
    return 2;
  }
  return lr->run.failed() > 0 || hw_errors > 0 ? 1 : 0;
}

}  // namespace

Command add_chakra(CLI::App& root) {
  auto* app = root.add_subcommand(
      "chakra",
      "One Chakra execution trace per rank (<prefix>.<rank>.et, MLCommons Chakra's protobuf, "
      "for ASTRA-sim): host ops and kernels as COMP nodes with their exclusive durations and "
      "start times, collectives as COMM nodes, control and sync dependencies");
  auto o = std::make_shared<ChakraOptions>();
  add_run_options(app, o->run);
  app->add_option("-o,--out", o->out, "Output directory")->required();
  app->add_option("--prefix", o->prefix, "File name prefix: PREFIX.RANK.et")->capture_default_str();
  app->add_flag("--attrs", o->attrs,
                "Add chopper's measurements to GPU nodes when telemetry is aligned: energy_j, "
                "power_w, sm_clock_mhz");
  app->add_flag("--ctrl-as-data", o->ctrl_as_data,
                "Write the control and sync dependencies as data_deps (as Chakra's PyTorch "
                "converter does), for feeders that follow data deps only (Chakra's ETFeeder)");
  app->add_option("--telemetry", o->telemetry,
                  "GPU telemetry files besides those found in the run's directories (--attrs)")
      ->check(CLI::ExistingFile);
  return {app, [o]() { return chakra_run(*o); }};
}

}  // namespace chopper::cli
