#pragma once
// The in-memory model of one rank's trace: struct-of-arrays tables, interned strings, int64 ns.
// Readers fill the raw columns; link/ fills the join columns (runtime_idx, host_op_idx, ...) and
// the classification columns. Row indices are int32 (-1 = none): one rank never holds 2^31 rows.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/enum_names.hpp"
#include "chopper/base/intern.hpp"
#include "chopper/base/time.hpp"

namespace chopper {

struct ExecTrace;  // model/exec_trace.hpp

inline constexpr int32_t kNoRow = -1;
inline constexpr int64_t kNoId = INT64_MIN;  // absent id (External id, correlation, ...)

#define CHOPPER_GPU_KINDS(X) \
  X(kKernel, "kernel")       \
  X(kMemcpy, "memcpy")       \
  X(kMemset, "memset")       \
  X(kSync, "sync")
CHOPPER_ENUM(GpuKind, CHOPPER_GPU_KINDS)
inline std::string_view gpu_kind_name(GpuKind k) {
  return enum_name(k);
}

// What a GPU activity does (link/classify.cpp).
#define CHOPPER_GPU_CLASSES(X)       \
  X(kCompute, "compute")             \
  X(kCommunication, "communication") \
  X(kMemcpy, "memcpy")               \
  X(kMemset, "memset")               \
  X(kSync, "sync")
CHOPPER_ENUM(GpuClass, CHOPPER_GPU_CLASSES)
inline std::string_view gpu_class_name(GpuClass c) {
  return enum_name(c);
}

#define CHOPPER_MEMCPY_DIRS(X) \
  X(kNone, "")                 \
  X(kHtoD, "HtoD")             \
  X(kDtoH, "DtoH")             \
  X(kDtoD, "DtoD")             \
  X(kHtoH, "HtoH")             \
  X(kPtoP, "PtoP")             \
  X(kOther, "other")
CHOPPER_ENUM(MemcpyDir, CHOPPER_MEMCPY_DIRS)
inline std::string_view memcpy_dir_name(MemcpyDir d) {
  return enum_name(d);
}

// The hierarchy labels (hierarchy/label.cpp). kNone = no label.
// kDataDist: input (sparse data) distribution of a pipelined step (TorchRec's sparse_data_dist),
// which runs beside the forward, backward and optimizer of another batch.
#define CHOPPER_PHASES(X)    \
  X(kNone, "")               \
  X(kForward, "forward")     \
  X(kBackward, "backward")   \
  X(kOptimizer, "optimizer") \
  X(kOther, "other")         \
  X(kDataDist, "data_dist")
CHOPPER_ENUM(Phase, CHOPPER_PHASES)
inline constexpr size_t kPhaseCount = enum_count<Phase>;
inline std::string_view phase_name(Phase p) {  // "" for kNone
  return enum_name(p);
}
// The class of an operation: what its kernels do.
// kCollective: a collective of another or unknown type.
#define CHOPPER_OP_CLASSES(X)         \
  X(kNone, "")                        \
  X(kGemm, "gemm")                    \
  X(kConv, "conv")                    \
  X(kAttention, "attention")          \
  X(kNorm, "norm")                    \
  X(kElementwise, "elementwise")      \
  X(kEmbedding, "embedding")          \
  X(kLoss, "loss")                    \
  X(kOptimizer, "optimizer")          \
  X(kAllReduce, "all_reduce")         \
  X(kAllGather, "all_gather")         \
  X(kReduceScatter, "reduce_scatter") \
  X(kAllToAll, "all_to_all")          \
  X(kBroadcast, "broadcast")          \
  X(kReduce, "reduce")                \
  X(kSendRecv, "send_recv")           \
  X(kBarrier, "barrier")              \
  X(kCollective, "collective")        \
  X(kMemcpy, "memcpy")                \
  X(kMemset, "memset")                \
  X(kSync, "sync")
CHOPPER_ENUM(OpClass, CHOPPER_OP_CLASSES)
inline std::string_view op_class_name(OpClass c) {  // "" for kNone
  return enum_name(c);
}
// Parses a name written by op_class_name / phase_name; false if unknown.
bool parse_op_class(std::string_view s, OpClass& c);
bool parse_phase(std::string_view s, Phase& p);
// Index into RankTrace::label_rules; kNoRule = the label was not set.
inline constexpr uint16_t kNoRule = 0xffff;

// How a GPU activity reached its host op (link/link.cpp).
// kNone: no host op found; kRuntimeExternalId: correlation -> runtime call -> its External id ->
// host op; kKernelExternalId: the activity's own External id -> host op; kContainment: runtime
// call -> innermost host op on its thread containing it.
#define CHOPPER_LINK_PATHS(X)                  \
  X(kNone, "none")                             \
  X(kRuntimeExternalId, "runtime_external_id") \
  X(kKernelExternalId, "kernel_external_id")   \
  X(kContainment, "containment")
CHOPPER_ENUM(LinkPath, CHOPPER_LINK_PATHS)
inline std::string_view link_path_name(LinkPath p) {
  return enum_name(p);
}

struct GpuActivities {
  std::vector<GpuKind> kind;
  std::vector<int32_t> device;
  std::vector<int64_t> stream;
  std::vector<Ns> start_ns;
  std::vector<Ns> dur_ns;
  std::vector<int64_t> correlation;
  std::vector<int64_t> external_id;
  std::vector<StrId> name;
  std::vector<StrId> category;  // as named in the file ("kernel", "Kernel", "gpu_memcpy", ...)
  std::vector<std::array<int32_t, 3>> grid;   // 0 = unknown
  std::vector<std::array<int32_t, 3>> block;  // 0 = unknown
  std::vector<int32_t> registers;             // per thread, -1 unknown
  std::vector<int32_t> shared_mem_bytes;      // -1 unknown
  std::vector<int64_t> bytes;                 // memcpy/memset size, -1 unknown
  std::vector<int64_t> graph_id;              // CUDA graph id, kNoId if none
  std::vector<int32_t> comm_args;             // row in RankTrace::comm_args, -1 none
  // link/
  std::vector<int32_t> runtime_idx;
  std::vector<int32_t> host_op_idx;
  std::vector<LinkPath> link_path;
  // link/classify
  std::vector<GpuClass> cls;
  std::vector<MemcpyDir> memcpy_dir;
  std::vector<int32_t> collective;  // row in RankTrace::collectives, -1 none
  // hierarchy/label: the activity's place in iteration -> phase -> layer -> operation, and for
  // each label the rule that set it (index into RankTrace::label_rules, kNoRule = unset).
  std::vector<int64_t> iteration;  // kNoId = none
  std::vector<Phase> phase;
  std::vector<int32_t> layer;    // -1 = none (outside the transformer blocks, or unknown)
  std::vector<StrId> operation;  // 0 = none
  std::vector<OpClass> op_class;
  std::vector<uint16_t> iteration_rule;
  std::vector<uint16_t> phase_rule;
  std::vector<uint16_t> layer_rule;
  std::vector<uint16_t> operation_rule;
  std::vector<uint16_t> op_class_rule;

