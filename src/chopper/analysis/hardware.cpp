// The hardware's side: per-kernel clock, power, energy, temperature and counters from aligned
// telemetry and counter files; power and energy per iteration window and phase; and the units of
// the waterfall, Chopper's overhead breakdown made exact and additive per kernel (finalized over
// the run in analysis/waterfall.cpp):
//   observed = theoretical + instruction + utilization + overlap + frequency + residual
// Formulas, units and sources: docs/metrics.md ("Hardware").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "chopper/analysis/flops.hpp"
#include "chopper/analysis/parts.hpp"

namespace chopper {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool matrix_family(CostFamily f) {
  return f == CostFamily::kGemm || f == CostFamily::kAttentionFwd ||
         f == CostFamily::kAttentionBwd || f == CostFamily::kConv;
}
bool matrix_class(OpClass c) {
  return c == OpClass::kGemm || c == OpClass::kAttention;
}

// The counters the waterfall reads, as each vendor's profiler names them (docs/metrics.md,
// "Hardware counters"):
//   cycles the GPU was active, at the clock it ran: AMD GRBM_GUI_ACTIVE (summed over the XCDs, so
//     divided by their number); NVIDIA gpc__cycles_elapsed.max;
//   matrix-unit busy cycles: AMD SQ_VALU_MFMA_BUSY_CYCLES; NVIDIA
//   sm__pipe_tensor_cycles_active.sum; issued matrix FLOPs of the dtype the peak is taken for: AMD
//   512 x SQ_INSTS_VALU_MFMA_MOPS_<dt>;
//     NVIDIA sm__ops_path_tensor_src_<dt>_dst_*.sum (every accumulator type; the sparsity splits
//     of the same ops are not added again);
//   CUDA-core FLOPs (NVIDIA, Kineto's kineto__cuda_core_flops): smsp__sass_thread_inst_executed_
//     op_{h,f,d}{add,mul}_pred_on.sum + 2 x ..._{h,f,d}fma_pred_on.sum.
struct CounterMap {
  int active = -1;
  double active_div = 1;
  int matrix_busy = -1;
  std::vector<std::pair<int, double>> matrix_flops, vector_flops;  // (counter, FLOPs per count)

  static double sum(const CounterTable* ct, int32_t row,
                    const std::vector<std::pair<int, double>>& terms) {
    if (ct == nullptr || row < 0 || terms.empty()) return std::numeric_limits<double>::quiet_NaN();
    double s = 0;
    bool any = false;
    for (const auto& [c, k] : terms) {
      const double v = ct->value(static_cast<size_t>(row), static_cast<size_t>(c));
      if (!std::isnan(v)) s += v * k, any = true;
    }
    return any ? s : std::numeric_limits<double>::quiet_NaN();
  }
};

std::string_view nv_dtype(DType d) {
  switch (d) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kTf32:
    case DType::kFp32:
      return "tf32";
  }
  return "bf16";
}
const char* amd_mops(DType d) {
  switch (d) {
    case DType::kBf16:
      return "SQ_INSTS_VALU_MFMA_MOPS_BF16";
    case DType::kFp16:
      return "SQ_INSTS_VALU_MFMA_MOPS_F16";
    case DType::kFp8:
      return "SQ_INSTS_VALU_MFMA_MOPS_F8";
    case DType::kFp32:
    case DType::kTf32:
      return "SQ_INSTS_VALU_MFMA_MOPS_F32";
  }
  return "SQ_INSTS_VALU_MFMA_MOPS_BF16";
}

CounterMap map_counters(const CounterTable* ct, DType dt, double xcds) {
  CounterMap m;
  if (ct == nullptr) return m;
  if ((m.active = ct->counter_index("GRBM_GUI_ACTIVE")) >= 0) {
    m.active_div = xcds;
  } else {
    m.active = ct->counter_index("gpc__cycles_elapsed.max");
  }
  m.matrix_busy = ct->counter_index("SQ_VALU_MFMA_BUSY_CYCLES");
  if (m.matrix_busy < 0) m.matrix_busy = ct->counter_index("sm__pipe_tensor_cycles_active.sum");
  if (const int c = ct->counter_index(amd_mops(dt)); c >= 0) m.matrix_flops.push_back({c, 512.0});
  const std::string nv = "sm__ops_path_tensor_src_" + std::string(nv_dtype(dt)) + "_dst_";
  for (size_t c = 0; c < ct->counter_names.size(); ++c) {
    const std::string& n = ct->counter_names[c];
    if (n.rfind(nv, 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".sum") == 0 &&
        n.find("sparsity") == std::string::npos)
      m.matrix_flops.push_back({static_cast<int>(c), 1.0});
    constexpr std::string_view kSass = "smsp__sass_thread_inst_executed_op_";
    if (n.rfind(kSass, 0) == 0 && n.size() == kSass.size() + 4 + 12 &&
        n.compare(kSass.size() + 4, 12, "_pred_on.sum") == 0) {
      const std::string_view op = std::string_view(n).substr(kSass.size(), 4);
      if (op == "hfma" || op == "ffma" || op == "dfma")
        m.vector_flops.push_back({static_cast<int>(c), 2.0});
      else if (op == "hadd" || op == "fadd" || op == "dadd" || op == "hmul" || op == "fmul" ||
               op == "dmul")
        m.vector_flops.push_back({static_cast<int>(c), 1.0});
    }
  }
  return m;
}

