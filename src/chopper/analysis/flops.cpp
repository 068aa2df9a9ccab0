// FLOPs and bytes of one host op from its recorded shapes. Every formula is written beside the code
// that computes it and collected, with its source, in docs/flops.md. Over 800 lines: a table of
// formulas, one per supported aten op, and the shape parser they share.
//
// Argument positions are those of the op's schema in PyTorch's native_functions.yaml (positional
// arguments in order; the profiler records keyword-only arguments after them). "Input Dims" has one
// element per argument: [d0, d1, ...] for a tensor, [] for a None, a Python scalar or a 0-dim
// tensor, and nested arrays for a tensor list. "Concrete Inputs" has one string per argument: the
// value of scalars, bools and int lists ("True", "0.", "[2, 2]"), "" for tensors.
#include "chopper/analysis/flops.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace chopper {
namespace {

constexpr int kMaxArgs = 24;  // arguments kept per op; later ones are counted but not stored
constexpr int kMaxRank = 8;   // a tensor of higher rank is not understood
constexpr int kMaxDepth = 32;
// Larger sizes are not real tensors. Below it every product of the few sizes a formula multiplies
// stays far from overflow in a double, and exact up to 2^53.
constexpr int64_t kMaxDim = int64_t{1} << 40;

// ---------------------------------------------------------------- parsing

// kEmpty: [] (None, a scalar, or — with a tensor dtype in "Input type" — a 0-dim tensor, which
// op_cost turns into a kTensor of rank 0).
enum class ArgKind : uint8_t { kAbsent, kEmpty, kTensor, kList, kOther };

// Left uninitialized on purpose (parse_dims sets kind and rank of every argument it stores): the
// parser runs once per host op that launched GPU work.
struct Arg {
  ArgKind kind;
  uint8_t rank;
  int64_t d[kMaxRank];  // d[0..rank) valid for kTensor
  bool tensor() const { return kind == ArgKind::kTensor; }
  double numel() const {
    if (kind != ArgKind::kTensor) return 0;
    double n = 1;
    for (int i = 0; i < rank; ++i) n *= static_cast<double>(d[i]);
    return n;
  }
};

constexpr Arg kAbsentArg{ArgKind::kAbsent, 0, {}};

struct Args {
  int n = 0;  // arguments in the array (may exceed kMaxArgs)
  Arg a[kMaxArgs];
  const Arg& at(int i) const { return i >= 0 && i < std::min(n, kMaxArgs) ? a[i] : kAbsentArg; }
};

struct Cursor {
  const char* p;
  const char* e;
  void ws() {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) ++p;
  }
  bool at(char c) {
    ws();
    return p < e && *p == c;
  }
  bool eat(char c) {
    if (!at(c)) return false;
    ++p;
    return true;
  }
  bool done() {
    ws();
    return p == e;
  }
};

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A JSON string at c.p (which is '"'): its raw contents (escapes left as written).
bool read_string(Cursor& c, std::string_view& out) {
  const char *p = c.p, *e = c.e;  // locals: the loop runs in registers
  if (p >= e || *p != '"') return false;
  const char* s = ++p;
  while (p < e && *p != '"') p += *p == '\\' && e - p > 1 ? 2 : 1;  // never past e
  if (p >= e) {
    c.p = e;
    return false;
  }
  out = std::string_view(s, static_cast<size_t>(p - s));
  c.p = p + 1;
  return true;
}

// Skips one JSON value of any kind; false on bad syntax or nesting deeper than kMaxDepth.
bool skip_value(Cursor& c, int depth) {
  c.ws();
  if (c.p >= c.e) return false;
  const char ch = *c.p;
  if (ch == '"') {
    std::string_view s;
    return read_string(c, s);
  }
  if (ch == '[' || ch == '{') {
    if (depth >= kMaxDepth) return false;
    const char close = ch == '[' ? ']' : '}';
    ++c.p;
    if (c.eat(close)) return true;
    for (;;) {
      if (ch == '{') {
        std::string_view key;
        c.ws();
        if (!read_string(c, key) || !c.eat(':')) return false;
      }
      if (!skip_value(c, depth + 1)) return false;
      if (c.eat(',')) continue;
      return c.eat(close);
    }
  }
  // Number or literal: up to the next delimiter.
  const char* s = c.p;
  while (c.p < c.e && *c.p != ',' && *c.p != ']' && *c.p != '}' && *c.p != ':' && *c.p != ' ' &&
         *c.p != '\n' && *c.p != '\t' && *c.p != '\r' && *c.p != '"' && *c.p != '[' && *c.p != '{')
    ++c.p;
  return c.p > s;
}

enum class Num : uint8_t { kOk, kBad, kFail };

