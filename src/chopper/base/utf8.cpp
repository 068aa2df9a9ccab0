#include "chopper/base/utf8.hpp"

#include <simdjson.h>

#include <cstdint>

namespace chopper {

bool valid_utf8(std::string_view s) {
  return simdjson::validate_utf8(s.data(), s.size());
}

size_t repair_utf8(char* text, size_t n, size_t* first_bad) {
  if (valid_utf8(std::string_view(text, n))) return 0;  // the usual case, at SIMD speed
  auto* s = reinterpret_cast<unsigned char*>(text);
  size_t replaced = 0;
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values above U+10FFFF are invalid too.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (ok) {
      i += len;
      continue;
    }
    if (replaced == 0 && first_bad != nullptr) *first_bad = i;
    s[i] = '?';
    ++replaced;
    ++i;
  }
  return replaced;
}

}  // namespace chopper
