// Launch overhead: Chopper's split of each gap between compute kernels into prep (the GPU idle
// before the host issued the launch: the host was late) and call (launch call to kernel start:
// launch latency), after removing the part of the gap in which communication or copies ran
// (Chopper counts that as launch overhead; it is exposed communication). What is not the host's
// or the launch path's is named apart: a kernel of a graph launch after the graph's first kernel
// was issued with it (its gap is the GPU's, between the graph's kernels), and a kernel still not
// started long after its launch call ended waited on the GPU (an event, a sync). HTA's launch
// statistics (one row per launch call: a graph launch once) and queue length per stream.
// The host-side pieces (prep and call) are then given to what the host was doing in them: data
// loading, a blocking synchronisation, the optimizer step or checkpointing, framework code, the
// launch call (HostCover below). Formulas: docs/metrics.md.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

// The value at index ⌊p·(n−1) + 0.5⌋ of the sorted values (0-based): the nearest of the positions
// linear interpolation would use, ties to the upper one. Not the nearest-rank method (⌈p·n⌉-th).
Ns percentile(std::vector<Ns>& v, double p) {
  if (v.empty()) return 0;
  const size_t k =
      std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// The causes of the host-side GPU idle time, in the order of the components they become. The host
// frames name three (kData, kSync, kOptimizer); kFramework is the rest of the prep time (host late,
// or host stall before the iteration's first launch), kCall the launch call (launch overhead, or
// host stall before the first launch).
enum Cause : uint8_t { kData, kSync, kOptimizer, kFramework, kCall, kCauses };
constexpr size_t kNamed = 3;  // causes the host frames name
// The components: the causes after the iteration's first launch, then host_stall (before it).
constexpr std::array<const char*, kCauses + 1> kComponent = {
    "data_loading", "host_sync", "host_optimizer", "host_late", "launch_overhead", "host_stall"};
constexpr size_t kStall = kCauses;

bool contains(std::string_view s, std::string_view x) {
  return s.find(x) != std::string_view::npos;
}

// The cause a host op, user annotation or Python frame names, by its name (docs/metrics.md, "Idle
// causes"); kCauses if none. A blocking copy to the host (aten::to / aten::copy_ with a
// device-to-host memcpy) is found from its memcpy, not its name.
Cause host_frame_cause(std::string_view n) {
  if (n.starts_with("enumerate(DataLoader)") || contains(n, "DataLoaderIter") ||
      contains(n, "utils/data/dataloader.py"))
    return kData;
  if (n == "aten::item" || n == "aten::_local_scalar_dense") return kSync;
  if (n.starts_with("Optimizer.step") || n.starts_with("Optimizer.zero_grad") ||
      n.starts_with("optimizer.step") || contains(n, "torch/optim/") || n == "torch.save" ||
      contains(n, "torch/serialization.py") || contains(n, "distributed/checkpoint/") ||
      contains(n, "save_checkpoint"))
    return kOptimizer;
  return kCauses;
}

}  // namespace

// A runtime or driver call that blocks the host until the GPU is done (launch.hpp).
bool blocking_call(std::string_view n) {
  if (!n.starts_with("cu") && !n.starts_with("hip")) return false;
  return contains(n, "Synchronize") || (contains(n, "Memcpy") && !contains(n, "Async"));
}