// A JSON number at c.p: kOk for an integer in [0, kMaxDim], kBad for another number (negative,
// fractional, too large), kFail when it is not a number.
Num read_size(Cursor& c, int64_t& v) {
  const char *p = c.p, *e = c.e;  // locals: the loops run in registers
  bool neg = false;
  if (p < e && *p == '-') {
    neg = true;
    ++p;
  }
  if (p >= e || !is_digit(*p)) {
    c.p = p;
    return Num::kFail;
  }
  int64_t x = 0;
  bool big = false;
  for (; p < e && is_digit(*p); ++p) {
    if (x > kMaxDim)
      big = true;
    else
      x = x * 10 + (*p - '0');
  }
  bool frac = false;
  for (; p < e && (*p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-' || is_digit(*p));
       ++p)
    frac = true;
  c.p = p;
  v = x;
  if (neg || big || frac || x > kMaxDim) return Num::kBad;
  return Num::kOk;
}

// "Input Dims" into args; false when the text is not a JSON array.
bool parse_dims(std::string_view text, Args& args) {
  Cursor c{text.data(), text.data() + text.size()};
  args.n = 0;
  if (!c.eat('[')) return false;
  if (c.eat(']')) return c.done();
  Arg scratch;
  for (;;) {
    Arg& a = args.n < kMaxArgs ? args.a[args.n] : scratch;
    a.rank = 0;
    if (c.at('[')) {
      ++c.p;
      if (c.eat(']')) {
        a.kind = ArgKind::kEmpty;
      } else {
        a.kind = ArgKind::kTensor;
        bool bad = false;
        for (;;) {
          c.ws();
          if (c.p < c.e && (*c.p == '-' || is_digit(*c.p))) {
            int64_t v = 0;
            const Num s = read_size(c, v);
            if (s == Num::kFail) return false;
            if (s == Num::kBad || a.rank >= kMaxRank)
              bad = true;
            else
              a.d[a.rank++] = v;
          } else {
            if (!skip_value(c, 2)) return false;
            a.kind = ArgKind::kList;  // a tensor list (or something else nested)
          }
          if (c.eat(',')) continue;
          if (c.eat(']')) break;
          return false;
        }
        if (a.kind == ArgKind::kTensor && bad) a.kind = ArgKind::kOther;
      }
    } else {
      if (!skip_value(c, 1)) return false;
      a.kind = ArgKind::kOther;
    }
    ++args.n;
    if (c.eat(',')) continue;
    if (c.eat(']')) break;
    return false;
  }
  return c.done();
}

// Bytes per element of a dtype as the profiler names it (c10 TypeMeta names); 0 = not a tensor
// dtype ("Scalar", "", "TensorList", ...) or unknown.
uint8_t dtype_size(std::string_view t) {
  if (t.size() < 3 || t == "Scalar") return 0;  // the common non-tensor cases first
  if (t == "c10::BFloat16" || t == "c10::Half") return 2;
  if (t == "float") return 4;
  if (t == "double") return 8;
  // FP8 variants (e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e8m0fnu) and packed FP4 (two per byte).
  if (t.starts_with("c10::Float8") || t.starts_with("c10::Float4")) return 1;
  if (t == "long int" || t == "long" || t == "long unsigned int" || t == "unsigned long") return 8;
  if (t == "int" || t == "unsigned int") return 4;
  if (t == "short int" || t == "short" || t == "short unsigned int") return 2;
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t == "c10::qint8" ||
      t == "c10::quint8")
    return 1;
  if (t == "c10::complex<float>") return 8;
  if (t == "c10::complex<double>") return 16;
  if (t == "c10::complex<c10::Half>") return 4;
  return 0;
}

struct Types {
  int n = 0;
  uint8_t size[kMaxArgs];
  // Bytes per element of argument i; 2 (bf16/fp16, the usual training dtype) when not recorded.
  double of(int i) const {
    return i >= 0 && i < std::min(n, kMaxArgs) && size[i] != 0 ? size[i] : 2.0;
  }
};

// "Input type" (a JSON array of strings), up to argument `last`. Malformed text leaves what was
// read: sizes are only ever a default away, so bad types never make an op unknown.
void parse_types(std::string_view text, Types& t, int last) {
  Cursor c{text.data(), text.data() + text.size()};
  t.n = 0;
  if (!c.eat('[') || c.eat(']')) return;
  for (;;) {
    uint8_t sz = 0;
    c.ws();
    std::string_view s;
    if (c.p < c.e && *c.p == '"') {
      if (!read_string(c, s)) return;
      sz = dtype_size(s);
    } else if (!skip_value(c, 1)) {
      return;
    }
    if (t.n < kMaxArgs) t.size[t.n] = sz;
    if (++t.n > last) return;
    if (!c.eat(',')) return;
  }
}

struct Concrete {
  int n = 0;
  std::string_view v[kMaxArgs];
  std::string_view at(int i) const {
    return i >= 0 && i < std::min(n, kMaxArgs) ? v[i] : std::string_view();
  }
  bool has(int i) const { return i >= 0 && i < std::min(n, kMaxArgs); }
};

// "Concrete Inputs" (a JSON array of strings; other values are kept as their raw text), up to
// argument `last`.
void parse_concrete(std::string_view text, Concrete& cv, int last = kMaxArgs - 1) {
  Cursor c{text.data(), text.data() + text.size()};
  cv.n = 0;
  if (!c.eat('[') || c.eat(']')) return;
  for (;;) {
    c.ws();
    std::string_view s;
    if (c.p < c.e && *c.p == '"') {
      if (!read_string(c, s)) {
        cv.n = 0;
        return;
      }
    } else {
      const char* b = c.p;
      if (!skip_value(c, 1)) {
        cv.n = 0;
        return;
      }
      s = std::string_view(b, static_cast<size_t>(c.p - b));
    }
    if (cv.n < kMaxArgs) cv.v[cv.n] = s;
    if (++cv.n > last) return;
    if (c.eat(',')) continue;
    if (!c.eat(']')) cv.n = 0;
    return;
  }
}

// 1 for "True", 0 for "False", -1 otherwise (empty = not recorded).
int bool_value(std::string_view s) {
  if (s == "True" || s == "true" || s == "1") return 1;
  if (s == "False" || s == "false" || s == "0") return 0;
  return -1;
}

bool int_value(std::string_view s, int64_t& v) {
  Cursor c{s.data(), s.data() + s.size()};
  c.ws();
  return read_size(c, v) == Num::kOk && c.done();
}

// "[2, 2]" or "2" (an int list of one, as PyTorch expands it); the count, or -1.
int int_list(std::string_view s, int64_t* out, int cap) {
  Cursor c{s.data(), s.data() + s.size()};
  if (!c.eat('[')) {
    c.ws();
    return read_size(c, out[0]) == Num::kOk && c.done() ? 1 : -1;
  }
  int n = 0;
  if (c.eat(']')) return 0;
  for (;;) {
    c.ws();
    int64_t v = 0;
    if (read_size(c, v) != Num::kOk || n >= cap) return -1;
    out[n++] = v;
    if (c.eat(',')) continue;
    return c.eat(']') && c.done() ? n : -1;
  }
}

// ---------------------------------------------------------------- the op table

enum class Kind : uint8_t {
  kMm,
  kAddmm,
  kBmm,
  kBaddbmm,
  kMatmul,
  kLinear,
  kScaledMm,
  kAttention,
  kConv,
  kConvBackward,
  kNorm,
  kElementwise,
  kCopy,
  kFill,
};

struct AttnSpec {
  int8_t q = 0;        // query's argument index; key and value follow it
  bool bshd = false;   // [batch, seqlen, heads, head_dim] (else [batch, heads, seqlen, head_dim])
  int8_t causal = -1;  // is_causal's argument index
  bool mask_type = false;  // causality given as custom_mask_type (0 none, 1 and 2 causal)
  int8_t alt_nargs = 0;    // an older signature with this many arguments ...
  int8_t alt_causal = -1;  // ... has is_causal here
  int8_t varlen = -1;      // cu_seqlens argument: a tensor there = packed variable-length batch
  bool backward = false;
};

