#pragma once
// Anomalies in input, counted by kind with the first few examples. Nothing is dropped silently:
// every event a reader cannot use is counted here and shown by `chopper info` and `analyze`.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace chopper {

class Diagnostics {
 public:
  static constexpr size_t kMaxExamples = 3;

  struct Entry {
    std::string kind;
    uint64_t count = 0;
    std::vector<std::string> examples;
  };

  // Counts one anomaly of `kind`; `make_example()` (returning std::string) is called only while
  // fewer than kMaxExamples examples are stored, so the common path costs a hash lookup.
  template <class F>
  void add(std::string_view kind, F&& make_example) {
    Entry& e = entry(kind);
    ++e.count;
    if (e.examples.size() < kMaxExamples) keep_example(e, make_example());
  }
  void add(std::string_view kind, std::string example) {
    add(kind, [&] { return std::move(example); });
  }
  void add_count(std::string_view kind, uint64_t n);

  // Adds every entry of `other` (examples are kept up to kMaxExamples).
  void merge(const Diagnostics& other);

  const std::vector<Entry>& entries() const { return entries_; }
  uint64_t count(std::string_view kind) const;
  uint64_t total() const;
  bool empty() const { return entries_.empty(); }

 private:
  Entry& entry(std::string_view kind);
  // Stores an example, its invalid UTF-8 repaired (examples quote input text).
  static void keep_example(Entry& e, std::string example);
  std::vector<Entry> entries_;  // in order of first occurrence
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace chopper
