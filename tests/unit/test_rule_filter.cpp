// The literal filter in front of the naming rules' regexes (hierarchy/taxonomy.cpp,
// required_literals and NameRule::may_match): which literals a pattern is read to require, and
// that the filter never turns away a name the regex matches (on every builtin rule and on
// patterns written to trip it, over names built from the patterns' own pieces).
#include <gtest/gtest.h>

#include <random>

#include "chopper/hierarchy/taxonomy.hpp"

using namespace chopper;

namespace {
using Needles = std::vector<std::string>;
}  // namespace

TEST(RuleFilter, RequiredLiteralsOfEachShape) {
  const std::pair<const char*, Needles> cases[] = {
      {R"(^ProfilerStep#(\d+)$)", {"ProfilerStep#"}},               // anchors and a capture
      {R"(attention|flash|sdpa)", {"attention", "flash", "sdpa"}},  // one per alternative
      {R"(abc?de)", {"ab"}},                                        // c optional: "ab" and "de"
      {R"(ab{0,2}cd)", {"cd"}},                                     // b optional: "a" and "cd"
      {R"(ab{2}cd)", {"ab"}},                                       // b required: "ab" and "cd"
      {R"(x(?!y)zz)", {"zz"}},                                      // a lookahead adds no text
      {R"(a\|b\.c)", {"a|b.c"}},                                    // escaped punctuation
      {R"([|(]ab)", {"ab"}},                                        // a class is one unknown byte
      {R"(\d+ms)", {"ms"}},
      {R"((ab)*cd)", {"cd"}},               // an optional group
      {R"((?:foo|bar)+)", {"bar", "foo"}},  // a required group
      {R"(^(Layer<?\d+>?|attn_n|ie)$)", {"Layer", "attn_n", "ie"}},
      // No filter: an alternative with no literal of 2 bytes, or what the reader does not follow.
      {R"(a|bc)", {}},
      {R"(ab|)", {}},
      {R"(.*)", {}},
      {R"((?:^|[\s.(])(?:layers|layer|h)\.(\d+))", {}},
      {R"(\x41bc)", {}},
      {R"((?<=a)bc)", {}},
  };
  for (const auto& [pattern, want] : cases) EXPECT_EQ(required_literals(pattern), want) << pattern;
}

TEST(RuleFilter, CaseInsensitiveRulesFoldTheName) {
  NameRule r;
  r.name = "t";
  r.level = RuleLevel::kPhase;
  r.pattern = "Backward|Optimizer";
  r.ignore_case = true;
  r.source = "test";
  compile_rule(r);
  EXPECT_EQ(r.needles, (Needles{"backward", "optimizer"}));
  EXPECT_TRUE(r.may_match("MulBACKWARD0"));
  EXPECT_FALSE(r.may_match("aten::mul"));
}

// search(name) implies may_match(name), for names assembled from each pattern's literal
// pieces and a few other bytes (so that many of them match), 10000 per pattern.
TEST(RuleFilter, NeverRejectsAMatch) {
  std::vector<NameRule> rules = Taxonomy::builtin().rules();
  for (const char* extra : {R"(abc?de)", R"(ab{2}cd|x[^y]zz)", R"((foo|ba+r)baz)", R"(a\|b\.c)",
                            R"(\d+ms$)", R"(^(?:ab)+c)", R"([|(]ab[^x]?yz)"}) {
    NameRule r;
    r.name = "extra";
    r.level = RuleLevel::kPhase;
    r.pattern = extra;
    r.source = "test";
    rules.push_back(r);
  }
  std::mt19937 rng(7);
  size_t matched = 0, filtered = 0;
  for (NameRule& r : rules) {
    compile_rule(r);
    // Pieces: the pattern split at its metacharacters, and single bytes.
    std::vector<std::string> pieces{"", "a", "b", "x", "y", "0", "7", ".", "_", " ", "#", "|"};
    std::string cur;
    for (char c : r.pattern) {
      if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) {
        if (!cur.empty()) pieces.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(c);
      }
    }
    if (!cur.empty()) pieces.push_back(cur);
    // ... and each piece without its last or first byte (a quantifier may make it optional).
    for (size_t j = 12, e = pieces.size(); j < e; ++j) {
      if (pieces[j].size() < 2) continue;
      pieces.push_back(pieces[j].substr(0, pieces[j].size() - 1));
      pieces.push_back(pieces[j].substr(1));
    }
    for (int k = 0; k < 10000; ++k) {
      std::string name;
      const int n = static_cast<int>(rng() % 5);
      for (int j = 0; j < n; ++j) name += pieces[rng() % pieces.size()];
      const bool re = r.search(name);
      if (re) {
        ++matched;
        ASSERT_TRUE(r.may_match(name)) << r.name << " /" << r.pattern << "/ on '" << name << "'";
      } else if (!r.may_match(name)) {
        ++filtered;
      }
    }
  }
  // The test reaches both sides: names that match, and names the filter turns away.
  EXPECT_GT(matched, 1000u);
  EXPECT_GT(filtered, 1000u);
}