  // Calls f(column) for every column, in declaration order (bulk reserve while reading).
  template <class F>
  void for_each_column(F&& f) {
    f(kind);
    f(device);
    f(stream);
    f(start_ns);
    f(dur_ns);
    f(correlation);
    f(external_id);
    f(name);
    f(category);
    f(grid);
    f(block);
    f(registers);
    f(shared_mem_bytes);
    f(bytes);
    f(graph_id);
    f(comm_args);
    f(runtime_idx);
    f(host_op_idx);
    f(link_path);
    f(cls);
    f(memcpy_dir);
    f(collective);
    f(iteration);
    f(phase);
    f(layer);
    f(operation);
    f(op_class);
    f(iteration_rule);
    f(phase_rule);
    f(layer_rule);
    f(operation_rule);
    f(op_class_rule);
  }
  size_t size() const { return start_ns.size(); }
};

// A CPU thread (or a GPU stream, for flows that end on one) as the trace names it. Host ops,
// runtime calls, flows and instants refer to theirs by its index in RankTrace::threads, each
// (pid, tid) listed once, in order of first appearance in the file.
struct ThreadKey {
  int64_t pid = 0;
  int64_t tid = 0;
  bool operator==(const ThreadKey&) const = default;
};

enum class HostKind : uint8_t { kCpuOp, kUserAnnotation, kPythonFunction };

struct HostOps {
  std::vector<HostKind> kind;
  std::vector<StrId> category;
  std::vector<int32_t> thread;  // index in RankTrace::threads
  std::vector<Ns> start_ns;
  std::vector<Ns> dur_ns;
  std::vector<StrId> name;
  std::vector<int64_t> external_id;
  std::vector<int64_t> sequence_number;
  std::vector<int64_t> fwd_thread_id;
  std::vector<int64_t> record_function_id;
  std::vector<int32_t> shapes;     // row in RankTrace::shapes, -1 none
  std::vector<int32_t> comm_args;  // row in RankTrace::comm_args, -1 none
  // link/: parent in the per-thread host-op tree
  std::vector<int32_t> parent;

