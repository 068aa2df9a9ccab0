#pragma once
// Dense ids 0, 1, 2, ... for distinct keys, in order of first sight: the keys in one array behind
// an open-addressing table of ids (linear probing), and the last key found tried first, since
// rows taken in time order mostly repeat the last key. Used where one rank's rows are grouped by
// label: hundreds of thousands of groups, where a node-based hash map spends its time allocating
// and chasing pointers.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace chopper {

// Key: copyable, with ==. Hash: size_t operator()(const Key&) const.
template <class Key, class Hash>
class FlatIndex {
 public:
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  const Key& key(size_t id) const { return keys_[id]; }
  const std::vector<Key>& keys() const { return keys_; }

  // Room for n keys without growing.
  void reserve(size_t n) {
    keys_.reserve(n);
    size_t slots = kMinSlots;
    while (slots < 2 * n) slots *= 2;
    if (slots > slots_.size()) rehash(slots);
  }

  // The id of k if it has one, else UINT32_MAX (nothing is added).
  uint32_t find(const Key& k) const {
    if (last_ < keys_.size() && keys_[last_] == k) return last_;
    if (slots_.empty()) return UINT32_MAX;
    const size_t mask = slots_.size() - 1;
    for (size_t h = slot_of(k);; h = (h + 1) & mask) {
      const uint32_t s = slots_[h];
      if (s == 0) return UINT32_MAX;
      if (keys_[s - 1] == k) return s - 1;
    }
  }

  // The id of k, added if new (then *fresh is set true, else false).
  uint32_t id(const Key& k, bool* fresh = nullptr) {
    if (fresh != nullptr) *fresh = false;
    if (last_ < keys_.size() && keys_[last_] == k) return last_;
    if (2 * (keys_.size() + 1) > slots_.size())
      rehash(slots_.empty() ? kMinSlots : 2 * slots_.size());
    const size_t mask = slots_.size() - 1;
    for (size_t h = slot_of(k);; h = (h + 1) & mask) {
      const uint32_t s = slots_[h];
      if (s == 0) {
        last_ = static_cast<uint32_t>(keys_.size());
        slots_[h] = last_ + 1;
        keys_.push_back(k);
        if (fresh != nullptr) *fresh = true;
        return last_;
      }
      if (keys_[s - 1] == k) return last_ = s - 1;
    }
  }

 private:
  static constexpr size_t kMinSlots = 1024;
  // The hash's high bits, after a multiply that spreads every input bit into them.
  size_t slot_of(const Key& k) const {
    return static_cast<size_t>((static_cast<uint64_t>(Hash{}(k)) * 0x9E3779B97F4A7C15ull) >>
                               shift_);
  }
  void rehash(size_t n) {  // n: a power of two
    slots_.assign(n, 0);
    shift_ = 64;
    for (size_t x = n; x > 1; x >>= 1) --shift_;
    for (size_t i = 0; i < keys_.size(); ++i)
      for (size_t h = slot_of(keys_[i]);; h = (h + 1) & (n - 1))
        if (slots_[h] == 0) {
          slots_[h] = static_cast<uint32_t>(i + 1);
          break;
        }
  }

  std::vector<Key> keys_;
  std::vector<uint32_t> slots_;  // id + 1; 0 = empty
  unsigned shift_ = 64;
  uint32_t last_ = UINT32_MAX;
};

}  // namespace chopper
