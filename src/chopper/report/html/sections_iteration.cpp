// The report's figures of the whole iteration (report/html/html_common.hpp): the iteration's
// cascade from theoretical compute to the observed time (fig-waterfall), and the rank's idle as
// the iteration split defines it (fig-idle) with per-stream idle as a secondary view
// (fig-idle-streams). Presentation only: every number is a table's.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/end_to_end.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper::html {
namespace {

// The waterfall's parts, in its columns' order.
const std::array<View<kWaterfallTable>::Col, 6> kPartCols = {"theoretical_ns", "instruction_ns",
                                                             "utilization_ns", "overlap_ns",
                                                             "frequency_ns",   "residual_ns"};

// The rank's idle as the iteration split defines it (temporal_breakdown.idle_ns: no activity on
// any stream of the rank), split by cause as rank_components names it (its host, launch and idle
// components add up to it).
void rank_idle_figure(Doc& doc, const TableStore& ts, const ReportInfo& info,
                      const std::vector<int64_t>& ranks, const std::vector<int64_t>& iters) {
  const View<kTemporalBreakdownTable> b(ts);
  const View<kRankComponentsTable> rc(ts);
  static const std::vector<std::string> kCauses = {"data_loading", "host_sync", "host_optimizer",
                                                   "host_stall",   "host_late", "launch_overhead",
                                                   "graph_gap",    "idle"};
  std::map<std::pair<int64_t, int64_t>, std::vector<double>> cause;
  for (size_t r = 0; r < rc.rows(); ++r) {
    const auto k = std::find(kCauses.begin(), kCauses.end(), rc.s(r, "component"));
    if (k == kCauses.end()) continue;
    auto& v = cause[{rc.i(r, "rank"), rc.i(r, "iteration")}];
    v.resize(kCauses.size());
    v[static_cast<size_t>(k - kCauses.begin())] += rc.d(r, "time_ns");
  }
  std::vector<size_t> rows;
  double total = 0;
  for (size_t r = 0; r < b.rows(); ++r)
    if (!b.null(r, "iteration")) rows.push_back(r), total += b.d(r, "idle_ns");
  if (rows.empty()) return;
  std::sort(rows.begin(), rows.end(), [&b](size_t x, size_t y) {
    return std::pair(b.i(x, "rank"), b.i(x, "iteration")) <
           std::pair(b.i(y, "rank"), b.i(y, "iteration"));
  });
  std::vector<std::string> hdr = {"rank", "iteration", "idle_ns"};
  for (const std::string& k : kCauses) hdr.push_back(k + "_ns");
  Csv csv(hdr);
  for (size_t r : rows) {
    const auto key = std::pair(b.i(r, "rank"), b.i(r, "iteration"));
    std::vector<std::string> row = {std::to_string(key.first), std::to_string(key.second),
                                    num(b.d(r, "idle_ns"))};
    const auto cs = cause.find(key);
    for (size_t k = 0; k < kCauses.size(); ++k)
      row.push_back(cs == cause.end() ? std::string() : num(cs->second[k]));
    csv.add(row);
  }
  const std::string what = fmt::format(
      "The rank's idle as the iteration split defines it: time of the iteration window with no "
      "activity on any of the rank's streams (temporal_breakdown.idle_ns, {} over all ranks and "
      "iterations)",
      ms_text(total));
  if (ranks.size() <= info.many_ranks) {
    StackedBars c;
    c.scale = kMs;
    c.value_label = "rank idle: no activity on any stream (ms)";
    c.category_label = "rank / iteration";
    c.series = kCauses;
    for (const std::string& k : kCauses) c.series_colors.push_back(component_color(k));
    for (size_t r : rows) {
      const auto key = std::pair(b.i(r, "rank"), b.i(r, "iteration"));
      c.categories.push_back(fmt::format("r{} i{}", key.first, key.second));
      c.cat_attrs.push_back(fmt::format(" data-rank=\"{}\" data-iteration=\"{}\" data-idle=\"{}\"",
                                        key.first, key.second, num(b.d(r, "idle_ns"))));
      const auto cs = cause.find(key);
      if (cs != cause.end()) {
        c.values.push_back(cs->second);
      } else {  // no cause known: all of it "idle"
        std::vector<double> v(kCauses.size(), 0);
        v.back() = b.d(r, "idle_ns");
        c.values.push_back(v);
      }
    }
    doc.figure({"fig-idle", "temporal_breakdown", "Rank idle per rank and iteration, by cause",
                stacked_bars(c),
                what + ", split by cause as the end-to-end split names it (rank_components: "
                       "data loading, host sync, host optimizer, host stall, host late, launch "
                       "overhead, graph gaps, other idle; they add up to idle_ns). Per-stream "
                       "idle is the secondary view below.",
                "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv.text,
                "temporal_breakdown.idle_ns with rank_components' idle causes"});
  } else {
    Heatmap h = rank_iter_grid(ranks, iters, "rank idle (ms)", kMs);
    h.lo = 0;
    h.lo_name = "0";
    for (size_t r : rows) {
      const size_t ri = static_cast<size_t>(
          std::lower_bound(ranks.begin(), ranks.end(), b.i(r, "rank")) - ranks.begin());
      const size_t ci = static_cast<size_t>(
          std::lower_bound(iters.begin(), iters.end(), b.i(r, "iteration")) - iters.begin());
      h.values[ri][ci] = b.d(r, "idle_ns");
    }
    doc.figure({"fig-idle", "temporal_breakdown", "Rank idle per rank and iteration", heatmap(h),
                what + ". With this many ranks a heatmap replaces the per-rank bars; the CSV has "
                       "the causes (rank_components). Per-stream idle is the secondary view "
                       "below.",
                "Temporal breakdown (`temporal_breakdown`, `overlap`)", csv.text,
                "temporal_breakdown.idle_ns with rank_components' idle causes"});
  }
}

// Secondary view: idle_breakdown by cause, summed over a rank's streams (one stream idles while
// another works, so the sum can exceed the rank's idle and even its window).
void stream_idle_figure(Doc& doc, const TableStore& ts, const ReportInfo& info,
                        const std::vector<int64_t>& ranks, const std::vector<int64_t>& iters) {
  const View<kIdleBreakdownTable> id(ts);
  std::map<std::pair<int64_t, int64_t>, std::array<double, 3>> idle;
  for (size_t r = 0; r < id.rows(); ++r) {
    if (id.null(r, "iteration")) continue;
    auto& a = idle[{id.i(r, "rank"), id.i(r, "iteration")}];
    a[0] += id.d(r, "host_wait_ns"), a[1] += id.d(r, "kernel_wait_ns"), a[2] += id.d(r, "other_ns");
  }
  if (!idle.empty()) {
    Csv csv({"rank", "iteration", "host_wait_ns", "kernel_wait_ns", "other_ns"});
    const bool many = ranks.size() > info.many_ranks;
    if (!many) {
      StackedBars c;
      c.scale = kMs;
      c.value_label = "Σ over streams of each stream's idle (ms)";
      c.category_label = "rank / iteration";
      c.series = {"host_wait", "kernel_wait", "other"};
      c.series_colors = {"#edc948", "#76b7b2", "#bab0ac"};
      for (const auto& kv : idle) {
        c.categories.push_back(fmt::format("r{} i{}", kv.first.first, kv.first.second));
        c.cat_attrs.push_back(fmt::format(" data-rank=\"{}\" data-iteration=\"{}\"", kv.first.first,
                                          kv.first.second));
        c.values.push_back({kv.second[0], kv.second[1], kv.second[2]});
        csv.add({std::to_string(kv.first.first), std::to_string(kv.first.second), num(kv.second[0]),
                 num(kv.second[1]), num(kv.second[2])});
      }
      doc.figure(
          {"fig-idle-streams", "idle_breakdown",
           "Secondary view: idle per stream, summed over the rank's streams", stacked_bars(c),
           "Not the rank's idle (that is the figure above): idle gaps of every stream of the "
           "rank, summed over its streams, so a stream idle while another works counts, and the "
           "sum can exceed the iteration. By cause: "
           "host_wait (the activity was launched after the stream went idle), kernel_wait "
           "(shorter than the 30 µs threshold), other (idle_breakdown).",
           "Idle by cause (`idle_breakdown`)", csv.text, "idle_breakdown summed over streams"});
    } else {
      Heatmap h = rank_iter_grid(ranks, iters, "host wait (ms)", kMs);
      h.lo = 0, h.lo_name = "0";
      for (const auto& kv : idle) {
        const auto ri = std::lower_bound(ranks.begin(), ranks.end(), kv.first.first);
        const auto ci = std::lower_bound(iters.begin(), iters.end(), kv.first.second);
        if (ri == ranks.end() || ci == iters.end()) continue;
        h.values[static_cast<size_t>(ri - ranks.begin())][static_cast<size_t>(ci - iters.begin())] =
            kv.second[0];
        csv.add({std::to_string(kv.first.first), std::to_string(kv.first.second), num(kv.second[0]),
                 num(kv.second[1]), num(kv.second[2])});
      }
      doc.figure(
          {"fig-idle-streams", "idle_breakdown",
           "Secondary view: host wait per stream, summed over the rank's streams", heatmap(h),
           "Not the rank's idle (that is the figure above): idle time whose activity was launched "
           "after the stream went idle (host_wait), "
           "summed over the rank's streams (idle_breakdown); the CSV has every cause.",
           "Idle by cause (`idle_breakdown`)", csv.text, "idle_breakdown summed over streams"});
    }
  }
}

}  // namespace