  // Calls f(column) for every column, in declaration order (bulk reserve while reading).
  template <class F>
  void for_each_column(F&& f) {
    f(kind);
    f(category);
    f(thread);
    f(start_ns);
    f(dur_ns);
    f(name);
    f(external_id);
    f(sequence_number);
    f(fwd_thread_id);
    f(record_function_id);
    f(shapes);
    f(comm_args);
    f(parent);
  }
  size_t size() const { return start_ns.size(); }
};

struct RuntimeCalls {
  std::vector<bool> driver;     // cuda_driver (cuLaunchKernel, ...) rather than runtime
  std::vector<int32_t> thread;  // index in RankTrace::threads
  std::vector<Ns> start_ns;
  std::vector<Ns> dur_ns;
  std::vector<StrId> name;
  std::vector<int64_t> correlation;
  std::vector<int64_t> external_id;
  // link/
  std::vector<int32_t> host_op_idx;
  // link/classify: a graph launch (cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch, their _ptsz /
  // _spt variants): one call that launches every kernel of a graph, all on its correlation.
  std::vector<bool> graph_launch;

  // Calls f(column) for every column, in declaration order (bulk reserve while reading).
  template <class F>
  void for_each_column(F&& f) {
    f(driver);
    f(thread);
    f(start_ns);
    f(dur_ns);
    f(name);
    f(correlation);
    f(external_id);
    f(host_op_idx);
    f(graph_launch);
  }
  size_t size() const { return start_ns.size(); }
};

enum class FlowKind : uint8_t { kLaunch /* ac2g, async, async_cpu_to_gpu */, kFwdBwd, kOther };
enum class FlowPhase : uint8_t { kStart, kStep, kFinish };

struct Flows {
  std::vector<FlowKind> kind;
  std::vector<FlowPhase> phase;
  std::vector<StrId> category;
  std::vector<uint64_t> id;
  std::vector<int32_t> thread;  // index in RankTrace::threads (a launch flow's finish: the GPU
                                // activity's device and stream as pid and tid)
  std::vector<Ns> ts_ns;
  std::vector<bool> binds_enclosing;  // bp:"e"

  // Calls f(column) for every column, in declaration order (bulk reserve while reading).
  template <class F>
  void for_each_column(F&& f) {
    f(kind);
    f(phase);
    f(category);
    f(id);
    f(thread);
    f(ts_ns);
    f(binds_enclosing);
  }
  size_t size() const { return ts_ns.size(); }
};

// Instant events worth keeping: cpu_instant_event markers and [memory] events.
struct Instants {
  std::vector<StrId> name;
  std::vector<StrId> category;
  std::vector<int32_t> thread;  // index in RankTrace::threads
  std::vector<Ns> ts_ns;
  std::vector<char> scope;         // 'g', 'p', 't'
  std::vector<int64_t> mem_bytes;  // [memory]: Bytes (negative = free); 0 otherwise
  std::vector<int64_t> mem_total_allocated;
  std::vector<int32_t> mem_device;  // [memory]: Device Id, -1 none

