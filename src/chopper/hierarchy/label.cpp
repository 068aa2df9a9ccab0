// The labelling's driver, the host ops' order and contexts, and the GPU activities' labels from
// their launch (label_passes.hpp says where the other passes are).
#include "chopper/hierarchy/label.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "chopper/base/sort.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/hierarchy/label_passes.hpp"

namespace chopper {

namespace labelling {

namespace {

OpClass class_of_collective(CollType c) {
  switch (c) {
    case CollType::kAllReduce:
      return OpClass::kAllReduce;
    case CollType::kAllGather:
      return OpClass::kAllGather;
    case CollType::kReduceScatter:
      return OpClass::kReduceScatter;
    case CollType::kAllToAll:
      return OpClass::kAllToAll;
    case CollType::kBroadcast:
      return OpClass::kBroadcast;
    case CollType::kReduce:
      return OpClass::kReduce;
    case CollType::kSendRecv:
    case CollType::kSend:
    case CollType::kRecv:
      return OpClass::kSendRecv;
    case CollType::kBarrier:
      return OpClass::kBarrier;
    default:
      return OpClass::kCollective;
  }
}

}  // namespace

void Labeller::run() {
  t_.label_rules = tx_.label_rule_names();
  clear_labels();
  find_rule_iterations();
  order_host_ops();
  find_structural_iterations();
  match_fwdbwd_flows();
  build_contexts();
  label_activities();
  label_whole_trace();
  record_steps();
  iteration_from_gpu_step_span();
  phase_from_all_thread_ranges();
  phase_from_autograd_thread();
  phase_of_transfers();
  phase_of_backward_seed();
  phase_of_forward_only_rank();
  phase_of_step_remainder();
  layer_of_ddp_buckets();
}

void Labeller::clear_labels() {
  g_.iteration.assign(ng_, kNoId);
  g_.phase.assign(ng_, Phase::kNone);
  g_.layer.assign(ng_, -1);
  g_.operation.assign(ng_, 0);
  g_.op_class.assign(ng_, OpClass::kNone);
  g_.iteration_rule.assign(ng_, kNoRule);
  g_.phase_rule.assign(ng_, kNoRule);
  g_.layer_rule.assign(ng_, kNoRule);
  g_.operation_rule.assign(ng_, kNoRule);
  g_.op_class_rule.assign(ng_, kNoRule);
}

// Host ops in start order, a parent before its children (so a forward op precedes its backward
// op).
void Labeller::order_host_ops() {
  std::vector<int32_t> depth(nh_, -1);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < nh_; ++i) {
    int32_t j = static_cast<int32_t>(i);
    while (j != kNoRow && depth[static_cast<size_t>(j)] < 0) {
      stack.push_back(j);
      j = h_.parent[static_cast<size_t>(j)];
    }
    int32_t d = j == kNoRow ? -1 : depth[static_cast<size_t>(j)];
    while (!stack.empty()) {
      depth[static_cast<size_t>(stack.back())] = ++d;
      stack.pop_back();
    }
  }
  order_.resize(nh_);
  std::iota(order_.begin(), order_.end(), 0);
  // Host ops come in a trace nearly in start order: merging the ascending runs of the file's
  // order costs a few sequential passes where a sort would jump about the columns.
  const HostOps& h = h_;
  sort_by_runs(order_, [&](int32_t a, int32_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    if (h.start_ns[ua] != h.start_ns[ub]) return h.start_ns[ua] < h.start_ns[ub];
    if (depth[ua] != depth[ub]) return depth[ua] < depth[ub];
    return a < b;
  });
}

// ---- host-op contexts

// fwdbwd flows start at the forward op and end at the backward op, both found by exact ts on
// their thread (the outermost op starting there).
void Labeller::match_fwdbwd_flows() {
  flow_fwd_.assign(nh_, kNoRow);
  flow_end_.assign(nh_, 0);
  flow_start_.assign(nh_, 0);
  const Flows& f = t_.flows;
  bool any = false;
  for (size_t i = 0; i < f.size() && !any; ++i) any = f.kind[i] == FlowKind::kFwdBwd;
  if (!any) return;
  // Endpoints in time order, merged with the ops (also in start order): the op of an endpoint is
  // the first (outermost) op on its thread that starts at its ts.
  std::vector<uint32_t> ends;
  for (size_t i = 0; i < f.size(); ++i)
    if (f.kind[i] == FlowKind::kFwdBwd && f.phase[i] != FlowPhase::kStep)
      ends.push_back(static_cast<uint32_t>(i));
  sort_by_runs(ends, [&](uint32_t x, uint32_t y) {
    return f.ts_ns[x] != f.ts_ns[y] ? f.ts_ns[x] < f.ts_ns[y] : x < y;
  });
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> by_id;  // id -> (start, end op)
  size_t j = 0;
  for (uint32_t e : ends) {
    const Ns ts = f.ts_ns[e];
    while (j < nh_ && h_.start_ns[static_cast<size_t>(order_[j])] < ts) ++j;
    for (size_t k = j; k < nh_ && h_.start_ns[static_cast<size_t>(order_[k])] == ts; ++k) {
      const auto u = static_cast<size_t>(order_[k]);
      if (h_.thread[u] != f.thread[e]) continue;
      auto& slot = by_id.try_emplace(f.id[e], kNoRow, kNoRow).first->second;
      (f.phase[e] == FlowPhase::kStart ? slot.first : slot.second) = order_[k];
      break;
    }
  }
  for (const auto& [id, se] : by_id) {
    if (se.first != kNoRow) flow_start_[static_cast<size_t>(se.first)] = 1;
    if (se.second != kNoRow) flow_end_[static_cast<size_t>(se.second)] = 1;
    if (se.first != kNoRow && se.second != kNoRow && se.first != se.second)
      flow_fwd_[static_cast<size_t>(se.second)] = se.first;
  }
}

// Each host op's context: its parent's, changed by what the op itself says.
void Labeller::build_contexts() {
  ctx_.assign(nh_, Ctx{});
  chain_class_.assign(nh_, {0xfffe, OpClass::kNone});
  for (int32_t i : order_) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = h_.parent[u];
    Ctx c = p == kNoRow ? Ctx{} : ctx_[static_cast<size_t>(p)];
    const NameMatch& nm = m_.host(h_.name[u]);
    own_phase(u, nm, c);
    own_layer(nm, c);
    own_operation(i, nm, c);
    if (nm.recompute_frame && c.phase == Phase::kBackward) {
      // Activation checkpointing: below runs the forward again, each op its own forward op's
      // labels (the backward op above is only what asked for the activations).
      c.fwd = kNoRow;
      c.op_rule = kNoRule;
      c.top = kNoRow;
      c.anchor = kNoRow;
      c.recompute = true;
    }
    if (c.phase == Phase::kBackward && c.fwd == kNoRow) take_forward_labels(i, nm, c);
    remember_forward_op(i, c);
    ctx_[u] = c;
  }
}

