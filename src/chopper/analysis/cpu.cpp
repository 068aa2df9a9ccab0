// The CPU side of a recorded run (cpu.hpp): per rank and iteration window, from the host's
// <host>.cpu.csv and <host>.threads.csv (model/recorded_cpu.hpp), whose CLOCK_REALTIME stamps are
// the trace's clock (offset 0). docs/metrics.md, "CPU utilization".
#include "chopper/analysis/cpu.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

// The median spacing of sorted distinct times (0 with fewer than two).
Ns median_spacing(const std::vector<Ns>& t) {
  std::vector<Ns> d;
  for (size_t i = 1; i < t.size(); ++i) d.push_back(t[i] - t[i - 1]);
  if (d.empty()) return 0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// The host's CPU samples per tick: each tick's values cover (previous tick, tick]; the first tick
// covers the median tick spacing before it.
class HostTicks {
 public:
  explicit HostTicks(const CpuUtilization& c) {
    std::vector<size_t> ix(c.size());
    std::iota(ix.begin(), ix.end(), size_t{0});
    std::stable_sort(ix.begin(), ix.end(),
                     [&](size_t a, size_t b) { return c.time_ns[a] < c.time_ns[b]; });
    std::set<int32_t> cpus;
    for (size_t i : ix) {
      if (t_.empty() || t_.back() != c.time_ns[i]) {
        t_.push_back(c.time_ns[i]);
        ticks_.emplace_back();
      }
      cpus.insert(c.cpu[i]);
      Tick& k = ticks_.back();
      if (std::isnan(c.util_pct[i])) continue;
      ++k.n;
      k.busy += c.util_pct[i] / 100;
      auto add = [](double& sum, int& n, double v) {
        if (!std::isnan(v)) sum += v, ++n;
      };
      add(k.user, k.n_user, c.user_pct[i]);
      add(k.system, k.n_system, c.system_pct[i]);
      add(k.iowait, k.n_iowait, c.iowait_pct[i]);
    }
    cpus_ = static_cast<int64_t>(cpus.size());
    period_ = median_spacing(t_);
  }

  int64_t cpus() const { return cpus_; }

  // Time-weighted sums over [lo, hi) of the ticks that have values.
  struct Sums {
    double w = 0, busy = 0, util = 0, idle = 0, user = 0, w_user = 0, system = 0, w_system = 0,
           iowait = 0, w_iowait = 0;
  };
  void add(Ns lo, Ns hi, Sums& s) const {
    if (hi <= lo || t_.empty()) return;
    // The first tick whose interval ends after lo.
    size_t k = static_cast<size_t>(std::upper_bound(t_.begin(), t_.end(), lo) - t_.begin());
    for (; k < t_.size(); ++k) {
      const Ns from = k > 0 ? t_[k - 1] : t_[0] - period_;
      if (from >= hi) break;
      const Tick& x = ticks_[k];
      const double w = static_cast<double>(std::min(hi, t_[k]) - std::max(lo, from));
      if (w <= 0 || x.n == 0) continue;
      s.w += w;
      s.busy += w * x.busy;
      s.util += w * 100 * x.busy / x.n;
      s.idle += w * (x.n - x.busy);
      if (x.n_user > 0) s.user += w * x.user / x.n_user, s.w_user += w;
      if (x.n_system > 0) s.system += w * x.system / x.n_system, s.w_system += w;
      if (x.n_iowait > 0) s.iowait += w * x.iowait / x.n_iowait, s.w_iowait += w;
    }
  }

 private:
  struct Tick {
    int n = 0, n_user = 0, n_system = 0, n_iowait = 0;
    double busy = 0, user = 0, system = 0, iowait = 0;
  };
  std::vector<Ns> t_;
  std::vector<Tick> ticks_;
  int64_t cpus_ = 0;
  Ns period_ = 0;
};

double ratio(double a, double b) {
  return b > 0 ? a / b : std::nan("");
}

// Each thread's cumulative CPU time as a function of time. A thread has a row whenever its CPU
// time changed since its last row (at every sampling tick it ran in), so the change a row shows
// happened within the sampling interval before it: the time rises linearly over (max(previous
// row, row − interval), row]. Before its first row and after its last, it stays put (nothing is
// given to the time before a thread was first seen).
class ThreadTimes {
 public:
  struct Thread {
    int64_t pid = 0, ppid = 0, tid = 0;
    bool data_worker = false;  // named pt_data_worker
    std::vector<Ns> t, v;
  };

  explicit ThreadTimes(const ThreadSamples& s) {
    std::map<std::pair<int64_t, int64_t>, size_t> at;
    std::vector<size_t> ix(s.size());
    std::iota(ix.begin(), ix.end(), size_t{0});
    std::stable_sort(ix.begin(), ix.end(),
                     [&](size_t a, size_t b) { return s.time_ns[a] < s.time_ns[b]; });
    std::vector<Ns> ticks;
    for (size_t i : ix) {
      auto [it, fresh] = at.try_emplace({s.pid[i], s.tid[i]}, threads_.size());
      if (fresh) threads_.push_back({s.pid[i], s.ppid[i], s.tid[i], false, {}, {}});
      Thread& th = threads_[it->second];
      th.data_worker = th.data_worker || s.comm[i].starts_with("pt_data_worker");
      th.t.push_back(s.time_ns[i]);
      th.v.push_back(s.cpu_time_ns[i]);
      if (ticks.empty() || ticks.back() != s.time_ns[i]) ticks.push_back(s.time_ns[i]);
    }
    period_ = median_spacing(ticks);
  }

  const std::vector<Thread>& threads() const { return threads_; }

  // CPU time of thread `th` in [lo, hi).
  double in(const Thread& th, Ns lo, Ns hi) const { return at(th, hi) - at(th, lo); }

 private:
  double at(const Thread& th, Ns x) const {
    if (th.t.empty()) return 0;
    if (x <= th.t.front()) return static_cast<double>(th.v.front());
    if (x >= th.t.back()) return static_cast<double>(th.v.back());
    const size_t j = static_cast<size_t>(std::lower_bound(th.t.begin(), th.t.end(), x) -
                                         th.t.begin());  // th.t[j - 1] < x <= th.t[j]
    const double v0 = static_cast<double>(th.v[j - 1]), v1 = static_cast<double>(th.v[j]);
    const Ns ramp = period_ > 0 ? std::max(th.t[j - 1], th.t[j] - period_) : th.t[j - 1];
    if (x <= ramp) return v0;
    return v0 + (v1 - v0) * static_cast<double>(x - ramp) / static_cast<double>(th.t[j] - ramp);
  }
  std::vector<Thread> threads_;
  Ns period_ = 0;
};

// The rank's threads: its process's, its main thread, and its data-loader workers by process.
struct RankThreads {
  std::vector<const ThreadTimes::Thread*> process, main;
  std::map<int64_t, std::vector<const ThreadTimes::Thread*>> workers;  // by pid
};

RankThreads rank_threads(const ThreadTimes& tt, int64_t pid) {
  RankThreads r;
  if (pid < 0) return r;
  bool named = false;  // a child process names a thread pt_data_worker
  for (const ThreadTimes::Thread& th : tt.threads())
    named = named || (th.ppid == pid && th.pid != pid && th.data_worker);
  std::set<int64_t> named_pids;
  for (const ThreadTimes::Thread& th : tt.threads())
    if (th.ppid == pid && th.data_worker) named_pids.insert(th.pid);
  for (const ThreadTimes::Thread& th : tt.threads()) {
    if (th.pid == pid) {
      r.process.push_back(&th);
      if (th.tid == pid) r.main.push_back(&th);
    } else if (th.ppid == pid && (!named || named_pids.count(th.pid) != 0)) {
      r.workers[th.pid].push_back(&th);
    }
  }
  return r;
}

// The host's utilization over the window (host_* columns).
void host_columns(const HostTicks& ticks, Ns lo, Ns hi, CpuRow& row) {
  HostTicks::Sums s;
  ticks.add(lo, hi, s);
  if (s.w <= 0) return;
  row.host_util_pct = s.util / s.w;
  row.host_busy_cores = s.busy / s.w;
  row.host_user_pct = ratio(s.user, s.w_user);
  row.host_system_pct = ratio(s.system, s.w_system);
  row.host_iowait_pct = ratio(s.iowait, s.w_iowait);
}

// The rank process's and its workers' CPU time over the window.
void process_columns(const ThreadTimes& tt, const RankThreads& rt, Ns lo, Ns hi, CpuRow& row) {
  const double win = static_cast<double>(hi - lo);
  auto sum = [&](const std::vector<const ThreadTimes::Thread*>& v) {
    double x = 0;
    for (const ThreadTimes::Thread* th : v) x += tt.in(*th, lo, hi);
    return x;
  };
  if (!rt.process.empty()) {
    const double p = sum(rt.process);
    row.process_cpu_time_ns = std::llround(p);
    row.process_cores = p / win;
    if (!rt.main.empty()) row.main_thread_busy_share = sum(rt.main) / win;
  }
  row.workers = static_cast<int64_t>(rt.workers.size());
  if (rt.workers.empty()) return;
  double all = 0, busiest = 0;
  for (const auto& [pid, threads] : rt.workers) {
    const double w = sum(threads);
    all += w;
    busiest = std::max(busiest, w / win);
  }
  row.worker_cpu_time_ns = std::llround(all);
  row.worker_cores = all / win;
  row.worker_busy_share = row.worker_cores / static_cast<double>(rt.workers.size());
  row.busiest_worker_share = busiest;
}

// The host while the GPU waits for it in the window: the pieces of `wait` inside it.
void host_wait_columns(const HostTicks& ticks, const Intervals& wait, Ns lo, Ns hi, CpuRow& row) {
  HostTicks::Sums s;
  auto it = std::lower_bound(wait.begin(), wait.end(), lo,
                             [](const Interval& i, Ns t) { return i.end <= t; });
  for (; it != wait.end() && it->start < hi; ++it) {
    const Ns a = std::max(it->start, lo), b = std::min(it->end, hi);
    row.host_wait_ns += b - a;
    ticks.add(a, b, s);
  }
  if (s.w <= 0) return;
  row.host_wait_util_pct = s.util / s.w;
  row.host_wait_idle_cores = s.idle / s.w;
}

}  // namespace

void cpu_partial(const RankContext& c, const AnalysisOptions& o, const RankHardware* hw,
                 RankAnalysis& out) {
  if (hw == nullptr || hw->cpu == nullptr || c.windows.empty()) return;
  const RecordedCpu& rec = *hw->cpu;
  const HostTicks ticks(rec.cpus);
  const ThreadTimes tt(rec.threads);
  const RankThreads rt = rank_threads(tt, hw->cpu_pid);
  const Intervals wait = host_wait_intervals(c, o);
  for (const RankContext::Window& w : c.windows) {
    CpuRow row;
    row.rank = c.rank;
    row.iteration = w.iteration;
    row.host = rec.host;
    row.pid = hw->cpu_pid;
    row.window_ns = w.end - w.start;
    row.cpus = ticks.cpus();
    if (w.end <= w.start) continue;
    host_columns(ticks, w.start, w.end, row);
    process_columns(tt, rt, w.start, w.end, row);
    host_wait_columns(ticks, wait, w.start, w.end, row);
    out.cpu.push_back(std::move(row));
  }
}

}  // namespace chopper
