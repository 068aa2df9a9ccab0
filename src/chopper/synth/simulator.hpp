#pragma once
// The synthetic run's simulator: one rank's host, compute stream and communication stream stepping
// through the program, each kernel's duration built up effect by effect (nominal roofline time,
// matrix-unit loss, straggler clock cap, DVFS clock, noise, comm interference), and, in pass 2,
// its Kineto events and truth.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chopper/synth/et_writer.hpp"
#include "chopper/synth/program.hpp"
#include "chopper/synth/trace_writer.hpp"

namespace chopper::synth_model {

struct KernelTruth {
  int64_t correlation;
  int iteration;
  Phase phase;
  int layer;
  int32_t op;
  OpClass cls;
  int clock_mhz;
  Ns start_ns, dur_ns;
  Ns nominal_ns, mfu_ns, straggler_ns, dvfs_ns, interference_ns, noise_ns;
  Ns exposed_comm_ns, launch_ns, stall_ns, host_late_ns;
  double flops, bytes;
  Ns theoretical_ns;   // roofline time at the maximum clock and peak rates (see launch_kernel)
  const char* kernel;  // the kernel's name (program text or a literal: outlives the run)
};

struct EffectKey {
  int iteration;
  Phase phase;
  int layer;
  int32_t op;
  bool operator<(const EffectKey& o) const {
    return std::tie(iteration, phase, layer, op) < std::tie(o.iteration, o.phase, o.layer, o.op);
  }
};
struct Effects {
  uint64_t kernels = 0;
  Ns kernel_ns = 0, dvfs_ns = 0, straggler_ns = 0, mfu_ns = 0, interference_ns = 0, noise_ns = 0;
  Ns exposed_comm_ns = 0, launch_ns = 0, stall_ns = 0, host_late_ns = 0;
};

struct ClockPoint {
  Ns t;
  int mhz;
  double heat;
};

// A kernel's busy interval on the trace clock, with the clock it ran at (the power model);
// `comm` for a collective.
struct BusySpan {
  Ns start, end;
  int mhz;
  bool comm;
  // Collectives: the bytes this GPU sends and receives over NVLink / XGMI, moved evenly over
  // [xfer_start, end) (the transfer runs once every rank has arrived: the nominal duration).
  Ns xfer_start = 0;
  double tx_bytes = 0, rx_bytes = 0;
};

// Open host ranges of one thread.
struct OpenRange {
  int32_t name;
  Ns start;
  bool annotation;
  int64_t ext;
  int64_t seq;
  int32_t fwd_action;
  std::string dims;
};

struct Ids {
  int64_t corr = 1, ext = 1, seq = 1, flow = 1;
};

// A rank's scalar state (what settle() saves at an iteration's start and restores each round).
struct RankScalars {
  int rank = 0, node = 0;
  Ns host = 0;
  Ns compute_free = 0, comm_free = 0;
  Ns wait_until = 0;
  Ns pending_stall = 0;
  double heat = 0;  // ns of full load, decays when idle
  Ns heat_t = 0;
  int iteration = -1;
  int clock_mhz = 0;
  size_t issued = 0, comm_head = 0;  // see coll_span
};

struct RankSim : RankScalars {
  std::vector<std::pair<Ns, Ns>> step_spans;  // each ProfilerStep's host span (node clock)
  // This GPU's collective kernels [start, end) by collective number (the comm stream runs them
  // one at a time, in program order). Those below `issued` are this run's; the rest come from the
  // previous round of pass 1 (pass 2: from pass 1), kNoSpan where not known yet: a kernel slows
  // beside a collective the host issues after it, so its duration needs them (settle()). From
  // comm_head on, the issued ones may still overlap the compute stream's next activity.
  std::vector<std::pair<Ns, Ns>> coll_span;
  std::vector<std::pair<Ns, Ns>> scratch;  // slowed()'s
};

constexpr std::pair<Ns, Ns> kNoSpan{INT64_MAX, INT64_MAX};

class Simulator {
 public:
  Simulator(const SynthConfig& c, const DeviceSpec& d, const Program& p, const Shapes& s)
      : c_(c), d_(d), p_(p), s_(s) {
    fmax_ = d.max_clock_mhz;
    floor_mhz_ = static_cast<int>(fmax_ * (1.0 - c.dvfs));
    nodes_ = (c.ranks + c.gpus_per_node - 1) / c.gpus_per_node;
    compute_stream_ = d.vendor == Vendor::kAmd ? 1 : 7;
    comm_stream_ = d.vendor == Vendor::kAmd ? 2 : 20;
  }

  // Start of the run on every host clock (true time, ns since the epoch).
  static constexpr Ns kRunStart = 1767225605000000000;  // 2026-01-01 00:00:05 UTC
  static constexpr Ns kBase = 1767225600000000000;      // baseTimeNanoseconds

  // Host and streams start together: the first kernel's wait for its launch is launch overhead
  // measured from the start of the run, not from the epoch.
  static void start_rank(RankSim& r, Ns t) {
    r.host = t;
    r.compute_free = t;
    r.comm_free = t;
    r.heat_t = t;
    r.clock_mhz = 0;
  }

  Ns node_offset(int node) const {
    if (node == 0 || c_.node_clock_offset_ns == 0) return 0;
    return (node % 2 ? 1 : -1) * static_cast<Ns>((node + 1) / 2) * c_.node_clock_offset_ns;
  }
  int local_rank(int rank) const { return rank % c_.gpus_per_node; }

