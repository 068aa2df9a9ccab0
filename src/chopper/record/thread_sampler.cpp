#include "chopper/record/thread_sampler.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "chopper/record/clock.hpp"

namespace chopper::record {

namespace {

constexpr uint64_t kOtherThreadsEvery = 10;

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

}  // namespace

ThreadSampler::ThreadSampler(pid_t root, std::string proc) : proc_(std::move(proc)) {
  live_.push_back(root);
  seen_.push_back(root);
  known_.insert(root);
  const long tck = ::sysconf(_SC_CLK_TCK);
  if (tck > 0) ns_per_tick_ = 1000000000ull / static_cast<uint64_t>(tck);
  const std::string self = proc_ + "/self/task/" + std::to_string(::getpid()) + "/children";
  children_files_ = ::access(self.c_str(), R_OK) == 0;
  schedstat_ = ::access((proc_ + "/self/schedstat").c_str(), R_OK) == 0;
  // Files of often-read threads stay open (pread from offset 0), within the descriptor limit.
  // CMD has started: a higher limit here is chopper's alone.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max && rl.rlim_cur < 65536) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 128)
    fd_budget_ = static_cast<size_t>(rl.rlim_cur) - 128;
  else if (rl.rlim_cur == RLIM_INFINITY)
    fd_budget_ = 4096;
}

ThreadSampler::~ThreadSampler() {
  for (auto& [tid, t] : threads_) forget(t);
}

void ThreadSampler::forget(Thread& t) {
  for (int* fd : {&t.stat_fd, &t.sched_fd, &t.children_fd}) {
    if (*fd < 0) continue;
    ::close(*fd);
    *fd = -1;
    --fds_;
  }
}

// Reads a /proc file whole into `text`: from the thread's open descriptor, else opened (and kept
// open when the budget allows). False when the file is gone (the thread ended).
bool ThreadSampler::read_file(int& cached_fd, const std::string& dir, const char* leaf,
                              std::string& text) {
  int fd = cached_fd;
  if (fd < 0) {
    path_.assign(dir).append("/").append(leaf);
    fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    if (fds_ < fd_budget_) {
      cached_fd = fd;
      ++fds_;
    }
  }
  if (text.capacity() < 1024) text.reserve(1024);
  size_t len = 0;
  for (;;) {
    text.resize(text.capacity());
    const ssize_t n = ::pread(fd, text.data() + len, text.size() - len, static_cast<off_t>(len));
    if (n <= 0) {
      if (n < 0) len = 0;
      break;
    }
    len += static_cast<size_t>(n);
    if (len < text.size()) break;
    text.reserve(text.size() * 2);
  }
  text.resize(len);
  if (fd != cached_fd) ::close(fd);
  return len > 0 || std::strcmp(leaf, "children") == 0;
}

// pid (comm) state ppid ... utime(14) stime(15) ... starttime(22) ... processor(39)
bool ThreadSampler::parse_stat(const std::string& text, Stat& s) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  s.comm = std::string_view(text).substr(open + 1, close - open - 1);
  const char* p = text.data() + close + 1;
  const char* end = text.data() + text.size();
  uint64_t utime = 0;
  for (int field = 3; field <= 39; ++field) {
    while (p < end && *p == ' ') ++p;
    if (p >= end) return false;
    bool neg = false;
    if (*p == '-') {
      neg = true;
      ++p;
    }
    uint64_t v = 0;
    const char* start = p;
    while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
    if (p == start) {  // the state letter
      while (p < end && *p != ' ') ++p;
      continue;
    }
    if (neg) v = 0;
    if (field == 4) s.ppid = static_cast<long>(v);
    if (field == 14) utime = v;
    if (field == 15) s.cpu_ticks = utime + v;
    if (field == 22) s.start_ticks = v;
    if (field == 39) s.processor = static_cast<long>(v);
  }
  return true;
}

void ThreadSampler::add_children(const std::string& text, std::vector<pid_t>& queue) {
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p < '0' || *p > '9')) ++p;
    pid_t v = 0;
    bool any = false;
    while (p < end && *p >= '0' && *p <= '9') {
      v = v * 10 + (*p++ - '0');
      any = true;
    }
    if (any && known_.insert(v).second) {
      seen_.push_back(v);
      queue.push_back(v);
    }
  }
}

