#include "chopper/ingest/kineto/kineto_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <deque>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "chopper/base/error.hpp"
#include "chopper/base/flat_index.hpp"
#include "chopper/base/utf8.hpp"

namespace chopper {
namespace {

// The W bytes at p as an integer (unaligned load).
template <class W>
inline W load(const char* p) {
  W w;
  std::memcpy(&w, p, sizeof(W));
  return w;
}
// The M bytes at a[i] == b[i], as at most two overlapping word compares (1 <= M <= 16).
template <size_t M>
inline bool same_bytes(const char* a, const char* b) {
  if constexpr (M >= 8) {
    static_assert(M <= 16);
    return load<uint64_t>(a) == load<uint64_t>(b) &&
           load<uint64_t>(a + M - 8) == load<uint64_t>(b + M - 8);
  } else if constexpr (M >= 4) {
    return load<uint32_t>(a) == load<uint32_t>(b) &&
           load<uint32_t>(a + M - 4) == load<uint32_t>(b + M - 4);
  } else if constexpr (M >= 2) {
    return load<uint16_t>(a) == load<uint16_t>(b) && a[M - 1] == b[M - 1];
  } else {
    return M == 0 || a[0] == b[0];
  }
}
// k == lit with the length known at compile time: word compares, no call to memcmp.
template <size_t N>
inline bool eq(std::string_view k, const char (&lit)[N]) {
  if (k.size() != N - 1) return false;
  if constexpr (N - 1 <= 16) {
    return same_bytes<N - 1>(k.data(), lit);
  } else {
    return same_bytes<16>(k.data(), lit) && std::memcmp(k.data() + 16, lit + 16, N - 17) == 0;
  }
}

enum class CatKind : uint8_t {
  kOther,
  kCpuOp,
  kUserAnnotation,
  kGpuUserAnnotation,
  kPython,
  kKernel,
  kMemcpy,
  kMemset,
  kRuntime,
  kDriver,
  kSync,
  kFlowLaunch,
  kFlowFwdBwd,
};

CatKind cat_kind_of(std::string_view c) {
  if (c == "cpu_op" || c == "Operator") return CatKind::kCpuOp;
  if (c == "user_annotation") return CatKind::kUserAnnotation;
  if (c == "gpu_user_annotation") return CatKind::kGpuUserAnnotation;
  if (c == "python_function") return CatKind::kPython;
  if (c == "kernel" || c == "Kernel") return CatKind::kKernel;
  if (c == "gpu_memcpy" || c == "Memcpy") return CatKind::kMemcpy;
  if (c == "gpu_memset" || c == "Memset") return CatKind::kMemset;
  if (c == "cuda_runtime" || c == "Runtime") return CatKind::kRuntime;
  if (c == "cuda_driver") return CatKind::kDriver;
  if (c == "cuda_sync") return CatKind::kSync;
  if (c == "ac2g" || c == "async" || c == "async_cpu_to_gpu") return CatKind::kFlowLaunch;
  if (c == "fwdbwd") return CatKind::kFlowFwdBwd;
  return CatKind::kOther;
}

bool is_legacy_category(std::string_view c) {
  return c == "Operator" || c == "Kernel" || c == "Runtime" || c == "Memcpy" || c == "Memset";
}

// Keys of "args" that chopper keeps.
enum class ArgKey : uint8_t {
  kNone,
  kExternalId,
  kCorrelation,
  kSequenceNumber,
  kFwdThreadId,
  kRecordFunctionId,
  kDevice,
  kStream,
  kGrid,
  kBlock,
  kRegisters,
  kSharedMemory,
  kBytes,
  kInputDims,
  kConcreteInputs,
  kInputType,
  kCollectiveName,
  kDtype,
  kInMsgNelems,
  kOutMsgNelems,
  kInSplitSize,
  kOutSplitSize,
  kGroupSize,
  kPgName,
  kPgDesc,
  kPgRanks,
  kSeq,
  kGraphId,
  kMemBytes,
  kTotalAllocated,
  kDeviceId,
  kName,
};

// The args stored in Ev's third part (see Ev): shapes, a metadata name, collective args.
constexpr bool is_cold(ArgKey k) {
  switch (k) {
    case ArgKey::kInputDims:
    case ArgKey::kConcreteInputs:
    case ArgKey::kInputType:
    case ArgKey::kName:
    case ArgKey::kCollectiveName:
    case ArgKey::kDtype:
    case ArgKey::kInMsgNelems:
    case ArgKey::kOutMsgNelems:
    case ArgKey::kInSplitSize:
    case ArgKey::kOutSplitSize:
    case ArgKey::kGroupSize:
    case ArgKey::kPgName:
    case ArgKey::kPgDesc:
    case ArgKey::kPgRanks:
    case ArgKey::kSeq:
      return true;
    default:
      return false;
  }
}

ArgKey arg_key_of(std::string_view k) {
  switch (k.size()) {
    case 3:
      if (eq(k, "Seq")) return ArgKey::kSeq;
      break;
    case 4:
      if (eq(k, "grid")) return ArgKey::kGrid;
      if (eq(k, "name")) return ArgKey::kName;
      break;
    case 5:
      if (eq(k, "block")) return ArgKey::kBlock;
      if (eq(k, "bytes")) return ArgKey::kBytes;
      if (eq(k, "dtype")) return ArgKey::kDtype;
      if (eq(k, "Bytes")) return ArgKey::kMemBytes;
      break;
    case 6:
      if (eq(k, "device")) return ArgKey::kDevice;
      if (eq(k, "stream")) return ArgKey::kStream;
      break;
    case 8:
      if (eq(k, "graph id")) return ArgKey::kGraphId;
      break;
    case 9:
      if (eq(k, "Device Id")) return ArgKey::kDeviceId;
      break;
    case 10:
      if (eq(k, "Input Dims")) return ArgKey::kInputDims;
      if (eq(k, "Input type")) return ArgKey::kInputType;
      if (eq(k, "Group size")) return ArgKey::kGroupSize;
      break;
    case 11:
      if (eq(k, "External id") || eq(k, "external id")) return ArgKey::kExternalId;
      if (eq(k, "correlation")) return ArgKey::kCorrelation;
      break;
    case 13:
      if (eq(k, "Fwd thread id")) return ArgKey::kFwdThreadId;
      if (eq(k, "shared memory")) return ArgKey::kSharedMemory;
      if (eq(k, "In msg nelems")) return ArgKey::kInMsgNelems;
      if (eq(k, "In split size")) return ArgKey::kInSplitSize;
      break;
    case 14:
      if (eq(k, "Out msg nelems")) return ArgKey::kOutMsgNelems;
      if (eq(k, "Out split size")) return ArgKey::kOutSplitSize;
      break;
    case 15:
      if (eq(k, "Sequence number")) return ArgKey::kSequenceNumber;
      if (eq(k, "Collective name")) return ArgKey::kCollectiveName;
      if (eq(k, "Total Allocated")) return ArgKey::kTotalAllocated;
      if (eq(k, "Concrete Inputs")) return ArgKey::kConcreteInputs;
      break;
    case 18:
      if (eq(k, "Record function id")) return ArgKey::kRecordFunctionId;
      if (eq(k, "Process Group Name")) return ArgKey::kPgName;
      break;
    case 19:
      if (eq(k, "Process Group Ranks")) return ArgKey::kPgRanks;
      break;
    case 20:
      if (eq(k, "registers per thread")) return ArgKey::kRegisters;
      break;
    case 25:
      if (eq(k, "Process Group Description")) return ArgKey::kPgDesc;
      break;
    default:
      break;
  }
  return ArgKey::kNone;
}

// Thrown when an event runs past the data in the window: the caller refills and parses it again.
// The args keys of Kineto's usual events, read and skipped alike, for known_arg().
struct ArgName {
  std::string_view key;
  ArgKey id;
};
inline constexpr ArgName kArgNames[] = {
    {"External id", ArgKey::kExternalId},
    {"Record function id", ArgKey::kRecordFunctionId},
    {"Ev Idx", ArgKey::kNone},
    {"Sequence number", ArgKey::kSequenceNumber},
    {"Fwd thread id", ArgKey::kFwdThreadId},
    {"correlation", ArgKey::kCorrelation},
    {"cbid", ArgKey::kNone},
    {"queued", ArgKey::kNone},
    {"device", ArgKey::kDevice},
    {"context", ArgKey::kNone},
    {"stream", ArgKey::kStream},
    {"registers per thread", ArgKey::kRegisters},
    {"shared memory", ArgKey::kSharedMemory},
    {"blocks per SM", ArgKey::kNone},
    {"warps per SM", ArgKey::kNone},
    {"grid", ArgKey::kGrid},
    {"block", ArgKey::kBlock},
    {"est. achieved occupancy %", ArgKey::kNone},
    {"bytes", ArgKey::kBytes},
    {"memory bandwidth (GB/s)", ArgKey::kNone},
    {"Input Dims", ArgKey::kInputDims},
    {"Input type", ArgKey::kInputType},
    {"Input Strides", ArgKey::kNone},
    {"Concrete Inputs", ArgKey::kConcreteInputs},
    {"graph id", ArgKey::kGraphId},
};
// Candidates by the key's first byte (at most four; the rest go through the general path).
struct ArgIndex {
  int8_t at[256][4] = {};
  constexpr ArgIndex() {
    for (auto& row : at)
      for (auto& x : row) x = -1;
    for (int i = 0; i < static_cast<int>(std::size(kArgNames)); ++i) {
      auto& row = at[static_cast<unsigned char>(kArgNames[i].key[0])];
      for (auto& x : row)
        if (x < 0) {
          x = static_cast<int8_t>(i);
          break;
        }
    }
  }
};
inline constexpr ArgIndex kArgIndex{};
// p at a key: the known key written `"Key":` there (its quotes and colon compared whole, word by
// word; the window's padding makes the loads safe, its NUL sentinel never matches), or null.
inline const ArgName* known_arg(const char* p) {
  if (*p != '"') return nullptr;  // not a key: the general path says so
  for (const int8_t i : kArgIndex.at[static_cast<unsigned char>(p[1])]) {
    if (i < 0) return nullptr;
    const ArgName& a = kArgNames[i];
    const size_t n = a.key.size();  // 4 or more
    if (p[n + 1] != '"' || p[n + 2] != ':') continue;
    const char* q = p + 1;
    const char* w = a.key.data();
    bool same;
    if (n >= 8) {
      same = load<uint64_t>(q + n - 8) == load<uint64_t>(w + n - 8);
      for (size_t k = 0; same && k + 8 <= n; k += 8)
        same = load<uint64_t>(q + k) == load<uint64_t>(w + k);
    } else {
      same = load<uint32_t>(q) == load<uint32_t>(w) &&
             load<uint32_t>(q + n - 4) == load<uint32_t>(w + n - 4);
    }
    if (same) return &a;
  }
  return nullptr;
}

// Bytes met at a place in the input last time, up to 32, compared at once (PatternMemo): the
// argument at a place in args with the blanks before it (KeyMemo), and what lies between one
// event and the next (the element memo). A match means these very bytes are there.
struct PatternMemo {
  alignas(32) char text[32] = {};
  uint32_t mask = 0;  // bit i set: byte i is compared
  uint32_t len = 0;   // 0: nothing learnt (matches anything: callers check)
  // Remembers the n bytes at p (n <= 32).
  void learn(const char* p, uint32_t n) {
    std::memcpy(text, p, n);
    mask = n == 32 ? ~uint32_t{0} : (uint32_t{1} << n) - 1;
    len = n;
  }
};
[[gnu::always_inline]] inline bool pattern_hit(const char* p, const PatternMemo& m) {
#if defined(__AVX2__)
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i t = _mm256_load_si256(reinterpret_cast<const __m256i*>(m.text));
  const auto eq = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, t)));
  return (eq & m.mask) == m.mask;
#else
  return std::memcmp(p, m.text, m.len) == 0;
#endif
}
// The argument met at a place in args last time: the blanks before it, `"Key":` and the blank
// after it if there was one. A match is the very bytes that skipping the blanks and known_arg()
// would have matched there (the blanks end at the key's quote), so it gives the same argument
// without either.
struct KeyMemo : PatternMemo {
  const ArgName* arg = nullptr;
  // Starts as if `"External id":` had been met: every key memo holds a pattern, so a match
  // always names an argument.
  KeyMemo() {
    static_assert(kArgNames[0].key == "External id");
    constexpr std::string_view first = "\"External id\":";
    learn(first.data(), static_cast<uint32_t>(first.size()));
    arg = &kArgNames[0];
  }
};
// Remembers the argument a, matched by known_arg() at key after the blanks from p.
inline void learn_key(const char* p, const char* key, const ArgName& a, KeyMemo& m) {
  auto n = static_cast<uint32_t>(key - p + static_cast<ptrdiff_t>(a.key.size()) + 3);
  if (p[n] == ' ') ++n;
  if (n > sizeof m.text) return;  // the memo keeps what it had
  m.learn(p, n);
  m.arg = &a;
}

struct NeedMore {};
// Thrown for input that is not valid JSON inside an event: the event is skipped and counted.
struct Malformed {
  const char* at;
  const char* what;
};

// python_function events kept even without --keep-python: nn.Module ranges (with_modules=True),
// which give the model's module structure.
bool is_module_range(std::string_view name) {
  return name.starts_with("nn.Module: ");
}

// First byte of the set Cs... in [p, end), or end. 32 bytes at a time where AVX2 is available.
template <char... Cs>
bool is_one_of(char c) {
  return ((c == Cs) || ...);
}
#if defined(__x86_64__)
template <char... Cs>
__attribute__((target("avx2"))) const char* find_any_avx2(const char* p, const char* end) {
  while (p + 32 <= end) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i hit = _mm256_setzero_si256();
    ((hit = _mm256_or_si256(hit, _mm256_cmpeq_epi8(v, _mm256_set1_epi8(Cs)))), ...);
    const auto m = static_cast<uint32_t>(_mm256_movemask_epi8(hit));
    if (m != 0) return p + __builtin_ctz(m);
    p += 32;
  }
  for (; p < end; ++p)
    if (is_one_of<Cs...>(*p)) return p;
  return end;
}
#endif
template <char... Cs>
const char* find_any(const char* p, const char* end) {
#if defined(__AVX2__)
  return find_any_avx2<Cs...>(p, end);  // this file is built for the CPU (CHOPPER_ARCH)
#elif defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return find_any_avx2<Cs...>(p, end);
#endif
  for (; p < end; ++p)
    if (is_one_of<Cs...>(*p)) return p;
  return end;
}
inline const char* find_quote_or_backslash(const char* p, const char* end) {
  return find_any<'"', '\\'>(p, end);
}

