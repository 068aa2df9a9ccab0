// The labelling rules on a hand-written trace (tests/data/labels_fixture.json): one step, a
// forward on the main thread, a backward on the autograd thread, a DDP-style all-reduce, an
// optimizer step and an orphan kernel. Every expected label follows from the rule named beside
// it (docs/hierarchy.md); the fixture was written so that each kernel exercises one rule.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

struct Want {
  int64_t correlation;
  int64_t iteration;  // kNoId = none
  const char* phase;
  const char* phase_rule;
  int32_t layer;
  const char* operation;
  const char* operation_rule;
  const char* op_class;
  const char* op_class_rule;
};

std::string rule(const RankTrace& t, uint16_t r) {
  return r == kNoRule ? std::string() : t.label_rules[r];
}

size_t by_correlation(const RankTrace& t, int64_t c) {
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.gpu.correlation[i] == c) return i;
  ADD_FAILURE() << "no activity with correlation " << c;
  return 0;
}

void expect(const RankTrace& t, const Want& w) {
  SCOPED_TRACE("correlation " + std::to_string(w.correlation));
  const size_t i = by_correlation(t, w.correlation);
  EXPECT_EQ(t.gpu.iteration[i], w.iteration);
  EXPECT_EQ(phase_name(t.gpu.phase[i]), w.phase);
  EXPECT_EQ(rule(t, t.gpu.phase_rule[i]), w.phase_rule);
  EXPECT_EQ(t.gpu.layer[i], w.layer);
  EXPECT_EQ(t.strings.str(t.gpu.operation[i]), w.operation);
  EXPECT_EQ(rule(t, t.gpu.operation_rule[i]), w.operation_rule);
  EXPECT_EQ(op_class_name(t.gpu.op_class[i]), w.op_class);
  EXPECT_EQ(rule(t, t.gpu.op_class_rule[i]), w.op_class_rule);
}

RankTrace fixture(const Taxonomy& tx) {
  RankTrace t = test::parse(test::read_file(test::data_path("labels_fixture.json")));
  label_trace(tx, t);
  return t;
}

}  // namespace

TEST(HierarchyRules, BuiltinTaxonomyOnTheFixture) {
  const RankTrace t = fixture(Taxonomy::builtin());
  ASSERT_EQ(t.gpu.size(), 8u);
  // aten::linear carries a Sequence number (autograd recorded it: forward); the operation is the
  // outermost op (aten::linear, not the launching aten::addmm), a GEMM by its name.
  expect(t,
         {1, 3, "forward", "autograd_sequence", -1, "aten::linear", "top_op", "gemm", "gemm_op"});
  // Inside the user annotation my_op: the operation is the annotation; no class rule matches
  // my_op, aten::mul or the kernel name, so elementwise by default.
  expect(t, {2, 3, "forward", "autograd_sequence", -1, "my_op", "user_annotation", "elementwise",
             "default_elementwise"});
  // A host-to-device copy whose only forward evidence is aten::to's Sequence number: a transfer.
  expect(t, {3, 3, "other", "transfer_outside_phases", -1, "aten::to", "top_op", "memcpy",
             "kernel_kind"});
  // evaluate_function > AddmmBackward0 with Sequence number 10 = aten::linear's: backward (the
  // innermost backward range names the rule), with the operation and class of its forward op.
  expect(t,
         {4, 3, "backward", "autograd_node", -1, "aten::linear", "forward_op", "gemm", "gemm_op"});
  // A bare op on the autograd thread (which launched backward and no forward work).
  expect(t, {5, 3, "backward", "autograd_thread", -1, "aten::copy_", "top_op", "elementwise",
             "default_elementwise"});
  // The all-reduce: autograd thread; record_param_comms is structural, so the operation is the
  // collective type.
  expect(t, {6, 3, "backward", "autograd_thread", -1, "all_reduce", "collective_type", "all_reduce",
             "kernel_kind"});
  // Optimizer.step#…: optimizer phase, operation opt_step (Chopper's name), class optimizer.
  expect(t, {7, 3, "optimizer", "optimizer_range", -1, "opt_step", "optimizer_step", "optimizer",
             "optimizer_step"});
  // No runtime call: no launch time, so no iteration (its GPU start says nothing), and no phase.
  expect(t, {99, kNoId, "", "", -1, "", "", "elementwise", "default_elementwise"});
}

