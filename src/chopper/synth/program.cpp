// The program builder: each training step's host actions from the model preset (forward,
// backward, optimizer; FSDP or DDP communication), with every kernel's FLOPs, bytes and shapes.
#include "chopper/synth/program.hpp"

#include <fmt/format.h>

namespace chopper::synth_model {

namespace {

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
    launch_backward(fo, L);
    Action e{Act::kRangeEnd};
    e.range = b.range;
    e.phase = Phase::kBackward;
    e.layer = L;
    e.backward_thread = true;
    p_.acts.push_back(e);
  }

  // The kernels of one forward op's backward: a GEMM's dgrad and wgrad, flash attention's backward,
  // the norm's, the embedding's, the loss's, or an elementwise op's gradient.
  void launch_backward(const FwdOp& fo, int L) {
    const KernelDef& d = fo.def;
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

  // One training step's ops, shared by its forward, backward and optimizer parts.
  struct StepOps {
    std::vector<int32_t> ag_of;  // all-gather of each FSDP group (outer = 0, layer L = L + 1)
    std::vector<FwdOp> fwd_outer;
    std::vector<std::vector<FwdOp>> fwd_layers;
    std::vector<int32_t> rs;  // the gradient collectives the optimizer waits for
  };

  void iteration() {
    const int Ls = s_.layers;
    p_.acts.push_back(Action{Act::kStepBegin});
    StepOps so;
    so.ag_of.assign(static_cast<size_t>(Ls + 1), -1);
    so.fwd_layers.resize(static_cast<size_t>(Ls));
    forward(so);
    backward(so);
    optimizer(so);
    p_.acts.push_back(Action{Act::kStepEnd});
  }

  // The embedding, each layer (with FSDP's all-gathers), the final norm, the head and the loss.
  void forward(StepOps& so) {
    const int Ls = s_.layers;
    const bool fsdp = c_.parallel == Parallelism::kFsdp;
    std::vector<int32_t>& ag_of = so.ag_of;
    std::vector<FwdOp>& fwd_outer = so.fwd_outer;
    std::vector<std::vector<FwdOp>>& fwd_layers = so.fwd_layers;
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
  }

  // The autograd thread: each forward op's backward in reverse, with the gradient collectives
  // (FSDP reduce-scatter per layer, DDP all-reduce per bucket).
  void backward(StepOps& so) {
    const int Ls = s_.layers;
    const bool fsdp = c_.parallel == Parallelism::kFsdp;
    std::vector<int32_t>& ag_of = so.ag_of;
    std::vector<int32_t>& rs = so.rs;
    const std::vector<FwdOp>& fwd_outer = so.fwd_outer;
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
      const auto& ops = so.fwd_layers[static_cast<size_t>(L)];
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
    for (const auto& fo : fwd_outer)
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
  }

  // The optimizer: waits for every gradient collective, then AdamW and zero_grad.
  void optimizer(const StepOps& so) {
    const int Ls = s_.layers;
    const bool fsdp = c_.parallel == Parallelism::kFsdp;
    for (int32_t r : so.rs) wait(r, Phase::kOptimizer, -1, false);
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
  }

  const SynthConfig& c_;
  const DeviceSpec& dev_;
  Shapes s_{};
  Program p_;
};

}  // namespace

Program build_program(const SynthConfig& c, const DeviceSpec& d, const ModelPreset& m,
                      Shapes& shapes) {
  ProgramBuilder pb(c, d, m);
  Program p = pb.build();
  shapes = pb.shapes();
  return p;
}

}  // namespace chopper::synth_model
