// libFuzzer target for the counter readers (rocprofv3 CSV and JSON, Chopper's sampling CSVs), the
// sniffer and the kernel-trace join. The first byte picks how many bytes each read() returns (1 to
// 256, or unlimited), so lines and JSON records straddle refills; the rest is the file. Any input
// must end in a CounterTable whose columns agree in length and whose values are NaN (not
// collected) or in [0, 1e18] (ingest/rocprof/internal.hpp), or an InputError: never a crash, hang
// or sanitizer report.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/rocprof/counter_reader.hpp"

namespace {

// Hands out at most `step` bytes per read().
class Trickle : public chopper::ByteSource {
 public:
  Trickle(std::unique_ptr<chopper::ByteSource> inner, size_t step)
      : inner_(std::move(inner)), step_(step) {
    name_ = inner_->name();
    compression_ = inner_->compression();
  }
  size_t read(char* dst, size_t cap) override { return inner_->read(dst, std::min(cap, step_)); }
  uint64_t raw_offset() const override { return inner_->raw_offset(); }
  uint64_t raw_size() const override { return inner_->raw_size(); }

 private:
  std::unique_ptr<chopper::ByteSource> inner_;
  size_t step_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  size_t step = data[0] == 0 ? SIZE_MAX : static_cast<size_t>(data[0]);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  (void)chopper::sniff_counters(bytes);
  try {
    Trickle src(chopper::ByteSource::from_memory(bytes, "fuzz.csv"), step);
    chopper::CounterTable t = chopper::read_counters(src);
    const size_t n = t.size();
    if (t.correlation_id.size() != n || t.dispatch_id.size() != n || t.agent.size() != n ||
        t.pid.size() != n || t.start_ns.size() != n || t.end_ns.size() != n ||
        t.values.size() != n * t.counter_names.size())
      std::abort();
    for (size_t r = 0; r < n; ++r)
      for (size_t c = 0; c < t.counter_names.size(); ++c) {
        const double v = t.value(r, c);
        if (!std::isnan(v) && !(v >= 0 && v <= 1e18)) std::abort();
      }
    chopper::CounterTable copy = t;
    chopper::join_kernel_trace(copy, t);
  } catch (const chopper::InputError&) {
  }
  return 0;
}