// Character classes by table: 1 = whitespace, 2 = delimiter after a scalar (whitespace too).
// NUL is a delimiter: the window ends with one (a sentinel), so scans stop there unchecked.
struct CharClass {
  uint8_t c[256] = {};
  constexpr CharClass() {
    for (unsigned char x : {' ', '\n', '\r', '\t'}) c[x] = 3;
    for (unsigned char x : {',', '}', ']', '\0'}) c[x] = 2;
  }
};
inline constexpr CharClass kClass{};

inline bool is_ws(char c) {
  return (kClass.c[static_cast<unsigned char>(c)] & 1) != 0;
}
inline bool is_delim(char c) {
  return kClass.c[static_cast<unsigned char>(c)] != 0;
}

// First byte at or after p that is not JSON whitespace. The caller guarantees a non-whitespace
// byte (the window's NUL sentinel) before the end of readable memory, and 15 readable bytes
// after it. Most gaps in Kineto's output are empty or one blank; indentation (a newline and up
// to a dozen blanks) takes one 16-byte step.
[[gnu::noinline]] inline const char* skip_blank_run(const char* p) {
#if defined(__SSSE3__)
  // A byte is a blank iff it equals the table entry at its low nibble: ' ' (0x20), '\t' (0x09),
  // '\n' (0x0A), '\r' (0x0D). Other entries are 0x80, which no byte below 0x80 equals; bytes of
  // 0x80 and above index as zero and are not zero; NUL meets ' ' and is not a blank.
  const __m128i table = _mm_setr_epi8(' ', -128, -128, -128, -128, -128, -128, -128, -128, '\t',
                                      '\n', -128, -128, '\r', -128, -128);
  for (;;) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i blank = _mm_cmpeq_epi8(_mm_shuffle_epi8(table, v), v);
    const auto other = static_cast<uint32_t>(~_mm_movemask_epi8(blank)) & 0xFFFFu;
    if (other != 0) return p + __builtin_ctz(other);
    p += 16;
  }
#else
  while (is_ws(*p)) ++p;
  return p;
#endif
}
[[gnu::always_inline]] inline const char* skip_blanks(const char* p) {
  if (!is_ws(*p)) return p;
  ++p;
  if (!is_ws(*p)) return p;
  return skip_blank_run(p);
}

// Kineto indents every line alike, so the blanks at a given place in an event are usually those
// met at that place in the event before. A BlankMemo holds them with the byte that followed (at
// most 8 bytes in all) as a word and a mask: blanks met before are skipped after one compare, any
// others by skip_blanks, and remembered. The result is skip_blanks' own: a match means that these
// very bytes are there, the last of them not a blank. The NUL sentinel is never remembered, so a
// match never reaches it; the window's padding makes the load safe.
struct BlankMemo {
  uint64_t word = 1, mask = 0;  // matches nothing until blanks are learnt
  size_t len = 0;
};
[[gnu::noinline]] inline const char* learn_blanks(const char* p, BlankMemo& m) {
  const char* q = skip_blanks(p);
  const auto n = static_cast<size_t>(q - p);
  if (n < 8 && *q != '\0') {
    m.mask = n == 7 ? ~uint64_t{0} : (uint64_t{1} << (8 * (n + 1))) - 1;
    m.word = load<uint64_t>(p) & m.mask;
    m.len = n;
  }
  return q;
}
[[gnu::always_inline]] inline const char* skip_blanks(const char* p, BlankMemo& m) {
  if ((load<uint64_t>(p) & m.mask) == m.word) return p + m.len;
  return learn_blanks(p, m);
}