TEST(HierarchyRules, UserTomlAddsOverridesAndDisablesRules) {
  Taxonomy tx = Taxonomy::builtin();
  tx.load_toml_text(R"(
[[rule]]
name = "blocks"
level = "layer"
match = '^block_(\d+)$'
doc = "my model's blocks"

[[rule]]
name = "optimizer_step"            # replaces the built-in rule of that name
level = "operation"
match = '^Optimizer\.step#'
label = "optimizer.step"
class = "optimizer"

[[rule]]
name = "autograd_node"
enabled = false
)",
                    "rules.toml");
  const RankTrace t = fixture(tx);
  // block_4 encloses my_op: layer 4 by the user rule.
  const size_t k2 = by_correlation(t, 2);
  EXPECT_EQ(t.gpu.layer[k2], 4);
  EXPECT_EQ(rule(t, t.gpu.layer_rule[k2]), "blocks");
  EXPECT_EQ(t.strings.str(t.gpu.operation[k2]), "my_op");
  // The replaced rule keeps its name and gives the new label.
  expect(t, {7, 3, "optimizer", "optimizer_range", -1, "optimizer.step", "optimizer_step",
             "optimizer", "optimizer_step"});
  // Without autograd_node, the enclosing evaluate_function range says backward.
  expect(t, {4, 3, "backward", "autograd_engine", -1, "aten::linear", "forward_op", "gemm",
             "gemm_op"});
  for (const NameRule& r : tx.rules()) EXPECT_NE(r.name, "autograd_node");
  // A new rule goes before the built-in rules of its level.
  auto pos = [&](const std::string& n) {
    for (size_t i = 0; i < tx.rules().size(); ++i)
      if (tx.rules()[i].name == n) return i;
    return tx.rules().size();
  };
  EXPECT_LT(pos("blocks"), pos("module_path"));
  EXPECT_EQ(tx.rules()[pos("blocks")].source, "rules.toml:2");
}

