// The hierarchy on the real traces that have ProfilerStep: >= 99% of the GPU time inside profiled
// steps has an iteration and a phase. Every in-iteration count and GPU time, and every
// hand-checked label below, comes from tests/real/independent_labels.py (`python3
// tests/real/independent_labels.py`; json and gzip only, not a port of label.cpp): an activity is
// in iteration N when the runtime call with its correlation id starts inside ProfilerStep#N, and
// its phase is read from the names of the host ranges around that call (the script's docstring
// lists the readings; `why` says which one applied). The phase coverages are chopper's own values,
// pinned to 4 decimals so that a regression shows. The tests skip when ../shared is absent.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

constexpr int32_t kAnyLayer = -2;  // the layer is not checked

struct Pick {
  int64_t correlation;
  int64_t iteration;
  const char* phase;
  const char* operation;  // nullptr = not checked (ambiguous)
  int32_t layer;          // kAnyLayer = not checked
  const char* why;        // the reasoning, from independent_labels.py
};

struct Case {
  const char* file;  // under traces/kineto
  uint64_t in_iteration_count;
  Ns in_iteration_ns;
  double phase_coverage;  // chopper's share of in-iteration GPU time with a phase
  double layer_coverage;  // chopper's, < 0 = not checked
  std::vector<Pick> picks;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"hta_a100_ddp_nccl_rank0.json.gz",
       3774,
       165185838,
       1.0,
       -1,
       {{35969, 5, "forward", "aten::conv2d", kAnyLayer, "under `## forward ##`"},
        {41131, 5, "backward", "aten::conv2d", kAnyLayer,
         "under evaluate_function: ConvolutionBackward0; its Sequence number names aten::conv2d"},
        {49810, 5, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#SGD.step`"},
        {40984, 5, "backward", "all_reduce", kAnyLayer,
         "DDP all-reduce under evaluate_function: AccumulateGrad, in `nccl:all_reduce`"},
        {34915, 5, "forward", "broadcast", kAnyLayer,
         "DDP buffer broadcast under `## forward ##`, in `nccl:broadcast`"},
        {48982, 5, "backward", nullptr, kAnyLayer,
         "memcpy under `torch.distributed.ddp.reducer::copy_bucket_to_grad`"}}},
      // Correlation 126, the FillFunctor kernel of `ProfilerStep#1 > aten::ones_like > aten::fill_`
      // on the main thread between the loss and the first backward node (loss.backward()'s
      // gradient seed), is backward by the backward_seed rule; without it the coverage was 0.9775.
      {"hta_mi250_minitoy_rocm6.2.json.gz",
       16,
       149042,
       1.0,
       -1,
       {{121, 1, "forward", "aten::linear", kAnyLayer,
         "main thread before the first backward node, aten::linear has a Sequence number"},
        {132, 1, "backward", "aten::linear", kAnyLayer,
         "under evaluate_function: AddmmBackward0 (forward op aten::linear > aten::addmm)"},
        {136, 1, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#SGD.step`"},
        {126, 1, "backward", "aten::ones_like", kAnyLayer,
         "aten::ones_like > aten::fill_ after the last forward launch, before the first backward "
         "node: the gradient seed"},
        {117, 1, "other", "aten::to", kAnyLayer,
         "HtoD copy by aten::to directly under the step: the batch upload"}}},
      {"hta_triton_culaunch.json.gz",
       1,
       1760,
       1.0,
       -1,
       {{35, 1, "forward", nullptr, kAnyLayer,
         "inference: no backward node and no Optimizer range in the trace"}}},
      {"hta_v100_float_epoch_ts.json.gz",
       6095,
       472454441,
       1.0,
       -1,
       {{166156, 103, "forward", "aten::conv2d", kAnyLayer, "under `## forward ##`"},
        {171742, 103, "backward", "aten::conv2d", kAnyLayer,
         "under evaluate_function: ConvolutionBackward0 (forward op aten::conv2d)"},
        {180454, 103, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#SGD.step`"},
        {179634, 103, "backward", nullptr, kAnyLayer,
         "memcpy under `torch.distributed.ddp.reducer::copy_bucket_to_grad`"},
        {170153, 103, "forward", "aten::conv2d", kAnyLayer, "memset under `## forward ##`"}}},
      // 1.0 since backward_seed labels the 6 us of aten::ones_like (loss.backward()'s seed).
      {"kineto_v100_resnet50_2021_legacy.json.gz",
       9096,
       603558000,
       1.0,
       -1,
       {{57380, 7, "forward", "aten::conv2d", kAnyLayer,
         "main thread before the first backward node, aten::conv2d has a Sequence number"},
        {61397, 7, "backward", "aten::conv2d", kAnyLayer,
         "under the node `CudnnConvolutionBackward` (forward op aten::conv2d)"},
        {67441, 7, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#SGD.step`"},
        {57355, 7, "other", "aten::to", kAnyLayer,
         "HtoD copy by aten::to directly under the step: the batch upload"}}},
      // Layer coverage 0.9928 = the script's own share: 31674178 of 31905473 ns launched inside an
      // `nn.Module: Qwen2DecoderLayer_N` range. Layers are checked against that range's N.
      {"tracelens_h100_qwen0.5b.json.gz",
       1198,
       31905473,
       1.0,
       0.9928,
       {{690754, 6, "forward", "aten::scaled_dot_product_attention", 11,
         "flash kernel in `nn.Module: Qwen2DecoderLayer_11` (inference, nn.Module forward)"},
        {690942, 6, "forward", "aten::linear", 11, "GEMM in Qwen2DecoderLayer_11 > Qwen2MLP_11"},
        {683055, 6, "forward", "aten::linear", 0, "memset in Qwen2DecoderLayer_0 > Linear_0"},
        {682810, 6, "forward", "aten::is_nonzero", -1,
         "DtoH copy in Qwen2Model_0 outside the decoder layers"}}},
      {"tracelens_mi300x_qwen0.5b.json.gz",
       1054,
       29743938,
       1.0,
       -1,
       {{49514, 6, "forward", "aten::linear", 0, "GEMM in `nn.Module: Qwen2DecoderLayer_0`"},
        {49490, 6, "forward", "aten::is_nonzero", -1,
         "DtoD copy in Qwen2Model_0 outside the decoder layers"}}},
      // 1.0 since backward_seed labels the 13.8 us of aten::ones_like (loss.backward()'s seed).
      {"tracelens_mi300x_resnet_ddp_rank0.json.gz",
       2685,
       68395667,
       1.0,
       -1,
       {{6290, 16, "forward", "aten::conv2d", kAnyLayer,
         "under `nn.Module: DistributedDataParallel_0`"},
        {6623, 16, "backward", "aten::conv2d", kAnyLayer,
         "under evaluate_function: ConvolutionBackward0 (forward op aten::conv2d)"},
        {7244, 16, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#SGD.step`"},
        {7178, 16, "backward", "all_reduce", kAnyLayer,
         "RCCL all-reduce under evaluate_function: AccumulateGrad, in `nccl:all_reduce`"},
        {6221, 16, "forward", "broadcast", kAnyLayer,
         "RCCL buffer broadcast under DistributedDataParallel.forward, in `nccl:broadcast`"},
        {7181, 16, "backward", nullptr, kAnyLayer,
         "memcpy under `torch.distributed.ddp.reducer::copy_bucket_to_grad`"}}},
      // The NCCL kernels' operation here is not checked: see SampledCollectiveOperation below.
      {"hta_sampled_2rank/rank-0.json.gz",
       1204,
       607844000,
       1.0,
       -1,
       {{7069205, 552, "forward", nullptr, kAnyLayer, "under `## forward ##`"},
        {7118172, 552, "backward", nullptr, kAnyLayer, "under evaluate_function: BmmBackward0"},
        {7171899, 552, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#Shampoo.step`"},
        {7170295, 552, "backward", nullptr, kAnyLayer,
         "all-reduce under evaluate_function: AccumulateGrad"},
        {7172110, 552, "optimizer", nullptr, kAnyLayer,
         "all-gather under `Optimizer.step#Shampoo.step`"},
        {7171936, 552, "optimizer", "opt_step", kAnyLayer,
         "memcpy under `Optimizer.step#Shampoo.step`"}}},
      {"hta_sampled_2rank/rank-1.json.gz",
       1154,
       667530000,
       1.0,
       -1,
       {{6907251, 551, "forward", nullptr, kAnyLayer, "embedding under `## forward ##`"},
        {6949721, 551, "backward", nullptr, kAnyLayer, "under evaluate_function: AddmmBackward0"},
        {7009092, 551, "optimizer", "opt_step", kAnyLayer, "under `Optimizer.step#Shampoo.step`"},
        {6949779, 551, "backward", nullptr, kAnyLayer,
         "all-reduce under evaluate_function: AccumulateGrad"},
        {6907311, 551, "forward", nullptr, kAnyLayer, "all-to-all under `## forward ##`"},
        {7009129, 551, "optimizer", "opt_step", kAnyLayer,
         "memcpy under `Optimizer.step#Shampoo.step`"}}},
  };
  return c;
}

Run load_labelled(const std::string& rel) {
  Run run = load_run({chopper::test::shared_path("traces/kineto/" + rel)});
  label_run(Taxonomy::builtin(), run, 1);
  return run;
}

class RealHierarchyTrace : public ::testing::TestWithParam<size_t> {};

TEST_P(RealHierarchyTrace, MatchesIndependentLabels) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace hierarchy test skipped";
  const Case& c = cases()[GetParam()];
  SCOPED_TRACE(c.file);
  chopper::Run run = load_labelled(c.file);
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
  const RankTrace& t = run.ranks[0].trace;
  ASSERT_TRUE(t.labelled());

  // (a) what has an iteration: exactly the activities launched inside a ProfilerStep.
  uint64_t count = 0;
  Ns ns = 0;
  std::map<int64_t, size_t> by_corr;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    by_corr.emplace(t.gpu.correlation[i], i);
    if (t.gpu.iteration[i] == kNoId) continue;
    ++count;
    ns += t.gpu.dur_ns[i];
  }
  EXPECT_EQ(count, c.in_iteration_count);
  EXPECT_EQ(ns, c.in_iteration_ns);

  // (b) the requirement, and chopper's exact value.
  const auto cov = label_coverage(run);
  const double phase = coverage_share(cov, "phase", "in_iterations");
  EXPECT_GE(phase, 0.99) << "less than 99% of the in-iteration GPU time has a phase";
  EXPECT_NEAR(phase, c.phase_coverage, 5e-5);
  if (c.layer_coverage >= 0) {
    EXPECT_NEAR(coverage_share(cov, "layer", "in_iterations"), c.layer_coverage, 5e-5);
  }

  // (c) hand-checked labels.
  for (const Pick& p : c.picks) {
    SCOPED_TRACE("correlation " + std::to_string(p.correlation) + ": " + p.why);
    const auto it = by_corr.find(p.correlation);
    ASSERT_NE(it, by_corr.end());
    const size_t i = it->second;
    EXPECT_EQ(t.gpu.iteration[i], p.iteration);
    EXPECT_EQ(phase_name(t.gpu.phase[i]), p.phase)
        << "rule " << (t.gpu.phase_rule[i] == kNoRule ? "-" : t.label_rules[t.gpu.phase_rule[i]]);
    if (p.operation != nullptr) {
      EXPECT_EQ(t.strings.str(t.gpu.operation[i]), p.operation);
    }
    if (p.layer != kAnyLayer) {
      EXPECT_EQ(t.gpu.layer[i], p.layer);
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& param) {
  std::string n = cases()[param.param].file;
  n = n.substr(0, n.find(".json"));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(RealHierarchy, RealHierarchyTrace,
                         ::testing::Range<size_t>(0, cases().size()), case_name);

// The same host chain (AccumulateGrad > c10d::allreduce_ > record_param_comms >
// nccl:all_reduce) must give the same operation whichever op the launch reaches: on
// hta_a100_ddp_nccl_rank0 the kernel's External id names record_param_comms; on hta_sampled_2rank
// (External id = correlation, naming no host op) the launch is placed by enclosure in the
// `nccl:all_reduce` annotation. `nccl:*` ranges are structural, so both give the collective type.
TEST(RealHierarchy, SampledCollectiveOperation) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  chopper::Run run = load_labelled("hta_sampled_2rank/rank-1.json.gz");
  const RankTrace& t = run.ranks.at(0).trace;
  const std::map<int64_t, std::string> expected = {{6949779, "all_reduce"},
                                                   {6907311, "all_to_all"}};
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (const auto it = expected.find(t.gpu.correlation[i]); it != expected.end()) {
      EXPECT_EQ(t.strings.str(t.gpu.operation[i]), it->second) << it->first;
    }
  }
}

// Activation checkpointing (TraceLens' MI300X ResNet, torchvision blocks under checkpoint_wrapper):
// the forward of a block runs again inside the backward op that unpacks its activations
// (ReluBackward0 > torch/utils/checkpoint.py(1111): unpack_hook > ...(1500): recompute_fn >
// aten::batch_norm). Those kernels are the recomputed op's, not the backward op's forward op's:
// batch_norm_collect_statistics (a forward-only kernel) in the backward phase is aten::batch_norm
// by rule checkpoint_recompute: 57 of the trace's 156, the ones whose launch lies in a
// recompute_fn frame (counted in the JSON with Python), and no backward kernel of aten::relu_ is
// a batch norm or a convolution's transpose.
TEST(RealHierarchy, CheckpointRecomputeIsItsOwnOperation) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  chopper::Run run = load_labelled("tracelens_mi300x_resnet_ddp_rank0.json.gz");
  const RankTrace& t = run.ranks.at(0).trace;
  const std::vector<std::string> rules = Taxonomy::builtin().label_rule_names();
  size_t recomputed = 0;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.gpu.phase[i] != Phase::kBackward) continue;
    const std::string_view name = t.strings.str(t.gpu.name[i]);
    const std::string_view op = t.strings.str(t.gpu.operation[i]);
    if (name.find("batch_norm_collect_statistics") != std::string_view::npos) {
      ++recomputed;
      EXPECT_EQ(op, "aten::batch_norm");
      EXPECT_EQ(rules.at(t.gpu.operation_rule[i]), "checkpoint_recompute");
    }
    if (op == "aten::relu_") {
      EXPECT_TRUE(name.find("batch_norm") == std::string_view::npos &&
                  name.find("transpose") == std::string_view::npos)
          << name;
    }
  }
  EXPECT_EQ(recomputed, 57u);
}

