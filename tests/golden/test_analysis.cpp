// Golden tests for the analyses: on synthetic runs with known injected effects, chopper must
// recover each effect per rank and iteration within 2% of the iteration time (exposed
// communication, launch overhead, the straggler rank and its lead) and the clock offsets between
// nodes within 1 µs. Truth comes from truth.json, which the generator writes while it builds every
// duration effect by effect (docs/formats.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct Golden {
  std::vector<TruthRank> truth;
  RunAnalysis ra;
  // Truth iteration time per (rank, iteration): the host's ProfilerStep span.
  Ns iter_ns(int64_t rank, int64_t it) const {
    for (const auto& [n, s, e] : truth[static_cast<size_t>(rank)].iterations)
      if (n == it) return e - s;
    return 0;
  }
};

Golden run_golden(const std::string& name, const SynthConfig& c) {
  const fs::path dir = temp_dir("analysis_" + name);
  synthesize(c, dir.string());
  Run run = load_run({dir.string()});
  label_run(Taxonomy::builtin(), run, 2);
  Golden g;
  g.truth = read_truth(dir);
  AnalysisOptions o;
  o.threads = 2;
  g.ra = analyze_run(run, o);
  fs::remove_all(dir);
  return g;
}

bool is_comm_class(const std::string& c) {
  return c == "all_gather" || c == "reduce_scatter" || c == "all_reduce" || c == "all_to_all" ||
         c == "broadcast" || c == "send_recv" || c == "collective";
}

// The largest error seen, as a share of the iteration time (printed for the record).
double worst_exposed_err = 0, worst_launch_err = 0, worst_lead_err = 0;
Ns worst_offset_err = 0;

// Exposed communication and launch overhead per (rank, iteration) against truth.
void check_effects(const Golden& g, bool skip_first_launch) {
  for (const RankAnalysis& r : g.ra.ranks) {
    const TruthRank& tr = g.truth[static_cast<size_t>(r.rank)];
    std::map<int64_t, Ns> t_exposed, t_launch;
    for (const TruthKernel& k : tr.kernels) {
      t_exposed[k.iteration] += k.exposed_comm_ns;
      t_launch[k.iteration] += k.host_late_ns + k.launch_overhead_ns + k.host_stall_ns;
    }
    std::map<int64_t, Ns> c_launch;
    for (const LaunchRow& l : r.launch) c_launch[l.key.iteration] += l.overhead_ns();
    int checked = 0;
    for (const BreakdownRow& b : r.breakdown) {
      if (b.iteration == kNoId) continue;
      const Ns it = g.iter_ns(r.rank, b.iteration);
      ASSERT_GT(it, 0);
      const double tol = 0.02 * static_cast<double>(it);
      SCOPED_TRACE("rank " + std::to_string(r.rank) + " iteration " + std::to_string(b.iteration));
      EXPECT_NEAR(static_cast<double>(b.exposed_comm_ns),
                  static_cast<double>(t_exposed[b.iteration]), tol);
      worst_exposed_err =
          std::max(worst_exposed_err,
                   std::abs(static_cast<double>(b.exposed_comm_ns - t_exposed[b.iteration])) /
                       static_cast<double>(it));
      // (The first iteration's stall comes before the trace's first kernel: chopper sees it from
      // the host's ProfilerStep start, where the first window opens.)
      if (!(skip_first_launch && b.iteration == tr.kernels.front().iteration)) {
        EXPECT_NEAR(static_cast<double>(c_launch[b.iteration]),
                    static_cast<double>(t_launch[b.iteration]), tol);
        worst_launch_err =
            std::max(worst_launch_err,
                     std::abs(static_cast<double>(c_launch[b.iteration] - t_launch[b.iteration])) /
                         static_cast<double>(it));
      }
      ++checked;
    }
    EXPECT_EQ(checked, static_cast<int>(tr.iterations.size()));
  }
}

