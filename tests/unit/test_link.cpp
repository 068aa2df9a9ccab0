// Linking and classification on tests/data/mini_train.json, whose links are known by construction:
// every launch except two is enclosed by the op whose External id it carries.
#include <gtest/gtest.h>

#include "chopper/hierarchy/label.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

RankTrace mini() {
  return chopper::test::parse(
      chopper::test::read_file(chopper::test::data_path("mini_train.json")));
}

int32_t gpu_named(const RankTrace& t, std::string_view prefix) {
  for (size_t i = 0; i < t.gpu.size(); ++i)
    if (t.strings.str(t.gpu.name[i]).substr(0, prefix.size()) == prefix)
      return static_cast<int32_t>(i);
  return kNoRow;
}

std::string_view host_name(const RankTrace& t, int32_t op) {
  return op == kNoRow ? std::string_view("(none)") : t.strings.str(t.host.name[op]);
}

}  // namespace

TEST(Link, EveryPathOnTheHandWrittenTrace) {
  RankTrace t = mini();
  // 8 kernels/memcpys/memsets (the Stream Sync is not linkable); the AllGather kernel's
  // correlation 9999 has no runtime call (launched before the window): 7 of 8 link.
  EXPECT_EQ(t.linkable_gpu_activities, 8u);
  EXPECT_EQ(t.linked_gpu_activities, 7u);
  EXPECT_DOUBLE_EQ(t.link_rate(), 0.875);

  const int32_t gemm = gpu_named(t, "sm90_xmma");
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[gemm]), "aten::mm");
  EXPECT_EQ(t.gpu.link_path[gemm], LinkPath::kRuntimeExternalId);
  // NCCL kernel without External id: correlation -> cudaLaunchKernelExC -> record_param_comms.
  const int32_t generic = gpu_named(t, "ncclDevKernel_Generic");
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[generic]), "record_param_comms");
  // A launch with no External id is placed by containment: only ProfilerStep#5 encloses it.
  const int32_t fill = gpu_named(t, "void at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[fill]), "ProfilerStep#5");
  EXPECT_EQ(t.gpu.link_path[fill], LinkPath::kContainment);
  // Both kernels of one CUDA graph launch share its correlation.
  for (std::string_view k : {"triton_poi", "triton_red"}) {
    const int32_t i = gpu_named(t, k);
    EXPECT_EQ(host_name(t, t.gpu.host_op_idx[i]), "graph_replay") << k;
    EXPECT_EQ(t.strings.str(t.runtime.name[t.gpu.runtime_idx[i]]), "cudaGraphLaunch");
  }
  const int32_t ag = gpu_named(t, "ncclDevKernel_AllGather");
  EXPECT_EQ(t.gpu.host_op_idx[ag], kNoRow);
  EXPECT_EQ(t.diagnostics.count("gpu_activity_without_runtime_call"), 1u);
}

TEST(Link, HostTreeParents) {
  RankTrace t = mini();
  auto find = [&](std::string_view n) {
    for (size_t i = 0; i < t.host.size(); ++i)
      if (t.strings.str(t.host.name[i]) == n) return static_cast<int32_t>(i);
    return kNoRow;
  };
  EXPECT_EQ(host_name(t, t.host.parent[find("record_param_comms")]), "c10d::allreduce_");
  EXPECT_EQ(host_name(t, t.host.parent[find("c10d::allreduce_")]), "ProfilerStep#5");
  EXPECT_EQ(t.host.parent[find("ProfilerStep#5")], kNoRow);
  EXPECT_EQ(host_name(t, t.host.parent[find("graph_replay")]), "ProfilerStep#6");
}

TEST(Link, ExternalIdThatDoesNotEncloseFallsBackToContainment) {
  // 2023 builds wrote each runtime call's correlation as its External id; here 2 is also the id of
  // an unrelated op on another thread, so the launch must go to the op that encloses it.
  const std::string text = chopper::test::trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "other_thread_op", "pid": 1, "tid": 2, "ts": 0, "dur": 1000, "args": {"External id": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"External id": 2, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 20, "dur": 3, "args": {"correlation": 2}})J");
  RankTrace t = chopper::test::parse(text);
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[0]), "aten::relu");
  EXPECT_EQ(t.gpu.link_path[0], LinkPath::kContainment);
  EXPECT_EQ(t.diagnostics.count("runtime_external_id_not_enclosing"), 1u);
}

