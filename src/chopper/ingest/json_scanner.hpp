#pragma once
// Streaming structural scanner for the elements of one huge JSON array (Kineto's traceEvents).
// It tracks string state and bracket depth across calls, 64 bytes at a time (AVX2 + PCLMUL where
// the CPU has them, the same logic byte by byte elsewhere), and reports where each top-level
// element object starts and ends, so the reader can hand complete events to simdjson in batches
// while the rest of the file is still being decompressed.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace chopper {

class ArrayElementScanner {
 public:
  struct Element {
    size_t begin;  // position of '{' (or '[' for a non-object element)
    size_t end;    // one past the matching '}'
    bool is_object;
  };

  // Called right after the array's opening '['.
  void reset();

  // Scans buf[pos, end). Appends complete elements to `out` (positions in buf). Returns the
  // position where scanning stopped: `end`, or one past the array's closing ']' (then closed() is
  // true). The state carries over to the next call, whose buffer may have been moved: call
  // rebase(delta) after moving bytes so that pending positions follow them.
  size_t scan(const char* buf, size_t pos, size_t end, std::vector<Element>& out);

  bool closed() const { return closed_; }
  bool inside_element() const { return depth_ > 0; }
  size_t element_begin() const { return elem_begin_; }
  void rebase(ptrdiff_t delta) { elem_begin_ = static_cast<size_t>(static_cast<ptrdiff_t>(elem_begin_) + delta); }
  // True when the CPU path (AVX2+PCLMUL) is used; for tests of both paths.
  static bool simd_available();
  void force_scalar(bool v) { force_scalar_ = v; }

 private:
  size_t scan_scalar(const char* buf, size_t pos, size_t end, std::vector<Element>& out);
  size_t scan_simd(const char* buf, size_t pos, size_t end, std::vector<Element>& out);
  // Applies one structural bracket at `p`; returns false when the array closed.
  bool on_bracket(char c, size_t p, std::vector<Element>& out) {
    if (c == '{' || c == '[') {
      if (depth_ == 0) {
        elem_begin_ = p;
        elem_is_object_ = c == '{';
      }
      ++depth_;
    } else {
      if (depth_ == 0) {  // ']' (or a stray '}') closing the array
        closed_ = true;
        return false;
      }
      if (--depth_ == 0) out.push_back(Element{elem_begin_, p + 1, elem_is_object_});
    }
    return true;
  }

  int64_t depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  bool closed_ = false;
  bool elem_is_object_ = false;
  bool force_scalar_ = false;
  size_t elem_begin_ = 0;
};

}  // namespace chopper
