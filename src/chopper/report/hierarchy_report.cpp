#include "chopper/report/hierarchy_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "chopper/report/rank_tables.hpp"

namespace chopper {

namespace {

std::string ms(Ns ns) {
  return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6);
}

}  // namespace

std::string level_value(const Aggregation& a, const AggRow& r, Level l) {
  switch (l) {
    case Level::kGpu:
      return r.rank < 0 ? fmt::format("rank ? gpu {}", r.device)
                        : fmt::format("rank {} gpu {}", r.rank, r.device);
    case Level::kIteration:
      return r.iteration == kNoId ? "no iteration" : fmt::format("iteration {}", r.iteration);
    case Level::kPhase:
      return r.phase == Phase::kNone ? "no phase" : std::string(phase_name(r.phase));
    case Level::kLayer:
      return r.layer < 0 ? "no layer" : fmt::format("layer {}", r.layer);
    case Level::kOperation:
      if (r.operation == 0) return "no operation";
      return r.op_class == OpClass::kNone
                 ? std::string(a.operation(r))
                 : fmt::format("{} [{}]", a.operation(r), op_class_name(r.op_class));
  }
  return "?";
}

void write_gpu_activities(const Run& run, TableSink& sink) {
  sink.begin(rank_table_schema(RankStream::kGpuActivities));
  for (const RankSlot& slot : run.ranks)
    rank_rows(RankStream::kGpuActivities, RankView{&slot}, AnalysisOptions{}, sink);
  sink.end();
}

void write_hierarchy(const std::vector<Aggregation>& prefixes, TableSink& sink) {
  sink.begin(kHierarchyTable.schema());
  for (size_t k = 0; k < prefixes.size(); ++k) hierarchy_level_rows(prefixes, k, sink);
  sink.end();
}

void write_hierarchy(const Aggregation& gpu_level, RankRows& per_rank, TableSink& sink) {
  sink.begin(kHierarchyTable.schema());
  hierarchy_level_rows(std::vector<Aggregation>{gpu_level}, 0, sink);
  for (RankStream s : {RankStream::kHierarchyIteration, RankStream::kHierarchyPhase,
                       RankStream::kHierarchyLayer, RankStream::kHierarchyOperation})
    per_rank.rows(s, sink);
  sink.end();
}

void write_coverage(const std::vector<CoverageRow>& rows, TableSink& sink) {
  sink.begin(kLabelCoverageTable.schema());
  for (const CoverageRow& r : rows) kLabelCoverageTable.put(sink, r);
  sink.end();
}

namespace {

// What a name rule gives, in words (label_rules.value).
std::string rule_value(const NameRule& r) {
  std::string value;
  if (r.level == RuleLevel::kPhase)
    value = std::string(phase_name(r.phase)) + (r.all_threads ? " (all threads)" : "");
  if (r.level == RuleLevel::kOperation)
    value = r.label == "-" ? "structural" : (r.label.empty() ? "the name" : r.label);
  if (r.level == RuleLevel::kClass ||
      (r.level == RuleLevel::kOperation && r.op_class != OpClass::kNone))
    value +=
        (value.empty() ? "" : ", ") + std::string(op_class_name(r.op_class)) +
        (r.level == RuleLevel::kClass ? (r.kernel_target ? " (kernel names)" : " (host ops)") : "");
  return value;
}

}  // namespace

Table rules_table(const Taxonomy& taxonomy) {
  Table t(kLabelRulesTable.schema());
  for (const NameRule& r : taxonomy.rules())
    t.add_row(kLabelRulesTable.cells(LabelRuleRow{r.name, rule_level_name(r.level), "name",
                                                  r.pattern, rule_value(r), r.source, r.doc}));
  for (const InferredRule& r : inferred_rules())
    t.add_row(kLabelRulesTable.cells(LabelRuleRow{
        r.name, rule_level_name(r.level), "inferred", {}, {}, "inferred", r.doc, true}));
  return t;
}

