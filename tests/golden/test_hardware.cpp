// Golden tests for the hardware side, the fidelity matrix: on synthetic 8-rank runs (H100 FSDP,
// MI300X FSDP, A100 DDP; each effect alone, healthy, dvfs, mfu, interference, straggler, stall,
// noise, and all together, the demo; one test per pair) chopper reads the telemetry and counter
// files the generator writes as nvidia-smi, amd-smi, rocprofv3 and the CUPTI range profiler write
// them, puts them on the trace clock, and must recover, per rank and iteration, within 2 points of
// the iteration time:
//   - frequency (DVFS, and a straggler's clock cap): truth dvfs_ns + straggler_clock_ns;
//   - matrix-unit utilization loss of GEMM and attention kernels: truth (duration at max clock
//     with no co-running communication) − theoretical, i.e. nominal + mfu_loss − theoretical;
//   - compute slowed by communication: truth comm_interference_ns;
//   - exposed communication: truth exposed_comm_ns.
// Also: the waterfall's parts add up to the observed time exactly; energy per iteration within 1%
// of the generator's power model integrated over the iteration; the telemetry offset within one
// sample period of truth; every counter dispatch joined to its kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/hardware_report.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct HwGolden {
  std::vector<TruthRank> truth;
  HardwareRun hw;
  RunAnalysis ra;
  Ns iter_ns(int64_t rank, int64_t it) const {
    for (const auto& [n, s, e] : truth[static_cast<size_t>(rank)].iterations)
      if (n == it) return e - s;
    return 0;
  }
};

SynthConfig eight(const std::string& device, Parallelism par) {
  SynthConfig c = small(device, par);
  c.ranks = 8;
  c.gpus_per_node = 8;
  // 2 ms samples (an NVML sampler's rate; nvidia-smi -lms 2): a test iteration lasts 40-80 ms, so
  // at 10 ms the partial samples at its ends alone would be a few % of its energy.
  c.telemetry_interval_ms = 2;
  return c;
}

// The run, analysed with the hardware files found in its directory. Held by pointer: the analysis
// refers to the hardware data it was given.
std::unique_ptr<HwGolden> run_hw(const std::string& name, const SynthConfig& c) {
  const fs::path dir = temp_dir("hw_" + name);
  synthesize(c, dir.string());
  Run run = load_run({dir.string()});
  label_run(Taxonomy::builtin(), run, 2);
  auto g = std::make_unique<HwGolden>();
  g->truth = read_truth(dir);
  HardwareFiles hf = load_hardware({dir.string()}, {}, {}, 2);
  EXPECT_TRUE(hf.errors.empty()) << (hf.errors.empty() ? "" : hf.errors.front());
  g->hw = align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
  AnalysisOptions o;
  o.threads = 2;
  g->ra = analyze_run(run, o, &g->hw);
  // The analysis keeps views into the run's strings only through its own names; the run can go.
  fs::remove_all(dir);
  return g;
}

bool matrix(const std::string& cls) {
  return cls == "gemm" || cls == "attention";
}
bool comm(const std::string& cls) {
  return cls == "all_gather" || cls == "reduce_scatter" || cls == "all_reduce";
}

double worst_freq = 0, worst_util = 0, worst_ovl = 0, worst_energy = 0, worst_exposed = 0;
Ns worst_align = 0;

