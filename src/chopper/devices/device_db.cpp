#include "chopper/devices/device_db.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "chopper/base/error.hpp"
#include "chopper/base/text.hpp"

namespace chopper {

namespace {

// The dtypes (their names: CHOPPER_DTYPES): the longer spelling also accepted ("" = none), bytes
// per element. The order is the one messages list them in.
struct DTypeInfo {
  DType dtype;
  std::string_view long_name;
  int bytes;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kBf16, "bfloat16", 2}, {DType::kFp16, "float16", 2}, {DType::kFp8, "", 1},
    {DType::kTf32, "", 4},         {DType::kFp32, "float32", 4},
};

const DTypeInfo* dtype_info(DType d) {
  for (const DTypeInfo& t : kDTypes)
    if (t.dtype == d) return &t;
  return nullptr;
}

}  // namespace

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = [] {
    std::vector<DType> d;
    for (const DTypeInfo& t : kDTypes) d.push_back(t.dtype);
    return d;
  }();
  return v;
}

std::optional<DType> parse_dtype(std::string_view s) {
  DType d{};
  if (parse_enum(s, d)) return d;
  for (const DTypeInfo& t : kDTypes)
    if (!t.long_name.empty() && s == t.long_name) return t.dtype;
  return std::nullopt;
}

int dtype_bytes(DType d) {
  const DTypeInfo* t = dtype_info(d);
  return t != nullptr ? t->bytes : 4;
}

std::vector<std::string> dtype_spellings() {
  std::vector<std::string> v;
  for (const DTypeInfo& t : kDTypes) v.emplace_back(dtype_name(t.dtype));
  for (const DTypeInfo& t : kDTypes)
    if (!t.long_name.empty()) v.emplace_back(t.long_name);
  return v;
}

