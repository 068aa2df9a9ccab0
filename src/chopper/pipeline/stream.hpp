#pragma once
// A streamed analyze (issue "Scale"): every rank goes through the per-rank stage
// (pipeline/rank_stage.hpp) on its own and is freed, so that memory follows the largest rank and
// the number of threads, not the number of ranks; only each rank's partial (what the cross-rank
// finalize needs) and its share of the run-wide tables are kept, and its per-rank table rows wait
// in spool files until every rank is done. Under MPI (`mpirun -n N chopper analyze ...`) the files
// are divided among the processes, each runs the stage on its own, and process 0 gathers the parts,
// validates, finalizes and writes the tables, which are the same as one process writes.
//
// The passes:
//  1. (when the run has hardware files) every file is read once for what validation and the
//     telemetry alignment need (RankActivity: its GPU's busy time), the run is validated and the
//     telemetry aligned; then
//  2. every file is read, labelled and analysed (the per-rank stage), with its rank's aligned
//     telemetry and counters;
//  3. (without hardware files) the run is validated from the parts; a file whose rank neither
//     distributedInfo nor its name gives is analysed again with the rank validation assigns it.
// Then the partials are finalized (analysis/analysis.hpp) in rank order.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/comm.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/model/run.hpp"
#include "chopper/pipeline/rank_stage.hpp"
#include "chopper/report/rank_tables.hpp"
#include "chopper/report/spool.hpp"

namespace chopper {

// Where the per-rank rows wait between the per-rank stage and the tables.
enum class RowStore : uint8_t {
  kAuto,    // in memory when the run fits the memory budget (keep_in_memory), else spooled
  kSpool,   // spool files (--rows spool)
  kMemory,  // the ranks kept in memory (--rows memory; one process only)
};

// Whether a run keeps its ranks in memory (RowStore::kAuto): one process, and the traces' bytes
// at most `threads` times the largest file's and at most a quarter of `memory_bytes` (the
// machine's physical memory). A kept rank holds its trace and analysis (about the JSON's size)
// until the tables are written; the stage holds up to `threads` ranks at once anyway, so keeping
// a run of at most that many ranks' bytes does not raise the peak much, and spares every rank's
// second read (with hardware files), the spool's encode, write, read and decode. A run of more
// ranks than threads is streamed, its memory following the largest rank, not the run.
bool keep_in_memory(RowStore store, const std::vector<uint64_t>& bytes, unsigned threads,
                    int processes, uint64_t memory_bytes);

struct StreamOptions {
  std::vector<std::string> paths;  // trace files and directories (hardware files are found there)
  LoadOptions load;                // reader options, threads, max_files, progress
  AnalysisOptions analysis;
  bool hardware = true;  // false: --no-hardware
  std::vector<std::string> telemetry, counters;
  HardwareAlignOptions align;
  // A run already loaded and validated (analyze --split-runs): its ranks are analysed instead of
  // reading `paths` (which still name the directories where hardware files are found).
  std::shared_ptr<Run> preloaded;
  // MPI: process 0 reads the other processes' spool files from the output directory (a shared
  // filesystem) instead of receiving their bytes.
  bool mpi_shared_files = false;
  RowStore rows = RowStore::kAuto;
  // The finalize left to finalize_streamed(), so that the caller can write gpu_activities (which
  // needs none) meanwhile.
  bool defer_finalize = false;
};

// The rows of the per-rank tables, in spool files, rank by rank in the run's order.
class SpooledRows : public RankRows {
 public:
  struct Rank {
    int file = -1;  // index into files()
    std::array<SpoolChunk, kRankStreamCount> chunks{};
  };
  SpooledRows(std::vector<std::string> files, std::vector<Rank> ranks);
  void rows(RankStream s, TableSink& sink) override;

 private:
  std::vector<std::string> files_;
  std::vector<std::unique_ptr<SpoolReader>> readers_;
  std::vector<Rank> ranks_;
};

// The rows of the per-rank tables made from ranks kept in memory, rank by rank in the run's
// order, from each rank's trace, hardware and finalized partial (ra.ranks, parallel).
class KeptRows : public RankRows {
 public:
  KeptRows(std::vector<std::shared_ptr<KeptRank>> ranks, const RunAnalysis& ra,
           const AnalysisOptions& o)
      : ranks_(std::move(ranks)), ra_(ra), o_(o) {}
  void rows(RankStream s, TableSink& sink) override;
  // The kept ranks (null: a rank with no rows), parallel to the run's analysis (ra.ranks).
  const std::vector<std::shared_ptr<KeptRank>>& ranks() const { return ranks_; }

 private:
  std::vector<std::shared_ptr<KeptRank>> ranks_;  // null: a rank with no rows
  const RunAnalysis& ra_;
  AnalysisOptions o_;
};

// What a streamed analysis leaves on process 0: everything the tables and the terminal need,
// without any rank's events.
struct StreamedRun {
  // Every file as load_run and validate_run leave it, each rank's trace reduced to its metadata.
  Run run;
  bool analysed = false;  // false: nothing readable, or the files are not one run (run.problems)
  HardwareRun hw;
  std::vector<std::pair<std::string, std::string>> hw_skipped;  // hardware files: file, why
  std::vector<std::string> hw_errors;                           // unreadable hardware files
  RunAnalysis ra;                                               // ra.hardware == &hw
  std::vector<CoverageRow> coverage;                            // every rank's, in rank order
  std::vector<DiagnosticRow> diagnostics;  // run-level, every rank's, the hardware files' (table)
  Aggregation gpu_level;                   // every rank's GPU rows of the hierarchy
  std::unique_ptr<RankRows> rows;          // SpooledRows, or KeptRows of the ranks kept in memory
  bool kept = false;                       // the ranks were kept in memory (keep_in_memory)
  // The partials (StreamOptions::defer_finalize) until finalize_streamed() makes ra of them.
  std::vector<RankAnalysis> partials;
  AnalysisOptions analysis;
  // The spool files this process made (removed with the StreamedRun).
  std::vector<std::string> scratch;
  ~StreamedRun();
};

// Runs the streamed analysis. Every process of `comm` calls it with the same options; spool files
// go to `dir` (the output directory) under temporary names. Process 0 gets the run; the others get
// a StreamedRun with analysed = false and nothing else, and must wait (Comm) for process 0 before
// they exit when mpi_shared_files is set (process 0 reads their spool files). Throws Error when the
// paths cannot be listed or are too many (--max-files); reading problems are in the run.
std::unique_ptr<StreamedRun> stream_run(const StreamOptions& o, const Taxonomy& taxonomy,
                                        const std::string& dir, Comm& comm);

// Finalizes a run streamed with defer_finalize: ra from the partials (a run already finalized is
// left as it is). Reads and writes only ra and the partials: rows of gpu_activities may be
// written from sr.rows meanwhile, on another thread.
void finalize_streamed(StreamedRun& sr);

// Which process of `processes` reads each file: the largest files first, each to the process with
// the fewest bytes so far (ties: the lowest process). Deterministic.
std::vector<int> assign_files(const std::vector<uint64_t>& bytes, int processes);

}  // namespace chopper
