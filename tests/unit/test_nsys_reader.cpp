// The Nsight Systems SQLite export reader (ingest/nsys) on the hand-made export
// tests/data/nsys/two_ranks.sql (its header says what it holds), built into a .sqlite here with the
// SQLite C API.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/ingest/nsys/nsys_detect.hpp"
#include "chopper/ingest/nsys/nsys_gpu_metrics.hpp"
#include "chopper/ingest/nsys/nsys_reader.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "sqlite_from_sql.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

constexpr Ns kSessionStart = 1700000000000000000;  // TARGET_INFO_SESSION_START_TIME.utcEpochNs

fs::path test_dir() {
  const fs::path d =
      fs::temp_directory_path() / ("chopper_nsys_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// The folder goes when the test process ends (ctest runs each test in its own process).
class RemoveTestDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("chopper_nsys_test_" + std::to_string(::getpid())),
                   ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTestDir =
    ::testing::AddGlobalTestEnvironment(new RemoveTestDir);

// The fixture as a .sqlite (afresh), plus `extra` SQL run on it.
std::string make_export(const std::string& name, const std::string& extra = "") {
  const std::string db = (test_dir() / name).string();
  test::sqlite_from_sql(test::data_path("nsys/two_ranks.sql"), db);
  if (!extra.empty()) test::sqlite_exec(db, extra);
  return db;
}

// One integer row of `sql` on `db`, through SQLite itself (an independent count).
std::vector<int64_t> query_row(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  std::vector<int64_t> out;
  if (sqlite3_step(s) == SQLITE_ROW)
    for (int c = 0; c < sqlite3_column_count(s); ++c) out.push_back(sqlite3_column_int64(s, c));
  sqlite3_finalize(s);
  sqlite3_close(h);
  return out;
}

uint64_t diag_count(const RankTrace& t, std::string_view kind) {
  return t.diagnostics.count(kind);
}
std::string diag_examples(const RankTrace& t, std::string_view kind) {
  std::string out;
  for (const auto& e : t.diagnostics.entries())
    if (e.kind == kind)
      for (const auto& x : e.examples) out += x + "\n";
  return out;
}

}  // namespace

TEST(NsysReader, DetectsExportsByContent) {
  const std::string db = make_export("detect.sqlite");
  EXPECT_EQ(nsys::sqlite_kind(db), nsys::SqliteKind::kNsysExport);
  EXPECT_EQ(nsys::sqlite_kind(test::data_path("mini_train.json")), nsys::SqliteKind::kNotSqlite);
  // chopper's own chopper.sqlite has chopper_tables: not an export, even with a StringIds table.
  const std::string own = (test_dir() / "chopper.sqlite").string();
  fs::remove(own);
  test::sqlite_exec(own,
                    "CREATE TABLE chopper_tables (name TEXT); CREATE TABLE StringIds (id, value);");
  EXPECT_EQ(nsys::sqlite_kind(own), nsys::SqliteKind::kChopperOwn);
  try {
    read_rank_file(own);
    FAIL() << "a chopper.sqlite was read as a trace";
  } catch (const NotATraceError& e) {
    EXPECT_TRUE(is_own_output(e.reason())) << e.what();
  }
  // Another SQLite database: not a trace either.
  const std::string other = (test_dir() / "other.sqlite").string();
  fs::remove(other);
  test::sqlite_exec(other, "CREATE TABLE t (x INTEGER);");
  EXPECT_EQ(nsys::sqlite_kind(other), nsys::SqliteKind::kOtherSqlite);
  EXPECT_THROW(read_rank_file(other), NotATraceError);
}

// Two processes with GPU work: two ranks, numbered by process id (100 -> rank 0, 200 -> rank 1).
TEST(NsysReader, OneRankPerProcessAndDevice) {
  const std::string db = make_export("parts.sqlite");
  const std::vector<NsysPart> parts = nsys_parts(db);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].pid, 100);
  EXPECT_EQ(parts[0].device, 0);
  EXPECT_EQ(parts[1].pid, 200);
  EXPECT_EQ(parts[1].device, 1);
  // The plain path of a two-part export names the part paths to read instead.
  try {
    read_nsys_file(db);
    FAIL() << "a two-part export read as one rank";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(db + "#process=200,device=1"), std::string::npos)
        << e.what();
  }
  const chopper::Run run = load_run({db});
  ASSERT_EQ(run.ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    const RankSlot& s = run.ranks[static_cast<size_t>(r)];
    ASSERT_TRUE(s.ok) << s.error;
    EXPECT_EQ(s.rank, r);
    EXPECT_EQ(s.trace.meta.rank_source, "nsys process order");
    EXPECT_EQ(diag_count(s.trace, "nsys_rank"), 1u);
    // TARGET_INFO_GPU through TARGET_INFO_CUDA_DEVICE.
    ASSERT_EQ(s.trace.meta.devices.size(), 1u);
    EXPECT_EQ(s.trace.meta.devices[0].id, r);
    EXPECT_EQ(s.trace.meta.devices[0].name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(s.trace.meta.devices[0].num_sms, 132);
    EXPECT_EQ(s.trace.meta.devices[0].compute_major, 9);
    for (const ThreadKey& k : s.trace.threads) EXPECT_EQ(k.pid, r == 0 ? 100 : 200);
  }
}

