// The sections of `chopper report` across ranks: operation time distributions, collectives,
// stragglers and the overlap of compute with communication.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "chopper/report/analysis_report.hpp"
#include "chopper/report/html/html_common.hpp"
#include "chopper/report/html/svg.hpp"

namespace chopper::html {

namespace {

// Above this many source rows a figure embeds the data it draws (quantiles, CDF points, bands)
// as its CSV instead of the rows themselves (chopper.sqlite has them): the file stays small.
constexpr size_t kMaxCsvRows = 20000;
const std::string kSummaryNote = "the values drawn; the rows are in chopper.sqlite";

}  // namespace

void distributions_section(Doc& doc, const TableStore& ts) {
  const View<kOperationInstancesTable> o(ts);
  if (o.rows() == 0) return;
  doc.section("distributions", "Operation time distributions, forward vs backward");
  struct Spec {
    const char* id;
    const char* title;
    std::vector<std::string> classes;
  };
  for (const Spec& sp : {Spec{"fig-dist-gemm", "GEMM operations", {"gemm"}},
                         Spec{"fig-dist-vector",
                              "Vector operations (norm, elementwise, "
                              "attention, embedding, loss)",
                              {"norm", "elementwise", "attention", "embedding", "loss"}}}) {
    // Grouped by the text columns' dictionary entries (no text compared a row): per operation
    // its total and its values per phase (0 forward, 1 backward).
    const std::span<const uint32_t> cls = o.codes("op_class"), opc = o.codes("operation"),
                                    phc = o.codes("phase");
    std::vector<char> in_spec(o.entries("op_class"), 0);
    for (uint32_t k = 0; k < in_spec.size(); ++k)
      in_spec[k] = std::find(sp.classes.begin(), sp.classes.end(), o.entry("op_class", k)) !=
                   sp.classes.end();
    std::vector<int> phase_of(o.entries("phase"), -1);
    for (uint32_t k = 0; k < phase_of.size(); ++k)
      phase_of[k] = o.entry("phase", k) == "forward"    ? 0
                    : o.entry("phase", k) == "backward" ? 1
                                                        : -1;
    const size_t n_ops = o.entries("operation");
    std::vector<double> total(n_ops, 0);
    std::vector<std::array<std::vector<double>, 2>> values(n_ops);
    std::vector<char> seen(n_ops, 0);
    std::vector<size_t> rows;
    for (size_t r = 0; r < o.rows(); ++r) {
      if (cls[r] == Table::kNoText || opc[r] == Table::kNoText || phc[r] == Table::kNoText ||
          !in_spec[cls[r]] || phase_of[phc[r]] < 0)
        continue;
      const double v = o.d(r, "kernel_ns");
      total[opc[r]] += v;
      values[opc[r]][static_cast<size_t>(phase_of[phc[r]])].push_back(v);
      seen[opc[r]] = 1;
      rows.push_back(r);
    }
    if (rows.empty()) continue;
    std::vector<std::tuple<double, std::string, uint32_t>> top;  // (−total, name, entry)
    for (uint32_t k = 0; k < n_ops; ++k)
      if (seen[k]) top.emplace_back(-total[k], std::string(o.entry("operation", k)), k);
    std::sort(top.begin(), top.end());
    if (top.size() > 12) top.resize(12);
    BoxPlot b;
    b.value_label = "kernel time per operation instance (µs)";
    b.scale = 1e3;
    b.log = true;
    b.legend = {"forward", "backward"};
    for (const auto& [minus_total, op, entry] : top)
      for (size_t ph : {0, 1}) {
        std::vector<double>& v = values[entry][ph];
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());  // sorted once: the box's quartiles and the CSV's
        const char* name = ph == 0 ? "forward" : "backward";
        b.groups.push_back({op + " · " + name,
                            fmt::format(" data-operation=\"{}\" data-phase=\"{}\"", esc(op), name),
                            static_cast<unsigned>(ph), std::move(v)});
      }
    std::string csv;
    std::string note;
    if (rows.size() <= kMaxCsvRows) {
      csv = csv_of(o.table(), rows);
    } else {
      Csv q({"operation", "phase", "n", "min_ns", "q1_ns", "median_ns", "q3_ns", "max_ns"});
      for (const BoxGroup& g : b.groups) {
        const std::vector<double>& v = g.values;  // sorted
        q.add({g.label.substr(0, g.label.rfind(" · ")), g.color == 0 ? "forward" : "backward",
               std::to_string(v.size()), num(v.front()), num(quantile(v, 0.25)),
               num(quantile(v, 0.5)), num(quantile(v, 0.75)), num(v.back())});
      }
      csv = q.text;
      note = kSummaryNote;
    }
    doc.figure({sp.id, "operation_instances", sp.title, box_plot(b),
                "Distribution over ranks, iterations and layers of the kernel time of each "
                "operation instance (operation_instances.kernel_ns), forward and backward: box = "
                "quartiles (linear interpolation), line = median, whiskers = min and max; the 12 "
                "operations with the most time.",
                "Communication per label (`exposed_comm`) and per operation instance "
                "(`operation_instances`)",
                csv, note});
  }
}

