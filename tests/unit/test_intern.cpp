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
