// base/utf8: what counts as invalid UTF-8, and its repair (one '?' per invalid byte). The cases
// follow RFC 3629's definition: sequences of 2 to 4 bytes, no overlong forms, no surrogates
// (U+D800..U+DFFF), nothing above U+10FFFF.
#include <gtest/gtest.h>

#include <string>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/utf8.hpp"

using namespace chopper;

namespace {
// The repair of s, with the count and the first bad index.
struct Repaired {
  std::string text;
  size_t replaced = 0;
  size_t first_bad = SIZE_MAX;
};
Repaired repaired(std::string s) {
  Repaired r;
  r.replaced = repair_utf8(s, &r.first_bad);
  r.text = std::move(s);
  return r;
}
}  // namespace

TEST(Utf8, ValidTextIsLeftAsItIs) {
  // 1-, 2-, 3- and 4-byte characters, and the largest code point, U+10FFFF.
  for (const std::string s : {"", "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac 5",
                              "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(valid_utf8(s)) << s;
    const Repaired r = repaired(s);
    EXPECT_EQ(r.text, s);
    EXPECT_EQ(r.replaced, 0u);
    EXPECT_EQ(r.first_bad, SIZE_MAX);  // untouched when nothing was replaced
  }
}

TEST(Utf8, EachInvalidByteBecomesAQuestionMark) {
  struct Case {
    std::string in, out;
    size_t replaced, first_bad;
  };
  const Case cases[] = {
      {"a\xff"
       "b",
       "a?b", 1, 1},                                // a byte never valid in UTF-8
      {"\x80\x80x", "??x", 2, 0},                   // stray continuation bytes
      {"ab\xc3", "ab?", 1, 2},                      // a 2-byte sequence cut short at the end
      {"\xe2\x82z", "??z", 2, 0},                   // a 3-byte sequence cut short
      {"\xc0\xaf", "??", 2, 0},                     // overlong '/' (2 bytes)
      {"\xe0\x80\xaf", "???", 3, 0},                // overlong '/' (3 bytes)
      {"x\xed\xa0\x80", "x???", 3, 1},              // U+D800, a surrogate
      {"\xf4\x90\x80\x80", "????", 4, 0},           // U+110000, above the last code point
      {"ok \xc3\xa9 \xff", "ok \xc3\xa9 ?", 1, 6},  // valid text around it is kept
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(valid_utf8(c.in)) << c.out;
    const Repaired r = repaired(c.in);
    EXPECT_EQ(r.text, c.out);
    EXPECT_EQ(r.replaced, c.replaced) << c.out;
    EXPECT_EQ(r.first_bad, c.first_bad) << c.out;
    EXPECT_TRUE(valid_utf8(r.text)) << c.out;
  }
}

// Diagnostic examples and error messages quote input text: they are kept repaired.
TEST(Utf8, DiagnosticExamplesAndErrorsAreRepaired) {
  Diagnostics d;
  d.add("missing_name", std::string("byte 3: name 'x\xff'"));
  ASSERT_EQ(d.entries().size(), 1u);
  EXPECT_EQ(d.entries()[0].examples.at(0), "byte 3: name 'x?'");
  const InputError e("f.json", 12, "unexpected key \"\xfe\"");
  EXPECT_EQ(e.reason(), "unexpected key \"?\"");
  EXPECT_EQ(std::string(e.what()), "f.json: byte 12: unexpected key \"?\"");
}