namespace {

// A cause's time on the host: [s, e), named by its outermost frame.
struct Span {
  Ns s, e;
  StrId frame;
};
using Spans = std::vector<Span>;

// Keeps the outermost of nested spans (given by start, longer first), clipping partial overlaps:
// sorted and disjoint.
Spans outermost(Spans v) {
  std::sort(v.begin(), v.end(),
            [](const Span& a, const Span& b) { return a.s != b.s ? a.s < b.s : a.e > b.e; });
  Spans out;
  for (Span x : v) {
    if (!out.empty()) x.s = std::max(x.s, out.back().e);
    if (x.e > x.s) out.push_back(x);
  }
  return out;
}

// Time not yet given to a cause (a few disjoint intervals of one gap).
struct Rest {
  std::vector<Interval> v;
  // Gives [lo, hi) ∩ the rest to fn(a, b) and removes it.
  template <class F>
  void take(Ns lo, Ns hi, F&& fn) {
    if (hi <= lo) return;
    std::vector<Interval> keep;
    for (const Interval& i : v) {
      const Ns a = std::max(i.start, lo), b = std::min(i.end, hi);
      if (a >= b) {
        keep.push_back(i);
        continue;
      }
      fn(a, b);
      if (i.start < a) keep.push_back({i.start, a});
      if (b < i.end) keep.push_back({b, i.end});
    }
    v.swap(keep);
  }
  // Gives every span of `spans` that meets the rest.
  template <class F>
  void take_all(const Spans& spans, F&& fn) {
    if (v.empty() || spans.empty()) return;
    Ns lo = v.front().start, hi = v.front().end;
    for (const Interval& i : v) lo = std::min(lo, i.start), hi = std::max(hi, i.end);
    auto it = std::lower_bound(spans.begin(), spans.end(), lo,
                               [](const Span& x, Ns t) { return x.e <= t; });
    for (; it != spans.end() && it->s < hi && !v.empty(); ++it)
      take(it->s, it->e, [&](Ns a, Ns b) { fn(a, b, it->frame); });
  }
};

// What the host was doing, per thread, for the idle causes: every host op, annotation, Python
// frame and runtime call as the thread's busy time; the frames that name a cause, per thread and
// over all threads; the host ops by (start, longer first) to find the innermost one at a moment.
class HostCover {
 public:
  explicit HostCover(const RankTrace& t) : t_(t) {
    const HostOps& h = t.host;
    const RuntimeCalls& rt = t.runtime;
    const size_t n = t.threads.size();
    busy_.resize(n);
    ops_.resize(n);
    spans_.resize(n);
    auto thread_ok = [&](int32_t th) { return th >= 0 && static_cast<size_t>(th) < n; };
    // Blocking copies to the host: the host op of a device-to-host memcpy, and its aten::to /
    // aten::_to_copy / aten::copy_ ancestors.
    std::vector<uint8_t> to_host(h.size(), 0);
    const GpuActivities& g = t.gpu;
    if (g.memcpy_dir.size() == g.size() && g.host_op_idx.size() == g.size() &&
        h.parent.size() == h.size())
      for (size_t i = 0; i < g.size(); ++i) {
        if (g.memcpy_dir[i] != MemcpyDir::kDtoH) continue;
        for (int32_t op = g.host_op_idx[i]; op >= 0; op = h.parent[static_cast<size_t>(op)]) {
          const std::string_view nm = t.strings.str(h.name[static_cast<size_t>(op)]);
          if (nm != "aten::copy_" && nm != "aten::to" && nm != "aten::_to_copy") break;
          to_host[static_cast<size_t>(op)] = 1;
        }
      }
    std::vector<std::vector<Interval>> raw(n);
    std::array<Spans, kNamed> all;
    std::unordered_map<StrId, Cause> op_cause, call_cause;  // by name
    for (size_t i = 0; i < h.size(); ++i) {
      const int32_t th = h.thread[i];
      if (!thread_ok(th) || h.dur_ns[i] < 0) continue;
      const Ns s = h.start_ns[i], e = s + h.dur_ns[i];
      raw[static_cast<size_t>(th)].push_back({s, e});
      ops_[static_cast<size_t>(th)].push_back(static_cast<int32_t>(i));
      auto [k, fresh] = op_cause.try_emplace(h.name[i], kCauses);
      if (fresh) k->second = host_frame_cause(t.strings.str(h.name[i]));
      const Cause c = to_host[i] ? kSync : k->second;
      if (c < kNamed) spans_[static_cast<size_t>(th)][c].push_back({s, e, h.name[i]});
    }
    for (size_t i = 0; i < rt.size(); ++i) {
      const int32_t th = rt.thread[i];
      if (!thread_ok(th) || rt.dur_ns[i] < 0) continue;
      const Ns s = rt.start_ns[i], e = s + rt.dur_ns[i];
      raw[static_cast<size_t>(th)].push_back({s, e});
      auto [k, fresh] = call_cause.try_emplace(rt.name[i], kCauses);
      if (fresh) k->second = blocking_call(t.strings.str(rt.name[i])) ? kSync : kCauses;
      if (k->second < kNamed)
        spans_[static_cast<size_t>(th)][k->second].push_back({s, e, rt.name[i]});
    }
    for (size_t th = 0; th < n; ++th) {
      auto& r = raw[th];
      std::sort(r.begin(), r.end(),
                [](const Interval& a, const Interval& b) { return a.start < b.start; });
      UnionBuilder u;
      for (const Interval& i : r) u.add(i.start, i.end);
      busy_[th] = u.take();
      auto& o = ops_[th];
      std::sort(o.begin(), o.end(), [&](int32_t a, int32_t b) {
        if (h.start_ns[a] != h.start_ns[b]) return h.start_ns[a] < h.start_ns[b];
        return h.dur_ns[a] != h.dur_ns[b] ? h.dur_ns[a] > h.dur_ns[b] : a < b;
      });
      for (size_t c = 0; c < kNamed; ++c) {
        spans_[th][c] = outermost(std::move(spans_[th][c]));
        all[c].insert(all[c].end(), spans_[th][c].begin(), spans_[th][c].end());
      }
    }
    for (size_t c = 0; c < kNamed; ++c) all_[c] = outermost(std::move(all[c]));
  }