void check(const HwGolden& g, bool same_run) {
  // Alignment: within one sample period of the offset the generator used.
  ASSERT_FALSE(g.hw.telemetry.empty());
  std::set<int64_t> placed;
  for (const TelemetryAlignment& a : g.hw.telemetry) {
    SCOPED_TRACE(a.file);
    ASSERT_FALSE(a.ranks.empty());
    const Ns want = g.truth[static_cast<size_t>(a.ranks.front())].telemetry_offset_ns;
    EXPECT_NE(a.method.rfind("none", 0), 0u) << a.method;
    EXPECT_LE(std::abs(a.offset_ns - want), a.period_ns) << a.method;
    placed.insert(a.ranks.begin(), a.ranks.end());
    worst_align = std::max(worst_align, std::abs(a.offset_ns - want));
  }
  EXPECT_EQ(placed.size(), g.truth.size());
  // Counters: every dispatch joined to its kernel — by correlation id when rocprofv3 counted in
  // the traced run (AMD), by kernel name and occurrence order for a CUPTI range-profiler pass
  // (NVIDIA: a separate run). Every matrix kernel then has its issued work measured, and as the
  // generator issues exactly the FLOPs of the shapes, the instruction part is 0.
  ASSERT_EQ(g.hw.counters.size(), g.truth.size());
  for (const CounterJoin& j : g.hw.counters) {
    EXPECT_GT(j.dispatches, 0u);
    EXPECT_EQ(j.matched, j.dispatches) << j.file;
    EXPECT_EQ(j.ambiguous, 0u) << j.file;
    EXPECT_EQ(j.method, same_run ? "correlation id" : "kernel name + order");
    EXPECT_EQ(j.same_run, same_run);
    EXPECT_EQ(j.name_match_rate, 1.0);  // the generator names a dispatch as its kernel
  }
  for (const WaterfallRow& w : g.ra.waterfall) {
    if (w.key.operation.empty() ||
        (w.op_class != OpClass::kGemm && w.op_class != OpClass::kAttention))
      continue;
    EXPECT_EQ(w.unknown_instruction, 0u) << w.key.operation;
    EXPECT_NEAR(w.instruction_ns, 0.0, 1e-6 * static_cast<double>(w.observed_ns) + 1e-3);
  }
  // The parts add up to the observed time, for every row.
  for (const WaterfallRow& w : g.ra.waterfall) {
    const double sum = w.theoretical_ns + w.instruction_ns + w.utilization_ns + w.overlap_ns +
                       w.frequency_ns + w.residual_ns;
    EXPECT_NEAR(sum, static_cast<double>(w.observed_ns),
                1e-6 * static_cast<double>(w.observed_ns) + 1e-3);
  }
  for (const RankAnalysis& r : g.ra.ranks) {
    const TruthRank& tr = g.truth[static_cast<size_t>(r.rank)];
    std::map<int64_t, double> t_freq, t_util, t_ovl;
    for (const TruthKernel& k : tr.kernels) {
      if (comm(k.op_class) || k.op_class == "memcpy" || k.op_class == "memset") continue;
      t_freq[k.iteration] += static_cast<double>(k.dvfs_ns + k.straggler_ns);
      t_ovl[k.iteration] += static_cast<double>(k.interference_ns);
      if (matrix(k.op_class))
        t_util[k.iteration] += static_cast<double>(k.nominal_ns + k.mfu_ns - k.theoretical_ns);
    }
    std::map<int64_t, double> c_freq, c_util, c_ovl;
    for (const WaterfallRow& w : g.ra.waterfall) {
      if (w.rank != r.rank || w.key.operation.empty()) continue;
      c_freq[w.key.iteration] += w.frequency_ns;
      c_ovl[w.key.iteration] += w.overlap_ns;
      if (w.op_class == OpClass::kGemm || w.op_class == OpClass::kAttention)
        c_util[w.key.iteration] += w.utilization_ns + w.instruction_ns;
    }
    // Exposed communication (the compute stream idle while a collective ran, or waiting for one)
    // too: every effect moves it.
    std::map<int64_t, double> t_exposed;
    for (const TruthKernel& k : tr.kernels)
      t_exposed[k.iteration] += static_cast<double>(k.exposed_comm_ns);
    for (const BreakdownRow& b : r.breakdown) {
      if (b.iteration == kNoId) continue;
      const double it = static_cast<double>(g.iter_ns(r.rank, b.iteration));
      EXPECT_NEAR(static_cast<double>(b.exposed_comm_ns), t_exposed[b.iteration], 0.02 * it)
          << "rank " << r.rank << " iteration " << b.iteration;
      worst_exposed =
          std::max(worst_exposed,
                   std::abs(static_cast<double>(b.exposed_comm_ns) - t_exposed[b.iteration]) / it);
    }
    std::map<int64_t, double> c_energy;
    for (const PowerRow& p : r.power)
      if (p.phase.empty()) c_energy[p.iteration] += p.energy_j;
    ASSERT_EQ(c_energy.size(), tr.iterations.size());
    for (const auto& [n, s, e] : tr.iterations) {
      SCOPED_TRACE("rank " + std::to_string(r.rank) + " iteration " + std::to_string(n));
      const double it = static_cast<double>(e - s);
      EXPECT_NEAR(c_freq[n], t_freq[n], 0.02 * it);
      EXPECT_NEAR(c_util[n], t_util[n], 0.02 * it);
      EXPECT_NEAR(c_ovl[n], t_ovl[n], 0.02 * it);
      worst_freq = std::max(worst_freq, std::abs(c_freq[n] - t_freq[n]) / it);
      worst_util = std::max(worst_util, std::abs(c_util[n] - t_util[n]) / it);
      worst_ovl = std::max(worst_ovl, std::abs(c_ovl[n] - t_ovl[n]) / it);
      ASSERT_TRUE(tr.energy_j.count(n));
      const double want = tr.energy_j.at(n);
      EXPECT_NEAR(c_energy[n], want, 0.01 * want);
      worst_energy = std::max(worst_energy, std::abs(c_energy[n] - want) / want);
    }
  }
}

