// Launch overhead: Chopper's split of each gap between compute kernels into prep (the GPU idle
// before the host issued the launch: the host was late) and call (launch call to kernel start:
// launch latency), after removing the part of the gap in which communication or copies ran
// (Chopper counts that as launch overhead; it is exposed communication). What is not the host's
// or the launch path's is named apart: a kernel of a graph launch after the graph's first kernel
// was issued with it (its gap is the GPU's, between the graph's kernels), and a kernel still not
// started long after its launch call ended waited on the GPU (an event, a sync). HTA's launch
// statistics (one row per launch call: a graph launch once) and queue length per stream.
// Formulas: docs/metrics.md.
#include <algorithm>
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

}  // namespace

void launch_partial(const RankContext& c, const AnalysisOptions& o, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  const RuntimeCalls& rt = c.t.runtime;
  if (c.order.empty()) return;

  // Launch calls that launched several activities: graph launches (by name, link/classify.cpp),
  // and any call whose correlation several activities share (a graph whatever its API's name).
  std::vector<uint32_t> per_call(rt.size(), 0);
  for (int32_t i : c.order)
    if (g.runtime_idx[i] >= 0) ++per_call[static_cast<size_t>(g.runtime_idx[i])];
  const bool named = rt.graph_launch.size() == rt.size();
  auto is_graph = [&](int32_t r) {
    return r >= 0 && ((named && rt.graph_launch[static_cast<size_t>(r)]) ||
                      per_call[static_cast<size_t>(r)] > 1);
  };

  // Launch overhead per label, and its intervals by cause (for the window components).
  FlatIndex<RawKey, KeyHash> index;
  std::vector<LaunchRow> rows;
  UnionBuilder prep_set, call_set, graph_set;
  std::vector<uint8_t> started(rt.size(), 0);  // an activity of the launch call has started
  Ns prev_end = INT64_MIN;
  for (int32_t i : c.order) {
    const int32_t r = g.runtime_idx[i];
    const bool in_graph = is_graph(r) && started[static_cast<size_t>(r)];
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
        if (p1 > a) prep_set.add(a, p1);
        if (p2 > p1) call_set.add(p1, p2);
      });
      row->gpu_wait_ns += measure_in(c.other, prev_end, s);
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
  const Intervals prep = prep_set.take(), call = call_set.take(), graph = graph_set.take();
  // The host's first launch of each iteration: before it, the host-late and launch time in the
  // iteration's window is the host busy before launching anything (data loading, a stall at the
  // step's start): host_stall.
  std::map<int64_t, Ns> first_issue;
  if (g.iteration.size() == g.size())
    for (int32_t i : c.order) {
      const int32_t r = g.runtime_idx[i];
      if (g.iteration[i] == kNoId || r < 0) continue;
      auto [it, fresh] = first_issue.try_emplace(g.iteration[i], rt.start_ns[r]);
      if (!fresh) it->second = std::min(it->second, rt.start_ns[r]);
    }
  // Components of each window (docs/metrics.md, "End to end"): host_stall + host_late +
  // launch_overhead + graph_gap + idle = the window's idle time.
  for (const auto& w : c.windows) {
    const Ns idle = (w.end - w.start) - measure_in(c.all, w.start, w.end);
    auto fi = first_issue.find(w.iteration);
    const Ns cut = fi == first_issue.end() ? w.start : std::clamp(fi->second, w.start, w.end);
    const Ns prep_before = measure_in(prep, w.start, cut),
             call_before = measure_in(call, w.start, cut);
    const Ns late = measure_in(prep, cut, w.end), launch = measure_in(call, cut, w.end);
    const Ns gg = measure_in(graph, w.start, w.end);
    auto& comp = out.components[w.iteration];
    comp["host_stall"] += prep_before + call_before;
    comp["host_late"] += late;
    comp["launch_overhead"] += launch;
    if (gg > 0) comp["graph_gap"] += gg;
    comp["idle"] += idle - prep_before - call_before - late - launch - gg;
  }

  // HTA launch statistics, one row per launch call with its activities (a graph launch is one
  // launch, its call duration counted once; its delay is to its first activity, its GPU time the
  // sum of its activities'). Queue length per stream: +1 at the launch call, −1 when its first
  // activity on the stream starts.
  LaunchStats& st = out.launch_stats;
  st.rank = c.rank;
  struct Launch {
    int32_t r;
    Ns first_start, gpu_ns;
    uint32_t n;
  };
  std::vector<Launch> launches;
  std::unordered_map<int32_t, size_t> slot;
  std::map<std::pair<int32_t, int64_t>, std::map<int32_t, Ns>>
      on_stream;  // stream -> call -> start
  for (int32_t i : c.order) {
    const int32_t r = g.runtime_idx[i];
    if (r < 0) continue;
    auto [it, fresh] = slot.try_emplace(r, launches.size());
    if (fresh) launches.push_back({r, g.start_ns[i], 0, 0});
    Launch& l = launches[it->second];
    l.gpu_ns += g.dur_ns[i];
    ++l.n;
    on_stream[{g.device[i], g.stream[i]}].try_emplace(r, g.start_ns[i]);  // first in start order
  }
  std::vector<Ns> cpu, delay;
  cpu.reserve(launches.size());
  delay.reserve(launches.size());
  for (const Launch& l : launches) {
    const Ns cd = rt.dur_ns[l.r];
    const Ns d = std::max<Ns>(0, l.first_start - (rt.start_ns[l.r] + cd));
    cpu.push_back(cd);
    delay.push_back(d);
    st.activities += l.n;
    if (is_graph(l.r)) {
      ++st.graph_launches;
      st.graph_activities += l.n;
    }
    st.short_kernels += (cd <= o.runtime_cutoff_ns && l.gpu_ns < cd) ? 1 : 0;
    st.runtime_outliers += cd > o.runtime_cutoff_ns ? 1 : 0;
    st.delay_outliers += d > o.launch_delay_cutoff_ns ? 1 : 0;
  }
  st.launches = cpu.size();
  if (!cpu.empty()) {
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
  for (const auto& [k, calls] : on_stream) {
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

}  // namespace chopper
