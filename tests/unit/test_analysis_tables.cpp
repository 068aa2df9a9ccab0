// The run-wide analysis tables (report/analysis_report.hpp), each declared once: the cells that
// analysis_tables writes for hand-made analysis results, NULL exactly where the declarations say.
#include <gtest/gtest.h>

#include "chopper/base/error.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/html/report_html.hpp"

namespace chopper {
namespace {

// No per-rank rows: each per-rank table is written empty.
class NoRankRows : public RankRows {
 public:
  void rows(RankStream, TableSink&) override {}
};

CollectiveRow collective(int64_t ranks, int64_t bytes, Ns latency_ns, Ns skew_ns, double algbw,
                         double busbw) {
  CollectiveRow c;
  c.type = CollType::kAllReduce;
  c.ranks = ranks;
  c.bytes = bytes;
  c.latency_ns = c.max_dur_ns = latency_ns;
  c.arrival_skew_ns = skew_ns;
  c.end_skew_ns = skew_ns < 0 ? -1 : 2 * skew_ns;
  c.first_rank = c.last_rank = 0;
  c.algbw_gbs = algbw;
  c.busbw_gbs = busbw;
  return c;
}

struct Written {
  html::TableStore store;
  explicit Written(const RunAnalysis& ra) {
    NoRankRows none;
    analysis_tables(ra, AnalysisOptions{}, store, none);
  }
  const Table& get(const char* name) const {
    const Table* t = store.get(name);
    if (t == nullptr) throw Error(std::string("no table ") + name);
    return *t;
  }
};

TEST(AnalysisTables, CollectivesNullWhereDeclared) {
  RunAnalysis ra;
  // Matched on 2 ranks: 1024 bytes in 256 ns = 4 GB/s, bus factor of a group of 2 = 1.
  ra.collectives.push_back(collective(2, 1024, 256, 10, 4.0, 4.0));
  // One rank loaded, group size unknown: 1024 bytes in 512 ns = 2 GB/s, no bus bandwidth.
  ra.collectives.push_back(collective(1, 1024, 512, -1, 2.0, 0.0));
  // Size unknown: no bandwidths.
  ra.collectives.push_back(collective(2, -1, 100, 30, 0.0, 0.0));
  const Written w(ra);
  const Table& c = w.get("collectives");
  ASSERT_EQ(c.rows(), 3u);
  constexpr size_t skew = kCollectivesTable.handle("arrival_skew_ns").index;
  constexpr size_t end = kCollectivesTable.handle("end_skew_ns").index;
  constexpr size_t busbw = kCollectivesTable.handle("busbw_gbs").index;
  constexpr size_t algbw = kCollectivesTable.handle("algbw_gbs").index;
  constexpr size_t size = kCollectivesTable.handle("size_bytes").index;
  EXPECT_EQ(c.get_int(0, end), 20);
  EXPECT_DOUBLE_EQ(c.get_real(0, busbw), 4.0);
  // The one-rank collective: skews and bus bandwidth NULL, its algorithm bandwidth given.
  EXPECT_TRUE(c.is_null(1, skew));
  EXPECT_TRUE(c.is_null(1, end));
  EXPECT_TRUE(c.is_null(1, busbw));
  EXPECT_DOUBLE_EQ(c.get_real(1, algbw), 2.0);
  // Size unknown: size and both bandwidths NULL.
  EXPECT_TRUE(c.is_null(2, size));
  EXPECT_TRUE(c.is_null(2, algbw));
  // Group, called, group size, dtype and algorithm were not recorded: NULL; type is the kernel's.
  for (const char* col : {"group", "called", "group_size", "dtype", "algorithm", "imbalance"})
    EXPECT_TRUE(c.is_null(0, c.col(col))) << col;
  EXPECT_EQ(c.get_text(0, c.col("type")), "all_reduce");

  // The summary per (type, size): the two 1024-byte ones together, the unknown size apart
  // (size -1 sorts first).
  const Table& s = w.get("collective_summary");
  ASSERT_EQ(s.rows(), 2u);
  EXPECT_TRUE(s.is_null(0, s.col("size_bytes")));
  EXPECT_TRUE(s.is_null(0, s.col("algbw_mean_gbs")));
  EXPECT_TRUE(s.is_null(0, s.col("busbw_mean_gbs")));
  EXPECT_DOUBLE_EQ(s.get_real(0, s.col("arrival_skew_mean_ns")), 30.0);
  EXPECT_EQ(s.get_int(1, s.col("size_bytes")), 1024);
  EXPECT_EQ(s.get_int(1, s.col("count")), 2);
  EXPECT_EQ(s.get_int(1, s.col("ranks")), 2);
  EXPECT_DOUBLE_EQ(s.get_real(1, s.col("latency_mean_ns")), 384.0);  // (256 + 512) / 2
  // Skews of the matched one only; bus bandwidth of the one that has it; algbw over both.
  EXPECT_DOUBLE_EQ(s.get_real(1, s.col("arrival_skew_mean_ns")), 10.0);
  EXPECT_DOUBLE_EQ(s.get_real(1, s.col("end_skew_mean_ns")), 20.0);
  EXPECT_DOUBLE_EQ(s.get_real(1, s.col("busbw_mean_gbs")), 4.0);
  EXPECT_DOUBLE_EQ(s.get_real(1, s.col("algbw_mean_gbs")), 3.0);  // (4 + 2) / 2
}

TEST(AnalysisTables, ComponentsAndIterations) {
  RunAnalysis ra;
  RankAnalysis r;
  r.rank = 3;
  r.components[7] = {{"forward.gemm", 30}, {"idle", 10}};
  ra.ranks.push_back(std::move(r));
  IterationRow it;
  it.iteration = 7;
  it.ranks = 1;
  it.time_ns = 40;
  it.slowest_rank = 3;  // shown, not significantly slowest (one rank)
  it.components = {{"forward.gemm", 30}, {"idle", 10}};
  ra.iterations.push_back(it);
  it.iteration = 8;
  it.tokens = 20;
  it.slowest_significant = true;
  ra.iterations.push_back(it);
  const Written w(ra);

  // rank_components: shares of the window's Σ (40 ns).
  const Table& rc = w.get("rank_components");
  ASSERT_EQ(rc.rows(), 2u);
  EXPECT_EQ(rc.get_int(0, rc.col("rank")), 3);
  EXPECT_EQ(rc.get_int(0, rc.col("iteration")), 7);
  EXPECT_EQ(rc.get_text(0, rc.col("component")), "forward.gemm");
  EXPECT_DOUBLE_EQ(rc.get_real(0, rc.col("share")), 0.75);
  EXPECT_DOUBLE_EQ(rc.get_real(1, rc.col("share")), 0.25);

  // end_to_end: per token only where tokens are given (iteration 8: 30 ns / 20 tokens).
  const Table& e = w.get("end_to_end");
  ASSERT_EQ(e.rows(), 4u);
  EXPECT_EQ(e.get_int(0, e.col("rank")), 3);
  EXPECT_DOUBLE_EQ(e.get_real(0, e.col("share")), 0.75);
  EXPECT_TRUE(e.is_null(0, e.col("per_token_ns")));
  EXPECT_DOUBLE_EQ(e.get_real(2, e.col("per_token_ns")), 1.5);

  // iterations: slowest_rank only when significant; tokens NULL when not given; no straggler
  // candidate (one rank), no least-lead rank, no FLOPs: their columns NULL; shown_rank always.
  const Table& i = w.get("iterations");
  ASSERT_EQ(i.rows(), 2u);
  EXPECT_TRUE(i.is_null(0, i.col("slowest_rank")));
  EXPECT_EQ(i.get_int(1, i.col("slowest_rank")), 3);
  EXPECT_EQ(i.get_int(0, i.col("shown_rank")), 3);
  EXPECT_TRUE(i.is_null(0, i.col("tokens")));
  EXPECT_EQ(i.get_int(1, i.col("tokens")), 20);
  for (const char* col : {"tflops_per_gpu", "mfu", "straggler_rank", "straggler_candidate",
                          "least_lead_rank", "straggler_lead_ns"})
    EXPECT_TRUE(i.is_null(0, i.col(col))) << col;
  // Units the names do not give.
  const TableSchema schema = kIterationsTable.schema();
  EXPECT_EQ(schema.columns[kIterationsTable.handle("tokens_per_s").index].unit, "1/s");
  EXPECT_EQ(schema.columns[kIterationsTable.handle("tflops_per_gpu").index].unit, "TFLOP/s");
}

TEST(AnalysisTables, NameStatsAndInstances) {
  RunAnalysis ra;
  NameStat all;  // rank -1: all ranks; the folded row has no class
  all.name = "others";
  all.count = 4;
  all.total_ns = 10;
  ra.kernels.push_back(all);
  RankAnalysis r;
  r.rank = 1;
  OpInstance x;
  x.rank = 1;
  x.first_start_ns = x.last_end_ns = 50;  // an empty span: no overlap ratio
  r.ops.push_back(x);
  x.last_end_ns = 150;
  x.comm_overlap_ns = 25;
  x.lead_ns = 7;
  x.op_class = OpClass::kGemm;
  r.ops.push_back(x);
  ra.ranks.push_back(std::move(r));
  const Written w(ra);

  const Table& k = w.get("kernel_breakdown");
  ASSERT_EQ(k.rows(), 1u);
  EXPECT_TRUE(k.is_null(0, k.col("rank")));
  EXPECT_TRUE(k.is_null(0, k.col("class")));
  EXPECT_DOUBLE_EQ(k.get_real(0, k.col("mean_ns")), 2.5);  // 10 / 4

  const Table& o = w.get("operation_instances");
  ASSERT_EQ(o.rows(), 2u);
  EXPECT_TRUE(o.is_null(0, o.col("overlap_ratio")));
  EXPECT_TRUE(o.is_null(0, o.col("lead_ns")));
  EXPECT_TRUE(o.is_null(0, o.col("op_class")));
  EXPECT_TRUE(o.is_null(0, o.col("iteration")));
  EXPECT_EQ(o.get_int(1, o.col("elapsed_ns")), 100);
  EXPECT_DOUBLE_EQ(o.get_real(1, o.col("overlap_ratio")), 0.25);  // 25 / 100
  EXPECT_EQ(o.get_int(1, o.col("lead_ns")), 7);
  EXPECT_EQ(o.get_text(1, o.col("op_class")), "gemm");
}

}  // namespace
}  // namespace chopper

namespace chopper {
namespace {

TEST(AnalysisSummary, HostOnlyTraceSaysItHasNoGpuActivities) {
  // A rank read whole but with no kernel, copy or memset (HTA's no_distributed_info trace: 2,467
  // cpu_ops and a ProfilerStep, no GPU event): the summary says there is no GPU time, not that
  // ProfilerStep ranges are missing; with GPU time and no iteration it says the latter.
  RunAnalysis ra;
  ra.ranks.emplace_back();
  ra.ranks.back().ok = true;
  ra.ranks.back().rank = 0;
  const std::string host_only = analysis_summary(ra, AnalysisOptions{}, Findings{});
  EXPECT_EQ(host_only,
            "No GPU activities in the trace (host operations only): no GPU time to break down.\n");
  ra.ranks.back().gpu_time_ns = 1000;
  const std::string no_steps = analysis_summary(ra, AnalysisOptions{}, Findings{});
  EXPECT_EQ(no_steps.rfind("No iterations found (no ProfilerStep#N ranges)", 0), 0u) << no_steps;
}

}  // namespace
}  // namespace chopper
