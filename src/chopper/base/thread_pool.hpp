#pragma once
// A minimal fixed-size thread pool: parallel_for runs fn(i) for i in [0, n) on up to `threads`
// threads and rethrows nothing (callers catch per item). Results must not depend on thread count.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace chopper {

inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

// fn must not throw.
inline void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  const size_t count = std::min<size_t>(threads, n);
  std::vector<std::thread> pool;
  pool.reserve(count - 1);
  for (size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace chopper
