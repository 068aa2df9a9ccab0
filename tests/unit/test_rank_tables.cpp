// The per-rank tables (report/rank_tables.hpp), each declared once: the schema of every stream is
// its table's declaration, and the rows a rank gives follow the columns, NULLs included.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "chopper/report/rank_tables.hpp"

namespace chopper {
namespace {

// Keeps the one table it is given.
struct Collect : TableSink {
  std::optional<Table> t;
  void begin(const TableSchema& s) override { t.emplace(s); }
  void row(std::span<const Cell> c) override { t->add_row(c); }
  void end() override {}
};

TEST(RankTables, EveryStreamWritesItsDeclaredTable) {
  std::set<std::string> tables;
  for (RankStream s : all_rank_streams()) {
    const TableSchema schema = rank_table_schema(s);
    EXPECT_EQ(schema.name, rank_stream_table(s));
    tables.insert(schema.name);
    // Every column documented: a meaning, a NULL meaning, the unit its name carries.
    for (const ColumnSpec& c : schema.columns) {
      EXPECT_FALSE(c.doc.empty()) << schema.name << "." << c.name;
      EXPECT_FALSE(c.null_when.empty()) << schema.name << "." << c.name;
      EXPECT_EQ(c.unit, unit_of_name(c.name)) << schema.name << "." << c.name;
    }
  }
  // 16 streams, 13 tables: the four hierarchy streams are levels of one table.
  EXPECT_EQ(all_rank_streams().size(), kRankStreamCount);
  EXPECT_EQ(kRankStreamCount, 16u);
  EXPECT_EQ(tables.size(), 13u);
  EXPECT_EQ(rank_stream_table(RankStream::kHierarchyOperation), "hierarchy");
  EXPECT_EQ(rank_table_schema(RankStream::kHierarchyPhase).columns.size(), kHierarchyTable.size());
}

// A labelled rank of two activities: the first with every label and its rules, the second with
// none (no correlation, no iteration, layer, operation, no rule).
RankSlot two_activities(bool labelled) {
  RankSlot s;
  s.ok = true;
  s.rank = 3;
  RankTrace& t = s.trace;
  GpuActivities& g = t.gpu;
  g.for_each_column([](auto& col) { col.resize(2); });
  if (labelled) t.label_rules = {"profiler_step", "gemm_name", "block_index"};
  const StrId mm = t.strings.intern("aten::mm"), k0 = t.strings.intern("gemm_k"),
              k1 = t.strings.intern("copy_k");
  for (size_t a = 0; a < 2; ++a) {
    g.kind[a] = a == 0 ? GpuKind::kKernel : GpuKind::kMemcpy;
    g.device[a] = 1;
    g.stream[a] = 7;
    g.start_ns[a] = 1000 * static_cast<Ns>(a + 1);
    g.dur_ns[a] = 50;
    g.name[a] = a == 0 ? k0 : k1;
  }
  g.correlation = {42, kNoId};
  g.iteration = {5, kNoId};
  g.phase = {Phase::kForward, Phase::kNone};
  g.layer = {2, -1};
  g.operation = {mm, 0};
  g.op_class = {OpClass::kGemm, OpClass::kMemcpy};
  g.iteration_rule = {0, kNoRule};
  g.phase_rule = {kNoRule, kNoRule};
  g.layer_rule = {2, kNoRule};
  g.operation_rule = {kNoRule, kNoRule};
  g.op_class_rule = {1, 9};  // 9: not a rule of the trace
  return s;
}

TEST(RankTables, GpuActivityRowsFollowTheLabels) {
  const RankSlot s = two_activities(true);
  Collect c;
  c.begin(kGpuActivitiesTable.schema());
  rank_rows(RankStream::kGpuActivities, RankView{&s}, AnalysisOptions{}, c);
  const Table& t = *c.t;
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.get_int(0, t.col("rank")), 3);
  EXPECT_EQ(t.get_text(0, t.col("kind")), "kernel");
  EXPECT_EQ(t.get_text(1, t.col("name")), "copy_k");
  EXPECT_EQ(t.get_int(0, t.col("correlation")), 42);
  EXPECT_TRUE(t.is_null(1, t.col("correlation"))) << "kNoId: the event has none";
  EXPECT_EQ(t.get_int(0, t.col("iteration")), 5);
  EXPECT_EQ(t.get_text(0, t.col("phase")), "forward");
  EXPECT_EQ(t.get_int(0, t.col("layer")), 2);
  EXPECT_EQ(t.get_text(0, t.col("operation")), "aten::mm");
  EXPECT_EQ(t.get_text(0, t.col("op_class")), "gemm");
  EXPECT_EQ(t.get_text(0, t.col("iteration_rule")), "profiler_step");
  EXPECT_EQ(t.get_text(0, t.col("layer_rule")), "block_index");
  EXPECT_EQ(t.get_text(0, t.col("op_class_rule")), "gemm_name");
  EXPECT_TRUE(t.is_null(0, t.col("phase_rule"))) << "kNoRule: not set";
  for (const char* col : {"iteration", "phase", "layer", "operation", "iteration_rule"})
    EXPECT_TRUE(t.is_null(1, t.col(col))) << col;
  EXPECT_EQ(t.get_text(1, t.col("op_class")), "memcpy");
  EXPECT_TRUE(t.is_null(1, t.col("op_class_rule"))) << "an index past the trace's rules";