struct ConvSpec {
  int8_t bias = -1, stride = -1, pad = -1, dil = -1, transposed = -1, outpad = -1, groups = -1;
};

struct NormSpec {
  int8_t x = 0, dy = -1, w = -1, b = -1;
  bool rms = false;
};

struct EwSpec {
  int8_t n_in = 1;   // leading arguments that are inputs (a later tensor is an out= argument)
  int8_t cond = -1;  // where's condition: read, but not the output's dtype
  float flops = 1;   // per output element
};

struct OpInfo {
  std::string_view name;  // without "aten::"
  Kind kind;
  AttnSpec attn{};
  ConvSpec conv{};
  NormSpec norm{};
  EwSpec ew{};
};

constexpr OpInfo plain(std::string_view n, Kind k) {
  return OpInfo{n, k};
}
constexpr OpInfo attn(std::string_view n, AttnSpec s) {
  return OpInfo{n, Kind::kAttention, s};
}
constexpr OpInfo conv(std::string_view n, ConvSpec s) {
  return OpInfo{n, Kind::kConv, {}, s};
}
constexpr OpInfo norm(std::string_view n, NormSpec s) {
  return OpInfo{n, Kind::kNorm, {}, {}, s};
}
constexpr OpInfo ew(std::string_view n, int8_t n_in, float flops, int8_t cond = -1) {
  return OpInfo{n, Kind::kElementwise, {}, {}, {}, EwSpec{n_in, cond, flops}};
}

