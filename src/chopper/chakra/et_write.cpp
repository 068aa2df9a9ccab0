// A rank's Chakra ET built from its linked, labelled trace and written (et.hpp).
// docs/formats.md, "Chakra ET": which chopper data becomes which node, attribute and dependency.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <numeric>
#include <set>

#include "chopper/analysis/collectives.hpp"
#include "chopper/analysis/launch.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/version.hpp"
#include "chopper/chakra/et.hpp"
#include "chopper/model/exec_trace.hpp"

namespace chopper::chakra {
namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

// The Chakra version of the schema written (GlobalMetadata.version) and the schema string of its
// attrs, as Chakra's PyTorch converter writes them ("<host ET schema>-chakra.<version>").
constexpr const char* kChakraVersion = "0.0.4";

uint64_t micros(Ns ns) {  // ns → µs, rounded to the nearest; negative → 0
  return ns <= 0 ? 0 : static_cast<uint64_t>((ns + 500) / 1000);
}

void attr_i64(Node& n, const char* name, int64_t v) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void attr_i32(Node& n, const char* name, int32_t v) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(v);
}
void attr_bool(Node& n, const char* name, bool v) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_bool_val(v);
}
void attr_str(Node& n, const char* name, std::string_view v) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(std::string(v));
}
void attr_f64(Node& n, const char* name, double v) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  a->set_double_val(v);
}
void meta_attr(ChakraProtoMsg::GlobalMetadata& m, const char* name, std::string_view s) {
  AttributeProto* a = m.add_attr();
  a->set_name(name);
  a->set_string_val(std::string(s));
}
void meta_attr(ChakraProtoMsg::GlobalMetadata& m, const char* name, int64_t v) {
  AttributeProto* a = m.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}

// Chakra's CollectiveCommType of chopper's collective type; -1: none (send/recv, unknown).
int64_t comm_type_of(CollType t) {
  switch (t) {
    case CollType::kAllReduce:
      return ChakraProtoMsg::ALL_REDUCE;
    case CollType::kReduce:
      return ChakraProtoMsg::REDUCE;
    case CollType::kAllGather:
      return ChakraProtoMsg::ALL_GATHER;
    case CollType::kGather:
      return ChakraProtoMsg::GATHER;
    case CollType::kScatter:
      return ChakraProtoMsg::SCATTER;
    case CollType::kBroadcast:
      return ChakraProtoMsg::BROADCAST;
    case CollType::kAllToAll:
      return ChakraProtoMsg::ALL_TO_ALL;
    case CollType::kReduceScatter:
      return ChakraProtoMsg::REDUCE_SCATTER;
    case CollType::kBarrier:
      return ChakraProtoMsg::BARRIER;
    default:
      return -1;
  }
}

// "[0, 1]" → {0, 1}; empty when it is not such a list.
std::vector<int64_t> parse_ranks(std::string_view s) {
  std::vector<int64_t> out;
  int64_t v = 0;
  bool in = false;
  for (char ch : s) {
    if (ch >= '0' && ch <= '9') {
      v = v * 10 + (ch - '0');
      in = true;
    } else {
      if (in) out.push_back(v);
      v = 0;
      in = false;
      if (ch != '[' && ch != ']' && ch != ',' && ch != ' ') return {};
    }
  }
  if (in) out.push_back(v);
  return out;
}

// The process groups as ASTRA-sim reads them from a METADATA node: [{"pg_name": .., "ranks":
// [..]}, ...], from the trace's pg_config, else from the groups its collectives name.
std::string process_groups_json(const RankTrace& t) {
  std::map<std::string, std::vector<int64_t>> groups;
  for (const ProcessGroup& pg : t.meta.process_groups) groups.emplace(pg.name, pg.ranks);
  if (groups.empty())
    for (const Collective& c : t.collectives)
      if (c.pg_name != 0 && c.pg_ranks != 0)
        groups.emplace(std::string(t.strings.str(c.pg_name)),
                       parse_ranks(t.strings.str(c.pg_ranks)));
  if (groups.empty()) return "";
  std::string s = "[";
  for (const auto& [name, ranks] : groups) {
    if (s.size() > 1) s += ", ";
    s += "{\"pg_name\": \"";
    for (char ch : name) {
      if (ch == '"' || ch == '\\') s += '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) s += ch;
    }
    s += "\", \"ranks\": [";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    s += "]}";
  }
  return s + "]";
}