std::string known_dtype_names() {
  std::string s;
  for (const DTypeInfo& t : kDTypes)
    s += fmt::format("{}{}", s.empty() ? "" : ", ", dtype_name(t.dtype));
  return s;
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

// Over 120 lines: the table itself, one entry per device.
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
      // NVIDIA V100 SXM2 (Tesla V100 data sheet, 2020): 125 TFLOP/s fp16 tensor core, 15.7 fp32,
      // 900 GB/s HBM2, 1530 MHz boost, 300 W, NVLink 2 (6 x 25 GB/s per direction), 100 Gb/s NIC.
      // No bf16, tf32 or fp8 units: bf16 and fp8 are given its fp16 tensor rate, tf32 its fp32
      // rate (what those dtypes run at on it).
      {"v100",
       "Tesla V100-SXM2-32GB",
       Vendor::kNvidia,
       80,
       32,
       125,
       125,
       15.7,
       15.7,
       900,
       32,
       1530,
       1290,
       877,
       300,
       40,
       150,
       12.5,
       7,
       0},
      // NVIDIA L40S (L40S data sheet, 2023): dense 362 TFLOP/s bf16/fp16, 733 fp8, 183 tf32, 91.6
      // fp32; 864 GB/s GDDR6; 2520 MHz boost, 1110 MHz base; 350 W; PCIe 4.0 x16 (32 GB/s), no
      // NVLink.
      {"l40s",
       "NVIDIA L40S",
       Vendor::kNvidia,
       142,
       32,
       362,
       733,
       183,
       91.6,
       864,
       48,
       2520,
       1110,
       2250,
       350,
       35,
       32,
       25,
       8,
       9},
      // NVIDIA A10 (A10 data sheet, 2021): dense 125 TFLOP/s bf16/fp16, 62.5 tf32, 31.2 fp32; 600
      // GB/s GDDR6; 1695 MHz boost, 885 MHz base; 150 W; PCIe 4.0. No fp8: its fp16 rate.
      {"a10",
       "NVIDIA A10",
       Vendor::kNvidia,
       72,
       32,
       125,
       125,
       62.5,
       31.2,
       600,
       24,
       1695,
       885,
       1563,
       150,
       20,
       32,
       25,
       8,
       6},
      // AMD Instinct MI250X OAM (data sheet): 383 TFLOP/s bf16/fp16 matrix, 95.7 fp32 matrix, 47.9
      // fp32 vector, 3.2 TB/s HBM2e, 1700 MHz, 560 W. Key "mi250" (also found as "mi250x").
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

namespace {

// Devices from spec files; a deque, so the pointers handed out stay valid.
std::deque<DeviceSpec>& added() {
  static std::deque<DeviceSpec> d;
  return d;
}

}  // namespace

std::vector<const DeviceSpec*> all_devices() {
  std::vector<const DeviceSpec*> v;
  for (const DeviceSpec& d : added()) v.push_back(&d);
  for (const DeviceSpec& d : device_db()) v.push_back(&d);
  return v;
}

const std::vector<std::pair<std::string, std::string>>& device_aliases() {
  // MI250X: the OAM part the "mi250" row describes (its data sheet), as traces name it.
  static const std::vector<std::pair<std::string, std::string>> a = {{"mi250x", "mi250"}};
  return a;
}

const DeviceSpec* find_device(std::string_view name) {
  std::string k = ascii_lower(name);
  for (const DeviceSpec* d : all_devices())
    if (d->name == k) return d;
  for (const auto& [alias, key] : device_aliases())
    if (k == alias) return find_device(key);
  return nullptr;
}

std::vector<std::string> device_names() {
  std::vector<std::string> v;
  for (const DeviceSpec* d : all_devices()) v.push_back(d->name);
  return v;
}

std::string known_device_names() {
  std::string s;
  for (const std::string& n : device_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const DeviceSpec* add_device(DeviceSpec d) {
  d.name = ascii_lower(d.name);
  for (DeviceSpec& x : added())
    if (x.name == d.name) return &(x = std::move(d));
  return &added().emplace_back(std::move(d));
}

DeviceSpec read_device_spec(const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  auto line = [](const toml::node& n) { return n.source().begin.line; };
  // A positive number (integer or float) at key; NaN when absent.
  auto number = [&](const toml::node& n, std::string_view key) {
    const std::optional<double> v = n.value<double>();
    if (!v || !(*v > 0))
      throw Error(fmt::format("{}:{}: '{}' must be a positive number", path, line(n), key));
    return *v;
  };
  DeviceSpec d{};
  d.vendor = Vendor::kNvidia;
  d.warp_size = 32;
  std::map<std::string, double> num;   // the top-level numbers given
  std::map<std::string, double> peak;  // [peak_tflops]
  const char* kNumbers[] = {"memory_bandwidth_gbs",
                            "max_clock_mhz",
                            "base_clock_mhz",
                            "tdp_w",
                            "idle_w",
                            "memory_gib",
                            "sm_count",
                            "intra_node_bw_gbs",
                            "inter_node_bw_gbs"};
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (key == "name" || key == "marketing_name" || key == "vendor") {
      const std::optional<std::string> s = v.value<std::string>();
      if (!s || s->empty())
        throw Error(fmt::format("{}:{}: '{}' must be a non-empty string", path, line(v), key));
      if (key == "name") d.name = ascii_lower(*s);
      if (key == "marketing_name") d.marketing_name = *s;
      if (key == "vendor") {
        const std::string l = ascii_lower(*s);
        if (l != "nvidia" && l != "amd")
          throw Error(fmt::format("{}:{}: 'vendor' must be nvidia or amd", path, line(v)));
        d.vendor = l == "amd" ? Vendor::kAmd : Vendor::kNvidia;
        d.warp_size = l == "amd" ? 64 : 32;
      }
    } else if (key == "peak_tflops") {
      const toml::table* p = v.as_table();
      if (p == nullptr)
        throw Error(fmt::format("{}:{}: 'peak_tflops' must be a table of dtype = TFLOP/s ({})",
                                path, line(v), known_dtype_names()));
      for (const auto& [pk, pv] : *p) {
        const std::string dk(pk.str());
        const std::optional<DType> dt = parse_dtype(dk);
        if (!dt || dtype_name(*dt) != dk)  // the short names only
          throw Error(fmt::format("{}:{}: unknown key 'peak_tflops.{}' ({})", path, line(pv), dk,
                                  known_dtype_names()));
        peak[dk] = number(pv, "peak_tflops." + dk);
      }
    } else if (std::find(std::begin(kNumbers), std::end(kNumbers), key) != std::end(kNumbers)) {
      num[key] = number(v, key);
    } else {
      throw Error(fmt::format(
          "{}:{}: unknown key '{}' (name, marketing_name, vendor, peak_tflops, "
          "memory_bandwidth_gbs, max_clock_mhz, base_clock_mhz, tdp_w, idle_w, memory_gib, "
          "sm_count, intra_node_bw_gbs, inter_node_bw_gbs)",
          path, line(v), key));
    }
  }
  auto need = [&](bool ok, std::string_view key) {
    if (!ok) throw Error(fmt::format("{}: missing key '{}'", path, key));
  };
  need(!d.name.empty(), "name");
  need(t.contains("peak_tflops"), "peak_tflops");
  need(peak.count("bf16") || peak.count("fp16"), "peak_tflops.bf16 (or fp16)");
  need(peak.count("fp32"), "peak_tflops.fp32");
  for (const char* k : {"memory_bandwidth_gbs", "max_clock_mhz", "tdp_w"}) need(num.count(k), k);
  if (d.marketing_name.empty()) d.marketing_name = d.name;
  // A dtype the file leaves out runs at the nearest one given: bf16 and fp16 at each other's
  // rate, fp8 at bf16's, tf32 at fp32's.
  d.matrix_tflops_bf16 = peak.count("bf16") ? peak["bf16"] : peak["fp16"];
  d.matrix_tflops_fp8 = peak.count("fp8") ? peak["fp8"] : d.matrix_tflops_bf16;
  d.vector_tflops_fp32 = peak["fp32"];
  d.matrix_tflops_tf32 = peak.count("tf32") ? peak["tf32"] : d.vector_tflops_fp32;
  d.mem_bw_gbs = num["memory_bandwidth_gbs"];
  d.max_clock_mhz = static_cast<int>(std::lround(num["max_clock_mhz"]));
  d.base_clock_mhz = num.count("base_clock_mhz")
                         ? static_cast<int>(std::lround(num["base_clock_mhz"]))
                         : d.max_clock_mhz;
  d.tdp_w = num["tdp_w"];
  d.idle_w = num.count("idle_w") ? num["idle_w"] : 0.1 * d.tdp_w;
  d.mem_gib = num.count("memory_gib") ? num["memory_gib"] : 0;
  d.sm_count = num.count("sm_count") ? static_cast<int>(std::lround(num["sm_count"])) : 0;
  d.intra_node_bw_gbs = num.count("intra_node_bw_gbs") ? num["intra_node_bw_gbs"] : 0;
  d.inter_node_bw_gbs = num.count("inter_node_bw_gbs") ? num["inter_node_bw_gbs"] : 0;
  return d;
}

}  // namespace chopper
