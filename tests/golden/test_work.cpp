// Golden tests for the work of the GPU time (analysis/work.cpp; docs/metrics.md, "Top kernels,
// roofline and kernel durations"), on a synthetic AMD run with counters: the FLOPs of the
// roofline's shape classes add up to the FLOPs the generator gave the kernels (truth.json), the
// duration bins hold each truth kernel once in the bin of its duration, the top kernels are the
// kernel breakdown's run rows, the peaks are the device's (none for an unknown device), and the
// counters per operation add up to kernel_hw's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct WorkGolden {
  std::vector<TruthRank> truth;
  Run run;
  HardwareRun hw;
  RunAnalysis ra;
};

std::unique_ptr<WorkGolden> run_work() {
  const fs::path dir = temp_dir("work");
  SynthConfig c = small("mi300x", Parallelism::kDdp);
  synthesize(c, dir.string());
  auto g = std::make_unique<WorkGolden>();
  g->run = load_run({dir.string()});
  label_run(Taxonomy::builtin(), g->run, 2);
  g->truth = read_truth(dir);
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 2);
  EXPECT_TRUE(hf.errors.empty()) << (hf.errors.empty() ? "" : hf.errors.front());
  g->hw = align_hardware(g->run, std::move(hf.telemetry), std::move(hf.counters));
  AnalysisOptions o;
  o.threads = 2;
  o.top_n = 100000;  // every kernel name and operation
  g->ra = analyze_run(g->run, o, &g->hw);
  fs::remove_all(dir);
  return g;
}

WorkGolden& golden() {
  static const std::unique_ptr<WorkGolden> g = run_work();
  return *g;
}

}  // namespace

// Σ FLOPs over the shape classes = Σ of the generator's FLOPs of the kernels whose op has a cost
// formula (GEMM, attention, norm, elementwise; one kernel per op, so each kernel gets its op's
// whole cost), and the same for bytes (but attention's: the generator's attention bytes are its own
// model, docs/flops.md, which test_flops leaves out too); the kernels and time of the shape classes
// are those kernels' count and Σ duration.
TEST(WorkGolden, RooflineFlopsAndBytesAddUpToTruth) {
  const WorkGolden& g = golden();
  double want_flops = 0, want_bytes = 0, got_flops = 0, got_bytes = 0;
  uint64_t want_kernels = 0, got_kernels = 0;
  Ns want_ns = 0, got_ns = 0;
  for (const TruthRank& r : g.truth)
    for (const TruthKernel& k : r.kernels)
      if ((k.op_class == "gemm" || k.op_class == "attention" || k.op_class == "norm" ||
           k.op_class == "elementwise") &&
          k.flops + k.bytes > 0) {
        want_flops += k.flops, ++want_kernels, want_ns += k.dur_ns;
        if (k.op_class != "attention") want_bytes += k.bytes;
      }
  size_t classes = 0;
  for (const WorkRow& w : g.ra.work)
    if (w.level == "shape_class") {
      ++classes;
      got_flops += w.flops, got_kernels += w.count, got_ns += w.total_ns;
      if (w.group.rfind("attention", 0) != 0) got_bytes += w.bytes;
      EXPECT_EQ(w.known_ns, w.total_ns) << w.name;  // every kernel of a class has work
    }
  ASSERT_GT(classes, 4u);
  EXPECT_NEAR(got_flops, want_flops, 1e-9 * want_flops);
  EXPECT_NEAR(got_bytes, want_bytes, 1e-9 * want_bytes);
  EXPECT_EQ(got_kernels, want_kernels);
  EXPECT_EQ(got_ns, want_ns);
}

