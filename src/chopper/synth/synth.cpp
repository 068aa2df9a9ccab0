// The ground-truth generator. Design:
//   1. A program: the list of host actions one training step performs (annotations, ops that
//      launch kernels, collectives, waits), identical on every rank, built from the model preset.
//   2. Pass 1 runs all ranks in lockstep over the program, keeping only scalar state (and each
//      rank's collective intervals), to find when every collective ends (the last rank to arrive
//      starts it); with comm interference each iteration in rounds until those intervals settle.
//   3. Pass 2 runs each rank alone (in parallel) with those end times and writes its files. Both
//      passes share one step function and a counter-based RNG, so they agree to the nanosecond.
// Every duration is built up effect by effect (nominal roofline time, matrix-unit loss, straggler
// clock cap, DVFS clock, noise, comm interference) and each increment is recorded in truth.json.
#include "chopper/synth/synth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> p = {
      {"llama3-8b", 32, 4096, 14336, 32, 8, 128256, 1, 1},
      {"llama3-70b", 80, 8192, 28672, 64, 8, 128256, 1, 1},
      {"gpt3-175b", 96, 12288, 49152, 96, 96, 50257, 1, 1},
      {"mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000, 8, 2},
  };
  return p;
}

const ModelPreset* find_preset(std::string_view name) {
  for (const auto& p : model_presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> scenario_names() {
  return {"healthy", "dvfs", "exposed-comm", "launch-bound", "straggler", "demo"};
}

bool apply_scenario(const std::string& name, SynthConfig& c) {
  if (name == "healthy") return true;
  if (name == "dvfs") {
    c.dvfs = 0.25;
    return true;
  }
  if (name == "exposed-comm") {
    c.prefetch = false;
    c.comm_slowdown = 3.0;
    return true;
  }
  if (name == "launch-bound") {
    // Small kernels (256-token sequences) behind a slow host: the GPU waits for launches. Why the
    // host must be this slow: data parallelism moves every parameter each step whatever the batch,
    // so the host has to be slower than the network, not only than the kernels. On 8 H100s
    // (NVLink at 0.8 x 450 GB/s) a llama3-8b block's 436 MB take 7/8 x 436 MB / 360 GB/s = 1.06 ms
    // per all-gather or reduce-scatter (3.2 ms per block per step under FSDP; a 2.1 ms all-reduce
    // under DDP), the embedding and LM head 10 ms more, while a block's kernels at 256 tokens take
    // about 1.3 ms. A collective that runs while the compute stream waits for the host is exposed
    // communication (docs/metrics.md), so launch overhead leads only once the host takes well over
    // twice the communication time: 400 µs per op plus a 10 µs launch call (about 24 times the
    // healthy 12 + 5 µs: Python, dispatcher and launch call of one module-level op on a starved
    // host: an oversubscribed or throttled CPU, anomaly detection, heavy hooks), about 16 ms per
    // block per step. A host a few tens of µs per op slow hides behind the all-gathers, and the
    // scenario would show exposed communication instead of launch overhead.
    c.seq = 256;
    c.host_op_ns = 400000;
    c.launch_ns = 10000;
    return true;
  }
  if (name == "straggler") {
    c.straggler_rank = c.ranks > 1 ? c.ranks - 1 : 0;
    c.straggler_clock = 0.85;
    c.straggler_host_ns = 2000000;
    return true;
  }
  if (name == "demo") {
    c.dvfs = 0.15;
    c.mfu_loss = 0.1;
    c.comm_interference = 0.1;
    c.data_loader_stall_ns = 3000000;
    c.straggler_rank = c.ranks > 1 ? c.ranks - 1 : 0;
    c.straggler_clock = 0.8;
    c.node_clock_offset_ns = 0;
    c.noise = 0.02;
    return true;
  }
  return false;
}

namespace {

// ---------------------------------------------------------------- randomness (counter-based)
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double uniform(uint64_t h) {
  return static_cast<double>(mix(h) >> 11) * (1.0 / 9007199254740992.0);
}
// Standard normal from a key: deterministic, independent of evaluation order.
double gauss(uint64_t key) {
  const double u1 = std::max(uniform(key * 2 + 1), 1e-12), u2 = uniform(key * 2 + 2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// ---------------------------------------------------------------- the program
bool is_comm(OpClass c) {
  return c == OpClass::kAllGather || c == OpClass::kReduceScatter || c == OpClass::kAllReduce;
}

enum class Act : uint8_t {
  kStepBegin,   // ProfilerStep#N (+ data loader stall)
  kStepEnd,     // loss.item(): DtoH copy + stream sync, then the step range closes
  kRangeBegin,  // user annotation or cpu_op that launches nothing itself
  kRangeEnd,
  kLaunch,    // cpu_op + runtime call + one kernel / memcpy / memset on the compute stream
  kColl,      // record_param_comms + runtime call + NCCL kernel on the comm stream
  kWaitColl,  // the compute stream waits for collective `coll` (event wait)
};

struct Action {
  Act act;
  Phase phase = Phase::kOther;
  int layer = -1;
  int32_t op = -1;          // operation label (index into Program::ops)
  int32_t kdef = -1;        // kernel definition
  int32_t coll = -1;        // collective number
  int32_t range = -1;       // host range name (index into Program::ops)
  bool annotation = false;  // user_annotation (else cpu_op)
  bool backward_thread = false;
  int32_t fwd_of = -1;  // backward op: the forward action it differentiates (for fwdbwd + seq)
};

struct KernelDef {
  KernelDef(std::string n, OpClass c, double fl, double by, bool mx)
      : name(std::move(n)), cls(c), flops(fl), bytes(by), matrix(mx) {}
  std::string name;
  OpClass cls;
  double flops;
  double bytes;
  bool matrix;
  int64_t coll_bytes = 0;         // collectives: unsharded message bytes
  std::string host_op;            // aten op name that launches it
  std::string dims;               // "Input Dims" JSON
  std::string types;              // "Input type" JSON; empty = ["c10::BFloat16"]
  std::string concrete;           // "Concrete Inputs" JSON; empty = not written
  double gm = 0, gn = 0, gk = 0;  // GEMMs: the forward product [gm, gk] x [gk, gn]
};

struct Program {
  std::vector<Action> acts;
  std::vector<KernelDef> kdefs;
  std::vector<std::string> ops;  // names (operation labels and host range names)
  int n_colls = 0;
  int32_t name(const std::string& s) {
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i] == s) return static_cast<int32_t>(i);
    ops.push_back(s);
    return static_cast<int32_t>(ops.size() - 1);
  }
};

struct Shapes {
  double T, h, kv, f, vocab, seq, B;
  int layers, experts, top_k, heads, kv_heads;
  double params_layer, params_outer;
};

class ProgramBuilder {
 public:
  ProgramBuilder(const SynthConfig& c, const DeviceSpec& d, const ModelPreset& m) : c_(c), dev_(d) {
    s_.T = static_cast<double>(c.batch) * c.seq;
    s_.h = m.hidden;
    s_.kv = static_cast<double>(m.hidden) / m.heads * m.kv_heads;
    s_.f = m.ffn;
    s_.vocab = m.vocab;
    s_.seq = c.seq;
    s_.B = dtype_bytes(c.dtype);
    s_.layers = c.layers > 0 ? c.layers : m.layers;
    s_.experts = m.experts;
    s_.top_k = m.top_k;
    s_.heads = m.heads;
    s_.kv_heads = m.kv_heads;
    s_.params_layer =
        s_.h * (s_.h + 2 * s_.kv) + s_.h * s_.h + 3.0 * s_.h * s_.f * m.experts + 2 * s_.h;
    s_.params_outer = 2.0 * s_.vocab * s_.h + s_.h;
  }

  Program build() {
    for (int it = 0; it < c_.iterations; ++it) iteration();
    return std::move(p_);
  }
  const Shapes& shapes() const { return s_; }

 private:
  bool amd() const { return dev_.vendor == Vendor::kAmd; }
  std::string gemm_name(bool bwd, int variant) const {
    if (amd())
      return fmt::format("Cijk_Alik_Bljk_BBS_BH_MT{}x{}x64_MI16x16x1_SN_ISA942_WG32_8_1",
                         bwd ? 128 : 256, variant % 2 ? 128 : 256);
    const std::string arch = dev_.name == "a100"
                                 ? "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3"
                             : dev_.name == "b200" ? "sm100_xmma_gemm_bf16bf16_bf16f32_f32"
                                                   : "sm90_xmma_gemm_bf16bf16_bf16f32_f32";
    if (dev_.name == "a100") return arch + (bwd ? "_nn" : "_tn");
    return fmt::format(
        "{}_{}_n_tilesize{}x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        arch, bwd ? (variant % 2 ? "nt" : "nn") : "tn", variant % 2 ? 128 : 256);
  }
  std::string elementwise_name(const char* functor) const {
    return fmt::format(
        "void at::native::vectorized_elementwise_kernel<4, at::native::{}, std::array<char*, 3ul> "
        ">(int, at::native::{}, std::array<char*, 3ul>)",
        functor, functor);
  }
  std::string coll_kernel(OpClass cls) const {
    if (amd()) return "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)";
    switch (cls) {
      case OpClass::kAllGather:
        return "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
      case OpClass::kReduceScatter:
        return "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
      default:
        return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    }
  }
  int32_t kdef(KernelDef k) {
    p_.kdefs.push_back(std::move(k));
    return static_cast<int32_t>(p_.kdefs.size() - 1);
  }
  std::string dims2(double a, double b, double c2, double d) const {
    return fmt::format("[[{}, {}], [{}, {}]]", static_cast<int64_t>(a), static_cast<int64_t>(b),
                       static_cast<int64_t>(c2), static_cast<int64_t>(d));
  }

  // "Input Dims", "Input type" and "Concrete Inputs" as PyTorch 2.5+ records them for the ops
  // that launch FlashAttention's kernels under scaled_dot_product_attention (schemas from
  // native_functions.yaml):
  //   _flash_attention_forward(query, key, value, cum_seq_q?, cum_seq_k?, max_q, max_k, dropout_p,
  //     is_causal, return_debug_mask, *, scale?, window_size_left?, window_size_right?,
  //     seqused_k?, alibi_slopes?)
  //   _flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k,
  //     max_q, max_k, dropout_p, is_causal, rng_state, unused, *, scale?, window_size_left?,
  //     window_size_right?)
  // query, out and grad_out are [batch, seq, heads, head_dim], key and value [batch, seq,
  // kv_heads, head_dim]; logsumexp is [batch, heads, seq] float; causal, no dropout. Scalars print
  // as c10 prints doubles (17 significant digits, "0." for zero).
  void flash_args(KernelDef& d, bool bwd) const {
    const int64_t b = c_.batch, sq = c_.seq, hq = s_.heads, hkv = s_.kv_heads;
    const int64_t hd = static_cast<int64_t>(s_.h) / s_.heads;
    const std::string q = fmt::format("[{}, {}, {}, {}]", b, sq, hq, hd);
    const std::string kv = fmt::format("[{}, {}, {}, {}]", b, sq, hkv, hd);
    const std::string scale = fmt::format("{:.17g}", 1.0 / std::sqrt(static_cast<double>(hd)));
    if (!bwd) {
      d.dims =
          fmt::format("[{}, {}, {}, [], [], [], [], [], [], [], [], [], [], [], []]", q, kv, kv);
      d.types =
          "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\", \"\", \"Scalar\", "
          "\"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"\", \"\", \"\", \"\"]";
      d.concrete = fmt::format(
          "[\"\", \"\", \"\", \"\", \"\", \"{0}\", \"{0}\", \"0.\", \"True\", \"False\", "
          "\"{1}\", \"\", \"\", \"\", \"\"]",
          sq, scale);
    } else {
      d.dims = fmt::format(
          "[{0}, {0}, {1}, {1}, {0}, [{2}, {3}, {4}], [], [], [], [], [], [], [2], [0], [], [], "
          "[]]",
          q, kv, b, hq, sq);
      d.types =
          "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", "
          "\"c10::BFloat16\", \"float\", \"\", \"\", \"Scalar\", \"Scalar\", \"Scalar\", "
          "\"Scalar\", \"long unsigned int\", \"long unsigned int\", \"Scalar\", \"\", \"\"]";
      d.concrete = fmt::format(
          "[\"\", \"\", \"\", \"\", \"\", \"\", \"\", \"\", \"{0}\", \"{0}\", \"0.\", "
          "\"True\", \"\", \"\", \"{1}\", \"\", \"\"]",
          sq, scale);
    }
  }

  void range(Act a, const std::string& nm, bool annotation, Phase ph, int layer, bool bwd = false) {
    Action x{a};
    x.range = p_.name(nm);
    x.annotation = annotation;
    x.phase = ph;
    x.layer = layer;
    x.backward_thread = bwd;
    p_.acts.push_back(x);
  }
  void begin(const std::string& nm, bool ann, Phase ph, int layer, bool bwd = false) {
    range(Act::kRangeBegin, nm, ann, ph, layer, bwd);
  }
  void end(const std::string& nm, bool ann, Phase ph, int layer, bool bwd = false) {
    range(Act::kRangeEnd, nm, ann, ph, layer, bwd);
  }
  // One op with one kernel; returns the action index (for its backward).
  int32_t launch(const std::string& op, int32_t k, Phase ph, int layer, bool bwd = false,
                 int32_t fwd_of = -1) {
    Action x{Act::kLaunch};
    x.op = p_.name(op);
    x.kdef = k;
    x.phase = ph;
    x.layer = layer;
    x.backward_thread = bwd;
    x.fwd_of = fwd_of;
    p_.acts.push_back(x);
    return static_cast<int32_t>(p_.acts.size() - 1);
  }
  int32_t coll(OpClass cls, double bytes, Phase ph, int layer, const std::string& op, bool bwd) {
    KernelDef k{coll_kernel(cls), cls, 0, 0, false};
    k.coll_bytes = static_cast<int64_t>(bytes);
    k.host_op = "record_param_comms";
    Action x{Act::kColl};
    x.kdef = kdef(k);
    x.coll = p_.n_colls++;
    x.op = p_.name(op);
    x.phase = ph;
    x.layer = layer;
    x.backward_thread = bwd;
    p_.acts.push_back(x);
    return x.coll;
  }
  void wait(int32_t coll_id, Phase ph, int layer, bool bwd) {
    Action x{Act::kWaitColl};
    x.coll = coll_id;
    x.phase = ph;
    x.layer = layer;
    x.backward_thread = bwd;
    p_.acts.push_back(x);
  }

  // The element type as "Input type" records it.
  std::string tname() const {
    switch (c_.dtype) {
      case DType::kFp32:
      case DType::kTf32:
        return "float";
      case DType::kFp16:
        return "c10::Half";
      case DType::kFp8:
        return "c10::Float8_e4m3fn";
      default:
        return "c10::BFloat16";
    }
  }
  static int64_t i64(double x) { return static_cast<int64_t>(x); }

  // Every kernel's W (FLOPs) and Q (bytes) are those its launching op's recorded shapes give
  // (docs/flops.md's formulas), so the shapes describe the work the nominal time is made of.
  // GEMM [m, k] x [k, n]: W = 2mnk, Q = (mk + kn + mn) x dtype bytes.
  KernelDef gemm(double m, double n, double k, bool bwd, int variant, const char* host_op) {
    KernelDef d{gemm_name(bwd, variant), OpClass::kGemm, 2 * m * n * k,
                (m * k + k * n + m * n) * s_.B, true};
    d.host_op = host_op;
    d.dims = dims2(m, k, k, n);
    d.types = fmt::format("[\"{0}\", \"{0}\"]", tname());
    d.gm = m, d.gn = n, d.gk = k;
    return d;
  }
  // Elementwise over [rows, cols]: a binary op (self and other both [rows, cols]: read two,
  // write one) or one with a scalar operand (read one, write one); one FLOP per element.
  KernelDef ew(const std::string& nm, double rows, double cols, bool binary, const char* host_op) {
    const double n = rows * cols;
    KernelDef d{nm, OpClass::kElementwise, n, (binary ? 3 : 2) * n * s_.B, false};
    d.host_op = host_op;
    d.dims = binary ? fmt::format("[[{0}, {1}], [{0}, {1}]]", i64(rows), i64(cols))
                    : fmt::format("[[{}, {}], []]", i64(rows), i64(cols));
    d.types = fmt::format("[\"{0}\", \"{1}\"]", tname(), binary ? tname() : "Scalar");
    return d;
  }
  // RMS norm of [rows, cols] with a weight [cols]: forward rms_norm(input, normalized_shape,
  // weight, eps): W = 4 per element, Q = (2 x rows x cols + cols) x dtype bytes (read x and the
  // weight, write y); backward _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd,
  // weight, output_mask): W = 8 per element, Q = (3 x rows x cols + 2 x cols) x dtype bytes (read
  // dy, x and the weight, write dx and the weight's gradient; rstd not counted).
  KernelDef rms(const std::string& nm, double rows, double cols, bool bwd) {
    const double n = rows * cols;
    KernelDef d{nm, OpClass::kNorm, (bwd ? 8 : 4) * n,
                (bwd ? 3 * n + 2 * cols : 2 * n + cols) * s_.B, false};
    const std::string t = tname();
    if (bwd) {
      d.host_op = "aten::_fused_rms_norm_backward";
      d.dims =
          fmt::format("[[{0}, {1}], [{0}, {1}], [], [{0}, 1], [{1}], []]", i64(rows), i64(cols));
      d.types =
          fmt::format("[\"{0}\", \"{0}\", \"ScalarList\", \"float\", \"{0}\", \"ScalarList\"]", t);
    } else {
      d.host_op = "aten::rms_norm";
      d.dims = fmt::format("[[{0}, {1}], [], [{1}], []]", i64(rows), i64(cols));
      d.types = fmt::format("[\"{0}\", \"ScalarList\", \"{0}\", \"Scalar\"]", t);
    }
    return d;
  }

  struct FwdOp {
    std::string op;
    int32_t action;
    KernelDef def;
  };

  void layer_forward(int L, std::vector<FwdOp>& fwd) {
    const double T = s_.T, h = s_.h, kv = s_.kv, f = s_.f * s_.top_k, B = s_.B;
    auto op = [&](const std::string& name, KernelDef d) {
      begin(name, true, Phase::kForward, L);
      const int32_t a = launch(name, kdef(d), Phase::kForward, L);
      end(name, true, Phase::kForward, L);
      fwd.push_back({name, a, d});
    };
    const std::string norm =
        amd() ? "void at::native::(anonymous namespace)::rms_norm_kernel<c10::BFloat16>(...)"
              : "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0";
    op("attn_n", rms(norm, T, h, false));
    op("q_ip", gemm(T, h, h, false, 0, "aten::mm"));
    op("k_ip", gemm(T, kv, h, false, 1, "aten::mm"));
    op("v_ip", gemm(T, kv, h, false, 1, "aten::mm"));
    op("qkv_re",
       ew(elementwise_name("RotaryFunctor<c10::BFloat16>"), T, h + kv, false, "aten::mul"));
    {
      KernelDef d{amd() ? "attn_fwd"
                        : "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, "
                          "64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, "
                          "true, true, false, false>(pytorch_flash::Flash_fwd_params)",
                  OpClass::kAttention, 2.0 * s_.seq * T * h, 4 * T * h * B, true};
      d.host_op = "aten::_flash_attention_forward";
      flash_args(d, false);
      op("attn_fa", d);
    }
    op("attn_op", gemm(T, h, h, false, 0, "aten::mm"));
    op("attn_ra", ew(elementwise_name("CUDAFunctor_add<c10::BFloat16>"), T, h, true, "aten::add"));
    op("ffn_n", rms(norm, T, h, false));
    op("ffn_gp", gemm(T, f, h, false, 1, "aten::mm"));
    op("ffn_up", gemm(T, f, h, false, 1, "aten::mm"));
    op("ffn_gu", ew(elementwise_name("silu_mul_kernel<c10::BFloat16>"), T, f, true, "aten::mul"));
    op("ffn_dp", gemm(T, h, f, false, 0, "aten::mm"));
    op("ffn_ra", ew(elementwise_name("CUDAFunctor_add<c10::BFloat16>"), T, h, true, "aten::add"));
  }

  // Backward of one forward op: evaluate_function range on the autograd thread with 1-2 kernels.
  void backward_of(const FwdOp& fo, int L) {
    const KernelDef& d = fo.def;
    std::string fn = d.cls == OpClass::kGemm        ? "MmBackward0"
                     : d.cls == OpClass::kAttention ? "ScaledDotProductFlashAttentionBackward0"
                     : d.cls == OpClass::kNorm      ? "RmsNormBackward0"
                     : d.cls == OpClass::kEmbedding ? "EmbeddingBackward0"
                     : d.cls == OpClass::kLoss      ? "NllLossBackward0"
                                                    : "MulBackward0";
    const std::string range_name = "autograd::engine::evaluate_function: " + fn;
    Action b{Act::kRangeBegin};
    b.range = p_.name(range_name);
    b.phase = Phase::kBackward;
    b.layer = L;
    b.backward_thread = true;
    b.fwd_of = fo.action;
    p_.acts.push_back(b);
    if (d.cls == OpClass::kGemm) {
      // Y[m, n] = X[m, k] W[k, n] differentiates into two GEMMs of the same W and Q: dgrad
      // dX[m, k] = dY[m, n] W^T[n, k] and wgrad dW[k, n] = X^T[k, m] dY[m, n].
      KernelDef g1 = d, g2 = d;
      g1.name = gemm_name(true, 0);
      g2.name = gemm_name(true, 1);
      g1.dims = dims2(d.gm, d.gn, d.gn, d.gk);
      g2.dims = dims2(d.gk, d.gm, d.gm, d.gn);
      launch(fo.op, kdef(g1), Phase::kBackward, L, true);
      launch(fo.op, kdef(g2), Phase::kBackward, L, true);
    } else if (d.cls == OpClass::kAttention) {
      KernelDef a = d;
      a.name = amd()
                   ? "_attn_bwd"
                   : "void "
                     "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_"
                     "traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, true, "
                     "false, false, false, false, false>(pytorch_flash::Flash_bwd_params)";
      a.flops *= 2.5;
      a.bytes *= 2;
      a.host_op = "aten::_flash_attention_backward";
      flash_args(a, true);
      launch(fo.op, kdef(a), Phase::kBackward, L, true);
    } else if (d.cls == OpClass::kNorm) {
      launch(fo.op,
             kdef(rms(amd() ? "void at::native::(anonymous "
                              "namespace)::rms_norm_bwd_kernel<c10::BFloat16>(...)"
                            : "triton_red_fused__to_copy_mul_sum_1",
                      s_.T, s_.h, true)),
             Phase::kBackward, L, true);
    } else if (d.cls == OpClass::kEmbedding) {
      // embedding_dense_backward(grad_output [b, s, h], indices [b, s], num_weights, padding_idx,
      // scale_grad_by_freq): read dY and the indices, add each row into the weight's gradient
      // (read and write a row; optimizer.zero_grad cleared it): Q = 3·T·h·dtype + 8·T.
      KernelDef v = d;
      v.name =
          "void at::native::(anonymous "
          "namespace)::embedding_backward_feature_kernel<c10::BFloat16, "
          "float, long>(...)";
      v.host_op = "aten::embedding_dense_backward";
      v.bytes = 3 * s_.T * s_.h * s_.B + 8 * s_.T;
      v.dims = fmt::format("[[{}, {}, {}], [{}, {}], [], [], []]", c_.batch, c_.seq, i64(s_.h),
                           c_.batch, c_.seq);
      v.types = fmt::format("[\"{}\", \"long int\", \"Scalar\", \"Scalar\", \"Scalar\"]", tname());
      launch(fo.op, kdef(v), Phase::kBackward, L, true);
    } else if (d.cls == OpClass::kLoss) {
      // _log_softmax_backward_data(grad_output [T, V], output [T, V], dim, input_dtype), float:
      // read two, write one: Q = 3·T·V·4.
      KernelDef v = d;
      v.name =
          "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, "
          "at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(...)";
      v.host_op = "aten::_log_softmax_backward_data";
      v.bytes = 3 * s_.T * s_.vocab * 4;
      v.dims = fmt::format("[[{0}, {1}], [{0}, {1}], [], []]", i64(s_.T), i64(s_.vocab));
      v.types = "[\"float\", \"float\", \"Scalar\", \"ScalarType\"]";
      launch(fo.op, kdef(v), Phase::kBackward, L, true);
    } else {
      // An elementwise op's gradient: dY times the saved operand, one mul of the forward's shapes
      // (so its W and Q).
      KernelDef v = d;
      v.name = elementwise_name(
          "BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
          "binary_internal::MulFunctor<float> >");
      v.host_op = "aten::mul";
      launch(fo.op, kdef(v), Phase::kBackward, L, true);
    }
    Action e{Act::kRangeEnd};
    e.range = b.range;
    e.phase = Phase::kBackward;
    e.layer = L;
    e.backward_thread = true;
    p_.acts.push_back(e);
  }

  void fsdp_all_gather(int group, Phase ph, bool bwd, std::vector<int32_t>& ag_of) {
    const std::string g = group < 0 ? "" : fmt::format(" (layers.{})", group);
    begin("FSDP::all_gather" + g, true, ph, group, bwd);
    const double params = group < 0 ? s_.params_outer : s_.params_layer;
    ag_of[static_cast<size_t>(group + 1)] =
        coll(OpClass::kAllGather, params * s_.B, ph, group, "all_gather", bwd);
    end("FSDP::all_gather" + g, true, ph, group, bwd);
  }
  void fsdp_copy_out(int group, Phase ph, bool bwd, std::vector<int32_t>& ag_of) {
    const std::string g = group < 0 ? "" : fmt::format(" (layers.{})", group);
    wait(ag_of[static_cast<size_t>(group + 1)], ph, group, bwd);
    begin("FSDP::all_gather_copy_out" + g, true, ph, group, bwd);
    const double params = group < 0 ? s_.params_outer : s_.params_layer;
    KernelDef d{
        "void at::native::(anonymous "
        "namespace)::split_with_sizes_copy_out_contiguous_no_cast_kernel<c10::BFloat16>(...)",
        OpClass::kElementwise, 0, 2 * params * s_.B, false};
    d.host_op = "aten::split_with_sizes_copy";
    d.dims = fmt::format("[[{:.0f}], [], []]", params);  // the all-gathered flat parameters
    launch("all_gather_copy_out", kdef(d), ph, group, bwd);
    end("FSDP::all_gather_copy_out" + g, true, ph, group, bwd);
  }

  void iteration() {
    const int Ls = s_.layers;
    const bool fsdp = c_.parallel == Parallelism::kFsdp;
    p_.acts.push_back(Action{Act::kStepBegin});
    std::vector<int32_t> ag_of(static_cast<size_t>(Ls + 1), -1);
    std::vector<FwdOp> fwd_outer;
    std::vector<std::vector<FwdOp>> fwd_layers(static_cast<size_t>(Ls));

    // ---- forward
    if (fsdp) {
      begin("FSDP::root_pre_forward", true, Phase::kForward, -1);
      fsdp_all_gather(-1, Phase::kForward, false, ag_of);
      if (c_.prefetch && Ls > 0) fsdp_all_gather(0, Phase::kForward, false, ag_of);
      fsdp_copy_out(-1, Phase::kForward, false, ag_of);
      end("FSDP::root_pre_forward", true, Phase::kForward, -1);
    } else {
      begin("DistributedDataParallel.forward", true, Phase::kForward, -1);
    }
    {
      begin("ie", true, Phase::kForward, -1);
      // embedding(weight [V, h], indices [b, s], padding_idx, scale_grad_by_freq, sparse): read
      // the indices and T rows, write T rows: Q = 2·T·h·dtype + 8·T.
      KernelDef d{
          "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, "
          "unsigned int, 2, 2, -2, true>(...)",
          OpClass::kEmbedding, 0, 2 * s_.T * s_.h * s_.B + 8 * s_.T, false};
      d.host_op = "aten::embedding";
      d.dims = fmt::format("[[{}, {}], [{}, {}], [], [], []]", i64(s_.vocab), i64(s_.h), c_.batch,
                           c_.seq);
      d.types = fmt::format("[\"{}\", \"long int\", \"Scalar\", \"Scalar\", \"Scalar\"]", tname());
      const int32_t a = launch("ie", kdef(d), Phase::kForward, -1);
      fwd_outer.push_back({"ie", a, d});
      end("ie", true, Phase::kForward, -1);
    }
    for (int L = 0; L < Ls; ++L) {
      if (fsdp) {
        begin(fmt::format("FSDP::pre_forward (layers.{})", L), true, Phase::kForward, L);
        if (!c_.prefetch) fsdp_all_gather(L, Phase::kForward, false, ag_of);
        if (c_.prefetch && L + 1 < Ls) fsdp_all_gather(L + 1, Phase::kForward, false, ag_of);
        fsdp_copy_out(L, Phase::kForward, false, ag_of);
        end(fmt::format("FSDP::pre_forward (layers.{})", L), true, Phase::kForward, L);
      }
      begin(fmt::format("Layer<{}>", L), true, Phase::kForward, L);
      layer_forward(L, fwd_layers[static_cast<size_t>(L)]);
      end(fmt::format("Layer<{}>", L), true, Phase::kForward, L);
      if (fsdp) {
        begin(fmt::format("FSDP::post_forward (layers.{})", L), true, Phase::kForward, L);
        end(fmt::format("FSDP::post_forward (layers.{})", L), true, Phase::kForward, L);
      }
    }
    auto outer_op = [&](const std::string& name, KernelDef d) {
      begin(name, true, Phase::kForward, -1);
      const int32_t a = launch(name, kdef(d), Phase::kForward, -1);
      end(name, true, Phase::kForward, -1);
      fwd_outer.push_back({name, a, d});
    };
    outer_op("ln", rms("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", s_.T, s_.h, false));
    outer_op("lp", gemm(s_.T, s_.vocab, s_.h, false, 0, "aten::mm"));
    {
      KernelDef d{
          "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
          "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(...)",
          OpClass::kLoss, 0, 3 * s_.T * s_.vocab * 4 + 8 * s_.T, false};
      // cross_entropy_loss(self [T, V], target [T], weight?, reduction, ignore_index,
      // label_smoothing), float logits: read them, write and read the log-probabilities, read the
      // targets: Q = 3·T·V·4 + 8·T.
      d.host_op = "aten::cross_entropy_loss";
      d.dims = fmt::format("[[{}, {}], [{}], [], [], [], []]", i64(s_.T), i64(s_.vocab), i64(s_.T));
      d.types = "[\"float\", \"long int\", \"\", \"Scalar\", \"Scalar\", \"Scalar\"]";
      outer_op("cel", d);
    }
    if (!fsdp) end("DistributedDataParallel.forward", true, Phase::kForward, -1);

    // ---- backward (autograd thread)
    std::vector<int32_t> rs;
    double ddp_bucket = 0;
    const double bucket_bytes = c_.ddp_bucket_mb * 1024 * 1024;
    begin("l", true, Phase::kBackward, -1);
    for (auto it = fwd_outer.rbegin(); it != fwd_outer.rend(); ++it)
      if (it->op != "ie") backward_of(*it, -1);
    if (fsdp) {
      if (c_.prefetch && Ls > 0) fsdp_all_gather(Ls - 1, Phase::kBackward, true, ag_of);
    }
    for (int L = Ls - 1; L >= 0; --L) {
      if (fsdp) {
        begin(fmt::format("FSDP::pre_backward (layers.{})", L), true, Phase::kBackward, L, true);
        if (!c_.prefetch) fsdp_all_gather(L, Phase::kBackward, true, ag_of);
        if (c_.prefetch && L > 0) fsdp_all_gather(L - 1, Phase::kBackward, true, ag_of);
        fsdp_copy_out(L, Phase::kBackward, true, ag_of);
        end(fmt::format("FSDP::pre_backward (layers.{})", L), true, Phase::kBackward, L, true);
      }
      const auto& ops = fwd_layers[static_cast<size_t>(L)];
      for (auto it = ops.rbegin(); it != ops.rend(); ++it) backward_of(*it, L);
      if (fsdp) {
        const std::string g = fmt::format("FSDP::post_backward_reduce (layers.{})", L);
        begin(g, true, Phase::kBackward, L, true);
        rs.push_back(coll(OpClass::kReduceScatter, s_.params_layer * s_.B, Phase::kBackward, L,
                          "reduce_scatter", true));
        end(g, true, Phase::kBackward, L, true);
      } else {
        ddp_bucket += s_.params_layer * s_.B;
        if (ddp_bucket >= bucket_bytes || L == 0) {
          begin("c10d::allreduce_", false, Phase::kBackward, L, true);
          rs.push_back(
              coll(OpClass::kAllReduce, ddp_bucket, Phase::kBackward, L, "all_reduce", true));
          end("c10d::allreduce_", false, Phase::kBackward, L, true);
          ddp_bucket = 0;
        }
      }
    }
    for (auto& fo : fwd_outer)
      if (fo.op == "ie") backward_of(fo, -1);
    if (fsdp) {
      begin("FSDP::post_backward_reduce", true, Phase::kBackward, -1, true);
      rs.push_back(coll(OpClass::kReduceScatter, s_.params_outer * s_.B, Phase::kBackward, -1,
                        "reduce_scatter", true));
      end("FSDP::post_backward_reduce", true, Phase::kBackward, -1, true);
    } else {
      begin("c10d::allreduce_", false, Phase::kBackward, -1, true);
      rs.push_back(coll(OpClass::kAllReduce, s_.params_outer * s_.B, Phase::kBackward, -1,
                        "all_reduce", true));
      end("c10d::allreduce_", false, Phase::kBackward, -1, true);
    }
    end("l", true, Phase::kBackward, -1);

    // ---- optimizer: waits for every gradient collective
    for (int32_t r : rs) wait(r, Phase::kOptimizer, -1, false);
    const double local_params = (s_.params_layer * Ls + s_.params_outer) / (fsdp ? c_.ranks : 1);
    begin("Optimizer.step#AdamW.step", true, Phase::kOptimizer, -1);
    begin("opt_step", true, Phase::kOptimizer, -1);
    for (int chunk = 0; chunk < 4; ++chunk) {
      KernelDef d{
          "void at::native::(anonymous "
          "namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
          "namespace)::TensorListMetadata<4>, at::native::(anonymous "
          "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, bool, "
          "float*, double, double, double, double, double, double, bool, float*, float*>(...)",
          OpClass::kOptimizer, local_params / 4 * 12, local_params / 4 * 32, false};
      d.host_op = "aten::_fused_adamw_";
      launch("opt_step", kdef(d), Phase::kOptimizer, -1);
    }
    end("opt_step", true, Phase::kOptimizer, -1);
    end("Optimizer.step#AdamW.step", true, Phase::kOptimizer, -1);
    begin("Optimizer.zero_grad#AdamW.zero_grad", true, Phase::kOptimizer, -1);
    {
      KernelDef d{"Memset (Device)", OpClass::kMemset, 0, local_params * 4, false};
      d.host_op = "aten::zero_";
      launch("opt_zg", kdef(d), Phase::kOptimizer, -1);
    }
    end("Optimizer.zero_grad#AdamW.zero_grad", true, Phase::kOptimizer, -1);
    p_.acts.push_back(Action{Act::kStepEnd});
  }

  const SynthConfig& c_;
  const DeviceSpec& dev_;
  Shapes s_{};
  Program p_;
};

// ---------------------------------------------------------------- the simulation
struct KernelTruth {
  int64_t correlation;
  int iteration;
  Phase phase;
  int layer;
  int32_t op;
  OpClass cls;
  int clock_mhz;
  Ns start_ns, dur_ns;
  Ns nominal_ns, mfu_ns, straggler_ns, dvfs_ns, interference_ns, noise_ns;
  Ns exposed_comm_ns, launch_ns, stall_ns, host_late_ns;
  double flops, bytes;
  Ns theoretical_ns;   // roofline time at the maximum clock and peak rates (see launch_kernel)
  const char* kernel;  // the kernel's name (program text or a literal: outlives the run)
};

struct EffectKey {
  int iteration;
  Phase phase;
  int layer;
  int32_t op;
  bool operator<(const EffectKey& o) const {
    return std::tie(iteration, phase, layer, op) < std::tie(o.iteration, o.phase, o.layer, o.op);
  }
};
struct Effects {
  uint64_t kernels = 0;
  Ns kernel_ns = 0, dvfs_ns = 0, straggler_ns = 0, mfu_ns = 0, interference_ns = 0, noise_ns = 0;
  Ns exposed_comm_ns = 0, launch_ns = 0, stall_ns = 0, host_late_ns = 0;
};

struct ClockPoint {
  Ns t;
  int mhz;
  double heat;
};

// A kernel's busy interval on the trace clock, with the clock it ran at (the power model);
// `comm` for a collective.
struct BusySpan {
  Ns start, end;
  int mhz;
  bool comm;
  // Collectives: the bytes this GPU sends and receives over NVLink / XGMI, moved evenly over
  // [xfer_start, end) (the transfer runs once every rank has arrived: the nominal duration).
  Ns xfer_start = 0;
  double tx_bytes = 0, rx_bytes = 0;
};

// Open host ranges of one thread.
struct OpenRange {
  int32_t name;
  Ns start;
  bool annotation;
  int64_t ext;
  int64_t seq;
  int32_t fwd_action;
  std::string dims;
};

struct Ids {
  int64_t corr = 1, ext = 1, seq = 1, flow = 1;
};

// A rank's scalar state (what settle() saves at an iteration's start and restores each round).
struct RankScalars {
  int rank = 0, node = 0;
  Ns host = 0;
  Ns compute_free = 0, comm_free = 0;
  Ns wait_until = 0;
  Ns pending_stall = 0;
  double heat = 0;  // ns of full load, decays when idle
  Ns heat_t = 0;
  int iteration = -1;
  int clock_mhz = 0;
  size_t issued = 0, comm_head = 0;  // see coll_span
};

struct RankSim : RankScalars {
  std::vector<std::pair<Ns, Ns>> step_spans;  // each ProfilerStep's host span (node clock)
  // This GPU's collective kernels [start, end) by collective number (the comm stream runs them
  // one at a time, in program order). Those below `issued` are this run's; the rest come from the
  // previous round of pass 1 (pass 2: from pass 1), kNoSpan where not known yet: a kernel slows
  // beside a collective the host issues after it, so its duration needs them (settle()). From
  // comm_head on, the issued ones may still overlap the compute stream's next activity.
  std::vector<std::pair<Ns, Ns>> coll_span;
  std::vector<std::pair<Ns, Ns>> scratch;  // slowed()'s
};

constexpr std::pair<Ns, Ns> kNoSpan{INT64_MAX, INT64_MAX};

class Simulator;

// Writes one rank's Kineto JSON.
class TraceWriter {
 public:
  TraceWriter(const std::string& path, Ns base) : base_(base) {
    f_ = std::fopen(path.c_str(), "wb");
    if (f_ == nullptr) throw Error(path + ": cannot write");
    path_ = path;
  }
  ~TraceWriter() {
    if (f_ != nullptr) std::fclose(f_);
  }
  std::string& buf() { return buf_; }
  void flush_if_big() {
    if (buf_.size() > (4u << 20)) flush();
  }
  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      throw Error(path_ + ": write failed");
    bytes_ += buf_.size();
    buf_.clear();
  }
  uint64_t close() {
    flush();
    std::fclose(f_);
    f_ = nullptr;
    return bytes_;
  }
  // µs with three decimals, relative to the base.
  std::string ts(Ns t) const {
    const Ns r = t - base_;
    return fmt::format("{}{}.{:03d}", r < 0 ? "-" : "", std::llabs(r) / 1000,
                       static_cast<int>(std::llabs(r) % 1000));
  }
  bool first = true;

 private:
  FILE* f_;
  std::string path_;
  std::string buf_;
  Ns base_;
  uint64_t bytes_ = 0;
};

class Simulator {
 public:
  Simulator(const SynthConfig& c, const DeviceSpec& d, const Program& p, const Shapes& s)
      : c_(c), d_(d), p_(p), s_(s) {
    fmax_ = d.max_clock_mhz;
    floor_mhz_ = static_cast<int>(fmax_ * (1.0 - c.dvfs));
    nodes_ = (c.ranks + c.gpus_per_node - 1) / c.gpus_per_node;
    compute_stream_ = d.vendor == Vendor::kAmd ? 1 : 7;
    comm_stream_ = d.vendor == Vendor::kAmd ? 2 : 20;
  }

  // Start of the run on every host clock (true time, ns since the epoch).
  static constexpr Ns kRunStart = 1767225605000000000;  // 2026-01-01 00:00:05 UTC
  static constexpr Ns kBase = 1767225600000000000;      // baseTimeNanoseconds

  // Host and streams start together: the first kernel's wait for its launch is launch overhead
  // measured from the start of the run, not from the epoch.
  static void start_rank(RankSim& r, Ns t) {
    r.host = t;
    r.compute_free = t;
    r.comm_free = t;
    r.heat_t = t;
    r.clock_mhz = 0;
  }

  Ns node_offset(int node) const {
    if (node == 0 || c_.node_clock_offset_ns == 0) return 0;
    return (node % 2 ? 1 : -1) * static_cast<Ns>((node + 1) / 2) * c_.node_clock_offset_ns;
  }
  int local_rank(int rank) const { return rank % c_.gpus_per_node; }

  // Collective duration (ns) for the model: ring algorithm over the group of all ranks.
  Ns coll_duration(const KernelDef& k) const {
    const double n = c_.ranks;
    if (n <= 1) return 8000;
    const bool multi = nodes_ > 1;
    const double bw =
        (multi ? std::min(d_.intra_node_bw_gbs, d_.inter_node_bw_gbs) : d_.intra_node_bw_gbs) *
        1e9 * c_.comm_efficiency;
    const double alpha = multi ? 10e-6 : 4e-6;
    const double steps = k.cls == OpClass::kAllReduce ? 2 * (n - 1) : (n - 1);
    const double t = steps / n * static_cast<double>(k.coll_bytes) / bw + steps * alpha * 0.25;
    return static_cast<Ns>(std::llround(t * 1e9 * c_.comm_slowdown));
  }

  int clock_for(const RankSim& r) const {
    const double h0 = 5e6, h1 = 60e6;  // ns of sustained load before and at full throttle
    const double x = std::clamp((r.heat - h0) / (h1 - h0), 0.0, 1.0);
    int f = static_cast<int>(std::lround(fmax_ - (fmax_ - floor_mhz_) * x));
    f = f / 15 * 15;  // clocks move in 15 MHz steps
    if (f > fmax_) f = fmax_;
    return f;
  }
  void cool(RankSim& r, Ns until) const {
    if (until > r.heat_t) {
      r.heat = std::max(0.0, r.heat - 0.5 * static_cast<double>(until - r.heat_t));
      r.heat_t = until;
    }
  }

  // One step of the program for one rank. `emit` is null in pass 1. For kColl in pass 1 the
  // caller splits the work: coll_arrive() then coll_finish().
  struct Emit {
    TraceWriter* w;
    std::vector<KernelTruth>* kernels;
    std::map<EffectKey, Effects>* effects;
    std::vector<BusySpan>* busy;  // kernel intervals
    std::vector<ClockPoint>* clock;
    std::vector<std::pair<int, std::pair<Ns, Ns>>>* steps;
    std::vector<OpenRange> open_main, open_bwd;
    std::vector<int64_t> fwd_seq, fwd_flow;  // per action index: the forward op's ids
    std::vector<Ns> fwd_ts;
    Ids ids;
  };

  int64_t pid(const RankSim& r) const { return 4000 + r.rank; }
  int64_t tid(const RankSim& r, bool bwd) const {
    return bwd ? 4000 + r.rank + 100000 : 4000 + r.rank;
  }

  // When this rank's collective kernel could start (pass 1 takes the latest over all ranks).
  Ns coll_arrive(const RankSim& r, const Action& a) const {
    // Host: the collective's host ops take host_op + launch; the kernel is ready after latency.
    const Ns host_ready = r.host + c_.host_op_ns / 2 + c_.launch_ns + c_.launch_latency_ns;
    // NCCL waits for the compute that produced its input (reduce-scatter of gradients).
    const Ns after = a.phase == Phase::kBackward ? r.compute_free : 0;
    return std::max({host_ready, r.comm_free, after});
  }

  void coll_finish(RankSim& r, const Action& a, Ns arrival, Ns end, Emit* e) {
    const KernelDef& k = p_.kdefs[static_cast<size_t>(a.kdef)];
    const Ns h0 = r.host;
    const Ns rt_start = h0 + c_.host_op_ns / 2;
    const Ns rt_end = rt_start + c_.launch_ns;
    r.host = rt_end + 2000;
    r.comm_free = end;
    r.coll_span[static_cast<size_t>(a.coll)] = {arrival, end};
    r.issued = static_cast<size_t>(a.coll) + 1;
    if (e == nullptr) return;
    TraceWriter& w = *e->w;
    const bool bwd = a.backward_thread;
    const int64_t corr = e->ids.corr++;
    const int64_t ext = e->ids.ext++;
    const Ns off = node_offset(r.node);
    const bool amd = d_.vendor == Vendor::kAmd;
    const int64_t elems = k.coll_bytes / dtype_bytes(c_.dtype);
    const char* cname = k.cls == OpClass::kAllGather       ? "_allgather_base"
                        : k.cls == OpClass::kReduceScatter ? "_reduce_scatter_base"
                                                           : "allreduce";
    const int64_t in_n = k.cls == OpClass::kAllGather ? elems / c_.ranks : elems;
    const int64_t out_n = k.cls == OpClass::kReduceScatter ? elems / c_.ranks : elems;
    std::string ranks = "[";
    for (int i = 0; i < c_.ranks; ++i) ranks += (i ? ", " : "") + std::to_string(i);
    ranks += "]";
    const std::string comm_args = fmt::format(
        "\"Collective name\": \"{}\", \"dtype\": \"BFloat16\", \"In msg nelems\": {}, \"Out msg "
        "nelems\": {}, \"Group size\": {}, \"Process Group Name\": \"0\", \"Process Group "
        "Description\": \"default_pg\", \"Process Group Ranks\": \"{}\"",
        cname, in_n, out_n, c_.ranks, ranks);
    auto& b = w.buf();
    fmt::format_to(std::back_inserter(b),
                   ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", "
                   "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External "
                   "id\": {}, \"Record function id\": 0, {}}}}}",
                   pid(r), tid(r, bwd), w.ts(h0 + off), us(r.host - h0 - 1000), ext, comm_args);
    runtime_event(w, r, bwd, amd ? "hipExtLaunchKernel" : "cudaLaunchKernelExC", rt_start + off,
                  rt_end - rt_start, corr, ext);
    flow(w, corr, pid(r), tid(r, bwd), rt_start + off, 0, comm_stream_, arrival + off);
    fmt::format_to(std::back_inserter(b),
                   ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{",
                   k.name, local_rank(r.rank), comm_stream_, w.ts(arrival + off),
                   us(end - arrival));
    if (amd) {
      fmt::format_to(
          std::back_inserter(b),
          "\"device\": {}, \"stream\": {}, \"correlation\": {}, \"kind\": \"Dispatch Kernel\"}}}}",
          local_rank(r.rank), comm_stream_, corr);
    } else {
      fmt::format_to(std::back_inserter(b),
                     "\"External id\": {}, \"queued\": 0, \"device\": {}, \"context\": 1, "
                     "\"stream\": {}, \"correlation\": {}, \"registers per thread\": 96, \"shared "
                     "memory\": 4528, \"grid\": [{}, 1, 1], \"block\": [544, 1, 1], {}}}}}",
                     ext, local_rank(r.rank), comm_stream_, corr, std::min(32, c_.ranks * 2),
                     comm_args);
    }
    KernelTruth kt{};
    kt.correlation = corr;
    kt.iteration = c_.first_step + r.iteration;
    kt.phase = a.phase;
    kt.layer = a.layer;
    kt.op = a.op;
    kt.cls = k.cls;
    kt.clock_mhz = r.clock_mhz;
    kt.start_ns = arrival + off;
    kt.dur_ns = end - arrival;
    kt.nominal_ns = coll_duration(k);
    kt.kernel = k.name.c_str();
    e->kernels->push_back(kt);
    {
      // Ring: each GPU sends (and receives) steps / n of the message. Across nodes, the GPU whose
      // ring successor (predecessor) is on the next (previous) node sends (receives) over the
      // network instead of NVLink.
      const double n = c_.ranks;
      const double steps = k.cls == OpClass::kAllReduce ? 2 * (n - 1) : (n - 1);
      const double bytes = n > 1 ? steps / n * static_cast<double>(k.coll_bytes) : 0.0;
      const int lr = local_rank(r.rank);
      const bool one_node = nodes_ <= 1;
      BusySpan span{arrival + off, end + off, r.clock_mhz, true};
      span.xfer_start = std::max(arrival, end - kt.nominal_ns) + off;
      span.tx_bytes = one_node || lr != c_.gpus_per_node - 1 ? bytes : 0.0;
      span.rx_bytes = one_node || lr != 0 ? bytes : 0.0;
      e->busy->push_back(span);
    }
    Effects& ef = (*e->effects)[EffectKey{kt.iteration, a.phase, a.layer, a.op}];
    ++ef.kernels;
    ef.kernel_ns += kt.dur_ns;
    w.flush_if_big();
  }

  // Roofline time at the maximum clock: FLOPs at the peak rate of the unit that runs them (matrix
  // or vector), or bytes at the peak memory bandwidth, whichever is longer.
  Ns theoretical_ns(bool matrix, double flops, double bytes) const {
    const double peak = matrix ? d_.matrix_tflops(c_.dtype) * 1e12 : d_.vector_tflops_fp32 * 1e12;
    return std::llround(std::max(flops / peak, bytes / (d_.mem_bw_gbs * 1e9)) * 1e9);
  }

  static std::string us(Ns ns) {
    return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000));
  }
  void runtime_event(TraceWriter& w, const RankSim& r, bool bwd, const char* name, Ns ts, Ns dur,
                     int64_t corr, int64_t ext) const {
    fmt::format_to(std::back_inserter(w.buf()),
                   ",\n{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                   "\"cbid\": 211, \"correlation\": {}}}}}",
                   name, pid(r), tid(r, bwd), w.ts(ts), us(dur), ext, corr);
  }
  void flow(TraceWriter& w, int64_t id, int64_t spid, int64_t stid, Ns sts, int64_t fpid,
            int64_t ftid, Ns fts) const {
    fmt::format_to(
        std::back_inserter(w.buf()),
        ",\n{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\"}},\n{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
        "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
        id, spid, stid, w.ts(sts), id, fpid, ftid, w.ts(fts));
  }

  // Everything but collectives.
  void step(RankSim& r, size_t pc, const std::vector<Ns>* coll_end, Emit* e) {
    const Action& a = p_.acts[pc];
    const Ns off = node_offset(r.node);
    switch (a.act) {
      case Act::kStepBegin: {
        ++r.iteration;
        const Ns begin = r.host;
        Ns stall = c_.data_loader_stall_ns;
        if (r.rank == c_.straggler_rank) stall += c_.straggler_host_ns;
        r.pending_stall = stall;
        r.step_spans.push_back({begin, begin});
        if (e != nullptr) {
          e->steps->push_back({c_.first_step + r.iteration, {begin + off, 0}});
          if (stall > 0) {
            fmt::format_to(std::back_inserter(e->w->buf()),
                           ",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                           "\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\", "
                           "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": "
                           "{{\"External id\": {}, \"Record function id\": 0}}}}",
                           pid(r), tid(r, false), e->w->ts(begin + 1000 + off), us(stall),
                           e->ids.ext++);
          }
        }
        r.host += 1000 + stall + 1000;
        // The batch goes to the GPU.
        launch_kernel(r, nullptr, e, "aten::copy_", OpClass::kMemcpy, 0, s_.T * 8,
                      "Memcpy HtoD (Pinned -> Device)", "aten::copy_", Phase::kOther, -1, false,
                      -1);
        return;
      }
      case Act::kStepEnd: {
        // loss.item(): copy the loss to the host and wait for it.
        launch_kernel(r, nullptr, e, "aten::_local_scalar_dense", OpClass::kMemcpy, 0, 4,
                      "Memcpy DtoH (Device -> Pageable)", "aten::_local_scalar_dense",
                      Phase::kOther, -1, false, -1);
        const Ns sync_start = r.host;
        r.host = std::max(r.host, std::max(r.compute_free, r.comm_free)) + 5000;
        if (!r.step_spans.empty()) r.step_spans.back().second = r.host;
        if (e != nullptr) {
          auto& w = *e->w;
          fmt::format_to(
              std::back_inserter(w.buf()),
              ",\n{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
              "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"cbid\": 131, \"correlation\": "
              "{}}}}}",
              d_.vendor == Vendor::kAmd ? "hipStreamSynchronize" : "cudaStreamSynchronize", pid(r),
              tid(r, false), w.ts(sync_start + off), us(r.host - 5000 - sync_start), e->ids.corr++);
          auto& st = e->steps->back();
          st.second.second = r.host + off;
          const Ns step_start = st.second.first;
          fmt::format_to(std::back_inserter(w.buf()),
                         ",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                         "\"ProfilerStep#{}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, "
                         "\"args\": {{\"External id\": {}, \"Record function id\": 0}}}}",
                         st.first, pid(r), tid(r, false), w.ts(step_start),
                         us(r.host + off - step_start), e->ids.ext++);
        }
        return;
      }
      case Act::kRangeBegin: {
        r.host += a.annotation ? 1500 : 3000;
        if (e == nullptr) return;
        auto& open = a.backward_thread ? e->open_bwd : e->open_main;
        OpenRange o{a.range, r.host, a.annotation, e->ids.ext++, -1, a.fwd_of, {}};
        if (a.fwd_of >= 0) {
          o.seq = e->fwd_seq[static_cast<size_t>(a.fwd_of)];
          // fwdbwd flow: forward op -> this backward op.
          fmt::format_to(
              std::back_inserter(e->w->buf()),
              ",\n{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": "
              "\"fwdbwd\", \"name\": \"fwdbwd\"}},\n{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, "
              "\"tid\": {}, \"ts\": {}, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"}}",
              e->fwd_flow[static_cast<size_t>(a.fwd_of)], pid(r), tid(r, false),
              e->w->ts(e->fwd_ts[static_cast<size_t>(a.fwd_of)] + off),
              e->fwd_flow[static_cast<size_t>(a.fwd_of)], pid(r), tid(r, true),
              e->w->ts(r.host + off));
        }
        open.push_back(std::move(o));
        return;
      }
      case Act::kRangeEnd: {
        r.host += 1000;
        if (e == nullptr) return;
        auto& open = a.backward_thread ? e->open_bwd : e->open_main;
        OpenRange o = std::move(open.back());
        open.pop_back();
        auto& w = *e->w;
        if (o.seq >= 0) {
          fmt::format_to(
              std::back_inserter(w.buf()),
              ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, \"tid\": "
              "{}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Sequence number\": "
              "{}, \"Fwd thread id\": {}, \"Record function id\": 0}}}}",
              p_.ops[static_cast<size_t>(o.name)], pid(r), tid(r, true), w.ts(o.start + off),
              us(r.host - o.start), o.ext, o.seq, tid(r, false));
        } else {
          fmt::format_to(std::back_inserter(w.buf()),
                         ",\n{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, "
                         "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                         "\"Record function id\": 0}}}}",
                         o.annotation ? "user_annotation" : "cpu_op",
                         p_.ops[static_cast<size_t>(o.name)], pid(r), tid(r, a.backward_thread),
                         w.ts(o.start + off), us(r.host - o.start), o.ext);
        }
        w.flush_if_big();
        return;
      }
      case Act::kLaunch: {
        const KernelDef& k = p_.kdefs[static_cast<size_t>(a.kdef)];
        launch_kernel(r, &k, e, p_.ops[static_cast<size_t>(a.op)].c_str(), k.cls, k.flops, k.bytes,
                      k.name.c_str(), k.host_op.c_str(), a.phase, a.layer, a.backward_thread, a.op,
                      pc);
        return;
      }
      case Act::kWaitColl: {
        const Ns end = (*coll_end)[static_cast<size_t>(a.coll)];
        r.wait_until = std::max(r.wait_until, end);
        return;
      }
      case Act::kColl:
        return;  // handled by the driver
    }
  }

  // How long `work` ns of compute starting at `start` take beside this GPU's collectives: inside
  // the union of their intervals it progresses at 1 / (1 + comm_interference), elsewhere at 1. So
  // the duration d solves d = work + comm_interference x (overlap of [start, start + d) with the
  // collectives), exactly: walk the intervals in start order. Times relative to `start` (doubles
  // hold them to well under a ns); the end rounded to the ns.
  Ns slowed(RankSim& r, Ns start, Ns work) const {
    const double k = 1.0 + c_.comm_interference;
    const Ns horizon = start + static_cast<Ns>(std::ceil(static_cast<double>(work) * k)) + 1;
    auto& sp = r.scratch;
    sp.clear();
    // Issued ones from comm_head, then the rest (each part in start order).
    auto take = [&](size_t from, size_t to) {
      for (size_t i = from; i < to && r.coll_span[i].first < horizon; ++i)
        if (r.coll_span[i].second > start) sp.push_back(r.coll_span[i]);
    };
    take(r.comm_head, r.issued);
    take(r.issued, r.coll_span.size());
    if (sp.empty()) return work;
    std::sort(sp.begin(), sp.end());
    double t = 0, left = static_cast<double>(work);
    for (const auto& [a0, b0] : sp) {
      const double a = static_cast<double>(a0 - start), b = static_cast<double>(b0 - start);
      if (b <= t) continue;
      if (a > t) {
        if (left <= a - t) break;
        left -= a - t;
        t = a;
      }
      if (left <= (b - t) / k) {
        t += left * k;
        left = 0;
        break;
      }
      left -= (b - t) / k;
      t = b;
    }
    return std::max(work, static_cast<Ns>(std::llround(t + left)));
  }

  // One op with one GPU activity on the compute stream. `k` is null for the built-in copies.
  void launch_kernel(RankSim& r, const KernelDef* k, Emit* e, const char* op_label, OpClass cls,
                     double flops, double bytes, const char* kname, const char* host_op,
                     Phase phase, int layer, bool bwd, int32_t op_id, size_t pc = SIZE_MAX) {
    const Ns op_start = r.host;
    const Ns rt_start = r.host + c_.host_op_ns;
    const Ns rt_end = rt_start + c_.launch_ns;
    r.host = rt_end + 1000;
    const Ns ready = rt_end + c_.launch_latency_ns;
    const Ns free = r.compute_free;
    const Ns start = std::max({ready, free, r.wait_until});
    r.wait_until = 0;
    // Truth for the compute stream's idle time before this activity, [free, start), split the way
    // docs/metrics.md defines the breakdown: while a collective runs on this GPU the time is
    // exposed communication (the GPU is busy with it, no compute hides it), even where the host is
    // also late; the rest before the launch is ready is the host's: before the launch call starts
    // the host is late (Python, framework: host_late), from the call's start to ready it is the
    // launch latency (launch_overhead), the first part of the two the data-loader stall; after
    // ready, the activity waits for a collective: exposed communication. So a slow host whose gaps
    // the next layer's all-gather fills costs exposed communication there, and the four add up to
    // the idle time: nothing is charged twice or left out.
    const Ns mid = std::clamp(ready, free, start);
    const Ns split = std::clamp(rt_start, free, mid);  // the launch call's start
    Ns covered = 0, covered_late = 0;  // [free, mid), [free, split) while a collective ran
    while (r.comm_head < r.issued && r.coll_span[r.comm_head].second <= free) ++r.comm_head;
    for (size_t i = r.comm_head; i < r.issued && r.coll_span[i].first < mid; ++i) {
      const Ns a = std::max(r.coll_span[i].first, free);
      covered += std::min(r.coll_span[i].second, mid) - a;
      covered_late += std::max<Ns>(0, std::min(r.coll_span[i].second, split) - a);
    }
    const Ns exposed = covered + (start - mid);
    Ns host_late = (split - free) - covered_late;
    Ns host_gap = (mid - split) - (covered - covered_late);  // the launch latency
    const Ns stall = std::min(host_late + host_gap, r.pending_stall);
    r.pending_stall = 0;
    const Ns stall_late = std::min(stall, host_late);
    host_late -= stall_late;
    host_gap -= stall - stall_late;

    // Clock at the kernel's start, after the GPU cooled while idle.
    cool(r, start);
    const int f_dvfs = clock_for(r);  // the clock DVFS alone would run
    const int cap = r.rank == c_.straggler_rank
                        ? static_cast<int>(fmax_ * c_.straggler_clock) / 15 * 15
                        : fmax_;
    const int f = std::min(f_dvfs, cap);
    const bool clock_changed = f != r.clock_mhz;
    r.clock_mhz = f;

    // Duration, effect by effect.
    const bool matrix = k != nullptr && k->matrix;
    const double peak = matrix ? d_.matrix_tflops(c_.dtype) * 1e12 : d_.vector_tflops_fp32 * 1e12;
    const double t_mem = bytes / (d_.mem_bw_gbs * 1e9 * c_.memory_efficiency) * 1e9;
    const double eff = matrix ? c_.matrix_efficiency : 0.5;
    const double t_comp0 = flops / (peak * eff) * 1e9;
    const double t_comp1 = matrix ? t_comp0 / (1.0 - c_.mfu_loss) : t_comp0;
    const double t_comp_dvfs = t_comp1 * fmax_ / f_dvfs;
    const double t_comp_f = t_comp1 * fmax_ / f;
    const Ns floor_ns = cls == OpClass::kMemcpy || cls == OpClass::kMemset ? 1500 : 2500;
    auto dur_of = [&](double tc) {
      return std::max<Ns>(floor_ns, std::llround(std::max(tc, t_mem)));
    };
    const Ns nominal = dur_of(t_comp0);
    const Ns d1 = dur_of(t_comp1);
    // DVFS is charged from the maximum clock to the clock DVFS runs; a straggler's cap only for
    // what it takes below that (nothing when DVFS already holds the clock under the cap).
    const Ns d_dvfs = dur_of(t_comp_dvfs);
    const Ns d2 = dur_of(t_comp_f);
    // Noise on the work, then the work slowed wherever a collective runs beside it on this GPU.
    Ns d3 = d2;
    if (c_.noise > 0) {
      const double z = std::clamp(
          gauss(c_.seed * 1000003ULL + static_cast<uint64_t>(r.rank) * 7919ULL * 1000003ULL +
                pc * 31 + static_cast<uint64_t>(r.iteration) * 1000000007ULL),
          -3.0, 3.0);
      d3 = std::max<Ns>(floor_ns, d2 + std::llround(static_cast<double>(d2) * c_.noise * z));
    }
    const Ns d4 = c_.comm_interference > 0 ? slowed(r, start, d3) : d3;
    const Ns dur = d4;
    r.compute_free = start + dur;
    const double intensity = (cls == OpClass::kGemm || cls == OpClass::kAttention) ? 1.0 : 0.35;
    r.heat = std::min(90e6, r.heat + intensity * static_cast<double>(dur));
    r.heat_t = start + dur;

    if (e == nullptr) return;
    const Ns off = node_offset(r.node);
    const bool amd = d_.vendor == Vendor::kAmd;
    const int64_t corr = e->ids.corr++;
    const int64_t ext = e->ids.ext++;
    auto& w = *e->w;
    auto& b = w.buf();
    // cpu_op (forward ops get a Sequence number, used by their backward).
    const bool fwd = phase == Phase::kForward && pc != SIZE_MAX;
    int64_t seq = -1;
    if (fwd) {
      seq = e->ids.seq++;
      e->fwd_seq[pc] = seq;
      e->fwd_flow[pc] = e->ids.flow++ + 1000000000;
      e->fwd_ts[pc] = op_start;
    }
    const std::string dims = k != nullptr && !k->dims.empty() ? k->dims : "[]";
    fmt::format_to(std::back_inserter(b),
                   ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, ",
                   host_op, pid(r), tid(r, bwd), w.ts(op_start + off), us(r.host - op_start), ext);
    if (seq >= 0)
      fmt::format_to(std::back_inserter(b), "\"Sequence number\": {}, \"Fwd thread id\": 0, ", seq);
    const std::string_view types =
        k != nullptr && !k->types.empty() ? std::string_view(k->types) : "[\"c10::BFloat16\"]";
    fmt::format_to(std::back_inserter(b),
                   "\"Record function id\": 0, \"Input Dims\": {}, \"Input type\": {}", dims,
                   types);
    if (k != nullptr && !k->concrete.empty())
      fmt::format_to(std::back_inserter(b), ", \"Concrete Inputs\": {}", k->concrete);
    b += "}}";
    const bool copy = cls == OpClass::kMemcpy && k == nullptr;
    const bool memset = cls == OpClass::kMemset;
    const char* rt = copy     ? (amd ? "hipMemcpyAsync" : "cudaMemcpyAsync")
                     : memset ? (amd ? "hipMemsetAsync" : "cudaMemsetAsync")
                              : (amd ? "hipLaunchKernel" : "cudaLaunchKernel");
    runtime_event(w, r, bwd, rt, rt_start + off, rt_end - rt_start, corr, ext);
    flow(w, corr, pid(r), tid(r, bwd), rt_start + off, local_rank(r.rank), compute_stream_,
         start + off);
    const int dev = local_rank(r.rank);
    if (copy || memset) {
      fmt::format_to(
          std::back_inserter(b),
          ",\n{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
          "\"ts\": {}, \"dur\": {}, \"args\": {{{}\"device\": {}, \"context\": 1, \"stream\": {}, "
          "\"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": {:.3f}}}}}",
          copy ? "gpu_memcpy" : "gpu_memset", kname, dev, compute_stream_, w.ts(start + off),
          us(dur), amd ? std::string() : fmt::format("\"External id\": {}, ", ext), dev,
          compute_stream_, corr, static_cast<int64_t>(bytes), bytes / static_cast<double>(dur));
    } else if (amd) {
      fmt::format_to(
          std::back_inserter(b),
          ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
          "\"ts\": {}, \"dur\": {}, \"args\": {{\"device\": {}, \"stream\": {}, \"correlation\": "
          "{}, \"kind\": \"Dispatch Kernel\", \"grid\": [{}, 1, 1], \"block\": [256, 1, 1]}}}}",
          kname, dev, compute_stream_, w.ts(start + off), us(dur), dev, compute_stream_, corr,
          d_.sm_count * 4 * 256);
    } else {
      fmt::format_to(
          std::back_inserter(b),
          ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
          "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"queued\": 0, \"device\": "
          "{}, \"context\": 1, \"stream\": {}, \"correlation\": {}, \"registers per thread\": {}, "
          "\"shared memory\": {}, \"blocks per SM\": 1.0, \"warps per SM\": 8.0, \"grid\": [{}, 1, "
          "1], \"block\": [{}, 1, 1], \"est. achieved occupancy %\": 25}}}}",
          kname, dev, compute_stream_, w.ts(start + off), us(dur), ext, dev, compute_stream_, corr,
          matrix ? 168 : 32, matrix ? 213504 : 0, d_.sm_count, matrix ? 384 : 128);
    }
    // Built-in copies have no program op: -2 = the batch upload, -3 = loss.item().
    const int32_t op_key =
        op_id >= 0 ? op_id : (std::string_view(op_label) == "aten::copy_" ? -2 : -3);
    KernelTruth kt{corr,
                   c_.first_step + r.iteration,
                   phase,
                   layer,
                   op_key,
                   cls,
                   f,
                   start + off,
                   dur,
                   nominal,
                   d1 - nominal,
                   d2 - d_dvfs,
                   d_dvfs - d1,
                   d4 - d3,
                   d3 - d2,
                   exposed,
                   host_gap,
                   stall,
                   host_late,
                   flops,
                   bytes,
                   theoretical_ns(matrix, flops, bytes),
                   kname};
    e->kernels->push_back(kt);
    Effects& ef = (*e->effects)[EffectKey{kt.iteration, phase, layer, op_key}];
    ++ef.kernels;
    ef.kernel_ns += dur;
    ef.mfu_ns += kt.mfu_ns;
    ef.straggler_ns += kt.straggler_ns;
    ef.dvfs_ns += kt.dvfs_ns;
    ef.interference_ns += kt.interference_ns;
    ef.noise_ns += kt.noise_ns;
    ef.exposed_comm_ns += exposed;
    ef.launch_ns += host_gap;
    ef.stall_ns += stall;
    ef.host_late_ns += host_late;
    e->busy->push_back({start + off, start + dur + off, f, false});
    if (clock_changed) e->clock->push_back({start + off, f, r.heat});
    w.flush_if_big();
  }

  const SynthConfig& c_;
  const DeviceSpec& d_;
  const Program& p_;
  const Shapes& s_;
  int fmax_, floor_mhz_, nodes_;
  int compute_stream_, comm_stream_;
};