// Every rank's estimated clock offset relative to rank 0 within 1 µs of the truth.
void check_offsets(const Golden& g) {
  ASSERT_EQ(g.ra.clock_offsets.size(), g.truth.size());
  for (const ClockOffset& o : g.ra.clock_offsets) {
    SCOPED_TRACE("rank " + std::to_string(o.rank));
    EXPECT_EQ(o.reference_rank, 0);
    const Ns want = g.truth[static_cast<size_t>(o.rank)].offset_ns - g.truth[0].offset_ns;
    EXPECT_NEAR(static_cast<double>(o.offset_ns), static_cast<double>(want), 1000.0);
    worst_offset_err = std::max(worst_offset_err, std::abs(o.offset_ns - want));
    EXPECT_GT(o.collectives, 0u);
  }
}

// Lead per (rank, iteration) from truth: for every compute-operation instance, the true (offset-
// free) first kernel start; lead = latest over ranks − own. Mean over the instances.
std::map<std::pair<int64_t, int64_t>, double> truth_leads(const Golden& g) {
  using Key = std::tuple<int64_t, std::string, int64_t, std::string>;
  std::map<Key, std::map<int64_t, Ns>> first;  // instance -> rank -> first start
  for (const TruthRank& tr : g.truth)
    for (const TruthKernel& k : tr.kernels) {
      if (is_comm_class(k.op_class) || k.op_class == "memcpy") continue;
      const Key key{k.iteration, k.phase, k.layer, k.operation};
      auto [it, fresh] = first[key].try_emplace(tr.rank, k.start_ns - tr.offset_ns);
      if (!fresh) it->second = std::min(it->second, k.start_ns - tr.offset_ns);
    }
  std::map<std::pair<int64_t, int64_t>, std::pair<double, int>> sum;
  for (const auto& [key, by_rank] : first) {
    Ns ref = INT64_MIN;
    for (const auto& [r, s] : by_rank) ref = std::max(ref, s);
    for (const auto& [r, s] : by_rank) {
      auto& x = sum[{r, std::get<0>(key)}];
      x.first += static_cast<double>(ref - s);
      ++x.second;
    }
  }
  std::map<std::pair<int64_t, int64_t>, double> out;
  for (const auto& [k, v] : sum) out[k] = v.first / v.second;
  return out;
}

void check_straggler(const Golden& g, int64_t straggler) {
  const auto want = truth_leads(g);
  std::set<int64_t> iterations;
  for (const StragglerRow& s : g.ra.stragglers) {
    if (s.iteration == kNoId) continue;
    iterations.insert(s.iteration);
    SCOPED_TRACE("rank " + std::to_string(s.rank) + " iteration " + std::to_string(s.iteration));
    EXPECT_EQ(s.waited_for, s.rank == straggler);
    // Both sides compute the same quantity exactly (truth from the true, offset-free starts):
    // only wrong labels or a wrong clock alignment (137 µs here) can move it, so 10 µs, far
    // tighter than the 2% of iteration time the issue asks for.
    const double tol = 10'000;
    ASSERT_TRUE(want.count({s.rank, s.iteration}));
    EXPECT_NEAR(static_cast<double>(s.mean_lead_ns), want.at({s.rank, s.iteration}), tol);
    worst_lead_err =
        std::max(worst_lead_err,
                 std::abs(static_cast<double>(s.mean_lead_ns) - want.at({s.rank, s.iteration})) /
                     static_cast<double>(g.iter_ns(s.rank, s.iteration)));
  }
  EXPECT_EQ(iterations.size(), g.truth[0].iterations.size());
  for (const IterationRow& it : g.ra.iterations) EXPECT_EQ(it.straggler_rank, straggler);
}

// Prints the largest errors of this test (for the record; ctest -V shows them) and resets them.
void report(const char* name) {
  std::printf(
      "%s: largest errors: exposed comm %.4f%%, launch overhead %.4f%%, lead %.4f%% of "
      "iteration time; clock offset %lld ns\n",
      name, 100 * worst_exposed_err, 100 * worst_launch_err, 100 * worst_lead_err,
      static_cast<long long>(worst_offset_err));
  worst_exposed_err = worst_launch_err = worst_lead_err = 0;
  worst_offset_err = 0;
}