// A GPU activity whose runtime call is missing from the trace (the call fell outside the host
// window, or was filtered out) but which carries the External id of its launching op is linked to
// that op by the id (`kernel_external_id`); it then takes the op's start as its launch time, so it
// gets the iteration the op lies in. The id counts only if the op started no later than the
// activity on the GPU: a launch cannot follow its kernel.
TEST(Link, KernelExternalIdWhenTheRuntimeCallIsMissing) {
  const std::string text = chopper::test::trace_of(R"J(
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 0, "dur": 1000, "args": {"External id": 100}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50, "args": {"External id": 5}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 160, "dur": 20, "args": {"External id": 8}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 162, "dur": 3, "args": {"External id": 8, "correlation": 43}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::late", "pid": 1, "tid": 1, "ts": 500, "dur": 20, "args": {"External id": 6}},
    {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7, "ts": 200, "dur": 30, "args": {"correlation": 41, "External id": 5, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "early_kernel", "pid": 0, "tid": 7, "ts": 300, "dur": 10, "args": {"correlation": 42, "External id": 6, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": 240, "dur": 5, "args": {"correlation": 43, "External id": 8, "device": 0, "stream": 7}})J");
  RankTrace t = chopper::test::parse(text);
  const int32_t gemm = gpu_named(t, "gemm_kernel");
  EXPECT_EQ(t.gpu.runtime_idx[gemm], kNoRow);
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[gemm]), "aten::mm");
  EXPECT_EQ(t.gpu.link_path[gemm], LinkPath::kKernelExternalId);
  // External id 6 names aten::late, which starts at 500 us, after the kernel ran (300 us): not its
  // launch. Nothing else links it, and it is counted, not dropped.
  const int32_t early = gpu_named(t, "early_kernel");
  EXPECT_EQ(t.gpu.host_op_idx[early], kNoRow);
  EXPECT_EQ(t.gpu.link_path[early], LinkPath::kNone);
  EXPECT_EQ(t.diagnostics.count("gpu_external_id_op_after_gpu_start"), 1u);
  EXPECT_EQ(t.diagnostics.count("gpu_activity_without_runtime_call"), 1u);
  EXPECT_EQ(t.linkable_gpu_activities, 3u);
  EXPECT_EQ(t.linked_gpu_activities, 2u);

  // Labelled: the gemm's launch time is aten::mm's start (100 us), inside ProfilerStep#7.
  label_trace(Taxonomy::builtin(), t);
  EXPECT_EQ(t.gpu.iteration[gemm], 7);
  EXPECT_EQ(t.label_rules[t.gpu.iteration_rule[gemm]], "profiler_step");
  EXPECT_EQ(t.strings.str(t.gpu.operation[gemm]), "aten::mm");
}

TEST(Link, FlowFallbackWhenKernelHasNoCorrelation) {
  const std::string text = chopper::test::trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {"External id": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"External id": 4}},
    {"ph": "s", "id": 88, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 20, "dur": 3, "args": {"device": 0, "stream": 7}},
    {"ph": "f", "id": 88, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"})J");
  RankTrace t = chopper::test::parse(text);
  EXPECT_EQ(t.gpu.runtime_idx[0], 0);
  EXPECT_EQ(host_name(t, t.gpu.host_op_idx[0]), "aten::add");
}

TEST(Classify, ClassesDirectionsAndCollectives) {
  RankTrace t = mini();
  const int32_t gemm = gpu_named(t, "sm90_xmma");
  EXPECT_EQ(t.gpu.cls[gemm], GpuClass::kCompute);
  EXPECT_EQ(t.gpu.cls[gpu_named(t, "Memcpy HtoD")], GpuClass::kMemcpy);
  EXPECT_EQ(t.gpu.memcpy_dir[gpu_named(t, "Memcpy HtoD")], MemcpyDir::kHtoD);
  EXPECT_EQ(t.gpu.cls[gpu_named(t, "Memset")], GpuClass::kMemset);
  EXPECT_EQ(t.gpu.cls[gpu_named(t, "Stream Sync")], GpuClass::kSync);
  ASSERT_EQ(t.collectives.size(), 2u);
  // RCCL-style Generic kernel: everything from record_param_comms on the host.
  const Collective& ar = t.collectives[t.gpu.collective[gpu_named(t, "ncclDevKernel_Generic")]];
  EXPECT_EQ(ar.type, CollType::kAllReduce);
  EXPECT_EQ(t.strings.str(ar.source), "host_args");
  EXPECT_EQ(t.strings.str(ar.dtype), "Float");
  EXPECT_EQ(ar.in_nelems, 1048576);
  EXPECT_EQ(ar.group_size, 2);
  EXPECT_EQ(t.strings.str(ar.pg_desc), "default_pg");
  EXPECT_EQ(t.strings.str(ar.pg_ranks), "[0, 1]");
  // NCCL >= 2.19 name: type, algorithm and protocol from the name alone.
  const Collective& ag = t.collectives[t.gpu.collective[gpu_named(t, "ncclDevKernel_AllGather")]];
  EXPECT_EQ(ag.type, CollType::kAllGather);
  EXPECT_EQ(t.strings.str(ag.algorithm), "RING");
  EXPECT_EQ(t.strings.str(ag.protocol), "LL");
}

