#include "chopper/report/compare_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chopper/base/json_out.hpp"
#include "chopper/base/size_text.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

std::string ms(double ns) {
  return fmt::format("{:.3f} ms", ns / 1e6);
}
std::string signed_ms(double ns) {
  return fmt::format("{:+.3f} ms", ns / 1e6);
}
// A JSON number; NaN (not measured) is null.
std::string num(double v) {
  return std::isnan(v) ? std::string("null") : fmt::format("{}", v);
}

std::string key_text(const OperationKey& k) {
  std::string s = std::string(phase_name(k.phase));
  if (s.empty()) s = "(no phase)";
  if (k.layer >= 0) s += fmt::format(" layer {}", k.layer);
  s += " ";
  s += k.operation.empty() ? std::string("(no operation)") : k.operation;
  return s;
}

std::string shorten(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 1) + "…";
}

// `s` in at most n characters (n ≥ 24) that still tell it from each of `others`: its beginning,
// and, when the names first differ past it, "…" and the part from a little before that point
// (kernel names of one template differ deep inside: cut at n they all read the same).
std::string shorten_apart(const std::string& s, const std::vector<std::string>& others, size_t n) {
  if (s.size() <= n) return s;
  size_t differ = 0;  // where s first differs from the other name most like it
  for (const std::string& o : others) {
    if (o == s) continue;
    size_t i = 0;
    while (i < s.size() && i < o.size() && s[i] == o[i]) ++i;
    differ = std::max(differ, i);
  }
  if (differ + 1 < n) return shorten(s, n);
  const size_t head = n / 3;
  size_t from = differ > 8 ? differ - 8 : 0;
  from = std::max(from, head);
  const size_t len = n - head - 2;  // two ellipses
  std::string out = s.substr(0, head) + "…" + s.substr(from, len);
  if (from + len < s.size()) out += "…";
  return out;
}

// ---- The tables: one function each.

void sweep_table(const Comparison& c, TableSink& sink) {
  sink.begin(kSweepTable.schema());
  for (size_t k = 0; k < c.runs.size(); ++k)
    kSweepTable.put(sink, SweepRow{c.runs[k], k, c.runs.front().iteration_ns});
  sink.end();
}

void components_table(const Comparison& c, TableSink& sink) {
  sink.begin(kCompareComponentsTable.schema());
  for (const PairComparison& p : c.pairs) {
    int64_t order = 0;
    for (const ComponentDiff& d : p.components)
      kCompareComponentsTable.put(sink, ComponentRow{c.runs[p.a], c.runs[p.b], d, ++order});
  }
  sink.end();
}

// A pair table whose rows are the items `items` (a member of PairComparison) of every pair.
template <class Def, class D>
void pair_table(const Comparison& c, TableSink& sink, const Def& def,
                std::vector<D> PairComparison::*items) {
  sink.begin(def.schema());
  for (const PairComparison& p : c.pairs)
    for (const D& d : p.*items) def.put(sink, PairRow<D>{c.runs[p.a], c.runs[p.b], d});
  sink.end();
}

// The findings that changed between the pair, those that appeared or disappeared first (what a
// sweep's reader looks for), then those that grew or shrank, each by its difference.
std::string findings_changes(const PairComparison& p) {
  std::vector<const FindingDiff*> order;
  for (int pass = 0; pass < 2; ++pass)
    for (const FindingDiff& d : p.findings) {
      const bool flip =
          d.change == FindingChange::kAppeared || d.change == FindingChange::kDisappeared;
      const bool moved = d.change == FindingChange::kGrew || d.change == FindingChange::kShrank;
      if (pass == 0 ? flip : moved) order.push_back(&d);
    }
  if (order.empty()) return "findings: none appeared, disappeared, grew or shrank\n";
  std::string s = "findings:\n";
  for (const FindingDiff* d : order) {
    s += fmt::format("  {:<11} {}", finding_change_name(d->change), finding_title(d->kind));
    const int64_t rank = d->b_significant ? d->b_rank : d->a_rank;
    if (rank >= 0) s += fmt::format(" (rank {})", rank);
    s += fmt::format(": {} → {} per iteration ({:+.1f} points)\n", ms(d->a_cost_ns),
                     ms(d->b_cost_ns), d->diff_points);
  }
  return s;
}

}  // namespace

std::string component_title(const std::string& k) {
  if (k == "exposed_comm") return "exposed communication";
  if (k == "straggler_wait") return "waiting for a straggler";
  if (k == "data_loading") return "data loading (host)";
  if (k == "host_sync") return "host blocked on the GPU";
  if (k == "host_optimizer") return "host optimizer/checkpoint";
  if (k == "host_stall") return "host stall (step start)";
  if (k == "exposed_memcpy") return "exposed memcpy";
  if (k == "host_late") return "host late (between kernels)";
  if (k == "launch_overhead") return "launch overhead";
  if (k == "graph_gap") return "graph-internal gaps";
  if (k == "idle") return "idle (other)";
  return "compute, " + k;
}

