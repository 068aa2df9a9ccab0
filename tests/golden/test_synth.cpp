// Golden tests: synthetic runs from chopper synth, read back by chopper's own reader, must agree
// with the truth.json the generator wrote, kernel by kernel, to the nanosecond.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "chopper/base/error.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/synth/synth.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;
namespace fs = std::filesystem;

namespace {

bool is_comm_class(const std::string& c) {
  return c == "all_gather" || c == "reduce_scatter" || c == "all_reduce";
}

// Loads the run into `run` and checks it against truth.json.
void check_run(const fs::path& dir, const SynthConfig& c, chopper::Run& run) {
  run = load_run({dir.string()});
  EXPECT_EQ(run.ranks.size(), static_cast<size_t>(c.ranks));
  EXPECT_EQ(run.skipped.size(), 1u) << "truth.json is listed as not a trace";
  const std::vector<TruthRank> truth = read_truth(dir);
  EXPECT_EQ(truth.size(), static_cast<size_t>(c.ranks));
  for (size_t r = 0; r < run.ranks.size() && r < truth.size(); ++r) {
    const RankTrace& t = run.ranks[r].trace;
    const TruthRank& tr = truth[r];
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_TRUE(run.ranks[r].ok) << run.ranks[r].error;
    EXPECT_EQ(t.meta.rank, static_cast<int64_t>(r));
    EXPECT_EQ(t.meta.world_size, c.ranks);
    // Every generated trace links completely and has nothing to complain about.
    EXPECT_DOUBLE_EQ(t.link_rate(), 1.0);
    EXPECT_TRUE(t.diagnostics.empty()) << t.diagnostics.entries().front().kind;
    // Every GPU activity is in truth, with the same start and duration.
    std::map<int64_t, size_t> by_corr;
    for (size_t i = 0; i < t.gpu.size(); ++i) by_corr[t.gpu.correlation[i]] = i;
    EXPECT_EQ(t.gpu.size(), tr.kernels.size());
    int64_t dvfs_recomputed = 0, dvfs_recorded = 0;
    const DeviceSpec* dev = find_device(c.device);
    for (const TruthKernel& k : tr.kernels) {
      auto it = by_corr.find(k.correlation);
      ASSERT_NE(it, by_corr.end()) << "correlation " << k.correlation;
      const size_t i = it->second;
      EXPECT_EQ(t.gpu.start_ns[i], k.start_ns);
      EXPECT_EQ(t.gpu.dur_ns[i], k.dur_ns);
      // Communication kernels are classified as such, with the true collective type.
      EXPECT_EQ(t.gpu.cls[i] == GpuClass::kCommunication, is_comm_class(k.op_class)) << k.op_class;
      if (is_comm_class(k.op_class)) {
        EXPECT_EQ(coll_type_name(t.collectives[t.gpu.collective[i]].type), k.op_class);
        continue;
      }
      // The effects add up to the duration.
      EXPECT_EQ(
          k.nominal_ns + k.mfu_ns + k.straggler_ns + k.dvfs_ns + k.interference_ns + k.noise_ns,
          k.dur_ns);
      // The clock's stretch recomputed from the kernel's work and the recorded clock: duration at
      // the clock it ran minus duration at the device's max clock, by the roofline the generator
      // documents. It is DVFS plus the straggler's cap; the cap is charged only for what it takes
      // below the clock DVFS alone would run, so never where the clock ran below the cap.
      const bool matrix = k.op_class == "gemm" || k.op_class == "attention";
      const double peak = (matrix ? dev->matrix_tflops(c.dtype) : dev->vector_tflops_fp32) * 1e12;
      const double eff = matrix ? c.matrix_efficiency * (1 - c.mfu_loss) : 0.5;
      const double t_mem = k.bytes / (dev->mem_bw_gbs * 1e9 * c.memory_efficiency) * 1e9;
      const int cap = tr.straggler
                          ? static_cast<int>(dev->max_clock_mhz * c.straggler_clock) / 15 * 15
                          : dev->max_clock_mhz;
      const int64_t floor_ns = (k.op_class == "memcpy" || k.op_class == "memset") ? 1500 : 2500;
      auto dur_at = [&](int mhz) {
        const double tc = k.flops / (peak * eff) * 1e9 * dev->max_clock_mhz / mhz;
        return std::max<int64_t>(floor_ns, std::llround(std::max(tc, t_mem)));
      };
      if (k.op_class != "memcpy" && k.op_class != "memset") {
        dvfs_recomputed += dur_at(static_cast<int>(k.clock_mhz)) - dur_at(dev->max_clock_mhz);
        dvfs_recorded += k.dvfs_ns + k.straggler_ns;
        if (k.clock_mhz < cap) {
          EXPECT_EQ(k.straggler_ns, 0) << "clock " << k.clock_mhz << " under the cap " << cap;
        }
        if (!tr.straggler) {
          EXPECT_EQ(k.straggler_ns, 0);
        }
      }
    }
    EXPECT_EQ(dvfs_recomputed, dvfs_recorded);
    EXPECT_EQ(dvfs_recorded,
              tr.effect_totals.at("dvfs_ns") + tr.effect_totals.at("straggler_clock_ns"));
    if (c.dvfs > 0 && !tr.straggler) {
      EXPECT_GT(dvfs_recorded, 0);
    }
    // Iterations: ProfilerStep ranges in the trace are truth's.
    ASSERT_EQ(t.steps.size(), tr.iterations.size());
    for (size_t s = 0; s < t.steps.size(); ++s) {
      EXPECT_EQ(t.steps[s].number, std::get<0>(tr.iterations[s]));
      EXPECT_EQ(t.steps[s].start_ns, std::get<1>(tr.iterations[s]));
      EXPECT_EQ(t.steps[s].end_ns, std::get<2>(tr.iterations[s]));
    }
  }
}

}  // namespace

