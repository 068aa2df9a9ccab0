#include "chopper/link/link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "chopper/base/sort.hpp"

namespace chopper {

bool parse_profiler_step(std::string_view name, int64_t& n) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view num = name.substr(kPrefix.size());
  if (num.empty() || num.size() > 18) return false;
  int64_t v = 0;
  for (char c : num) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  n = v;
  return true;
}

namespace {

// A sorted (key, row) index: 12-16 bytes per entry, a third of an unordered_map's, and built in
// one sort. find() returns the row of the first entry with `key`, or kNoRow.
template <class K>
class SortedIndex {
 public:
  void add(K key, int32_t row) { v_.emplace_back(key, row); }
  // Entries with the same key keep the order they were added in (rows ascending).
  void build() {
    sort_by_runs(v_, [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
  }
  int32_t find(const K& key) const {
    const size_t i = lower(key);
    return i < v_.size() && v_[i].first == key ? v_[i].second : kNoRow;
  }
  // All rows with `key`, in insertion order.
  template <class F>
  void for_each(const K& key, F&& f) const {
    for (size_t i = lower(key); i < v_.size() && v_[i].first == key; ++i) f(v_[i].second);
  }
  bool empty() const { return v_.empty(); }
  // Entries whose key equals the previous entry's (after build()).
  uint64_t duplicates() const {
    uint64_t n = 0;
    for (size_t i = 1; i < v_.size(); ++i) n += v_[i].first == v_[i - 1].first ? 1 : 0;
    return n;
  }

 private:
  // The first entry whose key is not below `key`. A trace asks for ids mostly in rising order,
  // so the search gallops forward from the last answer when the key is above the key there
  // (a few probes close together), and searches the whole index otherwise.
  size_t lower(const K& key) const {
    const auto below = [](const auto& e, const K& k) { return e.first < k; };
    size_t lo = 0, hi = v_.size();
    if (hint_ < v_.size() && v_[hint_].first < key) {
      lo = hint_ + 1;  // every entry before lo is below key
      for (size_t step = 1;; step *= 2) {
        const size_t probe = lo - 1 + step;
        if (probe >= v_.size()) break;
        if (!(v_[probe].first < key)) {
          hi = probe;  // the answer is in [lo, probe]
          break;
        }
        lo = probe + 1;
      }
    }
    hint_ = static_cast<size_t>(std::lower_bound(v_.begin() + static_cast<std::ptrdiff_t>(lo),
                                                 v_.begin() + static_cast<std::ptrdiff_t>(hi), key,
                                                 below) -
                                v_.begin());
    return hint_;
  }

  std::vector<std::pair<K, int32_t>> v_;
  mutable size_t hint_ = 0;  // lower()'s last answer
};

// Row numbers grouped by thread (a counting sort: threads are small dense indices), in file
// order within each thread, where a trace's rows are nearly in time order already.
std::vector<int32_t> rows_by_thread(const std::vector<int32_t>& thread) {
  std::vector<int32_t> order(thread.size());
  int32_t threads = 0;
  bool valid = true;
  for (int32_t th : thread) {
    threads = std::max(threads, th + 1);
    valid &= th >= 0;
  }
  if (!valid) {
    std::iota(order.begin(), order.end(), 0);  // not from the reader: sorted by the caller
    return order;
  }
  std::vector<size_t> at(static_cast<size_t>(threads) + 1, 0);
  for (int32_t th : thread) ++at[static_cast<size_t>(th) + 1];
  std::partial_sum(at.begin(), at.end(), at.begin());
  for (size_t i = 0; i < thread.size(); ++i)
    order[at[static_cast<size_t>(thread[i])]++] = static_cast<int32_t>(i);
  return order;
}

// Host ops grouped by thread, each group sorted by (start asc, dur desc, index): the order in
// which a stack sweep sees parents before children.
std::vector<int32_t> host_order(const HostOps& h) {
  std::vector<int32_t> order = rows_by_thread(h.thread);
  sort_by_runs(order, [&](int32_t a, int32_t b) {
    if (h.thread[a] != h.thread[b]) return h.thread[a] < h.thread[b];
    if (h.start_ns[a] != h.start_ns[b]) return h.start_ns[a] < h.start_ns[b];
    if (h.dur_ns[a] != h.dur_ns[b]) return h.dur_ns[a] > h.dur_ns[b];
    return a < b;
  });
  return order;
}

void build_host_tree(RankTrace& t, const std::vector<int32_t>& order) {
  HostOps& h = t.host;
  h.parent.assign(h.size(), kNoRow);
  std::vector<int32_t> stack;
  uint64_t partial_overlaps = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int32_t i = order[k];
    if (k > 0) {
      const int32_t p = order[k - 1];
      if (h.thread[p] != h.thread[i]) stack.clear();
    }
    const Ns s = h.start_ns[i], e = s + h.dur_ns[i];
    while (!stack.empty()) {
      const int32_t top = stack.back();
      const Ns te = h.start_ns[top] + h.dur_ns[top];
      if (s < te) {
        if (e > te) ++partial_overlaps;  // overlaps its parent's end: still nested by start
        break;
      }
      stack.pop_back();
    }
    if (!stack.empty()) h.parent[i] = stack.back();
    stack.push_back(i);
  }
  if (partial_overlaps > 0) t.diagnostics.add_count("host_op_partial_overlap", partial_overlaps);
}

// For each runtime call, the innermost host op on its thread with start <= call start and
// call end <= op end; kNoRow if none.
std::vector<int32_t> containing_ops(const RankTrace& t, const std::vector<int32_t>& host_sorted) {
  const HostOps& h = t.host;
  const RuntimeCalls& r = t.runtime;
  std::vector<int32_t> result(r.size(), kNoRow);
  std::vector<int32_t> rorder = rows_by_thread(r.thread);
  sort_by_runs(rorder, [&](int32_t a, int32_t b) {
    if (r.thread[a] != r.thread[b]) return r.thread[a] < r.thread[b];
    if (r.start_ns[a] != r.start_ns[b]) return r.start_ns[a] < r.start_ns[b];
    return a < b;
  });
  size_t hk = 0;
  std::vector<int32_t> stack;
  int32_t cur = kNoRow;  // the thread
  for (int32_t ri : rorder) {
    if (r.thread[ri] != cur) {
      cur = r.thread[ri];
      stack.clear();
      while (hk < host_sorted.size() && h.thread[host_sorted[hk]] < cur) ++hk;
    }
    const Ns rs = r.start_ns[ri], re = rs + r.dur_ns[ri];
    // Open every op of this thread that starts at or before the call.
    while (hk < host_sorted.size()) {
      const int32_t hi = host_sorted[hk];
      if (h.thread[hi] != cur || h.start_ns[hi] > rs) break;
      while (!stack.empty() && h.start_ns[stack.back()] + h.dur_ns[stack.back()] <= h.start_ns[hi])
        stack.pop_back();
      stack.push_back(hi);
      ++hk;
    }
    while (!stack.empty() && h.start_ns[stack.back()] + h.dur_ns[stack.back()] < rs)
      stack.pop_back();
    for (size_t k = stack.size(); k-- > 0;) {
      const int32_t op = stack[k];
      if (h.start_ns[op] <= rs && re <= h.start_ns[op] + h.dur_ns[op]) {
        result[ri] = op;
        break;
      }
    }
  }
  return result;
}

// ProfilerStep#N ranges (user_annotation now, cpu_op in 2021 files), by start.
void find_profiler_steps(RankTrace& t) {
  const HostOps& h = t.host;
  t.steps.clear();
  for (size_t i = 0; i < h.size(); ++i) {
    int64_t n;
    if (parse_profiler_step(t.strings.str(h.name[i]), n))
      t.steps.push_back({n, h.start_ns[i], h.start_ns[i] + h.dur_ns[i]});
  }
  std::sort(t.steps.begin(), t.steps.end(), [](const auto& a, const auto& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.number < b.number;
  });
}

// External id -> host op. Ids are unique per op in Kineto; if several ops share one, keep the
// innermost (shortest) so a launch maps to the op closest to it, and count the clash.
class HostOpByExternalId {
 public:
  explicit HostOpByExternalId(RankTrace& t) : h_(t.host) {
    for (size_t i = 0; i < h_.size(); ++i)
      if (h_.external_id[i] != kNoId) index_.add(h_.external_id[i], static_cast<int32_t>(i));
    index_.build();
    const uint64_t clashes = index_.duplicates();  // ops beyond the first with the same id
    if (clashes > 0) t.diagnostics.add_count("host_external_id_shared", clashes);
  }

