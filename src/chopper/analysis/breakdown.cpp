// Temporal breakdown (HTA's idle / compute / non-compute; TraceLens's compute / exposed
// communication / exposed memcpy / idle), idle by cause per stream, communication exposure per
// label, compute-operation instances and their overlap with communication, and name statistics.
// Formulas: docs/metrics.md.
#include <array>
#include <map>
#include <tuple>
#include <unordered_map>

#include "chopper/analysis/flops.hpp"
#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

BreakdownRow window_row(const RankContext& c, int64_t iteration, Ns lo, Ns hi) {
  BreakdownRow r;
  r.rank = c.rank;
  r.iteration = iteration;
  r.start_ns = lo;
  r.total_ns = hi - lo;
  r.compute_ns = measure_in(c.compute, lo, hi);
  r.idle_ns = r.total_ns - measure_in(c.all, lo, hi);
  r.non_compute_ns = r.total_ns - r.compute_ns - r.idle_ns;
  r.exposed_comm_ns = measure_in(c.exposed_comm, lo, hi);
  r.exposed_memcpy_ns = measure_in(c.exposed_memcpy, lo, hi);
  r.comm_ns = measure_in(c.comm, lo, hi);
  r.overlapped_comm_ns = r.comm_ns - r.exposed_comm_ns;
  r.memcpy_ns = measure_in(c.memcpy, lo, hi);
  return r;
}

std::string component_name(Phase p, OpClass k) {
  std::string s(p == Phase::kNone ? std::string_view("unlabelled") : phase_name(p));
  s += '.';
  s += k == OpClass::kNone ? std::string_view("unclassified") : op_class_name(k);
  return s;
}

// Temporal breakdown: the whole trace, then each iteration window.
void temporal_breakdown(const RankContext& c, RankAnalysis& out) {
  out.breakdown.push_back(window_row(c, kNoId, c.first, c.last));
  for (const auto& w : c.windows)
    out.breakdown.push_back(window_row(c, w.iteration, w.start, w.end));
}

// Idle by cause, per stream (HTA): gap = start − the latest end so far on the stream; the host
// had not launched yet (host wait), a short gap (kernel wait), or other.
void idle_by_stream(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  struct StreamState {
    Ns end = INT64_MIN;
    std::map<int64_t, IdleRow> rows;  // by window iteration (kNoId = whole trace)
  };
  std::map<std::pair<int32_t, int64_t>, StreamState> streams;
  for (int32_t i : c.order) {
    StreamState& st = streams[{g.device[i], g.stream[i]}];
    const Ns s = g.start_ns[i];
    if (st.end != INT64_MIN && s > st.end) {
      const Ns gap = s - st.end;
      const int32_t rt = g.runtime_idx[i];
      const int cause = rt >= 0 && c.t.runtime.start_ns[rt] > st.end ? 0
                        : gap < o.kernel_wait_ns                     ? 1
                                                                     : 2;
      const int w = c.window_of(s);
      auto add = [&](int64_t it) {
        IdleRow& r = st.rows[it];
        ++r.gaps;
        (cause == 0 ? r.host_wait_ns : cause == 1 ? r.kernel_wait_ns : r.other_ns) += gap;
      };
      add(kNoId);
      if (w >= 0) add(c.windows[static_cast<size_t>(w)].iteration);
    }
    st.end = std::max(st.end, c.end(i));
  }
  for (auto& [k, st] : streams) {
    if (!st.rows.count(kNoId)) st.rows[kNoId] = IdleRow{};
    for (auto& [it, r] : st.rows) {
      r.rank = c.rank;
      r.device = k.first;
      r.stream = k.second;
      r.iteration = it;
      out.idle.push_back(r);
    }
  }
}