const Series* power_series(const RankHardware& hw) {
  if (hw.has(Metric::kPowerW)) return &hw.at(Metric::kPowerW);
  if (hw.has(Metric::kPowerAvgW)) return &hw.at(Metric::kPowerAvgW);
  return nullptr;
}
const Series* temp_series(const RankHardware& hw) {
  if (hw.has(Metric::kTempHotspotC)) return &hw.at(Metric::kTempHotspotC);
  if (hw.has(Metric::kTempGpuC)) return &hw.at(Metric::kTempGpuC);
  return nullptr;
}

// Largest sample in [lo, hi] (the sample at or after hi when none is inside), NaN if none.
double max_in(const Series* s, Ns lo, Ns hi) {
  if (s == nullptr || s->t_ns.empty()) return kNaN;
  auto a = std::lower_bound(s->t_ns.begin(), s->t_ns.end(), lo);
  auto b = std::upper_bound(s->t_ns.begin(), s->t_ns.end(), hi);
  if (a == b) return hold_at(*s, hi);
  double m = -std::numeric_limits<double>::infinity();
  for (auto it = a; it != b; ++it)
    m = std::max(m, s->value[static_cast<size_t>(it - s->t_ns.begin())]);
  return m;
}

// Energy over [lo, hi) from power samples, guided by the trace. Each sample is the mean power over
// the interval that ends at it, so each interval's energy is known exactly. Inside an interval
// the GPU draws its idle power all the time, plus a dynamic power while compute runs and another
// while communication or copies run (additive); the two dynamic powers are fitted per GPU by least
// squares over every sample interval (E − idle·T = a·|compute| + b·|other|). Whole intervals come
// out exact; the partial intervals at a window's ends get the share of their energy that the
// compute and other GPU time inside the window implies. `idle_w` is the device's idle draw
// (capped by each sample).
class EnergyModel {
 public:
  EnergyModel(const Series& p, const Intervals& compute, const Intervals& other, double idle_w)
      : p_(p), compute_(compute), other_(other), idle_w_(idle_w) {
    period_ = p.size() >= 2 ? (p.t_ns.back() - p.t_ns.front()) / static_cast<Ns>(p.size() - 1)
                            : 1000000000;
    double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
    for (size_t k = 0; k < p.size(); ++k) {
      const Ns a = k > 0 ? p.t_ns[k - 1] : p.t_ns[k] - period_, b = p.t_ns[k];
      const double x1 = static_cast<double>(measure_in(compute_, a, b)) * 1e-9;
      const double x2 = static_cast<double>(measure_in(other_, a, b)) * 1e-9;
      if (x1 == 0 && x2 == 0) continue;
      const double y =
          (p.value[k] - std::min(idle_w_, p.value[k])) * static_cast<double>(b - a) * 1e-9;
      s11 += x1 * x1, s12 += x1 * x2, s22 += x2 * x2, s1y += x1 * y, s2y += x2 * y;
    }
    const double det = s11 * s22 - s12 * s12;
    if (det > 1e-12 * (s11 * s22 + 1e-30)) {
      w_compute_ = (s1y * s22 - s2y * s12) / det;
      w_other_ = (s2y * s11 - s1y * s12) / det;
    }
    if (!(w_compute_ > 0) || !(w_other_ >= 0)) w_compute_ = w_other_ = 1;  // busy time alike
  }
  double joules(Ns lo, Ns hi) const {
    if (hi <= lo || p_.t_ns.empty()) return 0;
    const auto& t = p_.t_ns;
    double sum = 0;
    size_t k = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), lo) - t.begin());
    Ns x = lo;
    while (x < hi) {
      // Interval k: (t[k-1], t[k]]; past the last sample its value holds.
      const bool past = k >= t.size();
      const double v = past ? p_.value.back() : p_.value[k];
      const Ns a = past ? x : (k > 0 ? t[k - 1] : t[k] - period_);
      const Ns b = past ? hi : t[k];
      const Ns plo = std::max(x, a), phi = std::min(hi, b);
      if (phi > plo) {
        const double idle = std::min(idle_w_, v);
        const Ns len = b - a;
        const double all = weight(a, b);
        const double dyn = (v - idle) * static_cast<double>(len) * 1e-9;
        sum += idle * static_cast<double>(phi - plo) * 1e-9;
        if (all > 0)
          sum += dyn * weight(plo, phi) / all;
        else
          sum += dyn * static_cast<double>(phi - plo) / static_cast<double>(len);
      }
      x = std::max(x, phi);
      if (past) break;
      ++k;
    }
    return sum;
  }

 private:
  double weight(Ns a, Ns b) const {
    return w_compute_ * static_cast<double>(measure_in(compute_, a, b)) +
           w_other_ * static_cast<double>(measure_in(other_, a, b));
  }
  const Series& p_;
  const Intervals& compute_;
  const Intervals& other_;
  double idle_w_;
  Ns period_;
  double w_compute_ = 1, w_other_ = 1;
};

