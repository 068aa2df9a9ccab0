#pragma once
// Reading a run's trace files: directories are searched (not recursively) for trace files
// (*.json, *.json.gz, *.json.zst and the same with .pt.trace), each file read into a RankTrace.
// Linking and classifying them is the pipeline's (pipeline/load.hpp: load_run, load_rank_file),
// so that ingest/ does not depend on link/ (docs/architecture.md, "Layers").
#include <functional>
#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

// The most trace files one run may have unless raised (--max-files): above the rank counts that
// one machine analyses (thousands; MPI beyond), below what a mistaken path (a home directory, a
// dataset folder of JSON files) would make chopper open. Checked before any file is opened.
inline constexpr size_t kDefaultMaxFiles = 16384;

struct LoadOptions {
  KinetoReadOptions kineto;
  unsigned threads = 0;                 // 0 = all cores
  size_t max_files = kDefaultMaxFiles;  // load_run throws Error above this many trace files
  // Host execution traces named (--et), besides those found among the paths (ingest/et).
  std::vector<std::string> et_files;
  // Called (serialised, from the loading threads) after each file: files done, files in all,
  // bytes of the files done. For a progress display; may be empty.
  std::function<void(size_t, size_t, uint64_t)> progress;
};

struct TracePath {
  std::string path;
  bool from_directory;  // found by listing a directory (skipped if it is not a trace)
  // Found in a directory but not a readable regular file (a FIFO, a socket, a directory, a
  // dangling symbolic link): why it is skipped. Such entries are never opened.
  std::string skip;
  bool missing = false;  // named on the command line and does not exist
};
// Expands directories into their trace files. A path that does not exist is returned with
// `missing` set (load_run makes it a failed rank: the other paths are read). Throws Error for a
// directory that cannot be listed; an entry of a directory that cannot be examined is listed with
// its reason (TracePath::skip), not an error.
std::vector<TracePath> expand_trace_paths(const std::vector<std::string>& paths);

// The trace files of a run: paths expanded (directories listed), in path order, each once (a file
// named and found in its directory counts as named), host execution traces left out (their head
// says so: ingest/et/et_files.hpp). Throws Error above max_files, before any
// file is opened.
std::vector<TracePath> run_trace_files(const std::vector<std::string>& paths, size_t max_files);

// Whether a trace is a CUPTI range-profiler pass (Kineto with profiler_metrics): hardware counters
// per kernel and no GPU activity of its own. load_run lists such files in Run::counter_passes
// instead of making them ranks.
bool is_counter_pass(const RankTrace& t);

// The start of the reason a file chopper wrote itself (a synthetic run's truth.json, a timeline)
// is not read as a trace (load_rank_file throws NotATraceError with it; a directory's such file is
// in Run::skipped, an info row of the diagnostics table, and not printed).
inline constexpr std::string_view kOwnOutput = "chopper's own output: ";
bool is_own_output(std::string_view why);

// Reads one trace file, unlinked (pipeline/load.hpp: load_rank_file reads, links and classifies).
// Throws InputError; NotATraceError for a file chopper wrote itself (see kOwnOutput).
RankTrace read_rank_file(const std::string& path, const KinetoReadOptions& opt = {});

// Whether the reader's NotATraceError says the content does not start like JSON ('{' or '['), as
// opposed to a JSON document that is not a trace (a directory's truth.json, rocprofv3 JSON).
bool not_json_content(const NotATraceError& e);

// Gives back the capacity each column reserved and did not fill, once the trace is linked (the
// reader and linking's temporaries leave that room; see load.cpp).
void trim_trace(RankTrace& t);

}  // namespace chopper
