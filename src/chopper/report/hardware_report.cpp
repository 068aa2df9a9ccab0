#include "chopper/report/hardware_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "chopper/report/cpu_report.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

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

// Writes a declared table: its schema, then each of `rows` as `make` gives it.
template <class Def, class Row, class Make>
void write_declared(TableSink& sink, const Def& def, const std::vector<Row>& rows, Make make) {
  sink.begin(def.schema());
  for (const Row& r : rows) def.put(sink, make(r));
  sink.end();
}
template <class Def, class Row>
void write_rows(TableSink& sink, const Def& def, const std::vector<Row>& rows) {
  write_declared(sink, def, rows, [](const Row& r) -> const Row& { return r; });
}

TelemetryAlignmentRow telemetry_alignment_row(const TelemetryAlignment& a) {
  TelemetryAlignmentRow row{&a, {}};
  for (int64_t r : a.ranks) row.ranks += (row.ranks.empty() ? "" : ",") + std::to_string(r);
  return row;
}

// A PowerRow with what the table derives from it: the throttle reasons in words, the mean power,
// tokens per joule over the `ranks` ranks analysed and the link utilization against the device's
// link bandwidth.
PowerEnergyRow power_energy_row(const PowerRow& p, int64_t rank, int64_t ranks,
                                const RunAnalysis& ra, const AnalysisOptions& o) {
  PowerEnergyRow x{&p, rank, {}, std::nan(""), std::nan(""), std::nan("")};
  for (const auto& [k, v] : p.throttle_ns)
    x.throttle_ns += fmt::format("{}{}={}", x.throttle_ns.empty() ? "" : ",", k, v);
  if (p.time_ns > 0) x.mean_power_w = p.energy_j / (static_cast<double>(p.time_ns) * 1e-9);
  if (p.phase.empty() && o.tokens_per_step > 0 && p.energy_j > 0)
    x.tokens_per_j =
        static_cast<double>(o.tokens_per_step) / (p.energy_j * static_cast<double>(ranks));
  const double bytes = std::isnan(p.link_tx_bytes)   ? p.link_rx_bytes
                       : std::isnan(p.link_rx_bytes) ? p.link_tx_bytes
                                                     : std::max(p.link_tx_bytes, p.link_rx_bytes);
  if (!std::isnan(bytes) && ra.device != nullptr && ra.device->intra_node_bw_gbs > 0 &&
      p.time_ns > 0)
    x.link_util =
        bytes / (static_cast<double>(p.time_ns) * 1e-9) / (ra.device->intra_node_bw_gbs * 1e9);
  return x;
}

void power_energy_table(const RunAnalysis& ra, const AnalysisOptions& o, TableSink& sink) {
  int64_t ranks = 0;
  for (const RankAnalysis& x : ra.ranks) ranks += x.ok ? 1 : 0;
  sink.begin(kPowerEnergyTable.schema());
  for (const RankAnalysis& r : ra.ranks)
    for (const PowerRow& p : r.power)
      kPowerEnergyTable.put(sink, power_energy_row(p, r.rank, ranks, ra, o));
  sink.end();
}

}  // namespace

void hardware_tables(const RunAnalysis& ra, const AnalysisOptions& o, TableSink& sink,
                     RankRows& per_rank) {
  static const HardwareRun kNoHardware;
  const HardwareRun& hw = ra.hardware != nullptr ? *ra.hardware : kNoHardware;
  write_declared(sink, kTelemetryAlignmentTable, hw.telemetry, telemetry_alignment_row);
  write_rows(sink, kCounterJoinTable, hw.counters);
  write_rank_table(RankStream::kTelemetry, per_rank, sink);
  write_rank_table(RankStream::kKernelHw, per_rank, sink);
  power_energy_table(ra, o, sink);
  write_rank_table(RankStream::kHierarchyHw, per_rank, sink);
  write_rows(sink, kWaterfallTable, ra.waterfall);
  write_rows(sink, kShapeClassesTable, ra.shape_classes);
  write_rows(sink, kWhatIfTable, ra.what_if);
  cpu_utilization_table(ra, sink);
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