double counter(const CounterTable* ct, int32_t row, int idx) {
  if (ct == nullptr || row < 0 || idx < 0) return kNaN;
  return ct->value(static_cast<size_t>(row), static_cast<size_t>(idx));
}

// Growth of a cumulative counter (energy, link bytes) over [lo, hi]: its linear interpolation at
// lo, the samples inside and at hi, summing the rises. A fall is a reset or a wrap: that step adds
// nothing (what the counter did across it is unknown). NaN without samples.
double counter_delta(const Series* s, Ns lo, Ns hi) {
  if (s == nullptr || s->t_ns.empty() || hi <= lo) return kNaN;
  double prev = mean_linear(*s, lo, lo), sum = 0;
  auto a = std::upper_bound(s->t_ns.begin(), s->t_ns.end(), lo);
  for (auto it = a; it != s->t_ns.end() && *it < hi; ++it) {
    const double v = s->value[static_cast<size_t>(it - s->t_ns.begin())];
    if (v > prev) sum += v - prev;
    prev = v;
  }
  const double last = mean_linear(*s, hi, hi);
  if (last > prev) sum += last - prev;
  return sum;
}

// The samples of a series inside [lo, hi], as [first, last) indices.
std::pair<size_t, size_t> samples_in(const Series& s, Ns lo, Ns hi) {
  const auto a = std::lower_bound(s.t_ns.begin(), s.t_ns.end(), lo);
  const auto b = std::upper_bound(s.t_ns.begin(), s.t_ns.end(), hi);
  return {static_cast<size_t>(a - s.t_ns.begin()), static_cast<size_t>(b - s.t_ns.begin())};
}

const Series* series_or_null(const RankHardware& hw, Metric m) {
  return hw.has(m) ? &hw.at(m) : nullptr;
}

// An iteration's span on the trace clock (iteration_spans).
using IterSpan = RankContext::Window;

// Each iteration's span: its ProfilerStep on the host when the trace has one (what a user calls
// the iteration, and what energy per iteration is measured over), else its GPU window; by start.
std::vector<IterSpan> iteration_spans(const RankContext& c) {
  std::vector<IterSpan> spans = c.windows;
  for (auto& w : spans)
    for (const RankTrace::Step& st : c.t.steps)
      if (st.number == w.iteration && st.end_ns > st.start_ns) {
        w.start = st.start_ns;
        w.end = st.end_ns;
      }
  std::sort(spans.begin(), spans.end(),
            [](const IterSpan& x, const IterSpan& y) { return x.start < y.start; });
  return spans;
}

// Time and energy per phase within each iteration span (parallel to the spans).
class SpanPhases {
 public:
  SpanPhases(const std::vector<IterSpan>& spans, const EnergyModel& em)
      : spans_(spans), em_(em), by_span_(spans.size()) {
    for (const auto& w : spans) longest_ = std::max(longest_, w.end - w.start);
  }

  // Gives [a, b) of phase `name` to every span it meets: spans may overlap (a step's GPU work
  // runs past its host end), and every span gets its share.
  void add(Ns a, Ns b, std::string_view name) {
    auto first_after = std::lower_bound(spans_.begin(), spans_.end(), b,
                                        [](const IterSpan& w, Ns x) { return w.start < x; });
    for (size_t k = static_cast<size_t>(first_after - spans_.begin()); k-- > 0;) {
      if (spans_[k].start + longest_ <= a) break;
      if (spans_[k].end <= a) continue;
      const Ns lo = std::max(a, spans_[k].start), hi = std::min(b, spans_[k].end);
      if (hi <= lo) continue;
      auto& slot = by_span_[k][std::string(name)];
      slot.first += hi - lo;
      slot.second += em_.joules(lo, hi);
    }
  }

