// The device table and user device spec files (devices/device_db.hpp), and the peak an analysis
// takes from them: each expected number is the data sheet's or the fixture's.
#include <gtest/gtest.h>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/parts.hpp"
#include "chopper/base/error.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& f) {
  return std::string(CHOPPER_TEST_DATA) + "/devices/" + f;
}

// The message of the Error reading `f` throws ("" if none).
std::string error_of(const std::string& f) {
  try {
    read_device_spec(data(f));
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(Devices, NewDevicesHaveTheirDataSheetPeaks) {
  // V100 SXM2: 125 TFLOP/s fp16 tensor cores (no bf16 unit: bf16 runs at that rate), 15.7 fp32,
  // 900 GB/s; L40S: 362 bf16 and 733 fp8 dense; A10: 125 bf16; B200: 4500 fp8 dense.
  const DeviceSpec* v = find_device("V100");
  ASSERT_NE(v, nullptr);
  EXPECT_DOUBLE_EQ(v->matrix_tflops(DType::kFp16), 125);
  EXPECT_DOUBLE_EQ(v->matrix_tflops(DType::kFp32), 15.7);
  EXPECT_DOUBLE_EQ(v->mem_bw_gbs, 900);
  EXPECT_EQ(v->max_clock_mhz, 1530);
  ASSERT_NE(find_device("l40s"), nullptr);
  EXPECT_DOUBLE_EQ(find_device("l40s")->matrix_tflops(DType::kFp8), 733);
  EXPECT_DOUBLE_EQ(find_device("l40s")->matrix_tflops(DType::kBf16), 362);
  ASSERT_NE(find_device("a10"), nullptr);
  EXPECT_DOUBLE_EQ(find_device("a10")->matrix_tflops(DType::kBf16), 125);
  ASSERT_NE(find_device("MI250X"), nullptr);
  EXPECT_DOUBLE_EQ(find_device("b200")->matrix_tflops(DType::kFp8), 4500);
  EXPECT_NE(known_device_names().find("v100"), std::string::npos);
}

TEST(Devices, DriverNamesFindTheLongestKey) {
  // The deviceProperties names of real traces; "NVIDIA A100-SXM4-80GB" contains "a10" too.
  EXPECT_EQ(device_from_name("Tesla V100-SXM2-16GB")->name, "v100");
  EXPECT_EQ(device_from_name("NVIDIA A100-SXM4-40GB")->name, "a100");
  EXPECT_EQ(device_from_name("NVIDIA A10")->name, "a10");
  EXPECT_EQ(device_from_name("NVIDIA L40S")->name, "l40s");
  EXPECT_EQ(device_from_name("AMD Instinct MI250X / MI250")->name, "mi250");
  EXPECT_EQ(device_from_name("Quadro P1000"), nullptr);
}

TEST(Devices, SpecFileGood) {
  // tests/data/devices/good.toml: bf16 400, fp8 800, fp32 50 TFLOP/s; no fp16 (bf16's rate) or
  // tf32 (fp32's rate); idle 10% of the 500 W TDP when not given.
  const DeviceSpec d = read_device_spec(data("good.toml"));
  EXPECT_EQ(d.name, "testgpu");
  EXPECT_EQ(d.marketing_name, "Test GPU 1000");
  EXPECT_DOUBLE_EQ(d.matrix_tflops(DType::kBf16), 400);
  EXPECT_DOUBLE_EQ(d.matrix_tflops(DType::kFp16), 400);
  EXPECT_DOUBLE_EQ(d.matrix_tflops(DType::kFp8), 800);
  EXPECT_DOUBLE_EQ(d.matrix_tflops(DType::kTf32), 50);
  EXPECT_DOUBLE_EQ(d.vector_tflops_fp32, 50);
  EXPECT_DOUBLE_EQ(d.mem_bw_gbs, 2000);
  EXPECT_EQ(d.max_clock_mhz, 1800);
  EXPECT_EQ(d.base_clock_mhz, 1200);
  EXPECT_DOUBLE_EQ(d.tdp_w, 500);
  EXPECT_DOUBLE_EQ(d.idle_w, 50);
}

TEST(Devices, SpecFileErrorsNameFileLineAndKey) {
  EXPECT_NE(error_of("bad_key.toml").find("bad_key.toml:5: unknown key 'memory_bandwith_gbs'"),
            std::string::npos)
      << error_of("bad_key.toml");
  EXPECT_NE(error_of("missing.toml").find("missing.toml: missing key 'memory_bandwidth_gbs'"),
            std::string::npos)
      << error_of("missing.toml");
  EXPECT_NE(error_of("bad_value.toml")
                .find("bad_value.toml:7: 'peak_tflops.bf16' must be a "
                      "positive number"),
            std::string::npos)
      << error_of("bad_value.toml");
}

TEST(Devices, SpecFilePeakIsTheOneMfuUses) {
  // A synthetic H100 run analysed as the spec file's device: MFU = FLOPs / (time × ranks ×
  // 400 TFLOP/s), the file's bf16 peak.
  const DeviceSpec* d = add_device(read_device_spec(data("good.toml")));
  ASSERT_EQ(find_device("TestGPU"), d);
  SynthConfig c = test::small("h100", Parallelism::kFsdp);
  const fs::path dir = test::temp_dir("device_spec");
  synthesize(c, dir.string());
  chopper::Run r = load_run({dir.string()});
  label_run(Taxonomy::builtin(), r, 2);
  AnalysisOptions o;
  o.threads = 2;
  o.device = "testgpu";
  const RunAnalysis ra = analyze_run(r, o);
  fs::remove_all(dir);
  ASSERT_EQ(ra.device, d);
  ASSERT_FALSE(ra.iterations.empty());
  for (const IterationRow& it : ra.iterations) {
    const double secs = static_cast<double>(it.time_ns) * 1e-9;
    ASSERT_GT(it.flops, 0);
    EXPECT_NEAR(it.mfu, it.flops / (secs * static_cast<double>(it.ranks) * 400e12), 1e-9);
  }
}