// A collective whose type nothing tells is named as communication, not "unknown": TraceLens'
// MI300X ResNet trace has 17 ncclDevKernel_Generic kernels, 12 of them under record_param_comms
// with a "Collective name" (6 allreduce, 6 broadcast) and 5 launched before the window with
// nothing above them (RealTraces.Collectives counts the same from the collectives).
TEST(RealHierarchy, CollectiveOfUnknownTypeNamedAsOne) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  chopper::Run run = load_labelled("tracelens_mi300x_resnet_ddp_rank0.json.gz");
  const RankTrace& t = run.ranks.at(0).trace;
  std::map<std::string, int> ops;
  for (size_t i = 0; i < t.gpu.size(); ++i) {
    if (t.strings.str(t.gpu.name[i]).find("ncclDevKernel_Generic") == std::string_view::npos)
      continue;
    ++ops[std::string(t.strings.str(t.gpu.operation[i]))];
    EXPECT_NE(t.strings.str(t.gpu.operation[i]), "unknown");
  }
  EXPECT_EQ(ops["collective (type unknown)"], 5);
  EXPECT_EQ(ops["collective (type unknown)"] + ops["all_reduce"] + ops["broadcast"], 17);
}

// ---- Coverage of the GPU time inside profiled steps, per real trace with ProfilerStep.
//
// "Inside profiled steps" is measured here, independently of label.cpp's rules, as: a GPU activity
// (syncs excluded) is in-step when
//   (a) its launch (the runtime call linked by correlation, else the start of its linked host op)
//       lies in a host `ProfilerStep#N` range, or
//   (b) its GPU interval [start, end) lies within the GPU-side span of some step on its device:
//       [earliest GPU start, latest GPU end] of the activities of that device launched in the
//       step (what the profiler's `ProfilerStep#N` gpu_user_annotation marks on CUDA).
// Not in-step: work on the GPU before the first step's GPU span (launched before the profiler
// started; the GPU lags the host by up to ~100 ms, so it runs while the host is already inside
// the first step: a host-clock window would count it) and work after the last step's GPU span.
// The requirement: >= 99% of the in-step GPU time has an iteration, >= 99% of that a phase.
// in_step_ns and the GPU time before the first step's GPU span are also printed by
// tests/real/independent_labels.py (its section (a')), which reads the JSON on its own; the two
// shares are chopper's, pinned so that a regression shows.
struct InStep {
  Ns total_ns = 0;             // all GPU time (syncs excluded)
  Ns in_step_ns = 0;           // (a) or (b)
  Ns iteration_ns = 0;         // in-step with an iteration
  Ns phase_ns = 0;             // in-step with an iteration and a phase
  Ns before_first_ns = 0;      // not in-step, GPU start before the first step's GPU span
  Ns labelled_outside_ns = 0;  // with an iteration but not in-step (must be 0)
};

