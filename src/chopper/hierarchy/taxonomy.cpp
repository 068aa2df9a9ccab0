#include "chopper/hierarchy/taxonomy.hpp"

#include <fmt/format.h>
#include <re2/re2.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/text.hpp"

namespace chopper {

const std::vector<InferredRule>& inferred_rules() {
  static const std::vector<InferredRule> r = {
      {"gpu_step_span", RuleLevel::kIteration,
       "no launch in the trace (no runtime call, no host op): the step whose GPU-side span (its "
       "launched activities' first GPU start to last GPU end, on the same device) holds the "
       "activity's GPU interval"},
      {"repeated_annotation", RuleLevel::kIteration,
       "no iteration rule matches a host op of the rank: the outermost user annotations or "
       "nn.Module calls that repeat (and launch most of the GPU work) are the iterations, "
       "numbered from 0 in time order"},
      {"whole_trace", RuleLevel::kIteration,
       "no iteration rule matches and no annotation repeats (or the trace has no host ops): the "
       "whole trace is iteration 0"},
      {"fwdbwd_flow", RuleLevel::kPhase,
       "a fwdbwd flow ends at the op (backward) or starts at it (forward)"},
      {"autograd_sequence", RuleLevel::kPhase,
       "a cpu_op with a Sequence number outside any backward range: autograd recorded it in the "
       "forward pass"},
      {"autograd_thread", RuleLevel::kPhase,
       "launched on a thread that runs backward ops and launched no forward work in the same "
       "iteration: the autograd engine's thread (FSDP prefetch, DDP bucket copies, gradient "
       "accumulation)"},
      {"transfer_outside_phases", RuleLevel::kPhase,
       "a memcpy or memset launched outside forward, backward and optimizer ranges, or a "
       "host<->device copy whose only forward evidence is a Sequence number (batch upload with "
       "aten::to, loss readback)"},
      {"backward_seed", RuleLevel::kPhase,
       "compute launched after the iteration's last forward launch and before its first "
       "backward launch: loss.backward()'s gradient seed (aten::ones_like)"},
      {"forward_only_trace", RuleLevel::kPhase,
       "the rank has no backward and no optimizer work at all (inference, or a forward-only "
       "profile): what was launched inside an iteration is forward"},
      {"step_remainder", RuleLevel::kPhase,
       "in an iteration, and no range or other rule gave a phase: the step's other work "
       "(outside forward, backward and optimizer)"},
      {"forward_op", RuleLevel::kLayer,
       "a backward op takes the layer and operation of its forward op (fwdbwd flow, else the same "
       "Sequence number)"},
      {"checkpoint_recompute", RuleLevel::kOperation,
       "activation checkpointing: an op that torch.utils.checkpoint recomputes inside a backward "
       "op (below its recompute_fn frame) takes its own forward op's operation, layer and class, "
       "not the backward op's"},
      {"ddp_bucket_layer", RuleLevel::kLayer,
       "a backward collective with no layer in its names takes the layer of the last backward "
       "compute launched before it on its thread (the layer whose gradients filled the bucket)"},
      {"collective_type", RuleLevel::kOperation,
       "a communication kernel outside any operation annotation: the operation is the collective "
       "the framework called (record_param_comms args, else an nccl:* range), else the kernel's "
       "own type (all_gather, reduce_scatter, all_reduce, ...), \"collective (type unknown)\" "
       "when none says"},
      {"user_annotation", RuleLevel::kOperation,
       "the innermost user annotation that is not a structural range"},
      {"top_op", RuleLevel::kOperation,
       "no operation annotation: the outermost cpu_op below the innermost structural range (a "
       "layer, an FSDP/DDP hook, a phase range), so aten::linear and not aten::addmm"},
      {"leaf_op", RuleLevel::kOperation,
       "the launching op is itself a structural range with no cpu_op below it: its name"},
      {"kernel_kind", RuleLevel::kClass,
       "memcpy, memset and sync activities, and communication kernels (the collective called, "
       "else the kernel's type)"},
      {"default_elementwise", RuleLevel::kClass,
       "a compute kernel that no class rule matched: elementwise (vector) work"},
  };
  return r;
}

namespace {

NameRule make(std::string name, RuleLevel level, std::string pattern, std::string doc) {
  NameRule r;
  r.name = std::move(name);
  r.level = level;
  r.pattern = std::move(pattern);
  r.source = "builtin";
  r.doc = std::move(doc);
  return r;
}
NameRule phase_rule(std::string name, std::string pattern, Phase p, bool all_threads,
                    std::string doc) {
  NameRule r = make(std::move(name), RuleLevel::kPhase, std::move(pattern), std::move(doc));
  r.phase = p;
  r.all_threads = all_threads;
  return r;
}
NameRule op_rule(std::string name, std::string pattern, std::string label, OpClass c,
                 std::string doc) {
  NameRule r = make(std::move(name), RuleLevel::kOperation, std::move(pattern), std::move(doc));
  r.label = std::move(label);
  r.op_class = c;
  return r;
}
NameRule class_rule(std::string name, std::string pattern, OpClass c, bool kernel,
                    std::string doc) {
  NameRule r = make(std::move(name), RuleLevel::kClass, std::move(pattern), std::move(doc));
  r.op_class = c;
  r.kernel_target = kernel;
  r.ignore_case = true;
  return r;
}

// Over 120 lines: the table itself, one entry per rule.
std::vector<NameRule> builtin_rules() {
  using P = Phase;
  using C = OpClass;
  const auto I = RuleLevel::kIteration;
  const auto L = RuleLevel::kLayer;
  std::vector<NameRule> r;
  // ---- iteration
  r.push_back(make("profiler_step", I, R"(^ProfilerStep#(\d+)$)",
                   "torch.profiler's step ranges (profiler.step())"));
  r.push_back(make("chopper_iteration", I, R"(^Iteration<?(\d+)>?$)",
                   "Chopper's record_function(f\"Iteration<{step}>\") around train_step"));
  // ---- phase
  r.push_back(phase_rule("autograd_engine", R"(^autograd::engine::evaluate_function: )",
                         P::kBackward, false, "the autograd engine running a backward node"));
  r.push_back(phase_rule(
      "autograd_node",
      R"(Backward\d*$|^torch::autograd::AccumulateGrad$|^torch\.distributed\.ddp\.reducer::)",
      P::kBackward, false,
      "a backward node's own range (MmBackward0, ...), gradient accumulation, DDP's reducer"));
  r.push_back(phase_rule(
      "fsdp_backward",
      R"(^FSDP::(pre_backward|post_backward)|^FullyShardedDataParallel\._(pre|post)_backward)",
      P::kBackward, false, "FSDP1/FSDP2 backward hooks"));
  r.push_back(phase_rule("backward_marker", R"(^## backward ##$|^loss\.backward$|^l$)",
                         P::kBackward, true,
                         "a backward range on the main thread (Chopper's `l` = loss.backward): "
                         "applies to every thread during its span"));
  r.push_back(phase_rule("optimizer_range",
                         R"(^Optimizer\.(step|zero_grad)#|^## (optimizer|zero_grad) ##$)",
                         P::kOptimizer, false,
                         "torch.optim's Optimizer.step#… / Optimizer.zero_grad#… ranges, and "
                         "the `## optimizer ##` / `## zero_grad ##` ranges of TorchRec's and "
                         "HTA's training loops"));
  r.push_back(phase_rule("chopper_optimizer", R"(^opt_(step|zg|gc|lr)$)", P::kOptimizer, false,
                         "Chopper's optimizer annotations"));
  r.push_back(phase_rule("fused_optimizer_op", R"(^aten::_fused_(adam|adamw|sgd|adagrad)_?$)",
                         P::kOptimizer, false, "fused optimizer kernels' ops"));
  r.push_back(phase_rule("forward_marker", R"(^## forward ##$)", P::kForward, true,
                         "a forward range on the main thread: applies to every thread"));
  r.push_back(phase_rule("ddp_forward", R"(^DistributedDataParallel\.forward$)", P::kForward, false,
                         "DDP's forward range"));
  r.push_back(phase_rule(
      "fsdp_forward",
      R"(^FSDP::(root_pre_forward|pre_forward|post_forward)|^FullyShardedDataParallel\.forward$|^FullyShardedDataParallel\._pre_forward)",
      P::kForward, false, "FSDP1/FSDP2 forward hooks"));
  r.push_back(phase_rule("module_forward", R"(^nn\.Module: )", P::kForward, false,
                         "nn.Module ranges (profile with with_modules=True): module forwards"));
  r.push_back(phase_rule(
      "chopper_forward",
      R"(^(Layer<?\d+>?|attn_n|q_ip|k_ip|v_ip|qkv_t|qkv_re|attn_i|attn_fa|attn_or|attn_op|attn_ra|ffn_n|ffn_gp|ffn_gs|ffn_up|ffn_gu|ffn_dp|ffn_ra|mlp_\w+|ie|ln|lp|cel)$)",
      P::kForward, false, "Chopper's layer and operation annotations (forward pass)"));
  r.push_back(phase_rule(
      "torchrec_data_dist",
      R"(^## ((start_|wait_)?sparse_data_dist|sdd_\w+|input_dist\w*)( \d+)? ##$)", P::kDataDist,
      false,
      "TorchRec's pipelined input distribution: the next batch's sparse data (embedding input) "
      "all-to-alls and their waits, beside this batch's forward and backward"));
  r.push_back(phase_rule(
      "torchrec_pipeline",
      R"(^## (next_batch|load_batch|wait_for_batch|copy_batch_to_gpu|recmetrics_update|metrics:\w+)( \d+)? ##$)",
      P::kOther, false,
      "TorchRec train-pipeline stages outside forward, backward and optimizer: batch loading "
      "and copy to the GPU, metrics"));
  r.push_back(phase_rule("data_loading", R"(^dl$|DataLoader|^## (data|data_load\w*) ##$)",
                         P::kOther, false,
                         "data loading (Chopper's `dl`, torch DataLoader iteration, `## data_load "
                         "##` ranges)"));
  // ---- layer
  r.push_back(make("fsdp2_root_group", L, R"(^FSDP::[A-Za-z_]+$)",
                   "an FSDP2 range without a module: the root group, outside the blocks"));
  r.push_back(make("module_path", L,
                   R"((?:^|[\s.(])(?:layers|layer|h|blocks|block)\.(\d+)(?:$|[\s.)]))",
                   "a module path naming a block: FSDP2 groups `FSDP::pre_forward (layers.3)`, "
                   "torchtitan/HF `model.layers.3`, Megatron/NeMo `decoder.layers.3`, GPT-2 "
                   "`transformer.h.3`"));
  r.push_back(make("chopper_layer", L, R"(^Layer<?(\d+)>?$)", "Chopper's Layer<i> annotation"));
  r.push_back(make(
      "module_instance", L,
      R"(^nn\.Module: \w*(?:DecoderLayer|EncoderLayer|TransformerBlock|TransformerLayer|Block)_(\d+)$)",
      "an nn.Module range of a transformer block class: its instance number"));
  // ---- operation
  r.push_back(op_rule("chopper_gemm_op", R"(^(q_ip|k_ip|v_ip|attn_op|ffn_gp|ffn_up|ffn_dp|lp)$)",
                      "", C::kGemm, "Chopper's projection annotations"));
  r.push_back(op_rule("chopper_attention_op", R"(^attn_fa$)", "", C::kAttention,
                      "Chopper's attention annotation"));
  r.push_back(op_rule("chopper_norm_op", R"(^(attn_n|ffn_n|ln)$)", "", C::kNorm,
                      "Chopper's norm annotations"));
  r.push_back(
      op_rule("chopper_embedding_op", R"(^ie$)", "", C::kEmbedding, "Chopper's input embedding"));
  r.push_back(op_rule("chopper_loss_op", R"(^cel$)", "", C::kLoss, "Chopper's cross-entropy"));
  r.push_back(op_rule("chopper_vector_op",
                      R"(^(qkv_t|qkv_re|attn_i|attn_or|attn_ra|ffn_gs|ffn_gu|ffn_ra)$)", "",
                      C::kElementwise, "Chopper's vector (elementwise) annotations"));
  r.push_back(op_rule("chopper_optimizer_op", R"(^opt_(step|zg|gc|lr)$)", "", C::kOptimizer,
                      "Chopper's optimizer annotations"));
  r.push_back(op_rule("optimizer_step", R"(^Optimizer\.step#)", "opt_step", C::kOptimizer,
                      "torch.optim step, named as Chopper names it"));
  r.push_back(op_rule("optimizer_zero_grad", R"(^Optimizer\.zero_grad#)", "opt_zg", C::kOptimizer,
                      "torch.optim zero_grad, named as Chopper names it"));
  r.push_back(op_rule("fsdp_copy_out", R"(^FSDP::(all_gather_copy_out))", "$1", C::kNone,
                      "FSDP2 copy of all-gathered parameters out of the communication buffer"));
  r.push_back(op_rule(
      "structural_range",
      R"(^(FSDP::|FullyShardedDataParallel|DistributedDataParallel|ProfilerStep#|Iteration<?\d|Layer<?\d|## .* ##$|nn\.Module: |record_param_comms$|nccl:))",
      "-", C::kNone,
      "framework ranges that group work but are not operations (their kernels take the "
      "operation inside them or the collective)"));
  // ---- class: host-op names (root first from the operation's range), then kernel names
  r.push_back(class_rule("attention_op",
                         R"(attention|flash|sdpa|_efficient_attention|fmha|ScaledDotProduct)",
                         C::kAttention, false, "attention ops"));
  r.push_back(class_rule("conv_op", R"(conv|cudnn_convolution|miopen_convolution)", C::kConv, false,
                         "convolutions"));
  r.push_back(class_rule(
      "gemm_op",
      R"(^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addmv|mv|einsum|_grouped_mm|_addmm_activation)$|^(Mm|Addmm|Bmm|Baddbmm|Linear|Matmul|Mv)Backward)",
      C::kGemm, false, "matrix multiplies"));
  r.push_back(class_rule(
      "norm_op",
      R"(layer_norm|rms_norm|batch_norm|group_norm|instance_norm|LayerNorm|RmsNorm|BatchNorm|GroupNorm)",
      C::kNorm, false, "normalisations"));
  r.push_back(class_rule("embedding_op", R"(embedding)", C::kEmbedding, false, "embeddings"));
  r.push_back(class_rule("loss_op",
                         R"(cross_entropy|nll_loss|mse_loss|l1_loss|NllLoss|CrossEntropy|_loss$)",
                         C::kLoss, false, "losses"));
  r.push_back(class_rule("optimizer_op", R"(^aten::_fused_(adam|adamw|sgd|adagrad)_?$)",
                         C::kOptimizer, false, "fused optimizers"));
  r.push_back(class_rule("attention_kernel", R"(flash|fmha|attn|attention)", C::kAttention, true,
                         "attention kernels (FlashAttention, CK/aiter fmha, Triton attn)"));
  r.push_back(class_rule("conv_kernel",
                         R"(conv|implicit_gemm|winograd|cudnn|miopen|igemm|nchwTo|nhwcTo)",
                         C::kConv, true, "convolution kernels"));
  r.push_back(class_rule("gemm_kernel",
                         R"(gemm|xmma|cutlass|^Cijk_|nvjet|cublas|hipblas|wgmma|_mm_|matmul)",
                         C::kGemm, true, "GEMM kernels (cuBLAS, CUTLASS, hipBLASLt Cijk_, ...)"));
  r.push_back(class_rule(
      "norm_kernel",
      R"(layer_norm|layernorm|rms_norm|rmsnorm|batch_norm|batchnorm|group_norm|bn_fw|bn_bw)",
      C::kNorm, true, "normalisation kernels"));
  r.push_back(
      class_rule("embedding_kernel", R"(embedding)", C::kEmbedding, true, "embedding kernels"));
  r.push_back(class_rule("loss_kernel", R"(nll_loss|cross_entropy|LogSoftMax)", C::kLoss, true,
                         "loss kernels"));
  r.push_back(class_rule("optimizer_kernel", R"(adam|sgd|adagrad)", C::kOptimizer, true,
                         "optimizer kernels"));
  return r;
}

}  // namespace

namespace {

// The deepest nesting of groups a rule's pattern may have (docs/hierarchy.md). RE2 itself refuses
// deeper than 1,000 by default; 100,000 levels overflowed the stack of a recursive reader.
constexpr size_t kMaxRuleGroupDepth = 1000;

// Reads a pattern (RE2 syntax) for required_literals. `ok` turns false at anything it does not
// follow (the caller then uses no filter).
struct LiteralReader {
  std::string_view p;
  size_t i = 0;
  bool ok = true;
  size_t depth = 0;  // groups open at i: alternation() recurses once per level