// A number token scanned once: the integer it is (int_ok), or the time in ns when read as µs
// (ns_ok), for the common shapes that need no general parser; everything else is left to the
// exact parsers in base/time.hpp, which give the same result for these shapes.
struct Num {
  int64_t i = 0;
  Ns ns = 0;
  bool int_ok = false, ns_ok = false, dot = false;
};
inline constexpr int64_t kPow10[4] = {1, 10, 100, 1000};
#if !defined(__SSE4_1__)  // scan_digits without SSE4.1: eight digits at a time by SWAR
// Are the 8 bytes of w (little-endian) all ASCII digits?
inline bool all_digits(uint64_t w) {
  return ((w & 0xF0F0F0F0F0F0F0F0ULL) |
          (((w + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) == 0x3333333333333333ULL;
}
// The value of 8 ASCII digits (first byte most significant), by three multiplies.
inline uint64_t eight_digits(uint64_t w) {
  w -= 0x3030303030303030ULL;
  w = (w * 10) + (w >> 8);
  w = (((w & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
       (((w >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
      32;
  return w;
}
#endif
#if defined(__SSE4_1__)
// kRightAlign[n]: a shuffle that moves bytes 0..n-1 to the last n of 16 and zeroes the rest.
struct RightAlign {
  alignas(16) int8_t m[17][16] = {};
  constexpr RightAlign() {
    for (int n = 0; n <= 16; ++n)
      for (int j = 0; j < 16; ++j) m[n][j] = static_cast<int8_t>(j >= 16 - n ? j - (16 - n) : -128);
  }
};
inline constexpr RightAlign kRightAlign{};
#endif
// Accumulates the run of ASCII digits at p into v (v*10 + digit, wrapping past 2^64: callers
// count the digits); returns the end of the run. The window's padding makes the 16-byte loads
// safe, and its sentinel is not a digit, so a run never passes it.
[[gnu::always_inline]] inline const char* scan_digits(const char* p, uint64_t& v) {
  // Most numbers in a trace (ids, counts, pids) have fewer than 8 digits: those are read from one
  // 8-byte word. Subtracting '0' from every byte leaves digits at 0..9; a byte is not a digit iff
  // its result, or its result plus 0x76, has the top bit set. Borrows and carries between bytes
  // start only at a byte that is not a digit, so they never change the first such byte's verdict.
  {
    const uint64_t t = load<uint64_t>(p) - 0x3030303030303030ULL;
    const uint64_t other = (t | (t + 0x7676767676767676ULL)) & 0x8080808080808080ULL;
    if (other != 0) {
      const auto n = static_cast<unsigned>(__builtin_ctzll(other)) >> 3;  // digits, 0..7
      if (n == 0) return p;
      // The n digits moved to the top bytes (first digit highest), zeros below: an 8-digit
      // number with leading zeros, combined in pairs, fours and eights by multiplies.
      uint64_t x = t << (64 - 8 * n);
      x = x * 10 + (x >> 8);
      x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
           (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
          32;
      static constexpr uint64_t kScale8[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
      v = v * kScale8[n] + x;
      return p + n;
    }
  }
#if defined(__SSE4_1__)
  for (;;) {
    const __m128i d =
        _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8('0'));
    const __m128i is_digit = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
    const auto other = ~static_cast<uint32_t>(_mm_movemask_epi8(is_digit));
    const unsigned n = static_cast<unsigned>(__builtin_ctz(other));  // 0..16
    if (n == 0) return p;
    // Right-align the n digits, then pairs -> 4 digits -> 8 digits by multiply-adds.
    const __m128i a =
        _mm_shuffle_epi8(d, _mm_load_si128(reinterpret_cast<const __m128i*>(kRightAlign.m[n])));
    const __m128i d2 = _mm_maddubs_epi16(a, _mm_set1_epi16(0x010A));    // 10, 1
    const __m128i d4 = _mm_madd_epi16(d2, _mm_set1_epi32(0x00010064));  // 100, 1
    const __m128i d8 = _mm_madd_epi16(_mm_packus_epi32(d4, d4), _mm_set1_epi32(0x00012710));
    const auto hi = static_cast<uint32_t>(_mm_cvtsi128_si32(d8));
    const auto lo = static_cast<uint32_t>(_mm_extract_epi32(d8, 1));
    static constexpr uint64_t kScale[17] = {1,
                                            10,
                                            100,
                                            1000,
                                            10000,
                                            100000,
                                            1000000,
                                            10000000,
                                            100000000,
                                            1000000000,
                                            10000000000,
                                            100000000000,
                                            1000000000000,
                                            10000000000000,
                                            100000000000000,
                                            1000000000000000,
                                            10000000000000000};
    v = v * kScale[n] + (uint64_t{hi} * 100000000 + lo);
    p += n;
    if (n < 16) return p;
  }
#else
  for (uint64_t w; all_digits(w = load<uint64_t>(p)); p += 8) v = v * 100000000 + eight_digits(w);
  for (unsigned d; (d = static_cast<unsigned char>(*p) - '0') <= 9; ++p) v = v * 10 + d;
  return p;
#endif
}

// Scans the number at p (stopping at the first byte that is not part of one); returns the end.
[[gnu::always_inline]] inline const char* scan_number(const char* p, Num& n) {
  const bool neg = *p == '-';
  p += neg ? 1 : 0;
  const char* d0 = p;
  uint64_t ip = 0;
  p = scan_digits(p, ip);
  const auto nd = static_cast<size_t>(p - d0);
  n.int_ok = n.ns_ok = n.dot = false;
  if (*p == '.') {
    const char* f0 = ++p;
    uint64_t fp = 0;
    // Kineto writes times with three decimals: those are read here, longer runs by scan_digits.
    // Unsigned: a byte below '0' wraps to a large value, so "<= 9" holds for digits only.
    const auto f1 = static_cast<unsigned>(static_cast<unsigned char>(p[0]) - '0'),
               f2 = static_cast<unsigned>(static_cast<unsigned char>(p[1]) - '0'),
               f3 = static_cast<unsigned>(static_cast<unsigned char>(p[2]) - '0'),
               f4 = static_cast<unsigned>(static_cast<unsigned char>(p[3]) - '0');
    if (f1 <= 9 && f2 <= 9 && f3 <= 9 && f4 > 9) {
      fp = f1 * 100 + f2 * 10 + f3;
      p += 3;
    } else {
      p = scan_digits(p, fp);
    }
    const auto nf = static_cast<size_t>(p - f0);
    n.dot = true;
    if (!neg && nd >= 1 && nd <= 15 && nf >= 1 && nf <= 3 && is_delim(*p)) {
      n.ns = static_cast<Ns>(ip * 1000 + fp * static_cast<uint64_t>(kPow10[3 - nf]));
      n.ns_ok = true;
    }
  } else if (nd >= 1 && nd <= 18 && is_delim(*p)) {
    n.i = neg ? -static_cast<int64_t>(ip) : static_cast<int64_t>(ip);
    n.int_ok = true;
    if (nd <= 15) {
      n.ns = n.i * 1000;
      n.ns_ok = true;
    }
  }
  return p;
}

// Appends the JSON-unescaped form of `raw` (the text between the quotes) to `out`. Returns false
// for an invalid escape (the bad sequence is copied as is).
bool unescape(std::string_view raw, std::string& out) {
  bool ok = true;
  auto put_utf8 = [&](uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  };
  auto hex4 = [&](size_t at, uint32_t& v) {
    if (at + 4 > raw.size()) return false;
    v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const char c = raw[k];
      const int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  };
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out.push_back(c);
      continue;
    }
    const char e = raw[++i];
    switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(i + 1, cp)) {
          ok = false;
          out += "\\u";
          break;
        }
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo;
          if (i + 2 < raw.size() && raw[i + 1] == '\\' && raw[i + 2] == 'u' && hex4(i + 3, lo) &&
              lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
            ok = false;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
          ok = false;
        }
        put_utf8(cp);
        break;
      }
      default:
        ok = false;
        out.push_back('\\');
        out.push_back(e);
    }
  }
  return ok;
}

struct CommFields {
  bool any = false;
  std::string_view collective_name, dtype, pg_name, pg_desc, pg_ranks, in_split, out_split;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1, seq = -1;
};

struct PendingDiag {
  const char* kind;
  std::string example;
};

// One event's fields, filled by a single pass over the object. Views point into the window (or
// into the unescape scratch strings) and stay valid until the event is committed.
//
// Before each event only the first part is reset (reset_ev): the fields commit reads whatever the
// event held. The second part is read only when a flag of the first says it was set, and the
// third (shapes, a metadata name, collective args: few events have them) only after an event that
// set one of them, which sets `cold`.
struct Ev {
  // ---- reset before every event ----
  char ph = 0;
  char scope = 0;
  bool has_cat = false, has_name = false, has_ts = false, has_dur = false, has_pid = false,
       has_tid = false, has_id = false;
  bool bp_e = false;
  bool skipped_python = false;
  // ts and dur already in ns (scan_number's fast shapes), else read from the text at commit.
  bool ts_fast = false, dur_fast = false, ts_dot = false, id_fast = false;
  bool cold = false;  // a field of the third part was set
  int64_t pid = 0, tid = 0;
  int64_t external_id = kNoId, correlation = kNoId, seq_nr = kNoId, fwd_tid = kNoId, rf_id = kNoId,
          device = kNoId, stream = kNoId, graph_id = kNoId;
  int64_t registers = -1, shared_mem = -1, bytes = -1, mem_bytes = 0, total_alloc = 0,
          device_id = -1;
  std::array<int32_t, 3> grid{0, 0, 0}, block{0, 0, 0};
  // ---- read only when set: cat, name, ts, dur (has_*), ts_ns, dur_ns (*_fast), id_text, id ----
  std::string_view cat, name, ts, dur, id_text;
  Ns ts_ns = 0, dur_ns = 0;
  uint64_t id = 0;
  // ---- reset after an event that set one (cold) ----
  std::string_view input_dims, input_types, concrete_inputs;
  std::string_view arg_name;
  CommFields comm;
};
static_assert(std::is_trivially_copyable_v<Ev> && std::is_standard_layout_v<Ev>);
// Resets the parts of ev that need it (see Ev) by copying them from a fresh Ev, 32 bytes at a
// time in straight-line code: GCC compiles `ev = Ev{}` to a `rep stos` of the whole struct and
// stores for the non-zero fields, and a loop over the words costs ~5 instructions per word.
inline constexpr Ev kFresh{};  // namespace scope: no initialisation guard tested per event
template <size_t From, size_t To>
[[gnu::always_inline]] inline void copy_fresh(Ev& ev) {
  const char* from = reinterpret_cast<const char*>(&kFresh) + From;
  char* to = reinterpret_cast<char*>(&ev) + From;
#if defined(__AVX__)
  constexpr size_t kWords = (To - From) / 32;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((_mm256_storeu_si256(reinterpret_cast<__m256i*>(to + 32 * I),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + 32 * I)))),
     ...);
  }
  (std::make_index_sequence<kWords>{});
  std::memcpy(to + 32 * kWords, from + 32 * kWords, (To - From) - 32 * kWords);
#else
  std::memcpy(to, from, To - From);
#endif
}
inline void reset_ev(Ev& ev) {
  if (ev.cold) [[unlikely]]
    copy_fresh<offsetof(Ev, input_dims), sizeof(Ev)>(ev);
  copy_fresh<0, offsetof(Ev, cat)>(ev);
}

// Reserves room for n elements; a large column is advised onto transparent huge pages, which
// cuts the page faults of filling it by up to 512x (the kernel decides; THP "madvise" mode is the
// common default). At most one partly used 2 MiB page per column: only columns of 4 MiB or more.
template <class T>
void reserve_column(std::vector<T>& v, size_t n) {
  v.reserve(n);
#if defined(MADV_HUGEPAGE)
  if constexpr (!std::is_same_v<T, bool>) {
    constexpr size_t kPage = 4096, kMin = 4 << 20;
    const size_t bytes = v.capacity() * sizeof(T);
    if (bytes < kMin) return;
    // Only whole pages inside the column's own buffer; the advice may be ignored.
    const auto a = reinterpret_cast<uintptr_t>(v.data());
    const uintptr_t lo = (a + kPage - 1) & ~(kPage - 1), hi = (a + bytes) & ~(kPage - 1);
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
  }
#endif
}

// `"key":` (with its quotes and colon, at most 8 bytes) as one little-endian word and its mask,
// computed at compile time (a template argument), so that matching it costs one load, one and and
// one compare; GCC 12 had otherwise assembled the word on the stack at each call.
template <size_t N>
struct KeyWord {
  uint64_t word = 0, mask = 0;
  size_t len = N - 1;
  consteval KeyWord(const char (&s)[N]) {
    static_assert(N - 1 <= 8);
    for (size_t i = 0; i < N - 1; ++i) {
      word |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
      mask |= uint64_t{0xFF} << (8 * i);
    }
  }
};
// The key K at p? The window's padding makes the load safe and its NUL sentinel never matches.
template <KeyWord K>
[[gnu::always_inline]] inline bool key_at(const char* p) {
  return (load<uint64_t>(p) & K.mask) == K.word;
}

// Appends x to a column whose capacity make_room has already ensured: push_back, inlined even into
// a large function (commit), where the compiler would otherwise call it out of line per column.
template <class T, class U>
[[gnu::always_inline]] inline void put(std::vector<T>& v, U x) {
  v.push_back(static_cast<T>(x));
}

// Times kept are within 2^62 ns (146 years) of 1970, ends included: the difference of any two
// times, and the sum of any two durations, then fits in int64. Events outside are skipped and
// counted (time_overflow).
constexpr Ns kTimeLimit = Ns{1} << 62;

class KinetoReader {
 public:
  KinetoReader(ByteSource& src, const KinetoReadOptions& opt, RankTrace& t)
      : src_(src), opt_(opt), t_(t) {
#ifndef NDEBUG
    for (const ArgName& a : kArgNames) {  // known_arg() must agree with arg_key_of()
      if (arg_key_of(a.key) != a.id || a.key.size() < 4)
        throw std::logic_error(fmt::format("kArgNames: \"{}\" disagrees with arg_key_of", a.key));
    }
#endif
    cap_ = std::max<size_t>(opt.window_bytes, 16);
    if (opt.in_place && src_.compression() == Compression::kNone)
      map_ = src_.map_in_place(kPad + 1);
    if (map_ != nullptr) {
      map_size_ = src_.raw_size();
      base_ = map_ - 1;
      saved_ = base_[1];
      base_[1] = '\0';  // the sentinel of the empty window
    } else {
      buf_.resize(cap_ + 1 + kPad);
      base_ = buf_.data();
    }
    len_ = 1;
    pos_ = 1;
  }

  void run();

 private:
  static constexpr size_t kPad = 64;
  // ---- window ----
  uint64_t offset_of(size_t p) const {
    return base_off_ + (p - 1);
  }
  uint64_t offset_of(const char* p) const {
    return offset_of(static_cast<size_t>(p - base_));
  }
  // Input read so far, in the source's own bytes (compressed ones for compressed input).
  uint64_t raw_done() const {
    return map_ != nullptr ? base_off_ + (len_ - 1) : src_.raw_offset();
  }
  // Drops the window's bytes before keep_from: moves [keep_from, len_) to the front of the
  // buffer, or, in place, moves the window's start there. Returns how far positions moved (<= 0).
  ptrdiff_t compact(size_t keep_from) {
    if (keep_from <= 1) return 0;
    const size_t n = len_ - keep_from;
    if (map_ != nullptr) {
      base_ += keep_from - 1;  // the sentinel stays where it is
      src_.release_below(base_ + 1);
    } else {
      std::memmove(base_ + 1, base_ + keep_from, n);
      base_[1 + n] = '\0';  // the sentinel
    }
    base_off_ += keep_from - 1;
    len_ = 1 + n;
    return -static_cast<ptrdiff_t>(keep_from - 1);
  }
  // Appends more input after len_ (growing the window when full); false at end of input. In place,
  // the window takes in the next cap_ bytes, or as many as it holds if more (an element larger
  // than the window doubles it, as a full buffer is doubled), and the sentinel moves after them.
  bool read_more() {
    if (eof_) return false;
    size_t n;
    if (map_ != nullptr) {
      char* const end = base_ + len_;
      n = std::min(static_cast<size_t>(map_ + map_size_ - end), std::max(cap_, len_ - 1));
      if (n != 0) {
        *end = saved_;
        saved_ = end[n];
      }
    } else {
      if (len_ - 1 >= cap_) {
        cap_ *= 2;
        buf_.resize(cap_ + 1 + kPad);
        base_ = buf_.data();
      }
      n = src_.read(base_ + len_, cap_ + 1 - len_);
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    len_ += n;
    base_[len_] = '\0';  // the sentinel (kPad bytes follow it)
    t_.uncompressed_bytes += n;
    return true;
  }
  // Byte at pos_ (refilling, keeping bytes from pos_ on), or -1 at end of input.
  int peek() {
    while (pos_ >= len_) {
      pos_ += static_cast<size_t>(compact(pos_));
      if (!read_more()) return -1;
    }
    return static_cast<unsigned char>(base_[pos_]);
  }
  void skip_ws() {
    for (int c = peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = peek()) ++pos_;
  }
  [[noreturn]] void fail(uint64_t off, const std::string& what) {
    throw InputError(src_.name(), off, what);
  }
  [[noreturn]] void not_a_trace(uint64_t off, const std::string& what) {
    throw NotATraceError(src_.name(), off, what);
  }
  void expect(char c, const char* context) {
    skip_ws();
    const int got = peek();
    if (got != static_cast<unsigned char>(c)) {
      if (got < 0)
        fail(offset_of(pos_),
             fmt::format("truncated JSON: end of file, expected '{}' {}", c, context));
      fail(offset_of(pos_),
           fmt::format("malformed JSON: expected '{}' {}, found '{}'", c, context, printable(got)));
    }
    ++pos_;
  }
  static std::string printable(int c) {
    if (c >= 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
    return fmt::format("\\x{:02x}", c);
  }

  // ---- top level ----
  std::string read_key();
  // Reads one top-level value, its text into *capture; false if it was too large to keep.
  bool read_value(std::string* capture, const std::string& key);
  void parse_object_form();
  void parse_events_array();
  void parse_metadata();

  // ---- events: a cursor over [p_, end_); *end_ is a NUL sentinel ----
  void ws() {
    p_ = skip_blanks(p_);
    if (p_ >= end_) throw NeedMore{};
  }
  void ws(BlankMemo& m) {
    p_ = skip_blanks(p_, m);
    if (p_ >= end_) throw NeedMore{};
  }
  // p_ at '"'. Returns the raw text between the quotes; *escaped tells if it has escapes.
  std::string_view str_raw(bool* escaped) {
    const char* s = ++p_;
    bool esc = false;
    for (;;) {
      const char* q = find_quote_or_backslash(p_, end_);
      if (q >= end_) throw NeedMore{};
      if (*q == '"') {
        p_ = q + 1;
        if (escaped != nullptr) *escaped = esc;
        return std::string_view(s, static_cast<size_t>(q - s));
      }
      esc = true;
      if (q + 1 >= end_) throw NeedMore{};
      p_ = q + 2;
    }
  }
  // A string value, unescaped when needed (into per-event scratch).
  std::string_view str_value() {
    bool esc = false;
    std::string_view raw = str_raw(&esc);
    if (!esc) return raw;
    if (scratch_used_ == scratch_.size()) scratch_.emplace_back();
    std::string& s = scratch_[scratch_used_++];
    s.clear();
    if (!unescape(raw, s)) {
      ev_diags_.push_back(
          {"invalid_escape", fmt::format("byte {}: invalid escape in a string; kept as written",
                                         offset_of(raw.data()))});
    }
    return s;
  }
  // A number, true/false/null: the token text; num_ says what number it is.
  std::string_view token() {
    const char* s = p_;
    const char* p = scan_number(p_, num_);
    while (!is_delim(*p)) ++p;  // stops at the sentinel
    if (p >= end_) throw NeedMore{};
    if (p == s) throw Malformed{s, "a value is missing"};
    p_ = p;
    return std::string_view(s, static_cast<size_t>(p - s));
  }
  // Scalar text: strings without quotes (not unescaped), numbers as written (num_ says which
  // number). False for containers (skipped) and for true/false/null.
  bool scalar(std::string_view& out, bool& was_string) {
    const char c = *p_;
    if (c == '"') {
      out = str_raw(nullptr);
      was_string = true;
      num_.int_ok = num_.ns_ok = num_.dot = false;
      return true;
    }
    if (c == '{' || c == '[') {
      skip_value();
      return false;
    }
    out = token();
    was_string = false;
    const char f = out.front();
    return f == '-' || (f >= '0' && f <= '9');
  }
  // Skips any value; returns its raw text.
  std::string_view skip_value() {
    const char* s = p_;
    const char c = *p_;
    if (c == '"') {
      str_raw(nullptr);
    } else if (c == '{' || c == '[') {
      int depth = 0;
      for (;;) {
        if (p_ >= end_) throw NeedMore{};
        const char x = *p_;
        if (x == '"') {
          str_raw(nullptr);
          continue;
        }
        if (x == '{' || x == '[') {
          ++depth;
        } else if (x == '}' || x == ']') {
          if (--depth == 0) {
            ++p_;
            break;
          }
        }
        ++p_;
      }
    } else {
      const char* p = p_;
      while (!is_delim(*p)) ++p;  // stops at the sentinel
      if (p >= end_) throw NeedMore{};
      if (p == s) throw Malformed{s, "a value is missing"};
      p_ = p;
    }
    return std::string_view(s, static_cast<size_t>(p_ - s));
  }
  // After a member: ',' (more follow, true) or the closing bracket `close` (false).
  bool next_member(char close) {
    ws();
    if (*p_ == ',') {
      ++p_;
      return true;
    }
    if (*p_ == close) {
      ++p_;
      return false;
    }
    throw Malformed{p_, "expected ',' or the end of an object"};
  }
  // p_ at '"' of a key: returns the key (raw) and leaves p_ after the ':'.
  std::string_view key() {
    if (*p_ != '"') throw Malformed{p_, "expected a key"};
    std::string_view k = str_raw(nullptr);
    ws();
    if (*p_ != ':') throw Malformed{p_, "expected ':' after a key"};
    ++p_;
    ws();
    return k;
  }

  // The members of an event that chopper reads; kOther for the rest.
  enum class TopKey : uint8_t {
    kOther,
    kPh,
    kCat,
    kName,
    kPid,
    kTid,
    kTs,
    kDur,
    kArgs,
    kId,
    kBp,
    kS
  };
  // The key at p_ ('"'), leaving p_ at its value. Kineto writes `"key": value`: that is matched
  // with one 8-byte load and a compare (the window's padding makes the load safe, and its NUL
  // sentinel never matches); any other spelling goes through key().
  TopKey top_key() {
    if (*p_ != '"') throw Malformed{p_, "expected a key"};
    TopKey tk = TopKey::kOther;
    size_t n = 0;  // bytes of `"key":`
    switch (p_[1]) {
      case 'p':
        if (key_at<"\"ph\":">(p_))
          tk = TopKey::kPh, n = 5;
        else if (key_at<"\"pid\":">(p_))
          tk = TopKey::kPid, n = 6;
        break;
      case 't':
        if (key_at<"\"ts\":">(p_))
          tk = TopKey::kTs, n = 5;
        else if (key_at<"\"tid\":">(p_))
          tk = TopKey::kTid, n = 6;
        break;
      case 'c':
        if (key_at<"\"cat\":">(p_)) tk = TopKey::kCat, n = 6;
        break;
      case 'n':
        if (key_at<"\"name\":">(p_)) tk = TopKey::kName, n = 7;
        break;
      case 'd':
        if (key_at<"\"dur\":">(p_)) tk = TopKey::kDur, n = 6;
        break;
      case 'a':
        if (key_at<"\"args\":">(p_)) tk = TopKey::kArgs, n = 7;
        break;
      default:
        break;
    }
    if (n != 0) {
      p_ += n;
      if (*p_ == ' ') ++p_;
      if (is_ws(*p_)) ws();
      return tk;  // at the sentinel, the value's parser asks for more input
    }
    const std::string_view k = key();
    switch (k.size()) {
      case 1:
        return k[0] == 's' ? TopKey::kS : TopKey::kOther;
      case 2:
        return eq(k, "ph")   ? TopKey::kPh
               : eq(k, "ts") ? TopKey::kTs
               : eq(k, "id") ? TopKey::kId
               : eq(k, "bp") ? TopKey::kBp
                             : TopKey::kOther;
      case 3:
        return eq(k, "cat")   ? TopKey::kCat
               : eq(k, "pid") ? TopKey::kPid
               : eq(k, "tid") ? TopKey::kTid
               : eq(k, "dur") ? TopKey::kDur
                              : TopKey::kOther;
      case 4:
        return eq(k, "name") ? TopKey::kName : eq(k, "args") ? TopKey::kArgs : TopKey::kOther;
      default:
        return TopKey::kOther;
    }
  }

  bool kineto_order();  // p_ at the first member; true if it read the whole event
  // p_ at '{' (or, if `opened`, at the first member after it and its blanks); fills ev_.
  void parse_event(bool opened = false);
  void parse_args();  // p_ at '{' of "args"
  void parse_counter_args();
  // An integer arg: the plain shapes read here, the rest (strings, fractions, exponents, overflow,
  // a number cut by the window's end) by get_int_slow.
  [[gnu::always_inline]] void get_int(int64_t& out, std::string_view key) {
    const char c = *p_;
    if (c == '-' || static_cast<unsigned>(c - '0') <= 9) {
      Num n;  // local: kept in registers (get_int_slow scans the value again)
      const char* e = scan_number(p_, n);
      if (n.int_ok && e < end_) {
        out = n.i;
        p_ = e;
        return;
      }
    }
    get_int_slow(out, key);
  }
  [[gnu::noinline]] void get_int_slow(int64_t& out, std::string_view key);
  void get_dim3(std::array<int32_t, 3>& out);
  void commit(Ev& ev, uint64_t offset);
  // One row each, every column appended inline (flatten: no call per column).
  [[gnu::flatten]] void add_gpu_row(const Ev& ev, CatKind kind, StrId cat, StrId name, Ns ts,
                                    Ns dur);
  [[gnu::flatten]] void add_host_row(const Ev& ev, CatKind kind, StrId cat, StrId name, Ns ts,
                                     Ns dur);
  [[gnu::flatten]] void add_runtime_row(const Ev& ev, CatKind kind, StrId name, Ns ts, Ns dur);
  [[gnu::flatten]] void add_flow_row(const Ev& ev, CatKind kind, StrId cat, uint64_t id, Ns ts);
  // Text kept from the input is valid UTF-8 (base/utf8.hpp): the string table repairs what it
  // stores, and these count each repair (kind invalid_utf8) at the byte where it was needed.
  StrId intern_text(std::string_view s, bool* repaired = nullptr) {
    const uint64_t before = t_.strings.repaired_utf8_bytes();
    const StrId id = t_.strings.intern(s);
    if (t_.strings.repaired_utf8_bytes() != before) [[unlikely]] {
      report_utf8(s);
      if (repaired != nullptr) *repaired = true;
    }
    return id;
  }
  [[gnu::noinline]] void report_utf8(std::string_view s);
  // Repairs s in place; `off` is the input offset of s[0].
  void repair_kept(std::string& s, uint64_t off);
  // The input offset of p[i] when p is in the window, else the event's (p is an unescaped copy).
  uint64_t text_offset(const char* p, size_t i = 0) const;
  bool get_time(std::string_view text, Ns& out, const char* what, uint64_t offset);
  [[gnu::noinline, gnu::cold]] void time_overflow(uint64_t offset, Ns ts, Ns dur);
  // Adds `base` (baseTimeNanoseconds, or 0) to every time; rows whose time or end is then outside
  // (-kTimeLimit, kTimeLimit) are counted (time_overflow) and dropped.
  void add_base_time(Ns base);
  // The element at at_ is larger than opt_.max_event_bytes: skips it without holding it.
  void skip_huge_element(size_t at);
  int64_t id_from_pid_text(std::string_view text, bool was_string, bool gpu_stream);
  [[gnu::always_inline]] CatKind cat_kind(StrId cat) {
    if (cat < cat_kinds_.size() && cat_kinds_[cat] >= 0)
      return static_cast<CatKind>(cat_kinds_[cat]);
    return new_cat_kind(cat);
  }
  [[gnu::noinline]] CatKind new_cat_kind(StrId cat) {
    if (cat >= cat_kinds_.size()) cat_kinds_.resize(cat + 1, -1);
    if (cat_kinds_[cat] < 0) {
      const std::string_view c = t_.strings.str(cat);
      cat_kinds_[cat] = static_cast<int8_t>(cat_kind_of(c));
      if (is_legacy_category(c)) t_.meta.legacy_2021 = true;
    }
    return static_cast<CatKind>(cat_kinds_[cat]);
  }
  [[gnu::always_inline]] void count_x(StrId cat) {
    if (cat < x_counts_.size() && x_counts_[cat] != 0) {
      ++x_counts_[cat];
      return;
    }
    first_x(cat);
  }
  [[gnu::noinline]] void first_x(StrId cat) {
    if (cat >= x_counts_.size()) x_counts_.resize(cat + 1, 0);
    if (x_counts_[cat]++ == 0) x_order_.push_back(cat);
  }
  // Event names and categories repeat: a direct-mapped memo (by length and first and last bytes)
  // in front of the string table answers most of them with one compare instead of a hash of the
  // whole string.
  StrId intern_name(std::string_view s) {
    const size_t n = s.size();
    uint64_t a = 0, b = 0;
    if (n >= 8) {
      a = load<uint64_t>(s.data());
      b = load<uint64_t>(s.data() + n - 8);
    } else if (n >= 4) {
      a = load<uint32_t>(s.data());
      b = load<uint32_t>(s.data() + n - 4);
    } else if (n > 0) {
      a = static_cast<unsigned char>(s[0]) | (static_cast<unsigned char>(s[n / 2]) << 8);
      b = static_cast<unsigned char>(s[n - 1]);
    } else {
      return 0;  // the empty string
    }
    const uint64_t h = ((a ^ (b * 0x9E3779B97F4A7C15ULL)) + n) * 0xBF58476D1CE4E5B9ULL;
    NameMemo& m = name_memo_[h >> (64 - kNameMemoBits)];
    // a and b cover the whole string up to 16 bytes; past that, the middle is compared too.
    if (m.id != 0 && m.n == n && m.a == a && m.b == b &&
        (n <= 16 || std::memcmp(m.text + 8, s.data() + 8, n - 16) == 0))
      return m.id;
    bool repaired = false;
    const StrId id = intern_text(s, &repaired);
    if (repaired) return id;  // not remembered: every occurrence is counted
    m.id = id;
    m.text = t_.strings.str(m.id).data();
    m.n = n;
    m.a = a;
    m.b = b;
    return m.id;
  }
  [[gnu::noinline]] int32_t add_comm(const CommFields& c);
  [[gnu::noinline]] int32_t add_shapes(const Ev& ev);
  // (pid, tid) -> index in t_.threads: a few memos of the last threads met, direct-mapped, in
  // front of the index (events of a few threads interleave).
  struct ThreadMemo {
    int64_t pid = 0, tid = 0;
    int32_t index = kNoRow;
  };
  [[gnu::always_inline]] int32_t thread_of(int64_t pid, int64_t tid) {
    ThreadMemo& m = thread_memo_[(static_cast<uint64_t>(pid) * 0x9E3779B97F4A7C15ULL ^
                                  static_cast<uint64_t>(tid)) &
                                 (std::size(thread_memo_) - 1)];
    if (m.pid == pid && m.tid == tid && m.index != kNoRow) return m.index;
    return new_thread(pid, tid, m);
  }
  [[gnu::noinline]] int32_t new_thread(int64_t pid, int64_t tid, ThreadMemo& m);
  // Called when a table is full, before a row is added: grows every column of it at once to the
  // rows the whole input will likely need (rows so far x input size / input read so far, +1/8),
  // at least doubling and at most 64x. One copy per column instead of a chain of doublings, each
  // of which copies the column and faults in fresh pages. Capacity not yet filled is address
  // space only, not resident memory.
  template <class Table>
  [[gnu::noinline]] void make_room(Table& tb) {
    const size_t rows = tb.size();
    size_t want = std::max<size_t>(rows * 2, 1024);
    const uint64_t done = raw_done(), total = src_.raw_size();
    if (done > 0 && total > done) {
      const double est = static_cast<double>(rows) * static_cast<double>(total) /
                         static_cast<double>(done) * 1.125;
      want = std::max(want, static_cast<size_t>(std::min(est, static_cast<double>(rows) * 64)));
    }
    tb.for_each_column([&](auto& col) { reserve_column(col, want); });
  }
  void skipped_value(uint64_t off) {
    ++t_.total_events;
    t_.diagnostics.add("non_object_event", [&] {
      return fmt::format("byte {}: a value that is not an event object in traceEvents", off);
    });
  }

  ByteSource& src_;
  const KinetoReadOptions& opt_;
  RankTrace& t_;
  // The window: base_[1, len_) holds input bytes base_off_.. (base_[0] is never read), base_[len_]
  // is a NUL sentinel and kPad readable bytes follow it. base_ is buf_'s data, or, when the
  // source gives its whole content in place (map_, map_size_ bytes: a mapped plain file), a point
  // in it that moves forward with the window; saved_ is the input byte the sentinel covers there.
  char* base_ = nullptr;
  std::vector<char> buf_;
  char* map_ = nullptr;
  size_t map_size_ = 0;
  char saved_ = 0;
  size_t cap_;
  size_t len_;           // end of data in the window
  size_t pos_;           // top-level cursor
  uint64_t ev_off_ = 0;  // offset of the event being read (for diagnostics on copied text)
  uint64_t base_off_ = 0;
  bool eof_ = false;

  const char* p_ = nullptr;
  const char* end_ = nullptr;
  Ev ev_;
  // The bytes from the comma after an event to the next event's first key (PatternMemo).
  struct ElementMemo : PatternMemo {
    uint32_t brace = 0;  // offset of the '{'
  } element_;
  // Remembers the element memo: from `comma` to the quote of the first key after `brace`.
  void learn_element(const char* comma, const char* brace) {
    const char* q = skip_blanks(brace + 1);
    if (*q != '"' || q - comma >= 32) return;
    element_.learn(comma, static_cast<uint32_t>(q - comma + 1));
    element_.brace = static_cast<uint32_t>(brace - comma);
  }
  std::vector<PendingDiag> ev_diags_;                             // ev_'s, added at commit
  std::vector<std::pair<std::string_view, double>> ev_counters_;  // ev_'s (ph "C") values
  Num num_;                                                       // the last number token
  // Blanks at each place in an event (BlankMemo): before an element after a comma, after an
  // event's '{', around the comma after each member kineto_order() reads (by its `site`), and in
  // args: before each argument (by category, told apart by its length and second byte, and by the
  // argument's ordinal, the 16th and later sharing one), when arg_keys_ misses, and before '}'.
  struct Blanks {
    BlankMemo element, open, args_close;
    BlankMemo order_before[16], order_after[16];
    BlankMemo args[16][16];
  } blanks_;
  // The blanks and argument at each place in args, as blanks_.args (KeyMemo).
  KeyMemo arg_keys_[16][16];
  struct IdMemo {
    uint64_t word = 0;  // the 8 bytes at the value: its digits, the delimiter, what followed
    int64_t value = 0;
    uint8_t len = 0;  // digits (and sign) of the value; 0 = empty
  };
  IdMemo pid_memo_, tid_memo_;
  ThreadMemo thread_memo_[8];
  struct ThreadKeyHash {
    size_t operator()(const ThreadKey& k) const {
      return static_cast<size_t>(static_cast<uint64_t>(k.pid) * 0x9E3779B97F4A7C15ULL ^
                                 static_cast<uint64_t>(k.tid));
    }
  };
  FlatIndex<ThreadKey, ThreadKeyHash> thread_index_;
  struct NameMemo {
    uint64_t a = 0, b = 0;       // intern_name's words of the string
    const char* text = nullptr;  // the string table's copy
    size_t n = 0;
    StrId id = 0;
  };
  static constexpr int kNameMemoBits = 10;
  std::vector<NameMemo> name_memo_ = std::vector<NameMemo>(size_t{1} << kNameMemoBits);
  std::deque<std::string> scratch_;
  size_t scratch_used_ = 0;
  std::vector<std::pair<std::string, std::string>> top_values_;
  std::vector<int8_t> cat_kinds_;
  std::vector<uint64_t> x_counts_;
  std::vector<StrId> x_order_;
  uint64_t ph_counts_[256] = {};
  bool saw_fraction_ = false;
  bool saw_events_ = false;
};

std::string KinetoReader::read_key() {
  expect('"', "to start a key");
  std::string key;
  for (;;) {
    const int c = peek();
    if (c < 0) fail(offset_of(pos_), "truncated JSON: end of file inside a key");
    ++pos_;
    if (c == '"') break;
    if (c == '\\') {
      const int d = peek();
      if (d < 0) fail(offset_of(pos_), "truncated JSON: end of file inside a key");
      ++pos_;
      key.push_back('\\');
      key.push_back(static_cast<char>(d));
      continue;
    }
    key.push_back(static_cast<char>(c));
  }
  return key;
}

// Reads one JSON value at the top level, byte by byte, copying it into *capture when given.
// Only used for the small top-level values (deviceProperties, distributedInfo, ...).
bool KinetoReader::read_value(std::string* capture, const std::string& key) {
  constexpr size_t kMaxCapture = 64 << 20;
  skip_ws();
  const uint64_t start = offset_of(pos_);
  int depth = 0;
  bool in_str = false, esc = false, started = false;
  // Appends the window's bytes [from, to) to the capture, up to kMaxCapture in all.
  auto keep = [&](size_t from, size_t to) {
    if (capture == nullptr || to == from) return;
    if (capture->size() + (to - from) <= kMaxCapture) {
      capture->append(base_ + from, to - from);
      return;
    }
    t_.diagnostics.add("top_level_value_too_large", [&] {
      return fmt::format("byte {}: value of \"{}\" exceeds {} MiB and was skipped", start, key,
                         kMaxCapture >> 20);
    });
    capture->clear();
    capture = nullptr;
  };
  // The window is scanned in bulk: strings up to their next quote or backslash, the inside of
  // containers up to the next bracket or quote (non-trace JSON, e.g. a run's truth.json, can
  // hold hundreds of MB here).
  for (;;) {
    if (peek() < 0) {  // refills the window, keeping bytes from pos_ on
      if (!started)
        fail(offset_of(pos_),
             fmt::format("truncated JSON: end of file before the value of \"{}\"", key));
      // A scalar ending at EOF: the caller reports the missing '}'.
      if (depth == 0 && !in_str) return capture != nullptr;
      fail(offset_of(pos_),
           fmt::format("truncated JSON: end of file inside the value of \"{}\"", key));
    }
    const char* b = base_;
    const size_t from = pos_, n = len_;
    size_t i = pos_;
    bool done = false;
    if (esc) {  // a backslash ended the last window: this byte is escaped
      esc = false;
      ++i;
    }
    while (i < n && !done) {
      if (in_str) {
        const char* q = find_quote_or_backslash(b + i, b + n);
        if (q >= b + n) {
          i = n;
          break;
        }
        i = static_cast<size_t>(q - b) + 1;
        if (*q == '\\') {
          if (i < n) {
            ++i;
          } else {
            esc = true;
          }
          continue;
        }
        in_str = false;
        done = depth == 0;
        continue;
      }
      if (depth > 0) i = static_cast<size_t>(find_any<'"', '{', '[', '}', ']'>(b + i, b + n) - b);
      if (i == n) break;
      const char c = b[i];
      if (depth == 0 && started && (c == ',' || c == '}' || c == ']' || is_ws(c)))
        break;  // the end of a scalar (not consumed)
      started = true;
      ++i;
      if (c == '"') {
        in_str = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) done = true;
        if (depth < 0) fail(offset_of(i - 1), "malformed JSON: unbalanced bracket");
      }
    }
    keep(from, i);
    pos_ = i;
    if (done || (i < n && depth == 0 && !in_str && started)) return capture != nullptr;
  }
}

void KinetoReader::run() {
  // Leading byte-order mark and whitespace.
  skip_ws();
  if (peek() == 0xEF) {
    ++pos_;
    if (peek() == 0xBB) ++pos_;
    if (peek() == 0xBF) ++pos_;
    skip_ws();
  }
  const int c = peek();
  if (c < 0) fail(offset_of(pos_), "empty file: no JSON trace in it");
  if (c == '[') {
    ++pos_;
    parse_events_array();
  } else if (c == '{') {
    ++pos_;
    parse_object_form();
  } else {
    not_a_trace(offset_of(pos_),
                fmt::format("not a JSON trace: expected '{{' or '[' but found '{}'", printable(c)));
  }
  skip_ws();
  if (peek() >= 0) {
    t_.diagnostics.add(
        "trailing_data",
        fmt::format("byte {}: data after the end of the JSON trace ignored", offset_of(pos_)));
  }
  for (const auto& w : src_.warnings()) t_.diagnostics.add("compression_warning", w);
  parse_metadata();

  // Per-category and per-ph counts in the model.
  for (StrId cat : x_order_) t_.x_events_by_category.emplace_back(cat, x_counts_[cat]);
  for (int p = 0; p < 256; ++p)
    if (ph_counts_[p] != 0) t_.events_by_ph.emplace_back(static_cast<char>(p), ph_counts_[p]);

  // Timestamps become absolute when the trace has a base (current Kineto); every time is then
  // checked to be within kTimeLimit.
  add_base_time(t_.meta.has_base_time ? t_.meta.base_time_ns : 0);
  if (t_.meta.has_base_time) {
    t_.meta.ts_format = "relative_to_base";
  } else {
    t_.meta.ts_format = saw_fraction_ ? "float_epoch_us" : "int_epoch_us";
  }
}

void KinetoReader::parse_object_form() {
  bool first = true;
  for (;;) {
    skip_ws();
    int c = peek();
    if (c < 0) fail(offset_of(pos_), "truncated JSON: end of file inside the top-level object");
    if (c == '}') {
      ++pos_;
      break;
    }
    if (!first) {
      if (c != ',')
        fail(offset_of(pos_),
             fmt::format("malformed JSON: expected ',' or '}}' between top-level keys, found '{}'",
                         printable(c)));
      ++pos_;
    }
    first = false;
    skip_ws();
    const uint64_t key_off = offset_of(pos_) + 1;  // after the quote
    std::string key = read_key();
    repair_kept(key, key_off);
    expect(':', "after a key");
    skip_ws();
    const uint64_t value_off = offset_of(pos_);
    if (key == "traceEvents" && peek() == '[') {
      ++pos_;
      parse_events_array();
      continue;
    }
    std::string value;
    if (!read_value(&value, key)) continue;  // too large: counted
    repair_kept(value, value_off);
    top_values_.emplace_back(std::move(key), std::move(value));
  }
  if (!saw_events_) {
    bool rocprof = false;
    for (const auto& kv : top_values_) rocprof |= kv.first == "rocprofiler-sdk-tool";
    not_a_trace(0, rocprof
                       ? "not a Kineto trace: this is rocprofv3 JSON (no \"traceEvents\")"
                       : "not a Kineto/Chrome trace: the JSON object has no \"traceEvents\" array");
  }
}

void KinetoReader::parse_events_array() {
  saw_events_ = true;
  size_t at = pos_;  // the next element (or separator) starts here
  for (;;) {
    p_ = base_ + at;
    end_ = base_ + len_;
    // One event object at `start`, p_ at its '{' (or, if `opened`, at its first member).
    auto event = [&](const char* start, bool opened) {
      const uint64_t off = offset_of(start);
      ev_off_ = off;
      bool ok = true;
      try {
        parse_event(opened);
      } catch (const Malformed& m) {
        // Skip to the end of this object; the next element is parsed as usual.
        const uint64_t bad = offset_of(m.at);
        const char* what = m.what;
        p_ = start;
        skip_value();
        ++t_.total_events;
        t_.diagnostics.add("malformed_event", [&] {
          return fmt::format("byte {}: {} (event at byte {}); event skipped", bad, what, off);
        });
        ok = false;
      }
      if (ok) commit(ev_, off);
    };
    try {
      const char* comma = nullptr;  // the comma before this element, if one came right before
      for (;;) {
        // The usual case: the comma, blanks, '{' and blanks up to the first key's quote, all as
        // after the last event: one compare, straight to the event's first member.
        if (comma == nullptr && element_.len != 0 && pattern_hit(p_, element_)) {
          at = static_cast<size_t>(p_ + 1 - base_);
          const char* start = p_ + element_.brace;
          p_ += element_.len - 1;
          event(start, true);
          at = static_cast<size_t>(p_ - base_);
          continue;
        }
        if (comma != nullptr)
          ws(blanks_.element);
        else
          ws();
        const char c = *p_;
        if (c == ',') {
          comma = p_++;
          at = static_cast<size_t>(p_ - base_);
          continue;
        }
        if (c == ']') {
          pos_ = static_cast<size_t>(p_ + 1 - base_);
          return;
        }
        const char* start = p_;
        if (c == '{') {
          if (comma != nullptr) learn_element(comma, start);
          comma = nullptr;
          event(start, false);
        } else {
          comma = nullptr;
          const uint64_t off = offset_of(start);
          try {
            skip_value();
          } catch (const Malformed&) {
            ++p_;  // a stray '}' or ':' where an element belongs
          }
          skipped_value(off);
        }
        at = static_cast<size_t>(p_ - base_);
      }
    } catch (const NeedMore&) {
    }
    // The element at `at` runs past the window: keep it, read more, parse it again; unless it
    // is already larger than any event may be.
    at = static_cast<size_t>(static_cast<ptrdiff_t>(at) + compact(at));
    if (len_ - at > opt_.max_event_bytes) [[unlikely]] {
      skip_huge_element(at);
      at = pos_;
      continue;
    }
    if (!read_more()) {
      fail(offset_of(len_),
           fmt::format("truncated JSON: end of file inside traceEvents after {} events{}",
                       t_.total_events, at < len_ ? " (in the middle of an event)" : ""));
    }
  }
}

void KinetoReader::skip_huge_element(size_t at) {
  // Past the separator and blanks first: they are not the element (and may be what filled the
  // window). Reading them through peek() keeps the window from growing.
  pos_ = at;
  skip_ws();
  if (peek() == ',') {
    ++pos_;
    skip_ws();
  }
  if (peek() == ']' || peek() < 0 || len_ - pos_ <= opt_.max_event_bytes) return;  // parse as usual
  const uint64_t off = offset_of(pos_);
  // A streaming scan to the end of the value (strings and brackets matched, nothing kept).
  read_value(nullptr, "traceEvents");
  ++t_.total_events;
  t_.diagnostics.add("event_too_large", [&] {
    return fmt::format(
        "byte {}: an event of {} bytes, more than the limit of {}; skipped (it is not read)", off,
        offset_of(pos_) - off, limit_text(opt_.max_event_bytes));
  });
}

// Kineto writes complete events as "ph", "cat", "name", "pid", "tid", "ts", "dur", "args" and
// flows as "ph", "id", "pid", "tid", "ts", "cat", "name", "bp". This reads the members in that
// order with a local cursor, each key matched by one compare, for as long as they come in that
// order with plain values (strings without escapes, numbers of the fast shapes). It stops at the
// first member that does not fit, leaving p_ at its start for the general loop, which then reads
// it and the rest exactly as it would have; members read here are stored as it stores them.
// Never throws for want of input (it stops instead), so the general loop asks for more.
namespace order {
// A string value at p without escapes: its text, p moved past it.
// Short: the string usually ends within 16 bytes ("X", "cpu_op", "fwdbwd", "e"): one compare
// here, the loop only for the rest. The window's padding makes the load safe; a quote found past
// `end` (in the padding) fails the check below.
template <bool Short = false>
[[gnu::always_inline]] inline bool str(const char*& p, const char* end, std::string_view& out) {
  if (*p != '"') return false;
  const char* q;
#if defined(__SSE2__)
  if constexpr (Short) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 1));
    const auto m = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(
        _mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))));
    q = m != 0 ? p + 1 + __builtin_ctz(m) : find_quote_or_backslash(p + 17, end);
  } else {
    q = find_quote_or_backslash(p + 1, end);
  }
