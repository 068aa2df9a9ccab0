#pragma once
// The facts `chopper info` shows for one rank: computed here, rendered by report/.
#include <map>
#include <string>
#include <vector>

#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct RankSummary {
  Ns first_ns = kNoTime, last_ns = kNoTime;
  std::vector<int64_t> iterations;  // ProfilerStep numbers, in time order
  uint64_t kernels = 0, memcpys = 0, memsets = 0, syncs = 0;
  std::map<std::string, uint64_t> memcpy_by_dir;
  std::map<std::string, uint64_t> gpu_by_class;
  std::map<std::string, uint64_t> gpu_time_ns_by_class;  // summed durations
  std::vector<std::pair<int32_t, int64_t>> streams;      // (device, stream)
  std::map<std::string, uint64_t> link_by_path;
  uint64_t host_ops = 0, runtime_calls = 0, flows = 0, instants = 0, counter_samples = 0;
  struct Coll {
    uint64_t count = 0;
    Ns total_ns = 0;
    std::map<std::string, uint64_t> algo_proto;  // "RING/LL" -> n
    std::map<std::string, uint64_t> sources;     // "kernel_name" -> n
  };
  std::map<std::string, Coll> collectives;  // by type name
};

RankSummary summarize(const RankTrace& t);

}  // namespace chopper
