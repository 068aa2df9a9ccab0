// Every public trace in ../shared/traces/kineto loads, and its numbers agree with an independent
// count: tests/real/independent_counts.py (Python's json module with Decimal timestamps; run
// `python3 tests/real/independent_counts.py > counts.json`) produced every expected value below.
// The link paths are that script's "a_b_require_enclosure" variant, which is chopper's rule: an
// External id match counts only when that host op encloses the runtime call on its thread.
// The tests skip, saying so, when ../shared/traces is absent.
#include <gtest/gtest.h>

#include <map>

#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

struct Expected {
  const char* file;  // under traces/kineto
  const char* ts_format;
  uint64_t total_events;                          // every entry of traceEvents
  uint64_t gpu_activities;                        // kernels + memcpys + memsets
  std::map<std::string, uint64_t> x_by_category;  // complete events per category as named
  uint64_t via_runtime_external_id, via_kernel_external_id, via_containment;
  std::vector<int64_t> steps;
  int64_t rank, world_size;  // from distributedInfo, -1 when absent
  Ns gpu_min_start_ns;       // absolute (base added) when the trace has baseTimeNanoseconds
  Ns gpu_dur_sum_ns;
};

const std::vector<Expected>& expected() {
  static const std::vector<Expected> e = {
      {"hta_a100_alexnet_cuda_sync.json.gz",
       "int_epoch_us",
       1408,
       98,
       {{"Trace", 1},
        {"cpu_op", 359},
        {"cuda_runtime", 361},
        {"cuda_sync", 41},
        {"gpu_memcpy", 16},
        {"gpu_memset", 3},
        {"kernel", 79},
        {"user_annotation", 8}},
       0,
       0,
       98,
       {},
       0,
       -1,
       1695835572943613000,
       66203000},
      {"hta_a100_cupti_counters.json.gz",
       "int_epoch_us",
       4222,
       0,
       {{"Trace", 2},
        {"cpu_op", 375},
        {"cuda_profiler_range", 77},
        {"cuda_runtime", 1862},
        {"user_annotation", 8}},
       0,
       0,
       0,
       {},
       0,
       -1,
       kNoTime,
       0},
      {"hta_a100_ddp_nccl_rank0.json.gz",
       "relative_to_base",
       40573,
       3774,
       {{"Trace", 1},
        {"cpu_op", 14346},
        {"cuda_runtime", 8740},
        {"gpu_memcpy", 960},
        {"gpu_memset", 114},
        {"gpu_user_annotation", 30},
        {"kernel", 2700},
        {"user_annotation", 42}},
       3774,
       0,
       0,
       {4, 5, 6},
       0,
       2,
       1716423322422880181,
       165185838},
      {"hta_cpu_only_rank34.json.gz",
       "relative_to_base",
       30,
       0,
       {{"Trace", 1}, {"cpu_op", 4}, {"user_annotation", 11}},
       0,
       0,
       0,
       {551},
       34,
       300,
       kNoTime,
       0},
      {"hta_event_sync_multi_stream.json.gz",
       "int_epoch_us",
       149,
       6,
       {{"Trace", 1},
        {"cpu_op", 6},
        {"cuda_runtime", 39},
        {"cuda_sync", 5},
        {"gpu_memset", 3},
        {"kernel", 3}},
       6,
       0,
       0,
       {},
       0,
       -1,
       1712867402348667000,
       372000},
      {"hta_mi250_minitoy_rocm6.2.json.gz",
       "relative_to_base",
       220,
       16,
       {{"Trace", 1},
        {"cpu_op", 70},
        {"cuda_runtime", 21},
        {"gpu_memcpy", 2},
        {"gpu_user_annotation", 2},
        {"kernel", 14},
        {"user_annotation", 3}},
       16,
       0,
       0,
       {1, 2},
       -1,
       -1,
       1739836029603454206,
       149042},
      {"hta_no_distributed_info.json.gz",
       "int_epoch_us",
       2467,
       0,
       {{"cpu_op", 2424}, {"user_annotation", 43}},
       0,
       0,
       0,
       {1009},
       -1,
       -1,
       kNoTime,
       0},
      {"hta_sampled_2rank/rank-0.json.gz",
       "int_epoch_us",
       4855,
       1204,
       {{"Trace", 1},
        {"cpu_op", 2329},
        {"cuda_runtime", 1204},
        {"gpu_memcpy", 40},
        {"gpu_memset", 10},
        {"kernel", 1154},
        {"user_annotation", 73}},
       0,
       0,
       1204,
       {551, 552},
       0,
       128,
       1682725898082228000,
       607844000},
      {"hta_sampled_2rank/rank-1.json.gz",
       "int_epoch_us",
       4720,
       1154,
       {{"Trace", 1},
        {"cpu_op", 2302},
        {"cuda_runtime", 1154},
        {"gpu_memcpy", 40},
        {"gpu_memset", 10},
        {"kernel", 1104},
        {"user_annotation", 65}},
       0,
       0,
       1154,
       {551, 552},
       1,
       128,
       1682725898082381000,
       667530000},
      {"hta_triton_culaunch.json.gz",
       "relative_to_base",
       71,
       1,
       {{"Trace", 1},
        {"cpu_op", 3},
        {"cuda_driver", 1},
        {"cuda_runtime", 1},
        {"kernel", 1},
        {"user_annotation", 1}},
       1,
       0,
       0,
       {1},
       -1,
       -1,
       1730156791097444592,
       1760},
      {"hta_v100_float_epoch_ts.json.gz",
       "float_epoch_us",
       68692,
       6095,
       {{"Trace", 1},
        {"cpu_op", 23910},
        {"cuda_runtime", 15329},
        {"gpu_memcpy", 1600},
        {"gpu_memset", 145},
        {"gpu_user_annotation", 15},
        {"kernel", 4350},
        {"user_annotation", 70}},
       6095,
       0,
       0,
       {101, 102, 103, 104, 105},
       0,
       1,
       1712195495505582988,
       472454441},
      {"kineto_v100_resnet50_2021_legacy.json.gz",
       "int_epoch_us",
       75718,
       9096,
       {{"Kernel", 8772},
        {"Memcpy", 12},
        {"Memset", 312},
        {"Operator", 23646},
        {"Runtime", 11923},
        {"Trace", 1}},
       9096,
       0,
       0,
       {5, 6, 7, 8, 9, 10},
       -1,
       -1,
       1623142623529248000,
       603558000},
      {"tracelens_b200_eager_rank0.json.gz",
       "relative_to_base",
       24656,
       929,
       {{"cpu_op", 4809},
        {"cuda_driver", 221},
        {"cuda_runtime", 1151},
        {"gpu_memcpy", 161},
        {"gpu_user_annotation", 3},
        {"kernel", 768},
        {"overhead", 9},
        {"python_function", 15230},
        {"user_annotation", 3}},
       927,
       0,
       2,
       {},
       0,
       8,
       1768554939865398728,
       11665760},
      {"tracelens_h100_qwen0.5b.json.gz",
       "relative_to_base",
       18221,
       1707,
       {{"Trace", 1},
        {"cpu_op", 4186},
        {"cuda_driver", 1},
        {"cuda_runtime", 1921},
        {"gpu_memcpy", 1},
        {"gpu_memset", 241},
        {"gpu_user_annotation", 1},
        {"kernel", 1465},
        {"python_function", 4262},
        {"user_annotation", 1}},
       1198,
       0,
       0,
       {6},
       -1,
       -1,
       1752839461731622250,
       45647300},
      {"tracelens_mi210_gpu_only.json.gz",
       "relative_to_base",
       2443,
       562,
       {{"Trace", 1}, {"cuda_runtime", 631}, {"kernel", 562}},
       0,
       0,
       0,
       {},
       -1,
       -1,
       1766169255218039954,
       5343422},
      {"tracelens_mi300x_qwen0.5b.json.gz",
       "relative_to_base",
       18090,
       1517,
       {{"Trace", 1},
        {"cpu_op", 4619},
        {"cuda_runtime", 1707},
        {"gpu_memcpy", 1},
        {"gpu_user_annotation", 1},
        {"kernel", 1516},
        {"python_function", 4266},
        {"user_annotation", 1}},
       1054,
       0,
       0,
       {6},
       -1,
       -1,
       1753652182127176383,
       43062802},
      {"tracelens_mi300x_resnet_ddp_rank0.json.gz",
       "relative_to_base",
       56451,
       3653,
       {{"Trace", 1},
        {"cpu_op", 8004},
        {"cuda_runtime", 3100},
        {"gpu_memcpy", 550},
        {"gpu_memset", 108},
        {"gpu_user_annotation", 21},
        {"kernel", 2995},
        {"python_function", 34405},
        {"user_annotation", 24}},
       2685,
       0,
       0,
       {15, 16, 17},
       0,
       8,
       1770932723222894405,
       100230072},
  };
  return e;
}