  // Calls f(column) for every column, in declaration order (bulk reserve while reading).
  template <class F>
  void for_each_column(F&& f) {
    f(name);
    f(category);
    f(thread);
    f(ts_ns);
    f(scope);
    f(mem_bytes);
    f(mem_total_allocated);
    f(mem_device);
  }
  size_t size() const { return ts_ns.size(); }
};

// Counter samples (ph "C"): one row per (event, series key).
struct CounterSamples {
  std::vector<StrId> name;  // "<event name>.<key>"
  std::vector<int64_t> pid;
  std::vector<Ns> ts_ns;
  std::vector<double> value;

  size_t size() const { return ts_ns.size(); }
};

// The input shapes a host op recorded (record_shapes=True): raw JSON text, interned; 0 = absent.
// Only ops that have one get a row (most ops of most traces have none).
struct InputShapes {
  StrId input_dims = 0;       // "Input Dims"
  StrId input_types = 0;      // "Input type"
  StrId concrete_inputs = 0;  // "Concrete Inputs"
};

// Collective arguments as recorded by PyTorch (record_param_comms, nccl:* annotations, and newer
// CUDA builds on the NCCL kernel itself).
struct CommArgs {
  StrId collective_name = 0;  // "allreduce", "_allgather_base", ...
  StrId dtype = 0;            // "Float", "BFloat16"
  int64_t in_nelems = -1;     // elements
  int64_t out_nelems = -1;    // elements
  int64_t group_size = -1;
  StrId pg_name = 0;
  StrId pg_desc = 0;
  StrId pg_ranks = 0;  // raw text "[0, 1]"
  StrId in_split = 0;
  StrId out_split = 0;
  int64_t seq = -1;
};

#define CHOPPER_COLL_TYPES(X)         \
  X(kUnknown, "unknown")              \
  X(kAllReduce, "all_reduce")         \
  X(kAllGather, "all_gather")         \
  X(kReduceScatter, "reduce_scatter") \
  X(kBroadcast, "broadcast")          \
  X(kReduce, "reduce")                \
  X(kAllToAll, "all_to_all")          \
  X(kSendRecv, "send_recv")           \
  X(kSend, "send")                    \
  X(kRecv, "recv")                    \
  X(kBarrier, "barrier")              \
  X(kGather, "gather")                \
  X(kScatter, "scatter")
CHOPPER_ENUM(CollType, CHOPPER_COLL_TYPES)
inline std::string_view coll_type_name(CollType t) {
  return enum_name(t);
}

// One communication GPU activity, classified (link/classify.cpp).
struct Collective {
  int32_t gpu_idx = kNoRow;
  CollType type = CollType::kUnknown;
  StrId algorithm = 0;  // RING, TREE, NVLS, ... (from the NCCL kernel name)
  StrId protocol = 0;   // LL, LL128, SIMPLE
  StrId dtype = 0;
  int64_t in_nelems = -1;
  int64_t out_nelems = -1;
  int64_t group_size = -1;
  StrId pg_name = 0;
  StrId pg_desc = 0;
  StrId pg_ranks = 0;
  // Where the type came from: "kernel_name", "kernel_args", "host_args".
  StrId source = 0;
  // The collective the framework called (its args' collective name, else an nccl:* range): may
  // differ from `type`, e.g. an all-to-all that NCCL runs as SendRecv kernels. kUnknown if none.
  CollType called = CollType::kUnknown;
};

struct ProcessGroup {
  std::string name;
  std::string desc;
  std::string backend_config;
  int64_t size = -1;
  std::vector<int64_t> ranks;
};

struct DeviceProps {
  int64_t id = -1;
  std::string name;
  int64_t total_global_mem_bytes = -1;
  int64_t compute_major = -1;
  int64_t compute_minor = -1;
  int64_t num_sms = -1;
  int64_t warp_size = -1;
  int64_t max_threads_per_block = -1;
  int64_t shared_mem_per_block_bytes = -1;
  int64_t regs_per_block = -1;
};

struct TraceMetadata {
  int64_t rank = -1;        // -1 unknown
  int64_t world_size = -1;  // -1 unknown
  std::string rank_source;  // "distributedInfo", "file name", or "" (unknown)
  std::string backend;
  std::string nccl_version;
  std::vector<ProcessGroup> process_groups;  // as listed in pg_config
  int64_t pg_count = -1;                     // distributedInfo.pg_count (may exceed the list)
  std::vector<DeviceProps> devices;
  int64_t schema_version = -1;
  Ns base_time_ns = 0;  // baseTimeNanoseconds (already added to every timestamp)
  bool has_base_time = false;
  std::string trace_name;
  std::string display_time_unit;
  // Library versions and other scalar top-level keys, as text (cupti_version, hip_runtime_version…)
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<std::pair<std::string, std::string>> other;
  // ts generation: "int_epoch_us", "float_epoch_us", "relative_to_base"
  std::string ts_format;
  bool legacy_2021 = false;  // Operator/Runtime/Kernel categories
  bool rocm = false;
  std::vector<std::pair<int64_t, std::string>> process_names;  // M process_name
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> thread_names;
};

struct RankTrace {
  std::string file;
  uint64_t file_bytes = 0;          // on disk
  uint64_t uncompressed_bytes = 0;  // JSON text read
  StringTable strings;
  TraceMetadata meta;
  GpuActivities gpu;
  HostOps host;
  RuntimeCalls runtime;
  Flows flows;
  Instants instants;
  CounterSamples counters;
  std::vector<ThreadKey> threads;   // HostOps::thread, RuntimeCalls::thread, ... index this
  std::vector<InputShapes> shapes;  // HostOps::shapes indexes this
  std::vector<CommArgs> comm_args;
  std::vector<Collective> collectives;
  // Complete events (ph "X") per category as named in the file, skipped categories included,
  // in order of first appearance; and every event per ph.
  std::vector<std::pair<StrId, uint64_t>> x_events_by_category;
  std::vector<std::pair<char, uint64_t>> events_by_ph;
  uint64_t total_events = 0;
  Diagnostics diagnostics;