  // Gives the prep piece [a, b) of a gap that opened at `opened` (the previous compute kernel's
  // end), before a launch issued at `issued` from thread `th`, to fn(a, b, cause, frame): the
  // cause frames of the launching thread first (data loading, then a blocking call, then the
  // optimizer; a blocking call still running when the gap opened drained the GPU's queue, so
  // the time from it to the launch is its); where the launching thread shows nothing, the
  // cause frames of any thread; the rest is framework time, named by the innermost host op of
  // the launching thread at its middle (0: none).
  template <class F>
  void classify(Ns opened, Ns a, Ns b, Ns issued, int32_t th, F&& fn) const {
    Rest rest;
    rest.v.push_back({a, b});
    const bool ok = th >= 0 && static_cast<size_t>(th) < busy_.size();
    if (ok) {
      const auto& sp = spans_[static_cast<size_t>(th)];
      rest.take_all(sp[kData], [&](Ns x, Ns y, StrId f) { fn(x, y, kData, f); });
      auto blocking = std::lower_bound(sp[kSync].begin(), sp[kSync].end(), opened,
                                       [](const Span& x, Ns t) { return x.e <= t; });
      if (blocking != sp[kSync].end() && blocking->s <= opened)
        rest.take(blocking->s, std::max(blocking->e, issued),
                  [&](Ns x, Ns y) { fn(x, y, kSync, blocking->frame); });
      rest.take_all(sp[kSync], [&](Ns x, Ns y, StrId f) { fn(x, y, kSync, f); });
      rest.take_all(sp[kOptimizer], [&](Ns x, Ns y, StrId f) { fn(x, y, kOptimizer, f); });
    }
    // Where the launching thread shows nothing: the other threads' cause frames.
    Rest idle_thread;
    for (const Interval& i : rest.v) {
      if (!ok) {
        idle_thread.v.push_back(i);
        continue;
      }
      for_each_uncovered(busy_[static_cast<size_t>(th)], i.start, i.end, [&](Ns x, Ns y) {
        idle_thread.v.push_back({x, y});
      });
    }
    for (size_t c = 0; c < kNamed; ++c)
      idle_thread.take_all(all_[c], [&](Ns x, Ns y, StrId f) {
        rest.take(x, y, [](Ns, Ns) {});
        fn(x, y, static_cast<Cause>(c), f);
      });
    for (const Interval& i : rest.v)
      fn(i.start, i.end, kFramework, ok ? innermost(th, i.start + (i.end - i.start) / 2) : 0);
  }

 private:
  // The name of the innermost host op of thread th containing `at`, 0 if none.
  StrId innermost(int32_t th, Ns at) const {
    const HostOps& h = t_.host;
    const auto& o = ops_[static_cast<size_t>(th)];
    auto it = std::upper_bound(o.begin(), o.end(), at,
                               [&](Ns x, int32_t i) { return x < h.start_ns[i]; });
    if (it == o.begin()) return 0;
    for (int32_t i = *(it - 1); i >= 0;
         i = h.parent.size() == h.size() ? h.parent[static_cast<size_t>(i)] : kNoRow)
      if (at < h.start_ns[i] + h.dur_ns[i]) return h.name[i];
    return 0;
  }