class RealTrace : public ::testing::TestWithParam<size_t> {};

}  // namespace

TEST_P(RealTrace, MatchesIndependentCount) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  const Expected& x = expected()[GetParam()];
  const std::string path = chopper::test::shared_path(std::string("traces/kineto/") + x.file);
  RankTrace t = load_rank_file(path);
  SCOPED_TRACE(x.file);
  EXPECT_EQ(t.total_events, x.total_events);
  std::map<std::string, uint64_t> got;
  for (const auto& [cat, n] : t.x_events_by_category) got[std::string(t.strings.str(cat))] = n;
  EXPECT_EQ(got, x.x_by_category);
  EXPECT_EQ(t.meta.ts_format, x.ts_format);
  EXPECT_EQ(t.linkable_gpu_activities, x.gpu_activities);
  uint64_t paths[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.kind[i] != GpuKind::kSync) ++paths[static_cast<int>(t.gpu.link_path[i])];
  EXPECT_EQ(paths[static_cast<int>(LinkPath::kRuntimeExternalId)], x.via_runtime_external_id);
  EXPECT_EQ(paths[static_cast<int>(LinkPath::kKernelExternalId)], x.via_kernel_external_id);
  EXPECT_EQ(paths[static_cast<int>(LinkPath::kContainment)], x.via_containment);
  const uint64_t linked = x.via_runtime_external_id + x.via_kernel_external_id + x.via_containment;
  EXPECT_EQ(t.linked_gpu_activities, linked);
  std::vector<int64_t> steps;
  for (const auto& s : t.steps) steps.push_back(s.number);
  EXPECT_EQ(steps, x.steps);
  if (x.rank >= 0) {
    EXPECT_EQ(t.meta.rank, x.rank);
  }
  EXPECT_EQ(t.meta.world_size, x.world_size);
  Ns min_start = kNoTime, dur_sum = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.kind[i] == GpuKind::kSync) continue;
    if (min_start == kNoTime || t.gpu.start_ns[i] < min_start) min_start = t.gpu.start_ns[i];
    dur_sum += t.gpu.dur_ns[i];
  }
  EXPECT_EQ(min_start, x.gpu_min_start_ns) << "exact to the nanosecond";
  EXPECT_EQ(dur_sum, x.gpu_dur_sum_ns);
}