std::string op_label(const Program& p, int32_t op) {
  if (op >= 0) return p.ops[static_cast<size_t>(op)];
  // Kernels launched outside any annotation: the operation is the launching op (the batch upload
  // and the loss readback).
  return op == -2 ? "aten::copy_" : "aten::_local_scalar_dense";
}

// nvidia-smi style timestamp "2026/01/01 00:00:05.123" from epoch ns.
std::string smi_time(Ns t) {
  const std::time_t s = static_cast<std::time_t>(t / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>((t / 1000000) % 1000));
}

// The telemetry tool's clock minus the trace clock of the same node: nvidia-smi prints local wall
// time without a zone (the run's zone is UTC+1 here), amd-smi prints epoch milliseconds; both
// stamp a sample telemetry_lag_ms after it was read.
Ns telemetry_offset_ns(const SynthConfig& c, bool amd) {
  const bool utc = amd || c.telemetry_format == "nvml";  // epoch stamps: amd-smi, the sampler
  return (utc ? 0 : c.telemetry_utc_offset_s * 1000000000LL) + c.telemetry_lag_ms * 1000000LL;
}

struct RankOutput {
  std::vector<KernelTruth> kernels;
  std::map<EffectKey, Effects> effects;
  std::vector<BusySpan> busy;
  std::vector<ClockPoint> clock;
  std::vector<std::pair<int, std::pair<Ns, Ns>>> steps;
  uint64_t bytes = 0;
  Ns offset = 0;
  std::string error;
};

}  // namespace