#else
  q = find_quote_or_backslash(p + 1, end);
#endif
  if (q >= end || *q != '"') return false;
  out = std::string_view(p + 1, static_cast<size_t>(q - p - 1));
  p = q + 1;
  return true;
}
// A number at p that ends where a token ends; n says what it is.
[[gnu::always_inline]] inline bool num(const char*& p, const char* end, Num& n,
                                       std::string_view& out) {
  const char c = *p;
  if (c != '-' && static_cast<unsigned>(c - '0') > 9) return false;
  const char* e = scan_number(p, n);
  if (e >= end || !is_delim(*e)) return false;
  out = std::string_view(p, static_cast<size_t>(e - p));
  p = e;
  return true;
}
// `"key":` and blanks at p: p moved to the value. Kineto writes `"key": value`, so the key and one
// space are compared first, as one word (every key here is at most 7 bytes with its quotes and
// colon); the value is never expected to start with a blank, and if one does, the value's reader
// fails and the general loop reads the member again.
template <KeyWord K>
[[gnu::always_inline]] inline bool key(const char*& p) {
  static_assert(K.len <= 7);
  constexpr uint64_t spaced = K.word | (uint64_t{' '} << (8 * K.len)),
                     spaced_mask = K.mask | (uint64_t{0xFF} << (8 * K.len));
  const uint64_t w = load<uint64_t>(p);
  if ((w & spaced_mask) == spaced) {
    p += K.len + 1;
    return true;
  }
  if ((w & K.mask) != K.word) return false;
  p = skip_blanks(p + K.len);
  return true;
}
}  // namespace order