  // ProfilerStep#N found on the host side: N, start, end.
  struct Step {
    int64_t number;
    Ns start_ns;
    Ns end_ns;
  };
  std::vector<Step> steps;
  // Names of the rules the GpuActivities *_rule columns index (hierarchy/label.cpp).
  std::vector<std::string> label_rules;
  bool labelled() const { return gpu.iteration.size() == gpu.size() && !label_rules.empty(); }

  // Link statistics (link/link.cpp).
  uint64_t linked_gpu_activities = 0;
  uint64_t linkable_gpu_activities = 0;  // kernels, memcpys, memsets
  // The rank's PyTorch host execution trace, linked to its host ops by rf_id (link/et_link.hpp);
  // null when the run has none for this rank.
  std::shared_ptr<ExecTrace> exec_trace;
  double link_rate() const {
    return linkable_gpu_activities == 0 ? -1.0
                                        : static_cast<double>(linked_gpu_activities) /
                                              static_cast<double>(linkable_gpu_activities);
  }
  uint64_t x_events(std::string_view category) const;
  // The shapes host op `op` recorded (all 0 if none).
  const InputShapes& shapes_of(size_t op) const {
    static constexpr InputShapes kNone{};
    const int32_t s = host.shapes[op];
    return s < 0 ? kNone : shapes[static_cast<size_t>(s)];
  }
  Ns first_ns() const;
  Ns last_ns() const;
};

}  // namespace chopper
