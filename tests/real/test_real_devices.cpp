// Real traces and the device table: the V100 traces find their device from deviceProperties and
// get a waterfall with theoretical times; the A100 trace, whose FLOPs are known for a small share
// of its compute time, gets no MFU.
#include <gtest/gtest.h>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

RunAnalysis analyze_real(const std::string& file) {
  Run run = load_run({test::shared_path("traces/kineto/" + file)});
  EXPECT_EQ(run.ranks.size(), 1u);
  label_run(Taxonomy::builtin(), run, 1);
  AnalysisOptions o;
  o.threads = 1;
  return analyze_run(run, o);
}

}  // namespace

TEST(RealDevices, V100TracesGetAWaterfall) {
  if (!test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace device test skipped";
  for (const char* f :
       {"hta_v100_float_epoch_ts.json.gz", "kineto_v100_resnet50_2021_legacy.json.gz"}) {
    SCOPED_TRACE(f);
    const RunAnalysis ra = analyze_real(f);
    ASSERT_NE(ra.device, nullptr);
    EXPECT_EQ(ra.device->name, "v100");
    // Every kernel whose op's FLOPs or bytes are known has a theoretical time now (before, the
    // V100 was unknown and every row's parts were 0).
    double theoretical = 0, observed = 0;
    uint64_t kernels = 0, unknown = 0;
    for (const WaterfallRow& w : ra.waterfall)
      if (w.key.phase == Phase::kNone && w.key.operation.empty()) {
        theoretical += w.theoretical_ns, observed += static_cast<double>(w.observed_ns);
        kernels += w.kernels, unknown += w.unknown_theoretical;
      }
    std::printf("%s: %llu kernels, %llu without a theoretical time; theoretical %.3f of %.3f ms\n",
                f, static_cast<unsigned long long>(kernels),
                static_cast<unsigned long long>(unknown), theoretical / 1e6, observed / 1e6);
    EXPECT_GT(kernels, 0u);
    EXPECT_LT(unknown, kernels);
    EXPECT_GT(theoretical, 0);
    EXPECT_LT(theoretical, observed);
  }
}