  // Phase name -> (time, energy) of span k.
  const std::map<std::string, std::pair<Ns, double>>& of(size_t k) const { return by_span_[k]; }

 private:
  const std::vector<IterSpan>& spans_;
  const EnergyModel& em_;
  Ns longest_ = 0;
  std::vector<std::map<std::string, std::pair<Ns, double>>> by_span_;
};

// Each moment of GPU time to the activity that started first and covers it (as the compute
// components do): its phase within each iteration span (`phases`), and its hierarchy nodes
// (out.hw_levels, hierarchy_hw).
void phase_and_level_energy(const RankContext& c, const RankHardware& hw, const EnergyModel& em,
                            SpanPhases& phases, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  const bool labelled = g.iteration.size() == g.size();
  const Series* clock = hw.has(Metric::kSmClockMhz) ? &hw.at(Metric::kSmClockMhz) : nullptr;
  const Series* temp = temp_series(hw);
  std::map<std::pair<int, LabelKey>, HwLevelRow> levels;
  static constexpr const char* kLevels[] = {"gpu", "iteration", "phase", "layer", "operation"};
  Ns cover = std::numeric_limits<Ns>::min();
  for (int32_t i : c.order) {
    const Ns s = std::max(g.start_ns[i], cover), e = c.end(i);
    if (e > s) {
      const Phase phase = labelled ? g.phase[i] : Phase::kNone;
      phases.add(s, e, phase == Phase::kNone ? std::string_view("other") : phase_name(phase));
      const LabelKey full =
          labelled ? c.label(c.raw_key(static_cast<size_t>(i), false)) : LabelKey{};
      const double joules = em.joules(s, e);
      const double mhz = clock != nullptr ? mean_linear(*clock, s, e) : kNaN;
      const double hot = max_in(temp, s, e);
      for (int lv = 0; lv < 5; ++lv) {
        LabelKey k;
        if (lv >= 1) k.iteration = full.iteration;
        if (lv >= 2) k.phase = full.phase;
        if (lv >= 3) k.layer = full.layer;
        if (lv >= 4) k.operation = full.operation;
        HwLevelRow& row = levels[{lv, k}];
        row.rank = c.rank;
        row.level = kLevels[lv];
        row.key = k;
        row.time_ns += e - s;
        row.energy_j += joules;
        if (!std::isnan(mhz))
          row.clock_mhz_ns += mhz * static_cast<double>(e - s), row.clock_ns += e - s;
        if (!std::isnan(hot) && !(row.max_temp_c >= hot)) row.max_temp_c = hot;
      }
    }
    cover = std::max(cover, e);
  }
  for (auto& [k, row] : levels) out.hw_levels.push_back(row);
}

// Throttle time by reason: each sample's reasons hold over the interval that ends at it.
void throttle_time(const Series& thr, const IterSpan& w, Ns period, PowerRow& all) {
  auto a = std::lower_bound(thr.t_ns.begin(), thr.t_ns.end(), w.start);
  for (auto it = a; it != thr.t_ns.end(); ++it) {
    const size_t j = static_cast<size_t>(it - thr.t_ns.begin());
    const Ns hi = std::min(*it, w.end);
    const Ns lo = std::max(j > 0 ? thr.t_ns[j - 1] : *it - period, w.start);
    if (hi > lo) {
      const double v = thr.value[j];
      const uint64_t mask =
          v >= 0 && v < 18446744073709551616.0 ? static_cast<uint64_t>(v) : uint64_t{0};
      for (uint64_t bit = 1; bit != 0 && bit <= mask; bit <<= 1)
        if ((mask & bit) != 0) {
          const std::string_view n =
              bit <= 0xffffffffu ? throttle_bit_name(static_cast<uint32_t>(bit)) : "";
          all.throttle_ns[n.empty() ? fmt::format("bit_0x{:x}", bit) : std::string(n)] += hi - lo;
        }
    }
    if (*it >= w.end) break;
  }
}

// Busy and idle power: samples whose interval the GPU was busy for >= 90% / <= 10% of.
void busy_idle_power(const RankContext& c, const Series& p, const IterSpan& w, Ns period,
                     PowerRow& all) {
  double bs = 0, is = 0;
  int bn = 0, in = 0;
  auto a = std::lower_bound(p.t_ns.begin(), p.t_ns.end(), w.start + period);
  for (auto it = a; it != p.t_ns.end() && *it <= w.end; ++it) {
    const double share =
        static_cast<double>(measure_in(c.all, *it - period, *it)) / static_cast<double>(period);
    const double v = p.value[static_cast<size_t>(it - p.t_ns.begin())];
    if (share >= 0.9) bs += v, ++bn;
    if (share <= 0.1) is += v, ++in;
  }
  if (bn > 0) all.busy_power_w = bs / bn;
  if (in > 0) all.idle_power_w = is / in;
}

