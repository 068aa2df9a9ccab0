// The sections of `chopper report` on the work of the GPU time: the top kernels and operations
// with their achieved rates, the roofline of the shape classes, kernel durations per GPU as
// violins (top_kernels, roofline, kernel_durations), and hardware counters per operation
// (counter_operations).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"
#include "chopper/report/work_report.hpp"

namespace chopper::html {

namespace {

// A share as a bar in a table cell (0..1 of 100 px; not an SVG chart: no axes) with its
// percentage.
std::string share_cell(double share) {
  const double w = std::clamp(share, 0.0, 1.0) * 100;
  return fmt::format(
      "<td><span style=\"display:inline-block;width:{:.1f}px;height:8px;background:#4e79a7\">"
      "</span><span style=\"display:inline-block;width:{:.1f}px;height:8px;background:#e4e8ec\">"
      "</span> {:.1f}%</td>",
      w, 100 - w, 100 * share);
}

std::string rate_cell(const View<kTopKernelsTable>& t, size_t r, View<kTopKernelsTable>::Col c,
                      const char* f) {
  return t.null(r, c) ? std::string("<td>–</td>")
                      : fmt::format(fmt::runtime(std::string("<td>") + f + "</td>"), t.d(r, c));
}

// One level's rows of top_kernels as an HTML table.
std::string top_table(const View<kTopKernelsTable>& t, const std::vector<size_t>& rows,
                      const char* what) {
  std::string s = fmt::format(
      "<div class=\"scroll\"><table class=\"top\"><tr><th>{}</th><th>class</th><th>calls</th>"
      "<th>total (ms)</th><th>mean (µs)</th><th>share of GPU time</th><th>TFLOP/s</th>"
      "<th>TB/s</th><th>FLOPs known for</th></tr>",
      what);
  for (size_t r : rows) {
    const double total = t.d(r, "total_ns");
    const double known = total > 0 ? t.d(r, "known_ns") / total : 0;
    s += fmt::format(
        "<tr data-level=\"{}\" data-name=\"{}\" data-count=\"{}\" data-total-ns=\"{}\" "
        "data-share=\"{}\" data-tflops=\"{}\" data-tbs=\"{}\"><td title=\"{}\">{}</td><td>{}</td>"
        "<td>{}</td><td>{:.3f}</td><td>{:.1f}</td>{}{}{}<td>{}</td></tr>",
        esc(t.s(r, "level")), esc(t.s(r, "name")), t.i(r, "count"), t.i(r, "total_ns"),
        num(t.d(r, "share")), t.null(r, "achieved_tflops") ? "" : num(t.d(r, "achieved_tflops")),
        t.null(r, "achieved_tbs") ? "" : num(t.d(r, "achieved_tbs")), esc(t.s(r, "name")),
        esc(t.s(r, "name").size() > 70 ? t.s(r, "name").substr(0, 69) + "…" : t.s(r, "name")),
        t.null(r, "class") ? "" : esc(t.s(r, "class")), t.i(r, "count"), total / kMs,
        t.d(r, "mean_ns") / 1e3, share_cell(t.d(r, "share")),
        rate_cell(t, r, "achieved_tflops", "{:.2f}"), rate_cell(t, r, "achieved_tbs", "{:.3f}"),
        known > 0 ? fmt::format("{:.0f}% of its time", 100 * known) : std::string("–"));
  }
  return s + "</table></div>";
}

void top_kernels_figure(Doc& doc, const TableStore& ts) {
  const View<kTopKernelsTable> t(ts);
  std::vector<size_t> ops, kernels;
  for (size_t r = 0; r < t.rows(); ++r)
    (t.s(r, "level") == "operation" ? ops : kernels).push_back(r);
  if (ops.size() + kernels.size() == 0) {
    doc.empty_note("No GPU activities: no top kernels or operations.");
    return;
  }
  std::string body;
  if (!ops.empty()) body += "<h4>Operations</h4>" + top_table(t, ops, "operation");
  body += "<h4>Kernels</h4>" + top_table(t, kernels, "kernel");
  doc.figure({"fig-top-kernels", "top_kernels", "Top operations and kernels by GPU time", body,
              "The operations (by label) and kernels (by name) with the most GPU time summed over "
              "all ranks (top_kernels): calls, total and mean duration, share of the run's GPU "
              "activity time; achieved TFLOP/s and TB/s over the compute kernels whose launching "
              "op's FLOPs and bytes are known from the recorded shapes (docs/flops.md), with the "
              "share of the row's time they cover.",
              "Top kernels, roofline and kernel durations", csv_of(t.table(), all_rows(t)), ""});
}

void roofline_figure(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kRooflineTable> t(ts);
  std::vector<size_t> rows;
  for (size_t r = 0; r < t.rows(); ++r)
    if (!t.null(r, "intensity_flop_per_byte") && !t.null(r, "achieved_tflops") &&
        t.d(r, "achieved_tflops") > 0)
      rows.push_back(r);
  if (rows.empty()) {
    doc.empty_note(
        "No roofline: no compute kernel has FLOPs and bytes known (record shapes with "
        "record_shapes=True).");
    return;
  }
  constexpr size_t kMaxPoints = 80;
  const size_t all = rows.size();
  if (rows.size() > kMaxPoints) rows.resize(kMaxPoints);  // the table is by time, most first
  Roofline c;
  c.x_label = "arithmetic intensity (FLOP/B)";
  c.y_label = "achieved TFLOP/s";
  std::map<std::string, size_t> fam;
  std::map<double, std::string> peaks;  // peak TFLOP/s -> the families it bounds
  double bw = std::nan("");
  for (size_t r : rows) {
    const std::string f = t.s(r, "family");
    auto [it, fresh] = fam.try_emplace(f, fam.size());
    if (fresh) c.legend.push_back(f);
    if (!t.null(r, "peak_tflops")) {
      std::string& n = peaks[t.d(r, "peak_tflops")];
      const bool matrix = f != "norm" && f != "elementwise";
      const std::string kind = matrix ? "matrix peak" : "vector peak";
      if (n.find(kind) == std::string::npos) n += (n.empty() ? "" : " / ") + kind;
      bw = t.d(r, "peak_tbs");
    }
    c.points.push_back(
        {t.d(r, "intensity_flop_per_byte"), t.d(r, "achieved_tflops"), t.d(r, "time_ns"),
         fmt::format("{}: {} kernels, {}, {:.3g} FLOP/B, {:.3g} TFLOP/s", t.s(r, "shape_class"),
                     t.i(r, "kernels"), ms_text(t.d(r, "time_ns")),
                     t.d(r, "intensity_flop_per_byte"), t.d(r, "achieved_tflops")),
         fmt::format(" data-shape-class=\"{}\" data-intensity=\"{}\" data-tflops=\"{}\" "
                     "data-time-ns=\"{}\"",
                     esc(t.s(r, "shape_class")), num(t.d(r, "intensity_flop_per_byte")),
                     num(t.d(r, "achieved_tflops")), t.i(r, "time_ns")),
         it->second});
  }
  for (const auto& [p, n] : peaks) c.ceilings.push_back({n, p});
  c.bandwidth = bw;
  const std::string device =
      !peaks.empty() ? fmt::format(
                           "the device's ({}) peaks at the maximum clock and its memory "
                           "bandwidth {:.2f} TB/s (roofline.peak_tflops, peak_tbs)",
                           info.device.empty() ? "from --device" : info.device, bw)
                     : std::string(
                           "none: the device is unknown (give --device NAME), so no peak "
                           "is drawn rather than an invented one");
  doc.figure({"fig-roofline", "roofline", "Roofline of the shape classes", roofline(c),
              fmt::format("Each shape class (operation, input dims and types; all ranks) at its "
                          "arithmetic intensity (roofline.intensity_flop_per_byte = FLOPs ÷ bytes "
                          "moved) and achieved rate (achieved_tflops = FLOPs ÷ its kernels' time "
                          "as run); the mark's area follows its time. Ceilings: {}.{}",
                          device,
                          all > rows.size()
                              ? fmt::format(" The {} classes with the most time of {} are drawn.",
                                            rows.size(), all)
                              : std::string()),
              "Top kernels, roofline and kernel durations", csv_of(t.table(), all_rows(t)), ""});
}

void violins_figure(Doc& doc, const TableStore& ts) {
  const View<kKernelDurationsTable> t(ts);
  if (t.rows() == 0) return;
  std::map<std::string, double> class_time;
  std::vector<int64_t> ranks;
  for (size_t r = 0; r < t.rows(); ++r) {
    class_time[t.s(r, "kernel_class")] += t.d(r, "total_ns");
    ranks.push_back(t.i(r, "rank"));
  }
  ranks = sorted_unique(ranks);
  std::vector<std::pair<double, std::string>> heavy;
  for (const auto& [k, v] : class_time) heavy.emplace_back(-v, k);
  std::sort(heavy.begin(), heavy.end());
  constexpr size_t kClasses = 4, kMaxViolins = 8;
  if (heavy.size() > kClasses) heavy.resize(kClasses);
  // Categories: each rank, or above 8 ranks groups of consecutive ranks (at most 8).
  const size_t per = (ranks.size() + kMaxViolins - 1) / kMaxViolins;
  std::vector<std::pair<int64_t, int64_t>> groups;  // first, last rank
  for (size_t i = 0; i < ranks.size(); i += per)
    groups.emplace_back(ranks[i], ranks[std::min(ranks.size(), i + per) - 1]);
  auto group_of = [&](int64_t rank) {
    const size_t i =
        static_cast<size_t>(std::lower_bound(ranks.begin(), ranks.end(), rank) - ranks.begin());
    return i / per;
  };
  Violins c;
  c.value_label = "kernel duration (µs)";
  c.scale = 1e3;
  c.bandwidth = 0.5 / kDurationBinsPerDecade;
  std::vector<size_t> rows;
  for (size_t k = 0; k < heavy.size(); ++k) {
    const std::string& cls = heavy[k].second;
    ViolinPanel p;
    p.name = cls;
    p.color = k;
    std::vector<std::map<int64_t, double>> bins(groups.size());  // bin -> kernels
    for (size_t r = 0; r < t.rows(); ++r)
      if (t.s(r, "kernel_class") == cls) {
        bins[group_of(t.i(r, "rank"))][t.i(r, "bin")] += t.d(r, "kernels");
        rows.push_back(r);
      }
    for (size_t g = 0; g < groups.size(); ++g) {
      Violin v;
      v.category = groups[g].first == groups[g].second
                       ? fmt::format("rank {}", groups[g].first)
                       : fmt::format("ranks {}–{}", groups[g].first, groups[g].second);
      double n = 0;
      std::string bl, cl;
      for (const auto& [b, cnt] : bins[g]) {
        v.at.push_back(std::pow(10.0, (static_cast<double>(b) + 0.5) / kDurationBinsPerDecade));
        v.weight.push_back(cnt);
        n += cnt;
        bl += (bl.empty() ? "" : " ") + std::to_string(b);
        cl += (cl.empty() ? "" : " ") + num(cnt);
      }
      double acc = 0;  // the median's bin: its geometric centre is marked
      for (size_t i = 0; i < v.at.size() && std::isnan(v.median); ++i)
        if ((acc += v.weight[i]) >= n / 2) v.median = v.at[i];
      v.attrs = fmt::format(
          " data-class=\"{}\" data-first-rank=\"{}\" data-last-rank=\"{}\" data-kernels=\"{}\" "
          "data-bins=\"{}\" data-counts=\"{}\"",
          esc(cls), groups[g].first, groups[g].second, num(n), bl, cl);
      p.violins.push_back(std::move(v));
    }
    c.panels.push_back(std::move(p));
  }
  std::sort(rows.begin(), rows.end());
  const std::string grouping =
      per > 1 ? fmt::format(
                    " With {} ranks, each violin pools {} consecutive ranks (the "
                    "violin's title names them).",
                    ranks.size(), per)
              : std::string();
  const bool big = rows.size() > 20000;
  std::string csv;
  if (big) {
    Csv q({"kernel_class", "first_rank", "last_rank", "bin", "kernels"});
    for (const ViolinPanel& p : c.panels)
      for (size_t g = 0; g < p.violins.size(); ++g)
        for (size_t i = 0; i < p.violins[g].at.size(); ++i)
          q.add({p.name, std::to_string(groups[g].first), std::to_string(groups[g].second),
                 num(std::round(std::log10(p.violins[g].at[i]) * kDurationBinsPerDecade - 0.5)),
                 num(p.violins[g].weight[i])});
    csv = q.text;
  } else {
    csv = csv_of(t.table(), rows);
  }
  doc.figure(
      {"fig-kernel-violins", "kernel_durations",
       "Kernel durations per GPU, heaviest kernel classes", violins(c),
       fmt::format("For each of the {} kernel classes with the most GPU time, the "
                   "distribution of its kernels' durations on each GPU: a Gaussian kernel "
                   "density estimate over log10(duration) (Silverman's bandwidth, at least "
                   "half a bin) of the binned durations (kernel_durations, 10 bins per "
                   "decade), drawn mirrored; each violin is scaled to its own width; the bar "
                   "marks the bin that holds the median.{}",
                   heavy.size(), grouping),
       "Top kernels, roofline and kernel durations", csv,
       big ? "the bins drawn, per violin; the rows are in chopper.sqlite" : ""});
}

}  // namespace

void kernels_section(Doc& doc, const TableStore& ts, const ReportInfo& info) {
  const View<kTopKernelsTable> t(ts);
  if (t.rows() == 0 && View<kKernelDurationsTable>(ts).rows() == 0) return;
  doc.section("kernels", "Top kernels, roofline and kernel durations");
  top_kernels_figure(doc, ts);
  roofline_figure(doc, ts, info);
  violins_figure(doc, ts);
}

void counters_section(Doc& doc, const TableStore& ts) {
  const View<kCounterOperationsTable> t(ts);
  if (t.rows() == 0) {
    doc.section("counters", "Hardware counters per operation");
    doc.empty_note(
        "No hardware counters: give counter files (rocprof, Nsight Compute; "
        "docs/counter_formats.md) "
        "to see counter-derived metrics per operation.");
    return;
  }
  doc.section("counters", "Hardware counters per operation");
  constexpr size_t kRows = 25;
  std::string s =
      "<div class=\"scroll\"><table class=\"top\"><tr><th>operation</th><th>class</th>"
      "<th>kernels</th><th>time (ms)</th><th>matrix unit busy</th><th>matrix TFLOP/s "
      "(counted)</th><th>vector TFLOP/s (counted)</th><th>clock from cycles (MHz)</th></tr>";
  using Col = View<kCounterOperationsTable>::Col;
  auto val = [&t](size_t r, Col c) { return t.null(r, c) ? std::string() : num(t.d(r, c)); };
  auto cell = [&t](size_t r, Col c, const char* f) {
    return t.null(r, c) ? std::string("<td>–</td>")
                        : fmt::format(fmt::runtime(std::string("<td>") + f + "</td>"), t.d(r, c));
  };
  const size_t shown = std::min(kRows, t.rows());
  for (size_t r = 0; r < shown; ++r) {
    const std::string op = t.null(r, "operation") ? "(no operation)" : t.s(r, "operation");
    s += fmt::format(
        "<tr data-operation=\"{}\" data-kernels=\"{}\" data-dur-ns=\"{}\" "
        "data-matrix-busy-share=\"{}\" data-matrix-tflops=\"{}\" data-vector-tflops=\"{}\" "
        "data-counter-clock-mhz=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td>{}{}{}{}"
        "</tr>",
        t.null(r, "operation") ? "" : esc(op), t.i(r, "kernels"), t.i(r, "dur_ns"),
        val(r, "matrix_busy_share"), val(r, "matrix_tflops"), val(r, "vector_tflops"),
        val(r, "counter_clock_mhz"), esc(op), t.null(r, "op_class") ? "" : esc(t.s(r, "op_class")),
        t.i(r, "kernels"), t.d(r, "dur_ns") / kMs,
        t.null(r, "matrix_busy_share") ? std::string("<td>–</td>")
                                       : share_cell(t.d(r, "matrix_busy_share")),
        cell(r, "matrix_tflops", "{:.2f}"), cell(r, "vector_tflops", "{:.3f}"),
        cell(r, "counter_clock_mhz", "{:.0f}"));
  }
  s += "</table></div>";
  doc.figure({"fig-counters", "counter_operations", "Counter-derived metrics per operation", s,
              fmt::format("Hardware counters of each operation's kernels summed over all ranks "
                          "(counter_operations, {} operations{}): the matrix unit's busy share "
                          "(busy cycles ÷ active cycles), the matrix and vector FLOPs the counters "
                          "counted per second of those kernels, and the clock their active "
                          "cycles imply (only when counted in the traced run).",
                          t.rows(),
                          t.rows() > shown ? fmt::format(", the {} with the most time shown", shown)
                                           : std::string()),
              "Top kernels, roofline and kernel durations", csv_of(t.table(), all_rows(t)), ""});
}

}  // namespace chopper::html
