#pragma once
// Chakra execution traces (MLCommons Chakra's protobuf ET, the input of ASTRA-sim): read and
// checked (et_read.cpp), written from a run chopper analysed (et_write.cpp). The wire schema is
// proto/chakra_et.proto; what is written and how it is checked: docs/formats.md, "Chakra ET".
#include <chakra_et.pb.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/time.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper::chakra {

// ---- reading ----------------------------------------------------------------------------------

// One file: its GlobalMetadata and its nodes in file order.
struct EtFile {
  std::string file;
  uint64_t bytes = 0;  // uncompressed bytes read
  bool gzip = false;
  ChakraProtoMsg::GlobalMetadata meta;
  std::vector<ChakraProtoMsg::Node> nodes;
};
// Reads a file (gzip sniffed by its first bytes, 1f 8b): varint32-length-delimited records, the
// GlobalMetadata then Nodes. Throws InputError naming the file and the byte offset (of the
// uncompressed stream) of a bad varint, a record running past the end, or a record that does not
// parse.
EtFile read_et(const std::string& path);
// The same from bytes in memory (`name` in messages).
EtFile parse_et(std::string_view bytes, const std::string& name);
// Whether `path` looks like a Chakra ET by its name: *.et, *.et.gz.
bool is_et_name(const std::string& path);

// What the checks of one file found.
struct EtCheck {
  std::vector<std::pair<int, uint64_t>> by_type;  // (NodeType, nodes), by type
  uint64_t data_edges = 0, ctrl_edges = 0;
  uint64_t with_start_time = 0;  // nodes whose start_time_micros is set (non-zero)
  // Ids given to more than one node (each id once), and deps naming an id no node has.
  std::vector<uint64_t> duplicate_ids;
  uint64_t dangling_data = 0, dangling_ctrl = 0;
  std::vector<std::pair<uint64_t, uint64_t>> dangling_examples;  // (node, missing id), first few
  // Nodes on or behind a cycle (dangling deps left out) of the data deps, and of data + ctrl deps:
  // 0 = acyclic. (Chakra's PyTorch converter writes each op's host-ET parent as its ctrl dep, not
  // an order: its files can be cyclic over data + ctrl deps, and ctrl deps can name dropped nodes.)
  uint64_t in_cycles_data = 0, in_cycles_all = 0;
  // Chakra's ETFeeder (data deps only; the ready queue gives the smallest id first): the nodes
  // issuable before any completes (how many, and the first few in the order getNextIssuableNode
  // gives them), and how many a full replay issues (each issued node completing and freeing its
  // children); a replay that issues fewer stalls on a cycle or a dangling dep.
  uint64_t feeder_initial = 0;
  std::vector<uint64_t> feeder_first;
  uint64_t feeder_issued = 0;
  // The same with ctrl deps resolved too (ASTRA-sim's feeder).
  uint64_t all_deps_initial = 0;
  std::vector<uint64_t> all_deps_first;
  uint64_t all_deps_issued = 0;
  // COMM_COLL nodes in file order: (comm_type or -1, comm_size or -1, pg_name).
  struct Coll {
    uint64_t id = 0;
    int64_t comm_type = -1, comm_size = -1;
    std::string pg_name;
  };
  std::vector<Coll> collectives;
  // The checks every Chakra ET must pass: ids unique, data deps name nodes, data deps acyclic.
  bool ok() const { return duplicate_ids.empty() && dangling_data == 0 && in_cycles_data == 0; }
  // And those a file chopper writes passes too: ctrl deps name nodes, data + ctrl deps acyclic.
  bool strict_ok() const { return ok() && dangling_ctrl == 0 && in_cycles_all == 0; }
};
EtCheck check_et(const EtFile& f, size_t first = 8);
// The nodes listing `id` among their data deps, in file order: the children Chakra's ETFeeder
// gives a node.
std::vector<uint64_t> feeder_children(const EtFile& f, uint64_t id);
// Collectives consistent across files (one per rank): the same number of COMM_COLL nodes, and the
// k-th of each with the same comm_type, comm_size and pg_name. One line per difference (at most
// `max_lines`, then a count), empty when consistent.
std::vector<std::string> collective_mismatches(const std::vector<EtFile>& files,
                                               const std::vector<EtCheck>& checks,
                                               size_t max_lines = 10);
