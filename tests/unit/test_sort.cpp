// sort_by_runs (base/sort.hpp) against std::stable_sort: the same order for input made of a few
// ascending runs (merged), of many (std::sort), and with equal keys (kept in input order by the
// index tie-break the callers use).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "chopper/base/sort.hpp"

using chopper::sort_by_runs;

namespace {

// Rows as the callers sort them: a key column and the row number as the tie-break.
void expect_sorted_like_stable_sort(const std::vector<int64_t>& key) {
  std::vector<int32_t> got(key.size()), want(key.size());
  std::iota(got.begin(), got.end(), 0);
  std::iota(want.begin(), want.end(), 0);
  auto less = [&](int32_t a, int32_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return key[ua] != key[ub] ? key[ua] < key[ub] : a < b;
  };
  sort_by_runs(got, less);
  std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) {
    return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)];
  });
  ASSERT_EQ(got, want);
}

}  // namespace

TEST(SortByRuns, EmptyOneAndSorted) {
  expect_sorted_like_stable_sort({});
  expect_sorted_like_stable_sort({5});
  expect_sorted_like_stable_sort({1, 2, 2, 3, 10});
}

TEST(SortByRuns, FewRunsAreMerged) {
  // Time-ordered rows with a few out of place, as a trace's events in file order: 1, 2, 3, 7
  // and 40 runs of 10 000 rows.
  std::mt19937_64 rng(3);
  for (int runs : {1, 2, 3, 7, 40}) {
    std::vector<int64_t> key;
    for (int r = 0; r < runs; ++r) {
      int64_t t = static_cast<int64_t>(rng() % 1000);
      for (int i = 0; i < 10000; ++i) key.push_back(t += static_cast<int64_t>(rng() % 3));
    }
    expect_sorted_like_stable_sort(key);
  }
}

TEST(SortByRuns, RandomInputFallsBackToSort) {
  std::mt19937_64 rng(4);
  for (size_t n : {2ul, 10ul, 1000ul, 100000ul}) {
    std::vector<int64_t> key(n);
    for (auto& k : key) k = static_cast<int64_t>(rng() % (n / 2 + 1));  // many equal keys
    expect_sorted_like_stable_sort(key);
  }
}

TEST(SortByRuns, DescendingInput) {
  std::vector<int64_t> key(5000);
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<int64_t>(key.size() - i);
  expect_sorted_like_stable_sort(key);
}
