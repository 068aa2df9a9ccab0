// The findings' statistics (analysis/findings.hpp), on hand-computed numbers.
#include <gtest/gtest.h>

#include <cmath>

#include "chopper/analysis/findings.hpp"

using namespace chopper;

TEST(Findings, RobustSigmaIsScaledMad) {
  // median 3; |x − 3| = {2, 1, 0, 1, 97}, median 1: σ = 1.4826 (the outlier does not move it).
  EXPECT_DOUBLE_EQ(robust_sigma({1, 2, 3, 4, 100}), 1.4826);
  // Even count: median of {1, 3} = 2; deviations {1, 1} → 1.4826.
  EXPECT_DOUBLE_EQ(robust_sigma({1, 3}), 1.4826);
  EXPECT_EQ(robust_sigma({5}), 0.0);
}

TEST(Findings, SteadyLossAboveOnePercentIsSignificant) {
  // 2% of a 100 ms iteration in each of 5 iterations: no spread, so the standard error is 0 and
  // the mean (2 ms) is above the 1 ms threshold: significant with confidence 1.
  const std::vector<double> t(5, 100e6), x(5, 2e6);
  const Finding f = test_loss(FindingKind::kHostStall, x, t);
  EXPECT_TRUE(f.significant);
  EXPECT_DOUBLE_EQ(f.cost_ns, 2e6);
  EXPECT_DOUBLE_EQ(f.cost_share, 0.02);
  EXPECT_DOUBLE_EQ(f.threshold_ns, 1e6);
  EXPECT_DOUBLE_EQ(f.stderr_ns, 0);
  EXPECT_DOUBLE_EQ(f.confidence, 1);
  EXPECT_EQ(f.material_iterations, 5u);
}

TEST(Findings, SteadyLossBelowOnePercentIsNot) {
  const std::vector<double> t(4, 100e6), x(4, 0.5e6);
  const Finding f = test_loss(FindingKind::kIdle, x, t);
  EXPECT_FALSE(f.significant);
  EXPECT_DOUBLE_EQ(f.confidence, 0);
  EXPECT_EQ(f.material_iterations, 0u);
}

TEST(Findings, OneOffSpikeIsNotSignificant) {
  // 10 ms in one of 5 iterations: mean 2 ms; sample σ = √((8² + 4·2²)/4) = √20 ms; standard
  // error √20/√5 = 2 ms; 2 − 2·2 < 1: not significant. Confidence Φ((2 − 1)/2) = Φ(0.5).
  const std::vector<double> t(5, 100e6), x = {10e6, 0, 0, 0, 0};
  const Finding f = test_loss(FindingKind::kExposedComm, x, t);
  EXPECT_FALSE(f.significant);
  EXPECT_NEAR(f.cost_ns, 2e6, 1e-6);
  EXPECT_NEAR(f.stderr_ns, 2e6, 1e-3);
  EXPECT_NEAR(f.confidence, 0.691462, 1e-6);
  EXPECT_EQ(f.material_iterations, 1u);
}

TEST(Findings, KindsRoundTrip) {
  for (const char* k : {"exposed_comm", "straggler", "host_stall", "data_loading", "host_sync",
                        "host_optimizer", "host_late", "launch_overhead", "graph_gap", "idle",
                        "exposed_memcpy", "dvfs", "utilization", "comm_slowdown"}) {
    const auto kind = finding_from_key(k);
    ASSERT_TRUE(kind.has_value()) << k;
    EXPECT_EQ(finding_key(*kind), k);
    EXPECT_FALSE(finding_title(*kind).empty());
    EXPECT_FALSE(finding_suggestion(*kind).empty());
  }
  EXPECT_FALSE(finding_from_key("arrival_skew").has_value());
}
