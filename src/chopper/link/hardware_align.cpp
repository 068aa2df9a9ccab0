// Hardware data put beside the traces: what the alignment needs of each rank (busy time,
// rank_activity), reading a series over an interval, the diagnostics of the files not used, and
// align_hardware, which runs the telemetry alignment (telemetry_align.cpp) and the counter join
// (counter_join.cpp).
#include "chopper/link/hardware_align.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace chopper {

BusyTime::BusyTime(const GpuActivities& g, Which which) {
  std::vector<std::pair<Ns, Ns>> v;
  v.reserve(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] == GpuKind::kSync || g.dur_ns[i] <= 0) continue;
    const bool compute = g.cls.size() == g.size() && g.cls[i] == GpuClass::kCompute;
    if ((which == kCompute && !compute) || (which == kOther && compute)) continue;
    v.push_back({g.start_ns[i], g.start_ns[i] + g.dur_ns[i]});
  }
  std::sort(v.begin(), v.end());
  for (const auto& [s, e] : v) {
    if (!start_.empty() && s <= end_.back()) {
      end_.back() = std::max(end_.back(), e);
    } else {
      start_.push_back(s);
      end_.push_back(e);
    }
  }
  sum();
}

BusyTime::BusyTime(std::vector<Ns> start, std::vector<Ns> end)
    : start_(std::move(start)), end_(std::move(end)) {
  if (start_.size() != end_.size()) start_.clear(), end_.clear();
  sum();
}

void BusyTime::sum() {
  cum_.assign(start_.size() + 1, 0);
  for (size_t i = 0; i < start_.size(); ++i) cum_[i + 1] = cum_[i] + (end_[i] - start_[i]);
}

Ns BusyTime::upto(Ns t) const {
  const size_t k =
      static_cast<size_t>(std::upper_bound(start_.begin(), start_.end(), t) - start_.begin());
  if (k == 0) return 0;
  return cum_[k - 1] + (std::min(t, end_[k - 1]) - start_[k - 1]);
}

int32_t main_device(const GpuActivities& g) {
  std::map<int32_t, size_t> dev;
  for (int32_t d : g.device) ++dev[d];
  size_t most = 0;
  int32_t device = -1;
  for (const auto& [d, n] : dev)
    if (n > most) most = n, device = d;
  return device;
}

RankActivity rank_activity(const RankTrace& t, int64_t rank) {
  RankActivity r;
  r.ok = true;
  r.rank = rank;
  r.device = main_device(t.gpu);
  r.devices = static_cast<int64_t>(t.meta.devices.size());
  r.busy = BusyTime(t.gpu);
  r.compute = BusyTime(t.gpu, BusyTime::kCompute);
  r.other = BusyTime(t.gpu, BusyTime::kOther);
  for (const ThreadKey& th : t.threads)
    if (std::find(r.pids.begin(), r.pids.end(), th.pid) == r.pids.end()) r.pids.push_back(th.pid);
  const GpuActivities& g = t.gpu;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] != GpuKind::kSync && g.dur_ns[i] > 0) {
      r.gpu_first_ns = std::min(r.gpu_first_ns, g.start_ns[i]);
      r.gpu_last_ns = std::max(r.gpu_last_ns, g.start_ns[i] + g.dur_ns[i]);
    }
  return r;
}

int64_t node_from_file_name(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  std::string_view f = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view key : {"node", "host", "nid"}) {
    size_t p = 0;
    while ((p = f.find(key, p)) != std::string_view::npos) {
      size_t q = p + key.size();
      while (q < f.size() && (f[q] == '-' || f[q] == '_')) ++q;
      int64_t n = 0;
      size_t digits = 0;
      while (q < f.size() && f[q] >= '0' && f[q] <= '9' && digits < 9) {
        n = n * 10 + (f[q] - '0');
        ++q, ++digits;
      }
      if (digits > 0) return n;
      p += key.size();
    }
  }
  return -1;
}

double mean_linear(const Series& s, Ns lo, Ns hi) {
  if (s.t_ns.empty()) return std::nan("");
  const auto& t = s.t_ns;
  const auto& v = s.value;
  auto at = [&](Ns x) {
    if (x <= t.front()) return v.front();
    if (x >= t.back()) return v.back();
    const size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
    const double f = static_cast<double>(x - t[k - 1]) / static_cast<double>(t[k] - t[k - 1]);
    return v[k - 1] + (v[k] - v[k - 1]) * f;
  };
  if (hi <= lo) return at(lo);
  // Trapezoids between lo, the samples inside (lo, hi) and hi.
  double area = 0;
  Ns x0 = lo;
  double y0 = at(lo);
  size_t k = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), lo) - t.begin());
  for (; k < t.size() && t[k] < hi; ++k) {
    area += 0.5 * (y0 + v[k]) * static_cast<double>(t[k] - x0);
    x0 = t[k];
    y0 = v[k];
  }
  area += 0.5 * (y0 + at(hi)) * static_cast<double>(hi - x0);
  return area / static_cast<double>(hi - lo);
}