// Burstiness (CharLLM-PPT): the samples' coefficient of variation and steepest change.
void power_burstiness(const Series& p, const IterSpan& w, PowerRow& all) {
  const auto [a, b] = samples_in(p, w.start, w.end);
  if (b <= a + 1) return;
  double sum = 0, sq = 0, steep = 0;
  for (size_t j = a; j < b; ++j) {
    sum += p.value[j];
    sq += p.value[j] * p.value[j];
    if (j > a && p.t_ns[j] > p.t_ns[j - 1])
      steep = std::max(steep, std::abs(p.value[j] - p.value[j - 1]) /
                                  (static_cast<double>(p.t_ns[j] - p.t_ns[j - 1]) * 1e-9));
  }
  const double n = static_cast<double>(b - a), mean = sum / n;
  if (mean > 0) all.power_cv = std::sqrt(std::max(0.0, sq / n - mean * mean)) / mean;
  all.max_dp_dt_w_per_s = steep;
}

// Clock residency: the share of clock samples at 99% of the maximum clock or above.
void clock_residency(const Series& clock, double fmax, const IterSpan& w, PowerRow& all) {
  const auto [a, b] = samples_in(clock, w.start, w.end);
  if (b <= a) return;
  size_t at_max = 0;
  for (size_t j = a; j < b; ++j) at_max += clock.value[j] >= 0.99 * fmax ? 1 : 0;
  all.max_clock_share = static_cast<double>(at_max) / static_cast<double>(b - a);
}

// The whole iteration span's power row (phase "" in power_by_phase).
PowerRow span_power_row(const RankContext& c, const RankHardware& hw, const EnergyModel& em,
                        const IterSpan& w, double fmax) {
  const Series* p = power_series(hw);
  const Series* clock = hw.has(Metric::kSmClockMhz) ? &hw.at(Metric::kSmClockMhz) : nullptr;
  const Series* thr = hw.has(Metric::kThrottleReasons) ? &hw.at(Metric::kThrottleReasons) : nullptr;
  const Ns period =
      p->size() < 2 ? Ns{0} : (p->t_ns.back() - p->t_ns.front()) / static_cast<Ns>(p->size() - 1);
  PowerRow all;
  all.rank = c.rank;
  all.iteration = w.iteration;
  all.time_ns = w.end - w.start;
  all.energy_j = em.joules(w.start, w.end);
  all.peak_power_w = max_in(p, w.start, w.end);
  if (clock != nullptr) all.mean_clock_mhz = mean_linear(*clock, w.start, w.end);
  all.max_temp_c =
      max_in(hw.has(Metric::kTempGpuC) ? &hw.at(Metric::kTempGpuC) : nullptr, w.start, w.end);
  all.max_hotspot_c = max_in(
      hw.has(Metric::kTempHotspotC) ? &hw.at(Metric::kTempHotspotC) : nullptr, w.start, w.end);
  all.max_mem_temp_c =
      max_in(hw.has(Metric::kTempMemC) ? &hw.at(Metric::kTempMemC) : nullptr, w.start, w.end);
  if (thr != nullptr) throttle_time(*thr, w, period, all);
  if (period > 0) busy_idle_power(c, *p, w, period, all);
  power_burstiness(*p, w, all);
  if (clock != nullptr && fmax > 0) clock_residency(*clock, fmax, w, all);
  all.energy_counter_j = counter_delta(series_or_null(hw, Metric::kEnergyJ), w.start, w.end);
  all.link_tx_bytes = counter_delta(series_or_null(hw, Metric::kLinkTxBytes), w.start, w.end);
  all.link_rx_bytes = counter_delta(series_or_null(hw, Metric::kLinkRxBytes), w.start, w.end);
  all.pcie_tx_bytes = counter_delta(series_or_null(hw, Metric::kPcieTxBytes), w.start, w.end);
  all.pcie_rx_bytes = counter_delta(series_or_null(hw, Metric::kPcieRxBytes), w.start, w.end);
  return all;
}