// The op's phase: a phase rule, the end or start of a fwdbwd flow, a Sequence number (forward).
// Backward and optimizer override what the parent says; forward only fills a missing phase.
void Labeller::own_phase(size_t u, const NameMatch& nm, Ctx& c) {
  Phase own = Phase::kNone;
  uint16_t own_rule = kNoRule;
  if (nm.phase_rule != kNoRule) {
    own = nm.phase;
    own_rule = nm.phase_rule;
    if (nm.all_threads)
      spans_.push_back({h_.start_ns[u], h_.start_ns[u] + h_.dur_ns[u], nm.phase, nm.phase_rule});
  } else if (flow_end_[u]) {
    own = Phase::kBackward;
    own_rule = r_.flow;
  } else if (flow_start_[u]) {
    own = Phase::kForward;
    own_rule = r_.flow;
  } else if (h_.kind[u] == HostKind::kCpuOp && h_.sequence_number[u] >= 0) {
    own = Phase::kForward;
    own_rule = r_.seq;
  }
  if (own != Phase::kNone && (strong(own) || c.phase == Phase::kNone)) {
    c.phase = own;
    c.phase_rule = own_rule;
  }
}

void Labeller::own_layer(const NameMatch& nm, Ctx& c) const {
  if (nm.layer_rule != kNoRule) {
    c.layer = nm.layer;
    c.layer_rule = nm.layer_rule;
  }
}

