#pragma once
// Per logical CPU utilization from /proc/stat, one row per CPU per tick (<host>.cpu.csv).
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/record/csv_stream.hpp"

namespace chopper::record {

class CpuSampler {
 public:
  CpuSampler() = default;
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;
  ~CpuSampler();
  // Opens /proc/stat (kept open: each tick reads it again from offset 0). Throws Error.
  void open(const char* path = "/proc/stat");
  // Reads /proc/stat once and appends a row per CPU whose counters moved since its last row
  // (nothing on the first read: the baseline). The row's time is the realtime midpoint of the read.
  void sample(CsvStream& out);

 private:
  // The counters of one CPU, in clock ticks.
  struct Times {
    uint64_t busy_user = 0, busy_system = 0, iowait = 0, idle = 0, total = 0;
    bool seen = false;
  };
  void row(CsvStream& out, int64_t time_ns, unsigned cpu, const Times& now);
  int fd_ = -1;
  std::string path_;
  std::vector<char> text_;
  std::vector<Times> last_;
};

}  // namespace chopper::record
