#pragma once
// Device database: the peak rates roofline models and MFU need. Dense (non-sparse) peaks from the
// vendors' data sheets; the "matrix" rates are tensor-core / MFMA rates, "vector" the CUDA-core /
// SIMD rates. Used by synth/ (durations from physics) and, later, analysis/ (MFU, rooflines).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/base/enum_names.hpp"

namespace chopper {

enum class Vendor { kNvidia, kAmd };
#define CHOPPER_DTYPES(X) \
  X(kFp32, "fp32")        \
  X(kTf32, "tf32")        \
  X(kBf16, "bf16")        \
  X(kFp16, "fp16")        \
  X(kFp8, "fp8")
CHOPPER_ENUM(DType, CHOPPER_DTYPES)
// Every dtype, in the order messages list them: bf16, fp16, fp8, tf32, fp32 (device_db.cpp's
// table of long spellings and sizes).
const std::vector<DType>& all_dtypes();
inline std::string_view dtype_name(DType d) {
  return enum_name(d);
}
// A dtype's name or long spelling ("bf16", "bfloat16"); nullopt for any other.
std::optional<DType> parse_dtype(std::string_view s);
int dtype_bytes(DType d);
// Every spelling parse_dtype accepts: the names, then the long spellings ("bfloat16", ...), for
// the --dtype checks.
std::vector<std::string> dtype_spellings();
// The names, comma-separated ("bf16, fp16, fp8, tf32, fp32"), for messages.
std::string known_dtype_names();

struct DeviceSpec {
  std::string name;            // database key, lower case: "h100", "mi300x"
  std::string marketing_name;  // as the driver reports it: "NVIDIA H100 80GB HBM3"
  Vendor vendor;
  int sm_count;  // SMs (NVIDIA) or CUs (AMD)
  int warp_size;
  double matrix_tflops_bf16;  // dense, at max_clock_mhz
  double matrix_tflops_fp8;
  double matrix_tflops_tf32;
  double vector_tflops_fp32;
  double mem_bw_gbs;  // HBM, GB/s
  double mem_gib;
  int max_clock_mhz;  // boost / peak engine clock
  int base_clock_mhz;
  int mem_clock_mhz;
  double tdp_w;
  double idle_w;
  double intra_node_bw_gbs;          // per GPU, one direction: NVLink / Infinity Fabric
  double inter_node_bw_gbs;          // per GPU NIC, one direction
  int compute_major, compute_minor;  // CUDA capability (NVIDIA) or gfx major/minor (AMD)

  double matrix_tflops(DType d) const;
};

// Hardware instances a whole-GPU counter such as AMD's GRBM_GUI_ACTIVE is summed over (the XCDs of
// an MI300X: 8); 1 for every other device.
int xcd_count(const DeviceSpec& d);

// The built-in devices (data-sheet numbers, cited in device_db.cpp).
const std::vector<DeviceSpec>& device_db();
// The built-in devices and those added with add_device (a user's spec file), the latter first.
std::vector<const DeviceSpec*> all_devices();
// Looks a device up by key or alias ("h100", "MI300X", "mi250x"; case-insensitive), the added
// ones first. nullptr if unknown.
const DeviceSpec* find_device(std::string_view name);
// The known keys, the added devices' first, then the built-in table's in its order.
std::vector<std::string> device_names();
// Other names find_device accepts, each with the key it stands for ({"mi250x", "mi250"}).
const std::vector<std::pair<std::string, std::string>>& device_aliases();
// The known keys, comma-separated ("h100, h200, ..."), for messages and help texts.
std::string known_device_names();

// A device spec file (`--device-spec`, TOML; docs/formats.md "Device spec file"): name, peaks per
// dtype in TFLOP/s ([peak_tflops] bf16, fp16, fp8, tf32, fp32), memory bandwidth in GB/s, max and
// base clock in MHz, TDP in W. Throws Error naming the file, the line and the key.
DeviceSpec read_device_spec(const std::string& path);
// Adds a device to the lookup (replacing an added one of the same key) and returns it; the pointer
// stays valid for the process's life. Call before analyses start (not thread-safe).
const DeviceSpec* add_device(DeviceSpec d);

}  // namespace chopper