// The op's operation: an operation rule's label (or a structural range, which starts a new
// search for the outermost op below it), a user annotation, else the outermost cpu_op.
void Labeller::own_operation(int32_t i, const NameMatch& nm, Ctx& c) const {
  const auto u = static_cast<size_t>(i);
  if (nm.op_rule != kNoRule && nm.structural) {
    c.top = kNoRow;
    if (c.op_rule == kNoRule) c.anchor = kNoRow;
  } else if (nm.op_rule != kNoRule) {
    c.op = nm.op_label;
    c.op_rule = nm.op_rule;
    c.cls = nm.op_class;
    c.cls_rule = nm.op_class == OpClass::kNone ? kNoRule : nm.op_rule;
    c.top = kNoRow;
    c.anchor = i;
  } else if (h_.kind[u] == HostKind::kUserAnnotation) {
    if (nm.iter_rule == kNoRule && nm.phase_rule == kNoRule && nm.layer_rule == kNoRule &&
        (window_op_.empty() || window_op_[u] == 0)) {
      c.op = h_.name[u];
      c.op_rule = r_.annot;
      c.cls = OpClass::kNone;
      c.cls_rule = kNoRule;
      c.anchor = i;
    } else if (c.op_rule == kNoRule) {
      c.anchor = kNoRow;
    }
    c.top = kNoRow;
  } else if (h_.kind[u] == HostKind::kCpuOp && c.top == kNoRow && c.op_rule == kNoRule) {
    c.top = i;
    c.anchor = i;
  }
}

// The outermost backward op takes its forward op's (by fwdbwd flow, else Sequence number) layer,
// operation and class.
void Labeller::take_forward_labels(int32_t i, const NameMatch& nm, Ctx& c) {
  const auto u = static_cast<size_t>(i);
  int32_t f = flow_fwd_[u];
  if (f == kNoRow && h_.sequence_number[u] >= 0) {
    const uint32_t s = seq_index_.find(h_.sequence_number[u]);
    if (s != UINT32_MAX) f = fwd_by_seq_[s];
  }
  if (f == kNoRow || f == i) return;
  const Ctx& fc = ctx_[static_cast<size_t>(f)];
  c.fwd = f;
  // The forward op's layer, unless it has none (then what the backward op's own ranges say
  // stands).
  const uint16_t rule = c.recompute ? r_.recompute : r_.forward_op;
  if (nm.layer_rule == kNoRule && (fc.layer >= 0 || fc.layer_rule != kNoRule)) {
    c.layer = fc.layer;
    c.layer_rule = rule;
  }
  c.op = operation_of(f);
  c.op_rule = rule;
  if (fc.cls != OpClass::kNone) {
    c.cls = fc.cls;
    c.cls_rule = fc.cls_rule;
  } else {
    const auto [cr, cc] = class_of_chain(f);
    c.cls = cc;
    c.cls_rule = cr;
  }
  c.top = kNoRow;
  c.anchor = kNoRow;
}

