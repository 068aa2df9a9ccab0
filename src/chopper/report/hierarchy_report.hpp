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
