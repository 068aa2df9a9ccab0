#pragma once
// Where the time goes: every analysis of a labelled run, each in three steps
// (docs/architecture.md, "Analyses: partial, merge, finalize"):
// a *partial* over one rank (analyze_rank, run in parallel), a *merge* of the partials, and a
// *finalize* that does the cross-rank work (collective matching, clock offsets, stragglers, the
// end-to-end view). Formulas, units and sources: docs/metrics.md.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/breakdown.hpp"
#include "chopper/analysis/collectives.hpp"
#include "chopper/analysis/cpu.hpp"
#include "chopper/analysis/end_to_end.hpp"
#include "chopper/analysis/hardware.hpp"
#include "chopper/analysis/intervals.hpp"
#include "chopper/analysis/label_key.hpp"
#include "chopper/analysis/launch.hpp"
#include "chopper/analysis/options.hpp"
#include "chopper/analysis/stragglers.hpp"
#include "chopper/analysis/work.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

// What one rank contributes (the partial).
struct RankAnalysis {
  int64_t rank = -1;
  bool ok = false;
  // The text of this rank's label keys (LabelKey::operation views it). Held by pointer, so the
  // views stay valid when the analysis moves.
  std::unique_ptr<StringTable> names = std::make_unique<StringTable>();
  std::string device_name;
  std::vector<BreakdownRow> breakdown;
  std::vector<IdleRow> idle;
  std::vector<ExposedRow> exposed;
  std::vector<OpInstance> ops;
  std::vector<LaunchRow> launch;
  Ns launch_prep_ns = 0, launch_call_ns = 0;  // Σ prep_ns and Σ call_ns of `launch`
  LaunchStats launch_stats;
  std::vector<IdleCauseRow> idle_causes;  // by iteration, cause
  std::vector<QueueRow> queues;
  std::vector<NameStat> kernels, operations, classes;  // full, unfolded
  std::vector<CollRecord> colls;
  // Per iteration window: the components (compute by phase.class, exposed comm, ...); after
  // finalize, exposed comm less the waiting for a significant straggler (straggler_wait).
  std::map<int64_t, std::map<std::string, Ns>> components;
  std::map<int64_t, double> flops;
  Ns gpu_time_ns = 0;
  // hardware.cpp (with telemetry or counters)
  std::vector<KernelHw> kernel_hw;
  std::vector<WaterfallUnit> units;
  std::vector<PowerRow> power;
  std::vector<HwLevelRow> hw_levels;
  std::vector<CpuRow> cpu;  // cpu.cpp (with `chopper record`'s CPU files)
  // work.cpp: time, FLOPs and bytes per kernel name, operation and shape class; kernel durations
  // per class in log bins; counters per operation (with counters).
  std::vector<WorkRow> work;
  std::vector<DurationBin> durations;
  std::vector<CounterOpRow> counter_ops;
  // The names of partials run on a thread of their own (analyze_rank with threads > 1): their rows
  // view these; every text in them is also in `names` (what the part codec looks views up in).
  std::vector<std::unique_ptr<StringTable>> thread_names;
};

struct RunAnalysis {
  std::vector<RankAnalysis> ranks;
  std::vector<CollectiveRow> collectives;
  std::vector<ClockOffset> clock_offsets;
  std::vector<StragglerRow> stragglers;
  std::vector<IterationRow> iterations;
  std::vector<NameStat> kernels, operations, classes;  // folded to top_n, per rank and overall
  const DeviceSpec* device = nullptr;
  uint64_t unmatched_collectives = 0, mismatched_collectives = 0;
  // finalize_collectives -> finalize_stragglers: collective waits per (rank, iteration).
  std::map<std::pair<int64_t, int64_t>, StragglerRow> straggler_acc;
  // finalize_stragglers -> finalize_end_to_end: the counterfactual per iteration.
  std::map<int64_t, StragglerCost> straggler_cost;
  // hardware.cpp
  const HardwareRun* hardware = nullptr;
  std::vector<WaterfallRow> waterfall;       // per operation instance, per phase and per iteration
  std::vector<ShapeClassRow> shape_classes;  // by below_achievable_ns, largest first
  std::vector<WhatIfRow> what_if;
  // work.cpp: the top kernels and operations by GPU time (top_n each) and every shape class,
  // over all ranks; every rank's duration bins; counters per operation over all ranks.
  std::vector<WorkRow> work;
  std::vector<DurationBin> durations;
  std::vector<CounterOpRow> counter_ops;
};

// The partial: one rank (must be labelled).
// `hw` (may be null): the rank's telemetry and counters, on its trace clock. With `threads` > 1
// the launch analysis runs on a thread of its own beside the others (the same result).
RankAnalysis analyze_rank(const RankTrace& t, int64_t rank, const AnalysisOptions& o,
                          const RankHardware* hw = nullptr, unsigned threads = 1);
// Merge + finalize over every readable rank of a labelled run; `hw` (may be null) is the run's
// aligned hardware data (link/hardware_align.hpp), parallel to run.ranks.
RunAnalysis analyze_run(const Run& run, const AnalysisOptions& o, const HardwareRun* hw = nullptr);
RunAnalysis finalize(std::vector<RankAnalysis> partials, const AnalysisOptions& o,
                     const HardwareRun* hw = nullptr);

}  // namespace chopper
