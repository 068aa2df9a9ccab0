// What each GPU activity does: compute, communication, memcpy (with direction), memset, sync; and
// for communication, the collective: type, algorithm, protocol, dtype, element counts, process
// group. Sources, in order: the NCCL/RCCL kernel name, the kernel's own args (new CUDA builds copy
// record_param_comms' args onto the kernel), the host side (record_param_comms / nccl:* ops that
// enclose the launch), as RCCL's ncclDevKernel_Generic carries nothing.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "chopper/base/text.hpp"
#include "chopper/link/link.hpp"

namespace chopper {
namespace {

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

// Communication kernels: NCCL/RCCL/MSCCL and the custom all-reduce kernels of vLLM, TensorRT-LLM,
// SGLang and PyTorch symmetric memory.
bool is_comm_kernel(std::string_view name) {
  if (name.substr(0, 4) == "nccl" || name.substr(0, 4) == "rccl" || name.substr(0, 5) == "msccl")
    return true;
  const std::string l = ascii_lower(name.substr(0, 160));
  for (std::string_view k : {"allreduce", "all_reduce", "allgather", "all_gather", "reducescatter",
                             "reduce_scatter", "alltoall", "all_to_all", "cross_device_reduce"})
    if (contains(l, k)) return true;
  return false;
}

MemcpyDir memcpy_dir_of(std::string_view name) {
  if (contains(name, "HtoD") || contains(name, "HostToDevice")) return MemcpyDir::kHtoD;
  if (contains(name, "DtoH") || contains(name, "DeviceToHost")) return MemcpyDir::kDtoH;
  if (contains(name, "DtoD") || contains(name, "DeviceToDevice")) return MemcpyDir::kDtoD;
  if (contains(name, "HtoH") || contains(name, "HostToHost")) return MemcpyDir::kHtoH;
  if (contains(name, "PtoP") || contains(name, "PeerToPeer")) return MemcpyDir::kPtoP;
  return MemcpyDir::kOther;
}

CollType coll_from_kernel_word(std::string_view w) {
  if (w == "AllReduce") return CollType::kAllReduce;
  if (w == "AllGather") return CollType::kAllGather;
  if (w == "ReduceScatter") return CollType::kReduceScatter;
  if (w == "Broadcast") return CollType::kBroadcast;
  if (w == "Reduce") return CollType::kReduce;
  if (w == "SendRecv") return CollType::kSendRecv;
  if (w == "Send") return CollType::kSend;
  if (w == "Recv") return CollType::kRecv;
  if (w == "AllToAll" || w == "AlltoAll") return CollType::kAllToAll;
  return CollType::kUnknown;
}

// Graph launches: the CUDA runtime's cudaGraphLaunch (and its per-thread-stream
// cudaGraphLaunch_ptsz, versioned cudaGraphLaunch_v10000 spellings), the driver's cuGraphLaunch,
// HIP's hipGraphLaunch and hipGraphLaunch_spt. Every kernel of the graph carries the launch's
// correlation.
bool is_graph_launch(std::string_view runtime_name) {
  for (std::string_view p : {"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})
    if (runtime_name.substr(0, p.size()) == p) return true;
  return false;
}

}  // namespace

// PyTorch's collective names ("allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced",
// "all_to_all_single", "nccl:all_reduce" annotations, ...) -> CollType.
CollType coll_from_pytorch_name(std::string_view name) {
  std::string s = ascii_lower(name);
  if (s.rfind("nccl:", 0) == 0) s = s.substr(5);
  if (s.rfind("c10d::", 0) == 0) s = s.substr(6);
  std::string k;
  for (char c : s)
    if (c != '_') k.push_back(c);
  auto starts = [&](std::string_view p) { return k.rfind(p, 0) == 0; };
  if (starts("allreduce")) return CollType::kAllReduce;
  if (starts("allgather")) return CollType::kAllGather;
  if (starts("reducescatter")) return CollType::kReduceScatter;
  if (starts("alltoall")) return CollType::kAllToAll;
  if (starts("broadcast")) return CollType::kBroadcast;
  if (starts("reduce")) return CollType::kReduce;
  if (starts("sendrecv")) return CollType::kSendRecv;
  if (starts("send")) return CollType::kSend;
  if (starts("recv")) return CollType::kRecv;
  if (starts("barrier")) return CollType::kBarrier;
  if (starts("gather")) return CollType::kGather;
  if (starts("scatter")) return CollType::kScatter;
  return CollType::kUnknown;
}

// Parses NCCL/RCCL kernel names:
//   < 2.19: ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)
//   >= 2.19: ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)
//   ncclDevKernel_Generic(...), ncclDevKernel_SendRecv(...)  -> type from elsewhere / SendRecv
struct NcclName {
  bool is_nccl = false;
  CollType type = CollType::kUnknown;
  std::string_view algorithm, protocol;
};

NcclName parse_nccl_kernel(std::string_view name) {
  NcclName r;
  std::string_view rest;
  for (std::string_view p : {"ncclDevKernel_", "ncclKernel_", "rcclDevKernel_", "rcclKernel_"}) {
    if (name.substr(0, p.size()) == p) {
      rest = name.substr(p.size());
      r.is_nccl = true;
      break;
    }
  }
  if (!r.is_nccl) return r;
  rest = rest.substr(0, rest.find('('));
  std::vector<std::string_view> words;
  while (!rest.empty()) {
    const size_t u = rest.find('_');
    words.push_back(rest.substr(0, u));
    rest = u == std::string_view::npos ? std::string_view() : rest.substr(u + 1);
  }
  if (words.empty()) return r;
  r.type = coll_from_kernel_word(words[0]);
  if (r.type == CollType::kUnknown) return r;  // ncclDevKernel_Generic: type from elsewhere
  // < 2.19 puts algorithm and protocol first (AllReduce_RING_LL_Sum_float); >= 2.19 puts the
  // reduction and type first (AllReduce_Sum_f32_RING_LL): find them by name wherever they are.
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (r.algorithm.empty() && (w == "RING" || w == "TREE" || w == "NVLS" || w == "COLLNET" ||
                                w == "PAT" || w == "NVLSTREE" || w == "CollNet")) {
      // Two-word algorithms: COLLNET_DIRECT, COLLNET_CHAIN, NVLS_TREE.
      if (i + 1 < words.size() &&
          ((w == "COLLNET" && (words[i + 1] == "DIRECT" || words[i + 1] == "CHAIN")) ||
           (w == "NVLS" && words[i + 1] == "TREE"))) {
        r.algorithm = std::string_view(
            w.data(), static_cast<size_t>(words[i + 1].data() + words[i + 1].size() - w.data()));
        ++i;
      } else {
        r.algorithm = w;
      }
    } else if (r.protocol.empty() && (w == "LL" || w == "LL128" || w == "SIMPLE")) {
      r.protocol = w;
    }
  }
  return r;
}

void classify_trace(RankTrace& t) {
  GpuActivities& g = t.gpu;
  const HostOps& h = t.host;
  g.cls.assign(g.size(), GpuClass::kCompute);
  g.memcpy_dir.assign(g.size(), MemcpyDir::kNone);
  g.collective.assign(g.size(), kNoRow);
  t.collectives.clear();
  const StrId src_name = t.strings.intern("kernel_name");
  const StrId src_kargs = t.strings.intern("kernel_args");
  const StrId src_host = t.strings.intern("host_args");
  uint64_t unknown_type = 0;
  RuntimeCalls& rt = t.runtime;
  rt.graph_launch.assign(rt.size(), false);
  for (size_t i = 0; i < rt.size(); ++i)
    rt.graph_launch[i] = is_graph_launch(t.strings.str(rt.name[i]));
  // Kernel names repeat: decide "communication?" once per distinct name.
  std::vector<int8_t> comm_name(t.strings.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string_view name = t.strings.str(g.name[i]);
    switch (g.kind[i]) {
      case GpuKind::kMemcpy:
        g.cls[i] = GpuClass::kMemcpy;
        g.memcpy_dir[i] = memcpy_dir_of(name);
        continue;
      case GpuKind::kMemset:
        g.cls[i] = GpuClass::kMemset;
        continue;
      case GpuKind::kSync:
        g.cls[i] = GpuClass::kSync;
        continue;
      case GpuKind::kKernel:
        break;
    }
    int8_t& known = comm_name[g.name[i]];
    if (known < 0) known = is_comm_kernel(name) ? 1 : 0;
    if (known == 0) continue;
    g.cls[i] = GpuClass::kCommunication;
    Collective c;
    c.gpu_idx = static_cast<int32_t>(i);
    const NcclName nn = parse_nccl_kernel(name);
    if (nn.type != CollType::kUnknown) {
      c.type = nn.type;
      c.source = src_name;
      c.algorithm = t.strings.intern(nn.algorithm);
      c.protocol = t.strings.intern(nn.protocol);
    } else if (!nn.is_nccl) {
      // A custom kernel: its name says which collective.
      c.type = coll_from_pytorch_name(name);
      if (c.type == CollType::kUnknown) {
        const std::string l = ascii_lower(name);
        if (contains(l, "allreduce") || contains(l, "all_reduce") ||
            contains(l, "cross_device_reduce"))
          c.type = CollType::kAllReduce;
        else if (contains(l, "allgather") || contains(l, "all_gather"))
          c.type = CollType::kAllGather;
        else if (contains(l, "reducescatter") || contains(l, "reduce_scatter"))
          c.type = CollType::kReduceScatter;
        else if (contains(l, "alltoall") || contains(l, "all_to_all"))
          c.type = CollType::kAllToAll;
      }
      if (c.type != CollType::kUnknown) c.source = src_name;
    }
    // Arguments: the kernel's own, else the nearest host op up the tree that has them.
    const CommArgs* args = nullptr;
    std::string_view host_coll_name;
    if (g.comm_args[i] != kNoRow) {
      args = &t.comm_args[g.comm_args[i]];
      if (c.source == 0 && args->collective_name != 0) c.source = src_kargs;
    } else {
      for (int32_t op = g.host_op_idx[i], depth = 0; op != kNoRow && depth < 64;
           op = h.parent[op], ++depth) {
        if (h.comm_args[op] != kNoRow) {
          args = &t.comm_args[h.comm_args[op]];
          break;
        }
        const std::string_view on = t.strings.str(h.name[op]);
        if (host_coll_name.empty() && on.substr(0, 5) == "nccl:") host_coll_name = on;
      }
      if (args != nullptr && c.source == 0) c.source = src_host;
    }
    if (args != nullptr) {
      if (c.type == CollType::kUnknown && args->collective_name != 0)
        c.type = coll_from_pytorch_name(t.strings.str(args->collective_name));
      c.dtype = args->dtype;
      c.in_nelems = args->in_nelems;
      c.out_nelems = args->out_nelems;
      c.group_size = args->group_size;
      c.pg_name = args->pg_name;
      c.pg_desc = args->pg_desc;
      c.pg_ranks = args->pg_ranks;
    }
    if (args != nullptr && args->collective_name != 0)
      c.called = coll_from_pytorch_name(t.strings.str(args->collective_name));
    if (c.called == CollType::kUnknown && !host_coll_name.empty())
      c.called = coll_from_pytorch_name(host_coll_name);
    if (c.type == CollType::kUnknown && !host_coll_name.empty()) {
      c.type = coll_from_pytorch_name(host_coll_name);
      if (c.type != CollType::kUnknown && c.source == 0) c.source = src_host;
    }
    if (c.type == CollType::kUnknown) ++unknown_type;
    g.collective[i] = static_cast<int32_t>(t.collectives.size());
    t.collectives.push_back(c);
  }
  if (unknown_type > 0) t.diagnostics.add_count("collective_type_unknown", unknown_type);
}

}  // namespace chopper