// Schemas are PyTorch's (aten/src/ATen/native/native_functions.yaml, 2.5-2.9); argument indices
// are 0-based positions in them.
constexpr OpInfo kOps[] = {
    // ---- GEMM
    plain("mm", Kind::kMm),            // mm(self [M,K], mat2 [K,N])
    plain("addmm", Kind::kAddmm),      // addmm(self (bias), mat1 [M,K], mat2 [K,N], *, beta, alpha)
    plain("bmm", Kind::kBmm),          // bmm(self [B,M,K], mat2 [B,K,N])
    plain("baddbmm", Kind::kBaddbmm),  // baddbmm(self (bias), batch1 [B,M,K], batch2 [B,K,N], ...)
    plain("matmul", Kind::kMatmul),    // matmul(self, other): numpy-style batched matmul
    plain("linear", Kind::kLinear),    // linear(input [...,K], weight [N,K], bias? [N])
    plain("_scaled_mm", Kind::kScaledMm),  // _scaled_mm(self [M,K], mat2 [K,N], scale_a, scale_b,
                                           //   bias?, scale_result?, out_dtype?, use_fast_accum)
    // ---- attention
    // _flash_attention_forward(query, key, value, cum_seq_q?, cum_seq_k?, max_q, max_k,
    //   dropout_p, is_causal, return_debug_mask, *, scale?, window_size_left?,
    //   window_size_right?, seqused_k?, alibi_slopes?); q/k/v are [B, S, H, D].
    attn("_flash_attention_forward", {.q = 0, .bshd = true, .causal = 8, .varlen = 3}),
    // _flash_attention_backward(grad_out, query, key, value, out, logsumexp, cum_seq_q,
    //   cum_seq_k, max_q, max_k, dropout_p, is_causal, rng_state, unused, *, scale?, ...)
    attn("_flash_attention_backward",
         {.q = 1, .bshd = true, .causal = 11, .varlen = 6, .backward = true}),
    // _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
    //   return_debug_mask, *, scale?); q/k/v are [B, H, S, D] (also in every _scaled_dot_product_*
    //   op and scaled_dot_product_attention below).
    attn("_scaled_dot_product_flash_attention", {.q = 0, .causal = 4}),
    // _scaled_dot_product_flash_attention_backward(grad_out, query, key, value, out, logsumexp,
    //   cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, philox_seed, philox_offset, *,
    //   scale?)
    attn("_scaled_dot_product_flash_attention_backward", {.q = 1, .causal = 11, .backward = true}),
    // _scaled_dot_product_efficient_attention(query, key, value, attn_bias?, compute_log_sumexp,
    //   dropout_p, is_causal, *, scale?)
    attn("_scaled_dot_product_efficient_attention", {.q = 0, .causal = 6}),
    // _scaled_dot_product_efficient_attention_backward(grad_out_, query, key, value, attn_bias,
    //   out, logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, *,
    //   scale?); PyTorch 2.0-2.1 had (grad_out_, query, key, value, out, logsumexp, is_causal,
    //   chunk_grad_outputs, *, scale?): 9 arguments, is_causal at 6.
    attn("_scaled_dot_product_efficient_attention_backward",
         {.q = 1, .causal = 11, .alt_nargs = 9, .alt_causal = 6, .backward = true}),
    // _scaled_dot_product_cudnn_attention(query, key, value, attn_bias?, compute_log_sumexp,
    //   dropout_p, is_causal, return_debug_mask, *, scale?)
    attn("_scaled_dot_product_cudnn_attention", {.q = 0, .causal = 6}),
    // _scaled_dot_product_cudnn_attention_backward(grad_out, query, key, value, out, logsumexp,
    //   philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
    //   is_causal, *, scale?)
    attn("_scaled_dot_product_cudnn_attention_backward", {.q = 1, .causal = 14, .backward = true}),
    // scaled_dot_product_attention(query, key, value, attn_mask?, dropout_p, is_causal, scale?,
    //   enable_gqa) — the composite op above the three fused ones.
    attn("scaled_dot_product_attention", {.q = 0, .causal = 5}),
    // _efficient_attention_forward(query, key, value, bias?, cu_seqlens_q?, cu_seqlens_k?,
    //   max_seqlen_q?, max_seqlen_k?, dropout_p, custom_mask_type, ...); q/k/v are [B, S, H, D].
    attn("_efficient_attention_forward",
         {.q = 0, .bshd = true, .causal = 9, .mask_type = true, .varlen = 4}),
    // _efficient_attention_backward(grad_out_, query, key, value, bias?, out, cu_seqlens_q?,
    //   cu_seqlens_k?, max_seqlen_q, max_seqlen_k, logsumexp, dropout_p, philox_seed,
    //   philox_offset, custom_mask_type, bias_requires_grad, ...)
    attn("_efficient_attention_backward",
         {.q = 1, .bshd = true, .causal = 14, .mask_type = true, .varlen = 6, .backward = true}),
    // ---- convolution: input [N, C, *spatial], weight [K, C/groups, *kernel]
    // convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
    //   groups); _convolution adds benchmark, deterministic, cudnn_enabled, allow_tf32.
    conv("convolution",
         {.bias = 2, .stride = 3, .pad = 4, .dil = 5, .transposed = 6, .outpad = 7, .groups = 8}),
    conv("_convolution",
         {.bias = 2, .stride = 3, .pad = 4, .dil = 5, .transposed = 6, .outpad = 7, .groups = 8}),
    // conv{1,2,3}d(input, weight, bias?, stride, padding, dilation, groups)
    conv("conv1d", {.bias = 2, .stride = 3, .pad = 4, .dil = 5, .groups = 6}),
    conv("conv2d", {.bias = 2, .stride = 3, .pad = 4, .dil = 5, .groups = 6}),
    conv("conv3d", {.bias = 2, .stride = 3, .pad = 4, .dil = 5, .groups = 6}),
    // cudnn_convolution(self, weight, padding, stride, dilation, groups, benchmark, deterministic,
    //   allow_tf32): no bias (older PyTorch had bias? at 2: a tensor there is taken as a bias).
    conv("cudnn_convolution", {.bias = 2, .stride = 3, .pad = 2, .dil = 4, .groups = 5}),
    // miopen_convolution(self, weight, bias?, padding, stride, dilation, groups, benchmark,
    //   deterministic)
    conv("miopen_convolution", {.bias = 2, .stride = 4, .pad = 3, .dil = 5, .groups = 6}),
    // convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
    //   transposed, output_padding, groups, output_mask)
    plain("convolution_backward", Kind::kConvBackward),
    // ---- normalization
    norm("layer_norm", {.x = 0, .w = 2, .b = 3}),  // (input, normalized_shape, weight?, bias?, eps,
                                                   //  cudnn_enable)
    norm("native_layer_norm", {.x = 0, .w = 2, .b = 3}),  // (input, normalized_shape, weight?,
                                                          //  bias?, eps)
    // native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
    //   output_mask)
    norm("native_layer_norm_backward", {.x = 1, .dy = 0, .w = 5, .b = 6}),
    norm("rms_norm", {.x = 0, .w = 2, .rms = true}),  // (input, normalized_shape, weight?, eps?)
    norm("_fused_rms_norm", {.x = 0, .w = 2, .rms = true}),  // same arguments
    // _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight?, output_mask)
    norm("_fused_rms_norm_backward", {.x = 1, .dy = 0, .w = 4, .rms = true}),
    norm("group_norm", {.x = 0, .w = 2, .b = 3}),  // (input, num_groups, weight?, bias?, eps, ...)
    // native_group_norm(input, weight?, bias?, N, C, HxW, group, eps)
    norm("native_group_norm", {.x = 0, .w = 1, .b = 2}),
    // native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
    //   output_mask)
    norm("native_group_norm_backward", {.x = 1, .dy = 0, .w = 4}),
    // batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps,
    //   cudnn_enabled); native_batch_norm, cudnn_batch_norm and miopen_batch_norm take the same
    //   first five.
    norm("batch_norm", {.x = 0, .w = 1, .b = 2}),
    norm("native_batch_norm", {.x = 0, .w = 1, .b = 2}),
    norm("cudnn_batch_norm", {.x = 0, .w = 1, .b = 2}),
    norm("miopen_batch_norm", {.x = 0, .w = 1, .b = 2}),
    // native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
    //   save_mean?, save_invstd?, train, eps, output_mask)
    norm("native_batch_norm_backward", {.x = 1, .dy = 0, .w = 2}),
    // cudnn_batch_norm_backward(input, grad_output, weight, running_mean?, running_var?,
    //   save_mean?, save_var?, epsilon, reserveSpace); miopen_batch_norm_backward likewise.
    norm("cudnn_batch_norm_backward", {.x = 0, .dy = 1, .w = 2}),
    norm("miopen_batch_norm_backward", {.x = 0, .dy = 1, .w = 2}),
    // ---- elementwise: FLOPs per output element, counting each arithmetic operation and each
    //   transcendental (exp, tanh, erf, rsqrt) as one.
    ew("add", 2, 1),  // add(self, other, *, alpha): self + alpha·other (alpha not counted)
    ew("add_", 2, 1), ew("sub", 2, 1), ew("sub_", 2, 1), ew("rsub", 2, 1), ew("mul", 2, 1),
    ew("mul_", 2, 1), ew("div", 2, 1),       // div(self, other, *, rounding_mode?)
    ew("div_", 2, 1), ew("pow", 2, 1),       // pow(self, exponent)
    ew("pow_", 2, 1), ew("where", 3, 1, 0),  // where(condition, self, other): one select
    ew("neg", 1, 1), ew("neg_", 1, 1), ew("relu", 1, 1),  // max(x, 0)
    ew("relu_", 1, 1), ew("rsqrt", 1, 1), ew("rsqrt_", 1, 1), ew("exp", 1, 1), ew("exp_", 1, 1),
    ew("tanh", 1, 1), ew("tanh_", 1, 1),
    ew("sigmoid", 1, 4),                     // 1 / (1 + exp(-x)): negate, exp, add, divide
    ew("sigmoid_", 1, 4), ew("silu", 1, 5),  // x · sigmoid(x)
    ew("silu_", 1, 5),
    ew("gelu", 1, 5),  // gelu(self, approximate): 0.5·x·(1 + erf(x/√2)); "tanh": 9, see below
    ew("gelu_", 1, 5),
    plain("copy_", Kind::kCopy),  // copy_(self, src, non_blocking): 0 FLOPs, read src, write self
    plain("fill_", Kind::kFill),  // fill_(self, value): 0 FLOPs, write self
    plain("zero_", Kind::kFill),  // zero_(self)
};

constexpr size_t kNumOps = std::size(kOps);

// Name -> kOps index: an open-addressing hash table built once (no heap), so that a lookup is one
// hash of the name and usually one comparison.
constexpr size_t kTableSize = 256;  // a power of two, > 2 × kNumOps
static_assert(kTableSize > 2 * kNumOps);