  const RankTrace& t_;
  std::vector<Intervals> busy_;                   // per thread
  std::vector<std::vector<int32_t>> ops_;         // per thread, by (start, longer first)
  std::vector<std::array<Spans, kNamed>> spans_;  // per thread, per named cause
  std::array<Spans, kNamed> all_;                 // over all threads
};

// One (window, component)'s time: per gap, and per frame.
struct CauseAcc {
  Ns total = 0;
  std::vector<Ns> gaps;
  std::unordered_map<StrId, Ns> frames;
};

// Launch calls that launched several activities: graph launches (by name, link/classify.cpp),
// and any call whose correlation several activities share (a graph whatever its API's name).
class GraphLaunches {
 public:
  explicit GraphLaunches(const RankContext& c)
      : rt_(c.t.runtime), per_call_(rt_.size(), 0), named_(rt_.graph_launch.size() == rt_.size()) {
    const GpuActivities& g = c.t.gpu;
    for (int32_t i : c.order)
      if (g.runtime_idx[i] >= 0) ++per_call_[static_cast<size_t>(g.runtime_idx[i])];
  }
  bool is_graph(int32_t r) const {
    return r >= 0 && ((named_ && rt_.graph_launch[static_cast<size_t>(r)]) ||
                      per_call_[static_cast<size_t>(r)] > 1);
  }

 private:
  const RuntimeCalls& rt_;
  std::vector<uint32_t> per_call_;
  bool named_;
};

// Per window, the host's first launch of its iteration (clamped to the window; the window's start
// without one): before it, the host-side idle time that no host frame names is the host busy
// before launching anything (a slow step start), host_stall, not host_late.
std::vector<Ns> host_stall_cuts(const RankContext& c) {
  const GpuActivities& g = c.t.gpu;
  const RuntimeCalls& rt = c.t.runtime;
  std::map<int64_t, Ns> first_issue;
  if (g.iteration.size() == g.size())
    for (int32_t i : c.order) {
      const int32_t r = g.runtime_idx[i];
      if (g.iteration[i] == kNoId || r < 0) continue;
      auto [it, fresh] = first_issue.try_emplace(g.iteration[i], rt.start_ns[r]);
      if (!fresh) it->second = std::min(it->second, rt.start_ns[r]);
    }
  std::vector<Ns> cut(c.windows.size());
  for (size_t w = 0; w < c.windows.size(); ++w) {
    const auto& win = c.windows[w];
    auto fi = first_issue.find(win.iteration);
    cut[w] = fi == first_issue.end() ? win.start : std::clamp(fi->second, win.start, win.end);
  }
  return cut;
}

// The host-side idle time by window and component (kComponent), per gap and frame. A gap's
// pieces are gathered first and summed per component when it closes, so that a gap counts once
// per component however many pieces the host frames cut it into.
class IdleCauses {
 public:
  explicit IdleCauses(const RankContext& c)
      : c_(c), cut_(host_stall_cuts(c)), acc_(c.windows.size() * kComponent.size()) {}

  // Gives [x, y) of the current gap to `cause` (framework time and the launch call before the
  // window's first launch: host_stall), window by window.
  void give(Ns x, Ns y, Cause cause, StrId frame) {
    auto w = std::lower_bound(c_.windows.begin(), c_.windows.end(), x,
                              [](const RankContext::Window& v, Ns t) { return v.end <= t; });
    for (; w != c_.windows.end() && w->start < y; ++w) {
      const size_t wi = static_cast<size_t>(w - c_.windows.begin());
      const Ns lo = std::max(x, w->start), hi = std::min(y, w->end), at = cut_[wi];
      const size_t base = wi * kComponent.size();
      const size_t early = cause >= kFramework ? kStall : static_cast<size_t>(cause);
      if (std::min(hi, at) > lo) gap_.push_back({base + early, std::min(hi, at) - lo, frame});
      if (hi > std::max(lo, at)) gap_.push_back({base + cause, hi - std::max(lo, at), frame});
    }
  }

  void close_gap() {
    std::sort(gap_.begin(), gap_.end(),
              [](const Piece& a, const Piece& b) { return a.key < b.key; });
    for (size_t j = 0; j < gap_.size();) {
      CauseAcc& a = acc_[gap_[j].key];
      Ns sum = 0;
      for (const size_t key = gap_[j].key; j < gap_.size() && gap_[j].key == key; ++j) {
        sum += gap_[j].ns;
        a.frames[gap_[j].frame] += gap_[j].ns;
      }
      a.total += sum;
      a.gaps.push_back(sum);
    }
    gap_.clear();
  }

