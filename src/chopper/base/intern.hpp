#pragma once
// Per-rank string interning: each distinct string is stored once in an arena and named by a dense
// uint32 id. Id 0 is the empty string. Lookups hash the bytes once (open addressing, linear probe).
// Every stored string is valid UTF-8: a new string that is not has its invalid bytes replaced by
// '?' (base/utf8.hpp) before it is stored, and the bytes replaced are counted.
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

  // The id of `s`, stored if new. Invalid UTF-8 is interned as its repair (see above), so two
  // texts that differ only in invalid bytes get the same id.
  StrId intern(std::string_view s);
  // Returns the id of `s` if interned, else UINT32_MAX.
  StrId find(std::string_view s) const;
  std::string_view str(StrId id) const { return strings_[id]; }
  size_t size() const { return strings_.size(); }
  size_t bytes_used() const;
  // Bytes of invalid UTF-8 replaced so far, over all intern() calls (each call counts its own).
  uint64_t repaired_utf8_bytes() const { return repaired_utf8_bytes_; }
  // Counts n more (another table's, whose strings were interned into this one: they are valid).
  void add_repaired_utf8_bytes(uint64_t n) { repaired_utf8_bytes_ += n; }

 private:
  static uint64_t hash(std::string_view s);
  void grow();
  std::string_view store(std::string_view s);
  StrId intern_repaired(std::string_view s);

  std::vector<std::string_view> strings_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> slots_;  // id + 1, 0 = empty
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_used_ = 0;
  size_t block_cap_ = 0;
  size_t total_block_bytes_ = 0;
  uint64_t repaired_utf8_bytes_ = 0;
};

}  // namespace chopper
