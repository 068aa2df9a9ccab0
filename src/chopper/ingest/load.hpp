#pragma once
// Loading a run: directories are searched (not recursively) for trace files (*.json, *.json.gz,
// *.json.zst and the same with .pt.trace); files are parsed in parallel, linked and classified.
// The result does not depend on the thread count or on the order the paths were given in.
#include <functional>
#include <string>
#include <vector>

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
// named and found in its directory counts as named). Throws Error above max_files, before any
// file is opened.
std::vector<TracePath> run_trace_files(const std::vector<std::string>& paths, size_t max_files);

// Whether a trace is a CUPTI range-profiler pass (Kineto with profiler_metrics): hardware counters
// per kernel and no GPU activity of its own. load_run lists such files in Run::counter_passes
// instead of making them ranks.
bool is_counter_pass(const RankTrace& t);

// Reads every trace of `paths` (files and directories) on opt.threads threads into a Run. A file
// that cannot be read, or a path that does not exist, is a failed RankSlot (its error names the
// file and byte offset); so is a file found in a directory under a trace name whose content is not
// JSON at all (a corrupt first byte). A directory's JSON file that is JSON but not a trace
// (truth.json, rocprofv3 or amd-smi JSON) is skipped and listed in Run::skipped. Throws Error when
// there are more than opt.max_files trace files, before opening any.
Run load_run(const std::vector<std::string>& paths, const LoadOptions& opt = {});

// The start of the reason a file chopper wrote itself (a synthetic run's truth.json, a timeline)
// is not read as a trace (load_rank_file throws NotATraceError with it; a directory's such file is
// in Run::skipped, an info row of the diagnostics table, and not printed).
inline constexpr std::string_view kOwnOutput = "chopper's own output: ";
bool is_own_output(std::string_view why);

// Reads, links and classifies one file (throws InputError; NotATraceError for a file chopper
// wrote itself, see kOwnOutput).
RankTrace load_rank_file(const std::string& path, const KinetoReadOptions& opt = {});

}  // namespace chopper