void compare_tables(const Comparison& c, TableSink& sink) {
  sweep_table(c, sink);
  components_table(c, sink);
  pair_table(c, sink, kCompareOperationsTable, &PairComparison::operations);
  pair_table(c, sink, kCompareKernelsTable, &PairComparison::kernels);
  pair_table(c, sink, kCompareCollectivesTable, &PairComparison::collectives);
  pair_table(c, sink, kCompareFindingsTable, &PairComparison::findings);
}

std::string compare_summary(const Comparison& c) {
  std::string s;
  if (c.runs.empty()) return s;
  const bool sweep = c.runs.size() >= 3;
  s += fmt::format("{} runs{}; baseline: {}\n", c.runs.size(), sweep ? " (sweep)" : "",
                   c.runs.front().label);
  // The runs, one line each.
  for (const std::string& w : c.warnings) s += fmt::format("warning: {}\n", w);
  s += fmt::format("  {:<20} {:>6} {:>6} {:>14} {:>9} {:>12} {:>12} {:>12} {:>10}\n", "run",
                   "ranks", "iters", "iteration", "vs base", "tokens/s", "µs/token", "J/iteration",
                   "mJ/token");
  for (const CompareRun& r : c.runs) {
    const double base = c.runs.front().iteration_ns;
    s += fmt::format(
        "  {:<20} {:>6} {:>6} {:>14} {:>9} {:>12} {:>12} {:>12} {:>10}\n", shorten(r.label, 20),
        r.ranks, r.iterations, ms(r.iteration_ns),
        base > 0 ? fmt::format("{:+.1f}%", 100.0 * (r.iteration_ns - base) / base) : "",
        std::isnan(r.tokens_per_s) ? "-" : fmt::format("{:.0f}", r.tokens_per_s),
        std::isnan(r.time_per_token_ns) ? "-" : fmt::format("{:.3f}", r.time_per_token_ns / 1e3),
        std::isnan(r.energy_per_iteration_j) ? "-"
                                             : fmt::format("{:.1f}", r.energy_per_iteration_j),
        std::isnan(r.energy_per_token_j) ? "-" : fmt::format("{:.3f}", 1e3 * r.energy_per_token_j));
  }
  for (const PairComparison& p : c.pairs) {
    const CompareRun &a = c.runs[p.a], &b = c.runs[p.b];
    s += fmt::format("\n{} against {}: iteration time {} → {} ({} per iteration, {:+.1f} points)\n",
                     b.label, a.label, ms(a.iteration_ns), ms(b.iteration_ns),
                     signed_ms(p.iteration_diff_ns), p.iteration_diff_points);
    s += findings_changes(p);
    // Components: the largest differences, at least the first, then those above 0.1 point.
    s += "largest differences (slowest rank, mean per iteration; points of the baseline's "
         "iteration time):\n";
    size_t shown = 0;
    if (p.components.empty() || std::abs(p.components.front().diff_points) < 0.05)
      s += "  none: no component differs by 0.05 points or more\n";
    for (const ComponentDiff& d : p.components) {
      if (shown >= (sweep ? 3u : 6u) || std::abs(d.diff_points) < (shown > 0 ? 0.1 : 0.05)) break;
      s += fmt::format("  {}. {} {} per iteration ({:+.1f} points): {} → {}\n", ++shown,
                       component_title(d.component), signed_ms(d.diff_ns), d.diff_points,
                       ms(d.a_ns), ms(d.b_ns));
    }
    if (sweep) continue;
    // Operations, kernels and collectives that changed most.
    auto changed = [](ChangeStatus st) { return st != ChangeStatus::kSame; };
    size_t n = 0;
    for (const OperationDiff& d : p.operations) {
      if (!changed(d.status)) continue;
      if (n == 0) s += "operations (GPU time per rank per iteration):\n";
      if (n++ >= 5) break;
      s += fmt::format("  {:<8} {} {} ({:+.1f} points): {} → {}\n", change_status_name(d.status),
                       shorten(key_text(d.key), 60), signed_ms(d.diff_ns), d.diff_points,
                       ms(d.a_ns), ms(d.b_ns));
    }
    std::vector<std::string> shown_kernels;
    for (const KernelDiff& d : p.kernels)
      if (changed(d.status) && shown_kernels.size() < 5) shown_kernels.push_back(d.name);
    n = 0;
    for (const KernelDiff& d : p.kernels) {
      if (!changed(d.status)) continue;
      if (n == 0) s += "kernels (GPU time per rank per iteration):\n";
      if (n++ >= 5) break;
      s += fmt::format("  {:<8} {} {} ({:+.1f} points)\n", change_status_name(d.status),
                       shorten_apart(d.name, shown_kernels, 60), signed_ms(d.diff_ns),
                       d.diff_points);
    }
    n = 0;
    for (const CollectiveDiff& d : p.collectives) {
      if (!changed(d.status)) continue;
      if (n == 0) s += "collectives (latency per iteration):\n";
      if (n++ >= 5) break;
      s += fmt::format("  {:<8} {} {} {} ({:+.1f} points)", change_status_name(d.status), d.type,
                       d.bytes >= 0 ? size_text(d.bytes) : std::string("size unknown"),
                       signed_ms(d.diff_ns), d.diff_points);
      if (!std::isnan(d.a.busbw_gbs) && !std::isnan(d.b.busbw_gbs))
        s += fmt::format("; bus bandwidth {:.1f} → {:.1f} GB/s", d.a.busbw_gbs, d.b.busbw_gbs);
      s += "\n";
    }
  }
  return s;
}