  // Deepest nesting of groups in a pattern, counted without recursion ('(' outside a bracket
  // class and not escaped). A rule deeper than kMaxRuleGroupDepth is refused before any parser
  // (RE2's or this one, which recurses per level) sees it.
  static size_t group_depth(std::string_view p) {
    size_t d = 0, deepest = 0;
    for (size_t k = 0; k < p.size(); ++k) {
      const char c = p[k];
      if (c == '\\') {
        ++k;
      } else if (c == '[') {  // a class: '(' in it is a literal
        ++k;
        if (k < p.size() && p[k] == '^') ++k;
        if (k < p.size() && p[k] == ']') ++k;
        while (k < p.size() && p[k] != ']') k += p[k] == '\\' ? 2 : 1;
      } else if (c == '(') {
        deepest = std::max(deepest, ++d);
      } else if (c == ')' && d > 0) {
        --d;
      }
    }
    return deepest;
  }

  static size_t shortest(const std::vector<std::string>& v) {
    size_t m = v.empty() ? 0 : SIZE_MAX;
    for (const auto& x : v) m = std::min(m, x.size());
    return m;
  }

  // A quantifier at i, skipped: 0 none, 1 the atom occurs at least once (+, {n,...} with n >= 1),
  // 2 it may be absent (*, ?, {0,...}).
  int quantifier() {
    if (i >= p.size()) return 0;
    int q = 0;
    if (p[i] == '*' || p[i] == '?') {
      q = 2;
      ++i;
    } else if (p[i] == '+') {
      q = 1;
      ++i;
    } else if (p[i] == '{') {
      size_t j = i + 1, min = 0, digits = 0;
      while (j < p.size() && p[j] >= '0' && p[j] <= '9') {
        min = std::min<size_t>(min * 10 + static_cast<size_t>(p[j] - '0'), 1000);
        ++j;
        ++digits;
      }
      while (j < p.size() && (p[j] == ',' || (p[j] >= '0' && p[j] <= '9'))) ++j;
      if (digits == 0 || j >= p.size() || p[j] != '}') {
        ok = false;
        return 0;
      }
      i = j + 1;
      q = min >= 1 ? 1 : 2;
    } else {
      return 0;
    }
    if (i < p.size() && p[i] == '?') ++i;  // lazy
    return q;
  }

