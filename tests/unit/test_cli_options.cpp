// The analysis options analyze, report and compare share (cli/common.hpp, add_analysis_options)
// and the device and dtype lists they take from the device table (devices/device_db.hpp).
// tests/cli/shared_options.sh checks that the three commands' --help show the same options.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "chopper/cli/common.hpp"
#include "chopper/devices/device_db.hpp"

using namespace chopper;
using namespace chopper::cli;

namespace {

// Parses `args` (after the program name) into `o` on a fresh app holding the shared options.
void parse(AnalysisCliOptions& o, std::vector<std::string> args, AnalysisOptionsExcept ex = {}) {
  CLI::App app;
  add_analysis_options(&app, o, ex);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  ASSERT_EQ(resolve_analysis_options("test", &app, o), 0);
}

}  // namespace

TEST(CliOptions, DeviceHelpListsTheDeviceTable) {
  // The built-in table's nine keys in its order (device_db.cpp), and the alias traces use.
  const std::vector<std::string> keys = {"h100", "h200", "b200", "a100", "mi300x",
                                         "v100", "l40s", "a10",  "mi250"};
  std::vector<std::string> table;
  for (const DeviceSpec& d : device_db()) table.push_back(d.name);
  EXPECT_EQ(table, keys);
  // Devices added from spec files (other tests in this process add some) come first.
  std::vector<std::string> names = device_names();
  ASSERT_GE(names.size(), keys.size());
  EXPECT_EQ(std::vector<std::string>(names.end() - keys.size(), names.end()), keys);
  EXPECT_EQ(find_device("MI250X"), find_device("mi250"));
  ASSERT_EQ(device_aliases().size(), 1u);
  EXPECT_EQ(device_aliases()[0].first, "mi250x");
  CLI::App app;
  AnalysisCliOptions o;
  add_analysis_options(&app, o);
  const std::string help = app.get_option("--device")->get_description();
  EXPECT_NE(help.find("(" + known_device_names() + ")"), std::string::npos) << help;
  EXPECT_NE(help.find("h100, h200, b200, a100, mi300x, v100, l40s, a10, mi250)"), std::string::npos)
      << help;
}

TEST(CliOptions, DtypesComeFromTheTable) {
  // Five dtypes, each under its short name and bf16, fp16, fp32 also under their long ones.
  const std::vector<std::string> spellings = {"bf16", "fp16",     "fp8",     "tf32",
                                              "fp32", "bfloat16", "float16", "float32"};
  EXPECT_EQ(dtype_spellings(), spellings);
  EXPECT_EQ(known_dtype_names(), "bf16, fp16, fp8, tf32, fp32");
  EXPECT_EQ(all_dtypes().size(), 5u);
  const DType want[] = {DType::kBf16, DType::kFp16, DType::kFp8,  DType::kTf32,
                        DType::kFp32, DType::kBf16, DType::kFp16, DType::kFp32};
  const int bytes[] = {2, 2, 1, 4, 4, 2, 2, 4};
  for (size_t k = 0; k < spellings.size(); ++k) {
    AnalysisCliOptions o;
    parse(o, {"--dtype", spellings[k]});
    EXPECT_EQ(o.analysis.dtype, want[k]) << spellings[k];
    EXPECT_TRUE(o.dtype_given);
    EXPECT_EQ(dtype_bytes(o.analysis.dtype), bytes[k]) << spellings[k];
    EXPECT_EQ(dtype_name(o.analysis.dtype), spellings[k < 5 ? k : k == 5 ? 0 : k == 6 ? 1 : 4]);
  }
  AnalysisCliOptions o;
  CLI::App app;
  add_analysis_options(&app, o);
  EXPECT_THROW(app.parse(std::vector<std::string>{"fp64", "--dtype"}), CLI::ValidationError);
}

TEST(CliOptions, SharedOptionsFillAnalysisOptions) {
  AnalysisCliOptions o;
  parse(o, {"--tokens-per-step", "4096", "--device", "H200", "--top", "7", "--no-align",
            "--launch-delay-cutoff-ns", "5000", "--kernel-wait-ns", "1000",
            "--telemetry-utc-offset", "-5", "--no-hardware"});
  EXPECT_EQ(o.analysis.tokens_per_step, 4096);
  EXPECT_EQ(o.analysis.device, "H200");
  EXPECT_EQ(o.analysis.top_n, 7u);
  EXPECT_FALSE(o.analysis.align_clocks);
  EXPECT_EQ(o.analysis.launch_delay_cutoff_ns, 5000);
  EXPECT_EQ(o.analysis.kernel_wait_ns, 1000);
  EXPECT_TRUE(o.align.utc_offset_known);
  EXPECT_DOUBLE_EQ(o.align.utc_offset_h, -5);
  EXPECT_TRUE(o.no_hardware);
  EXPECT_FALSE(o.dtype_given);  // the default bf16, which a manifest may override
  EXPECT_EQ(o.analysis.dtype, DType::kBf16);
}

TEST(CliOptions, DefaultsAreAnalysisOptionsDefaults) {
  // Nothing given: the analyses see exactly AnalysisOptions{} (the outputs stay as they were).
  AnalysisCliOptions o;
  parse(o, {});
  const AnalysisOptions d;
  EXPECT_EQ(o.analysis.top_n, d.top_n);
  EXPECT_EQ(o.analysis.kernel_wait_ns, d.kernel_wait_ns);
  EXPECT_EQ(o.analysis.launch_delay_cutoff_ns, d.launch_delay_cutoff_ns);
  EXPECT_EQ(o.analysis.align_clocks, d.align_clocks);
  EXPECT_EQ(o.analysis.tokens_per_step, d.tokens_per_step);
  EXPECT_EQ(o.analysis.dtype, d.dtype);
  EXPECT_TRUE(o.analysis.device.empty());
  EXPECT_FALSE(o.align.utc_offset_known);
}

TEST(CliOptions, UnknownDeviceIsRefused) {
  AnalysisCliOptions o;
  CLI::App app;
  add_analysis_options(&app, o);
  app.parse(std::vector<std::string>{"v1000", "--device"});
  EXPECT_EQ(resolve_analysis_options("test", &app, o), 2);
}

TEST(CliOptions, CompareLeavesOutTokensAndHardwareFiles) {
  CLI::App all, some;
  AnalysisCliOptions a, b;
  add_analysis_options(&all, a);
  AnalysisOptionsExcept ex;
  ex.tokens_per_step = true;
  ex.hardware_files = true;
  add_analysis_options(&some, b, ex);
  // 14 options in all (see add_analysis_options); compare has the 10 others.
  EXPECT_EQ(all.get_options().size(), 14u + 1);  // + --help
  EXPECT_EQ(some.get_options().size(), 10u + 1);
  for (const char* name : {"--tokens-per-step", "--telemetry", "--counters", "--et"}) {
    EXPECT_NE(all.get_option_no_throw(name), nullptr) << name;
    EXPECT_EQ(some.get_option_no_throw(name), nullptr) << name;
  }
}
