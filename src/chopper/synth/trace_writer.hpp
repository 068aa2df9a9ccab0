#pragma once
// The Kineto JSON writer of one rank's trace: a buffer flushed to the file in 4 MiB pieces and the
// trace's microsecond timestamps.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "chopper/base/error.hpp"
#include "chopper/base/time.hpp"

namespace chopper::synth_model {

// Writes one rank's Kineto JSON.
class TraceWriter {
 public:
  TraceWriter(const std::string& path, Ns base) : base_(base) {
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) throw Error(path + ": cannot write");
    path_ = path;
  }
  ~TraceWriter() {
    if (f_ != nullptr) std::fclose(f_);
  }
  std::string& buf() { return buf_; }
  void flush_if_big() {
    if (buf_.size() > (4u << 20)) flush();
  }
  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      throw Error(path_ + ": write failed");
    bytes_ += buf_.size();
    buf_.clear();
  }
  uint64_t close() {
    flush();
    std::fclose(f_);
    f_ = nullptr;
    return bytes_;
  }
  // µs with three decimals, relative to the base.
  std::string ts(Ns t) const {
    const Ns r = t - base_;
    return fmt::format("{}{}.{:03d}", r < 0 ? "-" : "", std::llabs(r) / 1000,
                       static_cast<int>(std::llabs(r) % 1000));
  }
  bool first = true;

 private:
  FILE* f_;
  std::string path_;
  std::string buf_;
  Ns base_;
  uint64_t bytes_ = 0;
};

}  // namespace chopper::synth_model