bool KinetoReader::kineto_order() {
  Ev& ev = ev_;
  const char* p = p_;
  const char* const end = end_;
  const char* member = p;  // start of the member being read
  std::string_view v;
  bool done = false;
  Num num;  // local: kept in registers, not stored to num_ and read back
  // After a value: ',' and the next member (true), or '}' ending the event (done). `site` says
  // which member it follows, for its blank memos.
  auto next = [&](int site) __attribute__((always_inline)) {
    if (load<uint16_t>(p) == (uint16_t{' '} << 8 | ',')) {  // ", ": Kineto's usual separator
      p += 2;  // a blank after it fails the next key's compare; the general loop reads it
      member = p;
      return true;
    }
    p = skip_blanks(p, blanks_.order_before[site]);
    if (*p == ',') {
      p = skip_blanks(p + 1, blanks_.order_after[site]);
      member = p;
      return p < end;
    }
    if (*p == '}') {
      done = true;
      p_ = p + 1;
    }
    return false;
  };
  auto time = [&](std::string_view & text, bool& has, bool& fast, Ns& ns)
      __attribute__((always_inline)) {
    if (!order::num(p, end, num, v)) return false;
    text = v;
    has = true;
    fast = num.ns_ok;
    ns = num.ns;
    return true;
  };
  // pid and tid repeat from event to event: when the 8 bytes at p are those that held the last
  // value read there (its digits and the delimiter after them), that value is taken as it is.
  auto id = [&](int64_t & out, bool& has, IdMemo& m) __attribute__((always_inline)) {
    const uint64_t w = load<uint64_t>(p);
    if (w == m.word && m.len != 0) {
      out = m.value;
      p += m.len;
      has = true;
      return true;
    }
    const char* s = p;
    if (!order::num(p, end, num, v) || !num.int_ok) return false;
    out = num.i;
    has = true;
    if (p - s < 8) m = IdMemo{w, out, static_cast<uint8_t>(p - s)};
    return true;
  };
  auto cat = [&]() __attribute__((always_inline)) {
    if (!order::str<true>(p, end, v)) return false;
    // python_function events are skipped by the general loop, which looks at cat and name.
    if (ev.ph == 'X' && !opt_.keep_python && eq(v, "python_function")) return false;
    ev.cat = v;
    ev.has_cat = true;
    return true;
  };
  if (!order::key<"\"ph\":">(p) || !order::str<true>(p, end, v)) return false;
  ev.ph = v.size() == 1 ? v[0] : '?';
  if (!next(0)) goto out;
  if (ev.ph == 'X') {
    if (!order::key<"\"cat\":">(p) || !cat() || !next(1)) goto out;
    if (!order::key<"\"name\":">(p) || !order::str(p, end, ev.name)) goto out;
    ev.has_name = true;
    if (!next(2)) goto out;
    if (!order::key<"\"pid\":">(p) || !id(ev.pid, ev.has_pid, pid_memo_) || !next(3)) goto out;
    if (!order::key<"\"tid\":">(p) || !id(ev.tid, ev.has_tid, tid_memo_) || !next(4)) goto out;
    if (!order::key<"\"ts\":">(p) || !time(ev.ts, ev.has_ts, ev.ts_fast, ev.ts_ns)) goto out;
    ev.ts_dot = num.dot;
    if (!next(5)) goto out;
    if (!order::key<"\"dur\":">(p) || !time(ev.dur, ev.has_dur, ev.dur_fast, ev.dur_ns) || !next(6))
      goto out;
    if (!order::key<"\"args\":">(p) || *p != '{') goto out;
    p_ = p;
    parse_args();  // may throw, as in the general loop
    p = p_;
    next(7);
  } else if (ev.ph == 's' || ev.ph == 'f') {
    if (!order::key<"\"id\":">(p) || !order::num(p, end, num, v)) goto out;
    ev.id_text = v;
    ev.has_id = true;
    ev.id_fast = num.int_ok && num.i >= 0;
    ev.id = static_cast<uint64_t>(num.i);
    if (!next(8)) goto out;
    if (!order::key<"\"pid\":">(p) || !id(ev.pid, ev.has_pid, pid_memo_) || !next(9)) goto out;
    if (!order::key<"\"tid\":">(p) || !id(ev.tid, ev.has_tid, tid_memo_) || !next(10)) goto out;
    if (!order::key<"\"ts\":">(p) || !time(ev.ts, ev.has_ts, ev.ts_fast, ev.ts_ns)) goto out;
    ev.ts_dot = num.dot;
    if (!next(11)) goto out;
    if (!order::key<"\"cat\":">(p) || !cat() || !next(12)) goto out;
    if (!order::key<"\"name\":">(p) || !order::str<true>(p, end, ev.name)) goto out;
    ev.has_name = true;
    if (!next(13)) goto out;
    if (!order::key<"\"bp\":">(p) || !order::str<true>(p, end, v)) goto out;
    ev.bp_e = v.size() == 1 && v[0] == 'e';
    next(14);
  }
out:
  if (done) return true;
  p_ = member;  // the general loop goes on from the member that did not fit
  return false;
}

