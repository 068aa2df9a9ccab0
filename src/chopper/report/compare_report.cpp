#include "chopper/report/compare_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "chopper/base/json_out.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {
namespace {

constexpr ColType I = ColType::kInt, R = ColType::kReal, T = ColType::kText;

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
// Positive (known) values only; else NULL.
Cell opt_pos(double v) {
  return std::isnan(v) || v <= 0 ? Cell::null() : Cell::of(v);
}

std::vector<ColumnSpec> pair_cols(std::vector<ColumnSpec> rest) {
  std::vector<ColumnSpec> c = {{"baseline", T, "label of run A, the baseline (the first run)"},
                               {"run", T, "label of run B, compared with the baseline"}};
  c.insert(c.end(), rest.begin(), rest.end());
  return c;
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
  // sweep
  {
    Rows t = make_rows(
        sink, "sweep",
        "One row per compared run, in the order given (the first is the baseline): iteration "
        "time, throughput, time and energy per token; with three or more runs, the sweep",
        {{"run_index", I, "position on the command line, from 0 (0 = the baseline)"},
         {"run", T, "label (--labels, else the path's last component)"},
         {"path", T, "trace directory or file"},
         {"device", T, "GPU model (NULL = unknown)"},
         {"ranks", I, "ranks analysed"},
         {"iterations", I, "iterations analysed"},
         {"iteration_ns", R, "mean over iterations of the slowest rank's iteration time"},
         {"iteration_sigma_ns", R, "1.4826 × MAD of the iteration times"},
         {"tokens_per_step", I, "tokens per iteration over all ranks (NULL = unknown)"},
         {"tokens_per_s", R, "tokens_per_step / iteration time (NULL = tokens unknown)"},
         {"time_per_token_ns", R, "iteration_ns / tokens_per_step (NULL = tokens unknown)"},
         {"tflops_per_gpu", R, "mean achieved TFLOP/s per GPU (NULL = FLOPs unknown)"},
         {"mfu", R, "mean MFU (NULL = device or FLOPs unknown)"},
         {"energy_per_iteration_j", R,
          "energy of all ranks per iteration window, from telemetry (NULL = no telemetry)"},
         {"power_w", R, "energy / time over the iterations, all ranks (NULL = no telemetry)"},
         {"energy_per_token_j", R,
          "energy_per_iteration_j / tokens_per_step (NULL = no telemetry or tokens unknown)"},
         {"iteration_diff_ns", R, "iteration_ns − the baseline's"},
         {"iteration_diff_points", R, "100 × iteration_diff_ns / the baseline's iteration_ns"},
         {"speedup", R, "the baseline's iteration_ns / iteration_ns"}});
    for (size_t k = 0; k < c.runs.size(); ++k) {
      const CompareRun& r = c.runs[k];
      const double base = c.runs.front().iteration_ns;
      t.add_row(
          {Cell::of(k), Cell::of(r.label), Cell::of(r.path), opt_text(r.device), Cell::of(r.ranks),
           Cell::of(r.iterations), Cell::of(r.iteration_ns), Cell::of(r.iteration_sigma_ns),
           r.tokens_per_step > 0 ? Cell::of(r.tokens_per_step) : Cell::null(),
           opt_real(r.tokens_per_s), opt_real(r.time_per_token_ns), opt_real(r.tflops_per_gpu),
           opt_real(r.mfu), opt_real(r.energy_per_iteration_j), opt_real(r.power_w),
           opt_real(r.energy_per_token_j), Cell::of(r.iteration_ns - base),
           base > 0 ? Cell::of(100.0 * (r.iteration_ns - base) / base) : Cell::null(),
           r.iteration_ns > 0 ? Cell::of(base / r.iteration_ns) : Cell::null()});
    }
    t.end();
  }
  // compare_components
  {
    Rows t = make_rows(
        sink, "compare_components",
        "Each end-to-end component of the slowest rank's iteration (end_to_end), mean over "
        "iterations, in the baseline (a) and the run (b), largest |difference| first",
        pair_cols({{"order", I, "1 = the largest |diff_ns| of this run against the baseline"},
                   {"component", T,
                    "phase.class, exposed_comm, straggler_wait, exposed_memcpy, data_loading, "
                    "host_sync, host_optimizer, host_stall, host_late, launch_overhead, "
                    "graph_gap or idle"},
                   {"a_ns", R, "per iteration in the baseline (0 = absent)"},
                   {"b_ns", R, "per iteration in the run (0 = absent)"},
                   {"diff_ns", R, "b_ns − a_ns"},
                   {"diff_points", R, "100 × diff_ns / the baseline's iteration time"},
                   {"a_share", R, "a_ns / the baseline's iteration time"},
                   {"b_share", R, "b_ns / the run's iteration time"}}));
    for (const PairComparison& p : c.pairs) {
      const CompareRun &a = c.runs[p.a], &b = c.runs[p.b];
      int64_t order = 0;
      for (const ComponentDiff& d : p.components)
        t.add_row({Cell::of(a.label), Cell::of(b.label), Cell::of(++order), Cell::of(d.component),
                   Cell::of(d.a_ns), Cell::of(d.b_ns), Cell::of(d.diff_ns), Cell::of(d.diff_points),
                   a.iteration_ns > 0 ? Cell::of(d.a_ns / a.iteration_ns) : Cell::null(),
                   b.iteration_ns > 0 ? Cell::of(d.b_ns / b.iteration_ns) : Cell::null()});
    }
    t.end();
  }
  // compare_operations
  {
    Rows t = make_rows(
        sink, "compare_operations",
        "GPU time of each operation, matched by phase, layer and operation label, per rank and "
        "iteration in the baseline (a) and the run (b), largest |difference| first",
        pair_cols({{"phase", T, "forward, backward, optimizer, other, data_dist (NULL = none)"},
                   {"layer", I, "transformer block (NULL = none)"},
                   {"operation", T, "operation label (NULL = none)"},
                   {"op_class", T, "operation class (NULL = none)"},
                   {"a_ns", R, "Σ GPU activity time per rank per iteration in the baseline"},
                   {"b_ns", R, "the same in the run"},
                   {"a_count", R, "GPU activities per rank per iteration in the baseline"},
                   {"b_count", R, "the same in the run"},
                   {"diff_ns", R, "b_ns − a_ns"},
                   {"diff_points", R, "100 × diff_ns / the baseline's iteration time"},
                   {"status", T,
                    "added (only in the run), removed (only in the baseline), slower, faster "
                    "(|diff_ns| above 5% of a_ns and 0.1% of the baseline's iteration), same"}}));
    for (const PairComparison& p : c.pairs)
      for (const OperationDiff& d : p.operations)
        t.add_row({Cell::of(c.runs[p.a].label), Cell::of(c.runs[p.b].label),
                   opt_text(phase_name(d.key.phase)),
                   d.key.layer < 0 ? Cell::null() : Cell::of(d.key.layer),
                   opt_text(d.key.operation), opt_text(d.op_class), Cell::of(d.a_ns),
                   Cell::of(d.b_ns), Cell::of(d.a_count), Cell::of(d.b_count), Cell::of(d.diff_ns),
                   Cell::of(d.diff_points), Cell::of(change_status_name(d.status))});
    t.end();
  }
  // compare_kernels
  {
    Rows t = make_rows(
        sink, "compare_kernels",
        "GPU time of each kernel (and memcpy, memset) name per rank and iteration in the baseline "
        "(a) and the run (b), largest |difference| first",
        pair_cols({{"name", T, "kernel name"},
                   {"class", T, "compute, communication, memcpy, memset, sync"},
                   {"a_ns", R, "Σ duration per rank per iteration in the baseline"},
                   {"b_ns", R, "the same in the run"},
                   {"a_count", R, "activities per rank per iteration in the baseline"},
                   {"b_count", R, "the same in the run"},
                   {"diff_ns", R, "b_ns − a_ns"},
                   {"diff_points", R, "100 × diff_ns / the baseline's iteration time"},
                   {"status", T, "added, removed, slower, faster, same (as compare_operations)"}}));
    for (const PairComparison& p : c.pairs)
      for (const KernelDiff& d : p.kernels)
        t.add_row({Cell::of(c.runs[p.a].label), Cell::of(c.runs[p.b].label), Cell::of(d.name),
                   opt_text(d.kernel_class), Cell::of(d.a_ns), Cell::of(d.b_ns),
                   Cell::of(d.a_count), Cell::of(d.b_count), Cell::of(d.diff_ns),
                   Cell::of(d.diff_points), Cell::of(change_status_name(d.status))});
    t.end();
  }
  // compare_collectives
  {
    Rows t = make_rows(
        sink, "compare_collectives",
        "Collectives per type and message size in the baseline (a) and the run (b): count and "
        "latency per iteration, mean bus bandwidth; largest |difference| first",
        pair_cols({{"type", T, "collective called (else the kernel's)"},
                   {"size_bytes", I, "message size (NULL = unknown)"},
                   {"a_count", R, "collectives per iteration in the baseline (matched: once)"},
                   {"b_count", R, "the same in the run"},
                   {"a_latency_mean_ns", R, "mean latency in the baseline (NULL = none)"},
                   {"b_latency_mean_ns", R, "the same in the run"},
                   {"a_busbw_mean_gbs", R, "mean bus bandwidth in the baseline (NULL = unknown)"},
                   {"b_busbw_mean_gbs", R, "the same in the run"},
                   {"a_ns", R, "a_count × a_latency_mean_ns: latency per iteration"},
                   {"b_ns", R, "the same in the run"},
                   {"diff_ns", R, "b_ns − a_ns"},
                   {"diff_points", R, "100 × diff_ns / the baseline's iteration time"},
                   {"status", T, "added, removed, slower, faster, same (as compare_operations)"}}));
    for (const PairComparison& p : c.pairs)
      for (const CollectiveDiff& d : p.collectives)
        t.add_row({Cell::of(c.runs[p.a].label), Cell::of(c.runs[p.b].label), Cell::of(d.type),
                   d.bytes >= 0 ? Cell::of(d.bytes) : Cell::null(), Cell::of(d.a.count),
                   Cell::of(d.b.count), d.a.count > 0 ? Cell::of(d.a.latency_ns) : Cell::null(),
                   d.b.count > 0 ? Cell::of(d.b.latency_ns) : Cell::null(), opt_pos(d.a.busbw_gbs),
                   opt_pos(d.b.busbw_gbs), Cell::of(d.a.ns()), Cell::of(d.b.ns()),
                   Cell::of(d.diff_ns), Cell::of(d.diff_points),
                   Cell::of(change_status_name(d.status))});
    t.end();
  }
  // compare_findings
  {
    Rows t = make_rows(
        sink, "compare_findings",
        "Each finding (findings) in the baseline (a) and the run (b): appeared, disappeared, grew, "
        "shrank; appeared and disappeared first",
        pair_cols({{"finding", T, "finding key (findings.finding)"},
                   {"title", T, "what the terminal calls it"},
                   {"change", T,
                    "appeared (significant only in the run), disappeared (only in the baseline), "
                    "grew, shrank (significant in both, |diff_ns| above 2 combined standard "
                    "errors and 1% of the baseline's iteration), same, neither (significant in "
                    "neither)"},
                   {"a_significant", I, "1 = significant in the baseline"},
                   {"b_significant", I, "1 = significant in the run"},
                   {"a_rank", I, "the rank it concerns in the baseline (NULL = slowest rank)"},
                   {"b_rank", I, "the same in the run"},
                   {"a_cost_ns", R, "cost per iteration in the baseline (0 = not found)"},
                   {"b_cost_ns", R, "the same in the run"},
                   {"diff_ns", R, "b_cost_ns − a_cost_ns"},
                   {"diff_points", R, "100 × diff_ns / the baseline's iteration time"}}));
    for (const PairComparison& p : c.pairs)
      for (const FindingDiff& d : p.findings)
        t.add_row({Cell::of(c.runs[p.a].label), Cell::of(c.runs[p.b].label),
                   Cell::of(finding_key(d.kind)), Cell::of(finding_title(d.kind)),
                   Cell::of(finding_change_name(d.change)),
                   Cell::of(int64_t{d.a_significant ? 1 : 0}),
                   Cell::of(int64_t{d.b_significant ? 1 : 0}), opt_rank(d.a_rank),
                   opt_rank(d.b_rank), Cell::of(d.a_cost_ns), Cell::of(d.b_cost_ns),
                   Cell::of(d.diff_ns), Cell::of(d.diff_points)});
    t.end();
  }
}

std::string compare_summary(const Comparison& c) {
  std::string s;
  if (c.runs.empty()) return s;
  const bool sweep = c.runs.size() >= 3;
  s += fmt::format("{} runs{}; baseline: {}\n", c.runs.size(), sweep ? " (sweep)" : "",
                   c.runs.front().label);
  // The runs, one line each.
  s += fmt::format("  {:<20} {:>6} {:>6} {:>14} {:>9} {:>12} {:>12} {:>12} {:>10}\n", "run",
                   "ranks", "iters", "iteration", "vs base", "tokens/s", "µs/token", "J/iteration",
                   "J/token");
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
        std::isnan(r.energy_per_token_j) ? "-" : fmt::format("{:.4f}", r.energy_per_token_j));
  }
  for (const PairComparison& p : c.pairs) {
    const CompareRun &a = c.runs[p.a], &b = c.runs[p.b];
    s += fmt::format("\n{} against {}: iteration time {} → {} ({} per iteration, {:+.1f} points)\n",
                     b.label, a.label, ms(a.iteration_ns), ms(b.iteration_ns),
                     signed_ms(p.iteration_diff_ns), p.iteration_diff_points);
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
    n = 0;
    for (const KernelDiff& d : p.kernels) {
      if (!changed(d.status)) continue;
      if (n == 0) s += "kernels (GPU time per rank per iteration):\n";
      if (n++ >= 5) break;
      s += fmt::format("  {:<8} {} {} ({:+.1f} points)\n", change_status_name(d.status),
                       shorten(d.name, 60), signed_ms(d.diff_ns), d.diff_points);
    }
    n = 0;
    for (const CollectiveDiff& d : p.collectives) {
      if (!changed(d.status)) continue;
      if (n == 0) s += "collectives (latency per iteration):\n";
      if (n++ >= 5) break;
      s += fmt::format("  {:<8} {} {} {} ({:+.1f} points)", change_status_name(d.status), d.type,
                       d.bytes >= 0 ? fmt::format("{} B", d.bytes) : std::string("size unknown"),
                       signed_ms(d.diff_ns), d.diff_points);
      if (!std::isnan(d.a.busbw_gbs) && !std::isnan(d.b.busbw_gbs))
        s += fmt::format("; bus bandwidth {:.1f} → {:.1f} GB/s", d.a.busbw_gbs, d.b.busbw_gbs);
      s += "\n";
    }
    n = 0;
    for (const FindingDiff& d : p.findings) {
      if (d.change == FindingChange::kSame || d.change == FindingChange::kNeither) continue;
      if (n++ == 0) s += "findings:\n";
      s += fmt::format("  {:<11} {}", finding_change_name(d.change), finding_title(d.kind));
      const int64_t rank = d.b_significant ? d.b_rank : d.a_rank;
      if (rank >= 0) s += fmt::format(" (rank {})", rank);
      s += fmt::format(": {} → {} per iteration ({:+.1f} points)\n", ms(d.a_cost_ns),
                       ms(d.b_cost_ns), d.diff_points);
    }
    if (n == 0) s += "findings: none appeared or disappeared\n";
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
  s += "\n], \"comparisons\": [";
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
