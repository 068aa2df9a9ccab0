#pragma once
// The generator's run, between its parts: pass 1 (settle the collectives' times), pass 2 (each
// rank's trace and truth), then the files written from pass 2's record: telemetry and counters
// (hardware_writer.cpp) and truth.json (truth.cpp).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/synth/simulator.hpp"

namespace chopper::synth_model {

// What pass 2 records of one rank.
struct RankOutput {
  std::vector<KernelTruth> kernels;
  std::map<EffectKey, Effects> effects;
  std::vector<BusySpan> busy;
  std::vector<ClockPoint> clock;
  std::vector<std::pair<int, std::pair<Ns, Ns>>> steps;
  uint64_t bytes = 0;
  Ns offset = 0;
  uint64_t et_operators = 0;     // --et: operator nodes of its host ET
  uint64_t et_dims_dropped = 0;  // --et: launching ops whose Input Dims only the ET holds
  std::string error;
};

// ---- passes.cpp
// Pass 1: every rank in lockstep, iteration by iteration, to find when each collective ends
// (coll_end). Returns the ranks' final states (their step spans and collective intervals).
std::vector<RankSim> settle(const SynthConfig& c, Simulator& sim, const Program& prog,
                            std::vector<Ns>& coll_end);
// Per rank and iteration: the step time of the run in `st` minus that of `cf` (the same job
// without one effect: its cost), both settled.
std::vector<std::vector<Ns>> step_cost(const std::vector<RankSim>& st, const SynthConfig& cf,
                                       const DeviceSpec& dev, const Program& prog,
                                       const Shapes& shapes);
// Pass 2: each rank alone (in parallel) with pass 1's collective times, writing rank-N.json.
// Adds the trace files, their bytes and the kernel count to `sum`.
std::vector<RankOutput> trace_ranks(const SynthConfig& c, const DeviceSpec& dev, Simulator& sim,
                                    const Program& prog, const std::vector<RankSim>& st,
                                    const std::vector<Ns>& coll_end, const std::string& out_dir,
                                    SynthSummary& sum);

// ---- hardware_writer.cpp
// The power and link model over pass 2's busy spans (sorted here, in start order, first).
struct HardwareModel {
  const DeviceSpec* dev;
  std::vector<std::vector<std::pair<Ns, Ns>>> busy_union;  // per rank: kernels' union
  std::vector<std::vector<double>> iter_energy;            // per rank and iteration, J
};
HardwareModel hardware_model(const DeviceSpec& dev, std::vector<RankOutput>& outs);
// Link bytes moved in [lo, hi) by a rank's collectives (tx, rx), the transfers spread evenly.
std::pair<double, double> link_over(const RankOutput& o, Ns lo, Ns hi);
// The telemetry tool's clock minus the trace clock of the same node.
Ns telemetry_offset_ns(const SynthConfig& c, bool amd);
void write_telemetry(const SynthConfig& c, const HardwareModel& hw,
                     const std::vector<RankOutput>& outs, const std::string& out_dir,
                     SynthSummary& sum);
void write_counters(const SynthConfig& c, const DeviceSpec& dev,
                    const std::vector<RankOutput>& outs, const std::string& out_dir,
                    SynthSummary& sum);
// Writes `txt` to `path` and counts it in `files` and `sum`.
void write_text_file(const std::string& path, const std::string& txt,
                     std::vector<std::string>& files, SynthSummary& sum);

// ---- truth.cpp
// truth.json, rank by rank (each rank's kernels and effects freed once written).
struct TruthCosts {
  std::vector<std::vector<Ns>> straggler, noise;  // per rank and iteration (step_cost)
};
void write_truth(const SynthConfig& c, const DeviceSpec& dev, const Program& prog,
                 const Shapes& shapes, const HardwareModel& hw, const TruthCosts& costs,
                 std::vector<RankOutput>& outs, const std::string& out_dir, SynthSummary& sum);

}  // namespace chopper::synth_model