void KinetoReader::parse_event(bool opened) {
  reset_ev(ev_);
  ev_diags_.clear();
  ev_counters_.clear();
  scratch_used_ = 0;
  Ev& ev = ev_;
  bool check_python = false;
  if (!opened) {
    ++p_;  // '{'
    ws(blanks_.open);
    if (*p_ == '}') {
      ++p_;
      return;
    }
  }
  if (kineto_order()) return;
  for (;;) {
    ws();
    std::string_view text;
    bool was_string = false;
    check_python = false;
    switch (top_key()) {
      case TopKey::kS:
        if (scalar(text, was_string) && !text.empty()) ev.scope = text[0];
        break;
      case TopKey::kPh:
        if (*p_ == '"') {
          text = str_raw(nullptr);
          ev.ph = text.size() == 1 ? text[0] : '?';
          check_python = !opt_.keep_python;
        } else {
          skip_value();
          ev.ph = '?';
        }
        break;
      case TopKey::kTs:
        ev.has_ts = scalar(ev.ts, was_string);
        ev.ts_fast = ev.has_ts && num_.ns_ok;
        ev.ts_ns = num_.ns;
        ev.ts_dot = num_.dot;
        break;
      case TopKey::kId:
        ev.has_id = scalar(ev.id_text, was_string);
        ev.id_fast = ev.has_id && num_.int_ok && num_.i >= 0;
        ev.id = static_cast<uint64_t>(num_.i);
        break;
      case TopKey::kBp:
        ev.bp_e = scalar(text, was_string) ? text == "e" : false;
        break;
      case TopKey::kCat:
        if (*p_ == '"') {
          ev.cat = str_value();
          ev.has_cat = true;
          check_python = !opt_.keep_python;
        } else {
          skip_value();
        }
        break;
      case TopKey::kPid:
        if (scalar(text, was_string)) {
          ev.pid = num_.int_ok ? num_.i : id_from_pid_text(text, was_string, false);
          ev.has_pid = true;
        }
        break;
      case TopKey::kTid:
        if (scalar(text, was_string)) {
          ev.tid = num_.int_ok ? num_.i : id_from_pid_text(text, was_string, true);
          ev.has_tid = true;
        }
        break;
      case TopKey::kDur:
        ev.has_dur = scalar(ev.dur, was_string);
        ev.dur_fast = ev.has_dur && num_.ns_ok;
        ev.dur_ns = num_.ns;
        break;
      case TopKey::kName:
        if (*p_ == '"') {
          ev.name = str_value();
          ev.has_name = true;
        } else {
          skip_value();
        }
        break;
      case TopKey::kArgs:
        if (*p_ != '{')
          skip_value();
        else if (ev.ph == 'C')
          parse_counter_args();
        else
          parse_args();
        break;
      case TopKey::kOther:
        skip_value();
        break;
    }
    // python_function events are most of many traces: once ph and cat are known, skip the rest,
    // unless it is an nn.Module range (the layer structure). Its name usually comes next; if it
    // does not, the members skipped while looking for it are parsed again.
    if (check_python && ev.ph == 'X' && ev.has_cat && eq(ev.cat, "python_function") &&
        !(ev.has_name && is_module_range(ev.name))) {
      const char* resume = p_;
      bool module = false;
      while (!ev.has_name && next_member('}')) {
        ws();
        const std::string_view k2 = key();
        if (eq(k2, "name") && *p_ == '"') {
          module = is_module_range(str_value());
          break;
        }
        skip_value();
      }
      if (!module) {
        ev.skipped_python = true;
        while (next_member('}')) {
          ws();
          key();
          skip_value();
        }
        return;
      }
      p_ = resume;
    }
    if (!next_member('}')) return;
  }
}

void KinetoReader::get_int_slow(int64_t& out, std::string_view k) {
  std::string_view text;
  bool was_string = false;
  if (!scalar(text, was_string)) return;
  if (num_.int_ok) {
    out = num_.i;
    return;
  }
  DecimalStatus st = parse_int64(text, out);
  if (st == DecimalStatus::kExact) return;
  if (st == DecimalStatus::kInvalid) {
    // A fraction ("device": 0.0) or exponent: take the integer if it is one.
    int64_t x;
    if (parse_scaled(text, 0, x) == DecimalStatus::kExact) {
      out = x;
      return;
    }
    if (was_string) return;  // non-numeric string: not an id
  }
  if (ev_diags_.size() < 8)
    ev_diags_.push_back({st == DecimalStatus::kOverflow ? "integer_above_int64" : "invalid_integer",
                         fmt::format("byte {}: args \"{}\" = {} does not fit int64; ignored",
                                     offset_of(text.data()), k, text)});
}

void KinetoReader::get_dim3(std::array<int32_t, 3>& out) {
  if (*p_ != '[') {
    skip_value();
    return;
  }
  // Kineto's shape, "[512, 1, 1]" (each number at most 9 digits), read directly; the window's
  // NUL sentinel stops every scan below, and anything else goes through the general loop below.
  {
    const char* p = p_ + 1;
    std::array<int32_t, 3> v{};
    bool ok = true;
    for (int k = 0; k < 3 && ok; ++k) {
      const char* d = p;
      uint32_t x = 0;  // unsigned: a longer run wraps (and is rejected below), never overflows
      for (unsigned c; (c = static_cast<unsigned>(static_cast<unsigned char>(*p) - '0')) <= 9; ++p)
        x = x * 10 + c;
      const char want = k < 2 ? ',' : ']';
      ok = p > d && p - d <= 9 && *p == want;
      v[static_cast<size_t>(k)] = static_cast<int32_t>(x);  // below 10^9 when ok
      p += 1;
      if (k < 2 && *p == ' ') ++p;
    }
    if (ok && p <= end_) {
      out = v;
      p_ = p;
      return;
    }
  }
  const std::string_view raw = skip_value();
  size_t i = 0;
  int64_t v = -1;
  bool in_num = false;
  for (size_t k = 1; k < raw.size() && i < 3; ++k) {
    const char c = raw[k];
    if (c >= '0' && c <= '9') {
      v = (in_num ? v : 0) * 10 + (c - '0');
      in_num = true;
      if (v > INT32_MAX) v = INT32_MAX;
    } else {
      if (in_num) out[i++] = static_cast<int32_t>(v);
      in_num = false;
      if (c == '[' || c == '{') break;  // nested: not a dim3
    }
  }
}

void KinetoReader::parse_args() {
  Ev& ev = ev_;
  ++p_;  // '{'
  // Each category lays its args out in its own way (cpu_op, kernel, cuda_runtime, ...): the
  // memos are kept per category, told apart by its length and second byte, and per ordinal.
  const std::string_view cat = ev.has_cat ? ev.cat : std::string_view();
  const size_t slot = cat.size() < 2 ? 0 : (static_cast<unsigned char>(cat[1]) ^ cat.size()) & 15;
  BlankMemo* const memo = blanks_.args[slot];
  KeyMemo* const keys = arg_keys_[slot];
  for (size_t i = 0;; i += i < 15 ? 1 : 0) {
    std::string_view k;
    ArgKey ak;
    KeyMemo& km = keys[i];
    if (pattern_hit(p_, km)) {  // the blanks and argument met here last time
      k = km.arg->key;
      ak = km.arg->id;
      p_ = skip_blanks(p_ + km.len);
    } else {
      const char* const before = p_;
      ws(memo[i]);
      if (i == 0 && *p_ == '}') {  // empty args
        ++p_;
        return;
      }
      if (const ArgName* a = known_arg(p_)) {  // the usual spelling, matched whole
        learn_key(before, p_, *a, km);
        k = a->key;
        ak = a->id;
        p_ = skip_blanks(p_ + a->key.size() + 3);
      } else {
        k = key();
        ak = arg_key_of(k);
      }
    }
    std::string_view text;
    bool was_string = false;
    if (is_cold(ak)) ev.cold = true;
    switch (ak) {
      case ArgKey::kNone:
        if (const char c = *p_; c == '-' || static_cast<unsigned>(c - '0') <= 9) {
          const char* q = p_ + 1;  // a number (Ev Idx, cbid, ...): to the first delimiter
          while (!is_delim(*q)) ++q;
          if (q < end_) {
            p_ = q;
            break;
          }
        }
        skip_value();
        break;
      case ArgKey::kExternalId:
        get_int(ev.external_id, k);
        break;
      case ArgKey::kCorrelation:
        get_int(ev.correlation, k);
        break;
      case ArgKey::kSequenceNumber:
        get_int(ev.seq_nr, k);
        break;
      case ArgKey::kFwdThreadId:
        get_int(ev.fwd_tid, k);
        break;
      case ArgKey::kRecordFunctionId:
        get_int(ev.rf_id, k);
        break;
      case ArgKey::kDevice:
        get_int(ev.device, k);
        break;
      case ArgKey::kStream:
        // CUDA: integer; ROCm runtime calls: hex string ("0x1a2b") — keep only integers.
        if (scalar(text, was_string)) {
          if (num_.int_ok)
            ev.stream = num_.i;
          else if (parse_int64(text, ev.stream) != DecimalStatus::kExact)
            ev.stream = kNoId;
        }
        break;
      case ArgKey::kGraphId:
        get_int(ev.graph_id, k);
        break;
      case ArgKey::kRegisters:
        get_int(ev.registers, k);
        break;
      case ArgKey::kSharedMemory:
        get_int(ev.shared_mem, k);
        break;
      case ArgKey::kBytes:
        get_int(ev.bytes, k);
        break;
      case ArgKey::kMemBytes:
        get_int(ev.mem_bytes, k);
        break;
      case ArgKey::kTotalAllocated:
        get_int(ev.total_alloc, k);
        break;
      case ArgKey::kDeviceId:
        get_int(ev.device_id, k);
        break;
      case ArgKey::kGrid:
        get_dim3(ev.grid);
        break;
      case ArgKey::kBlock:
        get_dim3(ev.block);
        break;
      case ArgKey::kInputDims:
        if (*p_ == '[')
          ev.input_dims = skip_value();
        else
          skip_value();
        break;
      case ArgKey::kInputType:
        if (*p_ == '[')
          ev.input_types = skip_value();
        else
          skip_value();
        break;
      case ArgKey::kConcreteInputs:
        if (*p_ == '[')
          ev.concrete_inputs = skip_value();
        else
          skip_value();
        break;
      case ArgKey::kName:
        if (*p_ == '"')
          ev.arg_name = str_value();
        else
          skip_value();
        break;
      case ArgKey::kCollectiveName:
        ev.comm.any = true;
        if (*p_ == '"')
          ev.comm.collective_name = str_value();
        else
          skip_value();
        break;
      case ArgKey::kDtype:
        if (*p_ == '"')
          ev.comm.dtype = str_value();
        else
          skip_value();
        break;
      case ArgKey::kPgName:
        if (scalar(text, was_string)) ev.comm.pg_name = text;
        break;
      case ArgKey::kPgDesc:
        if (*p_ == '"')
          ev.comm.pg_desc = str_value();
        else
          skip_value();
        break;
      case ArgKey::kPgRanks:
        if (*p_ == '[')
          ev.comm.pg_ranks = skip_value();
        else if (scalar(text, was_string))
          ev.comm.pg_ranks = text;
        break;
      case ArgKey::kInSplitSize:
        if (*p_ == '[')
          ev.comm.in_split = skip_value();
        else if (scalar(text, was_string))
          ev.comm.in_split = text;
        break;
      case ArgKey::kOutSplitSize:
        if (*p_ == '[')
          ev.comm.out_split = skip_value();
        else if (scalar(text, was_string))
          ev.comm.out_split = text;
        break;
      case ArgKey::kInMsgNelems:
        get_int(ev.comm.in_nelems, k);
        break;
      case ArgKey::kOutMsgNelems:
        get_int(ev.comm.out_nelems, k);
        break;
      case ArgKey::kGroupSize:
        get_int(ev.comm.group_size, k);
        break;
      case ArgKey::kSeq:
        get_int(ev.comm.seq, k);
        break;
    }
    if (*p_ == ',') {  // the usual case, no blank before the comma
      ++p_;
      continue;
    }
    ws(blanks_.args_close);
    if (*p_ == '}') {
      ++p_;
      return;
    }
    if (!next_member('}')) return;
  }
}