// Communication per label: the union of communication time is split among the collectives
// (each instant goes to the earliest-starting activity covering it), so concurrent collectives
// are not counted twice; the exposed part is what no compute covers.
void exposed_comm_by_label(const RankContext& c, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  FlatIndex<RawKey, KeyHash> index;
  std::vector<ExposedRow> rows;
  Ns cover = INT64_MIN;
  for (int32_t i : c.order) {
    if (g.cls[i] != GpuClass::kCommunication) continue;
    const Ns s = std::max(g.start_ns[i], cover), e = c.end(i);
    bool fresh = false;
    const uint32_t id = index.id(c.raw_key(i, true), &fresh);
    if (fresh) rows.emplace_back();
    ExposedRow& r = rows[id];
    ++r.kernels;
    if (e > s) {
      r.comm_ns += e - s;
      r.exposed_ns += (e - s) - measure_in(c.compute, s, e);
    }
    cover = std::max(cover, e);
  }
  out.exposed.reserve(rows.size());
  for (size_t id = 0; id < rows.size(); ++id) {
    ExposedRow& r = rows[id];
    r.rank = c.rank;
    r.key = c.label(index.key(id));
    r.op_class = std::get<4>(index.key(id));
    out.exposed.push_back(r);
  }
  std::sort(out.exposed.begin(), out.exposed.end(), [](const ExposedRow& a, const ExposedRow& b) {
    return std::tie(a.key, a.op_class) < std::tie(b.key, b.op_class);
  });
}

// FLOPs: each launching host op once (its first compute activity), from its recorded shapes;
// op_cost is memoised per distinct (name, dims, types, concrete inputs).
class HostOpFlops {
 public:
  explicit HostOpFlops(const RankTrace& t) : t_(t), counted_(t.host.size(), 0) {}

  // The op's FLOPs the first time it is asked for, 0 after (and for no op).
  double first_use(int32_t op) {
    const HostOps& h = t_.host;
    if (op < 0 || static_cast<size_t>(op) >= h.size() || counted_[op]) return 0;
    counted_[op] = 1;
    const InputShapes& sh = t_.shapes_of(static_cast<size_t>(op));
    const std::array<StrId, 4> k{h.name[op], sh.input_dims, sh.input_types, sh.concrete_inputs};
    auto [it, fresh] = cost_.try_emplace(k, 0.0);
    if (fresh)
      it->second = op_cost(t_.strings.str(k[0]), t_.strings.str(k[1]), t_.strings.str(k[2]),
                           t_.strings.str(k[3]))
                       .flops;
    return it->second;
  }

 private:
  const RankTrace& t_;
  std::vector<uint8_t> counted_;
  std::map<std::array<StrId, 4>, double> cost_;
};

// The compute components of each window: time per (phase, op class) slot.
constexpr size_t kClasses = static_cast<size_t>(OpClass::kSync) + 1;
using ComponentSlots = std::array<Ns, kPhaseCount * kClasses>;

// Gives [s, e) of compute activity i (its part not yet covered by earlier compute) to its slot in
// the windows it crosses.
void add_compute_component(const RankContext& c, int32_t i, Ns s, Ns e,
                           std::vector<ComponentSlots>& comp) {
  const GpuActivities& g = c.t.gpu;
  const size_t slot =
      (g.iteration.size() == g.size() ? static_cast<size_t>(g.phase[i]) : 0) * kClasses +
      static_cast<size_t>(c.op_class(i));
  int w = c.window_of(s);
  if (w < 0) {
    // Before the first window or between windows: find the first window after s.
    auto it = std::upper_bound(c.windows.begin(), c.windows.end(), s,
                               [](Ns x, const RankContext::Window& wi) { return x < wi.start; });
    w = static_cast<int>(it - c.windows.begin());
  }
  for (size_t k = static_cast<size_t>(w); k < c.windows.size() && c.windows[k].start < e; ++k) {
    const Ns a = std::max(s, c.windows[k].start), b = std::min(e, c.windows[k].end);
    if (b > a) comp[k][slot] += b - a;
  }
}

// The windows' components: the compute slots, then exposed communication and copies.
void window_compute_components(const RankContext& c, const std::vector<ComponentSlots>& comp,
                               RankAnalysis& out) {
  for (size_t k = 0; k < c.windows.size(); ++k)
    for (size_t slot = 0; slot < comp[k].size(); ++slot)
      if (comp[k][slot] > 0)
        out.components[c.windows[k].iteration][component_name(
            static_cast<Phase>(slot / kClasses), static_cast<OpClass>(slot % kClasses))] +=
            comp[k][slot];
  for (const auto& w : c.windows) {
    out.components[w.iteration]["exposed_comm"] += measure_in(c.exposed_comm, w.start, w.end);
    out.components[w.iteration]["exposed_memcpy"] += measure_in(c.exposed_memcpy, w.start, w.end);
  }
}