SynthConfig with_offsets(SynthConfig c) {
  c.node_clock_offset_ns = 137'421;  // node 1 is 137.421 µs ahead of node 0
  return c;
}

// Truth charges every nanosecond the compute stream sat idle to exactly one effect: between one
// compute-stream activity's end and the next one's start, exposed communication + host late +
// launch overhead + host stall = the gap, to the nanosecond (docs/metrics.md; nothing twice,
// nothing left out).
void check_idle_partition(const Golden& g) {
  for (const TruthRank& tr : g.truth) {
    std::vector<const TruthKernel*> ks;
    for (const TruthKernel& k : tr.kernels)
      if (!is_comm_class(k.op_class)) ks.push_back(&k);
    std::sort(ks.begin(), ks.end(),
              [](const TruthKernel* a, const TruthKernel* b) { return a->start_ns < b->start_ns; });
    ASSERT_GT(ks.size(), 1u);
    int gaps = 0;
    for (size_t i = 1; i < ks.size(); ++i) {
      const Ns gap = ks[i]->start_ns - (ks[i - 1]->start_ns + ks[i - 1]->dur_ns);
      ASSERT_GE(gap, 0) << "rank " << tr.rank << ": the compute stream runs one thing at a time";
      EXPECT_EQ(gap, ks[i]->exposed_comm_ns + ks[i]->host_late_ns + ks[i]->launch_overhead_ns +
                         ks[i]->host_stall_ns)
          << "rank " << tr.rank << " kernel " << ks[i]->correlation;
      gaps += gap > 0;
    }
    EXPECT_GT(gaps, 0);
  }
}

// The launch-bound scenario where the issue saw it communication-bound: llama3-8b, 8 ranks on
// one node (NVLink), 2 blocks so that it runs in milliseconds, 2 iterations.
SynthConfig launch_bound_8(Parallelism par) {
  SynthConfig c;
  c.parallel = par;
  c.ranks = 8;
  c.gpus_per_node = 8;
  c.layers = 2;
  c.iterations = 2;
  c.threads = 2;
  EXPECT_TRUE(apply_scenario("launch-bound", c));
  return c;
}

// The host's side of the slowest rank's iteration time (analyze's "where the slowest rank's time
// goes"): host late (the host had not issued the next launch: 400 µs of Python per op) plus launch
// overhead (the launch latency, 13 µs per op) is a share of the iteration within [lo, hi]; host
// late is the largest non-compute component, by at least `lead` times the next one other than
// launch overhead; and launch overhead is under a tenth of host late (13 µs vs 400 µs per op).
void check_launch_leads(const Golden& g, double lo, double hi, double lead) {
  ASSERT_EQ(g.ra.iterations.size(), 2u);
  for (const IterationRow& it : g.ra.iterations) {
    SCOPED_TRACE("iteration " + std::to_string(it.iteration));
    ASSERT_TRUE(it.components.count("host_late"));
    ASSERT_TRUE(it.components.count("launch_overhead"));
    // The host late between kernels, the optimizer's (host_optimizer: its launches are inside
    // the Optimizer.step# / zero_grad# annotations) included.
    const auto opt = it.components.find("host_optimizer");
    const Ns late = it.components.at("host_late") + (opt == it.components.end() ? 0 : opt->second),
             launch = it.components.at("launch_overhead");
    Ns next = 0;  // the largest other non-compute component (compute ones are "phase.class")
    for (const auto& [name, ns] : it.components)
      if (name.find('.') == std::string::npos && name != "host_late" && name != "launch_overhead" &&
          name != "host_optimizer")
        next = std::max(next, ns);
    EXPECT_GT(static_cast<double>(late), lead * static_cast<double>(next));
    EXPECT_LT(10 * launch, late);
    const double share = static_cast<double>(late + launch) / static_cast<double>(it.time_ns);
    EXPECT_GE(share, lo);
    EXPECT_LE(share, hi);
    std::printf(
        "iteration %lld: host late %.1f%% + launch overhead %.1f%%, next non-compute %.1f%% of "
        "%.3f ms\n",
        static_cast<long long>(it.iteration),
        100 * static_cast<double>(late) / static_cast<double>(it.time_ns),
        100 * static_cast<double>(launch) / static_cast<double>(it.time_ns),
        100 * static_cast<double>(next) / static_cast<double>(it.time_ns),
        static_cast<double>(it.time_ns) * 1e-6);
  }
  for (const RankAnalysis& r : g.ra.ranks) {
    Ns prep = 0, call = 0;
    for (const LaunchRow& l : r.launch) prep += l.prep_ns, call += l.call_ns;
    EXPECT_GT(prep, 10 * call) << "rank " << r.rank;  // 400 µs of host per op vs a 13 µs call
  }
}