TEST(HierarchyRules, BadRulesFilesNameTheFileAndLine) {
  auto error_of = [](const std::string& text) {
    Taxonomy tx = Taxonomy::builtin();
    try {
      tx.load_toml_text(text, "bad.toml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("[[rule]]\nname = \"x\"\nlevel = \"layers\"\nmatch = 'a'\n"),
            "bad.toml:1: rule 'x': level 'layers' is not iteration, phase, layer, operation or "
            "class");
  EXPECT_NE(error_of("[[rule]]\nname = \"x\"\nlevel = \"layer\"\nmatch = '(a'\n")
                .find("bad.toml:1: rule 'x': bad regex '(a'"),
            std::string::npos);
  EXPECT_EQ(error_of("\n[[rule]]\nname = \"x\"\nlevel = \"iteration\"\nmatch = 'step'\n"),
            "bad.toml:2: rule 'x': an iteration rule needs a capture group for the iteration "
            "number");
  EXPECT_EQ(
      error_of("[[rule]]\nname = \"x\"\nlevel = \"phase\"\nmatch = 'a'\nphase = \"fwd\"\n"),
      "bad.toml:1: phase rule 'x' needs phase = forward, backward, optimizer, other or data_dist");
  EXPECT_EQ(error_of("[[rule]]\nname = \"nope\"\nenabled = false\n"),
            "bad.toml:1: rule 'nope' is disabled but no such rule exists");
  EXPECT_EQ(error_of("[[rule]]\nname = \"x\"\nlevel = \"layer\"\nmatch = 'a'\ncolour = 1\n"),
            "bad.toml:5: unknown key 'colour' in [[rule]]");
  EXPECT_NE(error_of("[[rule]\n").find("bad.toml:1:"), std::string::npos);
  // A file that does not exist.
  Taxonomy tx = Taxonomy::builtin();
  EXPECT_THROW(tx.load_toml("/nonexistent/rules.toml"), Error);
}

// The labels do not depend on how many ranks are labelled at once.
TEST(HierarchyRules, LabelRunMatchesLabelTrace) {
  const Taxonomy tx = Taxonomy::builtin();
  const RankTrace one = fixture(tx);
  chopper::Run run;
  for (int r = 0; r < 3; ++r) {
    RankSlot s;
    s.ok = true;
    s.rank = r;
    s.trace = test::parse(test::read_file(test::data_path("labels_fixture.json")));
    run.ranks.push_back(std::move(s));
  }
  label_run(tx, run, 3);
  for (const RankSlot& s : run.ranks) {
    EXPECT_EQ(s.trace.gpu.phase, one.gpu.phase);
    EXPECT_EQ(s.trace.gpu.operation_rule, one.gpu.operation_rule);
    EXPECT_EQ(s.trace.gpu.iteration, one.gpu.iteration);
  }
}

namespace {

std::string iteration_rule(const RankTrace& t, size_t i) {
  return rule(t, t.gpu.iteration_rule[i]);
}

size_t by_name(const RankTrace& t, std::string_view name) {
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.strings.str(t.gpu.name[i]) == name) return i;
  ADD_FAILURE() << "no activity named " << name;
  return 0;
}

RankTrace labelled(const std::string& events) {
  RankTrace t = test::parse(test::trace_of(events));
  label_trace(Taxonomy::builtin(), t);
  return t;
}

}  // namespace

