#include "chopper/devices/device_db.hpp"

#include "chopper/base/text.hpp"

namespace chopper {

std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::kFp32;
  if (s == "tf32") return DType::kTf32;
  if (s == "bf16" || s == "bfloat16") return DType::kBf16;
  if (s == "fp16" || s == "float16") return DType::kFp16;
  if (s == "fp8") return DType::kFp8;
  return std::nullopt;
}

int dtype_bytes(DType d) {
  switch (d) {
    case DType::kFp32:
    case DType::kTf32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp8:
      return 1;
  }
  return 4;
}

double DeviceSpec::matrix_tflops(DType d) const {
  switch (d) {
    case DType::kFp32:
      return vector_tflops_fp32;
    case DType::kTf32:
      return matrix_tflops_tf32;
    case DType::kBf16:
    case DType::kFp16:
      return matrix_tflops_bf16;
    case DType::kFp8:
      return matrix_tflops_fp8;
  }
  return matrix_tflops_bf16;
}

int xcd_count(const DeviceSpec& d) {
  return d.name == "mi300x" ? 8 : 1;
}

const std::vector<DeviceSpec>& device_db() {
  // Dense peak rates (data sheets: NVIDIA H100/H200 SXM5, B200 HGX, A100 SXM4 80GB; AMD Instinct
  // MI300X OAM, MI250X OAM). Network: NVLink 4 450 GB/s per direction (H100/H200), NVLink 5
  // 900 GB/s (B200), NVLink 3 300 GB/s (A100), Infinity Fabric ~64 GB/s per link x 7 (MI300X),
  // ~50 GB/s x 8 (MI250X); one 400 Gb/s NIC per GPU (50 GB/s), 200 Gb/s for A100/MI250.
  static const std::vector<DeviceSpec> db = {
      {"h100",
       "NVIDIA H100 80GB HBM3",
       Vendor::kNvidia,
       132,
       32,
       989.4,
       1978.9,
       494.7,
       66.9,
       3350,
       80,
       1980,
       1590,
       2619,
       700,
       90,
       450,
       50,
       9,
       0},
      {"h200",
       "NVIDIA H200",
       Vendor::kNvidia,
       132,
       32,
       989.4,
       1978.9,
       494.7,
       66.9,
       4800,
       141,
       1980,
       1590,
       3201,
       700,
       90,
       450,
       50,
       9,
       0},
      {"b200",
       "NVIDIA B200",
       Vendor::kNvidia,
       148,
       32,
       2250,
       4500,
       1100,
       80,
       8000,
       180,
       1965,
       1200,
       3996,
       1000,
       140,
       900,
       50,
       10,
       0},
      {"a100",
       "NVIDIA A100-SXM4-80GB",
       Vendor::kNvidia,
       108,
       32,
       312,
       312,
       156,
       19.5,
       2039,
       80,
       1410,
       1095,
       1593,
       400,
       55,
       300,
       25,
       8,
       0},
      {"mi300x",
       "AMD Instinct MI300X",
       Vendor::kAmd,
       304,
       64,
       1307.4,
       2614.9,
       653.7,
       163.4,
       5300,
       192,
       2100,
       1000,
       1300,
       750,
       140,
       448,
       50,
       9,
       4},
      {"mi250",
       "AMD Instinct MI250X",
       Vendor::kAmd,
       220,
       64,
       383,
       383,
       95.7,
       47.9,
       3277,
       128,
       1700,
       1000,
       1600,
       560,
       90,
       400,
       25,
       9,
       0},
  };
  return db;
}

const DeviceSpec* find_device(std::string_view name) {
  std::string k = ascii_lower(name);
  if (k == "mi250x") k = "mi250";
  for (const auto& d : device_db())
    if (d.name == k) return &d;
  return nullptr;
}

}  // namespace chopper