// Each idle cause of the end-to-end components against truth, per rank and iteration, within 2
// points of the iteration time: data_loading + host_stall (truth host_stall_ns: the generator's
// stall runs under a DataLoader annotation, data_loading; host_stall keeps the step start's few
// µs outside it), host_late (host_late_ns of the kernels outside the optimizer phase: the compute
// stream idle before the launch call started, less the stall), host_optimizer (host_late_ns of
// the optimizer's kernels, launched inside Optimizer.step# / Optimizer.zero_grad#),
// launch_overhead (launch_overhead_ns: from the launch call's start to the kernel's earliest
// start). chopper's host stall runs from the step's host start to the iteration's first launch
// call, so it takes the first op's host time (12 µs; 400 µs in launch-bound) from host_late: well
// inside the tolerance. Prints the largest errors as a share of the iteration.
void check_idle_causes(const Golden& g, const char* name) {
  double worst[4] = {0, 0, 0, 0};
  const char* keys[4] = {"host_stall", "host_late", "launch_overhead", "host_optimizer"};
  for (const RankAnalysis& r : g.ra.ranks) {
    const TruthRank& tr = g.truth[static_cast<size_t>(r.rank)];
    std::map<int64_t, std::array<Ns, 4>> want;
    for (const TruthKernel& k : tr.kernels) {
      auto& w = want[k.iteration];
      w[0] += k.host_stall_ns;
      w[k.phase == "optimizer" ? 3 : 1] += k.host_late_ns;
      w[2] += k.launch_overhead_ns;
    }
    ASSERT_EQ(r.components.size(), tr.iterations.size());
    for (const auto& [it, comp] : r.components) {
      SCOPED_TRACE(std::string(name) + " rank " + std::to_string(r.rank) + " iteration " +
                   std::to_string(it));
      const double step = static_cast<double>(g.iter_ns(r.rank, it));
      ASSERT_GT(step, 0);
      for (int k = 0; k < 4; ++k) {
        auto f = comp.find(keys[k]);
        double got = f == comp.end() ? 0.0 : static_cast<double>(f->second);
        if (k == 0 && comp.count("data_loading"))
          got += static_cast<double>(comp.at("data_loading"));
        EXPECT_NEAR(got, static_cast<double>(want[it][static_cast<size_t>(k)]), 0.02 * step)
            << keys[k];
        worst[k] = std::max(
            worst[k], std::abs(got - static_cast<double>(want[it][static_cast<size_t>(k)])) / step);
      }
      // The rank's components still add up to its window exactly.
      Ns sum = 0, window = -1;
      for (const auto& [k, v] : comp) sum += v;
      for (const BreakdownRow& b : r.breakdown)
        if (b.iteration == it) window = b.total_ns;
      EXPECT_EQ(sum, window);
    }
  }
  std::printf(
      "%s: largest errors: data loading + host stall %.3f%%, host late %.3f%%, launch overhead "
      "%.3f%%, host optimizer %.3f%% of the iteration\n",
      name, 100 * worst[0], 100 * worst[1], 100 * worst[2], 100 * worst[3]);
}

}  // namespace

