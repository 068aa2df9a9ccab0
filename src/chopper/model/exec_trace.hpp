#pragma once
// A PyTorch host execution trace (torch.profiler.ExecutionTraceObserver, "host ET"), as read by
// ingest/et, and its link to the rank's Kineto trace (link/et_link.cpp). Struct-of-arrays like
// RankTrace, with its own strings. What a node's inputs and outputs are: one row per argument
// (value text, shape text, type), and per argument the tensors it holds (a Tensor argument one, a
// tensor list several), each the ET's 6-tuple [tensor_id, storage_id, offset, num_elem,
// elem_bytes, device].
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/intern.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct EtTensor {
  int64_t tensor_id = -1;
  int64_t storage_id = -1;
  int64_t offset = 0;    // elements into the storage
  int64_t num_elem = 0;  // elements
  int64_t elem_bytes = 0;
  StrId device = 0;  // "cpu", "cuda:0"
  int64_t bytes() const { return num_elem * elem_bytes; }
};

// One argument (input or output) of a node.
struct EtArg {
  StrId type = 0;   // as written: "Tensor(float)", "Int", "GenericList[Tensor(float),Int]"
  StrId shape = 0;  // JSON text of its shape: "[2, 3]", "[]", "[[2], [3]]"
  StrId value = 0;  // JSON text of its value (a tensor's 6-tuple as written)
  uint32_t tensor_begin = 0, tensor_end = 0;  // its tensors: ExecTrace::arg_tensors[begin, end)
};

// The node kinds chopper tells apart: the roots and thread labels
// ("[pytorch|profiler|execution_trace|process]" / "|thread]", the older "execution_graph" and
// "__ROOT_PROCESS__" / "__ROOT_THREAD__"), and operators (everything else).
enum class EtNodeKind : uint8_t { kRoot, kThread, kOperator };

struct ExecTrace {
  std::string file;
  uint64_t file_bytes = 0;  // on disk
  std::string schema;       // "1.0.2-chakra.0.0.4"
  int64_t pid = -1;
  std::string time;  // "2024-03-21 18:54:23"
  int64_t start_ts = -1, finish_ts = -1;
  StringTable strings;
  Diagnostics diagnostics;

  // Nodes, in file order.
  std::vector<int64_t> id;
  std::vector<StrId> name;
  std::vector<int64_t> parent;  // ctrl_deps (schema 1.0.1: parent); -1 none
  std::vector<EtNodeKind> kind;
  std::vector<int64_t> rf_id;      // kNoId = none
  std::vector<int64_t> seq_id;     // -1 none
  std::vector<int64_t> fw_parent;  // 0 none
  std::vector<int64_t> tid;        // the ET's thread number (not the OS tid); -1 none
  std::vector<int64_t> scope;      // RecordScope; -1 none
  std::vector<StrId> op_schema;    // 0 = none
  // Arguments: node i's inputs are args[in_begin[i], out_begin[i]), its outputs
  // args[out_begin[i], args_end[i]).
  std::vector<uint32_t> in_begin, out_begin, args_end;
  std::vector<EtArg> args;
  std::vector<uint32_t> arg_tensors;  // rows in `tensors`, grouped by argument
  std::vector<EtTensor> tensors;      // each tensor occurrence (the same tensor_id recurs)
  int32_t root = kNoRow;              // the process root node (row), kNoRow if none
  // Process groups, from the `## process_group:init ##` node (its first input: a JSON list).
  std::vector<ProcessGroup> process_groups;

  // Link to the Kineto trace (link/et_link.cpp); empty until linked.
  std::vector<int32_t> host_op;  // node -> row in RankTrace::host, kNoRow none
  // Per entry of arg_tensors that is an input: the node (row) that last output the same
  // tensor_id before this node (data dependency), kNoRow none. Outputs: kNoRow.
  std::vector<int32_t> producer;
  uint64_t operator_nodes = 0;    // nodes of kind kOperator
  uint64_t with_rf_id = 0;        // operators with an rf_id
  uint64_t with_counterpart = 0;  // operators whose rf_id some Kineto host op carries
  uint64_t linked = 0;            // operators linked to a Kineto host op
  uint64_t shapes_from_et = 0;    // linked host ops that had no Input Dims and got the ET's
  bool link_done = false;

  size_t size() const { return id.size(); }
  // Linked / operators that have a Kineto counterpart (-1 when none has one).
  double link_rate() const {
    return with_counterpart == 0
               ? -1.0
               : static_cast<double>(linked) / static_cast<double>(with_counterpart);
  }
  // Linked / all operators (-1 when there is none).
  double link_rate_all() const {
    return operator_nodes == 0 ? -1.0
                               : static_cast<double>(linked) / static_cast<double>(operator_nodes);
  }
};

}  // namespace chopper