void collectives_section(Doc& doc, const TableStore& ts) {
  const View<kCollectivesTable> c(ts);
  const View<kStragglersTable> st(ts);
  if (c.rows() == 0 && st.rows() == 0) return;
  doc.section("collectives", "Collectives");
  struct Spec {
    const char* id;
    View<kCollectivesTable>::Col col;
    const char* title;
    const char* label;
    double scale;
    bool matched_only;
    const char* how;
  };
  for (const Spec& sp :
       {Spec{"fig-coll-latency", "latency_ns", "Latency per collective type", "latency (µs)", 1e3,
             false,
             "the shortest duration over the ranks of each collective (collectives.latency_ns)"},
        Spec{"fig-coll-busbw", "busbw_gbs", "Bus bandwidth per collective type",
             "bus bandwidth (GB/s)", 1, false,
             "size × NCCL's bus factor / latency (collectives.busbw_gbs; collectives of unknown "
             "size are left out)"},
        Spec{"fig-coll-skew", "arrival_skew_ns", "Arrival skew per collective type",
             "arrival skew (µs)", 1e3, true,
             "latest start − earliest start over the ranks of each matched collective "
             "(collectives.arrival_skew_ns)"}}) {
    std::map<std::string, std::vector<double>> by;
    std::vector<size_t> rows;
    for (size_t r = 0; r < c.rows(); ++r) {
      if (c.null(r, sp.col)) continue;
      const std::string ty = c.null(r, "called") ? c.s(r, "type") : c.s(r, "called");
      by[ty].push_back(c.d(r, sp.col));
      rows.push_back(r);
    }
    if (by.empty()) continue;
    BoxPlot b;
    b.value_label = sp.label;
    b.scale = sp.scale;
    b.log = sp.col.h.name == "latency_ns";
    size_t k = 0;
    for (const auto& kv : by)
      b.groups.push_back(
          {kv.first, fmt::format(" data-type=\"{}\"", esc(kv.first)), k++, kv.second});
    (void)sp.matched_only;
    doc.figure({sp.id, "collectives", sp.title, box_plot(b),
                fmt::format("Distribution over the run's collectives of {}, per type called; box "
                            "= quartiles, line = median, whiskers = min and max.",
                            sp.how),
                "Collectives across ranks (`collectives`, `collective_summary`)",
                csv_of(c.table(), rows), ""});
  }
  if (st.rows() > 0) {
    Heatmap h = rank_iter_heatmap(st, "coll_wait_ns", "wait (ms)", kMs);
    h.lo = 0, h.lo_name = "0";  // no wait; not the least wait of the run
    doc.figure({"fig-coll-wait", "stragglers", "Waiting at collectives per rank and iteration",
                heatmap(h),
                "Σ over a rank's matched collectives of (latest arrival − own arrival) in each "
                "iteration (stragglers.coll_wait_ns): the rank the others wait for has the least.",
                "Stragglers (`stragglers`)", csv_of(st.table(), all_rows(st)), ""});
  }
}