TEST(AnalysisGolden, ExposedCommunication) {
  SynthConfig c = with_offsets(small("h100", Parallelism::kFsdp));
  ASSERT_TRUE(apply_scenario("exposed-comm", c));
  const Golden g = run_golden("exposed", c);
  check_effects(g, false);
  check_offsets(g);
  // The injected effect is large: exposed communication is most of every iteration.
  for (const RankAnalysis& r : g.ra.ranks)
    for (const BreakdownRow& b : r.breakdown)
      if (b.iteration != kNoId) {
        EXPECT_GT(b.exposed_comm_ns, b.total_ns / 4);
      }
  report("ExposedCommunication");
}

TEST(AnalysisGolden, LaunchBound) {
  SynthConfig c = with_offsets(small("h100", Parallelism::kFsdp));
  ASSERT_TRUE(apply_scenario("launch-bound", c));
  const Golden g = run_golden("launch", c);
  check_effects(g, false);
  check_offsets(g);
  check_idle_causes(g, "LaunchBound");
  // Short kernels behind a slow host, across two nodes with clock offsets: what launch overhead
  // there is is mostly prep (the host had not issued the launch yet). Over 50 GB/s NICs the
  // collectives take 7x their NVLink time and fill the host's gaps, so here communication, not
  // launch overhead, leads (92% vs 0.5%); the shares are checked on one node below.
  for (const RankAnalysis& r : g.ra.ranks) {
    Ns prep = 0, call = 0;
    for (const LaunchRow& l : r.launch) prep += l.prep_ns, call += l.call_ns;
    EXPECT_GT(prep, call);
  }
  report("LaunchBound");
}

TEST(AnalysisGolden, Straggler) {
  SynthConfig c = with_offsets(small("h100", Parallelism::kFsdp));
  ASSERT_TRUE(apply_scenario("straggler", c));
  const Golden g = run_golden("straggler", c);
  check_effects(g, false);
  check_offsets(g);
  check_straggler(g, c.straggler_rank);
  report("Straggler");
}

TEST(AnalysisGolden, DdpAmdStraggler) {
  SynthConfig c = with_offsets(small("mi300x", Parallelism::kDdp));
  ASSERT_TRUE(apply_scenario("straggler", c));
  c.straggler_rank = 1;
  const Golden g = run_golden("ddp_straggler", c);
  check_effects(g, false);
  check_offsets(g);
  check_straggler(g, 1);
  report("DdpAmdStraggler");
}

TEST(AnalysisGolden, DemoAllEffects) {
  SynthConfig c = with_offsets(small("h100", Parallelism::kFsdp));
  ASSERT_TRUE(apply_scenario("demo", c));
  c.node_clock_offset_ns = 137'421;  // the demo scenario turns offsets off
  const Golden g = run_golden("demo", c);
  check_effects(g, false);
  check_offsets(g);
  check_idle_causes(g, "DemoAllEffects");
  // FLOPs from the recorded shapes: the GEMM and attention FLOPs truth.json gives (2mnk; causal
  // flash attention 2·s·T·h, 2.5× backward) plus chopper's small estimates for norms and
  // elementwise ops, which the generator models differently; so within 2% of the matrix FLOPs.
  // MFU follows from them and the H100's 989.4 TFLOP/s bf16 peak.
  std::map<int64_t, double> matrix;
  for (const TruthRank& tr : g.truth)
    for (const TruthKernel& k : tr.kernels)
      if (k.op_class == "gemm" || k.op_class == "attention") matrix[k.iteration] += k.flops;
  ASSERT_NE(g.ra.device, nullptr);
  EXPECT_EQ(g.ra.device->name, "h100");
  for (const IterationRow& it : g.ra.iterations) {
    EXPECT_GE(it.flops, matrix[it.iteration]);
    EXPECT_NEAR(it.flops, matrix[it.iteration], 0.02 * matrix[it.iteration]);
    const double secs = static_cast<double>(it.time_ns) * 1e-9;
    EXPECT_NEAR(it.mfu, it.flops / (secs * 4 * 989.4e12), 1e-9);
    EXPECT_GT(it.mfu, 0.05);
    EXPECT_LT(it.mfu, 0.75);  // below the generator's matrix efficiency
  }
  // The end-to-end components of each iteration add up to its time exactly.
  for (const IterationRow& it : g.ra.iterations) {
    Ns sum = 0;
    for (const auto& [k, v] : it.components) sum += v;
    EXPECT_EQ(sum, it.time_ns) << "iteration " << it.iteration;
  }
  report("DemoAllEffects");
}

