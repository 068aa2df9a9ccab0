#pragma once
// Small text helpers shared across modules.
#include <string>
#include <string_view>

namespace chopper {

// `s` with ASCII letters lower-cased (other bytes, UTF-8 included, unchanged; no locale).
inline std::string ascii_lower(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return o;
}

}  // namespace chopper
