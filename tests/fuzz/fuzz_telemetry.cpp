// libFuzzer target for the telemetry readers (nvidia-smi, amd-smi CSV/JSON, rocm-smi, dcgmi dmon,
// Zeus t,value CSVs). The first byte picks the file name (Zeus files are recognized by name) and
// the snapshot interval; the rest is the file. Any input must end in TelemetryData or an
// InputError: never a crash, hang or sanitizer report. Every series must come out sorted by time
// with no NaN.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
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
  opt.dcgmi_interval_ms = 1 + (data[0] >> 3);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    auto src = chopper::ByteSource::from_memory(bytes, kNames[data[0] & 7]);
    const chopper::TelemetryData d = chopper::read_telemetry(*src, opt);
    for (const chopper::Series& s : d.series) {
      if (s.t_ns.size() != s.value.size()) std::abort();
      for (size_t i = 0; i < s.size(); ++i) {
        if (!std::isfinite(s.value[i])) std::abort();
        if (i > 0 && s.t_ns[i] < s.t_ns[i - 1]) std::abort();
      }
    }
  } catch (const chopper::InputError&) {
  }
  return 0;
}
