// Launch overhead, idle by cause and launch statistics on a hand-written trace
// (tests/data/graph_launch.json): one ProfilerStep#1 at 0 µs, one stream, six launch calls.
//
//   call (corr)          call [start, end) µs   its activities [start, end) µs
//   cudaLaunchKernel 11  [20, 24)                gemm_kernel [30, 50)
//   cudaLaunchKernel 12  [90, 96)                add_kernel [100, 110)
//   cudaGraphLaunch  13  [130, 580)              graph_k1..4 [150, 160) [170, 180) [200, 210)
//                                                [215, 225)
//   cudaLaunchKernel 14  [690, 698)              relu_kernel [700, 710)
//   cudaLaunchKernel 15  [712, 717)              mul_kernel [1000, 1010): launched, then the
//                                                GPU sat idle for 283 µs (an event, a sync)
//   cudaLaunchKernel 16  [1012, 1019)            sub_kernel [1020, 1030)
//
// The iteration's window is [0, 1030) µs (it opens at the step's host start, the GPU idle before
// the first kernel); 100 µs of compute, so 930 µs idle. Every number below is worked out by hand
// from the table, in the comments beside it.
#include <gtest/gtest.h>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

constexpr Ns kUs = 1000;

RankAnalysis analyze_fixture() {
  RankTrace t = parse(read_file(data_path("graph_launch.json")));
  label_trace(Taxonomy::builtin(), t);
  AnalysisOptions o;
  o.threads = 1;
  return analyze_rank(t, 0, o);
}

}  // namespace

// The graph launch is classified from its runtime call's name.
TEST(Launch, GraphLaunchIsClassified) {
  RankTrace t = parse(read_file(data_path("graph_launch.json")));
  ASSERT_EQ(t.runtime.size(), 6u);
  ASSERT_EQ(t.runtime.graph_launch.size(), 6u);
  int graphs = 0;
  for (size_t i = 0; i < t.runtime.size(); ++i) {
    const bool want = t.strings.str(t.runtime.name[i]) == "cudaGraphLaunch";
    EXPECT_EQ(t.runtime.graph_launch[i], want) << t.strings.str(t.runtime.name[i]);
    graphs += want;
  }
  EXPECT_EQ(graphs, 1);
}

// The gaps before the compute kernels, split by cause (LaunchRow, summed over labels).
TEST(Launch, GapsSplitByCause) {
  const RankAnalysis r = analyze_fixture();
  ASSERT_TRUE(r.ok);
  LaunchRow sum;
  for (const LaunchRow& l : r.launch) {
    sum.kernels += l.kernels;
    sum.gaps += l.gaps;
    sum.gap_ns += l.gap_ns;
    sum.gpu_wait_ns += l.gpu_wait_ns;
    sum.prep_ns += l.prep_ns;
    sum.call_ns += l.call_ns;
    sum.wait_ns += l.wait_ns;
    sum.graph_ns += l.graph_ns;
    sum.no_launch_ns += l.no_launch_ns;
  }
  EXPECT_EQ(sum.kernels, 9u);
  EXPECT_EQ(sum.gaps, 9u);  // every kernel starts after the previous one ended
  // 30 (window opening to gemm) + 50 + 40 + 10 + 20 + 5 + 475 + 290 + 10.
  EXPECT_EQ(sum.gap_ns, 930 * kUs);
  EXPECT_EQ(sum.gpu_wait_ns, 0);  // no communication or copies
  // Prep, before each launch call started: [0, 20) + [50, 90) + [110, 130) + [225, 690) +
  // [710, 712) + [1010, 1012) = 20 + 40 + 20 + 465 + 2 + 2.
  EXPECT_EQ(sum.prep_ns, 549 * kUs);
  // Call, from the launch call's start to the kernel's (at most the call's end + 100 µs):
  // [20, 30) + [90, 100) + [130, 150) (the graph's first kernel) + [690, 700) + [712, 817)
  // + [1012, 1020) = 10 + 10 + 20 + 10 + 105 + 8.
  EXPECT_EQ(sum.call_ns, 163 * kUs);
  // The mul kernel was launched by 717 µs and started at 1000: past 717 + 100 the GPU waited.
  EXPECT_EQ(sum.wait_ns, 183 * kUs);
  // Between the graph's kernels: [160, 170) + [180, 200) + [210, 215). Before the fix each of
  // them was "launched late by the host": 35 µs more call time (its launch call had started at
  // 130), making call 198 µs.
  EXPECT_EQ(sum.graph_ns, 35 * kUs);
  EXPECT_EQ(sum.no_launch_ns, 0);
  EXPECT_EQ(sum.overhead_ns(), (549 + 163) * kUs);
}