  // Not labelled (no rules): every label and rule NULL, the activity's own columns kept.
  const RankSlot u = two_activities(false);
  Collect d;
  d.begin(kGpuActivitiesTable.schema());
  rank_rows(RankStream::kGpuActivities, RankView{&u}, AnalysisOptions{}, d);
  const Table& v = *d.t;
  for (const char* col :
       {"iteration", "phase", "layer", "operation", "op_class", "iteration_rule", "op_class_rule"})
    EXPECT_TRUE(v.is_null(0, v.col(col))) << col;
  EXPECT_EQ(v.get_int(0, v.col("correlation")), 42);
}

// kernel_hw joins gpu_activities by correlation: a kernel without one has NULL there too (it was
// written as INT64_MIN), and a counter not recorded (NaN) is NULL.
TEST(RankTables, KernelHwCorrelationNullAsInGpuActivities) {
  const RankSlot s = two_activities(true);
  RankAnalysis r;
  r.rank = 3;
  KernelHw k0, k1;
  k0.row = 0;
  k0.power_w = 310.5;
  k1.row = 1;
  r.kernel_hw = {k0, k1};
  Collect c;
  c.begin(kKernelHwTable.schema());
  rank_rows(RankStream::kKernelHw, RankView{&s, &r}, AnalysisOptions{}, c);
  const Table& t = *c.t;
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.get_int(0, t.col("correlation")), 42);
  EXPECT_TRUE(t.is_null(1, t.col("correlation"))) << "kNoId: the event has none";
  EXPECT_DOUBLE_EQ(t.get_real(0, t.col("power_w")), 310.5);
  EXPECT_TRUE(t.is_null(1, t.col("power_w"))) << "NaN: not recorded";
}

// A run of two ranks at levels gpu and gpu × iteration: each row's share is of its parent's kernel
// time (gpu rows: of every gpu row's), and the levels below a row's are NULL.
TEST(RankTables, HierarchyRowsShareOfTheirParent) {
  auto strings = std::make_shared<StringTable>();
  auto row = [](int64_t rank, int64_t it, Ns kernel_ns) {
    AggRow r;
    r.rank = rank;
    r.device = 0;
    r.iteration = it;
    r.count = 1;
    r.kernel_ns = kernel_ns;
    r.busy_ns = kernel_ns;
    r.first_start_ns = 10;
    r.last_end_ns = 10 + kernel_ns;
    return r;
  };
  std::vector<Aggregation> prefixes(2);
  prefixes[0] = {{Level::kGpu}, {row(0, kNoId, 300), row(1, kNoId, 100)}, strings};
  prefixes[1] = {{Level::kGpu, Level::kIteration},
                 {row(0, 1, 200), row(0, 2, 100), row(1, kNoId, 100)},
                 strings};
  Collect c;
  c.begin(kHierarchyTable.schema());
  for (size_t k = 0; k < prefixes.size(); ++k) hierarchy_level_rows(prefixes, k, c);
  const Table& t = *c.t;
  ASSERT_EQ(t.rows(), 5u);
  const size_t share = t.col("share_of_parent");
  EXPECT_EQ(t.get_text(0, t.col("level")), "gpu");
  EXPECT_DOUBLE_EQ(t.get_real(0, share), 0.75);  // 300 / (300 + 100)
  EXPECT_DOUBLE_EQ(t.get_real(1, share), 0.25);
  EXPECT_TRUE(t.is_null(0, t.col("iteration"))) << "a gpu row has no iteration";
  EXPECT_EQ(t.get_text(2, t.col("level")), "iteration");
  EXPECT_EQ(t.get_int(2, t.col("iteration")), 1);
  EXPECT_DOUBLE_EQ(t.get_real(2, share), 200.0 / 300.0);  // of rank 0's gpu row
  EXPECT_DOUBLE_EQ(t.get_real(3, share), 100.0 / 300.0);
  EXPECT_TRUE(t.is_null(4, t.col("iteration"))) << "the group with no iteration";
  EXPECT_DOUBLE_EQ(t.get_real(4, share), 1.0);  // all of rank 1's
  for (size_t r = 0; r < t.rows(); ++r) {
    EXPECT_TRUE(t.is_null(r, t.col("phase")));
    EXPECT_TRUE(t.is_null(r, t.col("operation")));
    EXPECT_EQ(t.get_int(r, t.col("elapsed_ns")), t.get_int(r, t.col("kernel_ns")));
  }
}

}  // namespace
}  // namespace chopper
