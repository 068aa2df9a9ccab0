// Launch overhead: Chopper's split of each gap between compute kernels into prep (the GPU idle
// before the host issued the launch) and call (launch call to kernel start), after removing the
// part of the gap in which communication or copies ran (Chopper counts that as launch overhead;
// it is exposed communication). HTA's launch statistics and queue length per stream.
// Formulas: docs/metrics.md.
#include <algorithm>
#include <map>

#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

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

  // Launch overhead per label, and the launch-overhead intervals (for the window components).
  FlatIndex<RawKey, KeyHash> index;
  std::vector<LaunchRow> rows;
  UnionBuilder launch_set;
  Ns prev_end = INT64_MIN;
  for (int32_t i : c.order) {
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
      const int32_t r = g.runtime_idx[i];
      const Ns issued = r >= 0 ? std::clamp(rt.start_ns[r], prev_end, s) : prev_end;
      for_each_uncovered(c.other, prev_end, s, [&](Ns a, Ns b) {
        launch_set.add(a, b);
        if (r < 0) {
          row->no_launch_ns += b - a;
          return;
        }
        // [a, b) splits at the moment the host issued the launch.
        row->prep_ns += std::max<Ns>(0, std::min(b, issued) - a);
        row->call_ns += std::max<Ns>(0, b - std::max(a, issued));
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
    out.launch.push_back(r);
  }
  std::sort(out.launch.begin(), out.launch.end(),
            [](const LaunchRow& a, const LaunchRow& b) { return a.key < b.key; });
  const Intervals ls = launch_set.take();
  // The host's first launch of each iteration: before it, launch-overhead time in the iteration's
  // window is the host busy before launching anything (data loading, a stall at the step's start),
  // not the launch path.
  std::map<int64_t, Ns> first_issue;
  if (g.iteration.size() == g.size())
    for (int32_t i : c.order) {
      const int32_t r = g.runtime_idx[i];
      if (g.iteration[i] == kNoId || r < 0) continue;
      auto [it, fresh] = first_issue.try_emplace(g.iteration[i], rt.start_ns[r]);
      if (!fresh) it->second = std::min(it->second, rt.start_ns[r]);
    }
  for (const auto& w : c.windows) {
    const Ns lo = measure_in(ls, w.start, w.end);
    const Ns idle = (w.end - w.start) - measure_in(c.all, w.start, w.end);
    auto fi = first_issue.find(w.iteration);
    const Ns stall = fi == first_issue.end()
                         ? 0
                         : measure_in(ls, w.start, std::clamp(fi->second, w.start, w.end));
    out.components[w.iteration]["host_stall"] += stall;
    out.components[w.iteration]["launch_overhead"] += lo - stall;
    out.components[w.iteration]["idle"] += idle - lo;
  }

  // HTA launch statistics: every GPU activity with its launching runtime call.
  LaunchStats& st = out.launch_stats;
  st.rank = c.rank;
  std::vector<Ns> cpu, delay;
  // Queue length per stream: +1 at the launch call, −1 when the activity starts on the GPU.
  std::map<std::pair<int32_t, int64_t>, std::vector<std::pair<Ns, int>>> q;
  for (int32_t i : c.order) {
    const int32_t r = g.runtime_idx[i];
    if (r < 0) continue;
    const Ns cd = rt.dur_ns[r];
    const Ns d = std::max<Ns>(0, g.start_ns[i] - (rt.start_ns[r] + cd));
    cpu.push_back(cd);
    delay.push_back(d);
    st.short_kernels += (cd <= o.runtime_cutoff_ns && g.dur_ns[i] < cd) ? 1 : 0;
    st.runtime_outliers += cd > o.runtime_cutoff_ns ? 1 : 0;
    st.delay_outliers += d > o.launch_delay_cutoff_ns ? 1 : 0;
    auto& ev = q[{g.device[i], g.stream[i]}];
    ev.push_back({rt.start_ns[r], +1});
    ev.push_back({g.start_ns[i], -1});
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
  for (auto& [k, ev] : q) {
    // Ties: the GPU start (−1) before a launch (+1) at the same instant.
    std::sort(ev.begin(), ev.end());
    QueueRow r;
    r.rank = c.rank;
    r.device = k.first;
    r.stream = k.second;
    r.launches = ev.size() / 2;
    int64_t len = 0;
    long double area = 0;
    for (size_t j = 0; j < ev.size(); ++j) {
      if (j > 0) {
        const Ns dt = ev[j].first - ev[j - 1].first;
        area += static_cast<long double>(len) * static_cast<long double>(dt);
        if (len >= o.queue_full) r.full_ns += dt;
      }
      len += ev[j].second;
      r.max_queue = std::max(r.max_queue, len);
    }
    const Ns span = ev.back().first - ev.front().first;
    r.mean_queue = span > 0 ? static_cast<double>(area / static_cast<long double>(span)) : 0.0;
    out.queues.push_back(r);
  }
}

}  // namespace chopper
