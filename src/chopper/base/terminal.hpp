#pragma once
// Text from the input (operation names, file names, error messages quoting them) made safe to
// print on a terminal: a name holding ESC sequences could otherwise move the cursor, recolour or
// retitle the terminal, or hide lines; a NUL byte ends the line for some readers.
#include <cstdint>
#include <string>
#include <string_view>

namespace chopper {

// `s` with every control character written as \xHH: C0 (bytes 0x00-0x1F, except newline when
// `keep_newlines`, and tab), DEL (0x7F), the C1 controls U+0080-U+009F (UTF-8 C2 80 to C2 9F), and
// every byte that is not part of a well-formed UTF-8 sequence (a lone 0x9B is CSI to a terminal
// that is not in UTF-8 mode). Other text, UTF-8 included, is unchanged.
inline std::string terminal_safe(std::string_view s, bool keep_newlines = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&out](uint8_t b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80) {
      if ((b < 0x20 && b != '\t' && !(b == '\n' && keep_newlines)) || b == 0x7f)
        escape(b);
      else
        out += static_cast<char>(b);
      ++i;
      continue;
    }
    // The length of the UTF-8 sequence this byte starts (0: it starts none).
    const size_t len = b >= 0xc2 && b <= 0xdf   ? 2
                       : b >= 0xe0 && b <= 0xef ? 3
                       : b >= 0xf0 && b <= 0xf4 ? 4
                                                : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<uint8_t>(s[i + k]) & 0xc0) == 0x80;
    if (!ok) {
      escape(b);
      ++i;
      continue;
    }
    if (b == 0xc2 && static_cast<uint8_t>(s[i + 1]) < 0xa0) {  // C1 control
      escape(b);
      escape(static_cast<uint8_t>(s[i + 1]));
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace chopper