// Forward ops by Sequence number (the outermost of nested ops sharing one).
void Labeller::remember_forward_op(int32_t i, const Ctx& c) {
  const auto u = static_cast<size_t>(i);
  if (h_.kind[u] != HostKind::kCpuOp || h_.sequence_number[u] < 0 || c.phase == Phase::kBackward)
    return;
  bool fresh = false;
  const uint32_t s = seq_index_.id(h_.sequence_number[u], &fresh);
  if (fresh) {
    fwd_by_seq_.push_back(i);
    return;
  }
  const auto e = static_cast<size_t>(fwd_by_seq_[s]);
  const bool encloses = h_.thread[e] == h_.thread[u] && h_.start_ns[e] <= h_.start_ns[u] &&
                        h_.start_ns[u] + h_.dur_ns[u] <= h_.start_ns[e] + h_.dur_ns[e];
  if (!encloses) fwd_by_seq_[s] = i;
}

// The class of the work under op j: the outermost host class rule on the chain from its
// operation's op (anchor) down to j.
std::pair<uint16_t, OpClass> Labeller::class_of_chain(int32_t j) {
  auto& memo = chain_class_[static_cast<size_t>(j)];
  if (memo.first != 0xfffe) return memo;
  chain_.clear();
  const int32_t stop = ctx_[static_cast<size_t>(j)].anchor;
  for (int32_t k = j; k != kNoRow; k = h_.parent[static_cast<size_t>(k)]) {
    chain_.push_back(k);
    if (k == stop) break;
  }
  std::pair<uint16_t, OpClass> best{kNoRule, OpClass::kNone};
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    const NameMatch& nm = m_.host(h_.name[static_cast<size_t>(*it)]);
    if (nm.class_rule != kNoRule) {
      best = {nm.class_rule, nm.host_class};
      break;
    }
  }
  memo = best;
  return best;
}

// The operation op f's kernels get (a backward op takes its forward op's).
StrId Labeller::operation_of(int32_t f) const {
  const Ctx& c = ctx_[static_cast<size_t>(f)];
  if (c.op_rule != kNoRule) return c.op;
  if (c.top != kNoRow) return h_.name[static_cast<size_t>(c.top)];
  return h_.name[static_cast<size_t>(f)];
}

// ---- GPU activities

// Every activity's iteration (from its launch), class (from its kind), phase, layer and
// operation (from its launching op's context) and, where those give none, class (from its
// kernel name).
void Labeller::label_activities() {
  launch_ts_.assign(ng_, kNoId);
  launch_tid_.assign(ng_, kNoId);
  for (size_t a = 0; a < ng_; ++a) {
    find_launch(a);
    // The iteration the launch falls in. An activity with no launch (work launched before the
    // profiler started) gets none: GPU time lags the launch by up to ~100 ms, so the iteration
    // its GPU start falls in says nothing.
    if (!iters_.empty() && launch_ts_[a] != kNoId) {
      g_.iteration[a] = iteration_at(launch_ts_[a]);
      if (g_.iteration[a] != kNoId) g_.iteration_rule[a] = iter_rule_;
    }
    const CollType ctype = called_collective(a);
    class_from_kind(a, ctype);
    labels_from_launching_op(a, ctype);
    if (g_.op_class[a] == OpClass::kNone) class_from_kernel_name(a);
  }
}

// The launch: the runtime call, else the launching host op.
void Labeller::find_launch(size_t a) {
  const int32_t hop = g_.host_op_idx[a], rt = g_.runtime_idx[a];
  if (rt != kNoRow) {
    launch_ts_[a] = t_.runtime.start_ns[static_cast<size_t>(rt)];
    launch_tid_[a] = t_.runtime.thread[static_cast<size_t>(rt)];
  } else if (hop != kNoRow) {
    launch_ts_[a] = h_.start_ns[static_cast<size_t>(hop)];
    launch_tid_[a] = h_.thread[static_cast<size_t>(hop)];
  }
}

// A collective's operation and class are the collective the framework called (an all-to-all run
// as SendRecv kernels is an all_to_all), else the kernel's own type.
CollType Labeller::called_collective(size_t a) const {
  if (g_.collective[a] == kNoRow) return CollType::kUnknown;
  const Collective& col = t_.collectives[static_cast<size_t>(g_.collective[a])];
  return col.called != CollType::kUnknown ? col.called : col.type;
}