// launch-bound on FSDP, 8 ranks, 2 blocks. Per step the host runs 91 launches (35 forward, 49
// backward, 5 optimizer, 2 copies) and 8 collectives at ~0.41 ms each: ~39 ms. The GPU computes
// for ~8 ms (256 tokens: the blocks' kernels, copy-outs, lm head, optimizer) and communicates for
// 16.7 ms (7/8 of each message at 360 GB/s: 1.06 ms per block all-gather or reduce-scatter, 5.1
// ms each for the 2.1 GB embedding + lm head all-gather and reduce-scatter), 13.8 ms of it
// exposed: the step opens on the embedding all-gather and the optimizer waits for the last
// reduce-scatter, and the blocks' collectives run in the host's gaps. The ~45 ms step is then
// ~8 compute + ~14 exposed communication + ~23 launch overhead: 51%. Bounds ±6 points; launch
// overhead must beat exposed communication by 1.4x (51% vs 31%).
TEST(AnalysisGolden, LaunchBoundFsdpEightRanks) {
  const Golden g = run_golden("launch_fsdp8", launch_bound_8(Parallelism::kFsdp));
  check_launch_leads(g, 0.45, 0.57, 1.4);
  check_effects(g, false);  // launch overhead and exposed comm per rank and iteration, ±2%
  check_idle_partition(g);
  check_idle_causes(g, "LaunchBoundFsdpEightRanks");
  report("LaunchBoundFsdpEightRanks");
}

// launch-bound on DDP, 8 ranks, 2 blocks: 86 launches and 3 all-reduces, ~36 ms of host; then
// the GPU waits 10.2 ms for the embedding + lm head all-reduce (2 x 7/8 x 2.1 GB / 360 GB/s) and
// runs the unsharded AdamW over 1.5 G parameters (~20 ms of optimizer and zero_grad: compute).
// Each block's 2.1 ms all-reduce overlaps the host's gaps in the next block's backward. The ~66
// ms step is ~23 compute + ~14 exposed communication + ~28 launch overhead: 43%. Bounds ±6
// points; launch overhead must beat exposed communication by 1.5x (43% vs 22%).
TEST(AnalysisGolden, LaunchBoundDdpEightRanks) {
  const Golden g = run_golden("launch_ddp8", launch_bound_8(Parallelism::kDdp));
  check_launch_leads(g, 0.37, 0.49, 1.5);
  check_effects(g, false);
  check_idle_partition(g);
  check_idle_causes(g, "LaunchBoundDdpEightRanks");
  report("LaunchBoundDdpEightRanks");
}

