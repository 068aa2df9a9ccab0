#pragma once
// What every per-rank analysis starts from: the GPU activities in start order, the unions of
// compute, communication and copy time, and the iteration windows on the GPU timeline.
#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/intervals.hpp"
#include "chopper/base/flat_index.hpp"

namespace chopper {

// A label as ids of one rank: iteration, phase, layer, operation, op class.
using RawKey = std::tuple<int64_t, Phase, int32_t, StrId, OpClass>;
struct KeyHash {
  size_t operator()(const RawKey& k) const {
    uint64_t h = static_cast<uint64_t>(std::get<0>(k)) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(std::get<1>(k)) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(std::get<2>(k)) * 0xff51afd7ed558ccdull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(std::get<3>(k)) * 0xc4ceb9fe1a85ec53ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(std::get<4>(k)) + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

struct RankContext {
  struct Window {
    int64_t iteration;
    Ns start, end;
  };

  const RankTrace& t;
  int64_t rank;
  StringTable& names;          // the RankAnalysis's: label keys view their text here
  std::vector<int32_t> order;  // activities except syncs, by (start, row)
  Intervals compute;           // compute kernels and memsets
  Intervals comm, memcpy, all;
  Intervals other;  // comm ∪ memcpy: GPU work that is not compute
  Intervals exposed_comm, exposed_memcpy;
  std::vector<Window> windows;  // by iteration number; they tile the labelled GPU timeline
  Ns first = 0, last = 0;

  // The same context, its names elsewhere (for an analysis on another thread).
  RankContext(const RankContext& from, StringTable& out_names)
      : t(from.t),
        rank(from.rank),
        names(out_names),
        order(from.order),
        compute(from.compute),
        comm(from.comm),
        memcpy(from.memcpy),
        all(from.all),
        other(from.other),
        exposed_comm(from.exposed_comm),
        exposed_memcpy(from.exposed_memcpy),
        windows(from.windows),
        first(from.first),
        last(from.last) {}

  RankContext(const RankTrace& tr, int64_t r, StringTable& out_names)
      : t(tr), rank(r), names(out_names) {
    const GpuActivities& g = t.gpu;
    order.reserve(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      if (g.kind[i] != GpuKind::kSync && g.dur_ns[i] >= 0) order.push_back(static_cast<int32_t>(i));
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return g.start_ns[a] != g.start_ns[b] ? g.start_ns[a] < g.start_ns[b] : a < b;
    });
    UnionBuilder uc, um, ucp, ua;
    bool any = false;
    for (int32_t i : order) {
      const Ns s = g.start_ns[i], e = s + g.dur_ns[i];
      if (!any) first = s, last = e, any = true;
      last = std::max(last, e);
      ua.add(s, e);
      if (is_compute(i)) {
        uc.add(s, e);
      } else if (g.cls[i] == GpuClass::kCommunication) {
        ucp.add(s, e);
      } else {
        um.add(s, e);
      }
    }
    compute = uc.take();
    comm = ucp.take();
    memcpy = um.take();
    all = ua.take();
    other = unite(comm, memcpy);
    exposed_comm = subtract(comm, compute);
    exposed_memcpy = subtract(subtract(memcpy, compute), comm);
    build_windows();
  }

  // Compute = kernels that are not communication, and memsets (TraceLens's convention).
  bool is_compute(size_t i) const {
    return t.gpu.cls[i] == GpuClass::kCompute || t.gpu.cls[i] == GpuClass::kMemset;
  }
  Ns end(size_t i) const { return t.gpu.start_ns[i] + t.gpu.dur_ns[i]; }

  RawKey raw_key(size_t i, bool with_class) const {
    const GpuActivities& g = t.gpu;
    if (g.iteration.size() != g.size()) return {kNoId, Phase::kNone, -1, 0, OpClass::kNone};
    return {g.iteration[i], g.phase[i], g.layer[i], g.operation[i],
            with_class ? g.op_class[i] : OpClass::kNone};
  }
  LabelKey label(const RawKey& k) const {
    return {std::get<0>(k), std::get<1>(k), std::get<2>(k), name(std::get<3>(k))};
  }
  // A string of the trace, as text held by the analysis's names.
  std::string_view name(StrId id) const { return names.str(names.intern(t.strings.str(id))); }
  OpClass op_class(size_t i) const {
    return t.gpu.op_class.size() == t.gpu.size() ? t.gpu.op_class[i] : OpClass::kNone;
  }

  // Index of the window containing time `ts`, or -1.
  int window_of(Ns ts) const {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                               [](Ns x, const Window& w) { return x < w.start; });
    if (it == windows.begin()) return -1;
    --it;
    return ts < it->end ? static_cast<int>(it - windows.begin()) : -1;
  }

