#pragma once
// Every text chopper keeps from its input (interned strings, metadata, diagnostic examples, error
// messages) is valid UTF-8: a byte that is not part of a valid sequence is replaced by '?'. The
// repair is made where text is kept, not over the whole input, so that reading a trace never
// scans bytes a second time only to check them.
#include <cstddef>
#include <string>
#include <string_view>

namespace chopper {

// True if `s` is valid UTF-8 (no overlong forms, surrogates or values above U+10FFFF).
bool valid_utf8(std::string_view s);

// Replaces, in place, each byte of s[0, n) that is not part of a valid UTF-8 sequence with '?'
// (the length does not change). Returns how many bytes were replaced; *first_bad, when given and
// one was, is set to the index of the first.
size_t repair_utf8(char* s, size_t n, size_t* first_bad = nullptr);
inline size_t repair_utf8(std::string& s, size_t* first_bad = nullptr) {
  return repair_utf8(s.data(), s.size(), first_bad);
}

}  // namespace chopper
