#include "chopper/synth/synth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/cli/common.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/report/info_report.hpp"

namespace chopper::cli {

namespace {

void add_synth_options(CLI::App* app, SynthConfig& c, std::string& scenario, std::string& parallel,
                       std::string& dtype) {
  const auto preset = CLI::Validator(
      [](std::string& v) -> std::string {
        return find_preset(v) != nullptr
                   ? ""
                   : "unknown preset '" + v + "' (llama3-8b, llama3-70b, gpt3-175b, mixtral-8x7b)";
      },
      "PRESET");
  const auto device = CLI::Validator(
      [](std::string& v) -> std::string {
        return find_device(v) != nullptr
                   ? ""
                   : "unknown device '" + v + "' (" + known_device_names() + ")";
      },
      "DEVICE");
  const auto ns = CLI::Range(int64_t{0}, int64_t{3600} * 1000000000).description("0 to 1 hour");
  app->add_option("--preset", c.preset, "Model: llama3-8b, llama3-70b, gpt3-175b, mixtral-8x7b")
      ->check(preset)
      ->capture_default_str();
  app->add_option("--layers", c.layers, "Transformer layers (default: the preset's)")
      ->check(CLI::Range(0, 1000));
  app->add_option("--batch", c.batch, "Local batch (sequences per rank)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--seq", c.seq, "Sequence length")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app->add_option("--dtype", dtype, known_dtype_names())
      ->check(CLI::IsMember(dtype_spellings()))
      ->capture_default_str();
  app->add_option("--parallel", parallel, "fsdp (FSDP2 full shard) or ddp")->capture_default_str();
  app->add_option("--ranks", c.ranks, "Number of ranks (GPUs)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app->add_option("--gpus-per-node", c.gpus_per_node, "GPUs per node")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app->add_option("--device", c.device, known_device_names())->check(device)->capture_default_str();
  app->add_option("--iterations", c.iterations, "Profiled iterations")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app->add_option("--seed", c.seed, "Seed: same seed, same bytes")->capture_default_str();
  app->add_option("--scenario", scenario,
                  "Named scenario: healthy, dvfs, exposed-comm, launch-bound, straggler, demo")
      ->check(CLI::IsMember(scenario_names()));
  app->add_option("--dvfs", c.dvfs,
                  "Clock floor under sustained load, as a fraction below max (0 = off)")
      ->check(in_half_open(0, 0.9));
  app->add_option("--mfu-loss", c.mfu_loss, "Matrix-unit utilization loss of GEMMs (0..0.95)")
      ->check(in_half_open(0, 0.95));
  app->add_option("--comm-interference", c.comm_interference,
                  "Compute slowdown while a collective runs")
      ->check(in_closed(0, 10));
  app->add_option("--comm-slowdown", c.comm_slowdown,
                  "Collectives take this many times the model's time")
      ->check(in_closed(1, 1000));
  app->add_flag("!--no-prefetch,--prefetch", c.prefetch,
                "FSDP: no all-gather prefetch (exposes communication)");
  app->add_option("--host-op-ns", c.host_op_ns, "CPU time per op before its launch")->check(ns);
  app->add_option("--launch-ns", c.launch_ns, "Duration of one launch call")->check(ns);
  app->add_option("--data-loader-stall-ns", c.data_loader_stall_ns,
                  "Host stall at each iteration start")
      ->check(ns);
  app->add_option("--straggler-rank", c.straggler_rank, "Rank that straggles (-1 = none)")
      ->check(CLI::Range(-1, 65535));
  app->add_option("--straggler-clock", c.straggler_clock, "Straggler's clock cap (fraction of max)")
      ->check(in_open_closed(0.1, 1));
  app->add_option("--straggler-host-ns", c.straggler_host_ns,
                  "Straggler's extra host delay per iteration")
      ->check(ns);
  app->add_option("--node-clock-offset-ns", c.node_clock_offset_ns, "Clock offset between nodes")
      ->check(CLI::Range(-int64_t{3600} * 1000000000, int64_t{3600} * 1000000000)
                  .description("-1 hour to 1 hour"));
  app->add_option("--noise", c.noise, "Relative sigma of kernel duration noise")
      ->check(in_closed(0, 0.3));
  app->add_option("--telemetry-interval-ms", c.telemetry_interval_ms, "Telemetry sampling interval")
      ->check(CLI::Range(int64_t{1}, int64_t{60000}))
      ->capture_default_str();
  app->add_option(
         "--telemetry-format", c.telemetry_format,
         "NVIDIA telemetry: nvidia-smi (a --query-gpu CSV per node) or nvml (CharLLM-PPT's "
         "NVML sampler: a t,value CSV per metric and rank, with energy and NVLink "
         "counters)")
      ->check(CLI::IsMember({"nvidia-smi", "nvml"}))
      ->capture_default_str();
  app->add_flag("--et", c.et,
                "Write each rank's PyTorch host execution trace beside its trace "
                "(rank-N.et.json), linked to it by Record function id");
  app->add_option("--et-drop-dims", c.et_drop_dims,
                  "With --et: the fraction of ops whose Input Dims only the host ET holds (the "
                  "Kineto trace leaves them out)")
      ->check(in_closed(0, 1));
  app->add_option("-j,--threads", c.threads, "Writer threads (default: all cores)")
      ->check(thread_count());
}

// Applies --scenario first so explicit knobs given with it win: the scenario is re-applied onto a
// copy and the knobs the user set are kept.
bool finish_config(SynthConfig& c, const std::string& scenario, const std::string& parallel,
                   const std::string& dtype, CLI::App* app) {
  if (parallel == "fsdp")
    c.parallel = Parallelism::kFsdp;
  else if (parallel == "ddp")
    c.parallel = Parallelism::kDdp;
  else {
    fmt::print(stderr,
               "chopper: --parallel must be fsdp or ddp (tensor, pipeline and expert parallelism "
               "are not modelled yet)\n");
    return false;
  }
  auto dt = parse_dtype(dtype);
  if (!dt) {
    fmt::print(stderr, "chopper: unknown --dtype '{}'\n", dtype);
    return false;
  }
  c.dtype = *dt;
  if (!scenario.empty()) {
    SynthConfig s = c;
    if (!apply_scenario(scenario, s)) {
      fmt::print(stderr, "chopper: unknown scenario '{}'\n", scenario);
      return false;
    }
    // Keep every option given on the command line over the scenario's value.
    auto keep = [&](const char* opt, auto member) {
      if (app->count(opt) > 0) s.*member = c.*member;
    };
    keep("--dvfs", &SynthConfig::dvfs);
    keep("--mfu-loss", &SynthConfig::mfu_loss);
    keep("--comm-interference", &SynthConfig::comm_interference);
    keep("--comm-slowdown", &SynthConfig::comm_slowdown);
    keep("--host-op-ns", &SynthConfig::host_op_ns);
    keep("--launch-ns", &SynthConfig::launch_ns);
    keep("--data-loader-stall-ns", &SynthConfig::data_loader_stall_ns);
    keep("--straggler-rank", &SynthConfig::straggler_rank);
    keep("--straggler-clock", &SynthConfig::straggler_clock);
    keep("--straggler-host-ns", &SynthConfig::straggler_host_ns);
    keep("--node-clock-offset-ns", &SynthConfig::node_clock_offset_ns);
    keep("--noise", &SynthConfig::noise);
    keep("--seq", &SynthConfig::seq);
    keep("--batch", &SynthConfig::batch);
    keep("--layers", &SynthConfig::layers);
    keep("--preset", &SynthConfig::preset);
    if (app->count("--no-prefetch") > 0 || app->count("--prefetch") > 0) s.prefetch = c.prefetch;
    c = s;
  }
  if (c.straggler_rank >= c.ranks) {
    fmt::print(stderr, "chopper: --straggler-rank {} is not a rank (0 to {})\n", c.straggler_rank,
               c.ranks - 1);
    return false;
  }
  return true;
}

int run_synth(const SynthConfig& c, const std::string& out, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  SynthSummary s;
  try {
    s = synthesize(c, out);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper synth: {}\n", terminal_safe(e.what()));
    return 2;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet)
    fmt::print(
        "wrote {} rank traces, {} telemetry files, {} counter files and {} to {} ({:.1f} MiB, {} "
        "kernels) in {:.2f} s\n",
        s.trace_files.size(), s.telemetry_files.size(), s.counter_files.size(), "truth.json", out,
        static_cast<double>(s.bytes_written) / 1048576.0, s.kernels, secs);
  return 0;
}

}  // namespace

Command add_synth(CLI::App& root) {
  auto* app = root.add_subcommand("synth",
                                  "Write a synthetic multi-rank training run with known "
                                  "inefficiencies (traces, telemetry, truth.json)");
  struct Opts {
    SynthConfig c;
    std::string out, scenario, parallel = "fsdp", dtype = "bf16";
  };
  auto o = std::make_shared<Opts>();
  add_synth_options(app, o->c, o->scenario, o->parallel, o->dtype);
  app->add_option("-o,--out", o->out, "Output directory")->required()->check(output_directory());
  return {app, [o, app]() -> int {
            if (!finish_config(o->c, o->scenario, o->parallel, o->dtype, app)) return 2;
            return run_synth(o->c, o->out, false);
          }};
}

Command add_demo(CLI::App& root) {
  auto* app = root.add_subcommand(
      "demo", "Synthesize a small 8-GPU Llama-3-8B FSDP run with injected effects and analyze it");
  auto out = std::make_shared<std::string>("chopper-demo");
  app->add_option("-o,--out", *out, "Where to write the run")
      ->check(output_directory())
      ->capture_default_str();
  return {app, [out]() -> int {
            SynthConfig c;
            c.preset = "llama3-8b";
            c.ranks = 8;
            c.gpus_per_node = 8;
            c.device = "h100";
            c.iterations = 2;
            c.layers = 8;
            apply_scenario("demo", c);
            fmt::print(
                "chopper demo: synthesizing {} ({} of {} layers), FSDP on {} x {}, {} iterations,\n"
                "  with DVFS (clock floor -{:.0f}%), matrix-unit loss {:.0f}%, comm interference "
                "{:.0f}%,\n"
                "  a {:.1f} ms data-loader stall per iteration and a straggler (rank {} at {:.0f}% "
                "clock)\n\n",
                c.preset, c.layers, find_preset(c.preset)->layers, c.ranks, c.device, c.iterations,
                c.dvfs * 100, c.mfu_loss * 100, c.comm_interference * 100,
                static_cast<double>(c.data_loader_stall_ns) / 1e6, c.straggler_rank,
                c.straggler_clock * 100);
            if (int rc = run_synth(c, *out, false); rc != 0) return rc;
            const std::string report = *out + "/analysis/report.html";
            fmt::print("\nchopper analyze {} -o {}/analysis --tokens-per-step {} --html {}:\n\n",
                       *out, *out, static_cast<int64_t>(c.batch) * c.seq * c.ranks, report);
            AnalyzeOptions ao;
            ao.run.paths = {*out};
            ao.out = *out + "/analysis";
            ao.html = report;  // the report drawn in the same pass
            ao.analysis.tokens_per_step = static_cast<int64_t>(c.batch) * c.seq * c.ranks;
            int rc = analyze_run(ao);
            if (rc == 2) return rc;
            fmt::print("\nchopper timeline {} -o {}/analysis/timeline.json.gz:\n", *out, *out);
            TimelineCliOptions to;
            to.run.paths = {*out};
            to.run.progress = false;
            to.out = *out + "/analysis/timeline.json.gz";
            rc = std::max(rc, timeline_run(to));
            fmt::print(
                "\nThe injected effects and every kernel's true labels are in {}/truth.json.\n"
                "Per GPU: chopper tree {}\n"
                "The report: open {}/analysis/report.html in a browser (one file, no network)\n",
                *out, *out, *out);
            return rc;
          }};
}

}  // namespace chopper::cli
