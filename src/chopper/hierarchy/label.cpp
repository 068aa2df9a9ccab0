#include "chopper/hierarchy/label.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <unordered_map>

#include "chopper/base/flat_index.hpp"
#include "chopper/base/sort.hpp"
#include "chopper/base/thread_pool.hpp"

namespace chopper {

namespace {

// What the name rules say about one host-op name.
struct NameMatch {
  uint16_t iter_rule = kNoRule;
  int64_t iter_num = 0;
  uint16_t phase_rule = kNoRule;
  Phase phase = Phase::kNone;
  bool all_threads = false;
  uint16_t layer_rule = kNoRule;
  int32_t layer = -1;
  uint16_t op_rule = kNoRule;
  bool structural = false;
  StrId op_label = 0;
  OpClass op_class = OpClass::kNone;
  uint16_t class_rule = kNoRule;
  OpClass host_class = OpClass::kNone;
};

struct KernelClass {
  uint16_t rule = kNoRule;
  OpClass cls = OpClass::kNone;
};

bool parse_i64(std::string_view s, int64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Matches names against the rules once per distinct name (names are interned per rank).
class Matcher {
 public:
  Matcher(const Taxonomy& tx, RankTrace& t) : rules_(tx.rules()), t_(t) {}

  const NameMatch& host(StrId id) {
    if (id >= host_slot_.size()) host_slot_.resize(std::max<size_t>(id + 1, t_.strings.size()), -1);
    if (host_slot_[id] < 0) {
      host_slot_[id] = static_cast<int32_t>(host_.size());
      host_.push_back(match_host(id));
    }
    return host_[static_cast<size_t>(host_slot_[id])];
  }

  KernelClass kernel(StrId id) {
    if (id >= kernel_slot_.size())
      kernel_slot_.resize(std::max<size_t>(id + 1, t_.strings.size()), KernelClass{0xfffe, {}});
    if (kernel_slot_[id].rule == 0xfffe) {
      KernelClass k;
      const std::string_view s = t_.strings.str(id);
      for (size_t r = 0; r < rules_.size(); ++r) {
        const NameRule& rule = rules_[r];
        if (rule.level != RuleLevel::kClass || !rule.kernel_target) continue;
        if (rule.may_match(s) && rule.search(s)) {
          k = {static_cast<uint16_t>(r), rule.op_class};
          break;
        }
      }
      kernel_slot_[id] = k;
    }
    return kernel_slot_[id];
  }

 private:
  NameMatch match_host(StrId id) {
    NameMatch m;
    // Copy: interning a label below may grow the table.
    const std::string name(t_.strings.str(id));
    const std::string_view s = name;
    std::string_view g[2];  // the whole match and capture 1
    for (size_t r = 0; r < rules_.size(); ++r) {
      const NameRule& rule = rules_[r];
      const auto ri = static_cast<uint16_t>(r);
      switch (rule.level) {
        case RuleLevel::kIteration:
          if (m.iter_rule != kNoRule || !rule.may_match(s)) break;
          if (rule.captures == 0) {  // numbered by occurrence (label_trace)
            if (rule.search(s)) m.iter_rule = ri;
          } else if (rule.search(s, g, 2) && g[1].data() != nullptr &&
                     parse_i64(g[1], m.iter_num)) {
            m.iter_rule = ri;
          }
          break;
        case RuleLevel::kPhase:
          if (m.phase_rule == kNoRule && rule.may_match(s) && rule.search(s)) {
            m.phase_rule = ri;
            m.phase = rule.phase;
            m.all_threads = rule.all_threads;
          }
          break;
        case RuleLevel::kLayer:
          if (m.layer_rule == kNoRule && rule.may_match(s) &&
              rule.search(s, g, rule.captures == 0 ? 1 : 2)) {
            int64_t v = -1;
            if (rule.captures == 0 || g[1].data() == nullptr) {
              m.layer_rule = ri;  // clears the layer
              m.layer = -1;
            } else if (parse_i64(g[1], v) && v >= 0 && v < INT32_MAX) {
              m.layer_rule = ri;
              m.layer = static_cast<int32_t>(v);
            }
          }
          break;
        case RuleLevel::kOperation: {
          if (m.op_rule != kNoRule || !rule.may_match(s)) break;
          const bool fmt = rule.label != "-" && !rule.label.empty();
          groups_.assign(fmt ? static_cast<size_t>(rule.captures) + 1 : 0, std::string_view());
          if (!(fmt ? rule.search(s, groups_.data(), static_cast<int>(groups_.size()))
                    : rule.search(s)))
            break;
          m.op_rule = ri;
          m.op_class = rule.op_class;
          if (rule.label == "-") {
            m.structural = true;
          } else if (rule.label.empty()) {
            m.op_label = id;
          } else {
            const std::string out = format_label(rule.label, s, groups_);
            if (out.empty())
              m.structural = true;  // "$1" with nothing captured: not an operation
            else
              m.op_label = t_.strings.intern(out);
          }
          break;
        }
        case RuleLevel::kClass:
          if (!rule.kernel_target && m.class_rule == kNoRule && rule.may_match(s) &&
              rule.search(s)) {
            m.class_rule = ri;
            m.host_class = rule.op_class;
          }
          break;
      }
    }
    return m;
  }

  const std::vector<NameRule>& rules_;
  RankTrace& t_;
  std::vector<std::string_view> groups_;  // an operation rule's match and captures
  std::vector<int32_t> host_slot_;
  std::vector<NameMatch> host_;
  std::vector<KernelClass> kernel_slot_;
};

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
};
static_assert(sizeof(Ctx) <= 32);

bool strong(Phase p) {
  return p == Phase::kBackward || p == Phase::kOptimizer;
}

struct Span {
  Ns start, end;
  Phase phase;
  uint16_t rule;
};

// A host op that can mark an iteration by repeating: a user annotation or an nn.Module call.
bool window_kind(const RankTrace& t, size_t u) {
  const HostOps& h = t.host;
  if (h.kind[u] == HostKind::kUserAnnotation) return true;
  return h.kind[u] == HostKind::kPythonFunction &&
         t.strings.str(h.name[u]).substr(0, 11) == "nn.Module: ";
}

// The iterations of a rank no iteration rule matches: the outermost annotations (user
// annotations and nn.Module calls with no such range around them) that launch GPU work. If the
// names that occur twice or more launch at least half of that work, these ops are the iterations,
// with the ones whose names occur once among them (sglang's and vLLM's decode steps and a single
// prefill, a model's top-level forward, TorchRec's "## ... ##" ranges). Else, if one op launches
// more than half of it (a wrapper around the whole profile), the search goes on inside it, up to 8
// levels deep. Else none (the whole trace is one window). `order`: host ops, every parent before
// its children. Returns the ops, in no order.
std::vector<int32_t> repeated_annotations(const RankTrace& t, const std::vector<int32_t>& order) {
  const HostOps& h = t.host;
  const GpuActivities& g = t.gpu;
  const size_t nh = h.size();
  std::vector<int32_t> out;
  if (nh == 0) return out;
  // GPU activities launched under each op (itself and everything below it).
  std::vector<uint64_t> launched(nh, 0);
  for (size_t a = 0; a < g.size(); ++a)
    if (g.host_op_idx[a] != kNoRow && g.kind[a] != GpuKind::kSync)
      ++launched[static_cast<size_t>(g.host_op_idx[a])];
  for (size_t k = nh; k-- > 0;) {
    const auto u = static_cast<size_t>(order[k]);
    if (h.parent[u] != kNoRow) launched[static_cast<size_t>(h.parent[u])] += launched[u];
  }
  // The nearest annotation above each op (kNoRow: none).
  std::vector<int32_t> outer(nh, kNoRow);
  for (int32_t i : order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = h.parent[u];
    if (p == kNoRow) continue;
    outer[u] = window_kind(t, static_cast<size_t>(p)) ? p : outer[static_cast<size_t>(p)];
  }
  int32_t inside = kNoRow;
  for (int level = 0; level < 8; ++level) {
    std::unordered_map<StrId, uint64_t> times;  // name -> ops at this level
    std::vector<int32_t> level_ops;
    uint64_t total = 0;
    int32_t biggest = kNoRow;
    for (int32_t i : order) {
      const auto u = static_cast<size_t>(i);
      if (outer[u] != inside || launched[u] == 0 || !window_kind(t, u)) continue;
      level_ops.push_back(i);
      ++times[h.name[u]];
      total += launched[u];
      if (biggest == kNoRow || launched[u] > launched[static_cast<size_t>(biggest)]) biggest = i;
    }
    if (level_ops.empty()) break;
    uint64_t repeated = 0;
    for (int32_t i : level_ops)
      if (times[h.name[static_cast<size_t>(i)]] >= 2) repeated += launched[static_cast<size_t>(i)];
    if (repeated > 0 && 2 * repeated >= total) {
      out = std::move(level_ops);  // the repeated steps and their siblings (a single prefill)
      break;
    }
    if (2 * launched[static_cast<size_t>(biggest)] <= total) break;
    inside = biggest;
  }
  return out;
}

}  // namespace

void label_trace(const Taxonomy& tx, RankTrace& t) {
  t.label_rules = tx.label_rule_names();
  const uint16_t r_flow = tx.inferred_index("fwdbwd_flow");
  const uint16_t r_seq = tx.inferred_index("autograd_sequence");
  const uint16_t r_thread = tx.inferred_index("autograd_thread");
  const uint16_t r_fwd_only = tx.inferred_index("forward_only_trace");
  const uint16_t r_gpu_span = tx.inferred_index("gpu_step_span");
  const uint16_t r_repeated = tx.inferred_index("repeated_annotation");
  const uint16_t r_whole = tx.inferred_index("whole_trace");
  const uint16_t r_remainder = tx.inferred_index("step_remainder");
  const uint16_t r_seed = tx.inferred_index("backward_seed");
  const uint16_t r_transfer = tx.inferred_index("transfer_outside_phases");
  const uint16_t r_forward_op = tx.inferred_index("forward_op");
  const uint16_t r_bucket = tx.inferred_index("ddp_bucket_layer");
  const uint16_t r_coll = tx.inferred_index("collective_type");
  const uint16_t r_annot = tx.inferred_index("user_annotation");
  const uint16_t r_top = tx.inferred_index("top_op");
  const uint16_t r_leaf = tx.inferred_index("leaf_op");
  const uint16_t r_kind = tx.inferred_index("kernel_kind");
  const uint16_t r_default = tx.inferred_index("default_elementwise");

  GpuActivities& g = t.gpu;
  const HostOps& h = t.host;
  const size_t ng = g.size(), nh = h.size();
  g.iteration.assign(ng, kNoId);
  g.phase.assign(ng, Phase::kNone);
  g.layer.assign(ng, -1);
  g.operation.assign(ng, 0);
  g.op_class.assign(ng, OpClass::kNone);
  g.iteration_rule.assign(ng, kNoRule);
  g.phase_rule.assign(ng, kNoRule);
  g.layer_rule.assign(ng, kNoRule);
  g.operation_rule.assign(ng, kNoRule);
  g.op_class_rule.assign(ng, kNoRule);

  Matcher m(tx, t);

  // ---- iteration ranges: the first iteration rule (in taxonomy order) that matches any op.
  struct IterRange {
    Ns start, end;
    int64_t number;
  };
  std::vector<IterRange> iters;
  uint16_t iter_rule = kNoRule;
  for (size_t i = 0; i < nh; ++i) {
    const NameMatch& nm = m.host(h.name[i]);
    if (nm.iter_rule == kNoRule || nm.iter_rule > iter_rule) continue;
    if (nm.iter_rule < iter_rule) {
      iters.clear();
      iter_rule = nm.iter_rule;
    }
    iters.push_back({h.start_ns[i], h.start_ns[i] + h.dur_ns[i], nm.iter_num});
  }
  auto by_start = [](const IterRange& a, const IterRange& b) {
    return a.start != b.start ? a.start < b.start : a.number < b.number;
  };
  std::sort(iters.begin(), iters.end(), by_start);
  // A rule without a capture group (--iteration-regex) numbers its ranges by occurrence.
  if (iter_rule != kNoRule && tx.rules()[iter_rule].captures == 0)
    for (size_t k = 0; k < iters.size(); ++k) iters[k].number = static_cast<int64_t>(k);
  auto iteration_at = [&](Ns ts) -> int64_t {
    auto it = std::upper_bound(iters.begin(), iters.end(), ts,
                               [](Ns v, const IterRange& r) { return v < r.start; });
    // Ranges do not overlap in practice; look back a little in case they nest.
    for (int k = 0; k < 4 && it != iters.begin(); ++k) {
      --it;
      if (ts < it->end) return it->number;
    }
    return kNoId;
  };

  // ---- host ops in an order where every op comes after its parent and after every op that
  // started before it (so a forward op precedes its backward op).
  std::vector<int32_t> depth(nh, -1);
  {
    std::vector<int32_t> stack;
    for (size_t i = 0; i < nh; ++i) {
      int32_t j = static_cast<int32_t>(i);
      while (j != kNoRow && depth[static_cast<size_t>(j)] < 0) {
        stack.push_back(j);
        j = h.parent[static_cast<size_t>(j)];
      }
      int32_t d = j == kNoRow ? -1 : depth[static_cast<size_t>(j)];
      while (!stack.empty()) {
        depth[static_cast<size_t>(stack.back())] = ++d;
        stack.pop_back();
      }
    }
  }
  std::vector<int32_t> order(nh);
  std::iota(order.begin(), order.end(), 0);
  // Host ops come in a trace nearly in start order: merging the ascending runs of the file's
  // order costs a few sequential passes where a sort would jump about the columns.
  sort_by_runs(order, [&](int32_t a, int32_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    if (h.start_ns[ua] != h.start_ns[ub]) return h.start_ns[ua] < h.start_ns[ub];
    if (depth[ua] != depth[ub]) return depth[ua] < depth[ub];
    return a < b;
  });

  // ---- no iteration rule matched: the windows come from the trace's own structure.
  std::vector<uint8_t> window_op;  // repeated ranges and the ranges around them (structural)
  std::string iter_source;         // what the iterations are (diagnostic iteration_source)
  bool whole_trace = false;
  if (iter_rule != kNoRule) {
    const NameRule& r = tx.rules()[iter_rule];
    iter_source = r.name == kIterationRegexRule
                      ? fmt::format("--iteration-regex '{}'", r.pattern)
                      : fmt::format("rule {}{}", r.name,
                                    r.source == "builtin" ? "" : fmt::format(" ({})", r.source));
  } else {
    const std::vector<int32_t> windows = repeated_annotations(t, order);
    if (!windows.empty()) {
      window_op.assign(nh, 0);
      std::vector<StrId> names;
      for (int32_t w : windows) {
        const auto u = static_cast<size_t>(w);
        // The window and the ranges around it (a wrapper the search went into) are structural.
        for (int32_t p = w; p != kNoRow && window_op[static_cast<size_t>(p)] == 0;
             p = h.parent[static_cast<size_t>(p)])
          window_op[static_cast<size_t>(p)] = 1;
        iters.push_back({h.start_ns[u], h.start_ns[u] + h.dur_ns[u], 0});
        if (std::find(names.begin(), names.end(), h.name[u]) == names.end())
          names.push_back(h.name[u]);
      }
      std::sort(iters.begin(), iters.end(), by_start);
      for (size_t k = 0; k < iters.size(); ++k) iters[k].number = static_cast<int64_t>(k);
      iter_rule = r_repeated;
      iter_source = "repeated annotation ";
      for (size_t k = 0; k < names.size() && k < 3; ++k)
        iter_source += fmt::format("{}'{}'", k ? ", " : "", t.strings.str(names[k]));
      if (names.size() > 3) iter_source += fmt::format(" and {} more", names.size() - 3);
    } else {
      whole_trace = true;
      iter_source = nh == 0 ? "whole trace (no host ops)" : "whole trace (no range repeats)";
    }
  }

  // ---- fwdbwd flows: start at the forward op, end at the backward op (both found by exact ts on
  // their thread, the outermost op starting there).
  std::vector<int32_t> flow_fwd(nh, kNoRow);  // backward op -> forward op
  std::vector<uint8_t> flow_end(nh, 0), flow_start(nh, 0);
  {
    const Flows& f = t.flows;
    bool any = false;
    for (size_t i = 0; i < f.size() && !any; ++i) any = f.kind[i] == FlowKind::kFwdBwd;
    if (any) {
      // Endpoints in time order, merged with the ops (also in start order): the op of an
      // endpoint is the first (outermost) op on its thread that starts at its ts.
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
        while (j < nh && h.start_ns[static_cast<size_t>(order[j])] < ts) ++j;
        for (size_t k = j; k < nh && h.start_ns[static_cast<size_t>(order[k])] == ts; ++k) {
          const auto u = static_cast<size_t>(order[k]);
          if (h.thread[u] != f.thread[e]) continue;
          auto& slot = by_id.try_emplace(f.id[e], kNoRow, kNoRow).first->second;
          (f.phase[e] == FlowPhase::kStart ? slot.first : slot.second) = order[k];
          break;
        }
      }
      for (const auto& [id, se] : by_id) {
        if (se.first != kNoRow) flow_start[static_cast<size_t>(se.first)] = 1;
        if (se.second != kNoRow) flow_end[static_cast<size_t>(se.second)] = 1;
        if (se.first != kNoRow && se.second != kNoRow && se.first != se.second)
          flow_fwd[static_cast<size_t>(se.second)] = se.first;
      }
    }
  }

