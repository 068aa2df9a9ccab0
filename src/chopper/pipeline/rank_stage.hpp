#pragma once
// The per-rank stage of a streamed analyze (docs/architecture.md, "Streaming: one rank at a time":
// load → label → partial → write rows → free): one trace file is read, linked, labelled and
// analysed; its rows of the per-rank tables (report/rank_tables.hpp) go to a spool file; what the
// cross-rank finalize and the run's tables need of it is kept as a RankPart, and its events are
// freed. The same stage runs in every process of an MPI run; a RankPart crosses processes encoded
// (part_codec.hpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/model/run.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/spool.hpp"

namespace chopper {

// A rank kept in memory until the tables are written (a run that fits the memory budget,
// stream.hpp): what its per-rank rows are made from, instead of spooled rows. Its partial is the
// part's analysis, given to the finalize whole.
struct KeptRank {
  RankSlot slot;                      // the whole trace, labelled
  RankHardware hw;                    // its aligned telemetry and joined counters
  bool has_hw = false;                // false: --no-hardware (no hardware rows)
  std::vector<Aggregation> prefixes;  // aggregate_prefixes of this rank (the hierarchy's rows)
};

// One trace file of the run, as the stage left it.
struct RankPart {
  size_t file = 0;  // index into the run's trace files (path order)
  // What the file turned out to be, as load_run would say: a rank (slot), or one of these.
  std::string not_trace;      // found in a directory, JSON but not a trace: why (skipped)
  bool counter_pass = false;  // a CUPTI range-profiler pass: a counter file, not a rank
  // The rank: file, rank, ok or the error, its time span; the trace holds only its metadata's
  // rank, world_size, backend and rank_source (what validation reads), no events.
  RankSlot slot;
  bool needs_rank = false;  // readable, but its rank is unknown: analysed once validation gives one
  // What alignment needs (a stage run with want_activity).
  RankActivity activity;
  // The analysis (analysed = true): the partial, less the rows that were spooled (idle, launch,
  // queues, kernel_hw, hw_levels are empty), and the rank's share of the run-wide tables.
  bool analysed = false;
  RankAnalysis analysis;
  std::vector<AggRow> gpu_rows;  // the hierarchy's GPU level (its share is of the whole run)
  std::vector<CoverageRow> coverage;
  std::vector<DiagnosticRow> diagnostics;
  std::vector<std::pair<size_t, CounterJoin>> joins;  // counter file index, how it was joined
  // Where its per-rank rows are: spool file (index in the process's list) and a chunk per stream.
  int process = 0;
  int spool = -1;
  std::array<SpoolChunk, kRankStreamCount> chunks{};
  // Instead of spooled rows (full_stage without a spool): the rank itself, and the analysis whole;
  // with needs_rank, its trace as read (unlabelled), for the stage to take once the rank is known.
  std::shared_ptr<KeptRank> kept;
};

// A slot's shell: file, rank, ok or its error, time span, and the metadata validation reads
// (rank, world_size, backend, rank_source); no events.
RankSlot slot_shell(const RankSlot& s);

// What the stage needs besides the file.
struct StageSetup {
  const Taxonomy* taxonomy = nullptr;
  KinetoReadOptions kineto;
  AnalysisOptions analysis;
  // Hardware (hardware = false: --no-hardware). When the run has hardware files:
  // `rank_hw`, each trace file's aligned telemetry (parallel to the run's files); `counters`, the
  // counter files (counter_data) and how they were assigned (counters); `counter_of_file`, the
  // counter file of each trace file (SIZE_MAX: none). Null otherwise.
  bool hardware = true;
  const std::vector<RankHardware>* rank_hw = nullptr;
  const HardwareRun* counters = nullptr;
  const std::vector<size_t>* counter_of_file = nullptr;
  // Threads one rank's stage may use (more than one when the run has fewer files in the stage
  // than threads): its analyses and the hierarchy's prefixes run side by side.
  unsigned rank_threads = 1;
  // This setup for a stage of `files` files on `threads` threads (rank_threads: the threads no
  // file takes, shared among the files).
  StageSetup widened(unsigned threads, size_t files) const {
    StageSetup wide = *this;
    wide.rank_threads =
        std::max<unsigned>(1, threads / static_cast<unsigned>(std::max<size_t>(1, files)));
    return wide;
  }
};

// Reads one file and keeps what validation and alignment need: part.slot (the shell),
// not_trace / counter_pass, and, with `want_activity`, part.activity. Never throws: an unreadable
// file is a failed slot naming it, as load_run makes it. `preloaded` (may be null): the slot to
// take instead of reading (its trace is left in place). `loaded` (may be null): where a trace it
// read is moved whole, for full_stage to take as its `preloaded` instead of reading it again.
RankPart shell_stage(size_t file, const TracePath& path, const KinetoReadOptions& kineto,
                     bool want_activity, const RankSlot* preloaded = nullptr,
                     RankSlot* loaded = nullptr);

// Reads, links, labels and analyses one file; writes its per-rank rows to `spool` (spool_index
// is recorded in the part); keeps its part. With no spool (null), the rank is kept instead
// (part.kept) and its partial whole: its rows are made when the tables are written. `rank` >= 0
// gives the rank (one that validation assigned); otherwise the trace's own, and a file without one
// comes back with needs_rank and nothing analysed. `preloaded` (may be null): a loaded slot to
// analyse instead of reading the file (its trace is moved out). Never throws for the file's
// content.
RankPart full_stage(size_t file, const TracePath& path, const StageSetup& setup, int64_t rank,
                    SpoolFile* spool, int spool_index, RankSlot* preloaded = nullptr);

}  // namespace chopper