void report(const char* name) {
  std::printf(
      "%s: largest errors (points of the iteration time): frequency %.3f, utilization %.3f, "
      "overlap %.3f, exposed comm %.3f; energy %.3f%%; telemetry offset %.3f ms\n",
      name, 100 * worst_freq, 100 * worst_util, 100 * worst_ovl, 100 * worst_exposed,
      100 * worst_energy, static_cast<double>(worst_align) / 1e6);
  worst_freq = worst_util = worst_ovl = worst_energy = worst_exposed = 0;
  worst_align = 0;
}

// The fidelity matrix: every (platform x effect) pair is a test of its own, each effect alone and
// all together (the demo). Each checks every hardware estimate against truth (check()) and prints
// its largest errors in points of the iteration time.
struct Effect {
  const char* name;
  void (*apply)(SynthConfig&);
};
const Effect kEffects[] = {
    {"healthy", [](SynthConfig&) {}},
    {"dvfs", [](SynthConfig& c) { c.dvfs = 0.25; }},
    {"mfu", [](SynthConfig& c) { c.mfu_loss = 0.2; }},
    {"interference", [](SynthConfig& c) { c.comm_interference = 0.3; }},
    // The demo's straggler alone: rank 7 capped at 80% of the max clock.
    {"straggler",
     [](SynthConfig& c) {
       c.straggler_rank = c.ranks - 1;
       c.straggler_clock = 0.8;
     }},
    {"stall", [](SynthConfig& c) { c.data_loader_stall_ns = 3000000; }},
    {"noise", [](SynthConfig& c) { c.noise = 0.05; }},
    {"all", [](SynthConfig& c) { apply_scenario("demo", c); }},
};

struct Platform {
  const char* name;
  const char* device;
  Parallelism par;
  bool counters_same_run;  // AMD: rocprofv3 in the traced run; NVIDIA: a CUPTI range pass
};
const Platform kPlatforms[] = {
    {"H100Fsdp", "h100", Parallelism::kFsdp, false},
    {"Mi300xFsdp", "mi300x", Parallelism::kFsdp, true},
    {"A100Ddp", "a100", Parallelism::kDdp, false},
};

class HardwareMatrix : public ::testing::TestWithParam<std::tuple<Platform, Effect>> {};

}  // namespace

