// FlatIndex: dense ids in order of first sight, stable across growth, whatever the hash.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <unordered_map>

#include "chopper/base/flat_index.hpp"

using chopper::FlatIndex;

namespace {

struct StdHash {
  size_t operator()(uint64_t x) const { return std::hash<uint64_t>{}(x); }
};
// Every key in one of 4 buckets: long probe runs, wrap-around at the table's end.
struct BadHash {
  size_t operator()(uint64_t x) const { return x % 4; }
};

template <class Hash>
void check_against_map(size_t n_keys, size_t lookups, bool reserve) {
  FlatIndex<uint64_t, Hash> index;
  if (reserve) index.reserve(n_keys);
  std::unordered_map<uint64_t, uint32_t> truth;  // key -> first-seen order
  uint64_t x = 12345;
  for (size_t i = 0; i < lookups; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // LCG: keys repeat at random
    const uint64_t k = (x >> 33) % n_keys;
    bool fresh = false;
    const uint32_t id = index.id(k, &fresh);
    auto [it, added] = truth.try_emplace(k, static_cast<uint32_t>(truth.size()));
    ASSERT_EQ(fresh, added) << "key " << k;
    ASSERT_EQ(id, it->second) << "key " << k;
    ASSERT_EQ(index.key(id), k);
    // The same key again: the last-found shortcut gives the same id, not fresh.
    ASSERT_EQ(index.id(k, &fresh), id);
    ASSERT_FALSE(fresh);
  }
  EXPECT_EQ(index.size(), truth.size());
}

}  // namespace

TEST(FlatIndex, IdsInFirstSeenOrderThroughGrowth) {
  // 50000 distinct keys grow the table from 1024 slots through 6 doublings.
  check_against_map<StdHash>(50000, 400000, false);
}

TEST(FlatIndex, ReservedTableGivesTheSameIds) {
  check_against_map<StdHash>(50000, 400000, true);
}

TEST(FlatIndex, CollidingHashesStillFindEveryKey) {
  check_against_map<BadHash>(3000, 20000, false);
}

TEST(FlatIndex, TupleKeys) {
  using K = std::tuple<int64_t, int32_t>;
  struct H {
    size_t operator()(const K& k) const {
      return static_cast<size_t>(std::get<0>(k) * 31 + std::get<1>(k));
    }
  };
  FlatIndex<K, H> index;
  EXPECT_TRUE(index.empty());
  EXPECT_EQ(index.id({7, 1}), 0u);
  EXPECT_EQ(index.id({7, 2}), 1u);
  EXPECT_EQ(index.id({7, 1}), 0u);
  EXPECT_EQ(index.id({-1, 0}), 2u);
  EXPECT_EQ(index.size(), 3u);
  EXPECT_EQ(index.key(1), K(7, 2));
}

// find() gives the id id() gave, UINT32_MAX for a key never added (empty index included), and
// adds nothing.
TEST(FlatIndex, FindAddsNothing) {
  FlatIndex<uint64_t, BadHash> ix;
  EXPECT_EQ(ix.find(7), UINT32_MAX);
  for (uint64_t k = 0; k < 5000; ++k) ASSERT_EQ(ix.id(k * 3), k);
  for (uint64_t k = 0; k < 5000; ++k) {
    ASSERT_EQ(ix.find(k * 3), k);
    ASSERT_EQ(ix.find(k * 3 + 1), UINT32_MAX);
  }
  EXPECT_EQ(ix.size(), 5000u);
}
