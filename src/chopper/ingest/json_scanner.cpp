#include "chopper/ingest/json_scanner.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace chopper {

void ArrayElementScanner::reset() {
  depth_ = 0;
  in_string_ = false;
  escaped_ = false;
  closed_ = false;
  elem_begin_ = 0;
}

bool ArrayElementScanner::simd_available() {
#if defined(__x86_64__)
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul");
  return ok;
#else
  return false;
#endif
}

size_t ArrayElementScanner::scan(const char* buf, size_t pos, size_t end,
                                 std::vector<Element>& out) {
  if (closed_) return pos;
  if (!force_scalar_ && simd_available()) return scan_simd(buf, pos, end, out);
  return scan_scalar(buf, pos, end, out);
}

size_t ArrayElementScanner::scan_scalar(const char* buf, size_t pos, size_t end,
                                        std::vector<Element>& out) {
  for (size_t p = pos; p < end; ++p) {
    const char c = buf[p];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (escaped_) {  // only in malformed input: a backslash outside a string
      escaped_ = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string_ = true;
        break;
      case '\\':
        escaped_ = true;  // mirrors the block path, which escapes regardless of string state
        break;
      case '{':
      case '[':
      case '}':
      case ']':
        if (!on_bracket(c, p, out)) return p + 1;
        break;
      default:
        break;
    }
  }
  return end;
}

#if defined(__x86_64__)
namespace {

__attribute__((target("avx2"))) inline uint64_t eq_mask(__m256i lo, __m256i hi, char c) {
  const __m256i v = _mm256_set1_epi8(c);
  const auto a = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
  const auto b = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
  return static_cast<uint64_t>(a) | (static_cast<uint64_t>(b) << 32);
}

__attribute__((target("pclmul,sse2"))) inline uint64_t prefix_xor(uint64_t bits) {
  const __m128i all_ones = _mm_set1_epi8(static_cast<char>(0xFF));
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<int64_t>(bits)), all_ones, 0);
  return static_cast<uint64_t>(_mm_cvtsi128_si64(r));
}

}  // namespace

__attribute__((target("avx2,pclmul"))) size_t ArrayElementScanner::scan_simd(
    const char* buf, size_t pos, size_t end, std::vector<Element>& out) {
  // Block state in the form of simdjson's stage 1: whether the previous block ended inside a
  // string, and whether its last byte escapes the next one.
  uint64_t prev_in_string = in_string_ ? ~0ULL : 0ULL;
  uint64_t prev_escaped = escaped_ ? 1ULL : 0ULL;
  size_t p = pos;
  constexpr uint64_t kEven = 0x5555555555555555ULL;
  while (p + 64 <= end) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + p));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(buf + p + 32));
    uint64_t backslash = eq_mask(lo, hi, '\\');
    // Escaped characters: odd-length runs of backslashes escape the byte after them.
    uint64_t escaped;
    if (backslash == 0) {
      escaped = prev_escaped;
      prev_escaped = 0;
    } else {
      backslash &= ~prev_escaped;
      const uint64_t follows_escape = (backslash << 1) | prev_escaped;
      const uint64_t odd_sequence_starts = backslash & ~kEven & ~follows_escape;
      uint64_t sequences_starting_on_even_bits;
      prev_escaped = __builtin_add_overflow(odd_sequence_starts, backslash,
                                            &sequences_starting_on_even_bits)
                         ? 1ULL
                         : 0ULL;
      const uint64_t invert_mask = sequences_starting_on_even_bits << 1;
      escaped = (kEven ^ invert_mask) & follows_escape;
    }
    const uint64_t quote = eq_mask(lo, hi, '"') & ~escaped;
    const uint64_t in_string = prefix_xor(quote) ^ prev_in_string;
    const uint64_t brackets = (eq_mask(lo, hi, '{') | eq_mask(lo, hi, '}') | eq_mask(lo, hi, '[') |
                               eq_mask(lo, hi, ']')) &
                              ~in_string & ~escaped;
    uint64_t bits = brackets;
    while (bits != 0) {
      const int i = __builtin_ctzll(bits);
      bits &= bits - 1;
      if (!on_bracket(buf[p + static_cast<size_t>(i)], p + static_cast<size_t>(i), out)) {
        // The array closed at p+i: outside a string, nothing escaped after it.
        in_string_ = false;
        escaped_ = false;
        return p + static_cast<size_t>(i) + 1;
      }
    }
    prev_in_string = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
    p += 64;
  }
  in_string_ = prev_in_string != 0;
  escaped_ = prev_escaped != 0;
  return scan_scalar(buf, p, end, out);
}
#else
size_t ArrayElementScanner::scan_simd(const char* buf, size_t pos, size_t end,
                                      std::vector<Element>& out) {
  return scan_scalar(buf, pos, end, out);
}
#endif

}  // namespace chopper
