#pragma once
// Sorting for columns that are nearly in order already (a trace's events in file order).
#include <algorithm>
#include <cstddef>
#include <vector>

namespace chopper {

// Sorts v by `less` (a strict weak order). When v is made of a few ascending runs, as the rows
// of a trace nearly in time order are, the runs are merged pairwise: a few sequential passes
// instead of std::sort's jumps about the data. With many runs, std::sort.
template <class T, class Less>
void sort_by_runs(std::vector<T>& v, Less less) {
  std::vector<size_t> bounds{0};  // run j is [bounds[j], bounds[j + 1])
  for (size_t i = 1; i < v.size(); ++i) {
    if (less(v[i], v[i - 1])) {
      bounds.push_back(i);
      if (bounds.size() > 64 + v.size() / 64) {
        std::sort(v.begin(), v.end(), less);
        return;
      }
    }
  }
  bounds.push_back(v.size());
  while (bounds.size() > 2) {
    const size_t runs = bounds.size() - 1;
    std::vector<size_t> next{0};
    size_t j = 0;
    for (; j + 2 <= runs; j += 2) {
      std::inplace_merge(v.begin() + static_cast<std::ptrdiff_t>(bounds[j]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[j + 1]),
                         v.begin() + static_cast<std::ptrdiff_t>(bounds[j + 2]), less);
      next.push_back(bounds[j + 2]);
    }
    if (j < runs) next.push_back(bounds[runs]);  // an odd run out: merged next round
    bounds = std::move(next);
  }
}

}  // namespace chopper