  // A bracket class at i ('['), skipped.
  void skip_class() {
    ++i;
    if (i < p.size() && p[i] == '^') ++i;
    if (i < p.size() && p[i] == ']') ++i;
    while (i < p.size() && p[i] != ']') i += p[i] == '\\' ? 2 : 1;
    if (i >= p.size()) {
      ok = false;
      return;
    }
    ++i;
  }

  // Alternatives up to ')' or the end: every match contains one of the result (empty: unknown).
  std::vector<std::string> alternation() {
    std::vector<std::string> all;
    bool unknown = false;
    for (;;) {
      std::vector<std::string> b = branch();
      if (!ok) return {};
      if (b.empty()) unknown = true;
      all.insert(all.end(), b.begin(), b.end());
      if (i < p.size() && p[i] == '|') {
        ++i;
        continue;
      }
      break;
    }
    if (unknown) return {};
    return all;
  }

  // One alternative: of its literal runs and required groups, the one whose shortest needle is
  // longest.
  std::vector<std::string> branch() {
    std::vector<std::string> best;
    std::string run;
    auto consider = [&](std::vector<std::string> c) {
      if (shortest(c) > shortest(best)) best = std::move(c);
    };
    auto flush = [&] {
      if (!run.empty()) consider({run});
      run.clear();
    };
    while (ok && i < p.size() && p[i] != '|' && p[i] != ')') {
      const char c = p[i];
      if (c == '(') {
        ++i;
        bool required = true;
        if (i < p.size() && p[i] == '?') {
          if (i + 1 < p.size() && p[i + 1] == ':') {
            i += 2;
          } else if (i + 1 < p.size() && (p[i + 1] == '=' || p[i + 1] == '!')) {
            i += 2;  // a lookahead matches no text of its own
            required = false;
          } else {
            ok = false;
            return {};
          }
        }
        if (++depth > kMaxRuleGroupDepth) {  // a bounded stack, whoever calls
          ok = false;
          return {};
        }
        std::vector<std::string> inner = alternation();
        --depth;
        if (!ok || i >= p.size() || p[i] != ')') {
          ok = false;
          return {};
        }
        ++i;
        flush();
        if (quantifier() != 2 && required && !inner.empty()) consider(std::move(inner));
        continue;
      }
      if (c == '[') {
        flush();
        skip_class();
        quantifier();
        continue;
      }
      if (c == '.' || c == '^' || c == '$') {
        flush();
        ++i;
        quantifier();
        continue;
      }
      char lit = c;
      if (c == '\\') {
        if (i + 1 >= p.size()) {
          ok = false;
          return {};
        }
        const char e = p[i + 1];
        i += 2;
        if (std::strchr("dDwWsSbBAz", e) != nullptr) {  // a class, a boundary, an anchor
          flush();
          quantifier();
          continue;
        }
        const bool alnum =
            (e >= '0' && e <= '9') || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z');
        if (alnum && std::strchr("fnrtva", e) == nullptr) {
          // Octal, hex, \C, \pN, \Q...\E, ...: not followed.
          ok = false;
          return {};
        }
        lit = e == 'f'   ? '\f'
              : e == 'n' ? '\n'
              : e == 'r' ? '\r'
              : e == 't' ? '\t'
              : e == 'v' ? '\v'
              : e == 'a' ? '\a'
                         : e;
      } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == '}' || c == ']') {
        ok = false;  // a quantifier without an atom, or a stray bracket: not followed
        return {};
      } else {
        ++i;
      }
      const int q = quantifier();
      if (q == 2) {
        flush();
      } else {
        run.push_back(lit);
        if (q == 1) flush();  // what follows may be another repeat of it
      }
    }
    flush();
    return best;
  }
};

bool contains_folded(std::string_view s, std::string_view lower_needle) {
  const auto fold = [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  };
  return std::search(s.begin(), s.end(), lower_needle.begin(), lower_needle.end(),
                     [&](char a, char b) { return fold(a) == b; }) != s.end();
}

}  // namespace