double hold_at(const Series& s, Ns t) {
  auto it = std::lower_bound(s.t_ns.begin(), s.t_ns.end(), t);
  if (it == s.t_ns.end()) return std::nan("");
  return s.value[static_cast<size_t>(it - s.t_ns.begin())];
}

double integral_hold(const Series& s, Ns lo, Ns hi) {
  if (s.t_ns.empty() || hi <= lo) return 0;
  const auto& t = s.t_ns;
  double sum = 0;
  Ns x = lo;
  size_t k = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), lo) - t.begin());
  // Sample k holds over (t[k-1], t[k]]; past the last sample, the last value holds.
  while (x < hi) {
    const double val = k < t.size() ? s.value[k] : s.value.back();
    const Ns end = k < t.size() ? std::min(hi, t[k]) : hi;
    if (end > x) sum += val * static_cast<double>(end - x) * 1e-9;
    x = std::max(x, end);
    if (k >= t.size()) break;
    ++k;
  }
  return sum;
}

void note_unreadable(HardwareRun& hw, const std::vector<std::string>& errors,
                     const std::vector<std::string>& files) {
  for (size_t i = 0; i < errors.size(); ++i)
    hw.unreadable.emplace_back(i < files.size() ? files[i] : std::string(), errors[i]);
}

std::vector<DiagnosticRow> hardware_use_diagnostics(const HardwareRun& hw) {
  std::vector<DiagnosticRow> rows;
  for (const auto& [file, why] : hw.unreadable) {
    DiagnosticRow d;
    d.file = file;
    d.kind = file_diag_name(FileDiag::kHardwareFileUnreadable);
    d.severity = file_diag_severity(FileDiag::kHardwareFileUnreadable);
    d.stage = "read";
    d.count = 1;
    d.example = why;
    rows.push_back(std::move(d));
  }
  for (const TelemetryAlignment& a : hw.telemetry) {
    if (a.aligned()) continue;
    DiagnosticRow d;
    d.file = a.file;
    const bool conflict = a.method.find("also describes node") != std::string::npos;
    const FileDiag kind = conflict ? FileDiag::kTelemetryConflict : FileDiag::kTelemetryNotAligned;
    d.kind = file_diag_name(kind);
    d.severity = file_diag_severity(kind);
    d.stage = "link";
    d.count = 1;
    d.example = fmt::format("{}: {}", a.file, a.method.substr(6));  // after "none: "
    rows.push_back(std::move(d));
  }
  for (const CounterJoin& j : hw.counters) {
    if (j.method.rfind("none", 0) != 0) continue;
    DiagnosticRow d;
    d.rank = j.rank;
    d.file = j.file;
    d.kind = file_diag_name(FileDiag::kCounterFileRefused);
    d.severity = file_diag_severity(FileDiag::kCounterFileRefused);
    d.stage = "link";
    d.count = j.dispatches;
    d.example = fmt::format("{}: {}", j.file, j.method.substr(6));
    rows.push_back(std::move(d));
  }
  for (DiagnosticRow& d : recorded_cpu_diagnostics(hw)) rows.push_back(std::move(d));
  return rows;
}

HardwareRun align_hardware(const Run& run, std::vector<TelemetryData> telemetry,
                           std::vector<CounterTable> counters, const HardwareAlignOptions& o) {
  std::vector<RankActivity> acts(run.ranks.size());
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const RankSlot& s = run.ranks[i];
    if (s.ok)
      acts[i] = rank_activity(s.trace, s.rank);
    else
      acts[i].rank = s.rank;
  }
  HardwareRun hw = align_telemetry(acts, std::move(telemetry), o);
  hw.counter_data = std::move(counters);
  const std::vector<size_t> slot = assign_counter_files(acts, hw.counter_data, hw.counters);
  for (size_t f = 0; f < hw.counter_data.size(); ++f)
    if (slot[f] != SIZE_MAX)
      join_counters(run.ranks[slot[f]].trace, hw.counter_data[f], hw.counters[f],
                    hw.ranks[slot[f]]);
  return hw;
}

}  // namespace chopper