namespace {

// Pass 1 over program actions [from, to): every rank in lockstep, collective by collective, to
// find when each collective ends (coll_end).
void lockstep(const SynthConfig& c, Simulator& sim, const Program& prog, std::vector<RankSim>& st,
              std::vector<Ns>& coll_end, size_t from, size_t to) {
  std::vector<Ns> arrivals(static_cast<size_t>(c.ranks));
  for (size_t pc = from; pc < to; ++pc) {
    const Action& a = prog.acts[pc];
    if (a.act == Act::kColl) {
      Ns last = 0;
      for (int r = 0; r < c.ranks; ++r) {
        arrivals[static_cast<size_t>(r)] = sim.coll_arrive(st[static_cast<size_t>(r)], a);
        last = std::max(last, arrivals[static_cast<size_t>(r)]);
      }
      const Ns end = last + sim.coll_duration(prog.kdefs[static_cast<size_t>(a.kdef)]);
      coll_end[static_cast<size_t>(a.coll)] = end;
      for (int r = 0; r < c.ranks; ++r)
        sim.coll_finish(st[static_cast<size_t>(r)], a, arrivals[static_cast<size_t>(r)], end,
                        nullptr);
    } else {
      for (int r = 0; r < c.ranks; ++r)
        sim.step(st[static_cast<size_t>(r)], pc, &coll_end, nullptr);
    }
  }
}

// Pass 1, iteration by iteration. A kernel's duration depends on the collectives it runs beside,
// some issued by the host after it (the next all-gather while the kernel still runs), and their
// times depend on kernel durations in turn. So with comm interference each iteration runs in
// rounds from the same start, each with the collective intervals of the round before (kNoSpan
// at first), until none changes; the dependence is causal (a collective depends on what ran
// before it), so the rounds settle (two or three). Iterations are apart: the host waits for the
// GPU at each step's end, before it issues the next step's work. Returns the ranks' final states
// (their step spans and collective intervals among them).
std::vector<RankSim> settle(const SynthConfig& c, Simulator& sim, const Program& prog,
                            std::vector<Ns>& coll_end) {
  coll_end.assign(static_cast<size_t>(prog.n_colls), 0);
  std::vector<RankSim> st(static_cast<size_t>(c.ranks));
  for (int r = 0; r < c.ranks; ++r) {
    RankSim& x = st[static_cast<size_t>(r)];
    x.rank = r;
    x.node = r / c.gpus_per_node;
    Simulator::start_rank(x, Simulator::kRunStart + static_cast<Ns>(r % 7) * 1300);
    x.coll_span.assign(static_cast<size_t>(prog.n_colls), kNoSpan);
  }
  std::vector<size_t> cut;  // each iteration's first action, then the end
  for (size_t pc = 0; pc < prog.acts.size(); ++pc)
    if (prog.acts[pc].act == Act::kStepBegin) cut.push_back(pc);
  cut.push_back(prog.acts.size());
  std::vector<RankScalars> saved(st.size());
  std::vector<size_t> steps(st.size());
  std::vector<std::pair<Ns, Ns>> before;
  constexpr int kMaxRounds = 32;
  for (size_t i = 0; i + 1 < cut.size(); ++i) {
    if (c.comm_interference <= 0) {
      lockstep(c, sim, prog, st, coll_end, cut[i], cut[i + 1]);
      continue;
    }
    size_t c0 = SIZE_MAX, c1 = 0;  // the iteration's collectives
    for (size_t pc = cut[i]; pc < cut[i + 1]; ++pc)
      if (prog.acts[pc].act == Act::kColl) {
        c0 = std::min(c0, static_cast<size_t>(prog.acts[pc].coll));
        c1 = std::max(c1, static_cast<size_t>(prog.acts[pc].coll) + 1);
      }
    if (c0 > c1) c0 = c1;
    for (size_t r = 0; r < st.size(); ++r) {
      saved[r] = st[r];
      steps[r] = st[r].step_spans.size();
    }
    for (int round = 1;; ++round) {
      before.clear();
      for (const RankSim& x : st)
        before.insert(before.end(), x.coll_span.begin() + static_cast<std::ptrdiff_t>(c0),
                      x.coll_span.begin() + static_cast<std::ptrdiff_t>(c1));
      lockstep(c, sim, prog, st, coll_end, cut[i], cut[i + 1]);
      bool same = true;
      for (size_t r = 0; r < st.size() && same; ++r)
        same = std::equal(st[r].coll_span.begin() + static_cast<std::ptrdiff_t>(c0),
                          st[r].coll_span.begin() + static_cast<std::ptrdiff_t>(c1),
                          before.begin() + static_cast<std::ptrdiff_t>(r * (c1 - c0)));
      if (same) break;
      if (round >= kMaxRounds)
        throw Error(fmt::format(
            "chopper synth: the collectives' times of iteration {} did not settle in {} rounds", i,
            round));
      for (size_t r = 0; r < st.size(); ++r) {
        static_cast<RankScalars&>(st[r]) = saved[r];
        st[r].step_spans.resize(steps[r]);
      }
    }
  }
  return st;
}

// Per rank and iteration: the step time of `c` minus that of `cf` (the same job without one
// effect: its cost), both settled.
std::vector<std::vector<Ns>> step_cost(const std::vector<RankSim>& st, const SynthConfig& cf,
                                       const DeviceSpec& dev, const Program& prog,
                                       const Shapes& shapes) {
  Simulator sim_cf(cf, dev, prog, shapes);
  std::vector<Ns> cf_end;
  const std::vector<RankSim> st_cf = settle(cf, sim_cf, prog, cf_end);
  std::vector<std::vector<Ns>> cost(st.size());
  for (size_t r = 0; r < st.size(); ++r)
    for (size_t i = 0; i < st[r].step_spans.size() && i < st_cf[r].step_spans.size(); ++i)
      cost[r].push_back((st[r].step_spans[i].second - st[r].step_spans[i].first) -
                        (st_cf[r].step_spans[i].second - st_cf[r].step_spans[i].first));
  return cost;
}

}  // namespace