TEST(Synth, FsdpNvidiaAgreesWithTruth) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  ASSERT_TRUE(apply_scenario("demo", c));
  c.node_clock_offset_ns = 40000;
  const fs::path dir = temp_dir("fsdp_h100");
  synthesize(c, dir.string());
  chopper::Run run;
  check_run(dir, c, run);
  // Collectives end together on every rank of the group: the same true time, so in the traces the
  // ends differ exactly by the node clock offsets (node 1 = +40 µs).
  const std::vector<TruthRank> truth = read_truth(dir);
  std::map<int64_t, std::vector<int64_t>> ends;  // correlation -> end per rank (comm only)
  for (const TruthRank& tr : truth)
    for (const TruthKernel& k : tr.kernels)
      if (is_comm_class(k.op_class))
        ends[k.correlation].push_back(k.start_ns + k.dur_ns - tr.offset_ns);
  ASSERT_FALSE(ends.empty());
  for (const auto& [corr, v] : ends) {
    ASSERT_EQ(v.size(), 4u);
    for (int64_t e : v) EXPECT_EQ(e, v[0]) << "collective " << corr;
  }
  EXPECT_EQ(truth[2].offset_ns, 40000);
  EXPECT_EQ(truth[0].offset_ns, 0);
  // The straggler's clock cap costs time only on the straggler.
  for (const TruthRank& tr : truth)
    EXPECT_EQ(tr.effect_totals.at("straggler_clock_ns") > 0, tr.straggler) << tr.rank;
  fs::remove_all(dir);
}