std::string tree_text(const std::vector<Aggregation>& prefixes, const TreeOptions& opt) {
  std::string out;
  if (prefixes.empty()) return out;
  const std::vector<Level>& levels = prefixes.back().levels;
  const size_t depth =
      opt.depth <= 0 ? prefixes.size() : std::min(prefixes.size(), static_cast<size_t>(opt.depth));
  // children[k][parent key] = rows of prefixes[k]
  std::vector<std::map<AggKey, std::vector<const AggRow*>>> children(depth);
  for (size_t k = 0; k < depth; ++k)
    for (const AggRow& r : prefixes[k].rows) children[k][key_upto(r, levels, k)].push_back(&r);
  for (auto& level : children)
    for (auto& [key, v] : level)
      std::stable_sort(v.begin(), v.end(), [](const AggRow* a, const AggRow* b) {
        return a->kernel_ns > b->kernel_ns;
      });
  fmt::format_to(
      std::back_inserter(out), "{:<56} {:>9} {:>12} {:>12} {:>7}\n",
      "hierarchy (" +
          [&] {
            std::string s;
            for (size_t i = 0; i < depth; ++i)
              s += (i ? " > " : "") + std::string(level_name(levels[i]));
            return s;
          }() +
          ")",
      "count", "kernel_ms", "busy_ms", "share");
  // Keep the time-ordered levels (gpu, iteration, layer) in key order, the others by time.
  auto ordered = [&](size_t k, std::vector<const AggRow*> v) {
    if (levels[k] == Level::kGpu || levels[k] == Level::kIteration || levels[k] == Level::kLayer ||
        levels[k] == Level::kPhase)
      std::stable_sort(v.begin(), v.end(), [&](const AggRow* a, const AggRow* b) {
        return key_upto(*a, levels, k + 1) < key_upto(*b, levels, k + 1);
      });
    return v;
  };
  std::function<void(size_t, const AggKey&, Ns)> emit = [&](size_t k, const AggKey& parent,
                                                            Ns parent_ns) {
    auto it = children[k].find(parent);
    if (it == children[k].end()) return;
    const std::vector<const AggRow*> rows = ordered(k, it->second);
    const size_t shown =
        opt.top <= 0 ? rows.size() : std::min(rows.size(), static_cast<size_t>(opt.top));
    // The top-N by time, shown in the level's natural order.
    std::vector<const AggRow*> keep(it->second.begin(),
                                    it->second.begin() + static_cast<long>(shown));
    const std::string indent(2 * k, ' ');
    uint64_t rest_n = 0, rest_count = 0;
    Ns rest_ns = 0, rest_busy = 0;
    for (const AggRow* r : rows) {
      if (std::find(keep.begin(), keep.end(), r) == keep.end()) {
        ++rest_n;
        rest_count += r->count;
        rest_ns += r->kernel_ns;
        rest_busy += r->busy_ns;
        continue;
      }
      std::string label = indent + level_value(prefixes[k], *r, levels[k]);
      if (label.size() > 56) label = label.substr(0, 53) + "...";
      fmt::format_to(
          std::back_inserter(out), "{:<56} {:>9} {:>12} {:>12} {:>6.1f}%\n", label, r->count,
          ms(r->kernel_ns), ms(r->busy_ns),
          parent_ns > 0 ? 100.0 * static_cast<double>(r->kernel_ns) / static_cast<double>(parent_ns)
                        : 0.0);
      if (k + 1 < depth) emit(k + 1, key_upto(*r, levels, k + 1), r->kernel_ns);
    }
    if (rest_n > 0)
      fmt::format_to(
          std::back_inserter(out), "{:<56} {:>9} {:>12} {:>12} {:>6.1f}%\n",
          indent + fmt::format("... {} more", rest_n), rest_count, ms(rest_ns), ms(rest_busy),
          parent_ns > 0 ? 100.0 * static_cast<double>(rest_ns) / static_cast<double>(parent_ns)
                        : 0.0);
  };
  Ns total = 0;
  for (const AggRow& r : prefixes[0].rows) total += r.kernel_ns;
  emit(0, key_upto(AggRow{}, levels, 0), total);
  return out;
}

std::string coverage_text(const std::vector<CoverageRow>& rows) {
  std::string out = "label coverage (share of GPU time; in iterations = with an iteration):\n";
  for (const char* level : {"iteration", "phase", "layer", "operation", "op_class"}) {
    const std::string scope = std::string_view(level) == "iteration" ? "all" : "in_iterations";
    std::map<std::string, Ns> by_rule;
    Ns total = 0;
    std::map<int64_t, Ns> scope_total;
    for (const CoverageRow& r : rows)
      if (r.level == level && r.scope == scope) {
        by_rule[r.rule] += r.kernel_ns;
        scope_total[r.rank] = r.scope_kernel_ns;
      }
    for (const auto& [rk, v] : scope_total) total += v;
    if (total == 0) continue;
    std::vector<std::pair<Ns, std::string>> v;
    for (const auto& [rule, ns] : by_rule) v.emplace_back(ns, rule);
    std::sort(v.rbegin(), v.rend());
    const double labelled = coverage_share(rows, level, scope);
    fmt::format_to(std::back_inserter(out), "  {:<10} {:6.2f}% {}:", level, 100 * labelled,
                   scope == "all" ? "of all" : "in iterations");
    int n = 0;
    for (const auto& [ns, rule] : v) {
      if (n++ == 5) break;
      fmt::format_to(std::back_inserter(out), " {} {:.1f}%,", rule.empty() ? "(none)" : rule,
                     100.0 * static_cast<double>(ns) / static_cast<double>(total));
    }
    out.back() = '\n';
  }
  return out;
}

}  // namespace chopper
