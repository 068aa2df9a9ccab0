#include "chopper/report/hardware_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

constexpr ColType I = ColType::kInt, R = ColType::kReal, T = ColType::kText;

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string pct(double x) {
  return fmt::format("{:.1f}%", 100.0 * x);
}

// Sums over the iteration rows (phase NULL) of the waterfall, per rank.
struct Totals {
  double observed = 0, theoretical = 0, instruction = 0, utilization = 0, overlap = 0,
         frequency = 0, residual = 0, below_achievable = 0;
  uint64_t kernels = 0, unknown_frequency = 0, unknown_instruction = 0, unknown_overlap = 0,
           unknown_theoretical = 0;
  void add(const WaterfallRow& w) {
    observed += static_cast<double>(w.observed_ns);
    theoretical += w.theoretical_ns;
    instruction += w.instruction_ns;
    utilization += w.utilization_ns;
    overlap += w.overlap_ns;
    frequency += w.frequency_ns;
    residual += w.residual_ns;
    below_achievable += w.below_achievable_ns;
    kernels += w.kernels;
    unknown_frequency += w.unknown_frequency;
    unknown_instruction += w.unknown_instruction;
    unknown_overlap += w.unknown_overlap;
    unknown_theoretical += w.unknown_theoretical;
  }
};

bool iteration_row(const WaterfallRow& w) {
  return w.key.phase == Phase::kNone && w.key.operation.empty() && w.key.iteration != kNoId;
}

// The waterfall of the rank shown in each iteration, summed, and the iteration count.
std::pair<Totals, double> slowest_totals(const RunAnalysis& ra) {
  Totals t;
  double n = 0;
  for (const IterationRow& it : ra.iterations) {
    bool any = false;
    for (const WaterfallRow& w : ra.waterfall)
      if (iteration_row(w) && w.rank == it.slowest_rank && w.key.iteration == it.iteration)
        t.add(w), any = true;
    n += any ? 1 : 0;
  }
  return {t, n};
}

// How a telemetry file was placed, in words: its offset, or why it was not aligned.
std::string placement(const TelemetryAlignment& a) {
  if (!a.aligned()) return "not aligned: " + a.method.substr(6);
  std::string s =
      fmt::format("offset {:+.3f} ms ± {:.3f} ms ({}", static_cast<double>(a.offset_ns) / 1e6,
                  static_cast<double>(a.uncertainty_ns) / 1e6, a.method);
  if (!std::isnan(a.correlation)) s += fmt::format(", r = {:.2f}", a.correlation);
  return s + ")";
}

// How a counter file was joined, in words: what joined and how, or why it was refused.
std::string joining(const CounterJoin& j) {
  if (j.method.rfind("none", 0) == 0)
    return fmt::format("refused, no counter used: {}", j.method.substr(6));
  std::string s = fmt::format("{} of {} dispatches joined ({}", j.matched, j.dispatches, j.method);
  if (!std::isnan(j.name_match_rate))
    s += fmt::format("; kernel names agree for {:.0f}%", 100 * j.name_match_rate);
  return s + ")";
}

}  // namespace