TEST(Synth, DdpAndAmdAgreeWithTruth) {
  for (const auto& [device, par] :
       {std::pair{"mi300x", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp},
        std::pair{"mi250", Parallelism::kDdp}}) {
    SCOPED_TRACE(device);
    SynthConfig c = small(device, par);
    c.dvfs = 0.2;
    c.noise = 0.03;
    const fs::path dir = temp_dir(device);
    synthesize(c, dir.string());
    chopper::Run run;
    check_run(dir, c, run);
    if (find_device(device)->vendor == Vendor::kAmd) {
      // ROCm: kernels carry no External id; RCCL's generic kernel gets its type from the host.
      const RankTrace& t = run.ranks[0].trace;
      EXPECT_TRUE(t.meta.rocm);
      for (size_t i = 0; i < t.gpu.size(); ++i)
        if (t.gpu.kind[i] == GpuKind::kKernel) {
          EXPECT_EQ(t.gpu.external_id[i], kNoId);
        }
      for (const Collective& col : t.collectives) EXPECT_EQ(t.strings.str(col.source), "host_args");
      EXPECT_TRUE(fs::exists(dir / "counters" / "rank0_counter_collection.csv"));
      EXPECT_TRUE(fs::exists(dir / "telemetry" / "node0.amd-smi.csv"));
    } else {
      EXPECT_TRUE(fs::exists(dir / "telemetry" / "node1.nvidia-smi.csv"));
    }
    fs::remove_all(dir);
  }
}

TEST(Synth, SameSeedSameBytes) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.noise = 0.05;
  const fs::path a = temp_dir("seed_a"), b = temp_dir("seed_b"), d = temp_dir("seed_d");
  synthesize(c, a.string());
  c.threads = 1;  // thread count must not matter
  synthesize(c, b.string());
  c.seed = 2;
  synthesize(c, d.string());
  for (const char* f :
       {"rank-0.json", "rank-3.json", "truth.json", "telemetry/node1.nvidia-smi.csv"}) {
    EXPECT_EQ(chopper::test::read_file((a / f).string()),
              chopper::test::read_file((b / f).string()))
        << f;
  }
  EXPECT_NE(chopper::test::read_file((a / "rank-0.json").string()),
            chopper::test::read_file((d / "rank-0.json").string()))
      << "another seed draws other noise";
  fs::remove_all(a);
  fs::remove_all(b);
  fs::remove_all(d);
}

// Turning an effect on costs time, and truth says where: exposed communication grows without
// prefetch; the data-loader stall appears once per iteration per rank.
TEST(Synth, EffectsAreRecordedWhereInjected) {
  auto totals = [](SynthConfig c, const std::string& name) {
    const fs::path dir = temp_dir(name);
    synthesize(c, dir.string());
    std::vector<TruthRank> t = read_truth(dir);
    fs::remove_all(dir);
    return t[0].effect_totals;
  };
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.gpus_per_node = 4;
  const auto base = totals(c, "base");
  EXPECT_EQ(base.at("dvfs_ns"), 0);
  EXPECT_EQ(base.at("mfu_loss_ns"), 0);
  EXPECT_EQ(base.at("host_stall_ns"), 0);
  SynthConfig np = c;
  np.prefetch = false;
  EXPECT_GT(totals(np, "noprefetch").at("exposed_comm_ns"), base.at("exposed_comm_ns"));
  SynthConfig st = c;
  st.data_loader_stall_ns = 2000000;
  EXPECT_EQ(totals(st, "stall").at("host_stall_ns"), 2 * 2000000) << "2 iterations x 2 ms";
  // Launch overhead shows where nothing long hides the host: one GPU, DDP (no FSDP copy-outs).
  SynthConfig one = c;
  one.ranks = 1;
  one.gpus_per_node = 1;
  one.parallel = Parallelism::kDdp;
  SynthConfig lb = one;
  ASSERT_TRUE(apply_scenario("launch-bound", lb));
  const auto lbt = totals(lb, "launch"), onet = totals(one, "one");
  EXPECT_GT(lbt.at("host_late_ns") + lbt.at("launch_overhead_ns"),
            10 * (onet.at("host_late_ns") + onet.at("launch_overhead_ns")));
  // The slow host is late between kernels (400 µs of Python per op before its launch call); the
  // launch latency itself (10 µs call + 3 µs to the kernel) stays small beside it.
  EXPECT_GT(lbt.at("host_late_ns"), 10 * lbt.at("launch_overhead_ns"));
}

