#include "chopper/model/rank_trace.hpp"

#include <algorithm>
#include <iterator>

namespace chopper {

std::string_view gpu_kind_name(GpuKind k) {
  switch (k) {
    case GpuKind::kKernel:
      return "kernel";
    case GpuKind::kMemcpy:
      return "memcpy";
    case GpuKind::kMemset:
      return "memset";
    case GpuKind::kSync:
      return "sync";
  }
  return "?";
}

std::string_view gpu_class_name(GpuClass c) {
  switch (c) {
    case GpuClass::kCompute:
      return "compute";
    case GpuClass::kCommunication:
      return "communication";
    case GpuClass::kMemcpy:
      return "memcpy";
    case GpuClass::kMemset:
      return "memset";
    case GpuClass::kSync:
      return "sync";
  }
  return "?";
}

std::string_view memcpy_dir_name(MemcpyDir d) {
  switch (d) {
    case MemcpyDir::kNone:
      return "";
    case MemcpyDir::kHtoD:
      return "HtoD";
    case MemcpyDir::kDtoH:
      return "DtoH";
    case MemcpyDir::kDtoD:
      return "DtoD";
    case MemcpyDir::kHtoH:
      return "HtoH";
    case MemcpyDir::kPtoP:
      return "PtoP";
    case MemcpyDir::kOther:
      return "other";
  }
  return "?";
}

namespace {
constexpr std::string_view kPhaseNames[] = {"",          "forward", "backward",
                                            "optimizer", "other",   "data_dist"};
static_assert(std::size(kPhaseNames) == kPhaseCount);
constexpr std::string_view kOpClassNames[] = {
    "",       "gemm",      "conv",       "attention",  "norm",           "elementwise", "embedding",
    "loss",   "optimizer", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",  "broadcast",
    "reduce", "send_recv", "barrier",    "collective", "memcpy",         "memset",      "sync"};
static_assert(std::size(kOpClassNames) == static_cast<size_t>(OpClass::kSync) + 1);
}  // namespace

std::string_view phase_name(Phase p) {
  return kPhaseNames[static_cast<size_t>(p)];
}
std::string_view op_class_name(OpClass c) {
  return kOpClassNames[static_cast<size_t>(c)];
}
bool parse_phase(std::string_view s, Phase& p) {
  for (size_t i = 1; i < std::size(kPhaseNames); ++i)
    if (kPhaseNames[i] == s) {
      p = static_cast<Phase>(i);
      return true;
    }
  return false;
}
bool parse_op_class(std::string_view s, OpClass& c) {
  for (size_t i = 1; i < std::size(kOpClassNames); ++i)
    if (kOpClassNames[i] == s) {
      c = static_cast<OpClass>(i);
      return true;
    }
  return false;
}

std::string_view link_path_name(LinkPath p) {
  switch (p) {
    case LinkPath::kNone:
      return "none";
    case LinkPath::kRuntimeExternalId:
      return "runtime_external_id";
    case LinkPath::kKernelExternalId:
      return "kernel_external_id";
    case LinkPath::kContainment:
      return "containment";
  }
  return "?";
}

std::string_view coll_type_name(CollType t) {
  switch (t) {
    case CollType::kUnknown:
      return "unknown";
    case CollType::kAllReduce:
      return "all_reduce";
    case CollType::kAllGather:
      return "all_gather";
    case CollType::kReduceScatter:
      return "reduce_scatter";
    case CollType::kBroadcast:
      return "broadcast";
    case CollType::kReduce:
      return "reduce";
    case CollType::kAllToAll:
      return "all_to_all";
    case CollType::kSendRecv:
      return "send_recv";
    case CollType::kSend:
      return "send";
    case CollType::kRecv:
      return "recv";
    case CollType::kBarrier:
      return "barrier";
    case CollType::kGather:
      return "gather";
    case CollType::kScatter:
      return "scatter";
  }
  return "?";
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
