// The sections of `chopper report` on time: the run summary, the findings, where the iteration
// time goes, throughput, the waterfall and launch overhead.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/end_to_end.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {

namespace {

// The names of columns (a figure's series, a CSV header).
template <class C, size_t N>
std::vector<std::string> col_names(const std::array<C, N>& cols) {
  std::vector<std::string> out;
  for (const C& c : cols) out.emplace_back(c.h.name);
  return out;
}

// Which rank the iteration figures show and why (iterations.slowest_rank is NULL where the
// ranks are equal within noise; shown_rank is the rank shown).
std::string shown_rank_label(const View<kIterationsTable>& it) {
  size_t sig = 0;
  std::set<int64_t> ranks;
  for (size_t r = 0; r < it.rows(); ++r) {
    sig += it.null(r, "slowest_rank") ? 0 : 1;
    ranks.insert(it.i(r, "shown_rank"));
  }
  std::string shown;
  for (int64_t k : ranks) shown += (shown.empty() ? "" : ", ") + std::to_string(k);
  if (it.rows() > 0 && it.i(0, "ranks") == 1 && ranks.size() == 1)
    return "rank " + shown + ", the only rank";
  if (sig == it.rows()) return "slowest rank " + shown;
  if (sig == 0) return "rank " + shown + ": ranks equal within noise, showing the lowest rank";
  return fmt::format("rank {}: the significantly slowest in {} of {} iterations, else the lowest",
                     shown, sig, it.rows());
}

}  // namespace

void summary_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kIterationsTable> it(ts);
  doc.section("summary", "Run summary");
  std::string s = "<table class=\"kv\">";
  auto kv = [&s](const std::string& k, const std::string& v) {
    s += "<tr><th>" + esc(k) + "</th><td>" + v + "</td></tr>";
  };
  kv("run", esc(info.title));
  if (!info.device.empty()) kv("device", esc(info.device));
  if (it.rows() > 0) {
    double t = 0, tps = 0, tpt = 0, mfu = 0, tfl = 0, cov = 0;
    size_t mfu_n = 0, tok_n = 0, tfl_n = 0;
    int64_t ranks = 0;
    for (size_t r = 0; r < it.rows(); ++r) {
      t += it.d(r, "time_ns");
      ranks = std::max(ranks, it.i(r, "ranks"));
      if (!it.null(r, "tokens_per_s"))
        tps += it.d(r, "tokens_per_s"), tpt += it.d(r, "time_per_token_ns"), ++tok_n;
      if (!it.null(r, "mfu")) mfu += it.d(r, "mfu"), ++mfu_n;
      if (!it.null(r, "tflops_per_gpu")) tfl += it.d(r, "tflops_per_gpu"), ++tfl_n;
      cov += it.d(r, "flops_coverage_share");
    }
    const double n = static_cast<double>(it.rows());
    kv("ranks", std::to_string(ranks));
    kv("iterations", fmt::format("{} ({}..{})", it.rows(), it.i(0, "iteration"),
                                 it.i(it.rows() - 1, "iteration")));
    kv("iteration time (" + shown_rank_label(it) + ", mean)", ms_text(t / n));
    if (tok_n > 0) {
      kv("tokens per second (mean)", fmt::format("{:.0f}", tps / static_cast<double>(tok_n)));
      kv("time per token (mean)", fmt::format("{:.3f} µs", tpt / static_cast<double>(tok_n) / 1e3));
    } else {
      kv("tokens per second", "unknown (give --tokens-per-step)");
    }
    if (tfl_n > 0)
      kv("TFLOP/s per GPU (mean)", fmt::format("{:.1f}", tfl / static_cast<double>(tfl_n)));
    if (mfu_n > 0)
      kv("MFU (mean)", fmt::format("{:.1f}% (FLOPs known for {:.0f}% of compute time)",
                                   100 * mfu / static_cast<double>(mfu_n), 100 * cov / n));
    else if (tfl_n > 0)
      kv("MFU",
         fmt::format("not given: FLOPs known for only {:.0f}% of compute time (below {:.0f}%)",
                     100 * cov / n, 100 * kMfuMinCoverage));
  } else if (View<kTemporalBreakdownTable>(ts).rows() == 0) {
    // no GPU timeline at all: ProfilerStep ranges may be there, but nothing ran on a GPU in them
    kv("iterations",
       "none: the trace holds host operations only (no kernel, copy or memset), "
       "so there is no GPU time to break down and the figures are empty");
  } else {
    kv("iterations", "none found (no ProfilerStep#N ranges): the per-iteration figures are empty");
  }
  kv("made by", "<code>" + esc(info.command) + "</code>");
  doc.body += s + "</table>\n";
}