// Power and energy of one rank per iteration window, and per phase within it (each moment of GPU
// time goes to the phase of the activity that started first and covers it, as the compute
// components do; the rest of the window is "idle").
void power_rows(const RankContext& c, const RankHardware& hw, double idle_w, double fmax,
                RankAnalysis& out) {
  const Series* p = power_series(hw);
  if (p == nullptr || c.windows.empty()) return;
  const EnergyModel em(*p, c.compute, c.other, idle_w);
  const std::vector<IterSpan> spans = iteration_spans(c);
  SpanPhases phases(spans, em);
  phase_and_level_energy(c, hw, em, phases, out);
  for (size_t k = 0; k < c.windows.size(); ++k) {
    const IterSpan& w = spans[k];
    PowerRow all = span_power_row(c, hw, em, w, fmax);
    Ns t_acc = 0;
    double e_acc = 0;
    for (const auto& [name, te] : phases.of(k)) {
      PowerRow r;
      r.rank = c.rank;
      r.iteration = w.iteration;
      r.phase = name;
      r.time_ns = te.first;
      r.energy_j = te.second;
      t_acc += te.first;
      e_acc += te.second;
      out.power.push_back(std::move(r));
    }
    PowerRow idle;
    idle.rank = c.rank;
    idle.iteration = w.iteration;
    idle.phase = "idle";
    idle.time_ns = all.time_ns - t_acc;
    idle.energy_j = all.energy_j - e_acc;
    out.power.push_back(std::move(idle));
    out.power.push_back(std::move(all));
  }
}

}  // namespace

namespace {

// The names a waterfall unit carries, made once per distinct work: per (op name, shapes) its
// cost and shape class, per (kernel, label, launch, work) its signature. Formatting and interning
// them per kernel cost more than the rest of the units; the same inputs give the same text, so
// interning it again would add nothing.
class UnitWork {
 public:
  struct Work {
    OpCost cost;
    std::string_view shape_class;  // interned in the names; empty until made
  };
  UnitWork(const RankContext& c, StringTable& names) : c_(c), names_(names) {}

  // The work of host op `op` (null: no launching op).
  Work* of(int32_t op) {
    const HostOps& h = c_.t.host;
    if (op < 0 || static_cast<size_t>(op) >= h.size()) return nullptr;
    const InputShapes& sh = c_.t.shapes_of(static_cast<size_t>(op));
    const std::array<StrId, 4> k{h.name[op], sh.input_dims, sh.input_types, sh.concrete_inputs};
    auto [it, fresh] = memo_.try_emplace(k);
    if (fresh)
      it->second.cost = op_cost(c_.t.strings.str(k[0]), c_.t.strings.str(k[1]),
                                c_.t.strings.str(k[2]), c_.t.strings.str(k[3]));
    return &it->second;
  }

  // "family op dims types", the shapes on one line.
  std::string_view shape_class(Work& w, int32_t op, const OpCost& oc) {
    if (w.shape_class.empty())
      w.shape_class = names_.str(names_.intern(shape_class_name(c_.t, op, oc)));
    return w.shape_class;
  }

  // The same work: kernel, operation, phase, inside a layer or not, FLOPs and bytes, the
  // launching op's shapes, the launch grid and block.
  std::string_view signature(int32_t i, const LabelKey& key, const Work* w, int32_t op,
                             const OpCost& oc) {
    const GpuActivities& g = c_.t.gpu;
    const Key k{g.name[i], key.operation, key.phase, key.layer >= 0, w, g.grid[i], g.block[i]};
    auto [it, fresh] = signatures_.try_emplace(k);
    if (fresh) {
      const HostOps& h = c_.t.host;
      const std::string_view dims =
          op >= 0 && static_cast<size_t>(op) < h.size()
              ? c_.t.strings.str(c_.t.shapes_of(static_cast<size_t>(op)).input_dims)
              : std::string_view();
      const std::string sig =
          fmt::format("{}\x1f{}\x1f{}{}\x1f{:.0f}\x1f{:.0f}\x1f{}\x1f{},{},{}\x1f{},{},{}",
                      c_.t.strings.str(g.name[i]), key.operation, phase_name(key.phase),
                      key.layer >= 0 ? "" : " (no layer)", oc.flops, oc.bytes, dims, g.grid[i][0],
                      g.grid[i][1], g.grid[i][2], g.block[i][0], g.block[i][1], g.block[i][2]);
      it->second = names_.str(names_.intern(sig));
    }
    return it->second;
  }

 private:
  struct Key {
    StrId name;
    std::string_view operation;
    Phase phase;
    bool in_layer;
    const Work* work;
    std::array<int32_t, 3> grid, block;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = std::hash<std::string_view>()(k.operation);
      auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001B3ULL; };
      mix(k.name);
      mix(static_cast<uint64_t>(k.phase));
      mix(k.in_layer ? 1 : 0);
      mix(reinterpret_cast<uintptr_t>(k.work));
      for (int32_t v : k.grid) mix(static_cast<uint32_t>(v));
      for (int32_t v : k.block) mix(static_cast<uint32_t>(v));
      return h;
    }
  };
  const RankContext& c_;
  StringTable& names_;
  std::map<std::array<StrId, 4>, Work> memo_;
  std::unordered_map<Key, std::string_view, KeyHash> signatures_;
};

}  // namespace