TEST(Synth, RejectsBadConfigurations) {
  SynthConfig c;
  c.device = "tpu";
  EXPECT_THROW(synthesize(c, temp_dir("bad").string()), chopper::Error);
  c = SynthConfig{};
  c.preset = "llama9";
  EXPECT_THROW(synthesize(c, temp_dir("bad").string()), chopper::Error);
  c = SynthConfig{};
  c.dvfs = 1.5;
  EXPECT_THROW(synthesize(c, temp_dir("bad").string()), chopper::Error);
}

// Compute slowed by communication is charged against every collective a kernel runs beside on
// its GPU, issued before it or after it (the next all-gather starting while the kernel still
// runs): inside the union of the rank's collective intervals a kernel progresses at
// 1 / (1 + comm_interference), so it takes comm_interference / (1 + comm_interference) of that
// overlap longer. Recomputed from truth's own kernel rows (the collectives' intervals and each
// kernel's), kernel by kernel, to the rounding of its end (1 ns); and the kernels beside a
// collective the host issued after them are many.
TEST(Synth, InterferenceIsTheOverlapWithEveryCollective) {
  for (const auto& [device, par] :
       {std::pair{"h100", Parallelism::kFsdp}, std::pair{"a100", Parallelism::kDdp}}) {
    SCOPED_TRACE(device);
    SynthConfig c = small(device, par);
    c.ranks = 8;  // one node: NVLink collectives, short enough to start beside queued kernels
    c.gpus_per_node = 8;
    c.comm_interference = 0.3;
    c.noise = 0.05;  // noise changes the work; the slowdown applies to the noisy work
    const fs::path dir = temp_dir(std::string("interference_") + device);
    synthesize(c, dir.string());
    const std::vector<TruthRank> truth = read_truth(dir);
    fs::remove_all(dir);
    size_t overlapped = 0, beside_later = 0;
    for (const TruthRank& tr : truth) {
      std::vector<std::pair<int64_t, int64_t>> comm;  // in issue (= start) order
      for (const TruthKernel& k : tr.kernels)
        if (is_comm_class(k.op_class)) comm.emplace_back(k.start_ns, k.start_ns + k.dur_ns);
      ASSERT_FALSE(comm.empty());
      for (size_t i = 1; i < comm.size(); ++i)
        ASSERT_LE(comm[i - 1].second, comm[i].first) << "one collective at a time";
      size_t issued = 0;  // collectives issued before this kernel (correlation order = issue)
      std::vector<int64_t> comm_corr;
      for (const TruthKernel& k : tr.kernels)
        if (is_comm_class(k.op_class)) comm_corr.push_back(k.correlation);
      for (const TruthKernel& k : tr.kernels) {
        if (is_comm_class(k.op_class)) continue;
        while (issued < comm_corr.size() && comm_corr[issued] < k.correlation) ++issued;
        int64_t ovl = 0;
        bool later = false;
        for (size_t i = 0; i < comm.size(); ++i) {
          const int64_t o =
              std::min(comm[i].second, k.start_ns + k.dur_ns) - std::max(comm[i].first, k.start_ns);
          if (o > 0) ovl += o, later = later || i >= issued;
        }
        const double want =
            static_cast<double>(ovl) * c.comm_interference / (1 + c.comm_interference);
        EXPECT_NEAR(static_cast<double>(k.interference_ns), want, 1.0)
            << "rank " << tr.rank << " kernel " << k.correlation;
        overlapped += ovl > 0;
        beside_later += later;
      }
    }
    EXPECT_GT(overlapped, 0u);
    // FSDP: the next layer's all-gather starts beside the kernels queued before it. (DDP's
    // all-reduces wait for the compute that made their gradients: never beside earlier kernels.)
    if (par == Parallelism::kFsdp) {
      EXPECT_GT(beside_later, 0u);
    }
    std::printf("%s: %zu kernels beside a collective, %zu of them beside one issued after them\n",
                device, overlapped, beside_later);
  }
}
