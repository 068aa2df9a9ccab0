// The findings' statistics (analysis/findings.hpp), on hand-computed numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "chopper/analysis/analysis.hpp"
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
  // error √20/√5 = 2 ms; t = (2 − 1)/2 = 0.5 with 4 degrees of freedom. Closed form for ν = 4:
  // F(t) = ½ + (3/8)·u·(1 − u²/12) with u = t/√(1 + t²/4) = 0.485071 → 0.678335 (normal: 0.6915).
  const std::vector<double> t(5, 100e6), x = {10e6, 0, 0, 0, 0};
  const Finding f = test_loss(FindingKind::kExposedComm, x, t);
  EXPECT_FALSE(f.significant);
  EXPECT_NEAR(f.cost_ns, 2e6, 1e-6);
  EXPECT_NEAR(f.stderr_ns, 2e6, 1e-3);
  EXPECT_NEAR(f.confidence, 0.678335, 1e-6);
  EXPECT_EQ(f.samples, 5u);
  EXPECT_EQ(f.material_iterations, 1u);
}

TEST(Findings, StudentTMatchesTables) {
  // ν = 1 is the Cauchy distribution: F(t) = ½ + atan(t)/π; F(1) = 0.75.
  EXPECT_NEAR(student_t_cdf(1, 1), 0.75, 1e-12);
  EXPECT_NEAR(student_t_cdf(-1, 1), 0.25, 1e-12);
  // ν = 2: F(t) = ½ + t / (2√(2 + t²)); F(2) = ½ + 1/√6 = 0.908248.
  EXPECT_NEAR(student_t_cdf(2, 2), 0.5 + 1 / std::sqrt(6.0), 1e-12);
  // Quantiles from the standard t table: t(0.975; 4) = 2.776445, t(0.95; 10) = 1.812461,
  // t(0.995; 2) = 9.924843, t(0.975; 1) = 12.706205.
  EXPECT_NEAR(student_t_cdf(2.776445, 4), 0.975, 1e-6);
  EXPECT_NEAR(student_t_cdf(1.812461, 10), 0.95, 1e-6);
  EXPECT_NEAR(student_t_cdf(9.924843, 2), 0.995, 1e-6);
  EXPECT_NEAR(student_t_cdf(12.706205, 1), 0.975, 1e-6);
  // Many degrees of freedom: the normal distribution, Φ(1.959964) = 0.975.
  EXPECT_NEAR(student_t_cdf(1.959964, 1e6), 0.975, 1e-5);
  EXPECT_DOUBLE_EQ(student_t_cdf(0, 3), 0.5);
  // The incomplete beta function: I_x(1, 1) = x, I_x(2, 1) = x², I_½(a, a) = ½.
  EXPECT_NEAR(incomplete_beta(1, 1, 0.3), 0.3, 1e-12);
  EXPECT_NEAR(incomplete_beta(2, 1, 0.3), 0.09, 1e-12);
  EXPECT_NEAR(incomplete_beta(3.5, 3.5, 0.5), 0.5, 1e-12);
}

TEST(Findings, TwoIterationsUseStudentT) {
  // 3 and 5 ms of 100 ms: mean 4 ms, σ = √2 ms, standard error √2/√2 = 1 ms; t = (4 − 1)/1 = 3
  // with 1 degree of freedom: F = ½ + atan(3)/π = 0.897584. Not significant (the normal
  // approximation would have said Φ(3) = 0.99865, and c − 2·se = 2 > 1 "significant").
  const std::vector<double> t(2, 100e6), x = {3e6, 5e6};
  const Finding f = test_loss(FindingKind::kHostStall, x, t);
  EXPECT_NEAR(f.stderr_ns, 1e6, 1e-3);
  EXPECT_NEAR(f.confidence, 0.5 + std::atan(3.0) / std::numbers::pi, 1e-9);
  EXPECT_FALSE(f.significant);
  EXPECT_EQ(f.test, "t test over 2 iterations");
}