 private:
  // Iteration N's window opens when the host entered step N (its ProfilerStep#N start), if that
  // was before the first start of an activity launched in N: the GPU sat idle from then on (a
  // data-loader stall, a slow first launch), and that time belongs to iteration N. It never reaches
  // back over GPU work that came before. Without a host step it opens at that first start. It runs
  // to the opening of window N+1 (the last: to the last end of its activities), so windows never
  // overlap and tile the GPU timeline from the first iteration's opening.
  void build_windows() {
    const GpuActivities& g = t.gpu;
    if (g.iteration.size() != g.size()) return;
    std::vector<std::pair<int64_t, std::pair<Ns, Ns>>> it;  // iteration, first start, last end
    size_t hit = 0;  // activities come mostly in iteration order: try the last one first
    for (int32_t i : order) {
      const int64_t n = g.iteration[i];
      if (n == kNoId) continue;
      if (hit >= it.size() || it[hit].first != n) {
        auto p = std::find_if(it.begin(), it.end(), [&](const auto& x) { return x.first == n; });
        hit = static_cast<size_t>(p - it.begin());
        if (p == it.end()) it.push_back({n, {g.start_ns[i], end(i)}});
      }
      it[hit].second.second = std::max(it[hit].second.second, end(i));
    }
    std::sort(it.begin(), it.end());
    // Openings: the first start, moved back to the host step's start over idle GPU time (not
    // over the activities that started before it: the latest end among them is the floor).
    std::vector<Ns> ends_before(order.size() + 1, INT64_MIN);  // max end of order[0..j)
    for (size_t j = 0; j < order.size(); ++j)
      ends_before[j + 1] = std::max(ends_before[j], end(order[j]));
    std::vector<Ns> open(it.size());
    for (size_t k = 0; k < it.size(); ++k) {
      Ns s = it[k].second.first;
      for (const RankTrace::Step& st : t.steps)
        if (st.number == it[k].first && st.start_ns < s) {
          const auto lim = std::lower_bound(order.begin(), order.end(), s,
                                            [&](int32_t i, Ns x) { return g.start_ns[i] < x; });
          const Ns floor =
              std::max(st.start_ns, ends_before[static_cast<size_t>(lim - order.begin())]);
          s = std::min(s, floor);
        }
      open[k] = s;
    }
    for (size_t k = 0; k < it.size(); ++k) {
      Ns s = open[k];
      if (!windows.empty()) s = std::max(s, windows.back().end);
      Ns e = k + 1 < it.size() ? open[k + 1] : it[k].second.second;
      e = std::max(e, s);
      windows.push_back({it[k].first, s, e});
    }
  }
};

// Calls fn(lo, hi) for each piece of [lo, hi) not covered by `cover`.
template <class F>
void for_each_uncovered(const Intervals& cover, Ns lo, Ns hi, F&& fn) {
  if (hi <= lo) return;
  auto it = std::lower_bound(cover.begin(), cover.end(), lo,
                             [](const Interval& i, Ns x) { return i.end <= x; });
  Ns s = lo;
  for (; it != cover.end() && it->start < hi; ++it) {
    if (it->start > s) fn(s, it->start);
    s = std::max(s, it->end);
  }
  if (s < hi) fn(s, hi);
}

}  // namespace chopper