namespace {

// What the per-kernel hardware passes read of one rank: its device's datasheet, its aligned
// telemetry and counters, and the energy model.
struct KernelHwInputs {
  const RankHardware* hw;
  const DeviceSpec* dev;
  const Series* clock;
  const Series* power;
  const Series* temp;
  const CounterTable* ct;
  bool rows_ok;  // the counters' rows are parallel to the GPU activities
  CounterMap cm;
  // Cycle counts say the clock the traced kernels ran at only when they were counted in the
  // traced run; a separate counter pass (a replay) ran at its own clocks, so the telemetry's
  // clock is used.
  bool cycles_of_run;
  double fmax, peak_m, peak_v, bw;
  double idle_w;  // idle draw: the device's, else the lowest power sample
  std::optional<EnergyModel> energy;

  KernelHwInputs(const RankContext& c, const AnalysisOptions& o, const RankHardware* h,
                 const RankAnalysis& out)
      : hw(h),
        dev(!o.device.empty() ? find_device(o.device) : device_from_name(out.device_name)),
        clock(h != nullptr && h->has(Metric::kSmClockMhz) ? &h->at(Metric::kSmClockMhz) : nullptr),
        power(h != nullptr ? power_series(*h) : nullptr),
        temp(h != nullptr ? temp_series(*h) : nullptr),
        ct(h != nullptr ? h->counters : nullptr),
        rows_ok(ct != nullptr && h->counter_row.size() == c.t.gpu.size()),
        cm(map_counters(ct, o.dtype, dev != nullptr ? xcd_count(*dev) : 1)),
        cycles_of_run(h != nullptr && h->counters_same_run),
        fmax(dev != nullptr ? dev->max_clock_mhz : kNaN),
        peak_m(dev != nullptr ? dev->matrix_tflops(o.dtype) * 1e12 : 0),
        peak_v(dev != nullptr ? dev->vector_tflops_fp32 * 1e12 : 0),
        bw(dev != nullptr ? dev->mem_bw_gbs * 1e9 : 0),
        idle_w(dev != nullptr ? dev->idle_w : 0) {
    if (dev == nullptr && power != nullptr)
      idle_w = *std::min_element(power->value.begin(), power->value.end());
    if (power != nullptr) energy.emplace(*power, c.compute, c.other, idle_w);
  }
  int32_t row_of(size_t i) const { return rows_ok ? hw->counter_row[i] : -1; }
};

// kernel_hw: every GPU activity, when there is hardware data for this rank.
void kernel_hw_rows(const RankContext& c, const KernelHwInputs& in, RankAnalysis& out) {
  if (in.clock == nullptr && in.power == nullptr && in.temp == nullptr && !in.rows_ok) return;
  const GpuActivities& g = c.t.gpu;
  const CounterMap& cm = in.cm;
  out.kernel_hw.reserve(c.order.size());
  for (int32_t i : c.order) {
    KernelHw k;
    k.row = i;
    const Ns s = g.start_ns[i], e = c.end(i);
    if (in.clock != nullptr) k.clock_mhz = mean_linear(*in.clock, s, e);
    if (in.energy) {
      k.energy_j = in.energy->joules(s, e);
      k.power_w = e > s ? k.energy_j / (static_cast<double>(e - s) * 1e-9) : hold_at(*in.power, s);
    }
    if (in.temp != nullptr) k.temp_c = mean_linear(*in.temp, s, e);
    const int32_t row = in.row_of(static_cast<size_t>(i));
    k.active_cycles = counter(in.ct, row, cm.active) / cm.active_div;
    k.matrix_busy_cycles = counter(in.ct, row, cm.matrix_busy);
    k.matrix_flops = CounterMap::sum(in.ct, row, cm.matrix_flops);
    k.vector_flops = CounterMap::sum(in.ct, row, cm.vector_flops);
    if (in.cycles_of_run && e > s)
      k.counter_clock_mhz = k.active_cycles / static_cast<double>(e - s) * 1000.0;
    out.kernel_hw.push_back(k);
  }
}

// A waterfall unit's theoretical time: its host op's FLOPs at the peak rate of the unit that runs
// them, or its bytes at peak bandwidth, whichever is longer, split among the op's compute kernels
// by duration (share); and the same work at the achievable efficiencies, for the compute-loss
// split. False when the op's cost or the device's peaks are unknown.
bool theoretical_time(const OpCost& oc, const KernelHwInputs& in, double share, WaterfallUnit& u) {
  if (!(oc.known() && in.dev != nullptr && (oc.flops > 0 || oc.bytes > 0) && in.peak_m > 0 &&
        in.peak_v > 0 && in.bw > 0))
    return false;
  const bool matrix = matrix_family(oc.family);
  const double t_comp = oc.flops / (matrix ? in.peak_m : in.peak_v) * 1e9;
  const double t_mem = oc.bytes / in.bw * 1e9;
  u.theoretical_ns = std::max(t_comp, t_mem) * share;
  u.compute_bound = t_comp >= t_mem;
  u.theoretical_known = true;
  u.flops = oc.flops * share;
  u.bytes = oc.bytes * share;
  u.achievable_ns = std::max(t_comp / (matrix ? kAchievableMatrix : kAchievableVector),
                             t_mem / kAchievableBandwidth) *
                    share;
  return true;
}

// A waterfall unit's active time (at the maximum clock): from its counted cycles when they were
// counted in the traced run, else from the telemetry's clock; a memory-bound kernel's time does
// not follow the core clock (no frequency loss).
void active_time(const KernelHwInputs& in, int32_t row, Ns s, Ns e, double d, WaterfallUnit& u) {
  const double active = in.cycles_of_run ? counter(in.ct, row, in.cm.active) : kNaN;
  if (!std::isnan(active) && in.dev != nullptr) {
    u.active_ns = active / in.cm.active_div / in.fmax * 1000.0;
    u.frequency_known = true;
  } else if (in.clock != nullptr && in.dev != nullptr) {
    u.active_ns = d * std::min(1.0, mean_linear(*in.clock, s, e) / in.fmax);
    u.frequency_known = true;
  } else {
    u.active_ns = d;
  }
  if (!u.compute_bound) u.active_ns = d;
}

// Waterfall units: every compute kernel.
void waterfall_units(const RankContext& c, const KernelHwInputs& in, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  const bool labelled = g.iteration.size() == g.size();
  std::unordered_map<int32_t, Ns> op_dur;  // per host op: its compute kernels' time
  for (int32_t i : c.order)
    if (g.cls[i] == GpuClass::kCompute && g.host_op_idx[i] >= 0)
      op_dur[g.host_op_idx[i]] += g.dur_ns[i];
  UnitWork work_names(c, *out.names);
  for (int32_t i : c.order) {
    if (g.cls[i] != GpuClass::kCompute || g.dur_ns[i] <= 0) continue;
    WaterfallUnit u;
    u.row = i;
    if (labelled) u.key = c.label(c.raw_key(i, false));
    u.op_class = c.op_class(i);
    const Ns s = g.start_ns[i], e = c.end(i);
    const double d = static_cast<double>(g.dur_ns[i]);
    u.observed_ns = g.dur_ns[i];
    const int32_t op = g.host_op_idx[i];
    UnitWork::Work* work = work_names.of(op);
    const OpCost oc = work != nullptr ? work->cost : OpCost{};
    const Ns od = work != nullptr ? op_dur[op] : 0;
    const double share = od > 0 ? d / static_cast<double>(od) : 1.0;
    if (theoretical_time(oc, in, share, u))
      u.shape_class = work_names.shape_class(*work, op, oc);
    else
      u.compute_bound = matrix_class(u.op_class);
    u.issued_ns = u.theoretical_ns;
    const int32_t row = in.row_of(static_cast<size_t>(i));
    active_time(in, row, s, e, d, u);
    // Issued matrix work: for kernels of matrix operations (or any that issued MFMA work).
    const double issued = CounterMap::sum(in.ct, row, in.cm.matrix_flops);
    if (!std::isnan(issued) && in.peak_m > 0 && (issued > 0 || matrix_family(oc.family))) {
      u.issued_ns = issued / in.peak_m * 1e9;
      u.instruction_known = true;
    }
    u.overlap_share = static_cast<double>(measure_in(c.comm, s, e)) / d;
    u.signature = work_names.signature(i, u.key, work, op, oc);
    out.units.push_back(u);
  }
}

}  // namespace

void hardware_partial(const RankContext& c, const AnalysisOptions& o, const RankHardware* hw,
                      RankAnalysis& out) {
  const KernelHwInputs in(c, o, hw, out);
  kernel_hw_rows(c, in, out);
  // The matrix busy cycles are summed over every SM (NVIDIA) or every CU's 4 SIMDs (AMD).
  const double units = in.dev == nullptr                ? 0.0
                       : in.dev->vendor == Vendor::kAmd ? 4.0 * in.dev->sm_count
                                                        : static_cast<double>(in.dev->sm_count);
  counter_partial(c, units, out);
  if (hw != nullptr) power_rows(c, *hw, in.idle_w, in.fmax, out);
  waterfall_units(c, in, out);
}

}  // namespace chopper
