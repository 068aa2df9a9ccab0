#pragma once
// An output directory that one run writes at a time, all or nothing.
//
// - A lock: flock(2) on DIR/.chopper.lock, taken when the OutputDir is made and held until it is
//   destroyed. A second writer gets chopper::Error at once (it does not wait), naming the
//   directory. The lock file stays (removing it would race with a writer taking it).
// - Staging: each output file is written under a temporary name in DIR (".chopper-tmp-PID-NAME")
//   and renamed to its name by commit(), so an interrupted run (SIGINT, a crash, a full disk)
//   leaves the earlier run's files whole; its temporary files are removed when it is destroyed
//   without commit(), or, if it was killed, by the next run (under the lock no one else writes
//   here).
// - No stale files: commit() removes DIR/<table>.csv for every table this run declared (every
//   table passed to recorder()) that it did not write as CSV, so `--no-csv` after a run with CSVs
//   leaves no CSV of an earlier run beside the new database. Only such files are removed.
#include <set>
#include <string>
#include <vector>

#include "chopper/model/table.hpp"

namespace chopper {

// analyze --split-runs writes DIR/run-1 ... DIR/run-K. A later split into DIR that finds fewer
// runs removes the run-<j> directories (j > K) an earlier one wrote: those holding only what
// analyze writes (.chopper.lock, chopper.sqlite, *.csv, temporary files). One holding anything else
// is left, and its path returned in `kept`. Returns the directories removed.
std::vector<std::string> remove_stale_run_dirs(const std::string& dir, size_t runs,
                                               std::vector<std::string>& kept);

class OutputDir {
 public:
  // Creates DIR (and its parents) if needed, takes the lock, removes temporary files that an
  // interrupted run left. Throws chopper::Error naming DIR.
  explicit OutputDir(std::string dir);
  ~OutputDir();  // removes the staged files unless committed; releases the lock
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::string& dir() const { return dir_; }
  // The path to write the file DIR/`name` to until commit() (a temporary name in DIR).
  std::string stage(const std::string& name);
  // A sink that records the name of every table given to it (and discards the rows): give it
  // every table the run writes.
  TableSink& recorder() { return recorder_; }
  // Renames every staged file to its name, then removes the CSVs of declared tables that were
  // not staged. Throws chopper::Error naming the file that could not be renamed or removed.
  void commit();

  // The temporary-name prefix (tests).
  static constexpr const char* kTempPrefix = ".chopper-tmp-";
  static constexpr const char* kLockName = ".chopper.lock";

 private:
  struct Recorder : TableSink {
    std::set<std::string> names;
    void begin(const TableSchema& s) override { names.insert(s.name); }
    void row(std::span<const Cell>) override {}
    void end() override {}
  };
  std::string dir_;
  int lock_fd_ = -1;
  std::vector<std::pair<std::string, std::string>> staged_;  // temporary path, final name
  bool committed_ = false;
  Recorder recorder_;
};

}  // namespace chopper