// NVIDIA runs carry a CUPTI range-profiler pass per rank (a replay at the maximum clock: its
// cycle counts must not be taken for the traced run's clock), AMD runs rocprofv3 counters of the
// traced run itself.
TEST_P(HardwareMatrix, WithinTwoPointsOfTruth) {
  const auto& [p, e] = GetParam();
  SynthConfig c = eight(p.device, p.par);
  e.apply(c);
  auto g = run_hw(std::string(p.device) + "_" + e.name, c);
  check(*g, p.counters_same_run);
  // The effect shows under its own name, and only there.
  Ns freq = 0, ovl = 0;
  uint64_t kernels = 0;
  for (const WaterfallRow& w : g->ra.waterfall)
    if (w.key.operation.empty() && w.key.phase == Phase::kNone) {
      freq += std::llround(w.frequency_ns), ovl += std::llround(w.overlap_ns);
      kernels += w.kernels;
    }
  const std::string name = e.name;
  if (name == "dvfs" || name == "straggler") {
    EXPECT_GT(freq, 0);
  }
  if (name == "interference") {
    EXPECT_GT(ovl, 0);
  }
  if (name == "healthy" || name == "mfu" || name == "stall") {
    // No loss but the counters' rounding: cycle counts are whole, so a kernel's active time is
    // off by under a cycle (under 1 ns either way); a row whose signed sum is negative is bounded
    // to 0 (docs/metrics.md, Waterfall bounds), so at most 1 ns per kernel remains.
    EXPECT_GE(freq, 0);
    EXPECT_LE(freq, static_cast<Ns>(kernels));
  }
  report((std::string(p.name) + " " + e.name).c_str());
}

INSTANTIATE_TEST_SUITE_P(Fidelity, HardwareMatrix,
                         ::testing::Combine(::testing::ValuesIn(kPlatforms),
                                            ::testing::ValuesIn(kEffects)),
                         [](const ::testing::TestParamInfo<HardwareMatrix::ParamType>& i) {
                           return std::string(std::get<0>(i.param).name) + "_" +
                                  std::get<1>(i.param).name;
                         });

// The telemetry offset is found, not assumed: nvidia-smi stamped in an unusual zone (UTC+5:30)
// 37 ms after each reading at 10 ms sampling, on two nodes whose trace clocks differ by 3.1 ms.
// Each file must be placed on its own node's trace clock within one sample period of the offset
// the generator used (truth telemetry_offset_ns), and the DVFS it carries recovered as before.
TEST(HardwareGolden, TelemetryOffsetFoundPerNode) {
  SynthConfig c = eight("h100", Parallelism::kFsdp);
  c.ranks = 16;
  c.telemetry_interval_ms = 10;
  c.telemetry_utc_offset_s = 19800;
  c.telemetry_lag_ms = 37;
  c.node_clock_offset_ns = 3100000;
  c.dvfs = 0.2;
  auto g = run_hw("offset", c);
  ASSERT_EQ(g->hw.telemetry.size(), 2u);
  for (const TelemetryAlignment& a : g->hw.telemetry) {
    SCOPED_TRACE(a.file);
    ASSERT_GE(a.node, 0);
    ASSERT_EQ(a.ranks.size(), 8u);
    const TruthRank& tr = g->truth[static_cast<size_t>(a.ranks.front())];
    EXPECT_EQ(a.ranks.front() / 8, a.node);
    EXPECT_EQ(a.period_ns, 10000000);
    EXPECT_LE(std::abs(a.offset_ns - tr.telemetry_offset_ns), a.period_ns)
        << a.method << ": " << a.offset_ns << " vs " << tr.telemetry_offset_ns;
    EXPECT_GT(a.correlation, 0.5);
    std::printf("%s: offset %+.3f ms, truth %+.3f ms, ± %.3f ms (%s)\n", a.file.c_str(),
                static_cast<double>(a.offset_ns) / 1e6,
                static_cast<double>(tr.telemetry_offset_ns) / 1e6,
                static_cast<double>(a.uncertainty_ns) / 1e6, a.method.c_str());
  }
  // Each node's telemetry is stamped from that node's clock, so the offsets agree although the
  // trace clocks differ.
  EXPECT_NE(g->truth[0].offset_ns, g->truth[8].offset_ns);
  check(*g, false);
}

