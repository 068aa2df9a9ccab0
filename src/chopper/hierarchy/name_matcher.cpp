#include "chopper/hierarchy/name_matcher.hpp"

#include <charconv>
#include <string>

namespace chopper {

namespace {

bool parse_i64(std::string_view s, int64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Each level's rule: the first that matches sets the level (later ones are not tried).
void match_iteration(const NameRule& rule, uint16_t ri, std::string_view s, NameMatch& m) {
  if (m.iter_rule != kNoRule || !rule.may_match(s)) return;
  std::string_view g[2];     // the whole match and capture 1
  if (rule.captures == 0) {  // numbered by occurrence (label_trace)
    if (rule.search(s)) m.iter_rule = ri;
  } else if (rule.search(s, g, 2) && g[1].data() != nullptr && parse_i64(g[1], m.iter_num)) {
    m.iter_rule = ri;
  }
}

void match_phase(const NameRule& rule, uint16_t ri, std::string_view s, NameMatch& m) {
  if (m.phase_rule == kNoRule && rule.may_match(s) && rule.search(s)) {
    m.phase_rule = ri;
    m.phase = rule.phase;
    m.all_threads = rule.all_threads;
  }
}

void match_layer(const NameRule& rule, uint16_t ri, std::string_view s, NameMatch& m) {
  std::string_view g[2];  // the whole match and capture 1
  if (m.layer_rule != kNoRule || !rule.may_match(s) ||
      !rule.search(s, g, rule.captures == 0 ? 1 : 2))
    return;
  int64_t v = -1;
  if (rule.captures == 0 || g[1].data() == nullptr) {
    m.layer_rule = ri;  // clears the layer
    m.layer = -1;
  } else if (parse_i64(g[1], v) && v >= 0 && v < INT32_MAX) {
    m.layer_rule = ri;
    m.layer = static_cast<int32_t>(v);
  }
}

void match_host_class(const NameRule& rule, uint16_t ri, std::string_view s, NameMatch& m) {
  if (!rule.kernel_target && m.class_rule == kNoRule && rule.may_match(s) && rule.search(s)) {
    m.class_rule = ri;
    m.host_class = rule.op_class;
  }
}

}  // namespace

KernelClass Matcher::match_kernel(StrId id) const {
  const std::string_view s = t_.strings.str(id);
  for (size_t r = 0; r < rules_.size(); ++r) {
    const NameRule& rule = rules_[r];
    if (rule.level != RuleLevel::kClass || !rule.kernel_target) continue;
    if (rule.may_match(s) && rule.search(s)) return {static_cast<uint16_t>(r), rule.op_class};
  }
  return {};
}

void Matcher::match_operation(const NameRule& rule, uint16_t ri, StrId id, std::string_view s,
                              NameMatch& m) {
  if (m.op_rule != kNoRule || !rule.may_match(s)) return;
  const bool fmt = rule.label != "-" && !rule.label.empty();
  groups_.assign(fmt ? static_cast<size_t>(rule.captures) + 1 : 0, std::string_view());
  if (!(fmt ? rule.search(s, groups_.data(), static_cast<int>(groups_.size())) : rule.search(s)))
    return;
  m.op_rule = ri;
  m.op_class = rule.op_class;
  if (rule.label == "-") {
    m.structural = true;
  } else if (rule.label.empty()) {
    m.op_label = id;
  } else {
    const std::string out = format_label(rule.label, s, groups_);
    if (out.empty())
      m.structural = true;  // "$1" with nothing captured: not an operation
    else
      m.op_label = t_.strings.intern(out);
  }
}

NameMatch Matcher::match_host(StrId id) {
  NameMatch m;
  // Copy: interning a label may grow the table.
  const std::string name(t_.strings.str(id));
  const std::string_view s = name;
  m.recompute_frame = s.starts_with("torch/utils/checkpoint.py(") && s.ends_with("): recompute_fn");
  for (size_t r = 0; r < rules_.size(); ++r) {
    const NameRule& rule = rules_[r];
    const auto ri = static_cast<uint16_t>(r);
    switch (rule.level) {
      case RuleLevel::kIteration:
        match_iteration(rule, ri, s, m);
        break;
      case RuleLevel::kPhase:
        match_phase(rule, ri, s, m);
        break;
      case RuleLevel::kLayer:
        match_layer(rule, ri, s, m);
        break;
      case RuleLevel::kOperation:
        match_operation(rule, ri, id, s, m);
        break;
      case RuleLevel::kClass:
        match_host_class(rule, ri, s, m);
        break;
    }
  }
  return m;
}

}  // namespace chopper
