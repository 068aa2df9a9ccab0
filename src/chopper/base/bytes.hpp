#pragma once
// A plain binary encoding for what crosses processes (an MPI run's per-rank results): values of
// trivially copyable types as their bytes, strings and vectors with a 64-bit length. Both ends are
// the same binary on the same kind of machine, so no byte order or versioning is needed; a reader
// that runs out of bytes throws Error, never reads past the end.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "chopper/base/error.hpp"

namespace chopper {

class ByteWriter {
 public:
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void put(const T& v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_str(std::string_view s) {
    put<uint64_t>(s.size());
    out_.append(s);
  }
  // A vector of trivially copyable values, in one copy.
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void put_pod_vec(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    const size_t at = out_.size();
    out_.resize(at + v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(out_.data() + at, v.data(), v.size() * sizeof(T));
  }
  std::string& bytes() { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  template <class T>
  requires std::is_trivially_copyable_v<T> T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  template <class T>
  void get(T& v) {
    v = get<T>();
  }
  std::string get_str() {
    const auto n = get<uint64_t>();
    need(n);
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  template <class T>
  requires std::is_trivially_copyable_v<T>
  void get_pod_vec(std::vector<T>& v) {
    const auto n = get<uint64_t>();
    if (n > (in_.size() - at_) / (sizeof(T) == 0 ? 1 : sizeof(T)))
      throw Error("encoded data ends inside a vector");
    v.resize(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
  }
  bool done() const { return at_ == in_.size(); }

 private:
  void need(uint64_t n) const {
    if (n > in_.size() - at_) throw Error("encoded data ends early");
  }
  std::string_view in_;
  size_t at_ = 0;
};

}  // namespace chopper