  // Collective duration (ns) for the model: ring algorithm over the group of all ranks.
  Ns coll_duration(const KernelDef& k) const;

  // One step of the program for one rank. `emit` is null in pass 1. For kColl in pass 1 the
  // caller splits the work: coll_arrive() then coll_finish().
  struct Emit {
    TraceWriter* w;
    std::vector<KernelTruth>* kernels;
    std::map<EffectKey, Effects>* effects;
    std::vector<BusySpan>* busy;  // kernel intervals
    std::vector<ClockPoint>* clock;
    std::vector<std::pair<int, std::pair<Ns, Ns>>>* steps;
    std::vector<OpenRange> open_main, open_bwd;
    std::vector<int64_t> fwd_seq, fwd_flow;  // per action index: the forward op's ids
    std::vector<Ns> fwd_ts;
    Ids ids;
    EtWriter* et = nullptr;  // --et: the rank's host ET, else null
  };
  // The Kineto "Record function id" of the host op of External id `ext`: the id itself when a
  // host ET is written (the ET's rf_id), else 0 as before.
  static int64_t rf_id(const Emit& e, int64_t ext) { return e.et != nullptr ? ext : 0; }

  int64_t pid(const RankSim& r) const { return 4000 + r.rank; }
  int64_t tid(const RankSim& r, bool bwd) const {
    return bwd ? 4000 + r.rank + 100000 : 4000 + r.rank;
  }

  // When this rank's collective kernel could start (pass 1 takes the latest over all ranks).
  Ns coll_arrive(const RankSim& r, const Action& a) const;
  // The collective's host ops and kernel, given when it starts (`arrival`) and ends.
  void coll_finish(RankSim& r, const Action& a, Ns arrival, Ns end, Emit* e);
  // Everything but collectives.
  void step(RankSim& r, size_t pc, const std::vector<Ns>* coll_end, Emit* e);

 private:
  // A launch's host times and its activity's start and duration on the compute stream.
  struct LaunchTimes {
    Ns op_start, rt_start, rt_end, start, dur;
  };
  // The compute stream's idle time before an activity, split into its causes (see idle_truth).
  struct IdleTruth {
    Ns exposed, host_late, host_gap, stall;
  };
  // The clock an activity runs at: the one DVFS alone would run, and the one it runs (capped).
  struct KernelClock {
    int f_dvfs, f;
    bool changed;
  };
  // An activity's duration after each effect, in the order they apply.
  struct Durations {
    Ns nominal, d1, d_dvfs, d2, d3, d4;
  };

  int clock_for(const RankSim& r) const;
  void cool(RankSim& r, Ns until) const;
  void coll_truth(RankSim& r, const Action& a, const KernelDef& k, Ns arrival, Ns end, Emit& e,
                  int64_t corr);
  void step_begin(RankSim& r, Emit* e);
  void step_end(RankSim& r, Emit* e);
  void range_begin(RankSim& r, const Action& a, Emit* e);
  void range_end(RankSim& r, const Action& a, Emit* e);
  Ns slowed(RankSim& r, Ns start, Ns work) const;
  // Roofline time at the maximum clock: FLOPs at the peak rate of the unit that runs them (matrix
  // or vector), or bytes at the peak memory bandwidth, whichever is longer.
  Ns theoretical_ns(bool matrix, double flops, double bytes) const;
  static std::string us(Ns ns) {
    return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000));
  }
  void runtime_event(TraceWriter& w, const RankSim& r, bool bwd, const char* name, Ns ts, Ns dur,
                     int64_t corr, int64_t ext) const;
  void flow(TraceWriter& w, int64_t id, int64_t spid, int64_t stid, Ns sts, int64_t fpid,
            int64_t ftid, Ns fts) const;

  // One op with one GPU activity on the compute stream. `k` is null for the built-in copies.
  void launch_kernel(RankSim& r, const KernelDef* k, Emit* e, const char* op_label, OpClass cls,
                     double flops, double bytes, const char* kname, const char* host_op,
                     Phase phase, int layer, bool bwd, int32_t op_id, size_t pc = SIZE_MAX);
  IdleTruth idle_truth(RankSim& r, Ns free, Ns rt_start, Ns ready, Ns start);
  KernelClock kernel_clock(RankSim& r, Ns start);
  Durations durations(RankSim& r, const KernelClock& clk, bool matrix, OpClass cls, double flops,
                      double bytes, Ns start, size_t pc);
  void write_cpu_op(RankSim& r, Emit& e, const KernelDef* k, const char* host_op, Phase phase,
                    bool bwd, size_t pc, const LaunchTimes& lt, int64_t ext);
  void write_gpu_activity(const RankSim& r, Emit& e, const KernelDef* k, OpClass cls, double bytes,
                          const char* kname, bool bwd, bool matrix, const LaunchTimes& lt,
                          int64_t corr, int64_t ext);
  void record_kernel(RankSim& r, Emit& e, const char* op_label, OpClass cls, double flops,
                     double bytes, const char* kname, Phase phase, int layer, int32_t op_id,
                     bool matrix, const LaunchTimes& lt, const IdleTruth& idle,
                     const KernelClock& clk, const Durations& d, int64_t corr);

  const SynthConfig& c_;
  const DeviceSpec& d_;
  const Program& p_;
  const Shapes& s_;
  int fmax_, floor_mhz_, nodes_;
  int compute_stream_, comm_stream_;
};

}  // namespace chopper::synth_model
