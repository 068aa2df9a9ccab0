#pragma once
// Renders the hierarchy: the gpu_activities table (streamed), the hierarchy aggregation table,
// label coverage and the rules, and the terminal tree. docs/schema.md documents every column.
#include <string>
#include <vector>

#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rank_tables.hpp"

namespace chopper {

// ---- label_coverage and label_rules, each declared once (model/table_def.hpp).

inline constexpr auto kLabelCoverageTable = table<CoverageRow>(
    "label_coverage",
    "How much GPU time each rule labelled: one row per rank, level, scope and rule (rule NULL = "
    "no label); sync activities are not counted",
    column<&CoverageRow::rank>("rank", "rank", kNever),
    column<&CoverageRow::level>("level", "iteration, phase, layer, operation, op_class", kNever),
    column<&CoverageRow::scope>(
        "scope",
        "all (every activity) or in_iterations (activities with an iteration: launched in one, or "
        "inside its GPU-side span); iteration rows only with all",
        kNever),
    column<CoverageRow>(
        "rule", ColType::kText, "the rule that set the label",
        "the activities have no label at this level (including a layer cleared by a rule)",
        [](const CoverageRow& r) { return r.rule.empty() ? Cell::null() : Cell::of(r.rule); }),
    column<&CoverageRow::activities>("activities", "activities of the scope labelled by the rule",
                                     kNever),
    column<&CoverageRow::kernel_ns>("kernel_ns", "their Σ dur_ns", kNever),
    column<CoverageRow>(
        "share", ColType::kReal, "kernel_ns / Σ dur_ns of the rank's activities in the scope",
        "the scope's time is 0", [](const CoverageRow& r) {
          return r.scope_kernel_ns > 0 ? Cell::of(static_cast<double>(r.kernel_ns) /
                                                  static_cast<double>(r.scope_kernel_ns))
                                       : Cell::null();
        }));

// A label_rules row: a name rule (pattern and value given) or an inferred rule (both NULL).
struct LabelRuleRow {
  std::string_view rule, level, kind, pattern;
  std::string value;
  std::string_view source, doc;
  bool inferred = false;
};

inline constexpr auto kLabelRulesTable = table<LabelRuleRow>(
    "label_rules",
    "Every rule a label can name (the *_rule columns): the taxonomy's name rules in priority "
    "order (after --rules FILE), then the inferred rules",
    column<&LabelRuleRow::rule>("rule", "rule name", kNever),
    column<&LabelRuleRow::level>("level", "iteration, phase, layer, operation or class", kNever),
    column<&LabelRuleRow::kind>("kind", "name (regex on host-op or kernel names) or inferred",
                                kNever),
    column<LabelRuleRow>(
        "pattern", ColType::kText, "the regex", "inferred rules",
        [](const LabelRuleRow& r) { return r.inferred ? Cell::null() : Cell::of(r.pattern); }),
    column<LabelRuleRow>(
        "value", ColType::kText,
        "phase rules: the phase, with ' (all threads)' if so; operation rules: structural, 'the "
        "name' or the label, then ', CLASS' if it has a class; class rules: 'CLASS (host ops)' or "
        "'CLASS (kernel names)'; iteration and layer rules: ''",
        "inferred rules",
        [](const LabelRuleRow& r) { return r.inferred ? Cell::null() : Cell::of(r.value); }),
    column<&LabelRuleRow::source>("source", "builtin, FILE:LINE (a user rule) or inferred", kNever),
    column<&LabelRuleRow::doc>("doc", "what it recognises ('' if a user rule has no doc)", kNever));

// One row per GPU activity of every readable rank.
void write_gpu_activities(const Run& run, TableSink& sink);
// Every prefix of `levels` (gpu; gpu x iteration; ...), one table ("hierarchy"), `level` = the
// deepest level; streamed to the sink.
void write_hierarchy(const std::vector<Aggregation>& prefixes, TableSink& sink);
// The same table from a streamed analyze: `gpu_level` holds every rank's GPU rows (levels
// {gpu}); the deeper levels come from `per_rank` (report/rank_tables.hpp), rank by rank.
void write_hierarchy(const Aggregation& gpu_level, RankRows& per_rank, TableSink& sink);
// label_coverage, streamed to the sink.
void write_coverage(const std::vector<CoverageRow>& rows, TableSink& sink);
Table rules_table(const Taxonomy& taxonomy);

struct TreeOptions {
  int depth = 0;  // levels shown (0 = all)
  int top = 8;    // children shown per node; the rest folded into one line
};
// `prefixes[i]` aggregates levels[0..i].
std::string tree_text(const std::vector<Aggregation>& prefixes, const TreeOptions& opt);
// Coverage in a few lines: per level, the labelled share of GPU time and the top rules.
std::string coverage_text(const std::vector<CoverageRow>& rows);

// The label of a row at a level, as the tree and the tables print it ("iteration 5", "layer 3").
std::string level_value(const Aggregation& a, const AggRow& r, Level l);

}  // namespace chopper