InStep measure_in_step(const RankTrace& t) {
  const GpuActivities& g = t.gpu;
  InStep m;
  auto step_of = [&](Ns ts) -> int {
    for (size_t k = 0; k < t.steps.size(); ++k)
      if (t.steps[k].start_ns <= ts && ts < t.steps[k].end_ns) return static_cast<int>(k);
    return -1;
  };
  std::vector<int> launched(g.size(), -1);
  std::map<std::pair<int, int64_t>, std::pair<Ns, Ns>> span;  // (step, device) -> GPU span
  for (size_t a = 0; a < g.size(); ++a) {
    if (g.kind[a] == GpuKind::kSync) continue;
    Ns ts = kNoId;
    if (g.runtime_idx[a] != kNoRow)
      ts = t.runtime.start_ns[static_cast<size_t>(g.runtime_idx[a])];
    else if (g.host_op_idx[a] != kNoRow)
      ts = t.host.start_ns[static_cast<size_t>(g.host_op_idx[a])];
    if (ts == kNoId || (launched[a] = step_of(ts)) < 0) continue;
    auto [it, fresh] =
        span.try_emplace({launched[a], g.device[a]}, g.start_ns[a], g.start_ns[a] + g.dur_ns[a]);
    if (!fresh) {
      it->second.first = std::min(it->second.first, g.start_ns[a]);
      it->second.second = std::max(it->second.second, g.start_ns[a] + g.dur_ns[a]);
    }
  }
  Ns first_gpu = INT64_MAX;
  for (const auto& kv : span) first_gpu = std::min(first_gpu, kv.second.first);
  for (size_t a = 0; a < g.size(); ++a) {
    if (g.kind[a] == GpuKind::kSync) continue;
    const Ns s = g.start_ns[a], e = s + g.dur_ns[a];
    m.total_ns += g.dur_ns[a];
    bool in = launched[a] >= 0;
    for (const auto& kv : span)
      in = in || (kv.first.second == g.device[a] && kv.second.first <= s && e <= kv.second.second);
    if (!in) {
      if (s < first_gpu) m.before_first_ns += g.dur_ns[a];
      if (g.iteration[a] != kNoId) m.labelled_outside_ns += g.dur_ns[a];
      continue;
    }
    m.in_step_ns += g.dur_ns[a];
    if (g.iteration[a] == kNoId) continue;
    m.iteration_ns += g.dur_ns[a];
    if (g.phase[a] != Phase::kNone) m.phase_ns += g.dur_ns[a];
  }
  return m;
}