uint32_t name_hash(std::string_view s) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (const char ch : s) h = (h ^ static_cast<uint8_t>(ch)) * 16777619u;
  return h;
}

const std::array<uint8_t, kTableSize>& op_table() {
  static const std::array<uint8_t, kTableSize> t = [] {
    std::array<uint8_t, kTableSize> a{};
    a.fill(0xff);
    for (size_t i = 0; i < kNumOps; ++i) {
      size_t slot = name_hash(kOps[i].name) & (kTableSize - 1);
      while (a[slot] != 0xff) slot = (slot + 1) & (kTableSize - 1);
      a[slot] = static_cast<uint8_t>(i);
    }
    return a;
  }();
  return t;
}

const OpInfo* find_op(std::string_view name) {
  constexpr std::string_view kPrefix = "aten::";
  if (!name.starts_with(kPrefix)) return nullptr;
  name.remove_prefix(kPrefix.size());
  const auto& t = op_table();
  for (size_t slot = name_hash(name) & (kTableSize - 1);; slot = (slot + 1) & (kTableSize - 1)) {
    const uint8_t i = t[slot];
    if (i == 0xff) return nullptr;
    if (kOps[i].name == name) return &kOps[i];
  }
}

// The last argument whose element size the op's formula reads (types after it are not parsed).
int last_typed_arg(const OpInfo& op) {
  switch (op.kind) {
    case Kind::kMm:
    case Kind::kBmm:
    case Kind::kMatmul:
    case Kind::kCopy:
      return 1;
    case Kind::kAddmm:
    case Kind::kBaddbmm:
    case Kind::kLinear:
    case Kind::kConv:
    case Kind::kConvBackward:
      return 2;
    case Kind::kScaledMm:
      return 4;
    case Kind::kAttention:
      return op.attn.q + 2;
    case Kind::kNorm:
      return std::max({op.norm.x, op.norm.dy, op.norm.w, op.norm.b});
    case Kind::kElementwise:
      return op.ew.n_in - 1;
    case Kind::kFill:
      return 0;
  }
  return kMaxArgs - 1;
}

// ---------------------------------------------------------------- costs

OpCost make(CostFamily f, double flops, double bytes) {
  OpCost c;
  c.family = f;
  c.flops = flops;
  c.bytes = bytes;
  return c;
}

bool rank_is(const Arg& a, int r) {
  return a.tensor() && a.rank == r;
}

// GEMM, TraceLens GEMM.flops_func / bytes_func: FLOPs = 2·M·N·K per batch (+M·N with a bias
// added); bytes = (M·K·sa + K·N·sb + M·N·so) per batch + the bias tensor.
OpCost gemm(double batch, double m, double n, double k, bool bias_add, double bias_bytes, double sa,
            double sb, double so) {
  return make(CostFamily::kGemm, batch * (2 * m * n * k + (bias_add ? m * n : 0)),
              batch * (m * k * sa + k * n * sb + m * n * so) + bias_bytes);
}

OpCost mm_like(const Args& a, const Types& t, int i, int bias) {
  const Arg &x = a.at(i), &y = a.at(i + 1);
  if (!rank_is(x, 2) || !rank_is(y, 2) || x.d[1] != y.d[0]) return {};
  const double s = t.of(i);
  const double bias_bytes = bias >= 0 ? a.at(bias).numel() * t.of(bias) : 0;
  return gemm(1, static_cast<double>(x.d[0]), static_cast<double>(y.d[1]),
              static_cast<double>(x.d[1]), bias >= 0, bias_bytes, s, s, s);
}

OpCost bmm_like(const Args& a, const Types& t, int i, int bias) {
  const Arg &x = a.at(i), &y = a.at(i + 1);
  if (!rank_is(x, 3) || !rank_is(y, 3) || x.d[0] != y.d[0] || x.d[2] != y.d[1]) return {};
  const double s = t.of(i);
  const double bias_bytes = bias >= 0 ? a.at(bias).numel() * t.of(bias) : 0;
  return gemm(static_cast<double>(x.d[0]), static_cast<double>(x.d[1]), static_cast<double>(y.d[2]),
              static_cast<double>(x.d[2]), bias >= 0, bias_bytes, s, s, s);
}

// Broadcast shape of the batch dimensions; false if they do not broadcast.
bool broadcast(const int64_t* a, int ra, const int64_t* b, int rb, int64_t* out, int& ro) {
  ro = std::max(ra, rb);
  if (ro > kMaxRank) return false;
  for (int i = 0; i < ro; ++i) {
    const int64_t x = i < ro - ra ? 1 : a[i - (ro - ra)];
    const int64_t y = i < ro - rb ? 1 : b[i - (ro - rb)];
    if (x != y && x != 1 && y != 1) return false;
    out[i] = x == 1 ? y : x;
  }
  return true;
}

// matmul(self, other), numpy semantics (torch.matmul docs): 1-D operands get a unit M or N; when
// `other` has no batch dimensions the batch dimensions of `self` fold into M; otherwise the batch
// dimensions broadcast and every batch is one [M,K]x[K,N] GEMM.
OpCost matmul(const Args& a, const Types& t) {
  const Arg &x = a.at(0), &y = a.at(1);
  if (!x.tensor() || !y.tensor() || x.rank < 1 || y.rank < 1) return {};
  const int rx = x.rank, ry = y.rank;
  double m = rx == 1 ? 1 : static_cast<double>(x.d[rx - 2]);
  const int64_t k = x.d[rx - 1];
  const int64_t ky = ry == 1 ? y.d[0] : y.d[ry - 2];
  const double n = ry == 1 ? 1 : static_cast<double>(y.d[ry - 1]);
  if (k != ky) return {};
  double batch = 1;
  if (ry <= 2) {
    for (int i = 0; i < rx - 2; ++i) m *= static_cast<double>(x.d[i]);
  } else {
    int64_t out[kMaxRank];
    int ro = 0;
    if (!broadcast(x.d, std::max(rx - 2, 0), y.d, ry - 2, out, ro)) return {};
    for (int i = 0; i < ro; ++i) batch *= static_cast<double>(out[i]);
  }
  const double s = t.of(0);
  return make(CostFamily::kGemm, 2 * batch * m * n * static_cast<double>(k),
              (x.numel() + y.numel() + batch * m * n) * s);
}

