#pragma once
// The taxonomy's name rules applied to one rank's interned names, once per distinct name: what
// every iteration, phase, layer, operation and class rule says about a host-op name, and the class
// rule a kernel name matches. Used by the labelling (label.cpp); the first matching rule of each
// level wins, in taxonomy order.
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

// What the name rules say about one host-op name (kNoRule: no rule of that level matched).
struct NameMatch {
  uint16_t iter_rule = kNoRule;
  int64_t iter_num = 0;
  uint16_t phase_rule = kNoRule;
  Phase phase = Phase::kNone;
  bool all_threads = false;
  uint16_t layer_rule = kNoRule;
  int32_t layer = -1;
  uint16_t op_rule = kNoRule;
  bool structural = false;
  StrId op_label = 0;
  OpClass op_class = OpClass::kNone;
  uint16_t class_rule = kNoRule;
  OpClass host_class = OpClass::kNone;
  bool recompute_frame = false;  // torch.utils.checkpoint's recompute_fn (a Python frame)
};

// The class rule (target "kernel") a kernel name matches.
struct KernelClass {
  uint16_t rule = kNoRule;
  OpClass cls = OpClass::kNone;
};

class Matcher {
 public:
  Matcher(const Taxonomy& tx, RankTrace& t) : rules_(tx.rules()), t_(t) {}

  // The rules' verdict on a host-op name. The reference stays valid until a name not seen before
  // is matched. An operation rule's label is interned in t.strings on the name's first match.
  const NameMatch& host(StrId id) {
    if (id >= host_slot_.size()) host_slot_.resize(std::max<size_t>(id + 1, t_.strings.size()), -1);
    if (host_slot_[id] < 0) {
      host_slot_[id] = static_cast<int32_t>(host_.size());
      host_.push_back(match_host(id));
    }
    return host_[static_cast<size_t>(host_slot_[id])];
  }

  KernelClass kernel(StrId id) {
    if (id >= kernel_slot_.size())
      kernel_slot_.resize(std::max<size_t>(id + 1, t_.strings.size()), KernelClass{kUnseen, {}});
    if (kernel_slot_[id].rule == kUnseen) kernel_slot_[id] = match_kernel(id);
    return kernel_slot_[id];
  }

 private:
  static constexpr uint16_t kUnseen = 0xfffe;  // a kernel name not matched yet

  NameMatch match_host(StrId id);
  [[gnu::always_inline]] inline void match_operation(const NameRule& rule, uint16_t ri, StrId id,
                                                     std::string_view s, NameMatch& m);
  KernelClass match_kernel(StrId id) const;

  const std::vector<NameRule>& rules_;
  RankTrace& t_;
  std::vector<std::string_view> groups_;  // an operation rule's match and captures
  std::vector<int32_t> host_slot_;
  std::vector<NameMatch> host_;
  std::vector<KernelClass> kernel_slot_;
};

}  // namespace chopper