std::vector<std::string> required_literals(std::string_view pattern) {
  LiteralReader r{pattern};
  std::vector<std::string> v = r.alternation();
  if (!r.ok || r.i != pattern.size() || LiteralReader::shortest(v) < 2) return {};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

bool NameRule::may_match(std::string_view s) const {
  if (needles.empty()) return true;
  for (const std::string& n : needles)
    if (ignore_case ? contains_folded(s, n) : s.find(n) != std::string_view::npos) return true;
  return false;
}

bool NameRule::search(std::string_view s) const {
  return re->Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), re2::RE2::UNANCHORED, nullptr,
                   0);
}

bool NameRule::search(std::string_view s, std::string_view* groups, int n) const {
  re2::StringPiece sp[10];
  std::vector<re2::StringPiece> big;
  re2::StringPiece* g = sp;
  if (n > 10) {
    big.resize(static_cast<size_t>(n));
    g = big.data();
  }
  // A non-null text, so that a group that took no part has a null data().
  const char* data = s.data() != nullptr ? s.data() : "";
  if (!re->Match(re2::StringPiece(data, s.size()), 0, s.size(), re2::RE2::UNANCHORED, g, n))
    return false;
  for (int k = 0; k < n; ++k) groups[k] = std::string_view(g[k].data(), g[k].size());
  return true;
}

