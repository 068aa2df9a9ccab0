#pragma once
// CMD's process tree from /proc: every thread's CPU time and the CPU it last ran on
// (<host>.threads.csv).
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chopper/record/csv_stream.hpp"

namespace chopper::record {

class ThreadSampler {
 public:
  // Follows `root` (CMD) and every process started under it. `proc`: where /proc is (tests).
  explicit ThreadSampler(pid_t root, std::string proc = "/proc");
  ThreadSampler(const ThreadSampler&) = delete;
  ThreadSampler& operator=(const ThreadSampler&) = delete;
  ~ThreadSampler();
  // One pass over the tree: a row per thread whose CPU time changed since its last row, or that
  // is new. Processes started since the last pass join the tree (their parent's
  // /proc/PID/task/TID/children: the main thread's every pass, the other threads' every 10th; or,
  // where the kernel has no such file, every /proc/PID/stat's parent); a process stays followed
  // after its parent ends, until it ends itself.
  void sample(CsvStream& out);
  // Every process seen in the tree so far, CMD first.
  const std::vector<pid_t>& pids() const { return seen_; }

 private:
  struct Thread {
    pid_t pid = 0;
    uint64_t start_ticks = 0, cpu_ticks = 0, run_ns = UINT64_MAX;
    int stat_fd = -1, sched_fd = -1, children_fd = -1;
    uint64_t pass = 0;
  };
  // The fields of a thread's stat line used here.
  struct Stat {
    std::string_view comm;
    long ppid = 0, processor = 0;
    uint64_t cpu_ticks = 0, start_ticks = 0;
  };
  void scan_process(pid_t pid, CsvStream& out, std::vector<pid_t>& queue);
  void scan_thread(pid_t pid, const std::string& task_dir, const char* tid_name, int64_t time_ns,
                   CsvStream& out, std::vector<pid_t>& queue);
  bool read_file(int& cached_fd, const std::string& dir, const char* leaf, std::string& text);
  void add_children(const std::string& text, std::vector<pid_t>& queue);
  void adopt_by_parent(std::vector<pid_t>& queue);
  void forget(Thread& t);
  static bool parse_stat(const std::string& text, Stat& s);

  std::string proc_;
  bool children_files_ = false;
  bool schedstat_ = false;  // /proc/PID/task/TID/schedstat (CONFIG_SCHED_INFO)
  uint64_t ns_per_tick_ = 10000000;
  uint64_t pass_ = 0;
  size_t fds_ = 0, fd_budget_ = 0;
  std::vector<pid_t> live_, seen_;
  std::unordered_set<pid_t> known_;
  std::unordered_map<pid_t, Thread> threads_;  // by thread id
  std::string text_, dir_, path_;              // scratch, reused
};

}  // namespace chopper::record
