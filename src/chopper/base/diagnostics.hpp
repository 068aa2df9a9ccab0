#pragma once
// Anomalies in input, counted by kind with the first few examples. Nothing is dropped silently:
// every event a reader cannot use is counted here and shown by `chopper info` and `analyze`.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chopper {

// How bad a problem is. error: the result would be wrong or partial (a file unread, files of two
// runs mixed); warning: the result holds, with less in it than the input (events skipped, ranks
// missing); info: worth knowing (the link rate, a file that is not a trace).
enum class Severity : uint8_t { kError, kWarning, kInfo };
std::string_view severity_name(Severity s);  // "error", "warning", "info"

// The run-level diagnostic kinds: what loading and validating a run (ingest/load, link/validate)
// find, declared once here with their severity and meaning. X(enumerator, name, severity, doc).
// Readers' and linking's per-event anomalies (Diagnostics below) keep their own names
// (docs/formats.md); in the `diagnostics` table they are warnings.
#define CHOPPER_RUN_DIAGNOSTICS(X)                                                               \
  X(kMissingPath, "missing_path", kError,                                                        \
    "a path named on the command line does not exist; the other paths are read")                 \
  X(kUnreadableFile, "unreadable_file", kError,                                                  \
    "a trace file (named, or found in a directory under a trace name) cannot be read; the "      \
    "example names the byte offset; the other ranks go on")                                      \
  X(kDuplicateRank, "duplicate_rank", kError,                                                    \
    "two or more files claim one rank (from distributedInfo or the file name)")                  \
  X(kWorldSizeMismatch, "world_size_mismatch", kError,                                           \
    "the files' distributedInfo.world_size differ")                                              \
  X(kRankOutOfRange, "rank_out_of_range", kError, "a rank at or above its file's world size")    \
  X(kDifferentRuns, "different_runs", kError,                                                    \
    "the files come from different runs: time spans far apart or differing distributed "         \
    "metadata (world size, backend); --split-runs analyses each run on its own")                 \
  X(kMissingRanks, "missing_ranks", kWarning,                                                    \
    "ranks below the world size that no file holds (a subset of ranks was profiled, or files "   \
    "are missing)")                                                                              \
  X(kRankAssigned, "rank_assigned", kWarning,                                                    \
    "a file says its rank neither in distributedInfo nor in its name: it got a unique id above " \
    "the known ranks and world size, in path order")                                             \
  X(kNotATrace, "not_a_trace", kInfo,                                                            \
    "a JSON file in a run directory that is not a trace (truth.json, rocprofv3 or amd-smi "      \
    "JSON, a CUPTI counter pass); skipped")                                                      \
  X(kRunSplit, "run_split", kInfo,                                                               \
    "--split-runs: the files were grouped into several runs; this is one of them")               \
  X(kGpuActivityUnlinked, "gpu_activity_unlinked", kInfo,                                        \
    "kernels, memcpys and memsets that reached no host op (count of of_count; 1 - count / "      \
    "of_count is the link rate)")

enum class RunDiag : uint8_t {
#define CHOPPER_X(e, name, sev, doc) e,
  CHOPPER_RUN_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
std::string_view run_diag_name(RunDiag k);
Severity run_diag_severity(RunDiag k);
std::string_view run_diag_doc(RunDiag k);
// Parses a name written by run_diag_name; false if it is not a run-level kind.
bool parse_run_diag(std::string_view name, RunDiag& k);
// Every kind, in declaration order.
std::span<const RunDiag> all_run_diags();

class Diagnostics {
 public:
  static constexpr size_t kMaxExamples = 3;

  struct Entry {
    std::string kind;
    uint64_t count = 0;
    std::vector<std::string> examples;
  };

  // Counts one anomaly of `kind`; `make_example()` (returning std::string) is called only while
  // fewer than kMaxExamples examples are stored, so the common path costs a hash lookup.
  template <class F>
  void add(std::string_view kind, F&& make_example) {
    Entry& e = entry(kind);
    ++e.count;
    if (e.examples.size() < kMaxExamples) keep_example(e, make_example());
  }
  void add(std::string_view kind, std::string example) {
    add(kind, [&] { return std::move(example); });
  }
  void add_count(std::string_view kind, uint64_t n);

  // Adds every entry of `other` (examples are kept up to kMaxExamples).
  void merge(const Diagnostics& other);

  const std::vector<Entry>& entries() const { return entries_; }
  uint64_t count(std::string_view kind) const;
  uint64_t total() const;
  bool empty() const { return entries_.empty(); }

 private:
  Entry& entry(std::string_view kind);
  // Stores an example, its invalid UTF-8 repaired (examples quote input text).
  static void keep_example(Entry& e, std::string example);
  std::vector<Entry> entries_;  // in order of first occurrence
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace chopper