// Compute-operation instances (labelled compute kernels grouped by iteration, phase, layer,
// operation), the FLOPs per iteration, and the compute components of each iteration window: the
// union of compute time split among the kernels as communication is above, so the components
// add up to the compute time.
void compute_ops(const RankContext& c, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  FlatIndex<RawKey, KeyHash> index;
  std::vector<OpInstance> inst;
  std::vector<ComponentSlots> comp(c.windows.size());
  for (auto& a : comp) a.fill(0);
  HostOpFlops flops(c.t);
  Ns cover = INT64_MIN;
  for (int32_t i : c.order) {
    if (!c.is_compute(i)) continue;
    const Ns s0 = g.start_ns[i], e = c.end(i);
    const Ns s = std::max(s0, cover);
    if (e > s) add_compute_component(c, i, s, e, comp);
    cover = std::max(cover, e);
    const double fl = flops.first_use(g.host_op_idx[i]);
    if (g.iteration.size() == g.size() && g.iteration[i] != kNoId && fl > 0)
      out.flops[g.iteration[i]] += fl;
    if (g.iteration.size() != g.size() || g.operation[i] == 0) continue;
    bool fresh = false;
    const uint32_t id = index.id(c.raw_key(i, false), &fresh);
    if (fresh) {
      OpInstance& oi = inst.emplace_back();
      oi.rank = c.rank;
      oi.op_class = g.op_class[i];
      oi.first_start_ns = s0;
      oi.last_end_ns = e;
    }
    OpInstance& oi = inst[id];
    ++oi.kernels;
    oi.kernel_ns += g.dur_ns[i];
    oi.flops += fl;
    oi.last_end_ns = std::max(oi.last_end_ns, e);
  }
  out.ops.reserve(inst.size());
  for (size_t id = 0; id < inst.size(); ++id) {
    OpInstance& oi = inst[id];
    oi.key = c.label(index.key(id));
    oi.comm_overlap_ns = measure_in(c.comm, oi.first_start_ns, oi.last_end_ns);
    out.ops.push_back(std::move(oi));
  }
  window_compute_components(c, comp, out);
}

// Name statistics: kernels by name, operations, classes (folded and shared in finalize).
void name_stats(const RankContext& c, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  std::unordered_map<StrId, NameStat> kern, ops;
  std::map<OpClass, NameStat> cls;
  auto add = [](NameStat& n, Ns d) {
    if (n.count == 0 || d < n.min_ns) n.min_ns = d;
    n.max_ns = std::max(n.max_ns, d);
    ++n.count;
    n.total_ns += d;
  };
  const bool labelled = g.iteration.size() == g.size();
  for (int32_t i : c.order) {
    const Ns d = g.dur_ns[i];
    out.gpu_time_ns += d;
    NameStat& k = kern[g.name[i]];
    if (k.count == 0) k.group = std::string(gpu_class_name(g.cls[i]));
    add(k, d);
    if (!labelled) continue;
    NameStat& op = ops[g.operation[i]];
    if (op.count == 0) op.group = std::string(op_class_name(g.op_class[i]));
    add(op, d);
    add(cls[g.op_class[i]], d);
  }
  for (auto& [id, n] : kern) {
    n.rank = c.rank;
    n.name = std::string(c.t.strings.str(id));
    out.kernels.push_back(std::move(n));
  }
  for (auto& [id, n] : ops) {
    n.rank = c.rank;
    n.name = id == 0 ? std::string("(unlabelled)") : std::string(c.t.strings.str(id));
    out.operations.push_back(std::move(n));
  }
  for (auto& [k, n] : cls) {
    n.rank = c.rank;
    n.name = k == OpClass::kNone ? std::string("(unclassified)") : std::string(op_class_name(k));
    out.classes.push_back(std::move(n));
  }
}

}  // namespace

void breakdown_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out) {
  if (c.order.empty()) return;
  temporal_breakdown(c, out);
  idle_by_stream(c, o, out);
  exposed_comm_by_label(c, out);
  compute_ops(c, out);
  name_stats(c, out);
}

}  // namespace chopper