// The end-to-end components of the iteration: the idle 930 µs by cause, adding up exactly.
TEST(Launch, IdleComponentsByCause) {
  const RankAnalysis r = analyze_fixture();
  ASSERT_EQ(r.components.size(), 1u);
  EXPECT_EQ(r.components.begin()->first, 1);
  const std::map<std::string, Ns>& comp = r.components.begin()->second;
  auto at = [&comp](const char* k) {
    auto f = comp.find(k);
    return f == comp.end() ? Ns(-1) : f->second;
  };
  // Before the host's first launch call of the iteration (20 µs): the stall at the step start.
  EXPECT_EQ(at("host_stall"), 20 * kUs);
  // The rest of prep: 549 − 20.
  EXPECT_EQ(at("host_late"), 529 * kUs);
  // All of call (the first call's [20, 30) comes after the first launch).
  EXPECT_EQ(at("launch_overhead"), 163 * kUs);
  EXPECT_EQ(at("graph_gap"), 35 * kUs);
  // What is left: the 183 µs the launched mul kernel waited on the GPU (before the fix: 0, the
  // wait counted as launch overhead).
  EXPECT_EQ(at("idle"), 183 * kUs);
  Ns sum = 0;
  for (const auto& [k, v] : comp) sum += v;
  EXPECT_EQ(sum, 1030 * kUs);  // the window
  ASSERT_EQ(r.breakdown.size(), 2u);
  EXPECT_EQ(r.breakdown[1].idle_ns, 930 * kUs);
}

// HTA's launch statistics count the graph launch once: six launch calls, not nine activities.
TEST(Launch, StatisticsCountAGraphLaunchOnce) {
  const RankAnalysis r = analyze_fixture();
  const LaunchStats& s = r.launch_stats;
  EXPECT_EQ(s.launches, 6u);  // before the fix: 9 (one per activity)
  EXPECT_EQ(s.activities, 9u);
  EXPECT_EQ(s.graph_launches, 1u);
  EXPECT_EQ(s.graph_activities, 4u);  // 4 kernels per graph launch
  // Call durations 4, 6, 450, 8, 5, 7 µs: mean 480 / 6 = 80 µs (before the fix, the graph's 450
  // µs four times: 1830 / 9 = 203.3 µs).
  EXPECT_EQ(s.cpu_mean_ns, 80 * kUs);
  // Sorted 4, 5, 6, 7, 8, 450: the median is the value at index ⌊0.5 · 5 + 0.5⌋ = 3, 7 µs (the
  // nearest-rank method would give the 3rd, 6 µs); p95 at index ⌊0.95 · 5 + 0.5⌋ = 5.
  EXPECT_EQ(s.cpu_p50_ns, 7 * kUs);
  EXPECT_EQ(s.cpu_p95_ns, 450 * kUs);
  EXPECT_EQ(s.cpu_max_ns, 450 * kUs);
  // Delays, first activity start − call end, ≥ 0: 6, 4, 0 (the graph's first kernel ran before
  // its call returned), 2, 283, 1 µs: mean 296 / 6, median (index 3 of 0, 1, 2, 4, 6, 283) 4.
  EXPECT_EQ(s.delay_mean_ns, 296 * kUs / 6);
  EXPECT_EQ(s.delay_p50_ns, 4 * kUs);
  EXPECT_EQ(s.delay_max_ns, 283 * kUs);
  EXPECT_EQ(s.runtime_outliers, 1u);  // the 450 µs graph call, once (before: 4)
  EXPECT_EQ(s.delay_outliers, 1u);    // 283 µs > 100 µs
  EXPECT_EQ(s.short_kernels, 0u);     // every launch's GPU time exceeds its call
  // One stream: each call +1 at its start, −1 when its first activity starts. The calls never
  // overlap their predecessors' kernels, so the queue never exceeds 1 (before the fix the graph
  // put 4 on it at 130 µs).
  ASSERT_EQ(r.queues.size(), 1u);
  EXPECT_EQ(r.queues[0].launches, 6u);
  EXPECT_EQ(r.queues[0].max_queue, 1);
  EXPECT_EQ(r.queues[0].full_ns, 0);
}