// linear(input [..., K], weight [N, K], bias? [N]): M = the product of input's leading dimensions.
OpCost linear(const Args& a, const Types& t) {
  const Arg &x = a.at(0), &w = a.at(1), &b = a.at(2);
  if (!x.tensor() || x.rank < 1 || !rank_is(w, 2) || x.d[x.rank - 1] != w.d[1]) return {};
  double m = 1;
  for (int i = 0; i + 1 < x.rank; ++i) m *= static_cast<double>(x.d[i]);
  const double s = t.of(0);
  const bool bias = b.tensor() && b.rank >= 1;
  return gemm(1, m, static_cast<double>(w.d[0]), static_cast<double>(w.d[1]), bias,
              bias ? b.numel() * t.of(2) : 0, s, s, s);
}

// _scaled_mm: FP8 (or other) operands at their own element size; scales are not counted; the
// output is taken as 2 bytes when the operands are 1-byte (out_dtype is bf16 in practice) and as
// the operands' size otherwise.
OpCost scaled_mm(const Args& a, const Types& t) {
  const Arg &x = a.at(0), &y = a.at(1), &b = a.at(4);
  if (!rank_is(x, 2) || !rank_is(y, 2) || x.d[1] != y.d[0]) return {};
  const double sa = t.of(0), sb = t.of(1), so = sa == 1 ? 2 : sa;
  const bool bias = b.tensor() && b.rank >= 1;
  return gemm(1, static_cast<double>(x.d[0]), static_cast<double>(y.d[1]),
              static_cast<double>(x.d[1]), bias, bias ? b.numel() * t.of(4) : 0, sa, sb, so);
}

// Attention (TraceLens SDPA.flops_func, after FlashAttention's benchmark_flash_attention.py):
//   forward  FLOPs = 2·B·Hq·Sq·Sk·(D_qk + D_v)   (QKᵀ and PV, 2 FLOPs per MAC; = 4·B·Hq·Sq·Sk·D),
//            halved when causal (Sq == Sk; the diagonal's extra S/2 pairs per head ignored);
//   backward FLOPs = 2.5 × forward: five GEMMs of the forward's size (recomputed QKᵀ, dV = Pᵀ·dO,
//            dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q) against the forward's two — TraceLens's
//            flash_impl count, used for every fused backward here since none keeps P;
//   bytes    forward: read Q, K, V, write O; backward: read Q, K, V, dO, write dQ, dK, dV
//            (TraceLens SDPA.bytes_func / bytes_bwd_func); softmax statistics not counted.
// Grouped-query attention: K and V have Hkv heads (Hq a multiple of Hkv); every query head does
// the full work. Causality comes from Concrete Inputs; when not recorded the op is taken as
// non-causal (an upper bound: a causal op's FLOPs are overstated 2×). Causal with Sq != Sk is
// unknown (whether the mask is aligned top-left or bottom-right depends on the kernel). Packed
// variable-length batches (cu_seqlens given) are unknown: their FLOPs depend on every sequence's
// length, which the shapes do not carry.
OpCost attention(const OpInfo& op, const Args& a, const Types& t, std::string_view concrete) {
  const AttnSpec& s = op.attn;
  const Arg &q = a.at(s.q), &k = a.at(s.q + 1), &v = a.at(s.q + 2);
  if (!rank_is(q, 4) || !rank_is(k, 4) || !rank_is(v, 4)) return {};
  if (s.varlen >= 0 && a.at(s.varlen).tensor()) return {};
  const int si = s.bshd ? 1 : 2, hi = s.bshd ? 2 : 1;  // sequence and head dimensions
  const int64_t b = q.d[0], sq = q.d[si], hq = q.d[hi], dqk = q.d[3];
  const int64_t sk = k.d[si], hk = k.d[hi], dv = v.d[3];
  if (k.d[0] != b || v.d[0] != b || v.d[si] != sk || v.d[hi] != hk || k.d[3] != dqk || hk <= 0 ||
      hq % hk != 0)
    return {};
  bool causal = false;
  if (!concrete.empty()) {
    Concrete cv;
    const int idx = s.alt_nargs > 0 && a.n == s.alt_nargs ? s.alt_causal : s.causal;
    parse_concrete(concrete, cv, idx);
    if (s.mask_type) {
      int64_t mt = 0;
      causal = int_value(cv.at(idx), mt) && mt != 0;
    } else {
      causal = bool_value(cv.at(idx)) == 1;
    }
  }
  if (causal && sq != sk) return {};
  const double B = static_cast<double>(b), Hq = static_cast<double>(hq),
               Hk = static_cast<double>(hk), Sq = static_cast<double>(sq),
               Sk = static_cast<double>(sk), Dqk = static_cast<double>(dqk),
               Dv = static_cast<double>(dv);
  double flops = 2 * B * Hq * Sq * Sk * (Dqk + Dv);
  if (causal) flops *= 0.5;
  const double qe = B * Sq * Hq * Dqk, ke = B * Sk * Hk * Dqk, ve = B * Sk * Hk * Dv,
               oe = B * Sq * Hq * Dv;
  const double el = t.of(s.q);
  if (s.backward)
    return make(CostFamily::kAttentionBwd, 2.5 * flops, (2 * (qe + ke + ve) + oe) * el);
  return make(CostFamily::kAttentionFwd, flops, (qe + ke + ve + oe) * el);
}

// Reads an int-list argument ("[2, 2]", or one value for every spatial dimension) into out[nsp];
// 0 = not recorded (defaults kept), 1 = read, -1 = malformed.
int spatial_param(const Concrete& cv, int idx, int nsp, int64_t* out) {
  if (idx < 0 || !cv.has(idx) || cv.at(idx).empty()) return 0;
  int64_t v[kMaxRank];
  const int n = int_list(cv.at(idx), v, kMaxRank);
  if (n == 1) {
    for (int i = 0; i < nsp; ++i) out[i] = v[0];
    return 1;
  }
  if (n != nsp) return -1;
  for (int i = 0; i < nsp; ++i) out[i] = v[i];
  return 1;
}