namespace {

// Where each finding's evidence is drawn.
std::string evidence_figure(const std::string& kind) {
  static const std::map<std::string, std::string> m = {{"exposed_comm", "fig-e2e"},
                                                       {"straggler", "fig-straggler-lead"},
                                                       {"host_stall", "fig-launch"},
                                                       {"data_loading", "fig-launch"},
                                                       {"host_sync", "fig-launch"},
                                                       {"host_optimizer", "fig-launch"},
                                                       {"host_late", "fig-launch"},
                                                       {"launch_overhead", "fig-launch"},
                                                       {"graph_gap", "fig-launch"},
                                                       {"idle", "fig-idle"},
                                                       {"exposed_memcpy", "fig-split"},
                                                       {"dvfs", "fig-clock"},
                                                       {"utilization", "fig-waterfall-phase"},
                                                       {"comm_slowdown", "fig-waterfall-phase"},
                                                       {"host_serial", "fig-cpu"},
                                                       {"loader_saturated", "fig-cpu"}};
  auto it = m.find(kind);
  return it == m.end() ? "fig-e2e" : it->second;
}

}  // namespace

void findings_section(Doc& doc, const TableStore& ts) {
  const View<kFindingsTable> f(ts);
  doc.section("findings", "Findings",
              "Each loss, largest first, with what it costs the shown rank's iteration (mean over "
              "iterations) and the figure its evidence is in. A finding is significant when a "
              "one-sided Student t test puts its mean above 1% of the iteration at 97.5% "
              "(from one iteration, with no variance: when above 1% alone).");
  if (f.rows() == 0) {
    doc.empty_note("No findings: the run has no iterations, or no loss was measured.");
    return;
  }
  std::vector<size_t> order = all_rows(f);
  std::stable_sort(order.begin(), order.end(), [&f](size_t a, size_t b) {
    const bool sa = f.i(a, "significant") == 1, sb = f.i(b, "significant") == 1;
    if (sa != sb) return sa;
    return f.d(a, "cost_ns") > f.d(b, "cost_ns");
  });
  StackedBars c;
  c.horizontal = true;
  c.scale = kMs;
  c.value_label = "cost per iteration (ms)";
  c.category_label = "finding";
  c.series = {"significant", "not significant"};
  c.series_colors = {"#e15759", "#bab0ac"};
  for (size_t r : order) {
    const std::string key = f.s(r, "finding");
    const int64_t rank = f.i(r, "rank");
    c.categories.push_back(f.s(r, "title") +
                           (rank != kNull ? fmt::format(" (rank {})", rank) : ""));
    c.cat_attrs.push_back(fmt::format(" data-finding=\"{}\" data-rank=\"{}\"", esc(key),
                                      rank == kNull ? std::string() : std::to_string(rank)));
    const bool sig = f.i(r, "significant") == 1;
    const double cost = f.d(r, "cost_ns");
    c.values.push_back({sig ? cost : std::nan(""), sig ? std::nan("") : cost});
  }
  doc.figure({"fig-findings", "findings", "Findings by cost", stacked_bars(c),
              "Mean time each loss takes from the shown rank's iteration (cost_ns), red when "
              "significant. Decided by the findings analysis (analysis/findings); the report only "
              "draws the findings table.",
              "Findings (`findings`, `analyze --json`)", csv_of(f.table(), order), ""});
  std::string t =
      "<table class=\"findings\"><tr><th>finding</th><th>rank</th><th>cost / iteration</th>"
      "<th>share</th><th>confidence</th><th>energy / iteration</th><th>evidence</th>"
      "<th>what to try</th></tr>";
  for (size_t r : order) {
    const std::string key = f.s(r, "finding");
    const bool sig = f.i(r, "significant") == 1;
    const int64_t rank = f.i(r, "rank");
    t += fmt::format(
        "<tr class=\"{}\" data-finding=\"{}\" data-cost-ns=\"{}\"><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{:.1f}%</td><td>{}</td><td>{}</td><td>{} <a "
        "href=\"#{}\">(figure)</a></td><td>{}</td></tr>",
        sig ? "sig" : "insig", esc(key), num(f.d(r, "cost_ns")), esc(f.s(r, "title")),
        rank == kNull ? "shown" : std::to_string(rank), ms_text(f.d(r, "cost_ns")),
        100 * f.d(r, "cost_share"),
        f.null(r, "confidence") ? std::string("none: one iteration, no variance")
                                : fmt::format("{:.0f}%", 100 * f.d(r, "confidence")),
        f.null(r, "energy_j") ? std::string("–") : label_num(f.d(r, "energy_j")) + " J",
        esc(f.s(r, "evidence")), evidence_figure(key), esc(f.s(r, "suggestion")));
  }
  doc.body += t + "</table>\n";
}

