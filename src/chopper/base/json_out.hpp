#pragma once
// Minimal JSON text output: escaping a string (the structure is written by callers: reports, the
// synthetic generator, the fuzz harnesses).
#include <string>
#include <string_view>

namespace chopper {

// Appends `s` as a JSON string literal (with quotes), escaping control characters, quotes and
// backslashes. Valid UTF-8 is copied; a byte that is not part of a valid sequence (file names are
// bytes) becomes U+FFFD, so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view s);
inline std::string json_string(std::string_view s) {
  std::string o;
  append_json_string(o, s);
  return o;
}

}  // namespace chopper
