#pragma once
// The two clocks chopper record stamps with: CLOCK_REALTIME (the clock of Kineto traces) and
// CLOCK_MONOTONIC (the ticker's).
#include <time.h>

#include <cstdint>

namespace chopper::record {

inline int64_t clock_ns(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
inline int64_t realtime_ns() {
  return clock_ns(CLOCK_REALTIME);
}
inline int64_t monotonic_ns() {
  return clock_ns(CLOCK_MONOTONIC);
}

}  // namespace chopper::record
