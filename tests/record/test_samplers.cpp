// The /proc samplers of chopper record on hand-made /proc files: the CPU rows of two /proc/stat
// readings computed by hand, and the process tree of a fake /proc (the kernel's children files
// absent, so processes are found by their parent, as on kernels without CONFIG_PROC_CHILDREN).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chopper/record/cpu_sampler.hpp"
#include "chopper/record/csv_stream.hpp"
#include "chopper/record/thread_sampler.hpp"

namespace {

namespace fs = std::filesystem;

std::string dir_for(const std::string& name) {
  const fs::path d = fs::path(RECORD_TEST_TMP) / ("samplers." + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The data lines of a file (the header dropped), each without its time (first cell).
std::vector<std::string> rows_without_time(const std::string& path) {
  std::vector<std::string> rows;
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) rows.push_back(line.substr(line.find(',') + 1));
  return rows;
}

// Two readings of /proc/stat. cpu0 moves by user 60, nice 10, system 20, idle 30, iowait 10,
// irq 5, softirq 5 (total 140): util = 100 x (1 - 40/140) = 71.4, user = 70/140 = 50.0, system =
// 30/140 = 21.4, iowait = 10/140 = 7.1. cpu1 does not move: no row (its next row covers the
// longer interval). The first reading is the baseline: no rows.
TEST(RecordCpuSampler, RowsFromTwoReadings) {
  const std::string d = dir_for("cpu");
  const std::string stat = d + "/stat";
  const std::string tail = "intr 12345 0 0\nctxt 999\nbtime 1\n";
  write(stat,
        "cpu  200 0 100 1600 100 0 0 0 0 0\n"
        "cpu0 100 0 50 800 50 0 0 0 0 0\n"
        "cpu1 100 0 50 800 50 0 0 0 0 0\n" +
            tail);
  chopper::record::CpuSampler cpu;
  cpu.open(stat.c_str());
  chopper::record::CsvStream out;
  out.open(d + "/cpu.csv", "time_ns,cpu,util_pct,user_pct,system_pct,iowait_pct");
  cpu.sample(out);
  out.flush();
  EXPECT_TRUE(rows_without_time(d + "/cpu.csv").empty());
  write(stat,
        "cpu  300 10 120 1630 110 5 5 0 0 0\n"
        "cpu0 160 10 70 830 60 5 5 0 0 0\n"
        "cpu1 100 0 50 800 50 0 0 0 0 0\n" +
            tail);
  cpu.sample(out);
  out.close();
  EXPECT_EQ(rows_without_time(d + "/cpu.csv"), std::vector<std::string>{"0,71.4,50.0,21.4,7.1"});
}

// A stat line with the fields the sampler reads: ppid (4), utime (14), stime (15), starttime (22),
// processor (39); the others 0.
std::string stat_line(int pid, const std::string& comm, int ppid, int utime, int stime, int start,
                      int processor) {
  std::string s = std::to_string(pid) + " (" + comm + ") S";
  for (int field = 4; field <= 52; ++field) {
    int v = 0;
    if (field == 4) v = ppid;
    if (field == 14) v = utime;
    if (field == 15) v = stime;
    if (field == 22) v = start;
    if (field == 39) v = processor;
    s += " " + std::to_string(v);
  }
  return s + "\n";
}

void thread(const std::string& proc, int pid, int tid, const std::string& comm, int ppid, int utime,
            int stime, int start, int processor) {
  const std::string line = stat_line(tid, comm, ppid, utime, stime, start, processor);
  write(proc + "/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat", line);
  if (pid == tid) write(proc + "/" + std::to_string(pid) + "/stat", line);
}

// CMD (100) with a second thread whose name holds a comma, and a child process (101) found by
// its parent; rows only for threads that are new or whose CPU time moved; a thread id used again
// by a new thread (another start time) is a first sighting; a process stays followed after its
// parent is gone. CPU time: ticks x 10^9 / sysconf(_SC_CLK_TCK).
TEST(RecordThreadSampler, FakeProcTree) {
  const std::string d = dir_for("threads");
  const std::string proc = d + "/proc";
  const long tck = sysconf(_SC_CLK_TCK);
  auto ns = [&](long ticks) { return std::to_string(ticks * (1000000000L / tck)); };
  thread(proc, 100, 100, "python3", 1, 5, 1, 1000, 3);
  thread(proc, 100, 105, "pt_data, \"worker\"", 1, 2, 0, 1001, 7);
  thread(proc, 101, 101, "pt_main_thread", 100, 0, 0, 1002, 0);
  thread(proc, 999, 999, "unrelated", 1, 50, 0, 10, 1);  // not under CMD: not followed
  chopper::record::ThreadSampler threads(100, proc);
  chopper::record::CsvStream out;
  out.open(d + "/threads.csv", "time_ns,pid,ppid,tid,comm,processor,cpu_time_ns");
  threads.sample(out);
  out.flush();
  auto rows = rows_without_time(d + "/threads.csv");
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::string>{"100,1,100,python3,3," + ns(6),
                                            "100,1,105,\"pt_data, \"\"worker\"\"\",7," + ns(2),
                                            "101,100,101,pt_main_thread,0,0"}));
  EXPECT_EQ(threads.pids(), (std::vector<pid_t>{100, 101}));

  // Nothing moved: no row. Then thread 105 runs 3 more ticks, and thread id 101 is a new thread
  // (start 2000) with the same CPU time.
  out.open(d + "/threads.csv", "time_ns,pid,ppid,tid,comm,processor,cpu_time_ns");
  threads.sample(out);
  out.flush();
  EXPECT_TRUE(rows_without_time(d + "/threads.csv").empty());
  thread(proc, 100, 105, "pt_data, \"worker\"", 1, 4, 1, 1001, 6);
  thread(proc, 101, 101, "pt_main_thread", 100, 0, 0, 2000, 1);
  threads.sample(out);
  out.flush();
  rows = rows_without_time(d + "/threads.csv");
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::string>{"100,1,105,\"pt_data, \"\"worker\"\"\",6," + ns(5),
                                            "101,100,101,pt_main_thread,1,0"}));

  // CMD ends (its /proc entry gone); its child goes on and is still followed.
  fs::remove_all(proc + "/100");
  thread(proc, 101, 101, "pt_main_thread", 1, 9, 1, 2000, 1);
  out.open(d + "/threads.csv", "time_ns,pid,ppid,tid,comm,processor,cpu_time_ns");
  threads.sample(out);
  out.close();
  EXPECT_EQ(rows_without_time(d + "/threads.csv"),
            std::vector<std::string>{"101,1,101,pt_main_thread,1," + ns(10)});
  EXPECT_EQ(threads.pids(), (std::vector<pid_t>{100, 101}));
}

}  // namespace