  int32_t find(int64_t x) const {
    int32_t best = kNoRow;
    index_.for_each(x, [&](int32_t row) {
      if (best == kNoRow) {
        best = row;
      } else if (h_.dur_ns[row] < h_.dur_ns[best]) {
        best = row;
      }
    });
    return best;
  }

 private:
  const HostOps& h_;
  SortedIndex<int64_t> index_;
};

// Whether host op `op` is on runtime call `call`'s thread and encloses it in time.
bool encloses(const RankTrace& t, int32_t op, size_t call) {
  const HostOps& h = t.host;
  const RuntimeCalls& r = t.runtime;
  return h.thread[op] == r.thread[call] && h.start_ns[op] <= r.start_ns[call] &&
         r.start_ns[call] + r.dur_ns[call] <= h.start_ns[op] + h.dur_ns[op];
}

// Runtime call -> host op (r.host_op_idx): External id, else containment on the launching
// thread. Returns each call's link path. An External id match counts only if that op is on the
// call's thread and encloses it: 2023 builds wrote each runtime call's own correlation into its
// "External id", which can coincide with an unrelated op's id (17 of 98 launches in HTA's
// alexnet trace).
std::vector<LinkPath> link_runtime_calls(RankTrace& t, const std::vector<int32_t>& host_sorted,
                                         const HostOpByExternalId& by_ext) {
  RuntimeCalls& r = t.runtime;
  const std::vector<int32_t> containing = containing_ops(t, host_sorted);
  r.host_op_idx.assign(r.size(), kNoRow);
  std::vector<LinkPath> rpath(r.size(), LinkPath::kNone);
  uint64_t ext_not_enclosing = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (r.external_id[i] != kNoId) {
      const int32_t op = by_ext.find(r.external_id[i]);
      if (op != kNoRow) {
        if (encloses(t, op, i)) {
          r.host_op_idx[i] = op;
          rpath[i] = LinkPath::kRuntimeExternalId;
          continue;
        }
        ++ext_not_enclosing;
      }
    }
    if (containing[i] != kNoRow) {
      r.host_op_idx[i] = containing[i];
      rpath[i] = LinkPath::kContainment;
    }
  }
  if (ext_not_enclosing > 0)
    t.diagnostics.add_count("runtime_external_id_not_enclosing", ext_not_enclosing);
  return rpath;
}

// GPU activity -> runtime call by its ac2g flow: finish (at the GPU op) -> start (at the runtime
// call), and the runtime calls by thread sorted by start, to find the call a flow start sits in.
// Built at the first GPU activity whose correlation finds no runtime call: with correlations
// intact (most traces), never. A finish's thread is the GPU activity's (device, stream) as
// (pid, tid).
class LaunchFlows {
 public:
  explicit LaunchFlows(const RankTrace& t) : t_(t) {}