// The MI300X's datasheet peaks: bf16 matrix for GEMM and attention classes, fp32 vector for norm
// and elementwise ones; 5.3 TB/s.
TEST(WorkGolden, RooflinePeaksAreTheDevicesAndNoneWhenUnknown) {
  WorkGolden& g = golden();
  const DeviceSpec* d = find_device("mi300x");
  ASSERT_NE(d, nullptr);
  for (const WorkRow& w : g.ra.work) {
    if (w.level != "shape_class") continue;
    const bool matrix = w.group == "gemm" || w.group.rfind("attention", 0) == 0;
    EXPECT_EQ(w.peak_tflops, matrix ? d->matrix_tflops(DType::kBf16) : d->vector_tflops_fp32)
        << w.name;
    EXPECT_EQ(w.peak_tbs, d->mem_bw_gbs * 1e-3);
  }
  // The same run with no device named anywhere: the points stay, the peaks are unknown.
  for (RankSlot& s : g.run.ranks) s.trace.meta.devices.clear();
  AnalysisOptions o;
  o.threads = 2;
  const RunAnalysis ra = analyze_run(g.run, o);
  EXPECT_EQ(ra.device, nullptr);
  size_t classes = 0;
  for (const WorkRow& w : ra.work)
    if (w.level == "shape_class") {
      ++classes;
      EXPECT_TRUE(std::isnan(w.peak_tflops) && std::isnan(w.peak_tbs)) << w.name;
      EXPECT_GT(w.flops + w.bytes, 0) << w.name;
    }
  EXPECT_GT(classes, 4u);
}

// Each truth kernel is counted once, in bin ⌊log10(dur) × 10⌋ of its rank (summed over classes).
TEST(WorkGolden, DurationBinsHoldEveryKernelInItsBin) {
  const WorkGolden& g = golden();
  std::map<std::pair<int64_t, int32_t>, uint64_t> want, got;
  uint64_t n = 0;
  for (const TruthRank& r : g.truth)
    for (const TruthKernel& k : r.kernels) {
      const int32_t b =
          k.dur_ns < 1 ? 0
                       : static_cast<int32_t>(std::floor(std::log10(static_cast<double>(k.dur_ns)) *
                                                         kDurationBinsPerDecade));
      ++want[{r.rank, b}];
      ++n;
    }
  for (const DurationBin& b : g.ra.durations) got[{b.rank, b.bin}] += b.kernels;
  ASSERT_GT(n, 500u);
  EXPECT_EQ(got, want);
}

// top_kernels' kernel rows are kernel_breakdown's run rows (rank -1), computed apart: the same
// count, total and share per name; the operations' times add up to the labelled GPU time.
TEST(WorkGolden, TopKernelsAreTheBreakdownsRunRows) {
  const WorkGolden& g = golden();
  std::map<std::string, const NameStat*> run_rows;
  for (const NameStat& s : g.ra.kernels)
    if (s.rank == -1 && s.name != "others") run_rows[s.name] = &s;
  size_t n = 0;
  for (const WorkRow& w : g.ra.work) {
    if (w.level != "kernel") continue;
    auto it = run_rows.find(w.name);
    ASSERT_NE(it, run_rows.end()) << w.name;
    EXPECT_EQ(w.count, it->second->count) << w.name;
    EXPECT_EQ(w.total_ns, it->second->total_ns) << w.name;
    EXPECT_DOUBLE_EQ(w.share, it->second->share) << w.name;
    ++n;
  }
  EXPECT_EQ(n, run_rows.size());
}

// counter_operations: Σ over operations of the counted kernels and matrix FLOPs = Σ over
// kernel_hw's rows with the counter.
TEST(WorkGolden, CountersPerOperationAddUpToKernelHw) {
  const WorkGolden& g = golden();
  uint64_t want_kernels = 0, got_kernels = 0;
  double want_mf = 0, got_mf = 0;
  for (const RankAnalysis& r : g.ra.ranks)
    for (const KernelHw& k : r.kernel_hw) {
      if (!std::isnan(k.matrix_flops)) want_mf += k.matrix_flops;
      if (!std::isnan(k.active_cycles) || !std::isnan(k.matrix_flops) ||
          !std::isnan(k.vector_flops) || !std::isnan(k.matrix_busy_cycles))
        ++want_kernels;
    }
  for (const CounterOpRow& x : g.ra.counter_ops) got_kernels += x.kernels, got_mf += x.matrix_flops;
  ASSERT_GT(want_kernels, 100u);
  ASSERT_GT(want_mf, 0);
  EXPECT_EQ(got_kernels, want_kernels);
  EXPECT_NEAR(got_mf, want_mf, 1e-9 * want_mf);
}
