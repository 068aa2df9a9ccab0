#include "chopper/ingest/json_document.hpp"

#include <algorithm>
#include <cstring>

#include "chopper/base/error.hpp"
#include "chopper/base/utf8.hpp"

namespace chopper {

namespace od = simdjson::ondemand;

size_t last_complete_element(const char* p, size_t n, std::string& closers) {
  std::string stack, best_stack;
  size_t best = 0;
  bool in_string = false;
  for (size_t i = 0; i < n; ++i) {
    char c = p[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      stack.push_back(c);
    } else if (c == '}' || c == ']') {
      if (stack.empty()) return 0;  // not balanced: left to the parser's error
      stack.pop_back();
      if (!stack.empty() && stack.back() == '[') {
        best = i + 1;
        best_stack = stack;
      }
    }
  }
  closers.clear();
  for (size_t k = best_stack.size(); k > 0; --k)
    closers.push_back(best_stack[k - 1] == '[' ? ']' : '}');
  return best;
}

void read_json_document(ByteSource& src, std::string head, std::string_view what,
                        Diagnostics& diags, const std::function<void(od::document&)>& read,
                        const std::function<size_t()>& records) {
  std::string buf = std::move(head);
  {
    // A plain file's size is known: one read of the rest (and one more to see its end). Else the
    // buffer doubles, from 64 KiB (a counter pass is often tens of KB: zero-filling a fixed 4 MiB
    // chunk per read cost more than parsing it).
    uint64_t raw = src.raw_size();
    size_t chunk = size_t{64} << 10;
    if (src.compression() == Compression::kNone && raw < (uint64_t{1} << 34)) {
      buf.reserve(static_cast<size_t>(raw) + 1 + simdjson::SIMDJSON_PADDING);
      if (raw > buf.size()) chunk = static_cast<size_t>(raw) - buf.size() + 1;
    }
    while (true) {
      size_t old = buf.size();
      buf.resize(old + chunk);
      size_t got = src.read(buf.data() + old, chunk);
      buf.resize(old + got);
      if (got == 0) break;
      if (buf.size() > kMaxJsonDocumentBytes)
        throw InputError(src.name(), buf.size(),
                         std::string(what) + " larger than " + limit_text(kMaxJsonDocumentBytes) +
                             " (the limit for one JSON counter document, read whole)");
      // Filled: the data goes on, so ask for more (up to 64 MiB at a time); short: most likely
      // the end, which a small read confirms.
      chunk = got == chunk ? std::min(2 * chunk, size_t{64} << 20) : size_t{64} << 10;
    }
  }
  size_t len = buf.size();
  buf.resize(len + simdjson::SIMDJSON_PADDING, '\0');

  od::parser parser;
  bool retried_utf8 = false;
  bool cut_done = false;
  auto truncation = [](simdjson::error_code c) {
    return c == simdjson::UNCLOSED_STRING || c == simdjson::INCOMPLETE_ARRAY_OR_OBJECT ||
           c == simdjson::TAPE_ERROR;
  };
  while (true) {
    auto doc_result = parser.iterate(buf.data(), len, buf.size());
    simdjson::error_code ec = doc_result.error();
    uint64_t off = 0;
    if (ec == simdjson::UTF8_ERROR && !retried_utf8) {
      size_t first_bad = 0;
      size_t n = repair_utf8(buf.data(), len, &first_bad);
      diags.add("invalid_utf8", "byte " + std::to_string(first_bad) + ": " + std::to_string(n) +
                                    " bytes replaced by '?'");
      retried_utf8 = true;
      continue;
    }
    if (!ec) {
      od::document doc = std::move(doc_result.value_unsafe());
      try {
        read(doc);
        return;
      } catch (const simdjson::simdjson_error& e) {
        ec = e.error();
        auto loc = doc.current_location();
        off = loc.error() ? len : static_cast<uint64_t>(loc.value_unsafe() - buf.data());
        if ((!truncation(ec) || cut_done) && records() > 0) {
          diags.add("json_error", "byte " + std::to_string(off) + ": " + e.what() +
                                      "; the records before it are kept");
          return;
        }
      }
    }
    if (truncation(ec) && !cut_done) {
      // Cut short: keep the document up to the last complete element of an array and close it.
      cut_done = true;
      std::string closers;
      size_t cut = last_complete_element(buf.data(), len, closers);
      if (cut > 0) {
        size_t need = cut + closers.size() + simdjson::SIMDJSON_PADDING;
        if (buf.size() < need) buf.resize(need, '\0');
        std::memcpy(buf.data() + cut, closers.data(), closers.size());
        size_t new_len = cut + closers.size();
        std::memset(buf.data() + new_len, 0, buf.size() - new_len);
        diags.add("truncated_json", "the document ends at byte " + std::to_string(len) +
                                        " inside a record; read up to byte " + std::to_string(cut));
        len = new_len;
        continue;
      }
    }
    throw InputError(src.name(), off, std::string(what) + ": " + simdjson::error_message(ec));
  }
}

}  // namespace chopper