void stragglers_section(Doc& doc, const TableStore& ts) {
  const View<kStragglersTable> st(ts);
  const View<kIterationsTable> it(ts);
  if (st.rows() == 0) return;
  doc.section("stragglers", "Stragglers");
  Heatmap lead_map = rank_iter_heatmap(st, "total_lead_ns", "Σ lead (ms)", kMs);
  lead_map.lo = 0, lead_map.lo_name = "0";  // 0 = started every instance last
  doc.figure({"fig-straggler-lead", "stragglers", "Lead per rank and iteration", heatmap(lead_map),
              "Chopper's lead: for each operation instance found on several ranks, the latest "
              "first start over the ranks − this rank's (aligned clocks), summed over the "
              "iteration's instances (stragglers.total_lead_ns). The straggler leads least. Not "
              "a part of the iteration: each instance counts its own lead, so a rank ahead by 1 ms "
              "through 200 instances sums 200 ms and the sum can exceed the iteration time; the "
              "mean per instance is stragglers.mean_lead_ns (in the CSV).",
              "Stragglers (`stragglers`)", csv_of(st.table(), all_rows(st)), ""});
  if (it.rows() == 0) return;
  Lines l;
  l.x_label = "iteration";
  l.y_label = "time (ms)";
  l.y_scale = kMs;
  Line cost, lead;
  cost.name = "straggler cost";
  cost.color = 2;
  lead.name = "mean lead";
  cost.attrs = " data-col=\"straggler_cost_ns\"";
  lead.attrs = " data-col=\"straggler_lead_ns\"";
  for (size_t r = 0; r < it.rows(); ++r) {
    const double i = static_cast<double>(it.i(r, "iteration"));
    cost.x.push_back(i), cost.y.push_back(it.d(r, "straggler_cost_ns"));
    lead.x.push_back(i), lead.y.push_back(it.d(r, "straggler_lead_ns"));
  }
  l.lines = {cost, lead};
  l.y_min = 0;
  doc.figure({"fig-straggler-run", "iterations", "Straggler over the run", lines(l),
              "Per iteration: what the rank the others wait for costs (iterations."
              "straggler_cost_ns: the median rank's exposed communication − the least one's) and "
              "the mean lead of the other ranks over the least-lead rank "
              "(iterations.straggler_lead_ns).",
              "Stragglers (`stragglers`)", csv_of(it.table(), all_rows(it)), ""});
}

namespace {

// The points of lines as CSV (name, x, y).
std::string cdf_csv(const Lines& l) {
  Csv c({"phase", "overlap_ratio", "cumulative_share"});
  for (const Line& line : l.lines)
    for (size_t i = 0; i < line.x.size(); ++i) c.add({line.name, num(line.x[i]), num(line.y[i])});
  return c.text;
}

}  // namespace

void overlap_section(Doc& doc, const TableStore& ts) {
  const View<kOperationInstancesTable> o(ts);
  // grouped by the phase's dictionary entry (no text compared a row), then named
  std::vector<std::vector<double>> of_entry(o.entries("phase"));
  const std::span<const uint32_t> pc = o.codes("phase");
  std::vector<size_t> rows;
  for (size_t r = 0; r < o.rows(); ++r) {
    if (o.null(r, "overlap_ratio") || pc[r] == Table::kNoText) continue;
    of_entry[pc[r]].push_back(o.d(r, "overlap_ratio"));
    rows.push_back(r);
  }
  std::map<std::string, std::vector<double>> by;
  for (uint32_t k = 0; k < of_entry.size(); ++k)
    if (!of_entry[k].empty()) by.emplace(o.entry("phase", k), std::move(of_entry[k]));
  if (by.empty()) return;
  doc.section("overlap", "Overlap of compute with communication");
  Lines l;
  l.x_label = "overlap ratio (fraction of the operation's span with communication running)";
  l.y_label = "fraction of operation instances";
  l.y_min = 0, l.y_max = 1;
  size_t k = 0;
  for (auto& kv : by) {
    std::vector<double>& v = kv.second;
    std::sort(v.begin(), v.end());
    Line line;
    line.name = kv.first;
    line.attrs = fmt::format(" data-phase=\"{}\" data-n=\"{}\"", esc(kv.first), v.size());
    line.color = k++;
    line.step = true;
    const size_t n = v.size(), step = std::max<size_t>(1, n / 500);
    for (size_t i = 0; i < n; i += step) {
      const size_t j = std::min(n - 1, i + step - 1);
      line.x.push_back(v[j]);
      line.y.push_back(static_cast<double>(j + 1) / static_cast<double>(n));
    }
    if (line.y.empty() || line.y.back() != 1.0) line.x.push_back(v.back()), line.y.push_back(1.0);
    l.lines.push_back(line);
  }
  doc.figure({"fig-overlap-cdf", "operation_instances", "Overlap-ratio CDF per phase", lines(l),
              "Cumulative distribution over operation instances of Chopper's overlap ratio "
              "(operation_instances.overlap_ratio = |span ∩ union(communication)| / span), one "
              "curve per phase; y = share of instances with at most that ratio.",
              "Communication per label (`exposed_comm`) and per operation instance "
              "(`operation_instances`)",
              rows.size() <= kMaxCsvRows ? csv_of(o.table(), rows) : cdf_csv(l),
              rows.size() <= kMaxCsvRows ? std::string() : kSummaryNote});
}

}  // namespace chopper::html
