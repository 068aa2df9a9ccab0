#pragma once
// The work of the GPU time (analysis/work.cpp): GPU time by kernel name, operation and shape class
// with the FLOPs and bytes of the compute kernels whose launching op's cost is known (the top
// kernels and operations, the roofline); kernel durations per rank and class in log-spaced bins
// (the violins); hardware counters summed per operation. docs/metrics.md, "Top kernels, roofline
// and kernel durations".
#include <cstdint>
#include <limits>
#include <string>

#include "chopper/base/time.hpp"

namespace chopper {

// GPU time of one kernel name, operation or shape class: on one rank in the partial, over all
// ranks after finalize.
struct WorkRow {
  std::string level;  // "kernel", "operation" or "shape_class"
  std::string name;   // kernel name, operation label, or "family op dims types"
  std::string group;  // kernel: GPU class; operation: op class; shape class: cost family
  uint64_t count = 0;
  Ns total_ns = 0;
  Ns known_ns = 0;  // of total_ns: compute kernels whose launching op's FLOPs/bytes are known
  double flops = 0, bytes = 0;  // of those kernels: the op's, shared among its kernels by time
  double share = 0;             // finalize: total_ns ÷ the run's GPU activity time
  // finalize, shape classes: the device's peak for the family (matrix at the dtype, else vector
  // fp32) and its memory bandwidth; NaN = device unknown.
  double peak_tflops = std::numeric_limits<double>::quiet_NaN();
  double peak_tbs = std::numeric_limits<double>::quiet_NaN();
};

// Log-spaced duration bins: bin b holds durations in [10^(b/k), 10^((b+1)/k)) ns, k =
// kDurationBinsPerDecade (a duration under 1 ns in bin 0).
inline constexpr int kDurationBinsPerDecade = 10;

// The kernels of one class on one rank whose duration falls in one bin.
struct DurationBin {
  int64_t rank = -1;
  std::string kernel_class;  // op class, else the GPU class
  int32_t bin = 0;
  uint64_t kernels = 0;
  Ns total_ns = 0;
};

// Hardware counters of one operation's kernels (one rank in the partial; all ranks after
// finalize): sums over the kernels with each counter recorded.
struct CounterOpRow {
  std::string operation;          // "" = no operation label
  std::string op_class;           // of the operation's first counted kernel
  uint64_t kernels = 0;           // kernels with any counter
  Ns dur_ns = 0;                  // their Σ duration
  double matrix_busy_cycles = 0;  // Σ over the kernels with matrix busy and active cycles
  double busy_active_cycles = 0;  // Σ active cycles × the matrix units, of those kernels
  double matrix_flops = 0;        // Σ issued matrix FLOPs, over the kernels with it
  Ns matrix_dur_ns = 0;           // Σ duration of those kernels
  double vector_flops = 0;
  Ns vector_dur_ns = 0;
  double clock_cycles = 0;  // Σ active cycles of the kernels whose counted clock is known
  Ns clock_dur_ns = 0;      // (counted in the traced run) and their Σ duration
};

}  // namespace chopper