// The iteration's cascade (fig-waterfall): per iteration of the rank shown, its waterfall
// iteration row's parts, the compute the waterfall leaves out (end_to_end's compute union − the
// waterfall's Σ kernel durations: memsets, overlapping kernels counted once), then end_to_end's
// idle and exposed parts; they add up to iterations.time_ns. Drawn as the mean over iterations
// with the min–max of each part.
void cascade_figure(Doc& doc, const TableStore& ts) {
  const View<kWaterfallTable> w(ts);
  const View<kIterationsTable> it(ts);
  const View<kEndToEndTable> e(ts);
  struct Part {
    const char* name;
    const char* key;
    const char* color;
  };
  static const std::array<Part, 12> kCascade = {{
      {"theoretical compute", "theoretical_ns", "#59a14f"},
      {"instruction", "instruction_ns", "#b07aa1"},
      {"utilization", "utilization_ns", "#f28e2b"},
      {"overlap (beside communication)", "overlap_ns", "#e15759"},
      {"frequency (clock below max)", "frequency_ns", "#4e79a7"},
      {"residual (cost unknown)", "residual_ns", "#bab0ac"},
      {"other compute (memsets, concurrency)", "other_compute_ns", "#9dc3e6"},
      {"launch and host causes", "launch_host_ns", "#edc948"},
      {"other idle", "idle_ns", "#d7d7d7"},
      {"exposed copies", "exposed_memcpy_ns", "#d4a6c8"},
      {"exposed communication", "exposed_comm_ns", "#ff9da7"},
      {"waiting for a straggler", "straggler_wait_ns", "#9c755f"},
  }};
  // per iteration: the parts and the observed time
  std::map<int64_t, std::array<double, kCascade.size() + 1>> per;
  std::map<int64_t, int64_t> rank_of;
  for (size_t r = 0; r < it.rows(); ++r) rank_of[it.i(r, "iteration")] = it.i(r, "shown_rank");
  for (size_t r = 0; r < e.rows(); ++r) {
    const int64_t i = e.i(r, "iteration");
    auto& a = per.try_emplace(i).first->second;
    const std::string k = e.s(r, "component");
    const double v = e.d(r, "time_ns");
    const size_t at = k.find('.') != std::string::npos ? 6
                      : k == "idle"                    ? 8
                      : k == "exposed_memcpy"          ? 9
                      : k == "exposed_comm"            ? 10
                      : k == "straggler_wait"          ? 11
                                                       : 7;  // the host and launch causes
    a[at] += v;
  }
  if (per.empty()) return;
  for (size_t r = 0; r < w.rows(); ++r) {
    if (w.null(r, "iteration") || !w.null(r, "phase") || !w.null(r, "operation")) continue;
    auto p = per.find(w.i(r, "iteration"));
    auto rk = rank_of.find(w.i(r, "iteration"));
    if (p == per.end() || rk == rank_of.end() || rk->second != w.i(r, "rank")) continue;
    for (size_t k = 0; k < kPartCols.size(); ++k) p->second[k] = w.d(r, kPartCols[k]);
    p->second[6] -= w.d(r, "observed_ns");
  }
  for (size_t r = 0; r < it.rows(); ++r)
    if (auto p = per.find(it.i(r, "iteration")); p != per.end())
      p->second[kCascade.size()] = it.d(r, "time_ns");
  std::vector<std::string> hdr = {"iteration", "rank"};
  for (const Part& p : kCascade) hdr.emplace_back(p.key);
  hdr.emplace_back("time_ns");
  Csv csv(hdr);
  Waterfall c;
  c.scale = kMs;
  c.value_label =
      "time of the rank shown (ms), mean over " + std::to_string(per.size()) + " iterations";
  c.spread_label = "min–max over iterations";
  for (size_t k = 0; k <= kCascade.size(); ++k) {
    double sum = 0, lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& kv : per) {
      sum += kv.second[k], lo = std::min(lo, kv.second[k]), hi = std::max(hi, kv.second[k]);
    }
    WaterfallStep st;
    st.value = sum / static_cast<double>(per.size());
    st.lo = lo, st.hi = hi;
    if (k < kCascade.size()) {
      st.name = kCascade[k].name;
      st.color = kCascade[k].color;
      st.attrs = fmt::format(" data-part=\"{}\"", kCascade[k].key);
    } else {
      st.name = "observed iteration";
      st.color = "#555";
      st.total = true;
      st.attrs = " data-part=\"time_ns\"";
    }
    c.steps.push_back(st);
  }
  for (const auto& kv : per) {
    std::vector<std::string> row = {
        std::to_string(kv.first), std::to_string(rank_of.count(kv.first) ? rank_of[kv.first] : 0)};
    for (double v : kv.second) row.push_back(num(v));
    csv.add(row);
  }
  doc.figure(
      {"fig-waterfall", "waterfall",
       "The iteration's cascade: from theoretical compute to the observed iteration", waterfall(c),
       "Each bar adds to the ones above it; together they make the shown rank's iteration time "
       "(iterations.time_ns), mean over iterations, whiskers the min–max of that part over "
       "iterations. The compute parts are the waterfall's iteration row (theoretical = FLOPs or "
       "bytes at peak and maximum clock, instruction, utilization, overlap beside "
       "communication, frequency, residual; they add up to its Σ kernel durations observed_ns); "
       "other compute = end_to_end's compute union (Σ phase.class) − observed_ns (memsets, which "
       "the waterfall leaves out, less kernels that ran at the same time); then end_to_end's "
       "parts: launch and host causes (data_loading, host_sync, host_optimizer, host_stall, "
       "host_late, launch_overhead, graph_gap), other idle (idle), exposed copies, exposed "
       "communication and waiting for a straggler. Chopper's Figure on the theoretical → "
       "observed breakdown, made additive.",
       "Waterfall (`waterfall`)", csv.text,
       "per iteration: waterfall iteration row, end_to_end grouped, iterations.time_ns"});
}

void idle_figures(Doc& doc, const TableStore& ts, const ReportInfo& info,
                  const std::vector<int64_t>& ranks, const std::vector<int64_t>& iters) {
  rank_idle_figure(doc, ts, info, ranks, iters);
  stream_idle_figure(doc, ts, info, ranks, iters);
}

}  // namespace chopper::html
