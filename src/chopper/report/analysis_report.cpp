#include "chopper/report/analysis_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"
#include "chopper/report/work_report.hpp"

namespace chopper {
namespace {

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string pct(double x) {
  return fmt::format("{:.1f}%", 100.0 * x);
}

// Writes a whole table: begin, a row for each element of `v`, end.
template <class Def, class V>
void put_rows(TableSink& sink, const Def& def, const V& v) {
  sink.begin(def.schema());
  for (const auto& x : v) def.put(sink, x);
  sink.end();
}

void operation_instances_table(const RunAnalysis& ra, TableSink& sink) {
  sink.begin(kOperationInstancesTable.schema());
  for (const RankAnalysis& r : ra.ranks)
    for (const OpInstance& x : r.ops) kOperationInstancesTable.put(sink, x);
  sink.end();
}

// The collectives summed per type (called, else the kernel's) and message size.
std::vector<CollectiveSummaryRow> collective_summary(const std::vector<CollectiveRow>& colls) {
  std::map<std::pair<std::string, int64_t>, CollectiveSummaryRow> m;
  for (const CollectiveRow& x : colls) {
    const std::string type(coll_type_name(x.called != CollType::kUnknown ? x.called : x.type));
    CollectiveSummaryRow& a = m[{type, x.bytes}];
    a.type = type;
    a.bytes = x.bytes;
    ++a.count;
    a.ranks = std::max(a.ranks, x.ranks);
    a.latency_ns += static_cast<double>(x.latency_ns);
    if (x.arrival_skew_ns >= 0) {
      ++a.skews;
      a.arrival_skew_ns += static_cast<double>(x.arrival_skew_ns);
      a.end_skew_ns += static_cast<double>(x.end_skew_ns);
    }
    a.algbw_gbs += x.algbw_gbs;
    if (x.busbw_gbs > 0) ++a.bws, a.busbw_gbs += x.busbw_gbs;
  }
  std::vector<CollectiveSummaryRow> out;
  out.reserve(m.size());
  for (auto& [k, a] : m) out.push_back(std::move(a));
  return out;
}

void rank_components_table(const RunAnalysis& ra, TableSink& sink) {
  sink.begin(kRankComponentsTable.schema());
  for (const RankAnalysis& r : ra.ranks)
    for (const auto& [it, comp] : r.components) {
      Ns total = 0;
      for (const auto& [k, v] : comp) total += v;
      for (const auto& [k, v] : comp)
        kRankComponentsTable.put(sink, RankComponentRow{r.rank, it, k, v, total});
    }
  sink.end();
}

void end_to_end_table(const RunAnalysis& ra, TableSink& sink) {
  sink.begin(kEndToEndTable.schema());
  for (const IterationRow& x : ra.iterations)
    for (const auto& [name, ns] : x.components) kEndToEndTable.put(sink, EndToEndRow{x, name, ns});
  sink.end();
}

}  // namespace

void analysis_tables(const RunAnalysis& ra, const AnalysisOptions& /*o*/, TableSink& sink,
                     RankRows& per_rank) {
  write_rank_table(RankStream::kTemporalBreakdown, per_rank, sink);
  write_rank_table(RankStream::kIdleBreakdown, per_rank, sink);
  write_rank_table(RankStream::kOverlap, per_rank, sink);
  write_rank_table(RankStream::kExposedComm, per_rank, sink);
  operation_instances_table(ra, sink);
  write_rank_table(RankStream::kLaunchOverhead, per_rank, sink);
  write_rank_table(RankStream::kLaunchStats, per_rank, sink);
  write_rank_table(RankStream::kQueueLength, per_rank, sink);
  write_rank_table(RankStream::kIdleCauses, per_rank, sink);
  put_rows(sink, kKernelBreakdownTable, ra.kernels);
  put_rows(sink, kOperationBreakdownTable, ra.operations);
  put_rows(sink, kClassBreakdownTable, ra.classes);
  put_rows(sink, kCollectivesTable, ra.collectives);
  put_rows(sink, kCollectiveSummaryTable, collective_summary(ra.collectives));
  put_rows(sink, kClockOffsetsTable, ra.clock_offsets);
  put_rows(sink, kStragglersTable, ra.stragglers);
  put_rows(sink, kIterationsTable, ra.iterations);
  rank_components_table(ra, sink);
  end_to_end_table(ra, sink);
  work_tables_write(ra, sink);
}

std::string shown_rank_text(const RunAnalysis& ra) {
  std::set<int64_t> slow, shown;
  size_t sig = 0;
  for (const IterationRow& x : ra.iterations) {
    shown.insert(x.slowest_rank);
    if (x.slowest_significant) ++sig, slow.insert(x.slowest_rank);
  }
  auto list = [](const std::set<int64_t>& v) {
    std::string s;
    for (int64_t r : v) s += (s.empty() ? "" : ", ") + std::to_string(r);
    return s;
  };
  if (!ra.iterations.empty() && ra.iterations.front().ranks == 1 && shown.size() == 1)
    return fmt::format("rank {}, the only rank", list(shown));
  if (sig == ra.iterations.size()) return fmt::format("slowest rank {}", list(slow));
  if (sig == 0)
    return fmt::format("rank {} (ranks equal within noise; showing the lowest rank)", list(shown));
  return fmt::format("rank {}: the significantly slowest in {} of {} iterations, else the lowest",
                     list(shown), sig, ra.iterations.size());
}

namespace {

// The summary of a run without iterations: a host-only trace, or GPU work without ProfilerStep
// ranges (its whole-trace breakdown per rank).
std::string no_iterations_text(const RunAnalysis& ra) {
  Ns gpu_ns = 0;
  for (const RankAnalysis& r : ra.ranks) gpu_ns += r.gpu_time_ns;
  // A host-only trace (CPU ops, no kernel, copy or memset): its ProfilerStep ranges may be there,
  // but there is no GPU timeline to split into iterations.
  if (gpu_ns == 0)
    return "No GPU activities in the trace (host operations only): no GPU time to break down.\n";
  std::string s =
      "No iterations found (no ProfilerStep#N ranges); see the whole-trace rows of "
      "temporal_breakdown.\n";
  for (const RankAnalysis& r : ra.ranks)
    for (const BreakdownRow& b : r.breakdown)
      if (b.iteration == kNoId && b.total_ns > 0)
        s += fmt::format(
            "  rank {}: {} traced; compute {}, exposed comm {}, exposed memcpy {}, idle {}\n",
            r.rank, ms(static_cast<double>(b.total_ns)),
            pct(static_cast<double>(b.compute_ns) / static_cast<double>(b.total_ns)),
            pct(static_cast<double>(b.exposed_comm_ns) / static_cast<double>(b.total_ns)),
            pct(static_cast<double>(b.exposed_memcpy_ns) / static_cast<double>(b.total_ns)),
            pct(static_cast<double>(b.idle_ns) / static_cast<double>(b.total_ns)));
  return s;
}

}  // namespace

std::string analysis_summary(const RunAnalysis& ra, const AnalysisOptions& o, const Findings& f) {
  std::string s;
  size_t ok = 0;
  for (const RankAnalysis& r : ra.ranks) ok += r.ok ? 1 : 0;
  if (ra.iterations.empty()) return no_iterations_text(ra) + top_operations_text(ra, 5);
  // Means over iterations of the shown rank's components.
  const double n = static_cast<double>(ra.iterations.size());
  double time = 0, mfu = 0, tps = 0, coverage = 0, flops = 0;
  int mfu_n = 0;
  std::map<std::string, double> comp;
  for (const IterationRow& x : ra.iterations) {
    time += static_cast<double>(x.time_ns) / n;
    for (const auto& [k, v] : x.components) comp[k] += static_cast<double>(v) / n;
    if (x.mfu >= 0) mfu += x.mfu, ++mfu_n;
    tps += x.tokens_per_s / n;
    coverage += x.flops_coverage / n;
    flops += x.flops;
  }
  s += fmt::format("{} rank{}, {} iteration{} ({}..{})", ok, ok == 1 ? "" : "s",
                   ra.iterations.size(), ra.iterations.size() == 1 ? "" : "s",
                   ra.iterations.front().iteration, ra.iterations.back().iteration);
  if (ra.device != nullptr)
    s += fmt::format(", {} ({} TFLOP/s {} peak)", ra.device->marketing_name,
                     ra.device->matrix_tflops(o.dtype), dtype_name(o.dtype));
  const std::string who = shown_rank_text(ra);
  s += fmt::format("\niteration time ({}, mean): {}", who, ms(time));
  if (o.tokens_per_step > 0)
    s += fmt::format("; {:.0f} tokens/s; {:.1f} µs per token", tps,
                     time / static_cast<double>(o.tokens_per_step) / 1e3);
  if (mfu_n > 0)
    s += fmt::format("; MFU {} (FLOPs known for {} of compute time)", pct(mfu / mfu_n),
                     pct(coverage));
  else if (ra.device != nullptr && flops > 0)
    s += fmt::format("; MFU not given: FLOPs known for only {} of compute time (below {})",
                     pct(coverage), pct(kMfuMinCoverage));
  s += fmt::format("\n\nwhere the time goes ({}, mean over iterations):\n", who);
  std::map<std::string, double> phases;
  for (const auto& [k, v] : comp) {
    const auto dot = k.find('.');
    if (dot != std::string::npos) phases["compute, " + k.substr(0, dot)] += v;
  }
  std::vector<std::pair<double, std::string>> parts;
  for (const auto& [k, v] : phases) parts.push_back({v, k});
  for (const char* k :
       {"exposed_comm", "straggler_wait", "exposed_memcpy", "data_loading", "host_sync",
        "host_optimizer", "host_stall", "host_late", "launch_overhead", "graph_gap", "idle"})
    if (comp.count(k)) parts.push_back({comp[k], k});
  std::sort(parts.rbegin(), parts.rend());
  for (const auto& [v, k] : parts) {
    std::string name = k == "exposed_comm"      ? "exposed communication"
                       : k == "straggler_wait"  ? "waiting for a straggler"
                       : k == "data_loading"    ? "data loading (host)"
                       : k == "host_sync"       ? "host blocked on the GPU"
                       : k == "host_optimizer"  ? "host optimizer/checkpoint"
                       : k == "host_stall"      ? "host stall (step start)"
                       : k == "exposed_memcpy"  ? "exposed memcpy"
                       : k == "host_late"       ? "host late (between kernels)"
                       : k == "launch_overhead" ? "launch overhead"
                       : k == "graph_gap"       ? "graph-internal gaps"
                       : k == "idle"            ? "idle (other)"
                                                : k;
    s += fmt::format("  {:<28} {:>14} {:>7}\n", name, ms(v), pct(time > 0 ? v / time : 0));
  }

  s += top_operations_text(ra, 5);
  s = s + hardware_summary(ra, o);
  s += findings_text(f);
  {
    double skew = 0;
    size_t matched = 0;
    for (const CollectiveRow& c : ra.collectives)
      if (c.ranks > 1) ++matched, skew += static_cast<double>(c.arrival_skew_ns);
    // Context, not a loss of its own: the waiting it causes is in the components above.
    if (matched > 0)
      s += fmt::format(
          "\ncollectives: {} matched across ranks; arrival skew {} per iteration in "
          "total (see collectives, collective_summary)\n",
          matched, ms(skew / n));
    else if (!ra.collectives.empty())
      s += fmt::format(
          "\ncollectives: {} on one rank (no other rank of their groups loaded; "
          "see collectives, collective_summary)\n",
          ra.collectives.size());
  }
  std::vector<std::string> offs;
  for (const ClockOffset& c : ra.clock_offsets)
    if (c.applied && c.offset_ns != 0)
      offs.push_back(
          fmt::format("rank {} {:+.3f} µs", c.rank, static_cast<double>(c.offset_ns) / 1e3));
  if (!offs.empty()) {
    s += "\nclock offsets applied (from collective ends): ";
    for (size_t i = 0; i < offs.size() && i < 8; ++i) s += (i ? ", " : "") + offs[i];
    if (offs.size() > 8) s += fmt::format(", … ({} ranks)", offs.size());
    s += "\n";
  }
  if (ra.unmatched_collectives + ra.mismatched_collectives > 0)
    s += fmt::format(
        "collectives not matched across ranks: {} on one rank only, {} of different "
        "types at the same position\n",
        ra.unmatched_collectives, ra.mismatched_collectives);
  return s;
}

}  // namespace chopper
