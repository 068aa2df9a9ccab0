#pragma once
// Sets of time as sorted, disjoint, half-open intervals [start, end) in ns: the union, difference
// and intersection the breakdowns are made of. Every operation is a linear merge.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "chopper/base/time.hpp"

namespace chopper {

struct Interval {
  Ns start, end;
};
// Sorted by start, disjoint, non-empty.
using Intervals = std::vector<Interval>;

// Union of intervals given in start order (empty ones are ignored).
class UnionBuilder {
 public:
  void add(Ns s, Ns e) {
    if (e <= s) return;
    if (!out_.empty() && s <= out_.back().end) {
      out_.back().end = std::max(out_.back().end, e);
    } else {
      out_.push_back({s, e});
    }
  }
  Intervals take() { return std::move(out_); }

 private:
  Intervals out_;
};

inline Ns measure(const Intervals& a) {
  Ns n = 0;
  for (const Interval& i : a) n += i.end - i.start;
  return n;
}

// |a ∩ [lo, hi)|.
inline Ns measure_in(const Intervals& a, Ns lo, Ns hi) {
  if (hi <= lo || a.empty()) return 0;
  auto it =
      std::lower_bound(a.begin(), a.end(), lo, [](const Interval& i, Ns t) { return i.end <= t; });
  Ns n = 0;
  for (; it != a.end() && it->start < hi; ++it)
    n += std::min(it->end, hi) - std::max(it->start, lo);
  return n;
}

// a \ b.
inline Intervals subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (const Interval& i : a) {
    Ns s = i.start;
    while (j < b.size() && b[j].end <= s) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start < i.end) {
      if (b[k].start > s) out.push_back({s, b[k].start});
      s = std::max(s, b[k].end);
      if (s >= i.end) break;
      ++k;
    }
    if (s < i.end) out.push_back({s, i.end});
  }
  return out;
}

// a ∪ b.
inline Intervals unite(const Intervals& a, const Intervals& b) {
  UnionBuilder u;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].start <= b[j].start)) {
      u.add(a[i].start, a[i].end);
      ++i;
    } else {
      u.add(b[j].start, b[j].end);
      ++j;
    }
  }
  return u.take();
}

// |a ∩ b|.
inline Ns measure_intersection(const Intervals& a, const Intervals& b) {
  Ns n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const Ns s = std::max(a[i].start, b[j].start);
    const Ns e = std::min(a[i].end, b[j].end);
    if (e > s) n += e - s;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

}  // namespace chopper