namespace {

// The components of an end_to_end-like table (a `component` column) in drawing order: compute
// parts (phase.class) first, then the losses in the order the summary uses, then any other.
template <class V>
std::vector<std::string> component_order(const V& v) {
  std::vector<std::string> names;
  for (size_t r = 0; r < v.rows(); ++r) names.push_back(v.s(r, "component"));
  names = sorted_unique_s(std::move(names));
  std::vector<std::string> order;
  for (const std::string& n : names)
    if (n.find('.') != std::string::npos) order.push_back(n);
  for (const char* k :
       {"exposed_comm", "straggler_wait", "exposed_memcpy", "data_loading", "host_sync",
        "host_optimizer", "host_stall", "host_late", "launch_overhead", "graph_gap", "idle"})
    if (std::binary_search(names.begin(), names.end(), std::string(k))) order.emplace_back(k);
  for (const std::string& n : names)
    if (std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  return order;
}

// end_to_end: one bar per iteration of the rank shown.
void end_to_end_figure(Doc& doc, const TableStore& ts) {
  const View<kEndToEndTable> e(ts);
  if (e.rows() > 0) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time of the rank shown (ms)";
    c.category_label =
        "iteration (rank shown: " + shown_rank_label(View<kIterationsTable>(ts)) + ")";
    std::map<int64_t, size_t> cat;
    std::map<std::string, size_t> ser;
    const std::vector<std::string> order = component_order(e);
    for (size_t k = 0; k < order.size(); ++k) {
      ser[order[k]] = k;
      c.series.push_back(order[k]);
      c.series_colors.push_back(component_color(order[k]));
    }
    for (size_t r = 0; r < e.rows(); ++r) {
      const int64_t i = e.i(r, "iteration");
      if (!cat.count(i)) {
        cat[i] = c.categories.size();
        c.categories.push_back(fmt::format("{} (rank {})", i, e.i(r, "rank")));
        c.cat_attrs.push_back(
            fmt::format(" data-iteration=\"{}\" data-rank=\"{}\"", i, e.i(r, "rank")));
        c.values.emplace_back(order.size(), std::nan(""));
      }
      c.values[cat[i]][ser[e.s(r, "component")]] = e.d(r, "time_ns");
    }
    doc.figure({"fig-e2e", "end_to_end", "Iteration time split (rank shown)", stacked_bars(c),
                "Each iteration's time on the rank shown (the significantly slowest rank, else "
                "the lowest: iterations.shown_rank), split into parts that add up to it: "
                "compute by phase.class (the union of compute kernels, no double counting), "
                "exposed communication, waiting for a straggler, exposed copies, host stall, host "
                "late, launch overhead, graph gaps and other idle (end_to_end.time_ns).",
                "End to end (`iterations`, `end_to_end`)", csv_of(e.table(), all_rows(e)), ""});
  }
}

// rank_components: every rank's split into the end-to-end components.
void rank_components_figure(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kRankComponentsTable> rc(ts);
  std::vector<int64_t> rc_ranks;
  for (size_t r = 0; r < rc.rows(); ++r) rc_ranks.push_back(rc.i(r, "rank"));
  rc_ranks = sorted_unique(rc_ranks);
  if (rc.rows() > 0 && rc_ranks.size() <= info.many_ranks) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time (ms)";
    c.category_label = "rank / iteration";
    const std::vector<std::string> order = component_order(rc);
    std::map<std::string, size_t> ser;
    for (size_t k = 0; k < order.size(); ++k) {
      ser[order[k]] = k;
      c.series.push_back(order[k]);
      c.series_colors.push_back(component_color(order[k]));
    }
    std::map<std::pair<int64_t, int64_t>, size_t> cat;
    for (size_t r = 0; r < rc.rows(); ++r) {
      const std::pair<int64_t, int64_t> key{rc.i(r, "rank"), rc.i(r, "iteration")};
      if (!cat.count(key)) {
        cat[key] = c.categories.size();
        c.categories.push_back(fmt::format("r{} i{}", key.first, key.second));
        c.cat_attrs.push_back(
            fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", key.first, key.second));
        c.values.emplace_back(order.size(), std::nan(""));
      }
      c.values[cat[key]][ser[rc.s(r, "component")]] = rc.d(r, "time_ns");
    }
    doc.figure({"fig-rank-e2e", "rank_components",
                "Iteration time split per rank and iteration, by cause", stacked_bars(c),
                "Every rank's iteration window split into the same parts as the shown rank's "
                "above (compute by phase.class, exposed communication, waiting for a straggler, "
                "exposed copies, host stall, host late, launch latency, graph gaps, idle), adding "
                "up to the window (rank_components.time_ns).",
                "End to end (`iterations`, `end_to_end`)", csv_of(rc.table(), all_rows(rc)), ""});
  }
}

// The ranks and iterations of temporal_breakdown's iteration rows (sorted, unique), which the idle
// figure shares.
struct RankIterations {
  std::vector<int64_t> ranks, iters;
};

// temporal_breakdown per rank and iteration: bars, or a heatmap with many ranks.
RankIterations split_figure(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTemporalBreakdownTable> b(ts);
  std::vector<size_t> rows;
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration")) {
      rows.push_back(r);
      ranks.push_back(b.i(r, "rank"));
      iters.push_back(b.i(r, "iteration"));
    }
  ranks = sorted_unique(ranks);
  iters = sorted_unique(iters);
  if (!rows.empty() && ranks.size() <= info.many_ranks) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "time (ms)";
    c.category_label = "rank / iteration";
    c.series = {"compute", "exposed_comm", "exposed_memcpy", "other non-compute", "idle"};
    for (const std::string& s : c.series) c.series_colors.push_back(component_color(s));
    std::vector<size_t> order = rows;
    std::sort(order.begin(), order.end(), [&b](size_t x, size_t y) {
      return std::pair(b.i(x, "rank"), b.i(x, "iteration")) <
             std::pair(b.i(y, "rank"), b.i(y, "iteration"));
    });
    for (size_t r : order) {
      const int64_t rk = b.i(r, "rank"), it = b.i(r, "iteration");
      c.categories.push_back(fmt::format("r{} i{}", rk, it));
      c.cat_attrs.push_back(fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", rk, it));
      const double comp = b.d(r, "compute_ns"), ec = b.d(r, "exposed_comm_ns"),
                   em = b.d(r, "exposed_memcpy_ns"), nc = b.d(r, "non_compute_ns"),
                   idle = b.d(r, "idle_ns");
      c.values.push_back({comp, ec, em, nc - ec - em, idle});
    }
    doc.figure(
        {"fig-split", "temporal_breakdown", "Time split per rank and iteration", stacked_bars(c),
         "Each rank's iteration window split into compute (the union of compute kernels), "
         "exposed communication (communication with no compute under it), exposed copies, "
         "other non-compute (non_compute_ns − the two exposed parts) and idle "
         "(temporal_breakdown, iteration rows).",
         "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv_of(b.table(), order), ""});
  } else if (!rows.empty()) {
    Heatmap h = rank_iter_grid(ranks, iters, "compute share", 1);
    h.lo = 0, h.hi = 1, h.lo_name = "0 (no compute)", h.hi_name = "1 (all compute)";
    for (size_t r : rows) {
      const size_t ri = static_cast<size_t>(
          std::lower_bound(ranks.begin(), ranks.end(), b.i(r, "rank")) - ranks.begin());
      const size_t ci = static_cast<size_t>(
          std::lower_bound(iters.begin(), iters.end(), b.i(r, "iteration")) - iters.begin());
      h.values[ri][ci] = b.null(r, "compute_share") ? std::nan("") : b.d(r, "compute_share");
    }
    doc.figure(
        {"fig-split", "temporal_breakdown", "Compute share per rank and iteration", heatmap(h),
         "compute_ns / total_ns of each rank's iteration window (temporal_breakdown). With "
         "this many ranks a heatmap replaces the per-rank bars; the CSV has every part.",
         "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv_of(b.table(), rows), ""});
  }
  return {ranks, iters};
}

}  // namespace

void time_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  doc.section("time", "Where the iteration time goes");
  const size_t figures = doc.ids.size();
  end_to_end_figure(doc, ts);
  rank_components_figure(doc, ts, info);
  const RankIterations ri = split_figure(doc, ts, info);
  idle_figures(doc, ts, info, ri.ranks, ri.iters);
  if (doc.ids.size() == figures)  // a heading over nothing read as a page that failed to draw
    doc.empty_note(
        "No iteration time to split: no GPU activity ran in an iteration (temporal_breakdown, "
        "rank_components and end_to_end are empty; the run summary above says why).");
}

void throughput_section(Doc& doc, const TableStore& ts) {
  const View<kIterationsTable> it(ts);
  if (it.rows() == 0) return;
  doc.section("throughput", "Throughput: tokens per second and time per token");
  bool tokens = false;
  for (size_t r = 0; r < it.rows(); ++r) tokens = tokens || !it.null(r, "tokens_per_s");
  StackedBars c;
  c.category_label = "iteration";
  using Col = View<kIterationsTable>::Col;
  const Col shown = tokens ? Col("tokens_per_s") : Col("time_ns");
  c.series = {std::string(shown.h.name)};
  if (tokens) {
    c.value_label = "tokens per second (tokens/s)";
    c.series_names = {"tokens per second (tokens/s)"};
  } else {
    c.value_label = "iteration time (ms)";
    c.series_names = {"iteration time (ms)"};
    c.scale = kMs;
  }
  std::string t =
      "<table><tr><th>iteration</th><th>time</th><th>tokens/s</th><th>time per "
      "token</th><th>TFLOP/s per GPU</th><th>MFU</th></tr>";
  for (size_t r = 0; r < it.rows(); ++r) {
    const int64_t i = it.i(r, "iteration");
    c.categories.push_back(std::to_string(i));
    c.cat_attrs.push_back(fmt::format(" data-iteration=\"{}\"", i));
    c.values.push_back({it.d(r, shown)});
    auto cell = [&](Col col, double mul, const char* f) {
      return it.null(r, col) ? std::string("–") : fmt::format(fmt::runtime(f), it.d(r, col) * mul);
    };
    t += fmt::format(
        "<tr data-iteration=\"{}\" data-time-per-token-ns=\"{}\"><td>{}</td><td>{}</td><td>{}"
        "</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        i, num(it.d(r, "time_per_token_ns")), i, ms_text(it.d(r, "time_ns")),
        cell("tokens_per_s", 1, "{:.0f}"), cell("time_per_token_ns", 1e-3, "{:.3f} µs"),
        cell("tflops_per_gpu", 1, "{:.1f}"), cell("mfu", 100, "{:.1f}%"));
  }
  doc.figure({"fig-throughput", "iterations",
              tokens ? "Tokens per second per iteration" : "Iteration time (tokens unknown)",
              stacked_bars(c),
              tokens ? "Tokens per step (--tokens-per-step) divided by the shown rank's "
                       "iteration time (iterations.tokens_per_s); the table below gives the "
                       "time per token (time / tokens)."
                     : "The shown rank's iteration time (iterations.time_ns); give "
                       "--tokens-per-step for tokens per second and time per token.",
              "End to end (`iterations`, `end_to_end`)", csv_of(it.table(), all_rows(it)), ""});
  doc.body += t + "</table>\n";
}

namespace {

// The rank shown in each iteration (iterations table): the significantly slowest, else the lowest.
std::map<int64_t, int64_t> slowest_ranks(const TableStore& ts) {
  const View<kIterationsTable> it(ts);
  std::map<int64_t, int64_t> m;
  for (size_t r = 0; r < it.rows(); ++r) m[it.i(r, "iteration")] = it.i(r, "shown_rank");
  return m;
}

const std::array<View<kWaterfallTable>::Col, 6> kPartCols = {"theoretical_ns", "instruction_ns",
                                                             "utilization_ns", "overlap_ns",
                                                             "frequency_ns",   "residual_ns"};
const std::vector<std::string> kParts = col_names(kPartCols);
const std::vector<std::string> kPartNames = {"theoretical (ms)", "instruction (ms)",
                                             "utilization (ms)", "overlap (ms)",
                                             "frequency (ms)",   "residual (ms)"};
const std::vector<std::string> kPartColors = {"#59a14f", "#b07aa1", "#f28e2b",
                                              "#e15759", "#4e79a7", "#bab0ac"};

}  // namespace

void waterfall_section(Doc& doc, const TableStore& ts) {
  const View<kWaterfallTable> w(ts);
  doc.section("waterfall", "Waterfall: from theoretical to observed compute time");
  if (w.rows() == 0) {
    doc.empty_note("No waterfall: the run has no compute kernels with labels.");
    return;
  }
  const std::map<int64_t, int64_t> slow = slowest_ranks(ts);
  cascade_figure(doc, ts);
  StackedBars c;
  c.horizontal = true;
  c.scale = kMs;
  c.value_label = "compute time (ms)";
  c.category_label = "iteration · phase";
  c.series = kParts;
  c.series_names = kPartNames;
  c.series_colors = kPartColors;
  std::vector<size_t> rows;
  for (size_t r = 0; r < w.rows(); ++r) {
    if (w.null(r, "iteration") || w.null(r, "phase") || !w.null(r, "operation")) continue;
    auto s = slow.find(w.i(r, "iteration"));
    if (s == slow.end() || s->second != w.i(r, "rank")) continue;
    rows.push_back(r);
    c.categories.push_back(
        fmt::format("i{} {} (rank {})", w.i(r, "iteration"), w.s(r, "phase"), w.i(r, "rank")));
    c.cat_attrs.push_back(fmt::format(
        " data-rank=\"{}\" data-iteration=\"{}\" data-phase=\"{}\" data-observed=\"{}\"",
        w.i(r, "rank"), w.i(r, "iteration"), esc(w.s(r, "phase")), w.i(r, "observed_ns")));
    std::vector<double> v;
    for (const auto& p : kPartCols) v.push_back(w.d(r, p));
    c.values.push_back(v);
  }
  if (!rows.empty())
    doc.figure({"fig-waterfall-phase", "waterfall", "Waterfall per phase (rank shown)",
                stacked_bars(c),
                "Σ kernel time of each phase of the shown rank's iteration split additively "
                "into the theoretical time (FLOPs or bytes at peak and maximum clock), "
                "instruction overhead, matrix-unit/memory under-use, slowdown beside "
                "communication, clock below maximum (DVFS) and the residual; the parts add up to "
                "observed_ns (waterfall, phase rows). Without telemetry or counters the parts "
                "that need them are 0 and their kernels counted in the table's unknown_* columns "
                "(chopper.sqlite).",
                "Waterfall (`waterfall`)", csv_of(w.table(), rows), ""});
  // per operation: the slowest rank of the last iteration, summed over layers
  if (slow.empty()) return;
  const int64_t it = slow.rbegin()->first, rank = slow.rbegin()->second;
  std::map<std::pair<std::string, std::string>, std::vector<double>> ops;
  for (size_t r = 0; r < w.rows(); ++r) {
    if (w.null(r, "operation") || w.i(r, "iteration") != it || w.i(r, "rank") != rank) continue;
    auto& v = ops[{w.s(r, "phase"), w.s(r, "operation")}];
    v.resize(kParts.size() + 1);
    for (size_t k = 0; k < kPartCols.size(); ++k) v[k] += w.d(r, kPartCols[k]);
    v[kParts.size()] += w.d(r, "observed_ns");
  }
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<double>>> top(ops.begin(),
                                                                                       ops.end());
  std::stable_sort(top.begin(), top.end(),
                   [](const auto& a, const auto& b) { return a.second.back() > b.second.back(); });
  if (top.size() > 20) top.resize(20);
  StackedBars o = c;
  o.categories.clear(), o.cat_attrs.clear(), o.values.clear();
  o.category_label = "operation · phase";
  std::vector<std::string> hdr = {"rank", "iteration", "phase", "operation"};
  for (const std::string& p : kParts) hdr.push_back(p);
  hdr.push_back("observed_ns");
  Csv csv(hdr);
  for (const auto& kv : top) {
    o.categories.push_back(kv.first.second + " · " + kv.first.first);
    o.cat_attrs.push_back(
        fmt::format(" data-phase=\"{}\" data-operation=\"{}\" data-observed=\"{}\"",
                    esc(kv.first.first), esc(kv.first.second), num(kv.second.back())));
    o.values.emplace_back(kv.second.begin(), kv.second.end() - 1);
    std::vector<std::string> row = {std::to_string(rank), std::to_string(it), kv.first.first,
                                    kv.first.second};
    for (double v : kv.second) row.push_back(num(v));
    csv.add(row);
  }
  doc.figure({"fig-waterfall-op", "waterfall",
              "Waterfall per operation (rank shown, last iteration)", stacked_bars(o),
              "The same parts per operation of the last iteration's slowest rank, summed over "
              "its layers (waterfall, operation rows), the 20 operations with the most "
              "observed time.",
              "Waterfall (`waterfall`)", csv.text, "waterfall operation rows summed over layers"});
}

void launch_section(Doc& doc, const TableStore& ts) {
  const View<kLaunchOverheadTable> l(ts);
  if (l.rows() == 0) return;
  doc.section("launch", "Launch overhead per operation");
  const std::array<View<kLaunchOverheadTable>::Col, 6> part_cols = {
      "prep_ns", "call_ns", "wait_ns", "graph_gap_ns", "gpu_wait_ns", "no_launch_ns"};
  const std::vector<std::string> parts = col_names(part_cols);
  // Summed per operation's dictionary entry (the last slot: no operation), no text compared a
  // row; then by name, as "(none)" for the rows without one.
  const std::span<const uint32_t> opc = l.codes("operation");
  const size_t n_ops = l.entries("operation");
  std::vector<std::vector<double>> sums(n_ops + 1);
  std::vector<int64_t> ranks, iters;
  for (size_t r = 0; r < l.rows(); ++r) {
    // a rank's rows come together: its value once per run of rows (sorted_unique does the rest)
    if (const int64_t rk = l.i(r, "rank"); ranks.empty() || ranks.back() != rk) ranks.push_back(rk);
    if (!l.null(r, "iteration"))
      if (const int64_t it = l.i(r, "iteration"); iters.empty() || iters.back() != it)
        iters.push_back(it);
    auto& v = sums[opc[r] == Table::kNoText ? n_ops : opc[r]];
    v.resize(parts.size() + 2);
    for (size_t k = 0; k < parts.size(); ++k) v[k] += l.d(r, part_cols[k]);
    v[parts.size()] += l.d(r, "launch_overhead_ns");
    v[parts.size() + 1] += l.d(r, "kernels");
  }
  std::map<std::string_view, std::vector<double>> ops;  // the table's own text, not copied
  for (size_t k = 0; k <= n_ops; ++k)
    if (!sums[k].empty()) {
      const std::string_view name =
          k == n_ops ? std::string_view("(none)") : l.entry("operation", static_cast<uint32_t>(k));
      auto [it, fresh] = ops.try_emplace(name, sums[k]);
      if (!fresh)  // an operation called "(none)" and rows without one: one bar, as named
        for (size_t j = 0; j < it->second.size(); ++j) it->second[j] += sums[k][j];
    }
  const double n = static_cast<double>(sorted_unique(ranks).size() *
                                       std::max<size_t>(1, sorted_unique(iters).size()));
  // the operations with the largest gaps (all causes), those with none left out
  std::vector<std::pair<std::string, std::vector<double>>> top;
  for (const auto& kv : ops) {
    double gap = 0;
    for (size_t k = 0; k < parts.size(); ++k) gap += kv.second[k];
    if (gap > 0) top.emplace_back(std::string(kv.first), kv.second);
  }
  std::stable_sort(top.begin(), top.end(), [&parts](const auto& a, const auto& b) {
    double ga = 0, gb = 0;
    for (size_t k = 0; k < parts.size(); ++k) ga += a.second[k], gb += b.second[k];
    return ga > gb;
  });
  if (top.size() > 20) top.resize(20);
  StackedBars c;
  c.horizontal = true;
  c.scale = 1e3;
  c.value_label = "gap before the operation's kernels, mean per rank and iteration (µs)";
  c.category_label = "operation";
  c.series = {"prep (host late)", "call (launch latency)", "wait", "graph gap", "gpu wait",
              "no launch"};
  c.series_colors = {"#edc948", "#f28e2b", "#9c755f", "#76b7b2", "#e15759", "#bab0ac"};
  std::vector<std::string> hdr = {"operation"};
  for (const std::string& p : parts) hdr.push_back(p);
  hdr.insert(hdr.end(), {"launch_overhead_ns", "kernels", "rank_iterations"});
  Csv csv(hdr);
  for (const auto& kv : top) {
    c.categories.push_back(kv.first);
    c.cat_attrs.push_back(fmt::format(" data-operation=\"{}\" data-sum-launch-overhead-ns=\"{}\"",
                                      esc(kv.first), num(kv.second[parts.size()])));
    std::vector<double> v;
    for (size_t k = 0; k < parts.size(); ++k) v.push_back(kv.second[k] / n);
    c.values.push_back(v);
    std::vector<std::string> row = {kv.first};
    for (double x : kv.second) row.push_back(num(x));
    row.push_back(num(n));
    csv.add(row);
  }
  doc.figure({"fig-launch", "launch_overhead", "Launch overhead per operation", stacked_bars(c),
              fmt::format("GPU idle before the compute kernels of each operation, split by cause "
                          "(launch_overhead summed over ranks, iterations, phases and layers, "
                          "divided by the {} rank-iterations): prep = the host had not issued the "
                          "launch yet, call = launch latency, wait = launched but waiting on the "
                          "GPU, graph gap = between a graph's kernels, gpu wait = communication or "
                          "copies ran. The 20 operations with the largest gaps.",
                          num(n)),
              "Launch overhead (`launch_overhead`)", csv.text,
              "launch_overhead summed per operation"});
}

}  // namespace chopper::html