// Convolution (TraceLens CONV, after torch/utils/flop_counter.py conv_flop_count):
//   FLOPs = 2 · N·K·∏(output spatial) · C/groups·∏(kernel)  (+ N·K·∏(output spatial) with a bias),
//   output spatial o = ⌊(i + 2·pad − dil·(k − 1) − 1) / stride⌋ + 1 from Concrete Inputs; when
//   they are not recorded the output is taken as the input's size ('same' convolution).
//   Transposed: FLOPs = 2 · N·C_in·∏(input spatial) · (K/groups)·∏(kernel), output
//   o = (i − 1)·stride − 2·pad + dil·(k − 1) + output_padding + 1.
//   bytes = (input + weight + bias + output) · element size.
OpCost convolution(const OpInfo& op, const Args& a, const Types& t, std::string_view concrete) {
  const ConvSpec& s = op.conv;
  const Arg &x = a.at(0), &w = a.at(1);
  if (!x.tensor() || !w.tensor() || x.rank < 3 || x.rank > 5 || w.rank != x.rank) return {};
  const int nsp = x.rank - 2;
  Concrete cv;
  if (!concrete.empty()) parse_concrete(concrete, cv);
  int64_t stride[kMaxRank], pad[kMaxRank], dil[kMaxRank], outpad[kMaxRank];
  for (int i = 0; i < nsp; ++i) {
    stride[i] = 1;
    pad[i] = 0;
    dil[i] = 1;
    outpad[i] = 0;
  }
  bool same = false;  // output spatial size = input's
  const std::string_view pad_text = cv.at(s.pad);
  if (pad_text == "same" || pad_text == "'same'") {
    same = true;
  } else if (pad_text != "valid" && pad_text != "'valid'") {
    const int r = spatial_param(cv, s.pad, nsp, pad);
    if (r < 0) return {};
    if (r == 0) same = true;  // not recorded: assume 'same'
  }
  if (spatial_param(cv, s.stride, nsp, stride) < 0 || spatial_param(cv, s.dil, nsp, dil) < 0 ||
      spatial_param(cv, s.outpad, nsp, outpad) < 0)
    return {};
  int64_t groups = 0;  // 0 = not recorded
  if (cv.has(s.groups) && !cv.at(s.groups).empty() && !int_value(cv.at(s.groups), groups))
    return {};
  const bool transposed = s.transposed >= 0 && bool_value(cv.at(s.transposed)) == 1;
  const Arg& b = a.at(s.bias);
  const bool bias = b.tensor() && b.rank >= 1;

  double kernel = 1;  // ∏ w[1:] = C/groups · ∏(kernel) (or K/groups for transposed)
  for (int i = 1; i < w.rank; ++i) kernel *= static_cast<double>(w.d[i]);
  // Output sizes in double: sizes, strides and paddings are each below 2^40 but their products
  // need not fit an int64 on hostile input.
  const auto dbl = [](int64_t v) { return static_cast<double>(v); };
  double out_sp = 1;
  double out_ch = 0;
  if (!transposed) {
    if (w.d[1] <= 0 ||
        (groups > 0 ? x.d[1] % groups != 0 || x.d[1] / groups != w.d[1] : x.d[1] % w.d[1] != 0))
      return {};
    out_ch = dbl(w.d[0]);
    for (int i = 0; i < nsp; ++i) {
      const double in = dbl(x.d[2 + i]), k = dbl(w.d[2 + i]);
      if (!same && stride[i] <= 0) return {};
      const double o =
          same
              ? in
              : std::floor((in + 2 * dbl(pad[i]) - dbl(dil[i]) * (k - 1) - 1) / dbl(stride[i])) + 1;
      if (o <= 0) return {};
      out_sp *= o;
    }
  } else {
    if (x.d[1] != w.d[0]) return {};
    out_ch = dbl(w.d[1]) * dbl(groups > 0 ? groups : 1);
    for (int i = 0; i < nsp; ++i) {
      const double in = dbl(x.d[2 + i]), k = dbl(w.d[2 + i]);
      const double o =
          (in - 1) * dbl(stride[i]) - 2 * dbl(pad[i]) + dbl(dil[i]) * (k - 1) + dbl(outpad[i]) + 1;
      if (o <= 0) return {};
      out_sp *= o;
    }
  }
  const double N = static_cast<double>(x.d[0]);
  const double out = N * out_ch * out_sp;
  double flops = 2 * kernel * (transposed ? x.numel() : out);
  if (bias) flops += out;
  const double el = t.of(0);
  return make(CostFamily::kConv, flops,
              (x.numel() + w.numel() + (bias ? b.numel() : 0) + out) * el);
}

// convolution_backward (TraceLens CONV.flops_bwd_func / bytes_bwd_func): each of grad_input and
// grad_weight costs the forward's 2·(output side)·∏ w[1:] FLOPs and grad_bias N·K·∏(output
// spatial) adds, as output_mask asks (not recorded: grad_input and grad_weight). Bytes:
// grad_input reads dY and W and writes dX; grad_weight reads dY and X and writes dW; grad_bias
// reads dY and writes K values.
OpCost convolution_backward(const Args& a, const Types& t, std::string_view concrete) {
  const Arg &dy = a.at(0), &x = a.at(1), &w = a.at(2);
  if (!dy.tensor() || !x.tensor() || !w.tensor() || x.rank < 3 || x.rank > 5 || dy.rank != x.rank ||
      w.rank != x.rank)
    return {};
  Concrete cv;
  if (!concrete.empty()) parse_concrete(concrete, cv);
  const bool transposed = bool_value(cv.at(7)) == 1;
  bool mask[3] = {true, true, false};
  const std::string_view m = cv.at(10);
  if (!m.empty()) {
    int n = 0;
    for (size_t i = 0; i < m.size() && n < 3; ++i) {
      if (m.substr(i).starts_with("True")) {
        mask[n++] = true;
        i += 3;
      } else if (m.substr(i).starts_with("False")) {
        mask[n++] = false;
        i += 4;
      }
    }
    if (n != 3) return {};
  }
  if (transposed ? x.d[1] != w.d[0] : dy.d[1] != w.d[0]) return {};
  double kernel = 1;
  for (int i = 1; i < w.rank; ++i) kernel *= static_cast<double>(w.d[i]);
  const double one = 2 * kernel * (transposed ? x.numel() : dy.numel());
  const double ny = dy.numel(), nx = x.numel(), nw = w.numel();
  double flops = 0, elems = 0;
  if (mask[0]) {
    flops += one;
    elems += ny + nw + nx;
  }
  if (mask[1]) {
    flops += one;
    elems += ny + nx + nw;
  }
  if (mask[2]) {
    flops += ny;
    elems += ny + static_cast<double>(dy.d[1]);
  }
  return make(CostFamily::kConv, flops, elems * t.of(1));
}

