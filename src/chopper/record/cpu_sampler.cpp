#include "chopper/record/cpu_sampler.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "chopper/base/error.hpp"
#include "chopper/record/clock.hpp"

namespace chopper::record {

namespace {

// Parses an unsigned decimal at p (skipping spaces); p moves past it.
uint64_t next_number(const char*& p, const char* end) {
  while (p < end && *p == ' ') ++p;
  uint64_t v = 0;
  while (p < end && *p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

// 100 * part / total with one decimal, as tenths (0..1000).
uint64_t tenths(uint64_t part, uint64_t total) {
  return std::min<uint64_t>(1000, (part * 1000 + total / 2) / total);
}

// Whether the text (the start of /proc/stat) holds every cpu line whole: a line of another kind
// has started after them.
bool cpu_lines_complete(const char* p, ssize_t n) {
  const char* end = p + n;
  while (end - p >= 3) {
    if (std::memcmp(p, "cpu", 3) != 0) return true;
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (nl == nullptr) return false;
    p = nl + 1;
  }
  return false;
}

}  // namespace

CpuSampler::~CpuSampler() {
  if (fd_ >= 0) ::close(fd_);
}

void CpuSampler::open(const char* path) {
  path_ = path;
  fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(path_ + ": cannot be opened: " + std::strerror(errno));
  // The cpu lines come first; the rest (interrupt counts) is not read beyond what fits.
  text_.resize(16384);
}

void CpuSampler::sample(CsvStream& out) {
  ssize_t n = 0;
  int64_t before = 0, after = 0;
  for (;;) {
    before = realtime_ns();
    n = ::pread(fd_, text_.data(), text_.size(), 0);
    after = realtime_ns();
    if (n < 0) return;  // /proc/stat always reads; a failure leaves the tick without rows
    if (static_cast<size_t>(n) < text_.size() || cpu_lines_complete(text_.data(), n)) break;
    text_.resize(text_.size() * 2);
  }
  const int64_t time_ns = before + (after - before) / 2;
  const char* p = text_.data();
  const char* end = p + n;
  while (end - p > 3 && std::memcmp(p, "cpu", 3) == 0) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (nl == nullptr) break;
    const char* q = p + 3;
    if (*q >= '0' && *q <= '9') {
      const unsigned cpu = static_cast<unsigned>(next_number(q, nl));
      uint64_t f[8] = {};  // user nice system idle iowait irq softirq steal
      for (uint64_t& v : f) v = next_number(q, nl);
      Times t;
      t.busy_user = f[0] + f[1];
      t.busy_system = f[2] + f[5] + f[6];
      t.idle = f[3];
      t.iowait = f[4];
      t.total = f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
      t.seen = true;
      row(out, time_ns, cpu, t);
    }
    p = nl + 1;
  }
}

// The interval since this CPU's last row; none while its counters have not moved (they count in
// clock ticks, 10 ms at USER_HZ 100: the next row then covers the longer interval).
void CpuSampler::row(CsvStream& out, int64_t time_ns, unsigned cpu, const Times& now) {
  if (cpu >= last_.size()) last_.resize(cpu + 1);
  Times& last = last_[cpu];
  if (!last.seen || now.total < last.total) {
    last = now;
    return;
  }
  const uint64_t total = now.total - last.total;
  if (total == 0) return;
  auto delta = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
  const uint64_t idle = delta(now.idle, last.idle) + delta(now.iowait, last.iowait);
  const uint64_t util = 1000 - tenths(std::min(idle, total), total);
  const uint64_t user = tenths(delta(now.busy_user, last.busy_user), total);
  const uint64_t system = tenths(delta(now.busy_system, last.busy_system), total);
  const uint64_t iowait = tenths(delta(now.iowait, last.iowait), total);
  fmt::memory_buffer& b = out.buf();
  append_int(b, time_ns);
  b.push_back(',');
  append_int(b, cpu);
  for (uint64_t v : {util, user, system, iowait}) {
    b.push_back(',');
    append_tenths(b, v);
  }
  b.push_back('\n');
  last = now;
}

}  // namespace chopper::record