void Labeller::class_from_kind(size_t a, CollType ctype) {
  switch (g_.cls[a]) {
    case GpuClass::kMemcpy:
      g_.op_class[a] = OpClass::kMemcpy;
      g_.op_class_rule[a] = r_.kind;
      break;
    case GpuClass::kMemset:
      g_.op_class[a] = OpClass::kMemset;
      g_.op_class_rule[a] = r_.kind;
      break;
    case GpuClass::kSync:
      g_.op_class[a] = OpClass::kSync;
      g_.op_class_rule[a] = r_.kind;
      break;
    case GpuClass::kCommunication:
      g_.op_class[a] = class_of_collective(ctype);
      g_.op_class_rule[a] = r_.kind;
      break;
    case GpuClass::kCompute:
      break;
  }
}

// The operation a collective is named when no operation rule names it: its type ("all_reduce"),
// or, of a type neither its kernel nor a range above it told, "collective (type unknown)" (a bare
// "unknown" in the top operations read as an unknown operation, not as communication).
namespace {
std::string_view collective_operation(CollType t) {
  return t == CollType::kUnknown ? std::string_view("collective (type unknown)")
                                 : coll_type_name(t);
}
}  // namespace

// Phase, layer, operation and (when the kind gave none) class from the launching op's context. A
// collective outside every operation is its collective type.
void Labeller::labels_from_launching_op(size_t a, CollType ctype) {
  const int32_t hop = g_.host_op_idx[a];
  const bool comm = g_.cls[a] == GpuClass::kCommunication;
  if (hop == kNoRow) {
    if (comm) {
      g_.operation[a] = t_.strings.intern(collective_operation(ctype));
      g_.operation_rule[a] = r_.coll;
    }
    return;
  }
  const Ctx& c = ctx_[static_cast<size_t>(hop)];
  g_.phase[a] = c.phase;
  g_.phase_rule[a] = c.phase_rule;
  g_.layer[a] = c.layer;
  g_.layer_rule[a] = c.layer_rule;
  if (c.op_rule != kNoRule) {
    g_.operation[a] = c.op;
    g_.operation_rule[a] = c.op_rule;
  } else if (comm) {
    g_.operation[a] = t_.strings.intern(collective_operation(ctype));
    g_.operation_rule[a] = r_.coll;
  } else if (c.top != kNoRow) {  // recomputed by a checkpoint: its own outermost op, so named
    g_.operation[a] = h_.name[static_cast<size_t>(c.top)];
    g_.operation_rule[a] = c.recompute ? r_.recompute : r_.top;
  } else {
    g_.operation[a] = h_.name[static_cast<size_t>(hop)];
    g_.operation_rule[a] = r_.leaf;
  }
  if (g_.op_class[a] != OpClass::kNone) return;
  if (c.cls != OpClass::kNone) {
    g_.op_class[a] = c.cls;
    g_.op_class_rule[a] = c.cls_rule;
  } else if (const auto [cr, cc] = class_of_chain(hop); cc != OpClass::kNone) {
    g_.op_class[a] = cc;
    g_.op_class_rule[a] = cr;
  }
}

// A kernel class rule, else elementwise.
void Labeller::class_from_kernel_name(size_t a) {
  const KernelClass k = m_.kernel(g_.name[a]);
  g_.op_class[a] = k.cls == OpClass::kNone ? OpClass::kElementwise : k.cls;
  g_.op_class_rule[a] = k.cls == OpClass::kNone ? r_.default_class : k.rule;
}

}  // namespace labelling

void label_trace(const Taxonomy& tx, RankTrace& t) {
  labelling::Labeller(tx, t).run();
}

void label_run(const Taxonomy& taxonomy, Run& run, unsigned threads) {
  parallel_for(run.ranks.size(), threads == 0 ? default_threads() : threads, [&](size_t i) {
    if (run.ranks[i].ok) label_trace(taxonomy, run.ranks[i].trace);
  });
}

}  // namespace chopper
