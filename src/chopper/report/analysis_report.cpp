#include "chopper/report/analysis_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

constexpr ColType I = ColType::kInt, R = ColType::kReal, T = ColType::kText;

Cell share(Ns a, Ns b) {
  return b > 0 ? Cell::of(static_cast<double>(a) / static_cast<double>(b)) : Cell::null();
}

Rows make(TableSink& sink, std::string name, std::string doc, std::vector<ColumnSpec> cols) {
  return make_rows(sink, std::move(name), std::move(doc), std::move(cols));
}

std::vector<ColumnSpec> cat(std::vector<ColumnSpec> a, const std::vector<ColumnSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string pct(double x) {
  return fmt::format("{:.1f}%", 100.0 * x);
}

void name_table(TableSink& sink, const char* name, const char* doc, const char* group_doc,
                const std::vector<NameStat>& v) {
  Rows t = make(sink, name, doc,
                {{"rank", I, "rank (NULL = all ranks)"},
                 {"name", T, "name; 'others' = every name below the top N, folded"},
                 {"class", T, group_doc},
                 {"count", I, "activities"},
                 {"total_ns", I, "summed duration"},
                 {"mean_ns", R, "total_ns / count"},
                 {"min_ns", I, "shortest"},
                 {"max_ns", I, "longest"},
                 {"share", R, "of the GPU activity time of the rank (or run)"}});
  for (const NameStat& s : v)
    t.add_row(
        {opt_rank(s.rank), Cell::of(s.name), opt_text(s.group), Cell::of(s.count),
         Cell::of(s.total_ns),
         Cell::of(s.count ? static_cast<double>(s.total_ns) / static_cast<double>(s.count) : 0.0),
         Cell::of(s.min_ns), Cell::of(s.max_ns), Cell::of(s.share)});
  t.end();
}

}  // namespace

