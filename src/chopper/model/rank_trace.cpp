#include "chopper/model/rank_trace.hpp"

#include <algorithm>
#include <iterator>

namespace chopper {

bool parse_phase(std::string_view s, Phase& p) {
  return !s.empty() && parse_enum(s, p);
}
bool parse_op_class(std::string_view s, OpClass& c) {
  return !s.empty() && parse_enum(s, c);
}

uint64_t RankTrace::x_events(std::string_view category) const {
  for (const auto& [cat, n] : x_events_by_category)
    if (strings.str(cat) == category) return n;
  return 0;
}

Ns RankTrace::first_ns() const {
  Ns t = INT64_MAX;
  for (Ns s : gpu.start_ns) t = std::min(t, s);
  for (Ns s : host.start_ns) t = std::min(t, s);
  for (Ns s : runtime.start_ns) t = std::min(t, s);
  return t == INT64_MAX ? kNoTime : t;
}

Ns RankTrace::last_ns() const {
  Ns t = INT64_MIN;
  for (size_t i = 0; i < gpu.size(); ++i) t = std::max(t, gpu.start_ns[i] + gpu.dur_ns[i]);
  for (size_t i = 0; i < host.size(); ++i) t = std::max(t, host.start_ns[i] + host.dur_ns[i]);
  for (size_t i = 0; i < runtime.size(); ++i)
    t = std::max(t, runtime.start_ns[i] + runtime.dur_ns[i]);
  return t == INT64_MIN ? kNoTime : t;
}

}  // namespace chopper