std::string utc_text(Ns ns) {
  const std::time_t secs = static_cast<std::time_t>(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

std::vector<DataDep> et_data_deps(const RankTrace& t) {
  std::vector<DataDep> deps;
  if (!t.exec_trace || !t.exec_trace->link_done) return deps;
  const ExecTrace& et = *t.exec_trace;
  std::set<std::pair<int32_t, int32_t>> seen;
  for (size_t i = 0; i < et.size(); ++i) {
    const int32_t consumer = et.host_op[i];
    if (consumer == kNoRow) continue;
    for (uint32_t a = et.in_begin[i]; a < et.out_begin[i]; ++a)
      for (uint32_t k = et.args[a].tensor_begin; k < et.args[a].tensor_end; ++k) {
        const int32_t p = et.producer[k];
        if (p == kNoRow || static_cast<size_t>(p) == i) continue;
        const int32_t producer = et.host_op[static_cast<size_t>(p)];
        if (producer == kNoRow || producer == consumer) continue;
        if (seen.emplace(producer, consumer).second) deps.push_back({producer, consumer});
      }
  }
  return deps;
}

uint64_t add_data_deps(RankEt& et, const std::vector<uint64_t>& host_node_id,
                       const std::vector<DataDep>& deps) {
  uint64_t added = 0;
  for (const DataDep& d : deps) {
    if (d.producer < 0 || d.consumer < 0 ||
        static_cast<size_t>(d.producer) >= host_node_id.size() ||
        static_cast<size_t>(d.consumer) >= host_node_id.size())
      continue;
    const uint64_t p = host_node_id[static_cast<size_t>(d.producer)];
    const uint64_t c = host_node_id[static_cast<size_t>(d.consumer)];
    if (p == UINT64_MAX || c == UINT64_MAX) continue;
    if (p >= c) {  // would point forward: left out, the graph stays acyclic
      ++et.stats.dropped_edges;
      continue;
    }
    // Node ids are their indices in et.nodes (ascending from 0).
    et.nodes[c].add_data_deps(p);
    ++added;
  }
  et.stats.data_edges += added;
  return added;
}

namespace {

constexpr uint64_t kNone = UINT64_MAX;

// One rank's graph in passes (build_rank_et): host ops chosen and their exclusive time, nodes
// ordered and numbered, control deps, sync deps, the nodes written out.
class Builder {
 public:
  Builder(const RankTrace& t, int64_t rank, Ns offset_ns, const WriteOptions& o, RankEt& et)
      : t_(t), h_(t.host), g_(t.gpu), rank_(rank), offset_(offset_ns), o_(o), et_(et) {}

  // Host ops that become nodes: CPU ops and user annotations (python_function frames are the
  // call stack, whose time is in the ops they hold). Each op's nearest ancestor that is a node,
  // and the exclusive durations: an op's time less the time of the nodes directly under it.
  void select_host_ops() {
    const size_t nh = h_.size();
    host_in_.assign(nh, 0);
    for (size_t i = 0; i < nh; ++i) {
      if (h_.kind[i] == HostKind::kPythonFunction) {
        ++et_.stats.python_functions;
        continue;
      }
      host_in_[i] = h_.dur_ns[i] >= 0;
    }
    node_parent_.assign(nh, kNoRow);
    for (size_t i = 0; i < nh; ++i) {
      int32_t p = h_.parent[i];
      for (int guard = 0; p != kNoRow && !host_in_[static_cast<size_t>(p)] && guard < 4096; ++guard)
        p = h_.parent[static_cast<size_t>(p)];
      node_parent_[i] = p != kNoRow && host_in_[static_cast<size_t>(p)] ? p : kNoRow;
    }
    excl_.assign(nh, 0);
    for (size_t i = 0; i < nh; ++i)
      if (host_in_[i]) excl_[i] += h_.dur_ns[i];
    for (size_t i = 0; i < nh; ++i)
      if (host_in_[i] && node_parent_[i] != kNoRow)
        excl_[static_cast<size_t>(node_parent_[i])] -= h_.dur_ns[i];
  }

  // Every node in start order on the aligned clock (host before GPU at the same time, the longer
  // first: a parent before its children); ids follow that order, after the METADATA node.
  void order_nodes(bool metadata) {
    for (size_t i = 0; i < h_.size(); ++i)
      if (host_in_[i])
        items_.push_back({h_.start_ns[i] - offset_, 0, h_.dur_ns[i], static_cast<int32_t>(i)});
    for (size_t a = 0; a < g_.size(); ++a) {
      if (g_.kind[a] == GpuKind::kSync) {
        ++et_.stats.sync_activities;
        continue;
      }
      if (g_.dur_ns[a] >= 0)
        items_.push_back({g_.start_ns[a] - offset_, 1, g_.dur_ns[a], static_cast<int32_t>(a)});
    }
    std::sort(items_.begin(), items_.end(), [](const Item& x, const Item& y) {
      if (x.start != y.start) return x.start < y.start;
      if (x.gpu != y.gpu) return x.gpu < y.gpu;
      if (x.dur != y.dur) return x.dur > y.dur;
      return x.row < y.row;
    });
    first_id_ = metadata ? 1 : 0;
    host_id_.assign(h_.size(), kNone);
    gpu_id_.assign(g_.size(), kNone);
    uint64_t id = first_id_;
    for (const Item& it : items_) (it.gpu ? gpu_id_ : host_id_)[static_cast<size_t>(it.row)] = id++;
    ctrl_.assign(items_.size(), {});
    sync_.assign(items_.size(), {});
  }

  // Control deps: each host thread's serial order (an op after the previous op of its thread),
  // each stream's order (an activity after the previous one of its stream), and launches (a GPU
  // activity after the host op that launched it, or that op's nearest ancestor that is a node).
  void control_deps() {
    std::map<int32_t, uint64_t> last_on_thread;
    std::map<std::pair<int32_t, int64_t>, uint64_t> last_on_stream;
    for (const Item& it : items_) {
      const auto row = static_cast<size_t>(it.row);
      if (!it.gpu) {
        auto [pos, fresh] = last_on_thread.try_emplace(h_.thread[row], host_id_[row]);
        if (!fresh) {
          add_dep(ctrl_, host_id_[row], pos->second);
          pos->second = host_id_[row];
        }
        continue;
      }
      auto [pos, fresh] =
          last_on_stream.try_emplace({g_.device[row], g_.stream[row]}, gpu_id_[row]);
      if (!fresh) {
        add_dep(ctrl_, gpu_id_[row], pos->second);
        pos->second = gpu_id_[row];
      }
      int32_t op = g_.host_op_idx[row];
      if (op != kNoRow && !host_in_[static_cast<size_t>(op)])
        op = node_parent_[static_cast<size_t>(op)];
      if (op != kNoRow) add_dep(ctrl_, gpu_id_[row], host_id_[static_cast<size_t>(op)]);
    }
  }

  // Sync deps: a blocking runtime call (a synchronize, a copy that is not async) held the host
  // until the GPU work ending last inside the call had ended; the next op of the call's thread,
  // started after the call, waits for that work.
  void sync_deps() {
    const RuntimeCalls& rt = t_.runtime;
    std::vector<std::pair<Ns, uint64_t>> gpu_ends;  // (end, node) on the rank's own clock
    for (size_t a = 0; a < g_.size(); ++a)
      if (gpu_id_[a] != kNone) gpu_ends.emplace_back(g_.start_ns[a] + g_.dur_ns[a], gpu_id_[a]);
    std::sort(gpu_ends.begin(), gpu_ends.end());
    std::map<int32_t, std::vector<std::pair<Ns, uint64_t>>> thread_ops;  // (start, node)
    for (size_t i = 0; i < h_.size(); ++i)
      if (host_id_[i] != kNone) thread_ops[h_.thread[i]].emplace_back(h_.start_ns[i], host_id_[i]);
    for (auto& [th, v] : thread_ops) std::sort(v.begin(), v.end());
    for (size_t i = 0; i < rt.size(); ++i) {
      if (rt.dur_ns[i] < 0 || !blocking_call(t_.strings.str(rt.name[i]))) continue;
      const Ns s = rt.start_ns[i], e = s + rt.dur_ns[i];
      auto w = std::upper_bound(gpu_ends.begin(), gpu_ends.end(), std::make_pair(e, kNone));
      if (w == gpu_ends.begin() || std::prev(w)->first < s) continue;
      auto ops = thread_ops.find(rt.thread[i]);
      if (ops == thread_ops.end()) continue;
      auto next =
          std::lower_bound(ops->second.begin(), ops->second.end(), std::make_pair(e, uint64_t{0}));
      if (next != ops->second.end() && add_dep(sync_, next->second, std::prev(w)->second))
        ++et_.stats.sync_edges;
    }
  }

  // The nodes, in id order, with their deps and attributes.
  void emit_nodes(Ns run_start_ns, const RankAnalysis* hw) {
    std::map<int32_t, const KernelHw*> khw;
    if (o_.attrs && hw != nullptr)
      for (const KernelHw& k : hw->kernel_hw) khw.emplace(k.row, &k);
    for (size_t k = 0; k < items_.size(); ++k) {
      const Item& it = items_[k];
      Node& n = et_.nodes.emplace_back();
      n.set_id(first_id_ + k);
      n.set_start_time_micros(micros(it.start - run_start_ns));
      for (const auto* deps : {&ctrl_[k], &sync_[k]})
        for (uint64_t d : *deps) o_.ctrl_as_data ? n.add_data_deps(d) : n.add_ctrl_deps(d);
      et_.stats.ctrl_edges += ctrl_[k].size() + sync_[k].size();
      if (!it.gpu) {
        host_node(n, static_cast<size_t>(it.row));
      } else {
        gpu_node(n, static_cast<size_t>(it.row));
        if (auto f = khw.find(it.row); f != khw.end()) {
          if (std::isfinite(f->second->energy_j)) attr_f64(n, "energy_j", f->second->energy_j);
          if (std::isfinite(f->second->power_w)) attr_f64(n, "power_w", f->second->power_w);
          if (std::isfinite(f->second->clock_mhz))
            attr_f64(n, "sm_clock_mhz", f->second->clock_mhz);
        }
      }
    }
  }

  const std::vector<uint64_t>& host_ids() const { return host_id_; }

 private:
  struct Item {
    Ns start;
    uint8_t gpu;
    Ns dur;
    int32_t row;
  };

  // dep → node in `into`, once; a dep on a later node is left out (counted).
  bool add_dep(std::vector<std::vector<uint64_t>>& into, uint64_t node, uint64_t dep) {
    if (dep == kNone || node == kNone || dep == node) return false;
    if (dep > node) {
      ++et_.stats.dropped_edges;
      return false;
    }
    auto& v = into[node - first_id_];
    if (std::find(v.begin(), v.end(), dep) != v.end()) return false;
    v.push_back(dep);
    return true;
  }

  void host_node(Node& n, size_t row) {
    n.set_name(std::string(t_.strings.str(h_.name[row])));
    n.set_type(ChakraProtoMsg::COMP_NODE);
    n.set_duration_micros(micros(std::max<Ns>(0, excl_[row])));
    if (h_.record_function_id[row] != kNoId) attr_i64(n, "rf_id", h_.record_function_id[row]);
    attr_i64(n, "tid", t_.threads[static_cast<size_t>(h_.thread[row])].tid);
    attr_bool(n, "is_cpu_op", true);
    ++et_.stats.comp_host;
  }

  void gpu_node(Node& n, size_t row) {
    n.set_name(std::string(t_.strings.str(g_.name[row])));
    n.set_duration_micros(micros(g_.dur_ns[row]));
    if (g_.collective[row] < 0) {
      n.set_type(ChakraProtoMsg::COMP_NODE);
      ++et_.stats.comp_gpu;
    } else {
      comm_node(n, t_.collectives[static_cast<size_t>(g_.collective[row])]);
    }
    attr_i64(n, "stream", g_.stream[row]);
    attr_i64(n, "correlation", g_.correlation[row] != kNoId ? g_.correlation[row] : -1);
    attr_bool(n, "is_cpu_op", false);
  }

  // A collective: COMM_SEND / COMM_RECV (the peer when the group is this rank and one other),
  // else COMM_COLL with its comm_type; comm_size and pg_name when known.
  void comm_node(Node& n, const Collective& c) {
    RankEtStats& st = et_.stats;
    const CollType kind = c.called != CollType::kUnknown ? c.called : c.type;
    if (kind == CollType::kSend || kind == CollType::kRecv) {
      const bool send = kind == CollType::kSend;
      n.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
      ++(send ? st.send : st.recv);
      const std::vector<int64_t> ranks = parse_ranks(t_.strings.str(c.pg_ranks));
      if (ranks.size() == 2 && (ranks[0] == rank_ || ranks[1] == rank_)) {
        const int64_t peer = ranks[0] == rank_ ? ranks[1] : ranks[0];
        attr_i32(n, "comm_src", static_cast<int32_t>(send ? rank_ : peer));
        attr_i32(n, "comm_dst", static_cast<int32_t>(send ? peer : rank_));
      }
    } else {
      n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
      ++st.coll;
      const int64_t ct = comm_type_of(kind);
      if (ct >= 0)
        attr_i64(n, "comm_type", ct);
      else
        ++st.untyped_collectives;
    }
    // Bytes by NCCL's convention (analysis/collectives.cpp): all-gather's output, else input.
    const int es = dtype_size(t_.strings.str(c.dtype));
    const int64_t ne = kind == CollType::kAllGather ? c.out_nelems : c.in_nelems;
    if (es > 0 && ne >= 0) attr_i64(n, "comm_size", ne * es);
    if (c.pg_name != 0) attr_str(n, "pg_name", t_.strings.str(c.pg_name));
  }

  const RankTrace& t_;
  const HostOps& h_;
  const GpuActivities& g_;
  int64_t rank_;
  Ns offset_;
  const WriteOptions& o_;
  RankEt& et_;
  std::vector<char> host_in_;
  std::vector<int32_t> node_parent_;
  std::vector<Ns> excl_;
  std::vector<Item> items_;
  uint64_t first_id_ = 0;
  std::vector<uint64_t> host_id_, gpu_id_;
  std::vector<std::vector<uint64_t>> ctrl_, sync_;
};

// GlobalMetadata, as Chakra's PyTorch converter writes it (and the rank).
void global_metadata(const RankTrace& t, int64_t rank, Ns offset_ns, RankEt& et) {
  et.meta.set_version(kChakraVersion);
  meta_attr(et.meta, "schema", fmt::format("chopper-{}-chakra.{}", kVersion, kChakraVersion));
  meta_attr(et.meta, "pid", t.threads.empty() ? int64_t{0} : t.threads.front().pid);
  const Ns first = t.first_ns() - offset_ns, last = t.last_ns() - offset_ns;
  meta_attr(et.meta, "time", utc_text(first));
  meta_attr(et.meta, "start_ts", static_cast<int64_t>(micros(first)));
  meta_attr(et.meta, "finish_ts", static_cast<int64_t>(micros(last)));
  meta_attr(et.meta, "rank", rank);
}

}  // namespace

RankEt build_rank_et(const RankTrace& t, int64_t rank, Ns offset_ns, Ns run_start_ns,
                     const RankAnalysis* hw, const std::vector<DataDep>& data_deps,
                     const WriteOptions& o) {
  RankEt et;
  et.stats.rank = rank;
  const std::string groups = process_groups_json(t);
  if (!groups.empty()) {
    Node& m = et.nodes.emplace_back();
    m.set_id(0);
    m.set_name("process_group:init");
    m.set_type(ChakraProtoMsg::METADATA_NODE);
    m.mutable_inputs()->set_values(groups);
    ++et.stats.metadata;
  }
  Builder b(t, rank, offset_ns, o, et);
  b.select_host_ops();
  b.order_nodes(!groups.empty());
  b.control_deps();
  b.sync_deps();
  b.emit_nodes(run_start_ns, hw);
  add_data_deps(et, b.host_ids(), data_deps);
  et.stats.nodes = et.nodes.size();
  global_metadata(t, rank, offset_ns, et);
  return et;
}

uint64_t write_et(const RankEt& et, const std::string& path) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  OutputFile f(path, gz);
  std::string buf, rec;
  auto put = [&](const google::protobuf::MessageLite& m) {
    rec.clear();
    m.SerializeToString(&rec);
    uint64_t len = rec.size();
    do {
      const auto b = static_cast<uint8_t>(len & 0x7f);
      len >>= 7;
      buf.push_back(static_cast<char>(len ? (b | 0x80) : b));
    } while (len);
    buf += rec;
    if (buf.size() >= (1u << 20)) {
      f.write(buf);
      buf.clear();
    }
  };
  put(et.meta);
  for (const Node& n : et.nodes) put(n);
  f.write(buf);
  return f.commit();
}

}  // namespace chopper::chakra
