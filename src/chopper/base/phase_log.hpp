#pragma once
// Where a long command spends its time and memory: with CHOPPER_PHASES=1 in the environment, each
// mark prints one line on stderr with the wall and CPU seconds since the process started, the
// resident memory now and its peak so far (VmRSS, VmHWM). For benchmarks (bench/), never on by
// default.
#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace chopper {

inline bool phase_log_on() {
  static const bool on = [] {
    const char* v = std::getenv("CHOPPER_PHASES");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

inline void phase_mark(std::string_view what, int process = 0) {
  if (!phase_log_on()) return;
  static const auto t0 = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  long rss = -1, hwm = -1;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, "VmRSS:", 6) == 0) rss = std::strtol(line + 6, nullptr, 10);
      if (std::strncmp(line, "VmHWM:", 6) == 0) hwm = std::strtol(line + 6, nullptr, 10);
    }
    std::fclose(f);
  }
  double heap = -1, heap_free = -1;  // in use, and free but held (glibc's arenas)
#if defined(__GLIBC__)
  const struct mallinfo2 mi = mallinfo2();
  heap = static_cast<double>(mi.uordblks + mi.hblkhd) / (1 << 20);
  heap_free = static_cast<double>(mi.fordblks) / (1 << 20);
#endif
  std::fprintf(stderr,
               "phase p%d %-28.*s wall %8.3f s  cpu %8.3f s  rss %7.1f MiB  peak %7.1f MiB  heap "
               "%7.1f MiB (+%.1f free)\n",
               process, static_cast<int>(what.size()), what.data(), wall, cpu,
               static_cast<double>(rss) / 1024, static_cast<double>(hwm) / 1024, heap, heap_free);
}

}  // namespace chopper