  // ---- contexts, top-down.
  std::vector<Ctx> ctx(nh);
  std::vector<Span> spans;
  // Forward ops by Sequence number: an open-addressing index and the op of each of its ids.
  FlatIndex<int64_t, std::hash<int64_t>> seq_index;
  std::vector<int32_t> fwd_by_seq;
  // Class of the work under op j: host class rules on the chain from the operation's outermost
  // op down to j, outermost first. Memoised.
  std::vector<std::pair<uint16_t, OpClass>> chain_class(nh, {0xfffe, OpClass::kNone});
  std::vector<int32_t> chain;
  auto class_of_chain = [&](int32_t j) -> std::pair<uint16_t, OpClass> {
    auto& memo = chain_class[static_cast<size_t>(j)];
    if (memo.first != 0xfffe) return memo;
    chain.clear();
    const int32_t stop = ctx[static_cast<size_t>(j)].anchor;
    for (int32_t k = j; k != kNoRow; k = h.parent[static_cast<size_t>(k)]) {
      chain.push_back(k);
      if (k == stop) break;
    }
    std::pair<uint16_t, OpClass> best{kNoRule, OpClass::kNone};
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const NameMatch& nm = m.host(h.name[static_cast<size_t>(*it)]);
      if (nm.class_rule != kNoRule) {
        best = {nm.class_rule, nm.host_class};
        break;
      }
    }
    memo = best;
    return best;
  };
  // The operation an op's kernels get (used for backward ops, which take their forward op's).
  auto op_of = [&](int32_t f) -> StrId {
    const Ctx& c = ctx[static_cast<size_t>(f)];
    if (c.op_rule != kNoRule) return c.op;
    if (c.top != kNoRow) return h.name[static_cast<size_t>(c.top)];
    return h.name[static_cast<size_t>(f)];
  };

  for (int32_t i : order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = h.parent[u];
    Ctx c = p == kNoRow ? Ctx{} : ctx[static_cast<size_t>(p)];
    const NameMatch& nm = m.host(h.name[u]);
    const bool cpu_op = h.kind[u] == HostKind::kCpuOp;
    // phase
    Phase own = Phase::kNone;
    uint16_t own_rule = kNoRule;
    if (nm.phase_rule != kNoRule) {
      own = nm.phase;
      own_rule = nm.phase_rule;
      if (nm.all_threads)
        spans.push_back({h.start_ns[u], h.start_ns[u] + h.dur_ns[u], nm.phase, nm.phase_rule});
    } else if (flow_end[u]) {
      own = Phase::kBackward;
      own_rule = r_flow;
    } else if (flow_start[u]) {
      own = Phase::kForward;
      own_rule = r_flow;
    } else if (cpu_op && h.sequence_number[u] >= 0) {
      own = Phase::kForward;
      own_rule = r_seq;
    }
    if (own != Phase::kNone && (strong(own) || c.phase == Phase::kNone)) {
      c.phase = own;
      c.phase_rule = own_rule;
    }
    // layer
    if (nm.layer_rule != kNoRule) {
      c.layer = nm.layer;
      c.layer_rule = nm.layer_rule;
    }
    // operation
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
    } else if (h.kind[u] == HostKind::kUserAnnotation) {
      if (nm.iter_rule == kNoRule && nm.phase_rule == kNoRule && nm.layer_rule == kNoRule &&
          (window_op.empty() || window_op[u] == 0)) {
        c.op = h.name[u];
        c.op_rule = r_annot;
        c.cls = OpClass::kNone;
        c.cls_rule = kNoRule;
        c.anchor = i;
      } else if (c.op_rule == kNoRule) {
        c.anchor = kNoRow;
      }
      c.top = kNoRow;
    } else if (cpu_op && c.top == kNoRow && c.op_rule == kNoRule) {
      c.top = i;
      c.anchor = i;
    }
    // a backward op takes its forward op's layer and operation
    if (c.phase == Phase::kBackward && c.fwd == kNoRow) {
      int32_t f = flow_fwd[u];
      if (f == kNoRow && h.sequence_number[u] >= 0) {
        const uint32_t s = seq_index.find(h.sequence_number[u]);
        if (s != UINT32_MAX) f = fwd_by_seq[s];
      }
      if (f != kNoRow && f != i) {
        const Ctx& fc = ctx[static_cast<size_t>(f)];
        c.fwd = f;
        // The forward op's layer, unless it has none (then what the backward op's own ranges
        // say stands).
        if (nm.layer_rule == kNoRule && (fc.layer >= 0 || fc.layer_rule != kNoRule)) {
          c.layer = fc.layer;
          c.layer_rule = r_forward_op;
        }
        c.op = op_of(f);
        c.op_rule = r_forward_op;
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
    }
    // remember forward ops by Sequence number (the outermost of nested ops sharing one)
    if (cpu_op && h.sequence_number[u] >= 0 && c.phase != Phase::kBackward) {
      bool fresh = false;
      const uint32_t s = seq_index.id(h.sequence_number[u], &fresh);
      if (fresh) {
        fwd_by_seq.push_back(i);
      } else {
        const auto e = static_cast<size_t>(fwd_by_seq[s]);
        const bool encloses = h.thread[e] == h.thread[u] && h.start_ns[e] <= h.start_ns[u] &&
                              h.start_ns[u] + h.dur_ns[u] <= h.start_ns[e] + h.dur_ns[e];
        if (!encloses) fwd_by_seq[s] = i;
      }
    }
    ctx[u] = c;
  }

  // ---- per activity
  std::vector<Ns> launch_ts(ng, kNoId);
  std::vector<int64_t> launch_tid(ng, kNoId);  // the launching thread (RankTrace::threads)
  for (size_t a = 0; a < ng; ++a) {
    const int32_t hop = g.host_op_idx[a], rt = g.runtime_idx[a];
    if (rt != kNoRow) {
      launch_ts[a] = t.runtime.start_ns[static_cast<size_t>(rt)];
      launch_tid[a] = t.runtime.thread[static_cast<size_t>(rt)];
    } else if (hop != kNoRow) {
      launch_ts[a] = h.start_ns[static_cast<size_t>(hop)];
      launch_tid[a] = h.thread[static_cast<size_t>(hop)];
    }
    // iteration: the one the launch falls in. An activity with no launch (work launched before
    // the profiler started) gets none: GPU time lags the launch by up to ~100 ms, so the
    // iteration its GPU start falls in says nothing.
    if (!iters.empty() && launch_ts[a] != kNoId) {
      g.iteration[a] = iteration_at(launch_ts[a]);
      if (g.iteration[a] != kNoId) g.iteration_rule[a] = iter_rule;
    }
    const bool comm = g.cls[a] == GpuClass::kCommunication;
    // A collective's operation and class are the collective the framework called (an
    // all-to-all run as SendRecv kernels is an all_to_all), else the kernel's own type.
    CollType ctype = CollType::kUnknown;
    if (g.collective[a] != kNoRow) {
      const Collective& col = t.collectives[static_cast<size_t>(g.collective[a])];
      ctype = col.called != CollType::kUnknown ? col.called : col.type;
    }
    // class from the kind
    switch (g.cls[a]) {
      case GpuClass::kMemcpy:
        g.op_class[a] = OpClass::kMemcpy;
        g.op_class_rule[a] = r_kind;
        break;
      case GpuClass::kMemset:
        g.op_class[a] = OpClass::kMemset;
        g.op_class_rule[a] = r_kind;
        break;
      case GpuClass::kSync:
        g.op_class[a] = OpClass::kSync;
        g.op_class_rule[a] = r_kind;
        break;
      case GpuClass::kCommunication:
        g.op_class[a] = class_of_collective(ctype);
        g.op_class_rule[a] = r_kind;
        break;
      case GpuClass::kCompute:
        break;
    }
    if (hop != kNoRow) {
      const Ctx& c = ctx[static_cast<size_t>(hop)];
      g.phase[a] = c.phase;
      g.phase_rule[a] = c.phase_rule;
      g.layer[a] = c.layer;
      g.layer_rule[a] = c.layer_rule;
      if (c.op_rule != kNoRule) {
        g.operation[a] = c.op;
        g.operation_rule[a] = c.op_rule;
      } else if (comm) {
        g.operation[a] = t.strings.intern(coll_type_name(ctype));
        g.operation_rule[a] = r_coll;
      } else if (c.top != kNoRow) {
        g.operation[a] = h.name[static_cast<size_t>(c.top)];
        g.operation_rule[a] = r_top;
      } else {
        g.operation[a] = h.name[static_cast<size_t>(hop)];
        g.operation_rule[a] = r_leaf;
      }
      if (g.op_class[a] == OpClass::kNone) {
        if (c.cls != OpClass::kNone) {
          g.op_class[a] = c.cls;
          g.op_class_rule[a] = c.cls_rule;
        } else if (const auto [cr, cc] = class_of_chain(hop); cc != OpClass::kNone) {
          g.op_class[a] = cc;
          g.op_class_rule[a] = cr;
        }
      }
    } else if (comm) {
      g.operation[a] = t.strings.intern(coll_type_name(ctype));
      g.operation_rule[a] = r_coll;
    }
    if (g.op_class[a] == OpClass::kNone) {
      const KernelClass k = m.kernel(g.name[a]);
      g.op_class[a] = k.cls == OpClass::kNone ? OpClass::kElementwise : k.cls;
      g.op_class_rule[a] = k.cls == OpClass::kNone ? r_default : k.rule;
    }
  }

  // ---- the whole trace as one iteration (0): every activity, launched or not.
  if (whole_trace)
    for (size_t a = 0; a < ng; ++a) {
      g.iteration[a] = 0;
      g.iteration_rule[a] = r_whole;
    }
  // The iterations the analyses open their windows from (RankTrace::steps), and where they came
  // from.
  t.steps.clear();
  for (const IterRange& r : iters) t.steps.push_back({r.number, r.start, r.end});
  if (whole_trace) {
    Ns lo = INT64_MAX, hi = INT64_MIN;
    for (size_t a = 0; a < ng; ++a) {
      lo = std::min(lo, g.start_ns[a]);
      hi = std::max(hi, g.start_ns[a] + g.dur_ns[a]);
    }
    if (ng > 0) t.steps.push_back({0, lo, hi});
  }
  t.diagnostics.add(FileDiag::kIterationSource, iter_source);
  if (t.steps.size() > 1) t.diagnostics.add_count(FileDiag::kIterationSource, t.steps.size() - 1);

  // ---- iteration for activities with no launch: the GPU-side span of a step. An activity that
  // was not linked to a runtime call or a host op (its launch is missing from the trace) but that
  // ran on the GPU entirely within [earliest GPU start, latest GPU end] of the activities of its
  // device launched in step N belongs to step N: the GPU runs a step's work in launch order, so
  // work queued between two of the step's kernels is the step's. Work before the first step's GPU
  // span (launched before the profiler started) stays without an iteration.
  if (!iters.empty()) {
    struct GpuSpan {
      int64_t device;
      Ns start, end;
      int64_t number;
    };
    std::vector<GpuSpan> gspans;
    {
      std::unordered_map<uint64_t, size_t> at;  // (device, iteration) -> gspans row
      for (size_t a = 0; a < ng; ++a) {
        if (g.iteration[a] == kNoId || g.kind[a] == GpuKind::kSync) continue;
        const Ns s = g.start_ns[a], e = s + g.dur_ns[a];
        const uint64_t k = static_cast<uint64_t>(g.device[a]) * 0x9E3779B97F4A7C15ull ^
                           static_cast<uint64_t>(g.iteration[a]);
        auto [it, fresh] = at.try_emplace(k, gspans.size());
        if (fresh) {
          gspans.push_back({g.device[a], s, e, g.iteration[a]});
        } else {
          GpuSpan& sp = gspans[it->second];
          sp.start = std::min(sp.start, s);
          sp.end = std::max(sp.end, e);
        }
      }
    }
    std::sort(gspans.begin(), gspans.end(), [](const GpuSpan& x, const GpuSpan& y) {
      return x.device != y.device ? x.device < y.device : x.start < y.start;
    });
    uint64_t placed = 0;
    for (size_t a = 0; a < ng && !gspans.empty(); ++a) {
      if (launch_ts[a] != kNoId || g.iteration[a] != kNoId) continue;
      const Ns s = g.start_ns[a], e = s + g.dur_ns[a];
      // The latest-starting span on the device that starts at or before s and holds [s, e).
      auto it = std::upper_bound(gspans.begin(), gspans.end(), std::make_pair(g.device[a], s),
                                 [](const std::pair<int64_t, Ns>& v, const GpuSpan& sp) {
                                   return v.first != sp.device ? v.first < sp.device
                                                               : v.second < sp.start;
                                 });
      for (int k = 0; k < 8 && it != gspans.begin(); ++k) {
        --it;
        if (it->device != g.device[a]) break;
        if (e <= it->end) {
          g.iteration[a] = it->number;
          g.iteration_rule[a] = r_gpu_span;
          ++placed;
          break;
        }
      }
    }
    if (placed > 0) t.diagnostics.add_count("gpu_activity_in_step_span_without_launch", placed);
  }

  // ---- phase fallbacks for activities whose launching op is in no phase range
  // 1. ranges that cover every thread (a loss.backward annotation on the main thread)
  if (!spans.empty()) {
    std::sort(spans.begin(), spans.end(),
              [](const Span& x, const Span& y) { return x.start < y.start; });
    for (size_t a = 0; a < ng; ++a) {
      if (g.phase[a] != Phase::kNone || launch_ts[a] == kNoId) continue;
      auto it = std::upper_bound(spans.begin(), spans.end(), launch_ts[a],
                                 [](Ns v, const Span& s) { return v < s.start; });
      for (int k = 0; k < 8 && it != spans.begin(); ++k) {
        --it;
        if (launch_ts[a] < it->end) {
          g.phase[a] = it->phase;
          g.phase_rule[a] = it->rule;
          break;
        }
      }
    }
  }
  // 2. the autograd engine's thread: it launched backward work and no forward work in the
  // iteration.
  {
    struct ThreadUse {
      bool backward = false, forward = false;
    };
    std::unordered_map<uint64_t, ThreadUse> use;  // (tid, iteration)
    auto key = [](int64_t tid, int64_t it) {
      return static_cast<uint64_t>(tid) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(it);
    };
    for (size_t a = 0; a < ng; ++a) {
      if (launch_ts[a] == kNoId) continue;
      if (g.phase[a] == Phase::kBackward) use[key(launch_tid[a], g.iteration[a])].backward = true;
      if (g.phase[a] == Phase::kForward) use[key(launch_tid[a], g.iteration[a])].forward = true;
    }
    for (size_t a = 0; a < ng; ++a) {
      if (g.phase[a] != Phase::kNone || launch_ts[a] == kNoId) continue;
      auto it = use.find(key(launch_tid[a], g.iteration[a]));
      if (it != use.end() && it->second.backward && !it->second.forward) {
        g.phase[a] = Phase::kBackward;
        g.phase_rule[a] = r_thread;
      }
    }
  }
  // 3. transfers: outside every phase, or host<->device copies that only a Sequence number
  // (aten::to) put in the forward pass.
  for (size_t a = 0; a < ng; ++a) {
    const bool transfer = g.cls[a] == GpuClass::kMemcpy || g.cls[a] == GpuClass::kMemset;
    const bool host_copy = g.cls[a] == GpuClass::kMemcpy && (g.memcpy_dir[a] == MemcpyDir::kHtoD ||
                                                             g.memcpy_dir[a] == MemcpyDir::kDtoH);
    if ((transfer && g.phase[a] == Phase::kNone) || (host_copy && g.phase_rule[a] == r_seq)) {
      g.phase[a] = Phase::kOther;
      g.phase_rule[a] = r_transfer;
    }
  }
  // 4. compute launched between the iteration's last forward launch and its first backward
  // launch: loss.backward()'s gradient seed (aten::ones_like), which has no Sequence number and
  // sits in no range.
  {
    struct Gap {
      Ns last_fwd = INT64_MIN, first_bwd = INT64_MAX;
    };
    std::unordered_map<int64_t, Gap> gaps;  // iteration -> gap
    for (size_t a = 0; a < ng; ++a) {
      if (g.iteration[a] == kNoId || launch_ts[a] == kNoId) continue;
      if (g.phase[a] == Phase::kForward)
        gaps[g.iteration[a]].last_fwd = std::max(gaps[g.iteration[a]].last_fwd, launch_ts[a]);
      if (g.phase[a] == Phase::kBackward)
        gaps[g.iteration[a]].first_bwd = std::min(gaps[g.iteration[a]].first_bwd, launch_ts[a]);
    }
    for (size_t a = 0; a < ng; ++a) {
      if (g.phase[a] != Phase::kNone || g.iteration[a] == kNoId || launch_ts[a] == kNoId) continue;
      auto it = gaps.find(g.iteration[a]);
      if (it != gaps.end() && it->second.last_fwd < launch_ts[a] &&
          launch_ts[a] < it->second.first_bwd && it->second.last_fwd != INT64_MIN &&
          it->second.first_bwd != INT64_MAX) {
        g.phase[a] = Phase::kBackward;
        g.phase_rule[a] = r_seed;
      }
    }
  }
  // 5. a rank with no backward and no optimizer work: everything in an iteration is forward.
  {
    bool training = false;
    for (size_t a = 0; a < ng && !training; ++a)
      training = g.phase[a] == Phase::kBackward || g.phase[a] == Phase::kOptimizer;
    if (!training)
      for (size_t a = 0; a < ng; ++a)
        if (g.phase[a] == Phase::kNone && g.iteration[a] != kNoId) {
          g.phase[a] = Phase::kForward;
          g.phase_rule[a] = r_fwd_only;
        }
  }

  // 6. whatever is still without a phase inside an iteration ran in the step outside every
  // forward, backward and optimizer range that the rules know (and, with no launch, has no range
  // at all): the step's other work.
  for (size_t a = 0; a < ng; ++a)
    if (g.phase[a] == Phase::kNone && g.iteration[a] != kNoId) {
      g.phase[a] = Phase::kOther;
      g.phase_rule[a] = r_remainder;
    }

  // ---- a backward collective without a layer: the layer of the last backward compute launched
  // before it on its thread in the same iteration (DDP buckets).
  {
    std::vector<uint32_t> idx;
    bool need = false;
    for (size_t a = 0; a < ng; ++a) {
      if (launch_ts[a] == kNoId || g.phase[a] != Phase::kBackward) continue;
      idx.push_back(static_cast<uint32_t>(a));
      need |= g.cls[a] == GpuClass::kCommunication && g.layer_rule[a] == kNoRule;
    }
    if (need) {
      sort_by_runs(idx, [&](uint32_t x, uint32_t y) {
        if (launch_tid[x] != launch_tid[y]) return launch_tid[x] < launch_tid[y];
        if (launch_ts[x] != launch_ts[y]) return launch_ts[x] < launch_ts[y];
        return x < y;
      });
      int64_t tid = kNoId, iter = kNoId;
      int32_t layer = -1;
      uint16_t layer_rule = kNoRule;
      for (uint32_t a : idx) {
        if (launch_tid[a] != tid || g.iteration[a] != iter) {
          tid = launch_tid[a];
          iter = g.iteration[a];
          layer = -1;
          layer_rule = kNoRule;
        }
        if (g.cls[a] == GpuClass::kCommunication) {
          if (g.layer_rule[a] == kNoRule && layer_rule != kNoRule) {
            g.layer[a] = layer;
            g.layer_rule[a] = r_bucket;
          }
        } else if (g.cls[a] == GpuClass::kCompute) {
          layer = g.layer[a];
          layer_rule = g.layer_rule[a];
        }
      }
    }
  }
}

void label_run(const Taxonomy& taxonomy, Run& run, unsigned threads) {
  parallel_for(run.ranks.size(), threads == 0 ? default_threads() : threads, [&](size_t i) {
    if (run.ranks[i].ok) label_trace(taxonomy, run.ranks[i].trace);
  });
}

}  // namespace chopper