std::string format_label(std::string_view label, std::string_view subject,
                         const std::vector<std::string_view>& groups) {
  std::string out;
  const std::string_view whole = groups.empty() ? std::string_view() : groups[0];
  for (size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    if (c != '$' || i + 1 >= label.size()) {
      out.push_back(c);
      continue;
    }
    const char d = label[i + 1];
    auto digit = [](char x) { return x >= '0' && x <= '9'; };
    if (d == '$') {
      out.push_back('$');
      ++i;
    } else if (d == '&') {
      out.append(whole);
      ++i;
    } else if (d == '`' && whole.data() != nullptr) {
      out.append(subject.substr(0, static_cast<size_t>(whole.data() - subject.data())));
      ++i;
    } else if (d == '\'' && whole.data() != nullptr) {
      out.append(subject.substr(static_cast<size_t>(whole.data() - subject.data()) + whole.size()));
      ++i;
    } else if (digit(d)) {
      // Two digits when they name a group, else one (ECMAScript).
      size_t n = static_cast<size_t>(d - '0'), used = 1;
      if (i + 2 < label.size() && digit(label[i + 2])) {
        const size_t n2 = n * 10 + static_cast<size_t>(label[i + 2] - '0');
        if (n2 >= 1 && n2 < groups.size()) {
          n = n2;
          used = 2;
        }
      }
      if (n >= 1 && n < groups.size()) {
        out.append(groups[n]);
        i += used;
      } else {
        out.push_back('$');  // not a group: the text stays as written
      }
    } else {
      out.push_back('$');
    }
  }
  return out;
}

