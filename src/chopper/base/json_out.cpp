#include "chopper/base/json_out.hpp"

#include <cstdio>

#include "chopper/base/utf8.hpp"

namespace chopper {

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c < 0x80) {
          out.push_back(ch);
        } else {
          // A whole valid UTF-8 sequence is copied; any other byte (a file name is bytes, not
          // text) becomes U+FFFD, so that the output is always valid JSON.
          const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
          if (n > 1 && i + n <= s.size() && valid_utf8(s.substr(i, n))) {
            out.append(s.substr(i, n));
            i += n - 1;
          } else {
            out += "\xEF\xBF\xBD";
          }
        }
    }
  }
  out.push_back('"');
}

}  // namespace chopper
