#pragma once
// Validation of a loaded run before any analysis (docs/formats.md, "One run"): every rank once,
// one world size, one run. Problems are RunProblems (model/run.hpp) of the kinds declared in
// base/diagnostics.hpp; the `diagnostics` table (report/diagnostics_report.hpp) holds them with
// the readers' anomalies and the link rate per rank.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/base/time.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

struct ValidateOptions {
  // Group the files into runs (RunGroups) instead of reporting different_runs, duplicate_rank and
  // world_size_mismatch as errors.
  bool split_runs = false;
  // Two ranks' time spans belong to one run when the gap between them is at most the longer of
  // this and the longer span. One minute is far above the clock skew of synchronised nodes and far
  // below the time between two jobs.
  Ns min_run_gap_ns = 60'000'000'000;
};

// The ranks of one run: indices into Run::ranks.
using RunGroup = std::vector<size_t>;

// Validates `run` (its ranks as load_run left them) and records what it finds in run.problems:
//  - a readable file whose rank is unknown gets a unique id: above the highest known rank and the
//    largest world size, in path order (rank_assigned; trace.meta.rank_source "assigned"), so
//    that no rank is -1 (NULL in the tables means "all ranks"); ranks are then re-sorted;
//  - unreadable and missing files become unreadable_file / missing_path problems;
//  - world_size_mismatch, rank_out_of_range, different_runs, duplicate_rank, missing_ranks.
// Returns the runs found: one group holding every rank when the files are one run. Files group
// by time span (ValidateOptions::min_run_gap_ns) and distributed metadata (world size and backend
// when distributedInfo gives them), and the n-th copy of a rank goes to the n-th group. With
// split_runs, different_runs / duplicate_rank / world_size_mismatch are not reported; one
// run_split (info) names the groups instead. Unreadable files go with the first group.
// Deterministic: independent of the order of run.ranks beyond rank and file name.
std::vector<RunGroup> validate_run(Run& run, const ValidateOptions& opt = {});

// Whether run.problems hold an error that makes the files not one run (different_runs,
// duplicate_rank, world_size_mismatch): the analysis must not merge them.
bool run_is_mixed(const Run& run);

// Moves each group's ranks into a Run of its own (groups as validate_run returned them, in that
// order). Each gets the problems that name one of its files or no file, a run_split problem
// naming its files, and the skipped files and counter passes of `run` (first group only).
std::vector<Run> split_run(Run&& run, const std::vector<RunGroup>& groups);

// One row of the `diagnostics` table.
struct DiagnosticRow {
  int64_t rank = -1;  // -1: the whole run, or a file whose rank is unknown (file says which)
  std::string file;   // empty: several or none (the example names them)
  std::string kind;   // a RunDiag name, or a reader's/linking's anomaly kind
  Severity severity = Severity::kWarning;
  std::string stage;  // "load", "validate", "read" (readers and linking), "link"
  uint64_t count = 0;
  int64_t of_count = -1;     // what count is out of (linkable activities, world size); -1 unknown
  std::string example;       // the first example or the one-line message
  Ns gpu_time_ns = -1;       // GPU time of the activities concerned; -1 unknown
  Ns rank_gpu_time_ns = -1;  // the rank's GPU time (for shares over several ranks)
  double share_of_gpu_time = NAN;  // gpu_time_ns / rank_gpu_time_ns; NaN unknown
  double share_of_events = NAN;    // count / the rank's trace events (reader rows); NaN unknown
};

// The diagnostics of a run: its problems, each readable rank's reader and linking anomalies (one
// row per kind) and its gpu_activity_unlinked row (always, so the link rate per rank is there).
// A rank's GPU time is the summed duration of its kernels, memcpys and memsets.
std::vector<DiagnosticRow> run_diagnostics(const Run& run);
// Its parts: the problems and skipped files (run_level_diagnostics), then each readable rank's
// rows (rank_diagnostics), in run.ranks order.
std::vector<DiagnosticRow> run_level_diagnostics(const Run& run);
std::vector<DiagnosticRow> rank_diagnostics(const RankSlot& slot);

}  // namespace chopper