void compile_rule(NameRule& rule) {
  if (const size_t d = LiteralReader::group_depth(rule.pattern); d > kMaxRuleGroupDepth)
    throw Error(fmt::format("{}: rule '{}': groups nested {} deep, above the limit of {}",
                            rule.source, rule.name, d, kMaxRuleGroupDepth));
  // Bytes, not UTF-8 characters: names are matched as they are stored, '.' is one byte, and only
  // ASCII letters fold under ignore_case (as the filter folds them).
  re2::RE2::Options opt;
  opt.set_encoding(re2::RE2::Options::EncodingLatin1);
  opt.set_case_sensitive(!rule.ignore_case);
  opt.set_log_errors(false);
  auto re =
      std::make_shared<re2::RE2>(re2::StringPiece(rule.pattern.data(), rule.pattern.size()), opt);
  if (!re->ok()) {
    // What std::regex (ECMAScript) took and RE2 does not: say so.
    const std::string& p = rule.pattern;
    bool backref = false;
    for (size_t i = 0; i + 1 < p.size(); ++i) {
      if (p[i] != '\\') continue;
      backref |= p[i + 1] >= '1' && p[i + 1] <= '9';
      ++i;
    }
    const bool lookaround =
        p.find("(?=") != std::string::npos || p.find("(?!") != std::string::npos ||
        p.find("(?<=") != std::string::npos || p.find("(?<!") != std::string::npos;
    const char* hint = backref || lookaround
                           ? " (rules use RE2 syntax, which has no backreferences and no "
                             "lookahead or lookbehind: docs/hierarchy.md)"
                           : "";
    throw Error(fmt::format("{}: rule '{}': bad regex '{}': {}{}", rule.source, rule.name,
                            rule.pattern, re->error(), hint));
  }
  rule.captures = re->NumberOfCapturingGroups();
  rule.re = std::move(re);
  rule.needles = required_literals(rule.pattern);
  if (rule.ignore_case) {
    for (std::string& n : rule.needles) n = ascii_lower(n);
    // Latin-1 folding pairs non-ASCII bytes the filter does not fold: no filter then.
    const bool non_ascii = std::any_of(rule.needles.begin(), rule.needles.end(), [](const auto& n) {
      return std::any_of(n.begin(), n.end(), [](char c) { return (c & 0x80) != 0; });
    });
    if (non_ascii) rule.needles.clear();
  }
  if (rule.level == RuleLevel::kIteration && rule.captures < 1 && !rule.occurrence_numbers)
    throw Error(
        fmt::format("{}: rule '{}': an iteration rule needs a capture group for the "
                    "iteration number",
                    rule.source, rule.name));
}