double share(Ns part, Ns whole) {
  return whole == 0 ? 1.0 : static_cast<double>(part) / static_cast<double>(whole);
}

struct CoverageCase {
  const char* file;        // under traces/kineto
  Ns in_step_ns;           // 0 = no GPU activity in the file
  double iteration_share;  // of in_step_ns
  double phase_share;      // of the in-step time with an iteration
};

const std::vector<CoverageCase>& coverage_cases() {
  static const std::vector<CoverageCase> c = {
      {"hta_a100_ddp_nccl_rank0.json.gz", 165185838, 1.0, 1.0},
      {"hta_cpu_only_rank34.json.gz", 0, 1.0, 1.0},
      {"hta_mi250_minitoy_rocm6.2.json.gz", 149042, 1.0, 1.0},
      {"hta_no_distributed_info.json.gz", 0, 1.0, 1.0},
      {"hta_triton_culaunch.json.gz", 1760, 1.0, 1.0},
      {"hta_v100_float_epoch_ts.json.gz", 472454441, 1.0, 1.0},
      {"kineto_v100_resnet50_2021_legacy.json.gz", 603558000, 1.0, 1.0},
      {"tracelens_h100_qwen0.5b.json.gz", 31905473, 1.0, 1.0},
      {"tracelens_mi300x_qwen0.5b.json.gz", 29743938, 1.0, 1.0},
      {"tracelens_mi300x_resnet_ddp_rank0.json.gz", 68395667, 1.0, 1.0},
      {"hta_sampled_2rank/rank-0.json.gz", 607844000, 1.0, 1.0},
      {"hta_sampled_2rank/rank-1.json.gz", 667530000, 1.0, 1.0},
  };
  return c;
}