TEST(Classify, KernelNamesOfEveryGeneration) {
  struct Case {
    const char* name;
    GpuClass cls;
    CollType type;
    const char* algo;
    const char* proto;
  };
  const Case cases[] = {
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
       GpuClass::kCommunication, CollType::kAllReduce, "RING", "LL"},
      {"ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16(ncclWorkElem)", GpuClass::kCommunication,
       CollType::kReduceScatter, "RING", "SIMPLE"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
       GpuClass::kCommunication, CollType::kAllGather, "RING", "LL"},
      {"ncclDevKernel_Broadcast_RING_LL128(ncclDevKernelArgsStorage<4096ul>)",
       GpuClass::kCommunication, CollType::kBroadcast, "RING", "LL128"},
      {"ncclDevKernel_AllReduce_Sum_f32_NVLS_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
       GpuClass::kCommunication, CollType::kAllReduce, "NVLS", "SIMPLE"},
      {"ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_LL128(ncclDevKernelArgsStorage<4096ul>"
       ")",
       GpuClass::kCommunication, CollType::kReduceScatter, "COLLNET_DIRECT", "LL128"},
      {"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", GpuClass::kCommunication,
       CollType::kUnknown, "", ""},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
       GpuClass::kCommunication, CollType::kSendRecv, "RING", "SIMPLE"},
      {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)",
       GpuClass::kCommunication, CollType::kAllReduce, "", ""},
      {"void vllm::cross_device_reduce_1stage<half, 8>(...)", GpuClass::kCommunication,
       CollType::kAllReduce, "", ""},
      {"sm90_xmma_gemm_bf16bf16_bf16f32", GpuClass::kCompute, CollType::kUnknown, "", ""},
      {"void at::native::reduce_kernel<512, 1>(...)", GpuClass::kCompute, CollType::kUnknown, "",
       ""},
  };
  std::string events;
  for (size_t i = 0; i < std::size(cases); ++i) {
    if (i) events += ",";
    events += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + std::string(cases[i].name) +
              "\", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(i * 10) + ", \"dur\": 1}";
  }
  RankTrace t = chopper::test::parse(chopper::test::trace_of(events));
  ASSERT_EQ(t.gpu.size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(t.gpu.cls[i], cases[i].cls) << cases[i].name;
    if (cases[i].cls != GpuClass::kCommunication) continue;
    const Collective& c = t.collectives[t.gpu.collective[i]];
    EXPECT_EQ(c.type, cases[i].type) << cases[i].name;
    EXPECT_EQ(t.strings.str(c.algorithm), cases[i].algo) << cases[i].name;
    EXPECT_EQ(t.strings.str(c.protocol), cases[i].proto) << cases[i].name;
  }
}

TEST(Classify, PyTorchCollectiveNames) {
  EXPECT_EQ(coll_from_pytorch_name("allreduce"), CollType::kAllReduce);
  EXPECT_EQ(coll_from_pytorch_name("_allgather_base"), CollType::kAllGather);
  EXPECT_EQ(coll_from_pytorch_name("all_gather_into_tensor_coalesced"), CollType::kAllGather);
  EXPECT_EQ(coll_from_pytorch_name("reduce_scatter_tensor_coalesced"), CollType::kReduceScatter);
  EXPECT_EQ(coll_from_pytorch_name("nccl:_reduce_scatter_base"), CollType::kReduceScatter);
  EXPECT_EQ(coll_from_pytorch_name("all_to_allv"), CollType::kAllToAll);
  EXPECT_EQ(coll_from_pytorch_name("broadcast"), CollType::kBroadcast);
  EXPECT_EQ(coll_from_pytorch_name("reduce"), CollType::kReduce);
  EXPECT_EQ(coll_from_pytorch_name("send"), CollType::kSend);
  EXPECT_EQ(coll_from_pytorch_name("recv"), CollType::kRecv);
  EXPECT_EQ(coll_from_pytorch_name("barrier"), CollType::kBarrier);
  EXPECT_EQ(coll_from_pytorch_name("something_else"), CollType::kUnknown);
}