// The host busy at an iteration's start (a data-loader stall; a straggler's late host) is its own
// component: the generator runs it under PyTorch's enumerate(DataLoader)#... annotation, so it is
// "data_loading" (before this split it was "host_stall", the launch-overhead time of the window
// before the host's first launch, which now keeps only what no host frame names), the window
// opening at the step's host start. Per rank and iteration it must match truth's host_stall_ns
// (the stall the generator injected before the iteration's first launch) within 2 points of the
// iteration, on H100 FSDP, MI300X FSDP and A100 DDP, with a 3 ms stall alone and with every effect
// (the demo), and the rest of the host's wait must then match truth under its own names: host
// late (host_late_ns before each launch call, outside the optimizer), host optimizer (that of the
// optimizer's kernels) and launch overhead (launch_overhead_ns: launch call to kernel start).
TEST(AnalysisGolden, DataLoaderStallIsItsOwnCause) {
  struct Case {
    const char* device;
    Parallelism par;
    bool demo;
  };
  double worst_stall = 0, worst_launch = 0, worst_late = 0;
  for (const Case& k :
       {Case{"h100", Parallelism::kFsdp, false}, Case{"h100", Parallelism::kFsdp, true},
        Case{"mi300x", Parallelism::kFsdp, true}, Case{"a100", Parallelism::kDdp, false},
        Case{"a100", Parallelism::kDdp, true}}) {
    SynthConfig c = small(k.device, k.par);
    c.ranks = 8;
    c.gpus_per_node = 8;
    c.iterations = 3;
    if (k.demo)
      apply_scenario("demo", c);
    else
      c.data_loader_stall_ns = 3000000;
    const Golden g = run_golden(std::string("stall_") + k.device + (k.demo ? "_demo" : ""), c);
    for (const RankAnalysis& r : g.ra.ranks) {
      const TruthRank& tr = g.truth[static_cast<size_t>(r.rank)];
      std::map<int64_t, Ns> t_stall, t_launch, t_late, t_opt;
      for (const TruthKernel& tk : tr.kernels) {
        t_stall[tk.iteration] += tk.host_stall_ns;
        t_launch[tk.iteration] += tk.launch_overhead_ns;
        (tk.phase == "optimizer" ? t_opt : t_late)[tk.iteration] += tk.host_late_ns;
      }
      ASSERT_EQ(r.components.size(), tr.iterations.size());
      for (const auto& [it, comp] : r.components) {
        SCOPED_TRACE(std::string(k.device) + (k.demo ? " demo" : " stall") + " rank " +
                     std::to_string(r.rank) + " iteration " + std::to_string(it));
        const double step = static_cast<double>(g.iter_ns(r.rank, it));
        ASSERT_GT(step, 0);
        const auto at = [&](const char* n) {
          auto f = comp.find(n);
          return f == comp.end() ? 0.0 : static_cast<double>(f->second);
        };
        EXPECT_GT(t_stall[it], 0);  // every iteration has its stall
        // The stall runs under the generator's enumerate(DataLoader)#... annotation: it is data
        // loading; host_stall keeps the step start's host time outside it (1 µs before the
        // annotation, 1 µs after it and the first op's host time: 12 µs, well under 2 points).
        EXPECT_NEAR(at("data_loading"), static_cast<double>(t_stall[it]), 0.02 * step);
        EXPECT_LT(at("host_stall"), 0.02 * step);
        EXPECT_NEAR(at("launch_overhead"), static_cast<double>(t_launch[it]), 0.02 * step);
        EXPECT_NEAR(at("host_late"), static_cast<double>(t_late[it]), 0.02 * step);
        EXPECT_NEAR(at("host_optimizer"), static_cast<double>(t_opt[it]), 0.02 * step);
        worst_late = std::max(worst_late,
                              std::abs(at("host_late") - static_cast<double>(t_late[it])) / step);
        worst_stall = std::max(
            worst_stall, std::abs(at("data_loading") - static_cast<double>(t_stall[it])) / step);
        worst_launch =
            std::max(worst_launch,
                     std::abs(at("launch_overhead") - static_cast<double>(t_launch[it])) / step);
      }
    }
  }
  std::printf(
      "data loading: largest error %.3f%% of the iteration; host late %.3f%%; launch overhead "
      "%.3f%%\n",
      100 * worst_stall, 100 * worst_late, 100 * worst_launch);
}
