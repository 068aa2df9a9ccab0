#pragma once
// The labelling's passes (label_trace, label.hpp), private to hierarchy/: the Labeller and the
// state its passes share. The passes are split by what they label, one file each:
//   label.cpp             the driver, host ops' order and contexts (phase, layer, operation and
//                         class of each host op, top-down), and every GPU activity's labels from
//                         its launch and launching op;
//   label_iterations.cpp  where the iterations come from (rules, repeated annotations, the whole
//                         trace), the steps, and the iteration of work with no launch;
//   label_fallbacks.cpp   the phase fallbacks for work no phase range covers, and the layer of
//                         DDP bucket collectives.
// name_matcher.hpp applies the taxonomy's name rules to the rank's names.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chopper/base/flat_index.hpp"
#include "chopper/hierarchy/name_matcher.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper::labelling {

// The labels an op passes to everything below it.
// (Fields ordered for 32 bytes: one per host op.)
struct Ctx {
  int32_t layer = -1;
  StrId op = 0;
  int32_t top = kNoRow;     // outermost cpu_op below the innermost structural range / annotation
  int32_t anchor = kNoRow;  // the op that defines the operation (annotation or top)
  int32_t fwd = kNoRow;     // forward op of the nearest backward op at or above this one
  uint16_t phase_rule = kNoRule;
  uint16_t layer_rule = kNoRule;
  uint16_t op_rule = kNoRule;
  uint16_t cls_rule = kNoRule;
  Phase phase = Phase::kNone;
  OpClass cls = OpClass::kNone;
  bool recompute = false;  // below a checkpoint's recompute_fn in a backward op
};
static_assert(sizeof(Ctx) <= 32);

inline bool strong(Phase p) {
  return p == Phase::kBackward || p == Phase::kOptimizer;
}

// A phase range that covers every thread of the process during its span.
struct Span {
  Ns start, end;
  Phase phase;
  uint16_t rule;
};

// The indices of the rules labelling infers rather than reads from the taxonomy
// (inferred_rules(), docs/hierarchy.md): a label records the one that set it.
struct InferredRules {
  explicit InferredRules(const Taxonomy& tx)
      : flow(tx.inferred_index("fwdbwd_flow")),
        seq(tx.inferred_index("autograd_sequence")),
        thread(tx.inferred_index("autograd_thread")),
        fwd_only(tx.inferred_index("forward_only_trace")),
        gpu_span(tx.inferred_index("gpu_step_span")),
        repeated(tx.inferred_index("repeated_annotation")),
        whole(tx.inferred_index("whole_trace")),
        remainder(tx.inferred_index("step_remainder")),
        seed(tx.inferred_index("backward_seed")),
        transfer(tx.inferred_index("transfer_outside_phases")),
        forward_op(tx.inferred_index("forward_op")),
        recompute(tx.inferred_index("checkpoint_recompute")),
        bucket(tx.inferred_index("ddp_bucket_layer")),
        coll(tx.inferred_index("collective_type")),
        annot(tx.inferred_index("user_annotation")),
        top(tx.inferred_index("top_op")),
        leaf(tx.inferred_index("leaf_op")),
        kind(tx.inferred_index("kernel_kind")),
        default_class(tx.inferred_index("default_elementwise")) {}
  uint16_t flow, seq, thread, fwd_only, gpu_span, repeated, whole, remainder, seed, transfer,
      forward_op, recompute, bucket, coll, annot, top, leaf, kind, default_class;
};

// An iteration's range on the host clock: a host op an iteration rule matched, or a repeated
// annotation.
struct IterRange {
  Ns start, end;
  int64_t number;
};

inline bool starts_before(const IterRange& a, const IterRange& b) {
  return a.start != b.start ? a.start < b.start : a.number < b.number;
}

// Labels one rank: run() calls the passes below in their order. Each sets one level of the
// hierarchy (or a fallback for it) and records with every label the rule that set it.
class Labeller {
 public:
  Labeller(const Taxonomy& tx, RankTrace& t)
      : tx_(tx), t_(t), g_(t.gpu), h_(t.host), ng_(g_.size()), nh_(h_.size()), r_(tx), m_(tx, t) {}

  void run();