// Kernel count and total kernel time: the reader's, over both ranks, equal SQLite's own sum.
TEST(NsysReader, KernelCountAndTimeEqualTheTable) {
  const std::string db = make_export("kernels.sqlite");
  const std::vector<int64_t> want =
      query_row(db, "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(want[0], 12);    // 2 processes x 3 steps x 2 kernels
  EXPECT_EQ(want[1], 3270);  // 3 x (300 + 280) + 3 x (250 + 260)
  const chopper::Run run = load_run({db});
  int64_t n = 0, total = 0, memcpys = 0, memsets = 0;
  for (const RankSlot& s : run.ranks) {
    const GpuActivities& g = s.trace.gpu;
    for (size_t i = 0; i < g.size(); ++i) {
      if (g.kind[i] == GpuKind::kKernel) {
        ++n;
        total += g.dur_ns[i];
      } else if (g.kind[i] == GpuKind::kMemcpy) {
        ++memcpys;
        EXPECT_EQ(g.bytes[i], 4096);
        EXPECT_EQ(g.memcpy_dir[i], MemcpyDir::kHtoD);  // copyKind 1
      } else if (g.kind[i] == GpuKind::kMemset) {
        ++memsets;
        EXPECT_EQ(g.bytes[i], 1024);
      }
    }
  }
  EXPECT_EQ(n, want[0]);
  EXPECT_EQ(total, want[1]);
  EXPECT_EQ(memcpys, 2);
  EXPECT_EQ(memsets, 2);
  // The first kernel of rank 0: demangled name, grid, block, registers, shared memory, stream, and
  // its start on the UTC clock (session start + 1200 ns).
  const GpuActivities& g = run.ranks[0].trace.gpu;
  size_t k = 0;
  while (g.kind[k] != GpuKind::kKernel) ++k;
  EXPECT_EQ(run.ranks[0].trace.strings.str(g.name[k]),
            "void gemm_kernel<float>(float const*, float*, int)");
  EXPECT_EQ(g.start_ns[k], kSessionStart + 1200);
  EXPECT_EQ(g.grid[k], (std::array<int32_t, 3>{108, 1, 1}));
  EXPECT_EQ(g.block[k], (std::array<int32_t, 3>{256, 1, 1}));
  EXPECT_EQ(g.registers[k], 128);
  EXPECT_EQ(g.shared_mem_bytes[k], 49152);
  EXPECT_EQ(g.stream[k], 7);
  EXPECT_EQ(run.ranks[0].trace.meta.ts_format, "nsys_utc_epoch_ns");
}

// Every kernel, memcpy and memset reaches its runtime call (correlationId within its process), and
// the runtime names lose their _vNNNN suffix. The two processes' correlation ids are the same
// numbers: each GPU activity must reach its own process's call (rank 0's launches last 50 and 30
// ns from 100 and 160 ns into each step; both processes' are at the same times, so the pid of the
// call's thread tells them apart).
TEST(NsysReader, RuntimeCallsLinkedWithinTheirProcess) {
  const std::string db = make_export("link.sqlite");
  // The collision the fixture is made of: the same correlation ids in both processes.
  EXPECT_EQ(query_row(db,
                      "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME a JOIN "
                      "CUPTI_ACTIVITY_KIND_RUNTIME b ON a.correlationId = b.correlationId AND "
                      "a.globalTid <> b.globalTid")[0],
            16);  // 8 ids x 2 orders
  const chopper::Run run = load_run({db});
  ASSERT_EQ(run.ranks.size(), 2u);
  for (const RankSlot& s : run.ranks) {
    const RankTrace& t = s.trace;
    const int64_t pid = s.rank == 0 ? 100 : 200;
    EXPECT_EQ(t.runtime.size(), 8u);  // 6 launches, a memcpy and a memset call
    size_t linked = 0, linkable = 0;
    for (size_t i = 0; i < t.gpu.size(); ++i) {
      ++linkable;
      const int32_t r = t.gpu.runtime_idx[i];
      if (r < 0) continue;
      ++linked;
      EXPECT_EQ(t.runtime.correlation[static_cast<size_t>(r)], t.gpu.correlation[i]);
      EXPECT_EQ(t.threads[static_cast<size_t>(t.runtime.thread[static_cast<size_t>(r)])].pid, pid);
    }
    EXPECT_EQ(linkable, 8u);
    EXPECT_EQ(linked, linkable) << "runtime link rate " << double(linked) / double(linkable);
    // Each launch sits inside its ProfilerStep range: the host-op link rate is 1 as well.
    EXPECT_DOUBLE_EQ(t.link_rate(), 1.0);
    std::set<std::string> names;
    for (StrId n : t.runtime.name) names.insert(std::string(t.strings.str(n)));
    EXPECT_EQ(names,
              (std::set<std::string>{"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"}));
    // Kernel durations are the process's own: {300, 280} for pid 100, {250, 260} for pid 200.
    std::multiset<Ns> durs;
    for (size_t i = 0; i < t.gpu.size(); ++i)
      if (t.gpu.kind[i] == GpuKind::kKernel) durs.insert(t.gpu.dur_ns[i]);
    EXPECT_EQ(durs, pid == 100 ? (std::multiset<Ns>{280, 280, 280, 300, 300, 300})
                               : (std::multiset<Ns>{250, 250, 250, 260, 260, 260}));
  }
}

// NVTX push/pop ProfilerStep#N ranges (inline text in process 100, textId in 200) are annotations:
// three steps, and labelling puts every GPU activity in the step that launched it.
TEST(NsysReader, NvtxRangesGiveThreeIterations) {
  const std::string db = make_export("nvtx.sqlite");
  chopper::Run run = load_run({db});
  for (RankSlot& s : run.ranks) {
    RankTrace& t = s.trace;
    ASSERT_EQ(t.host.size(), 3u);
    ASSERT_EQ(t.steps.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(t.steps[static_cast<size_t>(i)].number, i + 1);
      EXPECT_EQ(t.steps[static_cast<size_t>(i)].start_ns, kSessionStart + 1000 * (i + 1));
      EXPECT_EQ(t.steps[static_cast<size_t>(i)].end_ns, kSessionStart + 1000 * (i + 2));
    }
    label_trace(Taxonomy::builtin(), t);
    for (size_t i = 0; i < t.gpu.size(); ++i) {
      // Step N runs from N*1000 ns: the activity's step is its launch's thousand.
      const int64_t want = (t.gpu.start_ns[i] - kSessionStart) / 1000;
      EXPECT_EQ(t.gpu.iteration[i], want) << i;
    }
  }
}

// Rows that cannot be used are counted with the file, table and row; unread tables and columns
// are listed once (in rank 0 only).
TEST(NsysReader, BadRowsAndUnreadContentCounted) {
  const std::string db = make_export(
      "bad.sqlite",
      // end before start; a demangled name id missing from StringIds (falls back to shortName 2).
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, "
      "gridZ, "
      "blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
      "localMemoryTotal, gridId) VALUES (5000, 4000, 0, 1, 7, 99, 1677721600, 1, 2, 1, 1, 1, 1, 1, "
      "1, 1, 0, 0, 0, 0, 0), (5000, 5100, 0, 1, 7, 98, 1677721600, 777, 2, 1, 1, 1, 1, 1, 1, 1, 0, "
      "0, 0, 0, 0);");
  const chopper::Run run = load_run({db});
  ASSERT_EQ(run.ranks.size(), 2u);
  const RankTrace& t0 = run.ranks[0].trace;
  EXPECT_EQ(diag_count(t0, "nsys_bad_row"), 1u);
  EXPECT_NE(diag_examples(t0, "nsys_bad_row")
                .find(db + ": CUPTI_ACTIVITY_KIND_KERNEL rowid 13: end 4000 before start 5000"),
            std::string::npos)
      << diag_examples(t0, "nsys_bad_row");
  EXPECT_EQ(diag_count(t0, "nsys_unknown_string"), 1u);
  EXPECT_NE(diag_examples(t0, "nsys_unknown_string").find("demangledName 777"), std::string::npos);
  size_t kernels = 0;
  for (size_t i = 0; i < t0.gpu.size(); ++i)
    if (t0.gpu.kind[i] == GpuKind::kKernel) ++kernels;
  EXPECT_EQ(kernels, 7u) << "6 good kernels and the one with an unknown name; the bad row skipped";
  // Unread: the tables META_DATA_EXPORT... are named in rank 0 only; the GPU metrics tables are
  // not (read as telemetry, which counts the metrics it has no series for).
  const std::string unread = diag_examples(t0, "nsys_unread");
  EXPECT_NE(unread.find("META_DATA_EXPORT (1 rows)"), std::string::npos) << unread;
  EXPECT_EQ(unread.find("GPU_METRICS"), std::string::npos) << unread;
  EXPECT_NE(unread.find("CUPTI_ACTIVITY_KIND_KERNEL.launchType"), std::string::npos) << unread;
  EXPECT_EQ(diag_count(run.ranks[1].trace, "nsys_unread"), 0u);
}

// A truncated export and a report (.nsys-rep): messages naming the file.
TEST(NsysReader, CorruptFileAndReportNamed) {
  const std::string db = make_export("whole.sqlite");
  const std::string cut = (test_dir() / "cut.sqlite").string();
  {
    const std::string bytes = test::read_file(db);
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  const chopper::Run run = load_run({cut});
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_FALSE(run.ranks[0].ok);
  EXPECT_EQ(run.ranks[0].error.rfind(cut + ": ", 0), 0u) << run.ranks[0].error;
  EXPECT_NE(run.ranks[0].error.find("malformed"), std::string::npos) << run.ranks[0].error;

  const std::string rep = (test_dir() / "run.nsys-rep").string();
  std::ofstream(rep) << "closed";
  const chopper::Run r2 = load_run({rep});
  ASSERT_EQ(r2.ranks.size(), 1u);
  EXPECT_NE(r2.ranks[0].error.find("nsys export --type sqlite -o " + (test_dir() / "run").string() +
                                   ".sqlite " + rep),
            std::string::npos)
      << r2.ranks[0].error;
}

// GPU metrics: GPC clock and GR Active become sm_clock_mhz and util_gpu_pct series of GPU 0 on
// the UTC clock (7 samples each, 1000..4000 ns into the session); the four metrics chopper has no
// Metric for are counted with their sample counts.
TEST(NsysReader, GpuMetricsAsTelemetrySeries) {
  const std::string db = make_export("metrics.sqlite");
  const TelemetryData d = read_nsys_gpu_metrics(db);
  EXPECT_EQ(d.samples, 42u);  // 6 metrics x 7 samples
  ASSERT_EQ(d.series.size(), 2u);
  for (const Series& s : d.series) {
    EXPECT_EQ(s.gpu.index, 0);
    EXPECT_EQ(s.clock, ClockDomain::kRealtimeUtc);
    ASSERT_EQ(s.size(), 7u);
    EXPECT_EQ(s.t_ns.front(), kSessionStart + 1000);
    EXPECT_EQ(s.t_ns.back(), kSessionStart + 4000);
    if (s.metric == Metric::kSmClockMhz) {
      EXPECT_EQ(s.source, "GPC Clock Frequency [MHz]");
      EXPECT_DOUBLE_EQ(s.value.front(), 1755.0);
    } else {
      EXPECT_EQ(s.metric, Metric::kUtilGpuPct);
      EXPECT_DOUBLE_EQ(s.value.front(), 50.0);
      EXPECT_DOUBLE_EQ(s.value.back(), 56.0);
    }
  }
  EXPECT_EQ(d.diagnostics.count("nsys_unread"), 4u);
}

// An export of one process is read as the file itself, its rank from the file name; a directory of
// two-process exports numbers their ranks over the exports in path order (a: 0, 1; b: 2, 3).
TEST(NsysReader, RanksFromFileNameAndAcrossExports) {
  const std::string one = make_export(
      "rank5.sqlite",
      "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = 3355443200; DELETE FROM "
      "CUPTI_ACTIVITY_KIND_MEMCPY WHERE globalPid = 3355443200; DELETE FROM "
      "CUPTI_ACTIVITY_KIND_MEMSET WHERE globalPid = 3355443200;");
  const chopper::Run single = load_run({one});
  ASSERT_EQ(single.ranks.size(), 1u);
  ASSERT_TRUE(single.ranks[0].ok) << single.ranks[0].error;
  EXPECT_EQ(single.ranks[0].file, one);
  EXPECT_EQ(single.ranks[0].rank, 5);
  EXPECT_EQ(single.ranks[0].trace.meta.rank_source, "file name");
  EXPECT_EQ(single.ranks[0].trace.runtime.size(), 8u) << "process 100's calls only";

  const fs::path dir = test_dir() / "two_exports";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(make_export("copy.sqlite"), dir / "a.sqlite");
  fs::copy_file(make_export("copy.sqlite"), dir / "b.sqlite");
  const chopper::Run run = load_run({dir.string()});
  ASSERT_EQ(run.ranks.size(), 4u);
  const std::string want[] = {
      "a.sqlite#process=100,device=0,rank=0", "a.sqlite#process=200,device=1,rank=1",
      "b.sqlite#process=100,device=0,rank=2", "b.sqlite#process=200,device=1,rank=3"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.ranks[i].rank, static_cast<int64_t>(i));
    EXPECT_EQ(run.ranks[i].file, (dir / want[i]).string());
  }
}

// GPU metrics in an analysis of the export (as `chopper report` and `analyze` load a run's
// hardware): found among the run's traces, given to the rank of the same process on their GPU
// (GPU 0: rank 0, process 100; rank 1 on GPU 1 gets none) at offset 0 ("trace clock"), and used
// as telemetry is. The GPC clock is made linear here, 1400 MHz at 1000 ns rising 100 MHz per
// 500 ns sample (0.2 MHz/ns), so a kernel's mean clock is the clock at its midpoint: rank 0's
// kernels [1200, 1500] and [1520, 1800] ns: 1400 + 0.2 * 350 = 1470 and 1400 + 0.2 * 660 = 1532.
TEST(NsysReader, GpuMetricsOnTheTraceClockInAnalysis) {
  const fs::path dir = test_dir() / "metrics_run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "run.sqlite").string();
  fs::copy_file(make_export("metrics_src.sqlite",
                            "UPDATE GPU_METRICS SET value = 1400 + (timestamp - 1000) / 5 WHERE "
                            "metricId = 0;"),
                db);
  EXPECT_TRUE(nsys_has_gpu_metrics(db));
  EXPECT_TRUE(has_hardware_files({dir.string()}, {}, {}));

  chopper::Run run = load_run({dir.string()});
  validate_run(run);
  label_run(Taxonomy::builtin(), run, 1);
  ASSERT_EQ(run.ranks.size(), 2u);
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 1, telemetry_window(run));
  ASSERT_EQ(hf.telemetry.size(), 1u);
  EXPECT_EQ(hf.telemetry[0].format, "nsys-gpu-metrics");
  EXPECT_EQ(hf.telemetry[0].recorder.pids, (std::vector<int64_t>{100, 200}));
  const HardwareRun hw = align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
  ASSERT_EQ(hw.telemetry.size(), 1u);
  const TelemetryAlignment& a = hw.telemetry[0];
  EXPECT_EQ(a.method, "trace clock (nsys session)");
  EXPECT_EQ(a.offset_ns, 0);
  EXPECT_EQ(a.uncertainty_ns, 0);
  EXPECT_EQ(a.period_ns, 500);
  EXPECT_EQ(a.ranks, (std::vector<int64_t>{0}));
  EXPECT_EQ(a.samples, 14u);  // the clock's and GR Active's 7 samples
  ASSERT_EQ(hw.ranks.size(), 2u);
  EXPECT_TRUE(hw.ranks[0].has(Metric::kSmClockMhz));
  EXPECT_TRUE(hw.ranks[0].has(Metric::kUtilGpuPct));
  EXPECT_FALSE(hw.ranks[1].has(Metric::kSmClockMhz));

  AnalysisOptions o;
  o.threads = 1;
  const RunAnalysis ra = analyze_run(run, o, &hw);
  ASSERT_EQ(ra.ranks.size(), 2u);
  const GpuActivities& g = run.ranks[0].trace.gpu;
  std::map<Ns, double> clock_at;  // kernel start (ns into the session) -> its mean clock
  for (const KernelHw& k : ra.ranks[0].kernel_hw)
    if (g.kind[static_cast<size_t>(k.row)] == GpuKind::kKernel)
      clock_at[g.start_ns[static_cast<size_t>(k.row)] - kSessionStart] = k.clock_mhz;
  ASSERT_EQ(clock_at.size(), 6u);
  EXPECT_DOUBLE_EQ(clock_at[1200], 1470.0);
  EXPECT_DOUBLE_EQ(clock_at[1520], 1532.0);
  EXPECT_DOUBLE_EQ(clock_at[3200], 1400.0 + 0.2 * 2350);
  EXPECT_TRUE(ra.ranks[1].kernel_hw.empty());  // no hardware data for GPU 1
  fs::remove_all(dir);
}

