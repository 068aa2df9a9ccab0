// Aggregation over the hierarchy on hand-built runs: every expected number is computed by hand
// in the comments, for ranks given in load order (unknown ranks last), the same rank read from
// two files, and groupings with and without the GPU level.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chopper/hierarchy/aggregate.hpp"

using namespace chopper;

namespace {

struct Act {
  int32_t device;
  Ns start, dur;
  int64_t iteration;
  Phase phase;
  int32_t layer;
  const char* op;
  OpClass cls;
  GpuKind kind = GpuKind::kKernel;
};

RankSlot slot(int64_t rank, const std::string& file, const std::vector<Act>& acts) {
  RankSlot s;
  s.file = file;
  s.rank = rank;
  s.ok = true;
  RankTrace& t = s.trace;
  t.label_rules.push_back("test");
  GpuActivities& g = t.gpu;
  for (const Act& a : acts) {
    g.kind.push_back(a.kind);
    g.device.push_back(a.device);
    g.start_ns.push_back(a.start);
    g.dur_ns.push_back(a.dur);
    g.iteration.push_back(a.iteration);
    g.phase.push_back(a.phase);
    g.layer.push_back(a.layer);
    g.operation.push_back(t.strings.intern(a.op));
    g.op_class.push_back(a.cls);
  }
  return s;
}

constexpr Phase kFwd = Phase::kForward, kBwd = Phase::kBackward;

// Rank 0, GPU 0: mm [0,10) gemm and mm [5,9) elementwise overlap; add [20,25); a sync is not
// GPU work. Busy = |[0,10) u [20,25)| = 15 ns; kernel time 10 + 4 + 5 = 19 ns.
std::vector<Act> rank0() {
  return {{0, 0, 10, 1, kFwd, 0, "mm", OpClass::kGemm},
          {0, 5, 4, 1, kFwd, 0, "mm", OpClass::kElementwise},
          {0, 20, 5, 1, kFwd, 1, "add", OpClass::kElementwise},
          {0, 30, 50, 1, kFwd, 1, "add", OpClass::kSync, GpuKind::kSync}};
}

const AggRow* find(const Aggregation& a, int64_t rank, std::string_view op = {}) {
  for (const AggRow& r : a.rows)
    if (r.rank == rank && (op.empty() || a.operation(r) == op)) return &r;
  return nullptr;
}

}  // namespace

TEST(Aggregate, RowsInKeyOrderWhateverTheLoadOrder) {
  chopper::Run run;
  run.ranks.push_back(slot(0, "rank0.json", rank0()));
  run.ranks.push_back(slot(1, "rank1.json", {{1, 100, 7, 2, kBwd, -1, "mm", OpClass::kGemm}}));
  // A rank neither distributedInfo nor the file name gave: loaded last, first by key (-1).
  run.ranks.push_back(slot(-1, "x.json", {{0, 50, 3, 1, kFwd, 0, "mm", OpClass::kGemm}}));

  const Aggregation gpu = aggregate(run, std::vector<Level>{Level::kGpu});
  ASSERT_EQ(gpu.rows.size(), 3u);
  EXPECT_EQ(gpu.rows[0].rank, -1);
  EXPECT_EQ(gpu.rows[1].rank, 0);
  EXPECT_EQ(gpu.rows[2].rank, 1);
  const AggRow& r0 = gpu.rows[1];
  EXPECT_EQ(r0.count, 3u);  // the sync is left out
  EXPECT_EQ(r0.kernel_ns, 19);
  EXPECT_EQ(r0.busy_ns, 15);
  EXPECT_EQ(r0.first_start_ns, 0);
  EXPECT_EQ(r0.last_end_ns, 25);
  EXPECT_EQ(gpu.rows[2].device, 1);

  const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase, Level::kLayer,
                                     Level::kOperation};
  const std::vector<Aggregation> pre = aggregate_prefixes(run, levels);
  ASSERT_EQ(pre.size(), 5u);
  const Aggregation& ops = pre[4];
  // Rank 0's mm: 2 activities, 14 ns of kernels, busy 10 ns; gemm (10 ns) beats elementwise (4).
  const AggRow* mm = find(ops, 0, "mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, 2u);
  EXPECT_EQ(mm->kernel_ns, 14);
  EXPECT_EQ(mm->busy_ns, 10);
  EXPECT_EQ(mm->op_class, OpClass::kGemm);
  // Rows: rank -1 mm; rank 0 mm (layer 0), add (layer 1); rank 1 mm: sorted by key.
  ASSERT_EQ(ops.rows.size(), 4u);
  for (size_t i = 1; i < ops.rows.size(); ++i) {
    const AggRow &a = ops.rows[i - 1], &b = ops.rows[i];
    EXPECT_TRUE(std::tie(a.rank, a.device, a.iteration, a.phase, a.layer) <
                std::tie(b.rank, b.device, b.iteration, b.phase, b.layer))
        << "row " << i;
  }
}