void Taxonomy::add_iteration_regex(const std::string& pattern) {
  NameRule r = make(std::string(kIterationRegexRule), RuleLevel::kIteration, pattern,
                    "--iteration-regex: every host op whose name matches is an iteration");
  r.source = "--iteration-regex";
  r.occurrence_numbers = true;
  compile_rule(r);
  rules_.erase(std::remove_if(rules_.begin(), rules_.end(),
                              [](const NameRule& e) { return e.name == kIterationRegexRule; }),
               rules_.end());
  auto pos = std::find_if(rules_.begin(), rules_.end(),
                          [](const NameRule& e) { return e.level == RuleLevel::kIteration; });
  rules_.insert(pos, std::move(r));
}

Taxonomy Taxonomy::builtin() {
  Taxonomy t;
  t.rules_ = builtin_rules();
  for (auto& r : t.rules_) compile_rule(r);
  return t;
}

std::vector<std::string> Taxonomy::label_rule_names() const {
  std::vector<std::string> n;
  n.reserve(rules_.size() + inferred_rules().size());
  for (const auto& r : rules_) n.push_back(r.name);
  for (const auto& r : inferred_rules()) n.emplace_back(r.name);
  return n;
}

uint16_t Taxonomy::inferred_index(std::string_view name) const {
  const auto& inf = inferred_rules();
  for (size_t i = 0; i < inf.size(); ++i)
    if (inf[i].name == name) return static_cast<uint16_t>(rules_.size() + i);
  throw Error(fmt::format("internal: no inferred rule '{}'", name));
}