SynthSummary synthesize(const SynthConfig& c, const std::string& out_dir) {
  namespace fs = std::filesystem;
  const DeviceSpec* dev = find_device(c.device);
  if (dev == nullptr)
    throw Error("unknown device '" + c.device + "' (h100, h200, b200, a100, mi300x, mi250)");
  const ModelPreset* m = find_preset(c.preset);
  if (m == nullptr)
    throw Error("unknown preset '" + c.preset +
                "' (llama3-8b, llama3-70b, gpt3-175b, mixtral-8x7b)");
  if (c.ranks < 1 || c.gpus_per_node < 1 || c.iterations < 1 || c.batch < 1 || c.seq < 1)
    throw Error("ranks, gpus per node, iterations, batch and sequence length must be >= 1");
  if (c.dvfs < 0 || c.dvfs >= 0.9 || c.mfu_loss < 0 || c.mfu_loss >= 0.95 ||
      c.straggler_clock <= 0.1 || c.straggler_clock > 1 || c.noise < 0 || c.noise > 0.3 ||
      c.comm_slowdown < 1)
    throw Error("an inefficiency knob is out of range (see chopper synth --help)");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir + ": cannot create directory: " + ec.message());

  ProgramBuilder pb(c, *dev, *m);
  const Program prog = pb.build();
  const Shapes shapes = pb.shapes();
  Simulator sim(c, *dev, prog, shapes);

  // Pass 1: lockstep over all ranks to find when every collective ends.
  std::vector<Ns> coll_end;
  const std::vector<RankSim> st = settle(c, sim, prog, coll_end);
  // The straggler's cost: the same run without it (same seed, so the same noise), lockstep too;
  // per rank and iteration, the step time it adds. The noise's likewise: the same run without
  // noise (what the ranks' varying kernel durations cost, mostly as waits at collectives for the
  // rank that happened to be slowest).
  std::vector<std::vector<Ns>> straggler_cost(static_cast<size_t>(c.ranks)),
      noise_cost(static_cast<size_t>(c.ranks));
  if (c.straggler_rank >= 0) {
    SynthConfig cf = c;
    cf.straggler_rank = -1;
    straggler_cost = step_cost(st, cf, *dev, prog, shapes);
  }
  if (c.noise > 0) {
    SynthConfig cf = c;
    cf.noise = 0;
    noise_cost = step_cost(st, cf, *dev, prog, shapes);
  }

  // Pass 2: each rank alone, writing its trace.
  SynthSummary sum;
  std::vector<RankOutput> outs(static_cast<size_t>(c.ranks));
  const bool amd = dev->vendor == Vendor::kAmd;
  std::string dev_props = "[";
  for (int i = 0; i < c.gpus_per_node; ++i) {
    dev_props += fmt::format(
        "{}\n    {{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, \"computeMajor\": {}, "
        "\"computeMinor\": {}, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": "
        "2048, \"regsPerBlock\": 65536, \"warpSize\": {}, \"sharedMemPerBlock\": 49152, "
        "\"numSms\": {}, \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, "
        "\"sharedMemPerMultiprocessor\": 233472}}",
        i ? "," : "", i, json_string(dev->marketing_name),
        static_cast<int64_t>(dev->mem_gib * 1073741824.0), dev->compute_major, dev->compute_minor,
        dev->warp_size, dev->sm_count);
  }
  dev_props += "]";
  std::string ranks_list = "[";
  for (int i = 0; i < c.ranks; ++i) ranks_list += (i ? ", " : "") + std::to_string(i);
  ranks_list += "]";
  const unsigned threads = c.threads == 0 ? default_threads() : c.threads;
  parallel_for(static_cast<size_t>(c.ranks), threads, [&](size_t ri) {
    RankOutput& out = outs[ri];
    try {
      const int r = static_cast<int>(ri);
      RankSim rs;
      rs.rank = r;
      rs.node = r / c.gpus_per_node;
      Simulator::start_rank(rs, Simulator::kRunStart + static_cast<Ns>(r % 7) * 1300);
      rs.coll_span = st[ri].coll_span;  // pass 1's, which this pass reproduces
      out.offset = sim.node_offset(rs.node);
      TraceWriter w(fmt::format("{}/rank-{}.json", out_dir, r), Simulator::kBase);
      Simulator::Emit e{&w, &out.kernels, &out.effects, &out.busy, &out.clock, &out.steps,
                        {}, {},           {},           {},        {},         {}};
      e.fwd_seq.assign(prog.acts.size(), -1);
      e.fwd_flow.assign(prog.acts.size(), -1);
      e.fwd_ts.assign(prog.acts.size(), 0);
      auto& b = w.buf();
      fmt::format_to(
          std::back_inserter(b),
          "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": {},\n  \"distributedInfo\": "
          "{{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \"pg_count\": 1, "
          "\"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
          "\"cuda:nccl\", \"pg_size\": {}, \"ranks\": {}}}], \"nccl_version\": \"{}\"}},\n  "
          "\"record_shapes\": 1,\n  {},\n  \"traceEvents\": [\n",
          dev_props, r, c.ranks, c.ranks, ranks_list, "2.21.5",
          amd ? "\"roctracer_version\": 4, \"hip_runtime_version\": 60342134, "
                "\"hip_driver_version\": 60342134"
              : "\"cupti_version\": 24, \"cuda_runtime_version\": 12060, \"cuda_driver_version\": "
                "12060");
      fmt::format_to(
          std::back_inserter(b),
          "{{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": {}, \"tid\": 0, "
          "\"args\": {{\"name\": \"python\"}}}},\n{{\"name\": \"process_name\", \"ph\": \"M\", "
          "\"ts\": 0.000, \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": "
          "\"python\"}}}},\n{{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": "
          "{}, \"tid\": {}, \"args\": {{\"name\": \"thread {} (python)\"}}}}",
          sim.pid(rs), r % c.gpus_per_node, sim.pid(rs), sim.tid(rs, false), sim.tid(rs, false));
      for (size_t pc = 0; pc < prog.acts.size(); ++pc) {
        const Action& a = prog.acts[pc];
        if (a.act == Act::kColl) {
          const Ns arr = sim.coll_arrive(rs, a);
          const auto pass1 = rs.coll_span[static_cast<size_t>(a.coll)];
          sim.coll_finish(rs, a, arr, coll_end[static_cast<size_t>(a.coll)], &e);
          if (rs.coll_span[static_cast<size_t>(a.coll)] != pass1)
            throw Error(fmt::format("chopper synth: rank {} collective {} differs between passes",
                                    r, a.coll));
        } else {
          sim.step(rs, pc, &coll_end, &e);
        }
      }
      fmt::format_to(std::back_inserter(b),
                     "\n  ],\n  \"traceName\": \"rank-{}.json\",\n  \"displayTimeUnit\": \"ms\",\n "
                     " \"baseTimeNanoseconds\": {}\n}}\n",
                     r, Simulator::kBase);
      out.bytes = w.close();
    } catch (const std::exception& ex) {
      out.error = ex.what();
    }
  });
  for (size_t r = 0; r < outs.size(); ++r) {
    if (!outs[r].error.empty()) throw Error(outs[r].error);
    sum.trace_files.push_back(fmt::format("{}/rank-{}.json", out_dir, r));
    sum.bytes_written += outs[r].bytes;
    sum.kernels += outs[r].kernels.size();
  }

  // Telemetry: one CSV per node, as nvidia-smi / amd-smi print it. The power model: a GPU draws
  // idle_w, plus (tdp_w - idle_w) x (0.55 + 0.45 x (clock / max clock)^2) while a compute kernel
  // runs, plus (tdp_w - idle_w) x 0.15 while a collective runs. Utilization is the share of the
  // interval with any kernel running (nvidia-smi's utilization.gpu). A power sample is the mean
  // power over the sampling interval that ends at it; clocks, temperature and throttle reasons are
  // read at the sample. Samples are taken on the node's own clock (the one its traces use) and
  // stamped on the telemetry tool's clock: nvidia-smi prints local wall time with no zone, and both
  // tools stamp a query a few ms after its reading (telemetry_offset_ns() in truth.json).
  const Ns tel_offset = telemetry_offset_ns(c, amd);
  auto power_over = [&](const RankOutput& o, size_t& from, Ns lo, Ns hi) {
    double joules = dev->idle_w * static_cast<double>(hi - lo) * 1e-9;
    while (from < o.busy.size() && o.busy[from].end <= lo) ++from;
    for (size_t j = from; j < o.busy.size() && o.busy[j].start < hi; ++j) {
      const Ns x = std::max<Ns>(0, std::min(o.busy[j].end, hi) - std::max(o.busy[j].start, lo));
      const double fr = static_cast<double>(o.busy[j].mhz) / dev->max_clock_mhz;
      joules += (dev->tdp_w - dev->idle_w) * (o.busy[j].comm ? 0.15 : 0.55 + 0.45 * fr * fr) *
                static_cast<double>(x) * 1e-9;
    }
    return joules;
  };
  // Kernels in start order; their union (what utilization counts).
  std::vector<std::vector<std::pair<Ns, Ns>>> busy_union(outs.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    auto& b = outs[r].busy;
    std::sort(b.begin(), b.end(),
              [](const BusySpan& x, const BusySpan& y) { return x.start < y.start; });
    for (const BusySpan& x : b) {
      if (!busy_union[r].empty() && x.start <= busy_union[r].back().second)
        busy_union[r].back().second = std::max(busy_union[r].back().second, x.end);
      else
        busy_union[r].push_back({x.start, x.end});
    }
  }
  // Energy of every iteration (host step span), exactly, from the same model.
  std::vector<std::vector<double>> iter_energy(outs.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    size_t from = 0;
    for (const auto& step : outs[r].steps)
      iter_energy[r].push_back(power_over(outs[r], from, step.second.first, step.second.second));
  }
  // Link bytes moved in [lo, hi) by a rank's collectives (tx, rx), the transfers spread evenly.
  auto link_over = [&](const RankOutput& o, Ns lo, Ns hi) {
    std::pair<double, double> b{0, 0};
    for (const BusySpan& x : o.busy) {
      if (!x.comm || x.end <= x.xfer_start) continue;
      const Ns in = std::max<Ns>(0, std::min(x.end, hi) - std::max(x.xfer_start, lo));
      const double share = static_cast<double>(in) / static_cast<double>(x.end - x.xfer_start);
      b.first += x.tx_bytes * share;
      b.second += x.rx_bytes * share;
    }
    return b;
  };
  const bool nvml = !amd && c.telemetry_format == "nvml";
  if (c.telemetry && nvml) {
    // CharLLM-PPT's NVML sampler (Zeus): one headerless "t,value" CSV per metric and rank, t =
    // time.time() epoch seconds stamped telemetry_lag_ms after the reading; power the mean over
    // the interval, utilization the busy share, the energy counter in J and the NVLink counters
    // in KiB (NVML's "throughput" fields are cumulative) as they stand at the sample.
    fs::create_directories(out_dir + "/telemetry", ec);
    const Ns T = c.telemetry_interval_ms * 1000000;
    const Ns lag = c.telemetry_lag_ms * 1000000LL;
    const char* stems[] = {"gpu_power",
                           "gpu_util",
                           "sm_clock",
                           "gpu_temp",
                           "gpu_energy",
                           "nvlink_tx_throughput",
                           "nvlink_rx_throughput"};
    for (size_t r = 0; r < outs.size(); ++r) {
      const RankOutput& o = outs[r];
      Ns t0 = INT64_MAX, t1 = 0;
      for (const auto& step : o.steps)
        t0 = std::min(t0, step.second.first), t1 = std::max(t1, step.second.second);
      std::string txt[7];
      size_t pi = 0, bi = 0, ci = 0;
      const auto& u = busy_union[r];
      double energy = 5.0e6 + 1000.0 * static_cast<double>(r);  // the counter's origin, J
      double tx_kib = 1.0e9, rx_kib = 2.0e9;                    // the counters' origins, KiB
      for (Ns t = (t0 / T) * T; t <= t1 + T; t += T) {          // from before the first step
        Ns busy = 0;
        while (bi < u.size() && u[bi].second <= t - T) ++bi;
        for (size_t j = bi; j < u.size() && u[j].first < t; ++j)
          busy += std::max<Ns>(0, std::min(u[j].second, t) - std::max(u[j].first, t - T));
        const double joules = power_over(o, pi, t - T, t);
        energy += joules;
        const auto [tx, rx] = link_over(o, t - T, t);
        tx_kib += tx / 1024, rx_kib += rx / 1024;
        while (ci + 1 < o.clock.size() && o.clock[ci + 1].t <= t) ++ci;
        const int mhz = o.clock.empty() || o.clock[ci].t > t ? dev->max_clock_mhz : o.clock[ci].mhz;
        const double heat = o.clock.empty() || o.clock[ci].t > t ? 0.0 : o.clock[ci].heat;
        const int temp = 32 + static_cast<int>(40.0 * std::min(1.0, heat / 60e6));
        const double ts = static_cast<double>(t + lag) * 1e-9;
        const double v[7] = {
            joules / (static_cast<double>(T) * 1e-9),
            std::min(100.0, 100.0 * static_cast<double>(busy) / static_cast<double>(T)),
            static_cast<double>(mhz),
            static_cast<double>(temp),
            energy,
            std::floor(tx_kib),
            std::floor(rx_kib)};
        for (int q = 0; q < 7; ++q)
          fmt::format_to(std::back_inserter(txt[q]), "{:.6f},{:.6f}\n", ts, v[q]);
      }
      for (int q = 0; q < 7; ++q) {
        const std::string path = fmt::format("{}/telemetry/{}_{}.csv", out_dir, stems[q], r);
        FILE* f = std::fopen(path.c_str(), "wb");
        if (f == nullptr || std::fwrite(txt[q].data(), 1, txt[q].size(), f) != txt[q].size())
          throw Error(path + ": write failed");
        std::fclose(f);
        sum.telemetry_files.push_back(path);
        sum.bytes_written += txt[q].size();
      }
    }
  }
  if (c.telemetry && !nvml) {
    fs::create_directories(out_dir + "/telemetry", ec);
    const int nodes = (c.ranks + c.gpus_per_node - 1) / c.gpus_per_node;
    const Ns T = c.telemetry_interval_ms * 1000000;
    for (int n = 0; n < nodes; ++n) {
      const std::string path =
          fmt::format("{}/telemetry/node{}.{}.csv", out_dir, n, amd ? "amd-smi" : "nvidia-smi");
      std::string txt = amd ? "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,"
                              "gfx,gfx_clock,mem_clock,throttle_status\n"
                            : "timestamp, index, power.draw [W], clocks.current.sm [MHz], "
                              "clocks.current.memory [MHz], temperature.gpu, temperature.memory, "
                              "utilization.gpu [%], clocks_event_reasons.active\n";
      const int first = n * c.gpus_per_node, last = std::min(c.ranks, first + c.gpus_per_node);
      Ns t0 = INT64_MAX, t1 = 0;
      for (int r = first; r < last; ++r) {
        for (const auto& s : outs[static_cast<size_t>(r)].steps) {
          t0 = std::min(t0, s.second.first);
          t1 = std::max(t1, s.second.second);
        }
      }
      std::vector<size_t> bi(static_cast<size_t>(last - first), 0),
          pi(static_cast<size_t>(last - first), 0), ci(static_cast<size_t>(last - first), 0);
      for (Ns t = (t0 / T) * T; t <= t1 + T; t += T) {  // from before the first step
        for (int r = first; r < last; ++r) {
          RankOutput& o = outs[static_cast<size_t>(r)];
          const size_t k = static_cast<size_t>(r - first);
          // Busy share of (t - T, t].
          const auto& u = busy_union[static_cast<size_t>(r)];
          Ns busy = 0;
          while (bi[k] < u.size() && u[bi[k]].second <= t - T) ++bi[k];
          for (size_t j = bi[k]; j < u.size() && u[j].first < t; ++j)
            busy += std::max<Ns>(0, std::min(u[j].second, t) - std::max(u[j].first, t - T));
          const double power = power_over(o, pi[k], t - T, t) / (static_cast<double>(T) * 1e-9);
          while (ci[k] + 1 < o.clock.size() && o.clock[ci[k] + 1].t <= t) ++ci[k];
          const int mhz =
              o.clock.empty() || o.clock[ci[k]].t > t ? dev->max_clock_mhz : o.clock[ci[k]].mhz;
          const double heat = o.clock.empty() || o.clock[ci[k]].t > t ? 0.0 : o.clock[ci[k]].heat;
          const double util = std::min(1.0, static_cast<double>(busy) / static_cast<double>(T));
          const int temp = 32 + static_cast<int>(40.0 * std::min(1.0, heat / 60e6));
          const unsigned reasons = mhz < dev->max_clock_mhz ? (r == c.straggler_rank ? 0x2u : 0x4u)
                                                            : (util < 0.01 ? 0x1u : 0u);
          const Ns ts = t + tel_offset;
          if (amd) {
            txt += fmt::format("{},{},{:.0f},{},{},{:.0f},{},{},{}\n", ts / 1000000, r - first,
                               power, temp + 8, temp + 4, util * 100, mhz, dev->mem_clock_mhz,
                               reasons ? "POWER" : "NONE");
          } else {
            txt += fmt::format("{}, {}, {:.2f} W, {} MHz, {} MHz, {}, {}, {:.0f} %, 0x{:016x}\n",
                               smi_time(ts), r - first, power, mhz, dev->mem_clock_mhz, temp,
                               temp + 6, util * 100, reasons);
          }
        }
      }
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr || std::fwrite(txt.data(), 1, txt.size(), f) != txt.size())
        throw Error(path + ": write failed");
      std::fclose(f);
      sum.telemetry_files.push_back(path);
      sum.bytes_written += txt.size();
    }
  }

  // rocprofv3 counter collection (AMD), recorded with the traces (same correlation ids): one file
  // per rank, one row per compute dispatch x counter, as rocprofv3 --pmc writes it. Counters as the
  // hardware sums them: GRBM_GUI_ACTIVE over the XCDs (cycles the GPU was active: duration x
  // clock), SQ_VALU_MFMA_BUSY_CYCLES over CUs x 4 SIMDs (the MFMA work's cycles at the peak rate,
  // the same at any clock), SQ_INSTS_VALU_MFMA_MOPS_BF16 (MFMA FLOPs / 512). Timestamps on
  // BOOTTIME.
  if (amd && c.counters) {
    fs::create_directories(out_dir + "/counters", ec);
    const Ns boot = Simulator::kRunStart - 3600000000000LL;  // the host booted an hour earlier
    const int xcds = xcd_count(*dev);
    const double peak = dev->matrix_tflops(c.dtype) * 1e12;
    for (size_t r = 0; r < outs.size(); ++r) {
      const std::string path = fmt::format("{}/counters/rank{}_counter_collection.csv", out_dir, r);
      std::string txt =
          "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\","
          "\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\","
          "\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\","
          "\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";
      uint64_t dispatch = 0;
      const int64_t pid = 4000 + static_cast<int64_t>(r);
      for (const KernelTruth& k : outs[r].kernels) {
        if (is_comm(k.cls) || k.cls == OpClass::kMemcpy || k.cls == OpClass::kMemset) continue;
        ++dispatch;
        const bool mfma = k.cls == OpClass::kGemm || k.cls == OpClass::kAttention;
        const double active = static_cast<double>(k.dur_ns) * k.clock_mhz / 1000.0 * xcds;
        const double mfma_cycles =
            mfma ? k.flops / peak * dev->max_clock_mhz * 1e6 * dev->sm_count * 4 : 0.0;
        const std::pair<const char*, double> counters[] = {
            {"GRBM_GUI_ACTIVE", active},
            {"SQ_INSTS_VALU_MFMA_MOPS_BF16", mfma ? k.flops / 512.0 : 0.0},
            {"SQ_VALU_MFMA_BUSY_CYCLES", mfma_cycles},
        };
        const Ns start = k.start_ns - boot;
        for (const auto& [cn, v] : counters)
          txt += fmt::format(
              "{},{},\"Agent {}\",1,{},{},{},{},\"{}\",256,0,0,128,0,96,\"{}\",{:.0f},{},{}\n",
              k.correlation, dispatch, 4 + r % static_cast<size_t>(c.gpus_per_node), pid, pid,
              dev->sm_count * 4 * 256, k.op + 10, k.kernel, cn, v, start, start + k.dur_ns);
      }
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr || std::fwrite(txt.data(), 1, txt.size(), f) != txt.size())
        throw Error(path + ": write failed");
      std::fclose(f);
      sum.counter_files.push_back(path);
      sum.bytes_written += txt.size();
    }
  }

  // NVIDIA: a CUPTI range-profiler pass per rank, as Kineto writes it with profiler_metrics and
  // profiler_measure_per_kernel (a separate run: the range profiler cannot run beside the activity
  // trace). One cuda_profiler_range event per kernel, in the order the kernels ran, named by the
  // kernel, pid = the device, ts/dur splitting the pass's span evenly (not the kernels' times).
  // The pass replays each kernel alone at the maximum clock, so its cycle counts hold no DVFS or
  // co-running communication: gpc__cycles_elapsed.max = (nominal + matrix-unit loss) x f_max;
  // sm__pipe_tensor_cycles_active.sum = the tensor work's cycles at the peak rate over every SM;
  // sm__ops_path_tensor_src_<dt>_dst_fp32.sum = its FLOPs; CUDA-core work as FFMA instructions.
  if (!amd && c.counters) {
    fs::create_directories(out_dir + "/counters", ec);
    const double peak = dev->matrix_tflops(c.dtype) * 1e12;
    const char* dt = c.dtype == DType::kFp16   ? "fp16"
                     : c.dtype == DType::kFp8  ? "fp8"
                     : c.dtype == DType::kBf16 ? "bf16"
                                               : "tf32";
    const std::string tensor_ops = fmt::format("sm__ops_path_tensor_src_{}_dst_fp32.sum", dt);
    for (size_t r = 0; r < outs.size(); ++r) {
      const std::string path = fmt::format("{}/counters/rank{}.cupti_range.json", out_dir, r);
      std::vector<const KernelTruth*> ks;
      for (const KernelTruth& k : outs[r].kernels)
        if (k.cls != OpClass::kMemcpy && k.cls != OpClass::kMemset) ks.push_back(&k);
      std::stable_sort(ks.begin(), ks.end(), [](const KernelTruth* a, const KernelTruth* b) {
        return a->start_ns < b->start_ns;
      });
      const int dev_index = static_cast<int>(r % static_cast<size_t>(c.gpus_per_node));
      std::string txt = fmt::format(
          "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": {}, \"name\": {}, "
          "\"numSms\": {}}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
          "\"world_size\": {}}},\n  \"traceEvents\": [",
          dev_index, json_string(dev->name), dev->sm_count, r, c.ranks);
      const Ns t0 = Simulator::kRunStart / 1000 + 600000000;  // µs, a pass ten minutes later
      const Ns step_us = 50000;
      for (size_t i = 0; i < ks.size(); ++i) {
        const KernelTruth& k = *ks[i];
        const bool mfma = k.cls == OpClass::kGemm || k.cls == OpClass::kAttention;
        const double cycles =
            static_cast<double>(k.nominal_ns + k.mfu_ns) * dev->max_clock_mhz / 1000.0;
        const double tensor_cycles =
            mfma ? k.flops / peak * dev->max_clock_mhz * 1e6 * dev->sm_count : 0.0;
        txt += fmt::format(
            "{}\n  {{\"ph\": \"X\", \"cat\": \"cuda_profiler_range\", \"name\": {}, \"pid\": {}, "
            "\"tid\": 0, \"ts\": {}, \"dur\": {}, \"args\": {{\"gpc__cycles_elapsed.max\": {:.0f}, "
            "\"sm__pipe_tensor_cycles_active.sum\": {:.0f}, \"{}\": {:.0f}, "
            "\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\": {:.0f}}}}}",
            i == 0 ? "" : ",", json_string(k.kernel), dev_index, t0 + static_cast<Ns>(i) * step_us,
            step_us, cycles, tensor_cycles, tensor_ops, mfma ? k.flops : 0.0,
            mfma || is_comm(k.cls) ? 0.0 : k.flops / 2);
      }
      txt += "\n  ],\n  \"traceName\": \"" + fmt::format("rank{}.cupti_range.json", r) + "\"\n}\n";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr || std::fwrite(txt.data(), 1, txt.size(), f) != txt.size())
        throw Error(path + ": write failed");
      std::fclose(f);
      sum.counter_files.push_back(path);
      sum.bytes_written += txt.size();
    }
  }

  // truth.json, written rank by rank so thousands of ranks never sit in one string.
  {
    sum.truth_file = out_dir + "/truth.json";
    FILE* tf = std::fopen(sum.truth_file.c_str(), "wb");
    if (tf == nullptr) throw Error(sum.truth_file + ": cannot write");
    std::unique_ptr<FILE, int (*)(FILE*)> closer(tf, &std::fclose);
    std::string t;
    auto flush = [&] {
      if (!t.empty() && std::fwrite(t.data(), 1, t.size(), tf) != t.size())
        throw Error(sum.truth_file + ": write failed");
      sum.bytes_written += t.size();
      t.clear();
    };
    fmt::format_to(
        std::back_inserter(t),
        "{{\n\"generator\": \"chopper synth\",\n\"config\": {{\"preset\": \"{}\", \"layers\": {}, "
        "\"batch\": {}, \"seq\": {}, \"dtype\": \"{}\", \"parallel\": \"{}\", \"ranks\": {}, "
        "\"gpus_per_node\": {}, \"device\": \"{}\", \"iterations\": {}, \"first_step\": {}, "
        "\"seed\": {}, \"dvfs\": {}, \"mfu_loss\": {}, \"comm_interference\": {}, "
        "\"comm_slowdown\": {}, \"prefetch\": {}, \"host_op_ns\": {}, \"launch_ns\": {}, "
        "\"launch_latency_ns\": {}, \"data_loader_stall_ns\": {}, \"straggler_rank\": {}, "
        "\"straggler_clock\": {}, \"straggler_host_ns\": {}, \"node_clock_offset_ns\": {}, "
        "\"noise\": {}, \"matrix_efficiency\": {}, \"memory_efficiency\": {}}},\n",
        c.preset, shapes.layers, c.batch, c.seq, dtype_name(c.dtype),
        c.parallel == Parallelism::kFsdp ? "fsdp" : "ddp", c.ranks, c.gpus_per_node, dev->name,
        c.iterations, c.first_step, c.seed, c.dvfs, c.mfu_loss, c.comm_interference,
        c.comm_slowdown, c.prefetch, c.host_op_ns, c.launch_ns, c.launch_latency_ns,
        c.data_loader_stall_ns, c.straggler_rank, c.straggler_clock, c.straggler_host_ns,
        c.node_clock_offset_ns, c.noise, c.matrix_efficiency, c.memory_efficiency);
    fmt::format_to(std::back_inserter(t),
                   "\"device\": {{\"name\": \"{}\", \"max_clock_mhz\": {}, \"matrix_tflops\": {}, "
                   "\"vector_tflops_fp32\": {}, \"mem_bw_gbs\": {}}},\n\"ranks\": [",
                   dev->name, dev->max_clock_mhz, dev->matrix_tflops(c.dtype),
                   dev->vector_tflops_fp32, dev->mem_bw_gbs);
    for (size_t r = 0; r < outs.size(); ++r) {
      RankOutput& o = outs[r];
      fmt::format_to(std::back_inserter(t),
                     "{}\n{{\"rank\": {}, \"node\": {}, \"clock_offset_ns\": {}, "
                     "\"telemetry_offset_ns\": {}, \"straggler\": {},\n \"iterations\": [",
                     r ? "," : "", r, static_cast<int>(r) / c.gpus_per_node, o.offset, tel_offset,
                     static_cast<int>(r) == c.straggler_rank);
      for (size_t i = 0; i < o.steps.size(); ++i) {
        const auto [tx, rx] = link_over(o, o.steps[i].second.first, o.steps[i].second.second);
        fmt::format_to(std::back_inserter(t),
                       "{}{{\"iteration\": {}, \"start_ns\": {}, \"end_ns\": {}, \"energy_j\": "
                       "{:.6f}, \"link_tx_bytes\": {:.0f}, \"link_rx_bytes\": {:.0f}, "
                       "\"straggler_cost_ns\": {}, \"noise_cost_ns\": {}}}",
                       i ? ", " : "", o.steps[i].first, o.steps[i].second.first,
                       o.steps[i].second.second, iter_energy[r][i], tx, rx,
                       i < straggler_cost[r].size() ? straggler_cost[r][i] : 0,
                       i < noise_cost[r].size() ? noise_cost[r][i] : 0);
      }
      t += "],\n \"effects\": [";
      bool first = true;
      for (const auto& [key, ef] : o.effects) {
        fmt::format_to(
            std::back_inserter(t),
            "{}\n  {{\"iteration\": {}, \"phase\": \"{}\", \"layer\": {}, \"operation\": \"{}\", "
            "\"kernels\": {}, \"kernel_ns\": {}, \"dvfs_ns\": {}, \"straggler_clock_ns\": {}, "
            "\"mfu_loss_ns\": {}, \"comm_interference_ns\": {}, \"noise_ns\": {}, "
            "\"exposed_comm_ns\": {}, \"launch_overhead_ns\": {}, \"host_stall_ns\": {}, "
            "\"host_late_ns\": {}}}",
            first ? "" : ",", key.iteration, phase_name(key.phase), key.layer,
            op_label(prog, key.op), ef.kernels, ef.kernel_ns, ef.dvfs_ns, ef.straggler_ns,
            ef.mfu_ns, ef.interference_ns, ef.noise_ns, ef.exposed_comm_ns, ef.launch_ns,
            ef.stall_ns, ef.host_late_ns);
        first = false;
      }
      t += "],\n \"kernels\": {\"columns\": [\"correlation\", \"iteration\", \"phase\", \"layer\", "
           "\"operation\", \"op_class\", \"clock_mhz\", \"start_ns\", \"dur_ns\", \"nominal_ns\", "
           "\"mfu_loss_ns\", \"straggler_clock_ns\", \"dvfs_ns\", \"comm_interference_ns\", "
           "\"noise_ns\", \"exposed_comm_ns\", \"launch_overhead_ns\", \"host_stall_ns\", "
           "\"flops\", \"bytes\", \"theoretical_ns\", \"host_late_ns\"], \"rows\": [";
      for (size_t i = 0; i < o.kernels.size(); ++i) {
        const KernelTruth& k = o.kernels[i];
        fmt::format_to(std::back_inserter(t),
                       "{}\n  [{}, {}, \"{}\", {}, \"{}\", \"{}\", {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {}, {}, {}, {:.0f}, {:.0f}, {}, {}]",
                       i ? "," : "", k.correlation, k.iteration, phase_name(k.phase), k.layer,
                       op_label(prog, k.op), op_class_name(k.cls), k.clock_mhz, k.start_ns,
                       k.dur_ns, k.nominal_ns, k.mfu_ns, k.straggler_ns, k.dvfs_ns,
                       k.interference_ns, k.noise_ns, k.exposed_comm_ns, k.launch_ns, k.stall_ns,
                       k.flops, k.bytes, k.theoretical_ns, k.host_late_ns);
      }
      t += "]}}";
      flush();
      // This rank's tables are no longer needed.
      outs[r].kernels = {};
      outs[r].effects = {};
    }
    t += "\n]\n}\n";
    flush();
  }
  return sum;
}

}  // namespace chopper