void KinetoReader::parse_counter_args() {
  ++p_;  // '{'
  ws();
  if (*p_ == '}') {
    ++p_;
    return;
  }
  for (;;) {
    ws();
    const std::string_view k = key();
    std::string_view text;
    bool was_string = false;
    if (scalar(text, was_string)) {
      double x = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), x);
      if (r.ec == std::errc() && r.ptr == text.data() + text.size())
        ev_counters_.emplace_back(k, x);
    }
    if (!next_member('}')) return;
  }
}

// pid/tid: integers, numeric strings, "stream 7" (2021 GPU tids), or names ("Spans", "Traces"),
// which get a stable negative id: -(interned id + 2).
int64_t KinetoReader::id_from_pid_text(std::string_view text, bool was_string, bool gpu_stream) {
  int64_t x;
  if (parse_int64(text, x) == DecimalStatus::kExact) return x;
  if (was_string) {
    std::string_view s = text;
    if (gpu_stream && s.substr(0, 7) == "stream ") {
      s.remove_prefix(7);
      while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
      if (parse_int64(s, x) == DecimalStatus::kExact) return x;
    }
  }
  return -static_cast<int64_t>(intern_text(text)) - 2;
}

// Counts one kept string whose invalid UTF-8 the string table repaired, at its first bad byte
// when the string lies in the window (else at its event: an unescaped copy).
void KinetoReader::report_utf8(std::string_view s) {
  std::string copy(s);
  size_t first_bad = 0;
  const size_t replaced = repair_utf8(copy, &first_bad);
  const uint64_t off = text_offset(s.data(), first_bad);
  t_.diagnostics.add("invalid_utf8", [&] {
    return fmt::format("byte {}: {} invalid UTF-8 byte(s) replaced by '?'", off, replaced);
  });
}

uint64_t KinetoReader::text_offset(const char* p, size_t i) const {
  const auto at = reinterpret_cast<uintptr_t>(p), lo = reinterpret_cast<uintptr_t>(base_ + 1),
             hi = reinterpret_cast<uintptr_t>(base_ + len_);
  return at >= lo && at < hi ? offset_of(p) + i : ev_off_;
}

void KinetoReader::repair_kept(std::string& s, uint64_t off) {
  size_t first_bad = 0;
  const size_t replaced = repair_utf8(s, &first_bad);
  if (replaced == 0) return;
  t_.diagnostics.add("invalid_utf8", [&] {
    return fmt::format("byte {}: {} invalid UTF-8 byte(s) replaced by '?'", off + first_bad,
                       replaced);
  });
}

bool KinetoReader::get_time(std::string_view text, Ns& out, const char* what, uint64_t offset) {
  const DecimalStatus st = parse_us_to_ns(text, out);
  if (st == DecimalStatus::kExact) return true;
  if (st == DecimalStatus::kRounded) {
    t_.diagnostics.add("sub_ns_time_rounded", [&] {
      return fmt::format("byte {}: {} {} has more than 3 decimals; rounded to the nanosecond",
                         offset, what, text);
    });
    return true;
  }
  t_.diagnostics.add(st == DecimalStatus::kOverflow ? "time_out_of_range" : "invalid_time", [&] {
    return fmt::format("byte {}: {} '{}' is not a usable time; event skipped", offset, what, text);
  });
  return false;
}

void KinetoReader::time_overflow(uint64_t offset, Ns ts, Ns dur) {
  t_.diagnostics.add("time_overflow", [&] {
    return fmt::format(
        "byte {}: ts {} ns + dur {} ns is outside the times chopper keeps (within 2^62 ns of "
        "1970, so that any two differ by less than int64); event skipped",
        offset, ts, dur);
  });
}

namespace {

// Drops the rows whose flag is set from every column of a table (columns not yet filled, such as
// labels, are left alone).
template <class Table>
void drop_rows(Table& tb, size_t n, const std::vector<uint8_t>& drop) {
  tb.for_each_column([&](auto& col) {
    if (col.size() != n) return;
    size_t j = 0;
    for (size_t i = 0; i < n; ++i)
      if (!drop[i]) col[j++] = col[i];
    col.resize(j);
  });
}

}  // namespace

void KinetoReader::add_base_time(Ns b) {
  // Whether t + b is outside (-kTimeLimit, kTimeLimit). Complete events' ends are below
  // kTimeLimit (checked when read), so end + b is computed like a start.
  auto out = [b](Ns x) {
    Ns y;
    return __builtin_add_overflow(x, b, &y) || y < -kTimeLimit || y >= kTimeLimit;
  };
  // Checked first (rare: only hostile or corrupt input), so that the usual case stays one pass
  // of additions.
  bool any = false;
  auto scan = [&](const std::vector<Ns>& ts, const std::vector<Ns>* dur) {
    for (size_t i = 0; i < ts.size() && !any; ++i)
      any = out(ts[i]) || (dur != nullptr && out(ts[i] + (*dur)[i]));
  };
  scan(t_.gpu.start_ns, &t_.gpu.dur_ns);
  scan(t_.host.start_ns, &t_.host.dur_ns);
  scan(t_.runtime.start_ns, &t_.runtime.dur_ns);
  scan(t_.flows.ts_ns, nullptr);
  scan(t_.instants.ts_ns, nullptr);
  scan(t_.counters.ts_ns, nullptr);
  if (any) [[unlikely]] {
    uint64_t dropped = 0;
    std::vector<uint8_t> drop;
    auto mark = [&](const std::vector<Ns>& ts, const std::vector<Ns>* dur) {
      drop.assign(ts.size(), 0);
      for (size_t i = 0; i < ts.size(); ++i) {
        drop[i] = out(ts[i]) || (dur != nullptr && out(ts[i] + (*dur)[i]));
        dropped += drop[i];
      }
      return ts.size();
    };
    drop_rows(t_.gpu, mark(t_.gpu.start_ns, &t_.gpu.dur_ns), drop);
    drop_rows(t_.host, mark(t_.host.start_ns, &t_.host.dur_ns), drop);
    drop_rows(t_.runtime, mark(t_.runtime.start_ns, &t_.runtime.dur_ns), drop);
    drop_rows(t_.flows, mark(t_.flows.ts_ns, nullptr), drop);
    drop_rows(t_.instants, mark(t_.instants.ts_ns, nullptr), drop);
    {
      CounterSamples& c = t_.counters;
      const size_t n = mark(c.ts_ns, nullptr);
      size_t j = 0;
      for (size_t i = 0; i < n; ++i)
        if (!drop[i]) {
          c.name[j] = c.name[i];
          c.pid[j] = c.pid[i];
          c.ts_ns[j] = c.ts_ns[i];
          c.value[j] = c.value[i];
          ++j;
        }
      c.name.resize(j);
      c.pid.resize(j);
      c.ts_ns.resize(j);
      c.value.resize(j);
    }
    t_.diagnostics.add("time_overflow", [&] {
      return fmt::format(
          "{} event(s) whose time (plus baseTimeNanoseconds {}) is outside the times chopper "
          "keeps (within 2^62 ns of 1970) skipped",
          dropped, b);
    });
    if (dropped > 1) t_.diagnostics.add_count("time_overflow", dropped - 1);
  }
  if (b != 0)
    for (auto* col : {&t_.gpu.start_ns, &t_.host.start_ns, &t_.runtime.start_ns, &t_.flows.ts_ns,
                      &t_.instants.ts_ns, &t_.counters.ts_ns})
      for (Ns& x : *col) x += b;
}

int32_t KinetoReader::add_shapes(const Ev& ev) {
  InputShapes s;
  s.input_dims = intern_text(ev.input_dims);
  s.input_types = intern_text(ev.input_types);
  s.concrete_inputs = intern_text(ev.concrete_inputs);
  t_.shapes.push_back(s);
  return static_cast<int32_t>(t_.shapes.size() - 1);
}

int32_t KinetoReader::new_thread(int64_t pid, int64_t tid, ThreadMemo& m) {
  bool fresh = false;
  const auto index = static_cast<int32_t>(thread_index_.id(ThreadKey{pid, tid}, &fresh));
  if (fresh) t_.threads.push_back(ThreadKey{pid, tid});  // ids are dense, in first-seen order
  m = ThreadMemo{pid, tid, index};
  return index;
}

int32_t KinetoReader::add_comm(const CommFields& c) {
  CommArgs a;
  a.collective_name = intern_text(c.collective_name);
  a.dtype = intern_text(c.dtype);
  a.in_nelems = c.in_nelems;
  a.out_nelems = c.out_nelems;
  a.group_size = c.group_size;
  a.pg_name = intern_text(c.pg_name);
  a.pg_desc = intern_text(c.pg_desc);
  a.pg_ranks = intern_text(c.pg_ranks);
  a.in_split = intern_text(c.in_split);
  a.out_split = intern_text(c.out_split);
  a.seq = c.seq;
  t_.comm_args.push_back(a);
  return static_cast<int32_t>(t_.comm_args.size() - 1);
}

void KinetoReader::add_gpu_row(const Ev& ev, CatKind kind, StrId cat, StrId name, Ns ts, Ns dur) {
  GpuActivities& g = t_.gpu;
  if (g.start_ns.size() == g.start_ns.capacity()) make_room(g);
  put(g.kind, kind == CatKind::kKernel   ? GpuKind::kKernel
              : kind == CatKind::kMemcpy ? GpuKind::kMemcpy
              : kind == CatKind::kMemset ? GpuKind::kMemset
                                         : GpuKind::kSync);
  const int64_t dev = ev.device != kNoId ? ev.device : (ev.has_pid ? ev.pid : -1);
  put(g.device, static_cast<int32_t>(std::clamp<int64_t>(dev, INT32_MIN, INT32_MAX)));
  put(g.stream, ev.stream != kNoId ? ev.stream : (ev.has_tid ? ev.tid : -1));
  put(g.start_ns, ts);
  put(g.dur_ns, dur);
  put(g.correlation, ev.correlation);
  put(g.external_id, ev.external_id);
  put(g.name, name);
  put(g.category, cat);
  put(g.grid, ev.grid);
  put(g.block, ev.block);
  put(g.registers, static_cast<int32_t>(std::clamp<int64_t>(ev.registers, -1, INT32_MAX)));
  put(g.shared_mem_bytes, static_cast<int32_t>(std::clamp<int64_t>(ev.shared_mem, -1, INT32_MAX)));
  put(g.bytes, ev.bytes);
  put(g.graph_id, ev.graph_id);
  put(g.comm_args, ev.comm.any ? add_comm(ev.comm) : kNoRow);
}

void KinetoReader::add_host_row(const Ev& ev, CatKind kind, StrId cat, StrId name, Ns ts, Ns dur) {
  HostOps& h = t_.host;
  if (h.start_ns.size() == h.start_ns.capacity()) make_room(h);
  put(h.kind, kind == CatKind::kCpuOp            ? HostKind::kCpuOp
              : kind == CatKind::kUserAnnotation ? HostKind::kUserAnnotation
                                                 : HostKind::kPythonFunction);
  put(h.category, cat);
  put(h.thread, thread_of(ev.pid, ev.tid));
  put(h.start_ns, ts);
  put(h.dur_ns, dur);
  put(h.name, name);
  put(h.external_id, ev.external_id);
  put(h.sequence_number, ev.seq_nr);
  put(h.fwd_thread_id, ev.fwd_tid);
  put(h.record_function_id, ev.rf_id);
  put(h.shapes, ev.input_dims.empty() && ev.input_types.empty() && ev.concrete_inputs.empty()
                    ? kNoRow
                    : add_shapes(ev));
  put(h.comm_args, ev.comm.any ? add_comm(ev.comm) : kNoRow);
}

void KinetoReader::add_runtime_row(const Ev& ev, CatKind kind, StrId name, Ns ts, Ns dur) {
  RuntimeCalls& r = t_.runtime;
  if (r.start_ns.size() == r.start_ns.capacity()) make_room(r);
  put(r.driver, kind == CatKind::kDriver);
  put(r.thread, thread_of(ev.pid, ev.tid));
  put(r.start_ns, ts);
  put(r.dur_ns, dur);
  put(r.name, name);
  put(r.correlation, ev.correlation);
  put(r.external_id, ev.external_id);
}