// GPU activities with no launch in the trace (no runtime call, no host op): an activity that ran
// on the GPU entirely inside the GPU-side span of a step (its launched activities' first GPU start
// to last GPU end, on the same device) belongs to that step (`gpu_step_span`). Two steps on the
// host, [0, 100) and [100, 200) us; the GPU runs behind: step 3's kernels at [150, 170) and
// [200, 220), step 4's at [230, 240).
TEST(HierarchyRules, GpuStepSpanFallback) {
  const RankTrace t = labelled(R"J(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {"External id": 1, "Sequence number": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"correlation": 1, "External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm_a", "pid": 0, "tid": 7, "ts": 150, "dur": 20, "args": {"correlation": 1, "External id": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 50, "dur": 20, "args": {"External id": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 52, "dur": 3, "args": {"correlation": 2, "External id": 2}},
    {"ph": "X", "cat": "kernel", "name": "add_b", "pid": 0, "tid": 7, "ts": 200, "dur": 20, "args": {"correlation": 2, "External id": 2, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step", "pid": 1, "tid": 1, "ts": 110, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_foreach_add_", "pid": 1, "tid": 1, "ts": 112, "dur": 40, "args": {"External id": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 113, "dur": 3, "args": {"correlation": 3, "External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "sgd_c", "pid": 0, "tid": 7, "ts": 230, "dur": 10, "args": {"correlation": 3, "External id": 3, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "orphan_mid", "pid": 0, "tid": 8, "ts": 175, "dur": 10, "args": {"correlation": 90, "device": 0, "stream": 8}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 8, "ts": 232, "dur": 3, "args": {"correlation": 91, "device": 0, "stream": 8, "bytes": 64}},
    {"ph": "X", "cat": "kernel", "name": "orphan_before", "pid": 0, "tid": 7, "ts": 140, "dur": 5, "args": {"correlation": 92, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "orphan_straddle", "pid": 0, "tid": 8, "ts": 215, "dur": 20, "args": {"correlation": 93, "device": 0, "stream": 8}},
    {"ph": "X", "cat": "kernel", "name": "orphan_other_gpu", "pid": 1, "tid": 7, "ts": 175, "dur": 10, "args": {"correlation": 94, "device": 1, "stream": 7}})J");
  // Launched kernels: the step their launch lies in (profiler_step).
  EXPECT_EQ(t.gpu.iteration[by_name(t, "gemm_a")], 3);
  EXPECT_EQ(iteration_rule(t, by_name(t, "gemm_a")), "profiler_step");
  EXPECT_EQ(t.gpu.iteration[by_name(t, "sgd_c")], 4);
  // [175, 185) lies inside step 3's GPU span [150, 220) (another stream of the same GPU): step 3.
  // Nothing names its phase (no host op); the rank trains (an optimizer step), so not
  // forward_only_trace: the step's other work (step_remainder).
  const size_t mid = by_name(t, "orphan_mid");
  EXPECT_EQ(t.gpu.iteration[mid], 3);
  EXPECT_EQ(iteration_rule(t, mid), "gpu_step_span");
  EXPECT_EQ(phase_name(t.gpu.phase[mid]), "other");
  EXPECT_EQ(rule(t, t.gpu.phase_rule[mid]), "step_remainder");
  // [232, 235) inside step 4's span [230, 240): step 4; a copy outside every phase range is a
  // transfer (transfer_outside_phases comes before the remainder).
  const size_t copy = by_name(t, "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(t.gpu.iteration[copy], 4);
  EXPECT_EQ(iteration_rule(t, copy), "gpu_step_span");
  EXPECT_EQ(rule(t, t.gpu.phase_rule[copy]), "transfer_outside_phases");
  // Before the first step's GPU span (launched before the profiler started): no iteration.
  EXPECT_EQ(t.gpu.iteration[by_name(t, "orphan_before")], kNoId);
  EXPECT_EQ(phase_name(t.gpu.phase[by_name(t, "orphan_before")]), "");
  // [215, 235) runs past step 3's span and starts before step 4's: in neither.
  EXPECT_EQ(t.gpu.iteration[by_name(t, "orphan_straddle")], kNoId);
  // Device 1 ran nothing launched in a step: no span there.
  EXPECT_EQ(t.gpu.iteration[by_name(t, "orphan_other_gpu")], kNoId);
  EXPECT_EQ(t.diagnostics.count("gpu_activity_in_step_span_without_launch"), 2u);
  // aten::add (no Sequence number, no range) launched in step 3 after its last forward launch and
  // with no backward after it: still the step's work, so `other` (step_remainder).
  EXPECT_EQ(rule(t, t.gpu.phase_rule[by_name(t, "add_b")]), "step_remainder");
}

// TorchRec's TrainPipelineSparseDist runs the next batch's input distribution between the
// current batch's forward and backward, outside `## forward ##` and `## backward ##`: that input
// distribution is a phase of its own (`data_dist`, rule `torchrec_data_dist`), the batch loading
// and copy are the step's other work (`torchrec_pipeline`), and `## zero_grad ##` is the
// optimizer's.
TEST(HierarchyRules, TorchRecPipelineStages) {
  const RankTrace t = labelled(R"J(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#9", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "## zero_grad ##", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::zero_", "pid": 1, "tid": 1, "ts": 12, "dur": 10, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 13, "dur": 3, "args": {"correlation": 1, "External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "fill_zero", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"correlation": 1, "External id": 1, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "## wait_for_batch ##", "pid": 1, "tid": 1, "ts": 40, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::record_stream", "pid": 1, "tid": 1, "ts": 42, "dur": 10, "args": {"External id": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 43, "dur": 3, "args": {"correlation": 2, "External id": 2}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 9, "ts": 50, "dur": 5, "args": {"correlation": 2, "External id": 2, "device": 0, "stream": 9, "bytes": 64}},
    {"ph": "X", "cat": "user_annotation", "name": "## start_sparse_data_dist 10 ##", "pid": 1, "tid": 1, "ts": 70, "dur": 60},
    {"ph": "X", "cat": "user_annotation", "name": "## all2all_data:lengths ##", "pid": 1, "tid": 1, "ts": 75, "dur": 40},
    {"ph": "X", "cat": "cpu_op", "name": "c10d::alltoall_base_", "pid": 1, "tid": 1, "ts": 80, "dur": 30, "args": {"External id": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 82, "dur": 3, "args": {"correlation": 3, "External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 11, "ts": 90, "dur": 40, "args": {"correlation": 3, "External id": 3, "device": 0, "stream": 11}},
    {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 1, "tid": 1, "ts": 140, "dur": 200},
    {"ph": "X", "cat": "cpu_op", "name": "aten::embedding_bag", "pid": 1, "tid": 1, "ts": 150, "dur": 30, "args": {"External id": 4, "Sequence number": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 152, "dur": 3, "args": {"correlation": 4, "External id": 4}},
    {"ph": "X", "cat": "kernel", "name": "embedding_bag_kernel", "pid": 0, "tid": 7, "ts": 160, "dur": 30, "args": {"correlation": 4, "External id": 4, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "## wait_sparse_data_dist 10 ##", "pid": 1, "tid": 1, "ts": 350, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "fbgemm::permute_2D_sparse_data", "pid": 1, "tid": 1, "ts": 355, "dur": 30, "args": {"External id": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 357, "dur": 3, "args": {"correlation": 5, "External id": 5}},
    {"ph": "X", "cat": "kernel", "name": "permute_2D_lengths_kernel", "pid": 0, "tid": 11, "ts": 365, "dur": 10, "args": {"correlation": 5, "External id": 5, "device": 0, "stream": 11}},
    {"ph": "X", "cat": "user_annotation", "name": "## backward ##", "pid": 1, "tid": 1, "ts": 410, "dur": 300},
    {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: EmbeddingBagBackward0", "pid": 1, "tid": 1, "ts": 420, "dur": 40, "args": {"External id": 6, "Sequence number": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 422, "dur": 3, "args": {"correlation": 6, "External id": 6}},
    {"ph": "X", "cat": "kernel", "name": "embedding_backward_kernel", "pid": 0, "tid": 7, "ts": 430, "dur": 30, "args": {"correlation": 6, "External id": 6, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "user_annotation", "name": "## optimizer ##", "pid": 1, "tid": 1, "ts": 720, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_foreach_add_", "pid": 1, "tid": 1, "ts": 722, "dur": 30, "args": {"External id": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 723, "dur": 3, "args": {"correlation": 7, "External id": 7}},
    {"ph": "X", "cat": "kernel", "name": "multi_tensor_apply_kernel", "pid": 0, "tid": 7, "ts": 730, "dur": 10, "args": {"correlation": 7, "External id": 7, "device": 0, "stream": 7}})J");
  auto expect_phase = [&](std::string_view kernel, const char* phase, const char* phase_rule) {
    SCOPED_TRACE(std::string(kernel));
    const size_t i = by_name(t, kernel);
    EXPECT_EQ(t.gpu.iteration[i], 9);
    EXPECT_EQ(phase_name(t.gpu.phase[i]), phase);
    EXPECT_EQ(rule(t, t.gpu.phase_rule[i]), phase_rule);
  };
  // optimizer.zero_grad() in the pipeline's own range.
  expect_phase("fill_zero", "optimizer", "optimizer_range");
  // The batch copy the pipeline waits for: its stage range (before transfer_outside_phases).
  expect_phase("Memcpy HtoD (Pinned -> Device)", "other", "torchrec_pipeline");
  // The next batch's input all-to-all, started before the forward: not the forward's work.
  expect_phase("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "data_dist",
               "torchrec_data_dist");
  // The model's own work keeps its phases.
  expect_phase("embedding_bag_kernel", "forward", "forward_marker");
  // The input dist's second half, between forward and backward.
  expect_phase("permute_2D_lengths_kernel", "data_dist", "torchrec_data_dist");
  expect_phase("embedding_backward_kernel", "backward", "autograd_engine");
  expect_phase("multi_tensor_apply_kernel", "optimizer", "optimizer_range");
}
