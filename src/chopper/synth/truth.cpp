// truth.json: the run's configuration and device, then per rank its iterations (span, energy,
// link bytes, what the straggler and the noise cost), its effects per iteration, phase, layer and
// operation, and every kernel's labels and effect-by-effect duration.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "chopper/base/error.hpp"
#include "chopper/synth/run.hpp"

namespace chopper::synth_model {

namespace {

std::string op_label(const Program& p, int32_t op) {
  if (op >= 0) return p.ops[static_cast<size_t>(op)];
  // Kernels launched outside any annotation: the operation is the launching op (the batch upload
  // and the loss readback).
  return op == -2 ? "aten::copy_" : "aten::_local_scalar_dense";
}

// The configuration and the device.
void truth_head(const SynthConfig& c, const DeviceSpec& dev, const Shapes& shapes, std::string& t) {
  fmt::format_to(
      std::back_inserter(t),
      "{{\n\"generator\": \"chopper synth\",\n\"config\": {{\"preset\": \"{}\", \"layers\": {}, "
      "\"batch\": {}, \"seq\": {}, \"dtype\": \"{}\", \"parallel\": \"{}\", \"ranks\": {}, "
      "\"gpus_per_node\": {}, \"device\": \"{}\", \"iterations\": {}, \"first_step\": {}, "
      "\"seed\": {}, \"dvfs\": {}, \"mfu_loss\": {}, \"comm_interference\": {}, "
      "\"comm_slowdown\": {}, \"prefetch\": {}, \"host_op_ns\": {}, \"launch_ns\": {}, "
      "\"launch_latency_ns\": {}, \"data_loader_stall_ns\": {}, \"straggler_rank\": {}, "
      "\"straggler_clock\": {}, \"straggler_host_ns\": {}, \"node_clock_offset_ns\": {}, "
      "\"noise\": {}, \"matrix_efficiency\": {}, \"memory_efficiency\": {}}},\n",
      c.preset, shapes.layers, c.batch, c.seq, dtype_name(c.dtype),
      c.parallel == Parallelism::kFsdp ? "fsdp" : "ddp", c.ranks, c.gpus_per_node, dev.name,
      c.iterations, c.first_step, c.seed, c.dvfs, c.mfu_loss, c.comm_interference, c.comm_slowdown,
      c.prefetch, c.host_op_ns, c.launch_ns, c.launch_latency_ns, c.data_loader_stall_ns,
      c.straggler_rank, c.straggler_clock, c.straggler_host_ns, c.node_clock_offset_ns, c.noise,
      c.matrix_efficiency, c.memory_efficiency);
  fmt::format_to(std::back_inserter(t),
                 "\"device\": {{\"name\": \"{}\", \"max_clock_mhz\": {}, \"matrix_tflops\": {}, "
                 "\"vector_tflops_fp32\": {}, \"mem_bw_gbs\": {}}},\n\"ranks\": [",
                 dev.name, dev.max_clock_mhz, dev.matrix_tflops(c.dtype), dev.vector_tflops_fp32,
                 dev.mem_bw_gbs);
}

// One rank's iterations: span, energy, link bytes and the step time each cost added.
void truth_iterations(const HardwareModel& hw, const TruthCosts& costs, size_t r,
                      const RankOutput& o, std::string& t) {
  const auto& iter_energy = hw.iter_energy;
  const auto& straggler_cost = costs.straggler;
  const auto& noise_cost = costs.noise;
  for (size_t i = 0; i < o.steps.size(); ++i) {
    const auto [tx, rx] = link_over(o, o.steps[i].second.first, o.steps[i].second.second);
    fmt::format_to(std::back_inserter(t),
                   "{}{{\"iteration\": {}, \"start_ns\": {}, \"end_ns\": {}, \"energy_j\": "
                   "{:.6f}, \"link_tx_bytes\": {:.0f}, \"link_rx_bytes\": {:.0f}, "
                   "\"straggler_cost_ns\": {}, \"noise_cost_ns\": {}}}",
                   i ? ", " : "", o.steps[i].first, o.steps[i].second.first,
                   o.steps[i].second.second, iter_energy[r][i], tx, rx,
                   i < straggler_cost[r].size() ? straggler_cost[r][i] : 0,
                   i < noise_cost[r].size() ? noise_cost[r][i] : 0);
  }
}

// One rank's effects, per iteration, phase, layer and operation.
void truth_effects(const Program& prog, const RankOutput& o, std::string& t) {
  bool first = true;
  for (const auto& [key, ef] : o.effects) {
    fmt::format_to(
        std::back_inserter(t),
        "{}\n  {{\"iteration\": {}, \"phase\": \"{}\", \"layer\": {}, \"operation\": \"{}\", "
        "\"kernels\": {}, \"kernel_ns\": {}, \"dvfs_ns\": {}, \"straggler_clock_ns\": {}, "
        "\"mfu_loss_ns\": {}, \"comm_interference_ns\": {}, \"noise_ns\": {}, "
        "\"exposed_comm_ns\": {}, \"launch_overhead_ns\": {}, \"host_stall_ns\": {}, "
        "\"host_late_ns\": {}}}",
        first ? "" : ",", key.iteration, phase_name(key.phase), key.layer, op_label(prog, key.op),
        ef.kernels, ef.kernel_ns, ef.dvfs_ns, ef.straggler_ns, ef.mfu_ns, ef.interference_ns,
        ef.noise_ns, ef.exposed_comm_ns, ef.launch_ns, ef.stall_ns, ef.host_late_ns);
    first = false;
  }
}

// One rank's kernels: a column list and a row per kernel.
void truth_kernels(const Program& prog, const RankOutput& o, std::string& t) {
  t += "],\n \"kernels\": {\"columns\": [\"correlation\", \"iteration\", \"phase\", \"layer\", "
       "\"operation\", \"op_class\", \"clock_mhz\", \"start_ns\", \"dur_ns\", \"nominal_ns\", "
       "\"mfu_loss_ns\", \"straggler_clock_ns\", \"dvfs_ns\", \"comm_interference_ns\", "
       "\"noise_ns\", \"exposed_comm_ns\", \"launch_overhead_ns\", \"host_stall_ns\", "
       "\"flops\", \"bytes\", \"theoretical_ns\", \"host_late_ns\"], \"rows\": [";
  for (size_t i = 0; i < o.kernels.size(); ++i) {
    const KernelTruth& k = o.kernels[i];
    fmt::format_to(std::back_inserter(t),
                   "{}\n  [{}, {}, \"{}\", {}, \"{}\", \"{}\", {}, {}, {}, {}, {}, {}, {}, {}, "
                   "{}, {}, {}, {}, {:.0f}, {:.0f}, {}, {}]",
                   i ? "," : "", k.correlation, k.iteration, phase_name(k.phase), k.layer,
                   op_label(prog, k.op), op_class_name(k.cls), k.clock_mhz, k.start_ns, k.dur_ns,
                   k.nominal_ns, k.mfu_ns, k.straggler_ns, k.dvfs_ns, k.interference_ns, k.noise_ns,
                   k.exposed_comm_ns, k.launch_ns, k.stall_ns, k.flops, k.bytes, k.theoretical_ns,
                   k.host_late_ns);
  }
}

}  // namespace

// truth.json, written rank by rank so thousands of ranks never sit in one string.
void write_truth(const SynthConfig& c, const DeviceSpec& dev, const Program& prog,
                 const Shapes& shapes, const HardwareModel& hw, const TruthCosts& costs,
                 std::vector<RankOutput>& outs, const std::string& out_dir, SynthSummary& sum) {
  const Ns tel_offset = telemetry_offset_ns(c, dev.vendor == Vendor::kAmd);
  sum.truth_file = out_dir + "/truth.json";
  FILE* tf = std::fopen(sum.truth_file.c_str(), "wb");
  if (tf == nullptr) throw Error(sum.truth_file + ": cannot write");
  std::unique_ptr<FILE, int (*)(FILE*)> closer(tf, &std::fclose);
  std::string t;
  auto flush = [&] {
    if (!t.empty() && std::fwrite(t.data(), 1, t.size(), tf) != t.size())
      throw Error(sum.truth_file + ": write failed");
    sum.bytes_written += t.size();
    t.clear();
  };
  truth_head(c, dev, shapes, t);
  for (size_t r = 0; r < outs.size(); ++r) {
    RankOutput& o = outs[r];
    fmt::format_to(std::back_inserter(t),
                   "{}\n{{\"rank\": {}, \"node\": {}, \"clock_offset_ns\": {}, "
                   "\"telemetry_offset_ns\": {}, \"straggler\": {}",
                   r ? "," : "", r, static_cast<int>(r) / c.gpus_per_node, o.offset, tel_offset,
                   static_cast<int>(r) == c.straggler_rank);
    // --et: what linking its host ET to its Kineto trace must find: every operator node linked,
    // and the ops whose shapes only the ET holds.
    if (c.et)
      fmt::format_to(std::back_inserter(t),
                     ", \"host_et\": {{\"file\": \"rank-{}.et.json\", \"operators\": {}, "
                     "\"linked\": {}, \"dims_dropped\": {}}}",
                     r, o.et_operators, o.et_operators, o.et_dims_dropped);
    t += ",\n \"iterations\": [";
    truth_iterations(hw, costs, r, o, t);
    t += "],\n \"effects\": [";
    truth_effects(prog, o, t);
    truth_kernels(prog, o, t);
    t += "]}}";
    flush();
    // This rank's tables are no longer needed.
    outs[r].kernels = {};
    outs[r].effects = {};
  }
  t += "\n]\n}\n";
  flush();
}

}  // namespace chopper::synth_model