std::string compare_json(const Comparison& c) {
  std::string s = "{\"runs\": [";
  for (size_t k = 0; k < c.runs.size(); ++k) {
    const CompareRun& r = c.runs[k];
    s += k ? ",\n  {" : "\n  {";
    s += "\"run\": " + json_string(r.label) + ", \"path\": " + json_string(r.path);
    s += fmt::format(
        ", \"ranks\": {}, \"iterations\": {}, \"iteration_ns\": {}, \"tokens_per_step\": {}, "
        "\"tokens_per_s\": {}, \"time_per_token_ns\": {}, \"mfu\": {}, "
        "\"energy_per_iteration_j\": {}, \"energy_per_token_j\": {}}}",
        r.ranks, r.iterations, num(r.iteration_ns),
        r.tokens_per_step > 0 ? fmt::format("{}", r.tokens_per_step) : std::string("null"),
        num(r.tokens_per_s), num(r.time_per_token_ns), num(r.mfu), num(r.energy_per_iteration_j),
        num(r.energy_per_token_j));
  }
  s += "\n], \"warnings\": [";
  for (size_t k = 0; k < c.warnings.size(); ++k) s += (k ? ", " : "") + json_string(c.warnings[k]);
  s += "], \"comparisons\": [";
  for (size_t k = 0; k < c.pairs.size(); ++k) {
    const PairComparison& p = c.pairs[k];
    s += k ? ",\n  {" : "\n  {";
    s += "\"baseline\": " + json_string(c.runs[p.a].label) +
         ", \"run\": " + json_string(c.runs[p.b].label);
    s += fmt::format(", \"iteration_diff_ns\": {}, \"iteration_diff_points\": {}",
                     num(p.iteration_diff_ns), num(p.iteration_diff_points));
    s += ", \"components\": [";
    for (size_t i = 0; i < p.components.size(); ++i) {
      const ComponentDiff& d = p.components[i];
      s += i ? ", {" : "{";
      s += "\"component\": " + json_string(d.component);
      s += fmt::format(", \"a_ns\": {}, \"b_ns\": {}, \"diff_ns\": {}, \"diff_points\": {}}}",
                       num(d.a_ns), num(d.b_ns), num(d.diff_ns), num(d.diff_points));
    }
    s += "], \"findings\": [";
    for (size_t i = 0; i < p.findings.size(); ++i) {
      const FindingDiff& d = p.findings[i];
      s += i ? ", {" : "{";
      s += "\"finding\": " + json_string(finding_key(d.kind)) +
           ", \"change\": " + json_string(finding_change_name(d.change));
      s += fmt::format(", \"a_cost_ns\": {}, \"b_cost_ns\": {}, \"diff_points\": {}}}",
                       num(d.a_cost_ns), num(d.b_cost_ns), num(d.diff_points));
    }
    s += "], \"changed_operations\": [";
    size_t n = 0;
    for (const OperationDiff& d : p.operations) {
      if (d.status == ChangeStatus::kSame) continue;
      s += n++ ? ", {" : "{";
      s += "\"phase\": " + json_string(phase_name(d.key.phase));
      s += d.key.layer >= 0 ? fmt::format(", \"layer\": {}", d.key.layer)
                            : std::string(", \"layer\": null");
      s += ", \"operation\": " + json_string(d.key.operation) +
           ", \"status\": " + json_string(change_status_name(d.status));
      s += fmt::format(", \"a_ns\": {}, \"b_ns\": {}, \"diff_points\": {}}}", num(d.a_ns),
                       num(d.b_ns), num(d.diff_points));
    }
    s += "], \"changed_kernels\": [";
    n = 0;
    for (const KernelDiff& d : p.kernels) {
      if (d.status == ChangeStatus::kSame) continue;
      s += n++ ? ", {" : "{";
      s += "\"name\": " + json_string(d.name) +
           ", \"status\": " + json_string(change_status_name(d.status));
      s += fmt::format(", \"a_ns\": {}, \"b_ns\": {}, \"diff_points\": {}}}", num(d.a_ns),
                       num(d.b_ns), num(d.diff_points));
    }
    s += "]}";
  }
  s += c.pairs.empty() ? "]}\n" : "\n]}\n";
  return s;
}

}  // namespace chopper
