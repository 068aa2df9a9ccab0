#pragma once
// The options every analysis reads (cli/common: add_analysis_options declares them once).
#include <cstddef>
#include <cstdint>
#include <string>

#include "chopper/base/time.hpp"
#include "chopper/devices/device_db.hpp"

namespace chopper {

struct AnalysisOptions {
  unsigned threads = 0;                // 0 = all cores
  Ns kernel_wait_ns = 30000;           // HTA's consecutive_kernel_delay (30 µs)
  Ns runtime_cutoff_ns = 50000;        // HTA launch stats: CPU launch duration outlier
  Ns launch_delay_cutoff_ns = 100000;  // HTA launch stats: launch delay outlier
  int64_t queue_full = 1024;           // HTA: queue length at which launches block
  size_t top_n = 20;                   // kernel/operation breakdowns: rows before "others"
  int64_t tokens_per_step = 0;         // global tokens per iteration (0 = unknown)
  std::string device;                  // device-database key; "" = from the trace
  DType dtype = DType::kBf16;          // the matrix rate MFU is measured against
  bool align_clocks = true;            // apply the estimated clock offsets
};

}  // namespace chopper