TEST(Findings, ThreeIterationsUseStudentT) {
  // 2, 3, 4 ms of 100 ms: mean 3, σ = 1, se = 1/√3 = 0.57735 ms; t = 2/0.57735 = 3.464102 with 2
  // degrees of freedom: F = ½ + t/(2√(2 + t²)) = ½ + 3.464102/(2√14) = 0.962910 < 0.975: not
  // significant, though c − 2·se = 1.85 > 1 was under the normal rule.
  const std::vector<double> t(3, 100e6), x = {2e6, 3e6, 4e6};
  const Finding f = test_loss(FindingKind::kHostStall, x, t);
  EXPECT_NEAR(f.confidence, 0.962910, 1e-6);
  EXPECT_FALSE(f.significant);
  // 2.9, 3, 3.1 ms: se = 0.057735, t = 34.64: F = 0.999584 → significant.
  const Finding g = test_loss(FindingKind::kHostStall, {2.9e6, 3e6, 3.1e6}, t);
  EXPECT_NEAR(g.confidence, 0.5 + 34.641016 / (2 * std::sqrt(2 + 34.641016 * 34.641016)), 1e-6);
  EXPECT_TRUE(g.significant);
}

TEST(Findings, OneIterationHasNoConfidence) {
  // One iteration, one rank: no variance, so no standard error and no confidence (NaN = NULL);
  // significance is the material share alone: 2 ms of 100 ms is above 1%, 0.5 ms is not.
  const Finding f = test_loss(FindingKind::kIdle, {2e6}, {100e6});
  EXPECT_TRUE(std::isnan(f.confidence));
  EXPECT_TRUE(std::isnan(f.stderr_ns));
  EXPECT_TRUE(f.significant);
  EXPECT_EQ(f.samples, 1u);
  EXPECT_NE(f.test.find("one iteration: no variance"), std::string::npos);
  EXPECT_FALSE(test_loss(FindingKind::kIdle, {0.5e6}, {100e6}).significant);
  // Two ranks are too few to be the samples: still no confidence.
  const Finding g = test_loss(FindingKind::kIdle, {2e6}, {100e6}, {2e6, 2.2e6}, {100e6, 100e6}, 2);
  EXPECT_TRUE(std::isnan(g.confidence));
}

TEST(Findings, FewIterationsTakeTheRanksAsSamples) {
  // One iteration on 4 ranks: 2.0, 2.2, 1.8, 2.0 ms of 100 ms windows. Mean 2 ms, σ = √(0.08/3) =
  // 0.163299 ms, se = 0.081650 ms, t = (2 − 1)/0.081650 = 12.247449 with 3 degrees of freedom:
  // F(t) = ½ + (1/π)(t/(√3(1 + t²/3)) + atan(t/√3)) = 0.999366. The cost is the shown rank's.
  const Finding f = test_loss(FindingKind::kIdle, {2.2e6}, {100e6}, {2.0e6, 2.2e6, 1.8e6, 2.0e6},
                              std::vector<double>(4, 100e6), 4);
  EXPECT_EQ(f.samples, 4u);
  EXPECT_DOUBLE_EQ(f.cost_ns, 2.2e6);
  EXPECT_NEAR(f.stderr_ns, 0.0816497e6, 1);
  const double tt = 12.247449, r3 = std::sqrt(3.0);
  EXPECT_NEAR(f.confidence,
              0.5 + (tt / (r3 * (1 + tt * tt / 3)) + std::atan(tt / r3)) / std::numbers::pi, 1e-6);
  EXPECT_TRUE(f.significant);
  EXPECT_EQ(f.test, "t test over 4 rank-iterations (1 iteration, 4 ranks)");
}

TEST(Findings, SlowestRankOnlyWhenSignificantlySlower) {
  // Windows within 0.06% of each other: no slowest rank; the lowest rank is shown.
  bool sig = true;
  EXPECT_EQ(
      rank_shown({{2, 100'060'000}, {0, 100'000'000}, {1, 100'030'000}, {3, 100'010'000}}, sig), 0);
  EXPECT_FALSE(sig);
  // Rank 3 10 ms over the others' median 100 ms (their robust σ 1.4826 × 0.1 ms): 10 > max(0.44,
  // 1) ms: significantly slowest.
  EXPECT_EQ(
      rank_shown({{0, 100'000'000}, {1, 100'200'000}, {2, 99'900'000}, {3, 110'000'000}}, sig), 3);
  EXPECT_TRUE(sig);
  // Two ranks: the other's σ is 0, so 1% of it decides: 0.5% is noise, 2% is not.
  EXPECT_EQ(rank_shown({{1, 100'500'000}, {0, 100'000'000}}, sig), 0);
  EXPECT_FALSE(sig);
  EXPECT_EQ(rank_shown({{1, 102'000'000}, {0, 100'000'000}}, sig), 1);
  EXPECT_TRUE(sig);
  // One rank is its own slowest.
  EXPECT_EQ(rank_shown({{5, 1000}}, sig), 5);
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
