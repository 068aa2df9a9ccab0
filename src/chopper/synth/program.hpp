#pragma once
// The synthetic run's program: the host actions one training step performs (annotations, ops that
// launch kernels, collectives, waits), identical on every rank, built from the model preset.
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/model/rank_trace.hpp"
#include "chopper/synth/synth.hpp"

namespace chopper::synth_model {

inline bool is_comm(OpClass c) {
  return c == OpClass::kAllGather || c == OpClass::kReduceScatter || c == OpClass::kAllReduce;
}

enum class Act : uint8_t {
  kStepBegin,   // ProfilerStep#N (+ data loader stall)
  kStepEnd,     // loss.item(): DtoH copy + stream sync, then the step range closes
  kRangeBegin,  // user annotation or cpu_op that launches nothing itself
  kRangeEnd,
  kLaunch,    // cpu_op + runtime call + one kernel / memcpy / memset on the compute stream
  kColl,      // record_param_comms + runtime call + NCCL kernel on the comm stream
  kWaitColl,  // the compute stream waits for collective `coll` (event wait)
};

struct Action {
  Act act;
  Phase phase = Phase::kOther;
  int layer = -1;
  int32_t op = -1;          // operation label (index into Program::ops)
  int32_t kdef = -1;        // kernel definition
  int32_t coll = -1;        // collective number
  int32_t range = -1;       // host range name (index into Program::ops)
  bool annotation = false;  // user_annotation (else cpu_op)
  bool backward_thread = false;
  int32_t fwd_of = -1;  // backward op: the forward action it differentiates (for fwdbwd + seq)
};

struct KernelDef {
  KernelDef(std::string n, OpClass c, double fl, double by, bool mx)
      : name(std::move(n)), cls(c), flops(fl), bytes(by), matrix(mx) {}
  std::string name;
  OpClass cls;
  double flops;
  double bytes;
  bool matrix;
  int64_t coll_bytes = 0;         // collectives: unsharded message bytes
  std::string host_op;            // aten op name that launches it
  std::string dims;               // "Input Dims" JSON
  std::string types;              // "Input type" JSON; empty = ["c10::BFloat16"]
  std::string concrete;           // "Concrete Inputs" JSON; empty = not written
  double gm = 0, gn = 0, gk = 0;  // GEMMs: the forward product [gm, gk] x [gk, gn]
};

struct Program {
  std::vector<Action> acts;
  std::vector<KernelDef> kdefs;
  std::vector<std::string> ops;  // names (operation labels and host range names)
  int n_colls = 0;
  int32_t name(const std::string& s) {
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i] == s) return static_cast<int32_t>(i);
    ops.push_back(s);
    return static_cast<int32_t>(ops.size() - 1);
  }
};

struct Shapes {
  double T, h, kv, f, vocab, seq, B;
  int layers, experts, top_k, heads, kv_heads;
  double params_layer, params_outer;
};

// The program of `c.iterations` training steps; `shapes` receives the model's dimensions.
Program build_program(const SynthConfig& c, const DeviceSpec& d, const ModelPreset& m,
                      Shapes& shapes);

}  // namespace chopper::synth_model