namespace {

std::string where(const std::string& source, const toml::node& n) {
  return fmt::format("{}:{}", source, n.source().begin.line);
}

// Applies the [[rule]] entries of one parsed file to `rules`.
void apply_user_rules(const toml::table& tbl, const std::string& source,
                      std::vector<NameRule>& rules) {
  for (const auto& [key, node] : tbl)
    if (key.str() != "rule")
      throw Error(fmt::format("{}: unknown key '{}' (expected [[rule]] tables)",
                              where(source, node), key.str()));
  const toml::array* arr = tbl["rule"].as_array();
  if (arr == nullptr) {
    if (tbl.contains("rule"))
      throw Error(fmt::format("{}: 'rule' must be an array of tables ([[rule]])",
                              where(source, *tbl.get("rule"))));
    return;
  }
  for (const toml::node& n : *arr) {
    const toml::table* t = n.as_table();
    const std::string at = where(source, n);
    if (t == nullptr) throw Error(at + ": each [[rule]] must be a table");
    static const char* const kKeys[] = {"name",   "level",       "match", "ignore_case",
                                        "phase",  "all_threads", "label", "class",
                                        "target", "enabled",     "doc"};
    for (const auto& [k, v] : *t)
      if (std::find(std::begin(kKeys), std::end(kKeys), k.str()) == std::end(kKeys))
        throw Error(fmt::format("{}: unknown key '{}' in [[rule]]", where(source, v), k.str()));
    auto str = [&](const char* k) -> std::optional<std::string> {
      const toml::node* v = t->get(k);
      if (v == nullptr) return std::nullopt;
      if (!v->is_string())
        throw Error(fmt::format("{}: '{}' must be a string", where(source, *v), k));
      return std::string(*v->value<std::string_view>());
    };
    auto boolean = [&](const char* k, bool def) {
      const toml::node* v = t->get(k);
      if (v == nullptr) return def;
      if (!v->is_boolean())
        throw Error(fmt::format("{}: '{}' must be true or false", where(source, *v), k));
      return *v->value<bool>();
    };
    const auto name = str("name");
    if (!name || name->empty()) throw Error(at + ": a [[rule]] needs a name");
    for (const InferredRule& inf : inferred_rules())
      if (inf.name == *name)
        throw Error(
            fmt::format("{}: '{}' is the name of an inferred rule; choose another", at, *name));
    auto existing = std::find_if(rules.begin(), rules.end(),
                                 [&](const NameRule& r) { return r.name == *name; });
    if (!boolean("enabled", true)) {
      if (existing == rules.end())
        throw Error(fmt::format("{}: rule '{}' is disabled but no such rule exists", at, *name));
      rules.erase(existing);
      continue;
    }
    NameRule r;
    r.name = *name;
    r.source = at;
    const auto level = str("level");
    if (!level) throw Error(fmt::format("{}: rule '{}' needs a level", at, *name));
    if (!parse_enum(*level, r.level))
      throw Error(fmt::format(
          "{}: rule '{}': level '{}' is not iteration, phase, layer, operation or class", at, *name,
          *level));
    const auto match = str("match");
    if (!match || match->empty())
      throw Error(fmt::format("{}: rule '{}' needs a match regex", at, *name));
    r.pattern = *match;
    r.ignore_case = boolean("ignore_case", false);
    r.doc = str("doc").value_or("");
    if (r.level == RuleLevel::kPhase) {
      const auto ph = str("phase");
      if (!ph || !parse_phase(*ph, r.phase))
        throw Error(fmt::format(
            "{}: phase rule '{}' needs phase = forward, backward, optimizer, other or data_dist",
            at, *name));
      r.all_threads = boolean("all_threads", false);
    }
    if (r.level == RuleLevel::kOperation) r.label = str("label").value_or("");
    if (const auto c = str("class")) {
      if (!parse_op_class(*c, r.op_class))
        throw Error(fmt::format("{}: rule '{}': unknown class '{}'", at, *name, *c));
    } else if (r.level == RuleLevel::kClass) {
      throw Error(fmt::format("{}: class rule '{}' needs a class", at, *name));
    }
    if (r.level == RuleLevel::kClass) {
      const std::string target = str("target").value_or("host");
      if (target != "host" && target != "kernel")
        throw Error(fmt::format("{}: rule '{}': target must be host or kernel", at, *name));
      r.kernel_target = target == "kernel";
    }
    compile_rule(r);
    if (existing != rules.end()) {
      *existing = std::move(r);
    } else {
      // Before the first built-in rule of its level (and, for class rules, of its target), so
      // after the user rules already added: a file's rules keep their order.
      auto pos = std::find_if(rules.begin(), rules.end(), [&](const NameRule& e) {
        return e.level == r.level && e.source == "builtin" &&
               (r.level != RuleLevel::kClass || e.kernel_target == r.kernel_target);
      });
      rules.insert(pos, std::move(r));
    }
  }
}

}  // namespace

void Taxonomy::load_toml(const std::string& path) {
  // A regular file of at most 1 MiB, opened without blocking (a FIFO, /dev/zero: an error).
  load_toml_text(read_text_file(path, kMaxConfigFileBytes, "a rules file"), path);
}

void Taxonomy::load_toml_text(std::string_view text, const std::string& source) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}:{}: {}", source, e.source().begin.line, e.source().begin.column,
                            e.description()));
  }
  apply_user_rules(tbl, source, rules_);
}

}  // namespace chopper