  CauseAcc& at(size_t window, size_t component) {
    return acc_[window * kComponent.size() + component];
  }

 private:
  struct Piece {
    size_t key;
    Ns ns;
    StrId frame;
  };
  const RankContext& c_;
  std::vector<Ns> cut_;  // per window: host_stall_cuts
  std::vector<CauseAcc> acc_;
  std::vector<Piece> gap_;  // the current gap's pieces
};

// Launch overhead per label (out.launch, out.launch_prep_ns, out.launch_call_ns): each gap
// before a compute kernel, less the communication and copies in it, split into prep | call |
// wait, or graph / no-launch time; the host-side pieces go to `idle`. Returns the graph gaps'
// intervals, for the window components.
Intervals split_launch_gaps(const RankContext& c, const AnalysisOptions& o,
                            const GraphLaunches& graphs, IdleCauses& idle, RankAnalysis& out,
                            UnionBuilder* host_wait = nullptr) {
  const GpuActivities& g = c.t.gpu;
  const RuntimeCalls& rt = c.t.runtime;
  const HostCover cover(c.t);
  auto give = [&](Ns x, Ns y, Cause cause, StrId frame) { idle.give(x, y, cause, frame); };
  FlatIndex<RawKey, KeyHash> index;
  std::vector<LaunchRow> rows;
  UnionBuilder graph_set;
  std::vector<uint8_t> started(rt.size(), 0);  // an activity of the launch call has started
  Ns prev_end = INT64_MIN;
  for (int32_t i : c.order) {
    const int32_t r = g.runtime_idx[i];
    const bool in_graph = graphs.is_graph(r) && started[static_cast<size_t>(r)];
    if (r >= 0) started[static_cast<size_t>(r)] = 1;
    if (!c.is_compute(i)) continue;
    const Ns s = g.start_ns[i];
    bool fresh = false;
    const uint32_t id = index.id(c.raw_key(i, false), &fresh);
    if (fresh) rows.emplace_back();
    LaunchRow* row = &rows[id];
    ++row->kernels;
    // The first compute kernel of the first window: the gap runs from the window's opening (the
    // step's start on the host, when the GPU was idle before it).
    if (prev_end == INT64_MIN && !c.windows.empty() && c.windows.front().start < s &&
        c.window_of(s) == 0)
      prev_end = c.windows.front().start;
    if (prev_end != INT64_MIN && s > prev_end) {
      ++row->gaps;
      row->gap_ns += s - prev_end;
      // [a, b) splits at the moment the host issued the launch (prep | call), and where the
      // launch should have reached the GPU: the call's end plus the launch-delay cutoff (HTA's
      // launch-delay outlier threshold, 100 µs); past that the launched kernel waited on the GPU.
      const Ns issued = r >= 0 ? std::clamp(rt.start_ns[r], prev_end, s) : prev_end;
      const Ns ready =
          r >= 0 ? std::clamp(rt.start_ns[r] + rt.dur_ns[r] + o.launch_delay_cutoff_ns, issued, s)
                 : s;
      for_each_uncovered(c.other, prev_end, s, [&](Ns a, Ns b) {
        if (in_graph) {
          row->graph_ns += b - a;
          graph_set.add(a, b);
          return;
        }
        if (r < 0) {
          row->no_launch_ns += b - a;
          return;
        }
        const Ns p1 = std::clamp(issued, a, b), p2 = std::clamp(ready, a, b);
        row->prep_ns += p1 - a;
        row->call_ns += p2 - p1;
        row->wait_ns += b - p2;
        if (host_wait != nullptr) host_wait->add(a, p2);
        if (p1 > a) cover.classify(prev_end, a, p1, issued, rt.thread[r], give);
        if (p2 > p1) give(p1, p2, kCall, rt.name[r]);
      });
      row->gpu_wait_ns += measure_in(c.other, prev_end, s);
      idle.close_gap();
    }
    prev_end = std::max(prev_end, c.end(i));
  }
  out.launch.reserve(rows.size());
  for (size_t id = 0; id < rows.size(); ++id) {
    LaunchRow& r = rows[id];
    r.rank = c.rank;
    r.key = c.label(index.key(id));
    out.launch_prep_ns += r.prep_ns;
    out.launch_call_ns += r.call_ns;
    out.launch.push_back(r);
  }
  std::sort(out.launch.begin(), out.launch.end(),
            [](const LaunchRow& a, const LaunchRow& b) { return a.key < b.key; });
  return graph_set.take();
}

// The evidence of one (window, component): its gaps and the five host frames with the most time.
IdleCauseRow idle_cause_row(const RankContext& c, int64_t iteration, size_t component,
                            CauseAcc& a) {
  IdleCauseRow row;
  row.rank = c.rank;
  row.iteration = iteration;
  row.cause = kComponent[component];
  row.gaps = a.gaps.size();
  row.idle_ns = a.total;
  row.max_gap_ns = *std::max_element(a.gaps.begin(), a.gaps.end());
  row.median_gap_ns = percentile(a.gaps, 0.5);
  std::vector<std::pair<std::string, Ns>> frames;
  // No host op on the thread: Python or code the profiler does not record; in a trace without
  // any host op (a GPU-only profile) nothing can be said of the host.
  const std::string none =
      c.t.host.size() == 0 ? "(no host ops in the trace)" : "(no host op: Python or untraced code)";
  for (const auto& [f, ns] : a.frames)
    frames.push_back({f == 0 ? none : std::string(c.t.strings.str(f)), ns});
  std::sort(frames.begin(), frames.end(), [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  });
  if (frames.size() > 5) frames.resize(5);
  row.frames = std::move(frames);
  return row;
}

// Components of each window (docs/metrics.md, "End to end"): the host-side causes + host_stall
// + host_late + launch_overhead + graph_gap + idle = the window's idle time. The evidence of
// each: idle_causes.
void window_components(const RankContext& c, IdleCauses& idle, const Intervals& graph,
                       RankAnalysis& out) {
  for (size_t wi = 0; wi < c.windows.size(); ++wi) {
    const auto& w = c.windows[wi];
    const Ns idle_ns = (w.end - w.start) - measure_in(c.all, w.start, w.end);
    const Ns gg = measure_in(graph, w.start, w.end);
    auto& comp = out.components[w.iteration];
    Ns host = 0;
    for (size_t k = 0; k < kComponent.size(); ++k) {
      CauseAcc& a = idle.at(wi, k);
      host += a.total;
      // host_stall, host_late and launch_overhead always; the named causes where they occur.
      if (a.total > 0 || k >= kFramework) comp[kComponent[k]] += a.total;
      if (a.total == 0) continue;
      out.idle_causes.push_back(idle_cause_row(c, w.iteration, k, a));
    }
    if (gg > 0) comp["graph_gap"] += gg;
    comp["idle"] += idle_ns - host - gg;
  }
  std::sort(out.idle_causes.begin(), out.idle_causes.end(),
            [](const IdleCauseRow& a, const IdleCauseRow& b) {
              return a.iteration != b.iteration ? a.iteration < b.iteration : a.cause < b.cause;
            });
}

// The launch calls with their activities, for HTA's launch statistics and the queue lengths.
struct Launches {
  struct Call {
    int32_t r;
    Ns first_start, gpu_ns;
    uint32_t n;
  };
  std::vector<Call> calls;  // in the order of their first activity
  std::map<std::pair<int32_t, int64_t>, std::map<int32_t, Ns>>
      on_stream;  // (device, stream) -> call -> its first activity's start there
};

Launches collect_launches(const RankContext& c) {
  const GpuActivities& g = c.t.gpu;
  Launches l;
  std::unordered_map<int32_t, size_t> slot;
  for (int32_t i : c.order) {
    const int32_t r = g.runtime_idx[i];
    if (r < 0) continue;
    auto [it, fresh] = slot.try_emplace(r, l.calls.size());
    if (fresh) l.calls.push_back({r, g.start_ns[i], 0, 0});
    Launches::Call& call = l.calls[it->second];
    call.gpu_ns += g.dur_ns[i];
    ++call.n;
    l.on_stream[{g.device[i], g.stream[i]}].try_emplace(r, g.start_ns[i]);  // first in start order
  }
  return l;
}

// HTA's launch statistics, one row per launch call with its activities (a graph launch is one
// launch, its call duration counted once; its delay is to its first activity, its GPU time the
// sum of its activities').
void launch_stats(const RankContext& c, const AnalysisOptions& o, const GraphLaunches& graphs,
                  const Launches& launches, LaunchStats& st) {
  const RuntimeCalls& rt = c.t.runtime;
  st.rank = c.rank;
  std::vector<Ns> cpu, delay;
  cpu.reserve(launches.calls.size());
  delay.reserve(launches.calls.size());
  for (const Launches::Call& l : launches.calls) {
    const Ns cd = rt.dur_ns[l.r];
    const Ns d = std::max<Ns>(0, l.first_start - (rt.start_ns[l.r] + cd));
    cpu.push_back(cd);
    delay.push_back(d);
    st.activities += l.n;
    if (graphs.is_graph(l.r)) {
      ++st.graph_launches;
      st.graph_activities += l.n;
    }
    st.short_kernels += (cd <= o.runtime_cutoff_ns && l.gpu_ns < cd) ? 1 : 0;
    st.runtime_outliers += cd > o.runtime_cutoff_ns ? 1 : 0;
    st.delay_outliers += d > o.launch_delay_cutoff_ns ? 1 : 0;
  }
  st.launches = cpu.size();
  if (cpu.empty()) return;
  auto mean = [](const std::vector<Ns>& v) {
    long double s = 0;
    for (Ns x : v) s += x;
    return static_cast<Ns>(s / static_cast<long double>(v.size()));
  };
  st.cpu_mean_ns = mean(cpu);
  st.delay_mean_ns = mean(delay);
  st.cpu_max_ns = *std::max_element(cpu.begin(), cpu.end());
  st.delay_max_ns = *std::max_element(delay.begin(), delay.end());
  st.cpu_p50_ns = percentile(cpu, 0.5);
  st.cpu_p95_ns = percentile(cpu, 0.95);
  st.delay_p50_ns = percentile(delay, 0.5);
  st.delay_p95_ns = percentile(delay, 0.95);
}

// Queue length per stream: +1 at the launch call, −1 when its first activity on the stream
// starts.
void queue_rows(const RankContext& c, const AnalysisOptions& o, const Launches& launches,
                RankAnalysis& out) {
  const RuntimeCalls& rt = c.t.runtime;
  for (const auto& [k, calls] : launches.on_stream) {
    std::vector<std::pair<Ns, int>> ev;
    ev.reserve(2 * calls.size());
    for (const auto& [r, first] : calls) {
      ev.push_back({rt.start_ns[r], +1});
      ev.push_back({first, -1});
    }
    // Ties: the GPU start (−1) before a launch (+1) at the same instant.
    std::sort(ev.begin(), ev.end());
    QueueRow q;
    q.rank = c.rank;
    q.device = k.first;
    q.stream = k.second;
    q.launches = calls.size();
    int64_t len = 0;
    long double area = 0;
    for (size_t j = 0; j < ev.size(); ++j) {
      if (j > 0) {
        const Ns dt = ev[j].first - ev[j - 1].first;
        area += static_cast<long double>(len) * static_cast<long double>(dt);
        if (len >= o.queue_full) q.full_ns += dt;
      }
      len += ev[j].second;
      q.max_queue = std::max(q.max_queue, len);
    }
    const Ns span = ev.back().first - ev.front().first;
    q.mean_queue = span > 0 ? static_cast<double>(area / static_cast<long double>(span)) : 0.0;
    out.queues.push_back(q);
  }
}

}  // namespace

Intervals host_wait_intervals(const RankContext& c, const AnalysisOptions& o) {
  if (c.order.empty()) return {};
  const GraphLaunches graphs(c);
  IdleCauses idle(c);
  RankAnalysis scratch;
  UnionBuilder wait;
  split_launch_gaps(c, o, graphs, idle, scratch, &wait);
  return wait.take();
}

void launch_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out) {
  if (c.order.empty()) return;
  const GraphLaunches graphs(c);
  IdleCauses idle(c);
  const Intervals graph = split_launch_gaps(c, o, graphs, idle, out);
  window_components(c, idle, graph, out);
  const Launches launches = collect_launches(c);
  launch_stats(c, o, graphs, launches, out.launch_stats);
  queue_rows(c, o, launches, out);
}

}  // namespace chopper