 private:
  // The passes, in run()'s order, and the file each is in.
  void clear_labels();                  // label.cpp
  void find_rule_iterations();          // label_iterations.cpp
  void order_host_ops();                // label.cpp
  void find_structural_iterations();    // label_iterations.cpp
  void match_fwdbwd_flows();            // label.cpp
  void build_contexts();                // label.cpp: each host op's phase, layer, operation, class
  void label_activities();              // label.cpp: each GPU activity's, from its launch
  void label_whole_trace();             // label_iterations.cpp
  void record_steps();                  // label_iterations.cpp
  void iteration_from_gpu_step_span();  // label_iterations.cpp
  void phase_from_all_thread_ranges();  // label_fallbacks.cpp: phase fallbacks 1 to 6
  void phase_from_autograd_thread();
  void phase_of_transfers();
  void phase_of_backward_seed();
  void phase_of_forward_only_rank();
  void phase_of_step_remainder();
  void layer_of_ddp_buckets();  // label_fallbacks.cpp

  // Per host op, in build_contexts (label.cpp). Inlined into the loop, as the passes were written
  // before they had names (a call per op and step costs a few percent of the labelling).
  [[gnu::always_inline]] inline void own_phase(size_t u, const NameMatch& nm, Ctx& c);
  [[gnu::always_inline]] inline void own_layer(const NameMatch& nm, Ctx& c) const;
  [[gnu::always_inline]] inline void own_operation(int32_t i, const NameMatch& nm, Ctx& c) const;
  void take_forward_labels(int32_t i, const NameMatch& nm, Ctx& c);
  [[gnu::always_inline]] inline void remember_forward_op(int32_t i, const Ctx& c);
  std::pair<uint16_t, OpClass> class_of_chain(int32_t j);
  StrId operation_of(int32_t f) const;
  // Per GPU activity, in label_activities (label.cpp), inlined likewise.
  [[gnu::always_inline]] inline void find_launch(size_t a);
  [[gnu::always_inline]] inline CollType called_collective(size_t a) const;
  [[gnu::always_inline]] inline void class_from_kind(size_t a, CollType ctype);
  [[gnu::always_inline]] inline void labels_from_launching_op(size_t a, CollType ctype);
  [[gnu::always_inline]] inline void class_from_kernel_name(size_t a);
  // The number of the iteration whose range holds ts, else kNoId.
  int64_t iteration_at(Ns ts) const {
    auto it = std::upper_bound(iters_.begin(), iters_.end(), ts,
                               [](Ns v, const IterRange& r) { return v < r.start; });
    // Ranges do not overlap in practice; look back a little in case they nest.
    for (int k = 0; k < 4 && it != iters_.begin(); ++k) {
      --it;
      if (ts < it->end) return it->number;
    }
    return kNoId;
  }

  const Taxonomy& tx_;
  RankTrace& t_;
  GpuActivities& g_;
  const HostOps& h_;
  const size_t ng_, nh_;
  const InferredRules r_;
  Matcher m_;

  // Iterations: their ranges in start order, the rule that found them (kNoRule: none), and what
  // they are (the iteration_source diagnostic). whole_trace: none found, the trace is one.
  std::vector<IterRange> iters_;
  uint16_t iter_rule_ = kNoRule;
  std::string iter_source_;
  bool whole_trace_ = false;
  // Host ops, every one after its parent and after every op that started before it.
  std::vector<int32_t> order_;
  // Per host op: 1 for a repeated range found as an iteration and the ranges around it (they are
  // structural; empty when an iteration rule matched).
  std::vector<uint8_t> window_op_;
  // fwdbwd flows: backward op -> forward op, and whether an op ends or starts a flow.
  std::vector<int32_t> flow_fwd_;
  std::vector<uint8_t> flow_end_, flow_start_;
  // Contexts: per host op, and the phase ranges that cover every thread.
  std::vector<Ctx> ctx_;
  std::vector<Span> spans_;
  // Forward ops by Sequence number: an open-addressing index and the op of each of its ids.
  FlatIndex<int64_t, std::hash<int64_t>> seq_index_;
  std::vector<int32_t> fwd_by_seq_;
  // Class of the work under op j: host class rules on the chain from the operation's outermost
  // op down to j, outermost first. Memoised (0xfffe: not yet).
  std::vector<std::pair<uint16_t, OpClass>> chain_class_;
  std::vector<int32_t> chain_;
  // Per GPU activity: the launch's time and thread (RankTrace::threads); kNoId: no launch.
  std::vector<Ns> launch_ts_;
  std::vector<int64_t> launch_tid_;
};

}  // namespace chopper::labelling