// `chopper info x.et ...`: per file the metadata, node counts by type, edges and the checks; then
// the cross-file collective check. Sets `problems` to the number of failed checks.
std::string et_info_text(const std::vector<EtFile>& files, const std::vector<EtCheck>& checks,
                         size_t& problems);
// Attribute helpers: the attribute named `name` of a node (null if none).
const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::Node& n,
                                                std::string_view name);
// An integer attribute (any integer kind, or bool) as int64; `fallback` when absent.
int64_t int_attr(const ChakraProtoMsg::Node& n, std::string_view name, int64_t fallback);
std::string_view node_type_name(int type);  // "COMP_NODE", ...

// ---- writing ----------------------------------------------------------------------------------

// A data dependency between two host ops of a rank (rows of HostOps): the consumer read a tensor
// the producer wrote. None come from a Kineto trace; a host execution trace linked to it gives
// them (tensor ids per op).
struct DataDep {
  int32_t producer = kNoRow, consumer = kNoRow;
};

struct WriteOptions {
  bool attrs = false;  // chopper's measurements as attributes (energy_j, power_w, sm_clock_mhz)
  // The control and sync dependencies written as data_deps instead of ctrl_deps, as Chakra's
  // PyTorch converter does, for feeders that follow data deps only (Chakra's ETFeeder).
  bool ctrl_as_data = false;
};

// What was written for one rank.
struct RankEtStats {
  int64_t rank = -1;
  std::string file;
  uint64_t bytes = 0;
  uint64_t nodes = 0, metadata = 0, comp_host = 0, comp_gpu = 0, coll = 0, send = 0, recv = 0;
  uint64_t ctrl_edges = 0, sync_edges = 0, data_edges = 0;
  // Dependencies that would point to a later node (clock skew between host and GPU): left out so
  // the graph stays acyclic (ids ascend with start times and every dep names a smaller id).
  uint64_t dropped_edges = 0;
  uint64_t untyped_collectives = 0;  // no CollectiveCommType for chopper's type: no comm_type
  uint64_t sync_activities = 0;      // cuda_sync GPU activities: not nodes
  uint64_t python_functions = 0;     // python_function host ops: not nodes
};

// The graph of one rank, as written: GlobalMetadata and nodes in ascending id order.
struct RankEt {
  ChakraProtoMsg::GlobalMetadata meta;
  std::vector<ChakraProtoMsg::Node> nodes;
  RankEtStats stats;
};
// Builds rank `rank`'s graph from its linked, labelled trace. `offset_ns`: the rank's clock offset
// (subtracted: the aligned clock); `run_start_ns`: the run's first time on the aligned clock
// (start_time_micros counts from it); `hw` (may be null): the rank's analysis, whose kernel_hw
// gives the --attrs measurements; `data_deps`: producer → consumer pairs of host ops (none today).
RankEt build_rank_et(const RankTrace& t, int64_t rank, Ns offset_ns, Ns run_start_ns,
                     const RankAnalysis* hw, const std::vector<DataDep>& data_deps,
                     const WriteOptions& o);
// The tensor data dependencies of a rank whose host execution trace is linked
// (model/exec_trace.hpp, link/et_link.cpp): for each linked ET operator, each input tensor's
// producer (the node that last output that tensor) when the producer is linked too, as a pair of
// host-op rows; each pair once. Empty without a linked ET.
std::vector<DataDep> et_data_deps(const RankTrace& t);
// Adds the data deps of `deps` to the graph (consumer's node ← producer's node), both host ops
// having nodes; returns how many were added. build_rank_et calls it.
uint64_t add_data_deps(RankEt& et, const std::vector<uint64_t>& host_node_id,
                       const std::vector<DataDep>& deps);
// Writes the graph as `path` (plain, or gzip when it ends in .gz); returns the bytes written.
uint64_t write_et(const RankEt& et, const std::string& path);

}  // namespace chopper::chakra
