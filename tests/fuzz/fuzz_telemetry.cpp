// libFuzzer target for the telemetry readers (nvidia-smi, amd-smi CSV/JSON, rocm-smi, dcgmi dmon,
// Zeus t,value CSVs, chopper record's GPU CSV). The first byte picks the file name (Zeus files are
// recognized by name), the snapshot interval and (its top bit) a windowed read (rows of interest
// around 2026-01-01 00:00:05, the time the seeds are stamped at, so that the binary search and its
// fallbacks run); the rest is the file, plain or gzip/zstd. Any input must end in TelemetryData or
// an InputError: never a crash, hang or sanitizer report. Every series must come out sorted by
// time, every value finite and within its metric's range (ingest/telemetry/detail.hpp).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/telemetry/detail.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* const kNames[] = {"telemetry.csv",
                                       "gpu_power_3.csv",
                                       "power_gpu1.csv.gz",
                                       "gpu2_sm_clock.csv",
                                       "nvlink_tx_throughput_0.csv",
                                       "pcie_rx_throughput_5.csv",
                                       "dmon.txt",
                                       "metric.json"};
  chopper::TelemetryReadOptions opt;
  opt.dcgmi_interval_ms = 1 + ((data[0] >> 3) & 15);
  if (data[0] & 0x80) {
    constexpr chopper::Ns kAt = chopper::Ns{1767225605} * 1000000000;  // 2026-01-01 00:00:05
    opt.window.utc = {{kAt, kAt + 1000000000}};
    opt.window.local = {{kAt, kAt + 1000000000}};
    opt.window.pad_ns = 100000000;
    opt.window.pad_periods = 2;
    opt.window.min_file_bytes = 0;
  }
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    auto src = chopper::ByteSource::from_memory(bytes, kNames[data[0] & 7]);
    const chopper::TelemetryData d = chopper::read_telemetry(*src, opt);
    for (const chopper::Series& s : d.series) {
      if (s.t_ns.size() != s.value.size()) std::abort();
      for (size_t i = 0; i < s.size(); ++i) {
        if (!std::isfinite(s.value[i])) std::abort();
        const chopper::telemetry::MetricRange r = chopper::telemetry::metric_range(s.metric);
        if (s.value[i] < r.lo || s.value[i] > r.hi) std::abort();
        if (i > 0 && s.t_ns[i] < s.t_ns[i - 1]) std::abort();
      }
    }
  } catch (const chopper::InputError&) {
  }
  return 0;
}