// Without children files: every process whose parent is followed joins (repeated until none
// does, for grandchildren listed before their parent).
void ThreadSampler::adopt_by_parent(std::vector<pid_t>& queue) {
  std::vector<std::pair<pid_t, pid_t>> parents;  // (pid, ppid) of every process not yet known
  DIR* d = ::opendir(proc_.c_str());
  if (d == nullptr) return;
  std::string text;
  while (dirent* e = ::readdir(d)) {
    if (!all_digits(e->d_name)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
    if (known_.count(pid) != 0) continue;
    int no_cache = -1;
    Stat s;
    const size_t budget = fd_budget_;
    fd_budget_ = 0;  // never kept open
    const bool ok = read_file(no_cache, proc_ + "/" + e->d_name, "stat", text);
    fd_budget_ = budget;
    if (ok && parse_stat(text, s)) parents.emplace_back(pid, static_cast<pid_t>(s.ppid));
  }
  ::closedir(d);
  std::unordered_set<pid_t> followed(queue.begin(), queue.end());
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& [pid, ppid] : parents) {
      if (pid == 0 || followed.count(ppid) == 0) continue;
      known_.insert(pid);
      seen_.push_back(pid);
      queue.push_back(pid);
      followed.insert(pid);
      pid = 0;
      grew = true;
    }
  }
}

void ThreadSampler::scan_thread(pid_t pid, const std::string& task_dir, const char* tid_name,
                                int64_t time_ns, CsvStream& out, std::vector<pid_t>& queue) {
  const pid_t tid = static_cast<pid_t>(std::atol(tid_name));
  auto [it, first] = threads_.try_emplace(tid);
  Thread& t = it->second;
  std::string& dir = dir_;
  dir.assign(task_dir).append("/").append(tid_name);
  // The thread's run time (schedstat, ns; a cheaper read than stat): unchanged, the thread has
  // not run since the last pass, and its stat is not read.
  bool read_stat = true;
  if (schedstat_) {
    uint64_t run_ns = UINT64_MAX;
    if (read_file(t.sched_fd, dir, "schedstat", text_))
      run_ns = std::strtoull(text_.c_str(), nullptr, 10);
    read_stat = first || run_ns != t.run_ns || run_ns == UINT64_MAX;
    t.run_ns = run_ns;
  }
  if (read_stat) {
    Stat s;
    if (!read_file(t.stat_fd, dir, "stat", text_) || !parse_stat(text_, s)) {
      forget(t);
      threads_.erase(it);
      return;
    }
    // A thread id used again by a new thread (of this process): a first sighting.
    if (t.start_ticks != s.start_ticks || t.pid != pid) first = true;
    if (first || s.cpu_ticks != t.cpu_ticks) {
      auto b = std::back_inserter(out.buf());
      fmt::format_to(b, "{},{},{},{},", time_ns, pid, s.ppid, tid);
      append_cell(out.buf(), s.comm);
      fmt::format_to(b, ",{},{}\n", s.processor, s.cpu_ticks * ns_per_tick_);
    }
    t.pid = pid;
    t.start_ticks = s.start_ticks;
    t.cpu_ticks = s.cpu_ticks;
  }
  t.pass = pass_;
  // Children: of each process's main thread every pass (fork and spawn almost always start
  // there: torchrun's workers, DataLoader workers, subprocess), of the other threads on their
  // first sighting and every kOtherThreadsEvery passes (a process another thread starts is
  // found within that many passes): each file read costs a system call per thread.
  if (children_files_ && (tid == pid || first || pass_ % kOtherThreadsEvery == 0)) {
    if (read_file(t.children_fd, dir, "children", text_)) add_children(text_, queue);
  }
}

void ThreadSampler::scan_process(pid_t pid, CsvStream& out, std::vector<pid_t>& queue) {
  const std::string task_dir = proc_ + "/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task_dir.c_str());
  if (d == nullptr) return;  // the process has ended
  live_.push_back(pid);
  const int64_t time_ns = realtime_ns();
  while (dirent* e = ::readdir(d)) {
    if (all_digits(e->d_name)) scan_thread(pid, task_dir, e->d_name, time_ns, out, queue);
  }
  ::closedir(d);
}

void ThreadSampler::sample(CsvStream& out) {
  ++pass_;
  std::vector<pid_t> queue;
  queue.swap(live_);
  if (!children_files_) adopt_by_parent(queue);
  for (size_t i = 0; i < queue.size(); ++i) scan_process(queue[i], out, queue);
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->second.pass == pass_) {
      ++it;
      continue;
    }
    forget(it->second);
    it = threads_.erase(it);
  }
}

}  // namespace chopper::record