TEST(Aggregate, OneRankFromTwoFilesIsOneRowPerKey) {
  // Rank 0 read from two files, with rank 1 between them (file order): one row per key, counts
  // and kernel time summed; busy time is each file's union, summed (15 + 4 ns).
  chopper::Run run;
  run.ranks.push_back(slot(0, "a.json", rank0()));
  run.ranks.push_back(slot(1, "b.json", {{0, 0, 1, 1, kFwd, 0, "mm", OpClass::kGemm}}));
  run.ranks.push_back(slot(0, "c.json", {{0, 3, 4, 1, kFwd, 0, "mm", OpClass::kElementwise}}));
  for (const bool adjacent : {false, true}) {
    SCOPED_TRACE(adjacent ? "rank 0's files adjacent" : "rank 0's files apart");
    if (adjacent) std::swap(run.ranks[1], run.ranks[2]);
    const std::vector<Aggregation> pre =
        aggregate_prefixes(run, std::vector<Level>{Level::kGpu, Level::kOperation});
    ASSERT_EQ(pre[0].rows.size(), 2u);
    const AggRow& g0 = pre[0].rows[0];
    EXPECT_EQ(g0.rank, 0);
    EXPECT_EQ(g0.count, 4u);
    EXPECT_EQ(g0.kernel_ns, 23);
    EXPECT_EQ(g0.busy_ns, 19);
    EXPECT_EQ(g0.first_start_ns, 0);
    EXPECT_EQ(g0.last_end_ns, 25);
    // mm on rank 0: 3 activities, 18 ns; gemm 10 ns against elementwise 4 + 4 = 8 ns.
    const AggRow* mm = find(pre[1], 0, "mm");
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(mm->count, 3u);
    EXPECT_EQ(mm->kernel_ns, 18);
    EXPECT_EQ(mm->op_class, OpClass::kGemm);
    EXPECT_EQ(pre[1].rows.size(), 3u);  // rank 0 mm, rank 0 add, rank 1 mm
  }
}

TEST(Aggregate, WithoutTheGpuLevelRanksMerge) {
  // Forward: rank 0's three activities and rank 1's [0,2): 4 activities, 21 ns, busy 15 + 2 ns
  // (a union per GPU, summed over GPUs).
  chopper::Run run;
  run.ranks.push_back(slot(0, "rank0.json", rank0()));
  run.ranks.push_back(slot(1, "rank1.json",
                           {{1, 0, 2, 1, kFwd, 0, "mm", OpClass::kGemm},
                            {1, 100, 7, 2, kBwd, -1, "mm", OpClass::kGemm}}));
  const Aggregation ph = aggregate(run, std::vector<Level>{Level::kPhase});
  ASSERT_EQ(ph.rows.size(), 2u);  // forward, backward (Phase order)
  EXPECT_EQ(ph.rows[0].rank, -1);
  EXPECT_EQ(ph.rows[0].phase, kFwd);
  EXPECT_EQ(ph.rows[0].count, 4u);
  EXPECT_EQ(ph.rows[0].kernel_ns, 21);
  EXPECT_EQ(ph.rows[0].busy_ns, 17);
  EXPECT_EQ(ph.rows[1].phase, kBwd);
  EXPECT_EQ(ph.rows[1].count, 1u);
  EXPECT_EQ(ph.rows[1].busy_ns, 7);
}