void hardware_tables(const RunAnalysis& ra, const AnalysisOptions& o, TableSink& sink,
                     RankRows& per_rank) {
  (void)o;
  const HardwareRun* hw = ra.hardware;
  // telemetry_alignment
  {
    Rows t = make_rows(
        sink, "telemetry_alignment",
        "Each telemetry file: the node and ranks it describes, and the offset that puts it on "
        "their trace clock (docs/metrics.md, Hardware alignment)",
        {{"file", T, "telemetry file"},
         {"format", T, "nvidia-smi, amd-smi, rocm-smi, dcgmi, zeus"},
         {"node", I, "node index (ranks node × GPUs per node …)"},
         {"ranks", T, "ranks whose GPU the file describes"},
         {"clock", T, "the file's clock: realtime_utc, realtime_local, monotonic, relative"},
         {"offset_ns", I,
          "telemetry clock − trace clock, subtracted from every sample (NULL = not aligned)"},
         {"uncertainty_ns", I,
          "half-width of the offsets the correlation cannot tell apart (NULL = not aligned)"},
         {"period_ns", I, "median interval of the file's own samples"},
         {"correlation", R,
          "Pearson r of trace busy share vs utilization (or power) at offset_ns, in [-1, 1] "
          "(NULL = nothing compared)"},
         {"method", T, "how the offset was found; 'none: <why>' = not aligned"},
         {"samples", I, "samples of the series compared"}});
    if (hw != nullptr)
      for (const TelemetryAlignment& a : hw->telemetry) {
        std::string ranks;
        for (int64_t r : a.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
        t.add_row({Cell::of(a.file), Cell::of(a.format), Cell::of(a.node), opt_text(ranks),
                   Cell::of(clock_domain_name(a.clock)),
                   a.aligned() ? Cell::of(a.offset_ns) : Cell::null(),
                   a.aligned() ? Cell::of(a.uncertainty_ns) : Cell::null(), Cell::of(a.period_ns),
                   opt_real(a.correlation), Cell::of(a.method), Cell::of(a.samples)});
      }
    t.end();
  }
  // counter_join
  {
    Rows t = make_rows(
        sink, "counter_join", "Each counter file: its rank and how its dispatches joined kernels",
        {{"file", T, "counter file"},
         {"rank", I, "rank (NULL = none found)"},
         {"dispatches", I, "dispatch rows in the file"},
         {"matched", I, "dispatches joined to a kernel of the rank's trace"},
         {"match_rate", R, "matched / dispatches"},
         {"ambiguous", I, "dispatches or kernels left over or claimed twice"},
         {"method", T,
          "correlation id, or kernel name + order (Chopper); 'none: <why>' = refused, no counter "
          "of the file used"},
         {"offset_ns", I,
          "counter clock − trace clock (median over matched dispatches; NULL = refused)"},
         {"name_match_rate", R,
          "of the dispatches the join paired with a kernel (a refused file: the pairing tried), "
          "the share whose kernel names agree (NULL = none paired)"}});
    if (hw != nullptr)
      for (const CounterJoin& j : hw->counters) {
        const bool joined = j.method.rfind("none", 0) != 0;
        t.add_row({Cell::of(j.file), opt_rank(j.rank), Cell::of(j.dispatches), Cell::of(j.matched),
                   j.dispatches > 0 ? Cell::of(static_cast<double>(j.matched) /
                                               static_cast<double>(j.dispatches))
                                    : Cell::null(),
                   Cell::of(j.ambiguous), Cell::of(j.method),
                   joined ? Cell::of(j.offset_ns) : Cell::null(), opt_real(j.name_match_rate)});
      }
    t.end();
  }
  write_rank_table(RankStream::kTelemetry, per_rank, sink);
  write_rank_table(RankStream::kKernelHw, per_rank, sink);
  // power_energy
  {
    Rows t = make_rows(
        sink, "power_energy",
        "Power and energy of each rank's GPU per iteration window (phase NULL) and per phase "
        "(GPU time of that phase's activities; idle = no activity), from aligned telemetry",
        {{"rank", I, "rank"},
         {"iteration", I, "iteration window"},
         {"phase", T,
          "forward, backward, optimizer, other, data_dist, idle; NULL = the whole window"},
         {"time_ns", I, "time in the window (phase rows: GPU time of the phase)"},
         {"energy_j", R, "∫ power dt (each sample holds over the interval ending at it)"},
         {"mean_power_w", R, "energy_j ÷ time"},
         {"peak_power_w", R, "largest sample in the window"},
         {"peak_to_mean", R, "peak_power_w ÷ mean_power_w (CharLLM-PPT's burstiness)"},
         {"busy_power_w", R, "mean of samples whose interval the GPU was ≥ 90% busy"},
         {"idle_power_w", R, "mean of samples whose interval the GPU was ≤ 10% busy"},
         {"mean_clock_mhz", R, "SM/GFX clock, time-weighted"},
         {"max_temp_c", R, "GPU (edge) temperature, largest sample"},
         {"max_hotspot_c", R, "hotspot temperature, largest sample"},
         {"max_mem_temp_c", R, "memory temperature, largest sample"},
         {"throttle_ns", T, "time under each throttle reason: 'reason=ns,…'"},
         {"tokens_per_j", R, "tokens per step ÷ (energy × ranks) (whole-window rows)"},
         {"power_cv", R, "σ ÷ mean of the power samples in the window (burstiness)"},
         {"max_dp_dt_w_per_s", R, "steepest change between consecutive power samples"},
         {"max_clock_share", R, "share of clock samples at ≥ 99% of the maximum clock"},
         {"energy_counter_j", R, "growth of the GPU's energy counter (cross-check of energy_j)"},
         {"link_tx_bytes", R, "NVLink / XGMI bytes sent (counter growth)"},
         {"link_rx_bytes", R, "NVLink / XGMI bytes received (counter growth)"},
         {"link_util", R,
          "max(link_tx_bytes, link_rx_bytes) ÷ time ÷ the device's per-direction link bandwidth"},
         {"pcie_tx_bytes", R, "PCIe bytes sent (counter growth)"},
         {"pcie_rx_bytes", R, "PCIe bytes received (counter growth)"}});
    auto link_util = [&](const PowerRow& p) {
      const double bytes = std::isnan(p.link_tx_bytes) ? p.link_rx_bytes
                           : std::isnan(p.link_rx_bytes)
                               ? p.link_tx_bytes
                               : std::max(p.link_tx_bytes, p.link_rx_bytes);
      if (std::isnan(bytes) || ra.device == nullptr || ra.device->intra_node_bw_gbs <= 0 ||
          p.time_ns <= 0)
        return std::nan("");
      return bytes / (static_cast<double>(p.time_ns) * 1e-9) / (ra.device->intra_node_bw_gbs * 1e9);
    };
    for (const RankAnalysis& r : ra.ranks)
      for (const PowerRow& p : r.power) {
        std::string thr;
        for (const auto& [k, v] : p.throttle_ns)
          thr += fmt::format("{}{}={}", thr.empty() ? "" : ",", k, v);
        const double mean =
            p.time_ns > 0 ? p.energy_j / (static_cast<double>(p.time_ns) * 1e-9) : std::nan("");
        int64_t ranks = 0;
        for (const RankAnalysis& x : ra.ranks) ranks += x.ok ? 1 : 0;
        const double tpj =
            p.phase.empty() && o.tokens_per_step > 0 && p.energy_j > 0
                ? static_cast<double>(o.tokens_per_step) / (p.energy_j * static_cast<double>(ranks))
                : std::nan("");
        t.add_row({Cell::of(r.rank),
                   opt_iter(p.iteration),
                   opt_text(p.phase),
                   Cell::of(p.time_ns),
                   Cell::of(p.energy_j),
                   opt_real(mean),
                   opt_real(p.peak_power_w),
                   opt_real(p.peak_power_w / mean),
                   opt_real(p.busy_power_w),
                   opt_real(p.idle_power_w),
                   opt_real(p.mean_clock_mhz),
                   opt_real(p.max_temp_c),
                   opt_real(p.max_hotspot_c),
                   opt_real(p.max_mem_temp_c),
                   opt_text(thr),
                   opt_real(tpj),
                   opt_real(p.power_cv),
                   opt_real(p.max_dp_dt_w_per_s),
                   opt_real(p.max_clock_share),
                   opt_real(p.energy_counter_j),
                   opt_real(p.link_tx_bytes),
                   opt_real(p.link_rx_bytes),
                   opt_real(link_util(p)),
                   opt_real(p.pcie_tx_bytes),
                   opt_real(p.pcie_rx_bytes)});
      }
    t.end();
  }
  write_rank_table(RankStream::kHierarchyHw, per_rank, sink);
  // waterfall
  {
    std::vector<ColumnSpec> cols = {{"rank", I, "rank"}};
    for (ColumnSpec& c : label_cols()) cols.push_back(std::move(c));
    for (ColumnSpec c : std::vector<ColumnSpec>{
             {"op_class", T, "class of the operation (operation rows)"},
             {"kernels", I, "compute kernels summed"},
             {"observed_ns", I, "Σ kernel durations"},
             {"theoretical_ns", R, "FLOPs at peak (or bytes at peak bandwidth) at the max clock"},
             {"instruction_ns", R, "issued matrix work beyond the theoretical (counters)"},
             {"utilization_ns", R, "solo cycles at max clock beyond the issued work"},
             {"overlap_ns", R, "cycles beyond solo instances of the same work, beside comm"},
             {"frequency_ns", R, "the same cycles at the clock run vs the max clock"},
             {"residual_ns", R,
              "observed − the parts: the time of kernels with no FLOPs/bytes known, and any "
              "utilization clamped at 0"},
             {"unknown_theoretical", I, "kernels without FLOPs/bytes (theoretical 0)"},
             {"unknown_instruction", I, "kernels without issued-work counters (instruction 0)"},
             {"unknown_overlap", I, "kernels beside comm with no solo instance to compare"},
             {"estimated_overlap", I, "of those: overlap from the run's slowdown rate"},
             {"unknown_frequency", I, "kernels with no clock or cycle counter (frequency 0)"},
             {"below_achievable_ns", R,
              "of utilization_ns, the time beyond what is achievable for the same work (the "
              "better of the roofline at the achievable efficiency and the median of its shape "
              "class in the run): the compute loss a user can act on"}})
      cols.push_back(std::move(c));
    Rows t = make_rows(sink, "waterfall",
                       "The gap from theoretical to observed compute time, per operation "
                       "instance, per phase of an iteration (operation NULL) and per iteration "
                       "(phase and operation NULL); the parts add up to observed_ns",
                       std::move(cols));
    std::vector<Cell> row;
    for (const WaterfallRow& w : ra.waterfall) {
      row.clear();
      row.push_back(Cell::of(w.rank));
      push_label(row, w.key);
      row.push_back(w.key.operation.empty() ? Cell::null() : opt_text(op_class_name(w.op_class)));
      for (Cell c : {Cell::of(w.kernels), Cell::of(w.observed_ns), Cell::of(w.theoretical_ns),
                     Cell::of(w.instruction_ns), Cell::of(w.utilization_ns), Cell::of(w.overlap_ns),
                     Cell::of(w.frequency_ns), Cell::of(w.residual_ns),
                     Cell::of(w.unknown_theoretical), Cell::of(w.unknown_instruction),
                     Cell::of(w.unknown_overlap), Cell::of(w.estimated_overlap),
                     Cell::of(w.unknown_frequency), Cell::of(w.below_achievable_ns)})
        row.push_back(c);
      t.add_row(row);
    }
    t.end();
  }
  // shape_classes
  {
    Rows t = make_rows(
        sink, "shape_classes",
        "Compute work by shape class (operation, input dims and types; all ranks): what it "
        "achieves against its roofline, its best kernels and the achievable efficiency, and the "
        "time lost against what is achievable (docs/metrics.md, Waterfall); largest loss first",
        {{"shape_class", T, "cost family, operation, input dims, input types"},
         {"family", T, "gemm, attention_fwd, attention_bwd, conv, norm, elementwise"},
         {"bound", T, "compute or memory (the longer of FLOPs at peak and bytes at bandwidth)"},
         {"kernels", I, "compute kernels"},
         {"time_ns", R, "Σ solo time at the maximum clock (the waterfall's reference)"},
         {"theoretical_ns", R, "Σ roofline time (FLOPs at peak or bytes at peak bandwidth)"},
         {"achievable_ns", R,
          "Σ achievable time: the better of the roofline at the achievable efficiency and the "
          "class's median roofline share, never below the run's shortest kernel"},
         {"below_achievable_ns", R, "Σ time beyond the achievable (the compute loss)"},
         {"flops", R, "Σ FLOPs"},
         {"bytes", R, "Σ bytes moved"},
         {"achieved_tflops", R, "flops / time_ns (TFLOP/s)"},
         {"achieved_tbs", R, "bytes / time_ns (TB/s)"},
         {"roofline_share", R, "theoretical_ns / time_ns"},
         {"best_roofline_share", R, "p90 over the class's kernels of theoretical / solo time"},
         {"median_roofline_share", R,
          "median over the class's kernels of theoretical / solo time (the class's reference)"}});
    for (const ShapeClassRow& c : ra.shape_classes) {
      const double secs = c.time_ns * 1e-9;
      t.add_row({Cell::of(c.shape_class), Cell::of(c.family),
                 Cell::of(c.compute_bound ? "compute" : "memory"), Cell::of(c.kernels),
                 Cell::of(c.time_ns), Cell::of(c.theoretical_ns), Cell::of(c.achievable_ns),
                 Cell::of(c.below_achievable_ns), Cell::of(c.flops), Cell::of(c.bytes),
                 secs > 0 ? Cell::of(c.flops / secs * 1e-12) : Cell::null(),
                 secs > 0 ? Cell::of(c.bytes / secs * 1e-12) : Cell::null(),
                 Cell::of(c.roofline_share), Cell::of(c.best_roofline_share),
                 Cell::of(c.median_roofline_share)});
    }
    t.end();
  }
  // what_if
  {
    Rows t = make_rows(
        sink, "what_if",
        "Each iteration (its shown rank: iterations.shown_rank) with one loss removed at a time, "
        "first "
        "order (NULL = the loss could not be measured)",
        {{"iteration", I, "iteration"},
         {"rank", I, "the rank shown (iterations.shown_rank)"},
         {"observed_ns", I, "iteration time"},
         {"max_clock_ns", I, "compute at the maximum clock"},
         {"perfect_overlap_ns", I, "no exposed communication"},
         {"no_launch_gaps_ns", I, "no launch overhead: host late and launch latency removed"},
         {"no_overlap_slowdown_ns", I, "compute not slowed beside communication"},
         {"no_straggler_ns", I,
          "the significant straggler running like the median rank (iterations)"}});
    for (const WhatIfRow& w : ra.what_if)
      t.add_row({Cell::of(w.iteration), opt_rank(w.rank), Cell::of(w.observed_ns),
                 w.max_clock_ns < 0 ? Cell::null() : Cell::of(w.max_clock_ns),
                 Cell::of(w.perfect_overlap_ns), Cell::of(w.no_launch_gaps_ns),
                 w.no_overlap_slowdown_ns < 0 ? Cell::null() : Cell::of(w.no_overlap_slowdown_ns),
                 Cell::of(w.no_straggler_ns)});
    t.end();
  }
}

std::string hardware_info_text(const HardwareRun& hw,
                               const std::vector<std::pair<std::string, std::string>>& skipped,
                               const std::vector<std::string>& errors) {
  std::string s;
  if (hw.empty() && skipped.empty() && errors.empty()) return s;
  s += "\nhardware files:\n";
  for (size_t i = 0; i < hw.telemetry_data.size(); ++i) {
    const TelemetryData& d = hw.telemetry_data[i];
    const TelemetryAlignment& a = hw.telemetry[i];
    std::vector<int32_t> gpus;
    std::vector<std::string> metrics;
    Ns lo = std::numeric_limits<Ns>::max(), hi = std::numeric_limits<Ns>::min();
    for (const Series& se : d.series) {
      if (std::find(gpus.begin(), gpus.end(), se.gpu.index) == gpus.end())
        gpus.push_back(se.gpu.index);
      const std::string m(metric_name(se.metric));
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
      if (!se.t_ns.empty()) lo = std::min(lo, se.t_ns.front()), hi = std::max(hi, se.t_ns.back());
    }
    std::string ml;
    for (const std::string& m : metrics) ml += (ml.empty() ? "" : ", ") + m;
    std::string ranks;
    for (int64_t r : a.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    s += fmt::format(
        "  telemetry {} ({}, {} clock): {} GPUs, {} rows, {:.1f} s recorded every {}; "
        "{}\n    node {} -> ranks {}; {}\n",
        d.file, d.format, clock_domain_name(a.clock), gpus.size(), d.samples,
        hi > lo ? static_cast<double>(hi - lo) / 1e9 : 0.0, ms(static_cast<double>(a.period_ns)),
        ml, a.node, ranks.empty() ? "none" : ranks, placement(a));
    for (const Diagnostics::Entry& e : d.diagnostics.entries())
      s += fmt::format("    {}: {}{}\n", e.kind, e.count,
                       e.examples.empty() ? "" : " (" + e.examples.front() + ")");
  }
  for (size_t i = 0; i < hw.counter_data.size(); ++i) {
    const CounterTable& c = hw.counter_data[i];
    const CounterJoin& j = hw.counters[i];
    std::string names;
    for (const std::string& n : c.counter_names) names += (names.empty() ? "" : ", ") + n;
    s += fmt::format("  counters {} ({}): {} dispatches; {}\n    rank {}: {}\n", c.file, c.format,
                     j.dispatches, names, j.rank, joining(j));
    for (const Diagnostics::Entry& e : c.diagnostics.entries())
      s += fmt::format("    {}: {}{}\n", e.kind, e.count,
                       e.examples.empty() ? "" : " (" + e.examples.front() + ")");
  }
  for (const auto& [f, why] : skipped) s += fmt::format("  skipped {} ({})\n", f, why);
  for (const std::string& e : errors) s += fmt::format("  error: {}\n", e);
  return s;
}

std::string hardware_summary(const RunAnalysis& ra, const AnalysisOptions& o) {
  std::string s;
  const HardwareRun* hw = ra.hardware;
  if (hw != nullptr && !hw->empty()) {
    s += "\nhardware:\n";
    // One line per file for a few files; beyond that a summary line per kind, and a line for each
    // file that could not be placed (the tables telemetry_alignment and counter_join list all).
    constexpr size_t kListed = 4;
    const bool list_t = hw->telemetry.size() <= kListed, list_c = hw->counters.size() <= kListed;
    std::set<std::string> t_fmt, t_method, c_fmt, c_method;
    size_t t_ok = 0, c_ok = 0;
    std::set<int64_t> t_ranks;
    Ns off_lo = 0, off_hi = 0, unc = 0;
    uint64_t disp = 0, matched = 0;
    for (const TelemetryAlignment& a : hw->telemetry) {
      const bool placed = a.aligned();
      if (list_t || !placed)
        s += fmt::format("  telemetry {} ({}, {} clock, every {}): node {}, {} ranks, {}\n", a.file,
                         a.format, clock_domain_name(a.clock), ms(static_cast<double>(a.period_ns)),
                         a.node, a.ranks.size(), placement(a));
      if (!placed) continue;
      off_lo = t_ok == 0 ? a.offset_ns : std::min(off_lo, a.offset_ns);
      off_hi = t_ok == 0 ? a.offset_ns : std::max(off_hi, a.offset_ns);
      unc = std::max(unc, a.uncertainty_ns);
      ++t_ok;
      t_ranks.insert(a.ranks.begin(), a.ranks.end());
      t_fmt.insert(a.format);
      t_method.insert(a.method);
    }
    auto joined = [](const std::set<std::string>& v) {
      std::string text;
      for (const std::string& x : v) text += (text.empty() ? "" : ", ") + x;
      return text;
    };
    if (!list_t)
      s += fmt::format(
          "  telemetry: {} of {} files placed ({}), {} ranks; offsets {:+.3f} to {:+.3f} ms, "
          "uncertainty up to ±{:.3f} ms ({})\n",
          t_ok, hw->telemetry.size(), joined(t_fmt), t_ranks.size(),
          static_cast<double>(off_lo) / 1e6, static_cast<double>(off_hi) / 1e6,
          static_cast<double>(unc) / 1e6, joined(t_method));
    for (size_t f = 0; f < hw->counters.size(); ++f) {
      const CounterJoin& j = hw->counters[f];
      const bool placed = j.method.rfind("none", 0) != 0;
      if (list_c || !placed)
        s += fmt::format("  counters {}: rank {}, {}\n", j.file, j.rank, joining(j));
      if (!placed) continue;
      ++c_ok;
      disp += j.dispatches;
      matched += j.matched;
      if (f < hw->counter_data.size()) c_fmt.insert(hw->counter_data[f].format);
      c_method.insert(j.method);
    }
    if (!list_c)
      s += fmt::format(
          "  counters: {} of {} files joined to a rank ({}); {} of {} dispatches "
          "joined ({:.1f}%; {})\n",
          c_ok, hw->counters.size(), joined(c_fmt), matched, disp,
          disp > 0 ? 100.0 * static_cast<double>(matched) / static_cast<double>(disp) : 0.0,
          joined(c_method));
  }
  // Not a structured binding: lambdas below use them (clang 14 cannot capture a binding).
  const std::pair<Totals, double> tn = slowest_totals(ra);
  const Totals& t = tn.first;
  const double n = tn.second;
  if (n > 0 && t.observed > 0) {
    s += "\ncompute time of the rank shown, theoretical to observed (mean per iteration):\n";
    auto line = [&](const char* name, double v, bool known) {
      s += fmt::format("  {:<28} {:>14} {:>7}{}\n", name, ms(v / n), pct(v / t.observed),
                       known ? "" : "  (not measured)");
    };
    line("theoretical", t.theoretical, t.unknown_theoretical < t.kernels);
    line("instruction", t.instruction, t.unknown_instruction < t.kernels);
    line("utilization", t.utilization, t.unknown_theoretical < t.kernels);
    if (t.unknown_theoretical < t.kernels)
      line("  of which below achievable", t.below_achievable, true);
    line("overlap (beside comm)", t.overlap, t.unknown_overlap < t.kernels);
    line("frequency (DVFS)", t.frequency, t.unknown_frequency < t.kernels);
    if (std::abs(t.residual) >= 0.0005 * t.observed)
      line(t.unknown_theoretical > 0 ? "residual (no FLOPs known)" : "residual", t.residual, true);
    s += fmt::format("  {:<28} {:>14}\n", "observed", ms(t.observed / n));
  }
  // Energy per iteration over all ranks.
  std::map<int64_t, double> energy;
  std::map<int64_t, int> ranks;
  for (const RankAnalysis& r : ra.ranks)
    for (const PowerRow& p : r.power)
      if (p.phase.empty()) energy[p.iteration] += p.energy_j, ++ranks[p.iteration];
  if (!energy.empty()) {
    double e = 0;
    for (const auto& [it, v] : energy) e += v;
    e /= static_cast<double>(energy.size());
    s += fmt::format("\nenergy: {:.1f} J per iteration over {} GPUs ({:.1f} J per GPU)", e,
                     ranks.begin()->second, e / ranks.begin()->second);
    if (o.tokens_per_step > 0)
      s += fmt::format("; {:.1f} tokens/J; {:.3f} mJ per token",
                       static_cast<double>(o.tokens_per_step) / e,
                       e / static_cast<double>(o.tokens_per_step) * 1e3);
    s += "\n";
  }
  if (!ra.what_if.empty()) {
    double obs = 0, clk = 0, ovl = 0, lg = 0, strag = 0;
    bool clk_known = true;
    for (const WhatIfRow& w : ra.what_if) {
      obs += static_cast<double>(w.observed_ns);
      strag += static_cast<double>(w.no_straggler_ns);
      clk += static_cast<double>(w.max_clock_ns);
      clk_known = clk_known && w.max_clock_ns >= 0;
      ovl += static_cast<double>(w.perfect_overlap_ns);
      lg += static_cast<double>(w.no_launch_gaps_ns);
    }
    const double k = static_cast<double>(ra.what_if.size());
    s += fmt::format("what if (first order, mean iteration {}): ", ms(obs / k));
    if (clk_known) s += fmt::format("held max clock {}; ", ms(clk / k));
    s += fmt::format("perfect overlap {}; no launch gaps {}", ms(ovl / k), ms(lg / k));
    if (strag < obs) s += fmt::format("; no straggler {}", ms(strag / k));
    s += "\n";
  }
  return s;
}

}  // namespace chopper