// Two exports of the same processes (pids 100 and 200 in both, as on two nodes): a process id
// cannot tell which export's metrics are whose, so each export is placed by node as other files
// are (a.sqlite: node 0 = ranks 0 and 1; b.sqlite: node 1 = ranks 2 and 3, two GPUs per node),
// and its GPU 0 metrics go to the node's rank on device 0: rank 0 and rank 2. Said in the method.
TEST(NsysReader, GpuMetricsOfTwoExportsOfTheSamePids) {
  const fs::path dir = test_dir() / "metrics_two";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(make_export("m2.sqlite"), dir / "a.sqlite");
  fs::copy_file(make_export("m2.sqlite"), dir / "b.sqlite");
  chopper::Run run = load_run({dir.string()});
  validate_run(run);
  ASSERT_EQ(run.ranks.size(), 4u);
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 1, telemetry_window(run));
  ASSERT_EQ(hf.telemetry.size(), 2u);
  const HardwareRun hw = align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
  ASSERT_EQ(hw.telemetry.size(), 2u);
  for (size_t f = 0; f < 2; ++f) {
    SCOPED_TRACE(f);
    const TelemetryAlignment& a = hw.telemetry[f];
    EXPECT_EQ(a.node, static_cast<int64_t>(f));
    EXPECT_EQ(a.ranks, (std::vector<int64_t>{static_cast<int64_t>(2 * f)}));
    EXPECT_EQ(a.offset_ns, 0);
    EXPECT_EQ(a.method.rfind("trace clock (nsys session) (rank(s) 0, 1, 2, 3: a process id also "
                             "in another export's processes",
                             0),
              0u)
        << a.method;
  }
  EXPECT_TRUE(hw.ranks[0].has(Metric::kSmClockMhz));
  EXPECT_FALSE(hw.ranks[1].has(Metric::kSmClockMhz));
  EXPECT_TRUE(hw.ranks[2].has(Metric::kSmClockMhz));
  EXPECT_FALSE(hw.ranks[3].has(Metric::kSmClockMhz));
  fs::remove_all(dir);
}