// CharLLM-PPT's NVML sampler instead of nvidia-smi: one t,value file per metric and rank (Zeus
// names, epoch seconds stamped 4 ms late), with the GPU's energy counter and cumulative NVLink
// counters. The files of a node are aligned as one (the energy and link files have no signal of
// their own), each on its rank's GPU; the DVFS, utilization and overlap losses and the energy are
// recovered as from nvidia-smi, and the counters' growth over each iteration matches truth within
// what linear interpolation of a cumulative counter can miss at the window's two ends: the most a
// sample interval can hold at each end (2 x T x TDP for energy, 2 x T x the link's bandwidth for
// bytes).
TEST(HardwareGolden, H100NvmlSamplerWithEnergyAndLinkCounters) {
  SynthConfig c = eight("h100", Parallelism::kFsdp);
  apply_scenario("demo", c);
  c.telemetry_format = "nvml";
  auto g = run_hw("nvml", c);
  ASSERT_EQ(g->hw.telemetry.size(), 7u * 8u);
  for (const TelemetryAlignment& a : g->hw.telemetry) {
    EXPECT_EQ(a.format, "zeus");
    ASSERT_EQ(a.ranks.size(), 1u) << a.file;  // each file is its own rank's GPU
  }
  check(*g, false);
  const DeviceSpec* dev = find_device("h100");
  const double T = 2e-3;
  double worst_e = 0, worst_l = 0;
  for (const RankAnalysis& r : g->ra.ranks) {
    const TruthRank& tr = g->truth[static_cast<size_t>(r.rank)];
    for (const PowerRow& p : r.power) {
      if (!p.phase.empty()) continue;
      SCOPED_TRACE("rank " + std::to_string(r.rank) + " iteration " + std::to_string(p.iteration));
      ASSERT_TRUE(tr.energy_j.count(p.iteration));
      ASSERT_TRUE(tr.link_bytes.count(p.iteration));
      const double e = tr.energy_j.at(p.iteration);
      const auto [tx, rx] = tr.link_bytes.at(p.iteration);
      ASSERT_FALSE(std::isnan(p.energy_counter_j));
      ASSERT_FALSE(std::isnan(p.link_tx_bytes));
      EXPECT_NEAR(p.energy_counter_j, e, 2 * T * dev->tdp_w);
      EXPECT_NEAR(p.link_tx_bytes, tx, 2 * T * dev->intra_node_bw_gbs * 1e9);
      EXPECT_NEAR(p.link_rx_bytes, rx, 2 * T * dev->intra_node_bw_gbs * 1e9);
      EXPECT_GT(tx, 0);
      worst_e = std::max(worst_e, std::abs(p.energy_counter_j - e) / e);
      worst_l = std::max(worst_l, std::abs(p.link_tx_bytes - tx) / tx);
    }
  }
  std::printf("nvml sampler: energy counter off by at most %.3f%%, NVLink tx bytes by %.3f%%\n",
              100 * worst_e, 100 * worst_l);
  report("h100 nvml");
}

