#pragma once
// The taxonomy: the name rules that place GPU activities in iteration -> phase -> layer ->
// operation, and give operations their class. Built-in rules cover PyTorch eager, autograd,
// FSDP1, FSDP2, DDP, torchtitan / Hugging Face / Megatron / NeMo module paths and Chopper's own
// annotations; a user TOML file adds rules or overrides built-in ones by name (docs/hierarchy.md).
// Rules match host-op names (cpu_op and user_annotation events) with RE2 regexes (linear time in
// the name's length, whatever the pattern), except class rules with target "kernel", which match
// GPU kernel names.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/enum_names.hpp"
#include "chopper/model/rank_trace.hpp"

namespace re2 {
class RE2;
}  // namespace re2

namespace chopper {

#define CHOPPER_RULE_LEVELS(X) \
  X(kIteration, "iteration")   \
  X(kPhase, "phase")           \
  X(kLayer, "layer")           \
  X(kOperation, "operation")   \
  X(kClass, "class")
CHOPPER_ENUM(RuleLevel, CHOPPER_RULE_LEVELS)
inline std::string_view rule_level_name(RuleLevel l) {
  return enum_name(l);
}

struct NameRule {
  std::string name;
  RuleLevel level = RuleLevel::kOperation;
  std::string pattern;  // RE2 regex over bytes (Latin-1), searched (not anchored unless it says so)
  bool ignore_case = false;
  std::string source;  // "builtin" or "FILE:LINE"
  std::string doc;
  // kIteration: capture 1 is the iteration number; with occurrence_numbers and no capture group,
  //   the matching ops are numbered 0, 1, ... in start order (--iteration-regex).
  // kPhase: the phase; all_threads: the range applies to every thread of the process during its
  //   span (e.g. a loss.backward annotation on the main thread while autograd runs elsewhere).
  Phase phase = Phase::kNone;
  bool all_threads = false;
  bool occurrence_numbers = false;
  // kLayer: capture 1 is the layer number; a pattern without a capture group clears the layer
  //   (e.g. FSDP2's root group).
  // kOperation: label ("" = the whole name, "$1" = capture 1, "-" = not an operation: the range
  //   is structural, like FSDP's hooks) and the class (kNone = inferred from ops and kernels).
  std::string label;
  OpClass op_class = OpClass::kNone;
  // kClass: match host-op names ("host") or kernel names ("kernel").
  bool kernel_target = false;

  std::shared_ptr<const re2::RE2> re;  // compiled pattern (shared by copies of the rule)
  int captures = 0;                    // capturing groups in the pattern
  // A name the pattern matches contains one of these (ASCII case folded when ignore_case): a
  // filter tried before the regex, which costs far more per name and rule. Empty: no filter.
  std::vector<std::string> needles;

  // False only if the pattern cannot match s (no needle in it); true otherwise.
  bool may_match(std::string_view s) const;
  // Whether the pattern matches somewhere in s (the regex alone, without the filter).
  bool search(std::string_view s) const;
  // The same, filling groups[0] (the whole match) .. groups[n - 1] (capture n - 1; data() null
  // when that group took no part in the match). n <= 1 + captures.
  bool search(std::string_view s, std::string_view* groups, int n) const;
};

// An operation label with ECMAScript replacement syntax: $1..$99 = a capture ("" when it took no
// part), $& = the whole match, $` and $' = the text before and after it, $$ = '$'. groups[0] is
// the whole match, within `subject`.
std::string format_label(std::string_view label, std::string_view subject,
                         const std::vector<std::string_view>& groups);

inline constexpr std::string_view kIterationRegexRule = "iteration_regex";

// A label set by something other than a name rule (documented in docs/hierarchy.md).
struct InferredRule {
  std::string_view name;
  RuleLevel level;
  std::string_view doc;
};
const std::vector<InferredRule>& inferred_rules();

class Taxonomy {
 public:
  // The built-in rules.
  static Taxonomy builtin();
  // Adds the rules of a user TOML file: a rule named like an existing one replaces it (keeping
  // its place); `enabled = false` removes it; new rules go before the existing rules of their
  // level, so they take precedence. Throws InputError naming the file and line.
  void load_toml(const std::string& path);
  // Same from TOML text (`source` names it in messages).
  void load_toml_text(std::string_view text, const std::string& source);
  // --iteration-regex: an iteration rule named kIterationRegexRule, first of all iteration rules,
  // whose matches are numbered by capture 1 when the regex has a group, else by occurrence in
  // time order (from 0). Throws Error on a bad regex.
  void add_iteration_regex(const std::string& pattern);

  const std::vector<NameRule>& rules() const { return rules_; }
  // Every rule name a label can carry: the name rules, then the inferred rules. Index = the
  // value stored in the GpuActivities *_rule columns.
  std::vector<std::string> label_rule_names() const;
  uint16_t inferred_index(std::string_view name) const;

 private:
  std::vector<NameRule> rules_;
};

// Compiles rule.pattern into rule.re and its needles; throws Error on a bad regex or one RE2 does
// not support (backreferences, lookaround): the message names the rule's source and the rule.
void compile_rule(NameRule& rule);

// Literal strings one of which every match of the pattern contains: per top-level
// alternative, its longest run of literal characters that no quantifier makes optional, or the
// same found inside a required group. Empty when some alternative has none of 2 characters or
// more (or the pattern uses what this reading does not follow: the filter is then not used).
std::vector<std::string> required_literals(std::string_view pattern);

}  // namespace chopper