class RealStepCoverage : public ::testing::TestWithParam<size_t> {};

TEST_P(RealStepCoverage, InStepGpuTimeHasIterationAndPhase) {
  if (!chopper::test::have_shared_traces())
    GTEST_SKIP() << "../shared/traces is absent: real-trace coverage test skipped";
  const CoverageCase& c = coverage_cases()[GetParam()];
  SCOPED_TRACE(c.file);
  chopper::Run run = load_labelled(c.file);
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
  const RankTrace& t = run.ranks[0].trace;
  ASSERT_FALSE(t.steps.empty()) << "listed as a trace with ProfilerStep";
  const InStep m = measure_in_step(t);
  const double it = share(m.iteration_ns, m.in_step_ns), ph = share(m.phase_ns, m.iteration_ns);
  std::printf(
      "[ coverage ] %-42s gpu %12lld ns  in-step %12lld ns  before-first-step %12lld ns  "
      "iteration %.6f  phase %.6f\n",
      c.file, static_cast<long long>(m.total_ns), static_cast<long long>(m.in_step_ns),
      static_cast<long long>(m.before_first_ns), it, ph);
  EXPECT_EQ(m.in_step_ns, c.in_step_ns);
  EXPECT_EQ(m.labelled_outside_ns, 0) << "an iteration on GPU time outside the profiled steps";
  // GPU time that is not in-step lies before the first step's GPU span: work launched before
  // the profiler started, not a gap in the labelling.
  EXPECT_EQ(m.total_ns - m.in_step_ns, m.before_first_ns);
  EXPECT_GE(it, 0.99) << "less than 99% of the in-step GPU time has an iteration";
  EXPECT_NEAR(it, c.iteration_share, 5e-5);
  EXPECT_GE(ph, 0.99) << "less than 99% of the in-step GPU time with an iteration has a phase";
  EXPECT_NEAR(ph, c.phase_share, 5e-5);
}

std::string coverage_case_name(const ::testing::TestParamInfo<size_t>& param) {
  std::string n = coverage_cases()[param.param].file;
  n = n.substr(0, n.find(".json"));
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(RealHierarchy, RealStepCoverage,
                         ::testing::Range<size_t>(0, coverage_cases().size()), coverage_case_name);

// Every Kineto trace under ../shared/traces/kineto that has a ProfilerStep is in
// coverage_cases(): a trace added there later is not silently left out.
TEST(RealHierarchy, EveryTraceWithProfilerStepIsPinned) {
  if (!chopper::test::have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  const std::string root = chopper::test::shared_path("traces/kineto");
  std::set<std::string> pinned;
  for (const CoverageCase& c : coverage_cases()) pinned.insert(c.file);
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), root).generic_string();
    if (rel.find(".json") == std::string::npos) continue;
    chopper::Run run = load_run({e.path().string()});
    if (run.ranks.size() != 1 || !run.ranks[0].ok || run.ranks[0].trace.steps.empty()) continue;
    EXPECT_TRUE(pinned.count(rel)) << rel << " has ProfilerStep but no coverage case";
  }
}

}  // namespace