  // The runtime call of GPU activity i by its flow, kNoRow if none.
  int32_t runtime_of(size_t i) {
    if (!built_) build();
    if (finish_.empty()) return kNoRow;
    const GpuActivities& g = t_.gpu;
    const int32_t f = finish_.find(Pos{g.device[i], g.stream[i], g.start_ns[i]});
    if (f == kNoRow) return kNoRow;
    const int32_t st = start_.find(t_.flows.id[f]);
    return st != kNoRow ? runtime_at(t_.flows.thread[st], t_.flows.ts_ns[st]) : kNoRow;
  }

 private:
  using Pos = std::tuple<int64_t, int64_t, Ns>;  // pid, tid, ts

  void build() {
    const RuntimeCalls& r = t_.runtime;
    built_ = true;
    for (size_t i = 0; i < t_.flows.size(); ++i) {
      if (t_.flows.kind[i] != FlowKind::kLaunch) continue;
      if (t_.flows.phase[i] == FlowPhase::kStart)
        start_.add(t_.flows.id[i], static_cast<int32_t>(i));
      else if (t_.flows.phase[i] == FlowPhase::kFinish) {
        const ThreadKey& th = t_.threads[static_cast<size_t>(t_.flows.thread[i])];
        finish_.add(Pos{th.pid, th.tid, t_.flows.ts_ns[i]}, static_cast<int32_t>(i));
      }
    }
    start_.build();
    finish_.build();
    rsorted_ = rows_by_thread(r.thread);
    sort_by_runs(rsorted_, [&](int32_t a, int32_t b) {
      if (r.thread[a] != r.thread[b]) return r.thread[a] < r.thread[b];
      return r.start_ns[a] < r.start_ns[b];
    });
  }

