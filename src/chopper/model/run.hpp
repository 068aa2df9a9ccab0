#pragma once
// A training run: one RankTrace per file, ordered by rank (then file name). A file that could not
// be read keeps its place with the error; the other ranks go on.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct RankSlot {
  std::string file;
  int64_t rank = -1;  // -1 when neither distributedInfo nor the file name says
  bool ok = false;
  std::string error;     // one line, naming the file and byte offset, when !ok
  bool missing = false;  // !ok because the path does not exist (missing_path)
  RankTrace trace;
  // The trace's time span (RankTrace::first_ns/last_ns) kept when its events are not (a streamed
  // analyze keeps a shell of each rank: metadata and span); kNoTime = take it from the trace.
  Ns first_ns = kNoTime, last_ns = kNoTime;
  Ns span_first_ns() const { return first_ns != kNoTime ? first_ns : trace.first_ns(); }
  Ns span_last_ns() const { return last_ns != kNoTime ? last_ns : trace.last_ns(); }
};

// A problem of the run as a whole or of one file (pipeline/load.cpp, link/validate.cpp): one line
// naming the files, for the terminal and the `diagnostics` table.
struct RunProblem {
  RunDiag kind;
  int64_t rank = -1;               // the rank it concerns; -1 = the run (or a rank not known)
  std::vector<std::string> files;  // the files it names, sorted
  std::string message;             // one line
  uint64_t count = 1;              // how many (missing ranks, duplicate files, ...)
  int64_t of_count = -1;           // what count is out of (the world size); -1 none
};

// Rank from a file name: "rank-3", "rank3_", "rank_3", "RANK3." -> 3; -1 if none. Only the last
// path component counts. Used where a trace's metadata does not say its rank (pipeline/load.cpp)
// and to match hardware files to ranks (link/telemetry_align.cpp, link/counter_join.cpp).
int64_t rank_from_file_name(std::string_view path);

struct Run {
  std::vector<RankSlot> ranks;
  // Files found in a directory that are not traces (truth.json, other JSON): file, reason.
  std::vector<std::pair<std::string, std::string>> skipped;
  // Kineto files that hold CUPTI range-profiler counters and no GPU activity (also in `skipped`):
  // counter passes, for ingest/hardware_files.
  std::vector<std::string> counter_passes;
  // What validation found (link/validate.hpp), in the order found.
  std::vector<RunProblem> problems;
  size_t failed() const {
    size_t n = 0;
    for (const auto& r : ranks) n += r.ok ? 0 : 1;
    return n;
  }
};

}  // namespace chopper
