#include "chopper/analysis/summary.hpp"

#include <algorithm>
#include <set>

namespace chopper {

RankSummary summarize(const RankTrace& t) {
  RankSummary s;
  s.first_ns = t.first_ns();
  s.last_ns = t.last_ns();
  for (const auto& st : t.steps) s.iterations.push_back(st.number);
  const GpuActivities& g = t.gpu;
  std::set<std::pair<int32_t, int64_t>> streams;
  for (size_t i = 0; i < g.size(); ++i) {
    switch (g.kind[i]) {
      case GpuKind::kKernel:
        ++s.kernels;
        break;
      case GpuKind::kMemcpy:
        ++s.memcpys;
        ++s.memcpy_by_dir[std::string(memcpy_dir_name(g.memcpy_dir[i]))];
        break;
      case GpuKind::kMemset:
        ++s.memsets;
        break;
      case GpuKind::kSync:
        ++s.syncs;
        break;
    }
    const std::string cls(gpu_class_name(g.cls[i]));
    ++s.gpu_by_class[cls];
    s.gpu_time_ns_by_class[cls] += static_cast<uint64_t>(g.dur_ns[i]);
    if (g.kind[i] != GpuKind::kSync) {
      streams.insert({g.device[i], g.stream[i]});
      ++s.link_by_path[std::string(link_path_name(g.link_path[i]))];
    }
  }
  s.streams.assign(streams.begin(), streams.end());
  s.host_ops = t.host.size();
  s.runtime_calls = t.runtime.size();
  s.flows = t.flows.size();
  s.instants = t.instants.size();
  s.counter_samples = t.counters.size();
  for (const Collective& c : t.collectives) {
    auto& e = s.collectives[std::string(coll_type_name(c.type))];
    ++e.count;
    e.total_ns += g.dur_ns[c.gpu_idx];
    std::string ap(t.strings.str(c.algorithm));
    if (c.protocol != 0) ap += "/" + std::string(t.strings.str(c.protocol));
    ++e.algo_proto[ap.empty() ? "-" : ap];
    ++e.sources[c.source == 0 ? "none" : std::string(t.strings.str(c.source))];
  }
  return s;
}

}  // namespace chopper