void analysis_tables(const RunAnalysis& ra, const AnalysisOptions& /*o*/, TableSink& sink,
                     RankRows& per_rank) {
  write_rank_table(RankStream::kTemporalBreakdown, per_rank, sink);
  write_rank_table(RankStream::kIdleBreakdown, per_rank, sink);
  write_rank_table(RankStream::kOverlap, per_rank, sink);
  write_rank_table(RankStream::kExposedComm, per_rank, sink);
  // operation_instances
  {
    Rows t = make(
        sink, "operation_instances",
        "Compute-operation instances (rank, iteration, phase, layer, operation): span, overlap "
        "with communication (Chopper's overlap ratio, communication as a union), lead",
        cat(cat({{"rank", I, "rank"}}, label_cols()),
            {{"op_class", T, "class of the operation"},
             {"kernels", I, "compute kernels"},
             {"first_start_ns", I, "first kernel start (rank's clock)"},
             {"elapsed_ns", I, "last end − first start"},
             {"kernel_ns", I, "summed kernel time"},
             {"comm_overlap_ns", I, "|[first start, last end) ∩ union(comm)|"},
             {"overlap_ratio", R, "comm_overlap_ns / elapsed_ns"},
             {"flops", R, "FLOPs from the recorded shapes (docs/flops.md); 0 = unknown"},
             {"lead_ns", I,
              "latest first start over ranks − own (aligned clocks); NULL = on one rank only"}}));
    for (const RankAnalysis& r : ra.ranks)
      for (const OpInstance& x : r.ops) {
        std::vector<Cell> c{Cell::of(x.rank)};
        push_label(c, x.key);
        const Ns el = x.last_end_ns - x.first_start_ns;
        c.push_back(opt_text(op_class_name(x.op_class)));
        c.push_back(Cell::of(x.kernels));
        c.push_back(Cell::of(x.first_start_ns));
        c.push_back(Cell::of(el));
        c.push_back(Cell::of(x.kernel_ns));
        c.push_back(Cell::of(x.comm_overlap_ns));
        c.push_back(share(x.comm_overlap_ns, el));
        c.push_back(Cell::of(x.flops));
        c.push_back(x.lead_ns < 0 ? Cell::null() : Cell::of(x.lead_ns));
        t.add_row(c);
      }
    t.end();
  }
  write_rank_table(RankStream::kLaunchOverhead, per_rank, sink);
  write_rank_table(RankStream::kLaunchStats, per_rank, sink);
  write_rank_table(RankStream::kQueueLength, per_rank, sink);
  write_rank_table(RankStream::kIdleCauses, per_rank, sink);
  name_table(sink, "kernel_breakdown",
             "GPU activities by kernel name, top N per rank and over all ranks",
             "compute, communication, memcpy, memset", ra.kernels);
  name_table(sink, "operation_breakdown",
             "GPU activities by operation label, top N per rank and overall", "op class",
             ra.operations);
  name_table(sink, "class_breakdown", "GPU activities by op class, per rank and overall", "",
             ra.classes);
  // collectives
  {
    Rows t = make(
        sink, "collectives",
        "Each collective matched across ranks (process group, order within it), on the aligned "
        "clock: latency, arrival and end skew, algorithm and bus bandwidth (NCCL's formulas); a "
        "group of which one rank was loaded (a single-rank trace) lists that rank's collectives "
        "with ranks = 1",
        cat(cat({{"group", T, "process group name (or its ranks); NULL = default"},
                 {"seq", I, "order within the group"},
                 {"type", T, "collective the kernel ran"},
                 {"called", T, "collective the framework called (NULL = unknown)"}},
                label_cols()),
            {{"ranks", I,
              "ranks that ran it (1: only one rank of its group loaded; latency_ns is then its "
              "duration, waiting included, and the skews are NULL)"},
             {"group_size", I, "process group size (NULL = unknown)"},
             {"size_bytes", I, "message size: output for all-gather, input otherwise"},
             {"dtype", T, "element type"},
             {"algorithm", T, "NCCL algorithm from the kernel name"},
             {"start_ns", I, "earliest start (aligned)"},
             {"latency_ns", I, "shortest duration over ranks (the transfer itself)"},
             {"max_dur_ns", I, "longest duration (includes waiting for late ranks)"},
             {"arrival_skew_ns", I, "latest start − earliest start (NULL: one rank)"},
             {"end_skew_ns", I, "latest end − earliest end (NULL: one rank)"},
             {"first_rank", I, "rank that started first"},
             {"last_rank", I, "rank that started last (the others waited for it)"},
             {"algbw_gbs", R, "size_bytes / latency_ns (GB/s)"},
             {"busbw_gbs", R, "algbw × NCCL bus factor (NULL: group size unknown)"},
             {"imbalance", R, "all-to-all: max/mean rank input bytes"}}));
    for (const CollectiveRow& x : ra.collectives) {
      std::vector<Cell> c{
          opt_text(x.group), Cell::of(x.index), Cell::of(coll_type_name(x.type)),
          x.called == CollType::kUnknown ? Cell::null() : Cell::of(coll_type_name(x.called))};
      push_label(c, x.key);
      c.push_back(Cell::of(x.ranks));
      c.push_back(x.group_size > 0 ? Cell::of(x.group_size) : Cell::null());
      c.push_back(x.bytes >= 0 ? Cell::of(x.bytes) : Cell::null());
      c.push_back(opt_text(x.dtype));
      c.push_back(opt_text(x.algorithm));
      for (int64_t v : {x.start_ns, x.latency_ns, x.max_dur_ns}) c.push_back(Cell::of(v));
      for (int64_t v : {x.arrival_skew_ns, x.end_skew_ns})
        c.push_back(v < 0 ? Cell::null() : Cell::of(v));
      c.push_back(Cell::of(x.first_rank));
      c.push_back(Cell::of(x.last_rank));
      c.push_back(x.bytes > 0 && x.algbw_gbs > 0 ? Cell::of(x.algbw_gbs) : Cell::null());
      c.push_back(x.bytes > 0 && x.busbw_gbs > 0 ? Cell::of(x.busbw_gbs) : Cell::null());
      c.push_back(x.imbalance > 0 ? Cell::of(x.imbalance) : Cell::null());
      t.add_row(c);
    }
    t.end();
  }
  // collective_summary
  {
    Rows t = make(sink, "collective_summary",
                  "Collectives per type and message size (matched across ranks, and one rank's "
                  "where no other rank of the group was loaded)",
                  {{"type", T, "collective called (else the kernel's)"},
                   {"size_bytes", I, "message size (NULL = unknown)"},
                   {"count", I, "collectives"},
                   {"ranks", I, "most ranks in one"},
                   {"latency_mean_ns", R, "mean latency"},
                   {"arrival_skew_mean_ns", R, "mean arrival skew (NULL: one rank each)"},
                   {"end_skew_mean_ns", R, "mean end skew (NULL: one rank each)"},
                   {"algbw_mean_gbs", R, "mean algorithm bandwidth"},
                   {"busbw_mean_gbs", R, "mean bus bandwidth (NULL: group size unknown)"}});
    struct Acc {
      uint64_t n = 0, skews = 0, bws = 0;
      int64_t ranks = 0;
      double lat = 0, arr = 0, end = 0, alg = 0, bus = 0;
    };
    std::map<std::pair<std::string, int64_t>, Acc> m;
    for (const CollectiveRow& x : ra.collectives) {
      Acc& a = m[{std::string(coll_type_name(x.called != CollType::kUnknown ? x.called : x.type)),
                  x.bytes}];
      ++a.n;
      a.ranks = std::max(a.ranks, x.ranks);
      a.lat += static_cast<double>(x.latency_ns);
      if (x.arrival_skew_ns >= 0) {
        ++a.skews;
        a.arr += static_cast<double>(x.arrival_skew_ns);
        a.end += static_cast<double>(x.end_skew_ns);
      }
      a.alg += x.algbw_gbs;
      if (x.busbw_gbs > 0) ++a.bws, a.bus += x.busbw_gbs;
    }
    for (const auto& [k, a] : m) {
      const double n = static_cast<double>(a.n), ns = static_cast<double>(a.skews);
      t.add_row({Cell::of(k.first), k.second >= 0 ? Cell::of(k.second) : Cell::null(),
                 Cell::of(a.n), Cell::of(a.ranks), Cell::of(a.lat / n),
                 a.skews ? Cell::of(a.arr / ns) : Cell::null(),
                 a.skews ? Cell::of(a.end / ns) : Cell::null(),
                 k.second > 0 ? Cell::of(a.alg / n) : Cell::null(),
                 a.bws ? Cell::of(a.bus / static_cast<double>(a.bws)) : Cell::null()});
    }
    t.end();
  }
  // clock_offsets
  {
    Rows t = make(sink, "clock_offsets",
                  "Per-rank clock offsets estimated from the ends of matched collectives; "
                  "aligned time = rank time − offset_ns",
                  {{"rank", I, "rank"},
                   {"reference_rank", I, "rank whose clock the offset is relative to"},
                   {"offset_ns", I, "median of (own end − reference end), chained across groups"},
                   {"collectives", I, "matched collectives of this rank the estimate used"},
                   {"spread_ns", I, "median absolute deviation of the per-collective estimates"},
                   {"applied", I, "1 if cross-rank metrics used it (|offset| > spread)"}});
    for (const ClockOffset& c : ra.clock_offsets)
      t.add_row({Cell::of(c.rank), Cell::of(c.reference_rank), Cell::of(c.offset_ns),
                 Cell::of(c.collectives), Cell::of(c.spread_ns), Cell::of(c.applied ? 1 : 0)});
    t.end();
  }
  // stragglers
  {
    Rows t = make(
        sink, "stragglers",
        "Chopper's lead per rank and iteration (how far ahead of the latest rank each operation "
        "started, aligned clocks), waits at collectives, and the waiting for a significant "
        "straggler (the counterfactual in iterations)",
        {{"rank", I, "rank"},
         {"iteration", I, "iteration (NULL = none)"},
         {"op_instances", I, "operation instances found on several ranks"},
         {"total_lead_ns", I, "Σ lead"},
         {"mean_lead_ns", I, "total_lead_ns / op_instances"},
         {"max_lead_ns", I, "largest lead"},
         {"collectives", I, "matched collectives"},
         {"arrived_last", I, "collectives this rank started last"},
         {"coll_wait_ns", I, "Σ (latest start − own start) over its collectives"},
         {"waited_for", I, "1 = the rank with the least total lead (Chopper's waited-for rank)"},
         {"exposed_comm_ns", I, "its exposed communication in the iteration (temporal_breakdown)"},
         {"straggler_wait_ns", I,
          "of that, waiting for the iteration's significant straggler: its exposed communication "
          "− the straggler's (0 when none)"}});
    for (const StragglerRow& s : ra.stragglers)
      t.add_row({Cell::of(s.rank), opt_iter(s.iteration), Cell::of(s.op_instances),
                 Cell::of(s.total_lead_ns), Cell::of(s.mean_lead_ns), Cell::of(s.max_lead_ns),
                 Cell::of(s.collectives), Cell::of(s.arrived_last), Cell::of(s.coll_wait_ns),
                 Cell::of(s.waited_for ? 1 : 0), Cell::of(s.exposed_comm_ns),
                 Cell::of(s.straggler_wait_ns)});
    t.end();
  }
  // iterations
  {
    Rows t = make(
        sink, "iterations",
        "Each iteration end to end: time of the rank shown (the significantly slowest, else the "
        "lowest), throughput, FLOPs, MFU, straggler",
        {{"iteration", I, "ProfilerStep number"},
         {"ranks", I, "ranks with this iteration"},
         {"time_ns", I, "the shown rank's iteration window"},
         {"min_time_ns", I, "fastest rank's"},
         {"mean_time_ns", I, "mean over ranks"},
         {"slowest_rank", I,
          "the rank significantly slower than the others (window − their median > max(3 robust "
          "σ, 1% of the median)); NULL = ranks equal within noise"},
         {"tokens", I, "tokens per step (given; NULL = unknown)"},
         {"tokens_per_s", R, "tokens / time"},
         {"time_per_token_ns", R, "time / tokens"},
         {"flops", R, "Σ FLOPs of the operations with known shapes, all ranks"},
         {"tflops_per_gpu", R, "flops / ranks / time (TFLOP/s)"},
         {"mfu", R,
          "flops / (time × ranks × peak matrix rate); NULL = device unknown or "
          "flops_coverage_share < 0.5"},
         {"straggler_rank", I, "the significant straggler (NULL = none significant)"},
         {"straggler_cost_ns", I,
          "median rank's exposed communication − the least one's: the time the iteration would "
          "save if the rank the others wait for ran like the median rank"},
         {"straggler_sigma_ns", I, "1.4826 × MAD of the ranks' exposed communication"},
         {"straggler_candidate", I, "the rank with the least exposed communication"},
         {"straggler_excess_compute_ns", I, "its compute time − the median rank's"},
         {"straggler_excess_other_ns", I,
          "its time outside compute and exposed communication − the median rank's"},
         {"least_lead_rank", I, "Chopper's waited-for rank: the least total lead"},
         {"straggler_lead_ns", I, "mean lead of the other ranks over least_lead_rank"},
         {"shown_rank", I,
          "the rank whose figures are shown (end_to_end, findings, waterfall): slowest_rank, "
          "else the lowest rank"},
         {"max_time_ns", I, "slowest rank's window"},
         {"flops_coverage_share", R,
          "share of the compute operations' kernel time (all ranks) whose FLOPs are known"}});
    for (const IterationRow& x : ra.iterations)
      t.add_row({Cell::of(x.iteration),
                 Cell::of(x.ranks),
                 Cell::of(x.time_ns),
                 Cell::of(x.min_time_ns),
                 Cell::of(x.mean_time_ns),
                 x.slowest_significant ? Cell::of(x.slowest_rank) : Cell::null(),
                 x.tokens > 0 ? Cell::of(x.tokens) : Cell::null(),
                 x.tokens > 0 ? Cell::of(x.tokens_per_s) : Cell::null(),
                 x.tokens > 0 ? Cell::of(x.time_per_token_ns) : Cell::null(),
                 Cell::of(x.flops),
                 x.flops > 0 ? Cell::of(x.tflops_per_gpu) : Cell::null(),
                 x.mfu >= 0 ? Cell::of(x.mfu) : Cell::null(),
                 opt_rank(x.straggler_rank),
                 Cell::of(x.straggler.cost_ns),
                 Cell::of(x.straggler.sigma_ns),
                 opt_rank(x.straggler.rank),
                 Cell::of(x.straggler.excess_compute_ns),
                 Cell::of(x.straggler.excess_other_ns),
                 opt_rank(x.least_lead_rank),
                 x.least_lead_rank >= 0 ? Cell::of(x.straggler_lead_ns) : Cell::null(),
                 Cell::of(x.slowest_rank),
                 Cell::of(x.max_time_ns),
                 Cell::of(x.flops_coverage)});
    t.end();
  }
  // rank_components
  {
    Rows t = make(
        sink, "rank_components",
        "Every rank's iteration window split into the components of end_to_end, which add up to "
        "the window: compute by phase.class, exposed_comm, straggler_wait, exposed_memcpy, "
        "data_loading, host_sync, host_optimizer, host_stall, host_late, launch_overhead, "
        "graph_gap, idle",
        {{"rank", I, "rank"},
         {"iteration", I, "iteration window"},
         {"component", T, "as in end_to_end"},
         {"time_ns", I, "time"},
         {"share", R, "of the rank's iteration window"}});
    for (const RankAnalysis& r : ra.ranks)
      for (const auto& [it, comp] : r.components) {
        Ns total = 0;
        for (const auto& [k, v] : comp) total += v;
        for (const auto& [k, v] : comp)
          t.add_row({Cell::of(r.rank), Cell::of(it), Cell::of(k), Cell::of(v), share(v, total)});
      }
    t.end();
  }
  // end_to_end
  {
    Rows t = make(
        sink, "end_to_end",
        "The shown rank's iteration time (iterations.shown_rank) split into components that add "
        "up to it: compute "
        "by phase.class (union, no double counting), exposed_comm, straggler_wait, exposed_memcpy, "
        "data_loading, host_sync, host_optimizer, host_stall, host_late, launch_overhead, "
        "graph_gap, idle",
        {{"iteration", I, "ProfilerStep number"},
         {"rank", I, "the shown rank (iterations.shown_rank)"},
         {"component", T,
          "phase.class, exposed_comm, straggler_wait, exposed_memcpy, data_loading, host_sync, "
          "host_optimizer, host_stall, host_late, launch_overhead, graph_gap or idle"},
         {"time_ns", I, "time"},
         {"share", R, "of the iteration time"},
         {"per_token_ns", R, "time_ns / tokens (NULL = tokens unknown)"}});
    for (const IterationRow& x : ra.iterations)
      for (const auto& [name, ns] : x.components)
        t.add_row({Cell::of(x.iteration), Cell::of(x.slowest_rank), Cell::of(name), Cell::of(ns),
                   share(ns, x.time_ns),
                   x.tokens > 0 ? Cell::of(static_cast<double>(ns) / static_cast<double>(x.tokens))
                                : Cell::null()});
    t.end();
  }
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

std::string analysis_summary(const RunAnalysis& ra, const AnalysisOptions& o, const Findings& f) {
  std::string s;
  size_t ok = 0;
  for (const RankAnalysis& r : ra.ranks) ok += r.ok ? 1 : 0;
  if (ra.iterations.empty()) {
    s += "No iterations found (no ProfilerStep#N ranges); see the whole-trace rows of "
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