INSTANTIATE_TEST_SUITE_P(Kineto, RealTrace, ::testing::Range<size_t>(0, expected().size()),
                         [](const ::testing::TestParamInfo<size_t>& p) {
                           std::string n = expected()[p.param].file;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// Link rates as the info command prints them, for the files where not every launch is in the
// window: the unlinked activities were launched before profiling started (their correlation is
// below the smallest runtime correlation in the file, per the independent script).
TEST(RealTraces, LinkRates) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  const std::pair<const char*, double> cases[] = {
      {"tracelens_h100_qwen0.5b.json.gz", 1198.0 / 1707.0},
      {"tracelens_mi300x_qwen0.5b.json.gz", 1054.0 / 1517.0},
      {"tracelens_mi300x_resnet_ddp_rank0.json.gz", 2685.0 / 3653.0},
      {"tracelens_mi210_gpu_only.json.gz", 0.0},  // no host ops at all
      {"hta_a100_ddp_nccl_rank0.json.gz", 1.0},
  };
  for (const auto& [file, rate] : cases) {
    RankTrace t = load_rank_file(chopper::test::shared_path(std::string("traces/kineto/") + file));
    EXPECT_DOUBLE_EQ(t.link_rate(), rate) << file;
  }
}

// Collectives, checked against the kernel names and args counted with Python.
TEST(RealTraces, Collectives) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  auto count = [](const std::string& file) {
    RankTrace t = load_rank_file(chopper::test::shared_path("traces/kineto/" + file));
    std::map<std::string, int> by_type;
    for (const auto& c : t.collectives) ++by_type[std::string(coll_type_name(c.type))];
    return by_type;
  };
  // 2xA100 DDP, NCCL < 2.19 names: 15 ncclKernel_AllReduce_RING_LL..., 6
  // ncclKernel_Broadcast_RING_LL.
  EXPECT_EQ(count("hta_a100_ddp_nccl_rank0.json.gz"),
            (std::map<std::string, int>{{"all_reduce", 15}, {"broadcast", 6}}));
  // 128-rank job, sampled: 10 ncclKernel_SendRecv kernels.
  EXPECT_EQ(count("hta_sampled_2rank/rank-0.json.gz"),
            (std::map<std::string, int>{{"send_recv", 10}}));
  // B200: one ncclDevKernel_AllGather_RING_LL and 73 multimem_all_reduce_kernel (symmetric memory).
  EXPECT_EQ(count("tracelens_b200_eager_rank0.json.gz"),
            (std::map<std::string, int>{{"all_gather", 1}, {"all_reduce", 73}}));
  // MI300X RCCL: 17 ncclDevKernel_Generic; 12 carry "Collective name" (6 allreduce, 6 broadcast);
  // the other 5 were launched before the window and have nothing that says their type.
  EXPECT_EQ(count("tracelens_mi300x_resnet_ddp_rank0.json.gz"),
            (std::map<std::string, int>{{"all_reduce", 6}, {"broadcast", 6}, {"unknown", 5}}));
}

