#pragma once
// The per-rank tables: tables whose rows each come from one rank alone (its trace, its partial
// analysis, its aligned hardware data), declared once here with their schema and the rows one
// rank gives. `chopper analyze` streams ranks (pipeline/): each rank's rows are made as the rank is
// done and kept in a spool (report/spool.hpp) until every rank is done; a run held in memory
// gives the same rows from its ranks in turn (InMemoryRankRows). The writers of the tables
// (analysis_report, hardware_report, hierarchy_report) take the rows from a RankRows, so the
// output is the same either way. docs/schema.md documents every column.
#include <cstdint>
#include <string_view>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/table.hpp"
#include "chopper/report/rows.hpp"

namespace chopper {

// ---- The per-rank tables, each declared once (model/table_def.hpp).

inline constexpr auto kTemporalBreakdownTable = table<BreakdownRow>(
    "temporal_breakdown",
    "GPU time of each rank per iteration window and for the whole trace (iteration NULL): "
    "HTA's idle/compute/non-compute and TraceLens's compute/exposed comm/exposed memcpy/idle",
    column<&BreakdownRow::rank>("rank", "rank", kNever),
    column<BreakdownRow>("iteration", ColType::kInt, "iteration window",
                         "the whole trace: first start to last end",
                         [](const BreakdownRow& b) { return opt_iter(b.iteration); }),
    column<&BreakdownRow::start_ns>("start_ns", "window start", kNever),
    column<&BreakdownRow::total_ns>("total_ns", "window length", kNever),
    column<&BreakdownRow::compute_ns>("compute_ns", "|union of compute kernels and memsets|",
                                      kNever),
    column<&BreakdownRow::non_compute_ns>(
        "non_compute_ns", "total − compute − idle (communication and copies not under compute)",
        kNever),
    column<&BreakdownRow::idle_ns>("idle_ns", "total − |union of all GPU activities|", kNever),
    column<&BreakdownRow::exposed_comm_ns>("exposed_comm_ns", "|union(comm) \\ union(compute)|",
                                           kNever),
    column<&BreakdownRow::exposed_memcpy_ns>(
        "exposed_memcpy_ns", "|union(memcpy) \\ union(compute) \\ union(comm)|", kNever),
    column<&BreakdownRow::comm_ns>("comm_ns", "|union(comm)|", kNever),
    column<&BreakdownRow::memcpy_ns>("memcpy_ns", "|union(memcpy)|", kNever),
    column<BreakdownRow>(
        "compute_share", ColType::kReal, "compute_ns / total_ns", "an empty window (total_ns = 0)",
        [](const BreakdownRow& b) { return ratio_cell(b.compute_ns, b.total_ns); }),
    column<BreakdownRow>("idle_share", ColType::kReal, "idle_ns / total_ns",
                         "an empty window (total_ns = 0)",
                         [](const BreakdownRow& b) { return ratio_cell(b.idle_ns, b.total_ns); }));

// Each stream of per-rank rows: X(enumerator, table). The four hierarchy streams are the
// hierarchy table's levels below the GPU (whose shares are of a parent of the same rank); its GPU
// level is written from every rank's GPU rows at once (its share is of the whole run).
#define CHOPPER_RANK_STREAMS(X)               \
  X(kGpuActivities, "gpu_activities")         \
  X(kTemporalBreakdown, "temporal_breakdown") \
  X(kIdleBreakdown, "idle_breakdown")         \
  X(kOverlap, "overlap")                      \
  X(kExposedComm, "exposed_comm")             \
  X(kLaunchOverhead, "launch_overhead")       \
  X(kLaunchStats, "launch_stats")             \
  X(kQueueLength, "queue_length")             \
  X(kIdleCauses, "idle_causes")               \
  X(kTelemetry, "telemetry")                  \
  X(kKernelHw, "kernel_hw")                   \
  X(kHierarchyHw, "hierarchy_hw")             \
  X(kHierarchyIteration, "hierarchy")         \
  X(kHierarchyPhase, "hierarchy")             \
  X(kHierarchyLayer, "hierarchy")             \
  X(kHierarchyOperation, "hierarchy")

enum class RankStream : uint8_t {
#define CHOPPER_X(e, table) e,
  CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
};
inline constexpr size_t kRankStreamCount = 0
#define CHOPPER_X(e, table) +1
    CHOPPER_RANK_STREAMS(CHOPPER_X)
#undef CHOPPER_X
    ;
std::string_view rank_stream_table(RankStream s);
// Every stream, in declaration order.
const std::vector<RankStream>& all_rank_streams();

// What one rank's rows are made from. Any pointer may be null (that part gives no rows).
struct RankView {
  const RankSlot* slot = nullptr;  // the rank's trace (gpu_activities, telemetry, kernel_hw)
  const RankAnalysis* analysis = nullptr;  // its partial
  const RankHardware* hw = nullptr;        // its aligned telemetry (telemetry)
  // aggregate_prefixes of the hierarchy's levels (gpu, iteration, phase, layer, operation), of
  // this rank alone or of the whole run (the hierarchy streams take this rank's rows).
  const std::vector<Aggregation>* hierarchy = nullptr;
};

// The schema of the table a stream belongs to.
TableSchema rank_table_schema(RankStream s);
// One rank's rows of a stream: sink.row() only (the caller begins and ends the table).
void rank_rows(RankStream s, const RankView& v, const AnalysisOptions& o, TableSink& sink);

// Where a table writer takes the per-rank rows from: every rank's rows of a stream, in rank order.
class RankRows {
 public:
  virtual ~RankRows();
  virtual void rows(RankStream s, TableSink& sink) = 0;
};

// The rows of a run in memory (its ranks as analyze_run analysed them: ra.ranks and hw->ranks
// parallel to run.ranks). `hierarchy` (may be null: no hierarchy rows) is aggregate_prefixes of
// the whole run.
class InMemoryRankRows : public RankRows {
 public:
  InMemoryRankRows(const Run& run, const RunAnalysis& ra, const AnalysisOptions& o,
                   const std::vector<Aggregation>* hierarchy = nullptr)
      : run_(run), ra_(ra), o_(o), hierarchy_(hierarchy) {}
  void rows(RankStream s, TableSink& sink) override;

 private:
  const Run& run_;
  const RunAnalysis& ra_;
  const AnalysisOptions& o_;
  const std::vector<Aggregation>* hierarchy_;
};

// Writes the whole table of a stream: begin, every rank's rows, end.
void write_rank_table(RankStream s, RankRows& rows, TableSink& sink);

// The hierarchy table's rows of prefixes[k], each with its share of the parent row's kernel time
// (the parent is in prefixes[k - 1]; for k = 0, of the kernel time of every row of prefixes[0]).
void hierarchy_level_rows(const std::vector<Aggregation>& prefixes, size_t k, TableSink& sink);

}  // namespace chopper
