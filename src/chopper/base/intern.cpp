#include "chopper/base/intern.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "chopper/base/utf8.hpp"

namespace chopper {

// 16 slots to start: a table grows by doubling, and tables are many and small where memory
// matters (one per rank's trace and analysis: thousands of ranks, each table held until the run's
// end in a streamed analyze, where 1,024 slots were 4 KiB apiece).
StringTable::StringTable() : slots_(16, 0) {
  intern(std::string_view());
}

uint64_t StringTable::hash(std::string_view s) {
  // FNV-1a over 8-byte words, then a final avalanche (splitmix64).
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 0x100000001b3ULL;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

std::string_view StringTable::store(std::string_view s) {
  if (s.empty()) return std::string_view();
  if (block_used_ + s.size() > block_cap_) {
    // Blocks grow from 4 KiB to 64 KiB, so a small trace (one of thousands of ranks) holds a few
    // KiB, not 64; left uninitialised (every byte handed out is written first), so the unused
    // tail of a block is never touched.
    const size_t next = std::min<size_t>(65536, block_cap_ == 0 ? 4096 : block_cap_ * 2);
    size_t cap = s.size() > next / 2 ? s.size() : next;
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(cap));
    block_cap_ = cap;
    block_used_ = 0;
    total_block_bytes_ += cap;
  }
  char* dst = blocks_.back().get() + block_used_;
  std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  return std::string_view(dst, s.size());
}

void StringTable::grow() {
  std::vector<uint32_t> slots(slots_.size() * 2, 0);
  const size_t mask = slots.size() - 1;
  for (uint32_t id = 0; id < strings_.size(); ++id) {
    size_t p = hashes_[id] & mask;
    while (slots[p] != 0) p = (p + 1) & mask;
    slots[p] = id + 1;
  }
  slots_.swap(slots);
}

StrId StringTable::find(std::string_view s) const {
  const uint64_t h = hash(s);
  const size_t mask = slots_.size() - 1;
  for (size_t p = h & mask;; p = (p + 1) & mask) {
    uint32_t v = slots_[p];
    if (v == 0) return UINT32_MAX;
    if (hashes_[v - 1] == h && strings_[v - 1] == s) return v - 1;
  }
}

StrId StringTable::intern(std::string_view s) {
  const uint64_t h = hash(s);
  const size_t mask = slots_.size() - 1;
  size_t p = h & mask;
  for (;; p = (p + 1) & mask) {
    uint32_t v = slots_[p];
    if (v == 0) break;
    if (hashes_[v - 1] == h && strings_[v - 1] == s) return v - 1;
  }
  // Only a string not seen before is checked: every stored one is valid, so a text found above
  // was valid too.
  if (!valid_utf8(s)) [[unlikely]]
    return intern_repaired(s);
  const auto id = static_cast<StrId>(strings_.size());
  strings_.push_back(store(s));
  hashes_.push_back(h);
  slots_[p] = id + 1;
  if (strings_.size() * 2 > slots_.size()) grow();
  return id;
}

StrId StringTable::intern_repaired(std::string_view s) {
  std::string fixed(s);
  repaired_utf8_bytes_ += repair_utf8(fixed);
  return intern(fixed);
}

size_t StringTable::bytes_used() const {
  return total_block_bytes_ + strings_.capacity() * sizeof(std::string_view) +
         hashes_.capacity() * sizeof(uint64_t) + slots_.capacity() * sizeof(uint32_t);
}

}  // namespace chopper