// Normalization, per element of the input (n = its numel), counting each add, subtract, multiply
// and the per-element share of a reduction as one FLOP:
//   layer / group / batch norm forward: 5 (mean: add; variance: subtract, square, add;
//     normalize: multiply by rstd) + 1 with a weight + 1 with a bias;
//   RMS norm forward: 3 (square, add, multiply by rstd) + 1 with a weight;
//   backward: 2 × the forward's count (dx needs the normalized input again, two reductions over
//     dy and dy·x̂ and their combination; the weight and bias gradients are two more reductions).
// Per-row work (the reciprocal square root) is not counted. Bytes: forward reads x and the
// weight and bias and writes y; backward reads dy, x and the weight and bias and writes dx and
// their gradients. Statistics (mean, rstd) are not counted.
OpCost normalization(const OpInfo& op, const Args& a, const Types& t) {
  const NormSpec& s = op.norm;
  const Arg& x = a.at(s.x);
  if (!x.tensor() || x.rank < 1) return {};
  const bool bwd = s.dy >= 0;
  if (bwd && !a.at(s.dy).tensor()) return {};
  const Arg &w = a.at(s.w), &b = a.at(s.b);
  const bool hw = w.tensor() && w.rank >= 1, hb = b.tensor() && b.rank >= 1;
  const double n = x.numel(), nwb = (hw ? w.numel() : 0) + (hb ? b.numel() : 0);
  const double per = s.rms ? 3 + (hw ? 1 : 0) : 5 + (hw ? 1 : 0) + (hb ? 1 : 0);
  const double el = t.of(s.x);
  if (bwd) return make(CostFamily::kNorm, 2 * per * n, (3 * n + 2 * nwb) * el);
  return make(CostFamily::kNorm, per * n, (2 * n + nwb) * el);
}

// Elementwise (TraceLens UnaryElementwise / BinaryElementwise): the output's shape is the
// broadcast of the tensor inputs' shapes (numpy rules); FLOPs = output numel × FLOPs per element;
// bytes = every tensor input at its element size + the output at the widest element size of the
// inputs with dimensions (type promotion: a 0-dim tensor, such as a Python number, does not widen
// the result unless every input is 0-dim). Scalar arguments are not counted.
OpCost elementwise(const OpInfo& op, const Args& a, const Types& t, std::string_view concrete) {
  const EwSpec& s = op.ew;
  int64_t shape[kMaxRank];
  int rank = 0;
  bool any = false;
  double in_bytes = 0, out_el = 0, out_el0 = 0;
  for (int i = 0; i < s.n_in; ++i) {
    const Arg& x = a.at(i);
    if (!x.tensor()) {
      if (x.kind == ArgKind::kList || x.kind == ArgKind::kOther) return {};
      continue;
    }
    int64_t next[kMaxRank];
    int rn = 0;
    if (!broadcast(shape, rank, x.d, x.rank, next, rn)) return {};
    for (int j = 0; j < rn; ++j) shape[j] = next[j];
    rank = rn;
    any = true;
    in_bytes += x.numel() * t.of(i);
    if (i != s.cond) {
      double& widest = x.rank > 0 ? out_el : out_el0;
      widest = std::max(widest, t.of(i));
    }
  }
  if (!any) return {};
  if (out_el == 0) out_el = out_el0 > 0 ? out_el0 : 2;
  double out = 1;
  for (int i = 0; i < rank; ++i) out *= static_cast<double>(shape[i]);
  double per = s.flops;
  // gelu(self, approximate="tanh"): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): cube (2),
  // multiply, add, multiply, tanh, add, multiply, multiply = 9.
  if (op.name.starts_with("gelu") && !concrete.empty()) {
    Concrete cv;
    parse_concrete(concrete, cv, 1);
    if (cv.at(1) == "tanh") per = 9;
  }
  return make(CostFamily::kElementwise, out * per, in_bytes + out * out_el);
}

// copy_(self, src): read src, write self; fill_/zero_(self): write self. No FLOPs.
OpCost copy_fill(Kind k, const Args& a, const Types& t) {
  const Arg& self = a.at(0);
  if (!self.tensor()) return {};
  double bytes = self.numel() * t.of(0);
  if (k == Kind::kCopy) {
    const Arg& src = a.at(1);
    if (!src.tensor()) return {};
    bytes += src.numel() * t.of(1);
  }
  return make(CostFamily::kElementwise, 0, bytes);
}

}  // namespace

OpCost op_cost(std::string_view op_name, std::string_view input_dims, std::string_view input_types,
               std::string_view concrete_inputs) noexcept {
  const OpInfo* op = find_op(op_name);
  if (op == nullptr || input_dims.empty()) return {};
  Args args;
  if (!parse_dims(input_dims, args)) return {};
  Types types;
  parse_types(input_types, types, last_typed_arg(*op));
  // [] with a tensor dtype is a 0-dim tensor (a Python number passed as a tensor is one too); with
  // "Scalar" or "" it is a scalar argument or a None.
  for (int i = 0; i < std::min({args.n, types.n, kMaxArgs}); ++i)
    if (args.a[i].kind == ArgKind::kEmpty && types.size[i] != 0) args.a[i].kind = ArgKind::kTensor;
  switch (op->kind) {
    case Kind::kMm:
      return mm_like(args, types, 0, -1);
    case Kind::kAddmm:
      return mm_like(args, types, 1, 0);
    case Kind::kBmm:
      return bmm_like(args, types, 0, -1);
    case Kind::kBaddbmm:
      return bmm_like(args, types, 1, 0);
    case Kind::kMatmul:
      return matmul(args, types);
    case Kind::kLinear:
      return linear(args, types);
    case Kind::kScaledMm:
      return scaled_mm(args, types);
    case Kind::kAttention:
      return attention(*op, args, types, concrete_inputs);
    case Kind::kConv:
      return convolution(*op, args, types, concrete_inputs);
    case Kind::kConvBackward:
      return convolution_backward(args, types, concrete_inputs);
    case Kind::kNorm:
      return normalization(*op, args, types);
    case Kind::kElementwise:
      return elementwise(*op, args, types, concrete_inputs);
    case Kind::kCopy:
    case Kind::kFill:
      return copy_fill(op->kind, args, types);
  }
  return {};
}

}  // namespace chopper