void KinetoReader::add_flow_row(const Ev& ev, CatKind kind, StrId cat, uint64_t id, Ns ts) {
  Flows& fl = t_.flows;
  if (fl.ts_ns.size() == fl.ts_ns.capacity()) make_room(fl);
  put(fl.kind, kind == CatKind::kFlowLaunch   ? FlowKind::kLaunch
               : kind == CatKind::kFlowFwdBwd ? FlowKind::kFwdBwd
                                              : FlowKind::kOther);
  put(fl.phase, ev.ph == 's'   ? FlowPhase::kStart
                : ev.ph == 't' ? FlowPhase::kStep
                               : FlowPhase::kFinish);
  put(fl.category, cat);
  put(fl.id, id);
  put(fl.thread, thread_of(ev.pid, ev.tid));
  put(fl.ts_ns, ts);
  put(fl.binds_enclosing, ev.bp_e);
}

void KinetoReader::commit(Ev& ev, uint64_t offset) {
  ++t_.total_events;
  ++ph_counts_[static_cast<unsigned char>(ev.ph)];
  for (auto& d : ev_diags_) t_.diagnostics.add(d.kind, [&] { return std::move(d.example); });
  const StrId cat = ev.has_cat ? intern_name(ev.cat) : 0;
  if (ev.skipped_python) {
    count_x(cat);
    return;
  }
  if (ev.has_ts && !saw_fraction_ &&
      (ev.ts_fast ? ev.ts_dot : ev.ts.find('.') != std::string_view::npos))
    saw_fraction_ = true;

  switch (ev.ph) {
    case 'X': {
      count_x(cat);
      const CatKind kind = cat_kind(cat);
      Ns ts = 0, dur = 0;
      if (!ev.has_ts) {
        t_.diagnostics.add("missing_ts", [&] {
          return fmt::format("byte {}: complete event without ts; skipped", offset);
        });
        return;
      }
      if (ev.ts_fast)
        ts = ev.ts_ns;
      else if (!get_time(ev.ts, ts, "ts", offset))
        return;
      if (!ev.has_dur) {
        t_.diagnostics.add("missing_dur", [&] {
          return fmt::format("byte {}: complete event without dur; taken as 0", offset);
        });
      } else if (ev.dur_fast) {
        dur = ev.dur_ns;
      } else if (!get_time(ev.dur, dur, "dur", offset)) {
        return;
      }
      if (dur < 0) {
        t_.diagnostics.add("negative_dur", [&] {
          return fmt::format("byte {}: negative dur {}; taken as 0", offset, ev.dur);
        });
        dur = 0;
      }
      // end = ts + dur: both below 2^62 in magnitude, so the sum cannot overflow, and it must
      // stay below 2^62 too (kTimeLimit).
      if (ts < -kTimeLimit || ts >= kTimeLimit || dur >= kTimeLimit || ts + dur >= kTimeLimit)
          [[unlikely]] {
        time_overflow(offset, ts, dur);
        return;
      }
      if (!ev.has_name && (kind != CatKind::kOther)) {
        t_.diagnostics.add("missing_name",
                           [&] { return fmt::format("byte {}: event without name", offset); });
      }
      const StrId name = ev.has_name ? intern_name(ev.name) : 0;
      switch (kind) {
        case CatKind::kKernel:
        case CatKind::kMemcpy:
        case CatKind::kMemset:
        case CatKind::kSync: {
          add_gpu_row(ev, kind, cat, name, ts, dur);
          return;
        }
        case CatKind::kCpuOp:
        case CatKind::kUserAnnotation:
        case CatKind::kPython: {
          add_host_row(ev, kind, cat, name, ts, dur);
          return;
        }
        case CatKind::kRuntime:
        case CatKind::kDriver: {
          add_runtime_row(ev, kind, name, ts, dur);
          if (!t_.meta.rocm && ev.has_name && ev.name.size() >= 3 && ev.name[0] == 'h' &&
              ev.name[1] == 'i' && ev.name[2] == 'p')  // no memcmp call per runtime call
            t_.meta.rocm = true;
          return;
        }
        case CatKind::kGpuUserAnnotation:
        case CatKind::kFlowLaunch:
        case CatKind::kFlowFwdBwd:
        case CatKind::kOther:
          return;  // counted in x_events_by_category; not stored
      }
      return;
    }
    case 's':
    case 't':
    case 'f': {
      if (!ev.has_ts || !ev.has_id) {
        t_.diagnostics.add("flow_missing_fields", [&] {
          return fmt::format("byte {}: flow event without ts or id; skipped", offset);
        });
        return;
      }
      Ns ts = ev.ts_ns;
      if (!ev.ts_fast && !get_time(ev.ts, ts, "ts", offset)) return;
      uint64_t id = ev.id;
      if (!ev.id_fast && parse_uint64(ev.id_text, id) != DecimalStatus::kExact) {
        // String ids are hexadecimal in the Chrome format ("0x1f" or "1f"); else hash the text.
        std::string_view s = ev.id_text;
        if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") s.remove_prefix(2);
        bool ok = !s.empty() && s.size() <= 16;
        uint64_t x = 0;
        for (char c : s) {
          int d = (c >= '0' && c <= '9')   ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                           : -1;
          if (d < 0) {
            ok = false;
            break;
          }
          x = x * 16 + static_cast<uint64_t>(d);
        }
        id = ok ? x : (0x8000000000000000ULL | intern_text(ev.id_text));
      }
      add_flow_row(ev, cat_kind(cat), cat, id, ts);
      return;
    }
    case 'i':
    case 'I':
    case 'R': {
      Ns ts;
      if (!ev.has_ts) {
        t_.diagnostics.add("missing_ts", [&] {
          return fmt::format("byte {}: instant event without ts; skipped", offset);
        });
        return;
      }
      if (!get_time(ev.ts, ts, "ts", offset)) return;
      Instants& in = t_.instants;
      if (in.ts_ns.size() == in.ts_ns.capacity()) make_room(in);
      put(in.name, ev.has_name ? intern_text(ev.name) : 0);
      put(in.category, cat);
      put(in.thread, thread_of(ev.pid, ev.tid));
      put(in.ts_ns, ts);
      put(in.scope, ev.scope == 0 ? 't' : ev.scope);
      put(in.mem_bytes, ev.mem_bytes);
      put(in.mem_total_allocated, ev.total_alloc);
      put(in.mem_device, static_cast<int32_t>(std::clamp<int64_t>(ev.device_id, -1, INT32_MAX)));
      return;
    }
    case 'M': {
      if (!ev.has_name || ev.arg_name.empty()) return;
      const bool process = ev.name == "process_name";
      if (!process && ev.name != "thread_name") return;
      std::string text(ev.arg_name);
      repair_kept(text, text_offset(ev.arg_name.data()));
      if (process) {
        t_.meta.process_names.emplace_back(ev.pid, std::move(text));
      } else {
        t_.meta.thread_names.emplace_back(std::make_pair(ev.pid, ev.tid), std::move(text));
      }
      return;
    }
    case 'C': {
      Ns ts;
      if (!ev.has_ts || !get_time(ev.ts, ts, "ts", offset)) return;
      for (const auto& [k, v] : ev_counters_) {
        std::string series(ev.has_name ? ev.name : std::string_view());
        series += '.';
        series += k;
        t_.counters.name.push_back(intern_text(series));
        t_.counters.pid.push_back(ev.pid);
        t_.counters.ts_ns.push_back(ts);
        t_.counters.value.push_back(v);
      }
      return;
    }
    default:
      t_.diagnostics.add("unsupported_phase", [&] {
        return fmt::format(
            "byte {}: event with ph '{}' is not used by chopper; counted, not stored", offset,
            ev.ph == 0 ? std::string("(none)") : printable(static_cast<unsigned char>(ev.ph)));
      });
      return;
  }
}

void KinetoReader::parse_metadata() {
  simdjson::dom::parser dp;
  TraceMetadata& m = t_.meta;
  auto as_text = [](simdjson::dom::element e) -> std::string {
    std::string_view s;
    if (!e.get_string().get(s)) return std::string(s);
    return simdjson::minify(e);
  };
  auto as_int = [](simdjson::dom::element e, int64_t def) -> int64_t {
    int64_t x;
    if (!e.get_int64().get(x)) return x;
    uint64_t u;
    if (!e.get_uint64().get(u)) return static_cast<int64_t>(std::min<uint64_t>(u, INT64_MAX));
    double d;
    // A fraction is truncated; a value outside int64 (1e300, a fuzzer's 6.55e38) is not an int.
    if (!e.get_double().get(d)) return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : def;
    std::string_view s;
    if (!e.get_string().get(s) && parse_int64(s, x) == DecimalStatus::kExact) return x;
    return def;
  };
  for (auto& [key, text] : top_values_) {
    simdjson::dom::element e;
    if (dp.parse(text).get(e)) {
      t_.diagnostics.add("malformed_metadata",
                         fmt::format("top-level \"{}\" is not valid JSON; ignored", key));
      continue;
    }
    if (key == "baseTimeNanoseconds") {
      // Exact from the text: an epoch in ns has 19 digits.
      int64_t b;
      if (parse_int64(text, b) == DecimalStatus::kExact ||
          parse_scaled(text, 0, b) == DecimalStatus::kExact) {
        m.base_time_ns = b;
        m.has_base_time = true;
      } else {
        t_.diagnostics.add("malformed_metadata",
                           fmt::format("baseTimeNanoseconds {} unusable", text));
      }
    } else if (key == "schemaVersion") {
      m.schema_version = as_int(e, -1);
    } else if (key == "traceName") {
      m.trace_name = as_text(e);
    } else if (key == "displayTimeUnit") {
      m.display_time_unit = as_text(e);
    } else if (key == "deviceProperties") {
      simdjson::dom::array arr;
      if (e.get_array().get(arr)) continue;
      for (simdjson::dom::element d : arr) {
        DeviceProps p;
        simdjson::dom::object o;
        if (d.get_object().get(o)) continue;
        for (auto [k, val] : o) {
          if (eq(k, "id"))
            p.id = as_int(val, -1);
          else if (eq(k, "name"))
            p.name = as_text(val);
          else if (eq(k, "totalGlobalMem"))
            p.total_global_mem_bytes = as_int(val, -1);
          else if (eq(k, "computeMajor"))
            p.compute_major = as_int(val, -1);
          else if (eq(k, "computeMinor"))
            p.compute_minor = as_int(val, -1);
          else if (eq(k, "numSms"))
            p.num_sms = as_int(val, -1);
          else if (eq(k, "warpSize"))
            p.warp_size = as_int(val, -1);
          else if (eq(k, "maxThreadsPerBlock"))
            p.max_threads_per_block = as_int(val, -1);
          else if (eq(k, "sharedMemPerBlock"))
            p.shared_mem_per_block_bytes = as_int(val, -1);
          else if (eq(k, "regsPerBlock"))
            p.regs_per_block = as_int(val, -1);
        }
        m.devices.push_back(std::move(p));
      }
    } else if (key == "distributedInfo") {
      simdjson::dom::object o;
      if (e.get_object().get(o)) continue;
      for (auto [k, val] : o) {
        if (eq(k, "rank"))
          m.rank = as_int(val, -1);
        else if (eq(k, "world_size"))
          m.world_size = as_int(val, -1);
        else if (eq(k, "backend"))
          m.backend = as_text(val);
        else if (eq(k, "nccl_version"))
          m.nccl_version = as_text(val);
        else if (eq(k, "pg_count"))
          m.pg_count = as_int(val, -1);
        else if (eq(k, "pg_config")) {
          auto add_pg = [&](simdjson::dom::element pe, std::string_view fallback_name) {
            simdjson::dom::object po;
            if (pe.get_object().get(po)) return;
            ProcessGroup pg;
            pg.name = std::string(fallback_name);
            for (auto [pk, pv] : po) {
              if (pk == "pg_name")
                pg.name = as_text(pv);
              else if (pk == "pg_desc")
                pg.desc = as_text(pv);
              else if (pk == "backend_config")
                pg.backend_config = as_text(pv);
              else if (pk == "pg_size")
                pg.size = as_int(pv, -1);
              else if (pk == "ranks") {
                simdjson::dom::array ra;
                if (!pv.get_array().get(ra)) {
                  for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
                } else {
                  // Some builds write the ranks as a string "[0, 1]".
                  std::string s = as_text(pv);
                  simdjson::dom::parser p2;
                  simdjson::dom::element re;
                  if (!p2.parse(s).get(re) && !re.get_array().get(ra))
                    for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
                }
              }
            }
            if (pg.size < 0 && !pg.ranks.empty()) pg.size = static_cast<int64_t>(pg.ranks.size());
            m.process_groups.push_back(std::move(pg));
          };
          simdjson::dom::array pa;
          simdjson::dom::object pobj;
          if (!val.get_array().get(pa)) {
            for (auto pe : pa) add_pg(pe, "");
          } else if (!val.get_object().get(pobj)) {
            for (auto [pk, pv] : pobj) add_pg(pv, pk);
          }
        }
      }
      if (m.rank >= 0) m.rank_source = "distributedInfo";
    } else if (key.find("version") != std::string::npos || key == "trace_id") {
      m.versions.emplace_back(key, as_text(e));
      if (key.rfind("roctracer", 0) == 0 || key.rfind("hip_", 0) == 0) m.rocm = true;
    } else {
      std::string v = as_text(e);
      if (v.size() > 200) v = v.substr(0, 200) + "...";
      m.other.emplace_back(key, std::move(v));
    }
  }
}

}  // namespace

RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt) {
  RankTrace t;
  t.file = src.name();
  t.file_bytes = src.raw_size();
  try {
    KinetoReader r(src, opt, t);
    r.run();
  } catch (const std::bad_alloc&) {
    // Memory is short: free the trace before building the message.
    t = RankTrace();
    throw InputError(src.name(), src.raw_offset(), "out of memory while reading this file");
  } catch (const std::length_error&) {
    t = RankTrace();
    throw InputError(src.name(), src.raw_offset(), "out of memory while reading this file");
  }
  return t;
}

RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt) {
  auto src = ByteSource::open_file(path);
  return read_kineto(*src, opt);
}

}  // namespace chopper
