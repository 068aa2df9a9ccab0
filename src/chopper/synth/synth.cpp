// The ground-truth generator's entry: the model presets, the named scenarios, and synthesize(),
// which runs the generator's parts in order. Design (docs/architecture.md):
//   1. program.cpp: the program, the host actions one training step performs, identical on every
//      rank, built from the model preset.
//   2. simulator.cpp: one rank stepping through the program; every duration is built up effect by
//      effect (nominal roofline time, matrix-unit loss, straggler clock cap, DVFS clock, noise,
//      comm interference) and each increment is recorded for truth.json.
//   3. passes.cpp: pass 1 runs all ranks in lockstep to find when every collective ends; pass 2
//      runs each rank alone (in parallel) with those end times and writes its trace.
//   4. hardware_writer.cpp: telemetry and counters from pass 2's record; truth.cpp: truth.json.
#include "chopper/synth/synth.hpp"

#include <filesystem>

#include "chopper/base/error.hpp"
#include "chopper/synth/run.hpp"

namespace chopper {

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> p = {
      {"llama3-8b", 32, 4096, 14336, 32, 8, 128256, 1, 1},
      {"llama3-70b", 80, 8192, 28672, 64, 8, 128256, 1, 1},
      {"gpt3-175b", 96, 12288, 49152, 96, 96, 50257, 1, 1},
      {"mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 8, 2},
  };
  return p;
}

const ModelPreset* find_preset(std::string_view name) {
  for (const auto& p : model_presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> scenario_names() {
  return {"healthy", "dvfs", "exposed-comm", "launch-bound", "straggler", "demo"};
}

bool apply_scenario(const std::string& name, SynthConfig& c) {
  if (name == "healthy") return true;
  if (name == "dvfs") {
    c.dvfs = 0.25;
    return true;
  }
  if (name == "exposed-comm") {
    c.prefetch = false;
    c.comm_slowdown = 3.0;
    return true;
  }
  if (name == "launch-bound") {
    // Small kernels (256-token sequences) behind a slow host: the GPU waits for launches. Why the
    // host must be this slow: data parallelism moves every parameter each step whatever the batch,
    // so the host has to be slower than the network, not only than the kernels. On 8 H100s
    // (NVLink at 0.8 x 450 GB/s) a llama3-8b block's 436 MB take 7/8 x 436 MB / 360 GB/s = 1.06 ms
    // per all-gather or reduce-scatter (3.2 ms per block per step under FSDP; a 2.1 ms all-reduce
    // under DDP), the embedding and LM head 10 ms more, while a block's kernels at 256 tokens take
    // about 1.3 ms. A collective that runs while the compute stream waits for the host is exposed
    // communication (docs/metrics.md), so launch overhead leads only once the host takes well over
    // twice the communication time: 400 µs per op plus a 10 µs launch call (about 24 times the
    // healthy 12 + 5 µs: Python, dispatcher and launch call of one module-level op on a starved
    // host: an oversubscribed or throttled CPU, anomaly detection, heavy hooks), about 16 ms per
    // block per step. A host a few tens of µs per op slow hides behind the all-gathers, and the
    // scenario would show exposed communication instead of launch overhead.
    c.seq = 256;
    c.host_op_ns = 400000;
    c.launch_ns = 10000;
    return true;
  }
  if (name == "straggler") {
    c.straggler_rank = c.ranks > 1 ? c.ranks - 1 : 0;
    c.straggler_clock = 0.85;
    c.straggler_host_ns = 2000000;
    return true;
  }
  if (name == "demo") {
    c.dvfs = 0.15;
    c.mfu_loss = 0.1;
    c.comm_interference = 0.1;
    c.data_loader_stall_ns = 3000000;
    c.straggler_rank = c.ranks > 1 ? c.ranks - 1 : 0;
    c.straggler_clock = 0.8;
    c.node_clock_offset_ns = 0;
    c.noise = 0.02;
    return true;
  }
  return false;
}

namespace {

using namespace synth_model;

// Rejects a configuration the model cannot run, before anything is written.
void check_config(const SynthConfig& c) {
  if (c.ranks < 1 || c.gpus_per_node < 1 || c.iterations < 1 || c.batch < 1 || c.seq < 1)
    throw Error("ranks, gpus per node, iterations, batch and sequence length must be >= 1");
  if (c.dvfs < 0 || c.dvfs >= 0.9 || c.mfu_loss < 0 || c.mfu_loss >= 0.95 ||
      c.straggler_clock <= 0.1 || c.straggler_clock > 1 || c.noise < 0 || c.noise > 0.3 ||
      c.comm_slowdown < 1)
    throw Error("an inefficiency knob is out of range (see chopper synth --help)");
}

// The straggler's cost: the same run without it (same seed, so the same noise), lockstep too;
// per rank and iteration, the step time it adds. The noise's likewise: the same run without
// noise (what the ranks' varying kernel durations cost, mostly as waits at collectives for the
// rank that happened to be slowest).
TruthCosts effect_costs(const SynthConfig& c, const DeviceSpec& dev, const Program& prog,
                        const Shapes& shapes, const std::vector<RankSim>& st) {
  TruthCosts costs;
  costs.straggler.resize(static_cast<size_t>(c.ranks));
  costs.noise.resize(static_cast<size_t>(c.ranks));
  if (c.straggler_rank >= 0) {
    SynthConfig cf = c;
    cf.straggler_rank = -1;
    costs.straggler = step_cost(st, cf, dev, prog, shapes);
  }
  if (c.noise > 0) {
    SynthConfig cf = c;
    cf.noise = 0;
    costs.noise = step_cost(st, cf, dev, prog, shapes);
  }
  return costs;
}

}  // namespace

SynthSummary synthesize(const SynthConfig& c, const std::string& out_dir) {
  const DeviceSpec* dev = find_device(c.device);
  if (dev == nullptr)
    throw Error("unknown device '" + c.device + "' (h100, h200, b200, a100, mi300x, mi250)");
  const ModelPreset* m = find_preset(c.preset);
  if (m == nullptr)
    throw Error("unknown preset '" + c.preset +
                "' (llama3-8b, llama3-70b, gpt3-175b, mixtral-8x7b)");
  check_config(c);
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir + ": cannot create directory: " + ec.message());

  Shapes shapes{};
  const Program prog = build_program(c, *dev, *m, shapes);
  Simulator sim(c, *dev, prog, shapes);

  // Pass 1: lockstep over all ranks to find when every collective ends.
  std::vector<Ns> coll_end;
  const std::vector<RankSim> st = settle(c, sim, prog, coll_end);
  const TruthCosts costs = effect_costs(c, *dev, prog, shapes, st);

  // Pass 2: each rank alone, writing its trace.
  SynthSummary sum;
  std::vector<RankOutput> outs = trace_ranks(c, *dev, sim, prog, st, coll_end, out_dir, sum);

  const HardwareModel hw = hardware_model(*dev, outs);
  write_telemetry(c, hw, outs, out_dir, sum);
  write_counters(c, *dev, outs, out_dir, sum);
  write_truth(c, *dev, prog, shapes, hw, costs, outs, out_dir, sum);
  return sum;
}

}  // namespace chopper