TEST(RealTraces, WholeDirectoryLoadsAsARun) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  chopper::Run run = load_run({chopper::test::shared_path("traces/kineto/hta_sampled_2rank")});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  EXPECT_EQ(run.ranks[1].rank, 1);
  EXPECT_EQ(run.failed(), 0u);
}

// Metadata of the B200 trace, read with Python: distributedInfo has pg_count 71 but lists 15
// groups in pg_config; 8 devices "NVIDIA B200" with 148 SMs; NCCL 2.27.5.
TEST(RealTraces, DistributedMetadata) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace test skipped";
  RankTrace t = load_rank_file(
      chopper::test::shared_path("traces/kineto/tracelens_b200_eager_rank0.json.gz"));
  EXPECT_EQ(t.meta.pg_count, 71);
  ASSERT_EQ(t.meta.process_groups.size(), 15u);
  EXPECT_EQ(t.meta.process_groups[0].desc, "default_pg");
  EXPECT_EQ(t.meta.process_groups[0].ranks, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(t.meta.nccl_version, "2.27.5");
  ASSERT_EQ(t.meta.devices.size(), 8u);
  EXPECT_EQ(t.meta.devices[7].name, "NVIDIA B200");
  EXPECT_EQ(t.meta.devices[7].num_sms, 148);
}