  // The runtime call of `thread` running at ts, kNoRow if none.
  int32_t runtime_at(int32_t thread, Ns ts) const {
    const RuntimeCalls& r = t_.runtime;
    auto it = std::upper_bound(rsorted_.begin(), rsorted_.end(), std::make_pair(thread, ts),
                               [&](const std::pair<int32_t, Ns>& k, int32_t b) {
                                 return k < std::make_pair(r.thread[b], r.start_ns[b]);
                               });
    if (it == rsorted_.begin()) return kNoRow;
    const int32_t c = *(it - 1);
    if (r.thread[c] != thread || ts > r.start_ns[c] + r.dur_ns[c]) return kNoRow;
    return c;
  }

  const RankTrace& t_;
  bool built_ = false;
  SortedIndex<uint64_t> start_;
  SortedIndex<Pos> finish_;  // row = flow row
  std::vector<int32_t> rsorted_;
};

// GPU activity -> runtime call (its correlation; a graph launch's is shared by all its kernels;
// else its launch flow) and -> host op: the runtime call's External id op, else the activity's
// own External id op, else the op containing the runtime call. Counts what stays unlinked.
void link_gpu_activities(RankTrace& t, const HostOpByExternalId& by_ext,
                         const std::vector<LinkPath>& rpath) {
  const HostOps& h = t.host;
  const RuntimeCalls& r = t.runtime;
  GpuActivities& g = t.gpu;
  SortedIndex<int64_t> by_corr;
  for (size_t i = 0; i < r.size(); ++i)
    if (r.correlation[i] != kNoId) by_corr.add(r.correlation[i], static_cast<int32_t>(i));
  by_corr.build();
  LaunchFlows flows(t);
  g.runtime_idx.assign(g.size(), kNoRow);
  g.host_op_idx.assign(g.size(), kNoRow);
  g.link_path.assign(g.size(), LinkPath::kNone);
  t.linked_gpu_activities = 0;
  t.linkable_gpu_activities = 0;
  uint64_t no_runtime = 0, no_host = 0, ext_after_start = 0;
  // With no runtime call to check it against, the activity's own External id counts only if that
  // op started no later than the activity did on the GPU: a launch cannot follow its kernel, and
  // an id that 2023 builds copied from the correlation can name an unrelated, later op.
  auto ext_fits = [&](int32_t op, int32_t rt, size_t a) {
    if (rt != kNoRow) return encloses(t, op, static_cast<size_t>(rt));
    if (h.start_ns[op] <= g.start_ns[a]) return true;
    ++ext_after_start;
    return false;
  };
  for (size_t i = 0; i < g.size(); ++i) {
    int32_t rt = kNoRow;
    if (g.correlation[i] != kNoId) rt = by_corr.find(g.correlation[i]);
    if (rt == kNoRow) rt = flows.runtime_of(i);
    g.runtime_idx[i] = rt;
    if (rt != kNoRow && rpath[rt] == LinkPath::kRuntimeExternalId) {
      g.host_op_idx[i] = r.host_op_idx[rt];
      g.link_path[i] = LinkPath::kRuntimeExternalId;
    } else if (const int32_t op =
                   g.external_id[i] != kNoId ? by_ext.find(g.external_id[i]) : kNoRow;
               op != kNoRow && ext_fits(op, rt, i)) {
      g.host_op_idx[i] = op;
      g.link_path[i] = LinkPath::kKernelExternalId;
    } else if (rt != kNoRow && r.host_op_idx[rt] != kNoRow) {
      g.host_op_idx[i] = r.host_op_idx[rt];
      g.link_path[i] = LinkPath::kContainment;
    }
    if (g.kind[i] == GpuKind::kSync) continue;
    ++t.linkable_gpu_activities;
    if (g.host_op_idx[i] != kNoRow) {
      ++t.linked_gpu_activities;
    } else if (rt == kNoRow) {
      ++no_runtime;
    } else {
      ++no_host;
    }
  }
  if (no_runtime > 0 && !r.start_ns.empty())
    t.diagnostics.add_count("gpu_activity_without_runtime_call", no_runtime);
  if (no_host > 0) t.diagnostics.add_count("gpu_activity_without_host_op", no_host);
  if (ext_after_start > 0)
    t.diagnostics.add_count("gpu_external_id_op_after_gpu_start", ext_after_start);
}

}  // namespace

void link_trace(RankTrace& t) {
  const std::vector<int32_t> host_sorted = host_order(t.host);
  build_host_tree(t, host_sorted);
  find_profiler_steps(t);
  const HostOpByExternalId by_ext(t);
  const std::vector<LinkPath> rpath = link_runtime_calls(t, host_sorted, by_ext);
  link_gpu_activities(t, by_ext, rpath);
}

}  // namespace chopper