// The power_energy table as declared (report/hardware_report.hpp): on a run with an NVML sampler
// (power, clocks, temperatures, the energy counter and NVLink counters), each column its
// declaration says is NULL on a phase row is NULL on every phase row, and the derived cells of a
// whole-window row are the formulas the declaration states, recomputed here from the row's own
// cells: mean_power_w = energy_j / time, tokens_per_j = tokens per step / (energy_j × ranks),
// link_util = max(tx, rx) / time / the H100's per-direction NVLink bandwidth, peak_to_mean =
// peak_power_w / mean_power_w.
TEST(HardwareGolden, PowerEnergyCellsAsDeclared) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  apply_scenario("demo", c);
  c.telemetry_format = "nvml";
  c.telemetry_interval_ms = 2;
  auto g = run_hw("power_declared", c);
  struct NoRankRows : RankRows {
    void rows(RankStream, TableSink&) override {}
  } none;
  struct Keep : TableSink {
    std::map<std::string, std::unique_ptr<Table>> tables;
    Table* cur = nullptr;
    void begin(const TableSchema& s) override {
      cur = (tables[s.name] = std::make_unique<Table>(s)).get();
    }
    void row(std::span<const Cell> cells) override { cur->add_row(cells); }
    void end() override {}
  } keep;
  AnalysisOptions o;
  o.tokens_per_step = 8192;
  hardware_tables(g->ra, o, keep, none);
  ASSERT_TRUE(keep.tables.count("power_energy"));
  const Table& t = *keep.tables.at("power_energy");
  const TableSchema decl = kPowerEnergyTable.schema();
  ASSERT_EQ(t.cols(), decl.columns.size());
  constexpr ColumnHandle kPhase = kPowerEnergyTable.handle("phase"),
                         kTime = kPowerEnergyTable.handle("time_ns"),
                         kEnergy = kPowerEnergyTable.handle("energy_j"),
                         kMean = kPowerEnergyTable.handle("mean_power_w"),
                         kPeak = kPowerEnergyTable.handle("peak_power_w"),
                         kPeakToMean = kPowerEnergyTable.handle("peak_to_mean"),
                         kTokens = kPowerEnergyTable.handle("tokens_per_j"),
                         kTx = kPowerEnergyTable.handle("link_tx_bytes"),
                         kRx = kPowerEnergyTable.handle("link_rx_bytes"),
                         kLinkUtil = kPowerEnergyTable.handle("link_util");
  const double bw = find_device("h100")->intra_node_bw_gbs * 1e9;
  const double ranks = static_cast<double>(c.ranks);
  size_t windows = 0, phases = 0;
  for (size_t r = 0; r < t.rows(); ++r) {
    const double secs = static_cast<double>(t.get_int(r, kTime.index)) * 1e-9;
    const double e = t.get_real(r, kEnergy.index);
    if (!t.is_null(r, kPhase.index)) {
      ++phases;
      for (size_t k = 0; k < decl.columns.size(); ++k) {
        if (decl.columns[k].null_when.rfind("a phase row", 0) == 0) {
          EXPECT_TRUE(t.is_null(r, k)) << decl.columns[k].name << " of a phase row";
        }
      }
      continue;
    }
    ++windows;
    SCOPED_TRACE("window row " + std::to_string(r));
    ASSERT_GT(secs, 0);
    for (ColumnHandle h : {kMean, kPeak, kPeakToMean, kTokens, kTx, kRx, kLinkUtil})
      ASSERT_FALSE(t.is_null(r, h.index)) << h.name;
    const double mean = e / secs;
    EXPECT_DOUBLE_EQ(t.get_real(r, kMean.index), mean);
    EXPECT_DOUBLE_EQ(t.get_real(r, kPeakToMean.index), t.get_real(r, kPeak.index) / mean);
    EXPECT_DOUBLE_EQ(t.get_real(r, kTokens.index), 8192 / (e * ranks));
    const double bytes = std::max(t.get_real(r, kTx.index), t.get_real(r, kRx.index));
    EXPECT_DOUBLE_EQ(t.get_real(r, kLinkUtil.index), bytes / secs / bw);
  }
  // Every rank's every iteration has a whole-window row and phase rows (idle at least).
  EXPECT_EQ(windows, static_cast<size_t>(c.ranks * c.iterations));
  EXPECT_GE(phases, windows);
}
