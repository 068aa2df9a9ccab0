#pragma once
// Per-rank string interning: each distinct string is stored once in an arena and named by a dense
// uint32 id. Id 0 is the empty string. Lookups hash the bytes once (open addressing, linear probe).
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace chopper {

using StrId = uint32_t;

class StringTable {
 public:
  StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;

  StrId intern(std::string_view s);
  // Returns the id of `s` if interned, else UINT32_MAX.
  StrId find(std::string_view s) const;
  std::string_view str(StrId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }
  size_t bytes_used() const;

 private:
  static uint64_t hash(std::string_view s);
  void grow();
  std::string_view store(std::string_view s);

  std::vector<std::string_view> strings_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> slots_;  // id + 1, 0 = empty
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_cap_ = 0;
  size_t total_block_bytes_ = 0;
};

}  // namespace chopper
