#include <gtest/gtest.h>

#include <string>

#include "chopper/base/intern.hpp"

using namespace chopper;

TEST(StringTable, InternsOncePerDistinctString) {
  StringTable t;
  EXPECT_EQ(t.intern(""), 0u);  // id 0 is the empty string
  const StrId a = t.intern("aten::mm");
  const StrId b = t.intern("aten::addmm");
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern("aten::mm"), a);
  EXPECT_EQ(t.str(a), "aten::mm");
  EXPECT_EQ(t.find("aten::addmm"), b);
  EXPECT_EQ(t.find("nope"), UINT32_MAX);
  // Growth keeps every id and its text: 100k distinct strings, each looked up again.
  std::vector<StrId> ids;
  for (int i = 0; i < 100000; ++i) ids.push_back(t.intern("kernel_" + std::to_string(i)));
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(t.intern("kernel_" + std::to_string(i)), ids[i]);
    ASSERT_EQ(t.str(ids[i]), "kernel_" + std::to_string(i));
  }
  EXPECT_EQ(t.size(), 100003u);  // "", two aten names, 100000 kernels
  // Long strings (larger than an arena block) are stored whole.
  const std::string big(100000, 'x');
  EXPECT_EQ(t.str(t.intern(big)), big);
}

// Stored strings are valid UTF-8: a new string that is not is stored repaired, each invalid byte
// replaced by '?', and the bytes replaced are counted per call.
TEST(StringTable, StoresInvalidUtf8Repaired) {
  StringTable t;
  const StrId ok = t.intern("caf\xc3\xa9");
  EXPECT_EQ(t.str(ok), "caf\xc3\xa9");  // valid text is stored as it is
  EXPECT_EQ(t.repaired_utf8_bytes(), 0u);
  const StrId bad = t.intern("a\xff\xfe z");
  EXPECT_EQ(t.str(bad), "a?? z");
  EXPECT_EQ(t.repaired_utf8_bytes(), 2u);
  // The same bytes again: the same id, counted again (2 more).
  EXPECT_EQ(t.intern("a\xff\xfe z"), bad);
  EXPECT_EQ(t.repaired_utf8_bytes(), 4u);
  // The repair's text itself is the same string.
  EXPECT_EQ(t.intern("a?? z"), bad);
  EXPECT_EQ(t.repaired_utf8_bytes(), 4u);
  EXPECT_EQ(t.size(), 3u);  // "", "café", "a?? z"
}
