#pragma once
// A minimal fixed-size thread pool: parallel_for runs fn(i) for i in [0, n) on up to `threads`
// threads. Results must not depend on thread count.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace chopper {

inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

// Callers catch what concerns one item (a file that cannot be read). An exception that escapes fn
// (a full disk while writing, an internal error) ends the loop: no item is started after it, the
// threads are joined, and the first such exception is rethrown on the caller's thread (an
// exception leaving a std::thread would end the process with std::terminate).
inline void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex m;
  std::exception_ptr first;
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < n && !failed.load(std::memory_order_relaxed);
         i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(m);
        if (!first) first = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  const size_t count = std::min<size_t>(threads, n);
  std::vector<std::thread> pool;
  pool.reserve(count - 1);
  for (size_t t = 1; t < count; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace chopper
