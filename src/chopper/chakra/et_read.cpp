// Chakra ET read and checked (et.hpp). docs/formats.md, "Chakra ET".
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/chakra/et.hpp"

namespace chopper::chakra {
namespace {

// A varint32 at bytes[pos]: its value, pos moved past it. Throws naming the offset.
uint32_t read_varint32(std::string_view b, size_t& pos, const std::string& name) {
  const size_t at = pos;
  uint64_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (pos >= b.size())
      throw InputError(name, at, "truncated length prefix (the file ends inside a varint)");
    const auto c = static_cast<uint8_t>(b[pos++]);
    v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) {
      if (v > UINT32_MAX) throw InputError(name, at, "bad length prefix (varint above 2^32)");
      return static_cast<uint32_t>(v);
    }
  }
  throw InputError(name, at, "bad length prefix (varint longer than 5 bytes)");
}

// One record: its bytes, pos moved past it.
std::string_view next_record(std::string_view b, size_t& pos, const std::string& name,
                             const char* what) {
  const size_t at = pos;
  const uint32_t len = read_varint32(b, pos, name);
  if (len > b.size() - pos)
    throw InputError(name, at,
                     fmt::format("truncated {}: its length prefix says {} bytes, {} remain", what,
                                 len, b.size() - pos));
  std::string_view r = b.substr(pos, len);
  pos += len;
  return r;
}

std::string attr_text(const ChakraProtoMsg::AttributeProto& a) {
  using A = ChakraProtoMsg::AttributeProto;
  switch (a.value_case()) {
    case A::kStringVal:
      return a.string_val();
    case A::kInt64Val:
      return std::to_string(a.int64_val());
    case A::kUint64Val:
      return std::to_string(a.uint64_val());
    case A::kInt32Val:
      return std::to_string(a.int32_val());
    case A::kUint32Val:
      return std::to_string(a.uint32_val());
    case A::kBoolVal:
      return a.bool_val() ? "true" : "false";
    case A::kDoubleVal:
      return fmt::format("{}", a.double_val());
    case A::kFloatVal:
      return fmt::format("{}", a.float_val());
    default:
      return "(" + std::to_string(static_cast<int>(a.value_case())) + ")";
  }
}

// Kahn's order over `deps` (each node's parents as node indices; -1 entries skipped) with the
// smallest id first, as a feeder issues: how many were ready before any completed and the first
// `first` of them, how many were issued in all.
struct Replay {
  uint64_t initial = 0, issued = 0;
  std::vector<uint64_t> first;
};
Replay replay(const EtFile& f, const std::vector<std::vector<int32_t>>& parents, size_t first) {
  const size_t n = f.nodes.size();
  std::vector<uint32_t> pending(n, 0);
  std::vector<std::vector<int32_t>> children(n);
  for (size_t i = 0; i < n; ++i)
    for (int32_t p : parents[i])
      if (p >= 0) {
        ++pending[i];
        children[static_cast<size_t>(p)].push_back(static_cast<int32_t>(i));
      }
  using Item = std::pair<uint64_t, int32_t>;  // (id, index)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.emplace(f.nodes[i].id(), static_cast<int32_t>(i));
  Replay r;
  r.initial = ready.size();
  // What getNextIssuableNode returns before any node completes: the start set, smallest id first.
  for (auto q = ready; !q.empty() && r.first.size() < first; q.pop())
    r.first.push_back(q.top().first);
  while (!ready.empty()) {
    const auto [id, i] = ready.top();
    ready.pop();
    ++r.issued;
    for (int32_t c : children[static_cast<size_t>(i)])
      if (--pending[static_cast<size_t>(c)] == 0) ready.emplace(f.nodes[c].id(), c);
  }
  return r;
}

}  // namespace

bool is_et_name(const std::string& path) {
  auto ends = [&](std::string_view s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".et") || ends(".et.gz");
}

EtFile parse_et(std::string_view b, const std::string& name) {
  EtFile f;
  f.file = name;
  f.bytes = b.size();
  size_t pos = 0;
  if (b.empty()) throw InputError(name, 0, "empty file: no GlobalMetadata record");
  size_t at = pos;
  std::string_view rec = next_record(b, pos, name, "GlobalMetadata record");
  if (!f.meta.ParseFromArray(rec.data(), static_cast<int>(rec.size())))
    throw InputError(name, at, "the first record is not a Chakra GlobalMetadata message");
  while (pos < b.size()) {
    at = pos;
    rec = next_record(b, pos, name, "node record");
    ChakraProtoMsg::Node& n = f.nodes.emplace_back();
    if (!n.ParseFromArray(rec.data(), static_cast<int>(rec.size())))
      throw InputError(name, at,
                       fmt::format("record {} is not a Chakra Node message", f.nodes.size()));
  }
  return f;
}

EtFile read_et(const std::string& path) {
  auto src = ByteSource::open_file(path);
  std::string data;
  char buf[1 << 16];
  for (size_t got; (got = src->read(buf, sizeof buf)) > 0;) data.append(buf, got);
  EtFile f = parse_et(data, path);
  f.gzip = src->compression() != Compression::kNone;
  return f;
}

const ChakraProtoMsg::AttributeProto* find_attr(const ChakraProtoMsg::Node& n,
                                                std::string_view name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t int_attr(const ChakraProtoMsg::Node& n, std::string_view name, int64_t fallback) {
  using A = ChakraProtoMsg::AttributeProto;
  const A* a = find_attr(n, name);
  if (a == nullptr) return fallback;
  switch (a->value_case()) {
    case A::kInt64Val:
      return a->int64_val();
    case A::kInt32Val:
      return a->int32_val();
    case A::kUint32Val:
      return a->uint32_val();
    case A::kUint64Val:
      return static_cast<int64_t>(a->uint64_val());
    case A::kSint32Val:
      return a->sint32_val();
    case A::kSint64Val:
      return a->sint64_val();
    case A::kBoolVal:
      return a->bool_val() ? 1 : 0;
    default:
      return fallback;
  }
}

std::string_view node_type_name(int type) {
  return ChakraProtoMsg::NodeType_IsValid(type) ? std::string_view(ChakraProtoMsg::NodeType_Name(
                                                      static_cast<ChakraProtoMsg::NodeType>(type)))
                                                : std::string_view("UNKNOWN_NODE");
}

EtCheck check_et(const EtFile& f, size_t first) {
  EtCheck c;
  const size_t n = f.nodes.size();
  std::unordered_map<uint64_t, int32_t> index;
  index.reserve(n);
  std::map<int, uint64_t> types;
  for (size_t i = 0; i < n; ++i) {
    const auto& node = f.nodes[i];
    ++types[static_cast<int>(node.type())];
    c.data_edges += static_cast<uint64_t>(node.data_deps_size());
    c.ctrl_edges += static_cast<uint64_t>(node.ctrl_deps_size());
    if (node.start_time_micros() != 0) ++c.with_start_time;
    if (!index.emplace(node.id(), static_cast<int32_t>(i)).second)
      c.duplicate_ids.push_back(node.id());
    if (node.type() == ChakraProtoMsg::COMM_COLL_NODE) {
      EtCheck::Coll k;
      k.id = node.id();
      k.comm_type = int_attr(node, "comm_type", -1);
      k.comm_size = int_attr(node, "comm_size", -1);
      if (const auto* a = find_attr(node, "pg_name")) k.pg_name = attr_text(*a);
      c.collectives.push_back(std::move(k));
    }
  }
  std::sort(c.duplicate_ids.begin(), c.duplicate_ids.end());
  c.duplicate_ids.erase(std::unique(c.duplicate_ids.begin(), c.duplicate_ids.end()),
                        c.duplicate_ids.end());
  c.by_type.assign(types.begin(), types.end());
  // Parents as node indices: data deps alone, and data + ctrl deps.
  std::vector<std::vector<int32_t>> data(n), all(n);
  auto resolve = [&](uint64_t node, uint64_t dep, uint64_t& dangling) -> int32_t {
    auto it = index.find(dep);
    if (it != index.end()) return it->second;
    ++dangling;
    if (c.dangling_examples.size() < 5) c.dangling_examples.emplace_back(node, dep);
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const auto& node = f.nodes[i];
    for (uint64_t d : node.data_deps()) {
      const int32_t p = resolve(node.id(), d, c.dangling_data);
      data[i].push_back(p);
      all[i].push_back(p);
    }
    for (uint64_t d : node.ctrl_deps()) all[i].push_back(resolve(node.id(), d, c.dangling_ctrl));
  }
  const Replay rd = replay(f, data, first);
  c.feeder_initial = rd.initial;
  c.feeder_first = rd.first;
  c.feeder_issued = rd.issued;
  const Replay ra = replay(f, all, first);
  c.all_deps_initial = ra.initial;
  c.all_deps_first = ra.first;
  c.all_deps_issued = ra.issued;
  // Every node is issued once its (found) parents are, unless it is on or behind a cycle.
  c.in_cycles_data = n - rd.issued;
  c.in_cycles_all = n - ra.issued;
  return c;
}

std::vector<uint64_t> feeder_children(const EtFile& f, uint64_t id) {
  std::vector<uint64_t> out;
  for (const auto& node : f.nodes)
    for (uint64_t d : node.data_deps())
      if (d == id) {
        out.push_back(node.id());
        break;
      }
  return out;
}

std::vector<std::string> collective_mismatches(const std::vector<EtFile>& files,
                                               const std::vector<EtCheck>& checks,
                                               size_t max_lines) {
  std::vector<std::string> out;
  if (files.size() < 2) return out;
  size_t more = 0;
  auto add = [&](std::string s) {
    if (out.size() < max_lines)
      out.push_back(std::move(s));
    else
      ++more;
  };
  const auto& ref = checks[0].collectives;
  for (size_t k = 1; k < files.size(); ++k) {
    const auto& cs = checks[k].collectives;
    if (cs.size() != ref.size())
      add(fmt::format("{} has {} COMM_COLL nodes, {} has {}", files[k].file, cs.size(),
                      files[0].file, ref.size()));
    for (size_t i = 0; i < std::min(cs.size(), ref.size()); ++i) {
      const auto &a = ref[i], &b = cs[i];
      if (a.comm_type != b.comm_type || a.comm_size != b.comm_size || a.pg_name != b.pg_name)
        add(fmt::format(
            "collective {}: {} node {} (comm_type {}, comm_size {}, pg_name '{}') but {} node {} "
            "(comm_type {}, comm_size {}, pg_name '{}')",
            i, files[0].file, a.id, a.comm_type, a.comm_size, a.pg_name, files[k].file, b.id,
            b.comm_type, b.comm_size, b.pg_name));
    }
  }
  if (more > 0) out.push_back(fmt::format("... and {} more differences", more));
  return out;
}

std::string et_info_text(const std::vector<EtFile>& files, const std::vector<EtCheck>& checks,
                         size_t& problems) {
  std::string s;
  problems = 0;
  auto ids = [](const std::vector<uint64_t>& v) {
    std::string t;
    for (size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return t;
  };
  for (size_t k = 0; k < files.size(); ++k) {
    const EtFile& f = files[k];
    const EtCheck& c = checks[k];
    s += fmt::format("{}: Chakra ET{}, {} bytes, {} nodes\n", f.file, f.gzip ? " (gzip)" : "",
                     f.bytes, f.nodes.size());
    s += fmt::format("  metadata: version '{}'", f.meta.version());
    for (const auto& a : f.meta.attr()) s += fmt::format(", {} '{}'", a.name(), attr_text(a));
    s += "\n  nodes by type:";
    for (const auto& [t, cnt] : c.by_type) s += fmt::format(" {} {},", node_type_name(t), cnt);
    if (!c.by_type.empty()) s.pop_back();
    s += fmt::format("\n  edges: {} data deps, {} ctrl deps; {} nodes with a start time\n",
                     c.data_edges, c.ctrl_edges, c.with_start_time);
    auto check = [&](bool good, const std::string& what) {
      s += fmt::format("  {} {}\n", good ? "ok  " : "FAIL", what);
      if (!good) ++problems;
    };
    check(c.duplicate_ids.empty(),
          c.duplicate_ids.empty() ? std::string("ids unique")
                                  : fmt::format("{} ids given to several nodes (first: {})",
                                                c.duplicate_ids.size(), c.duplicate_ids.front()));
    std::string examples;
    for (const auto& [node, dep] : c.dangling_examples)
      examples += fmt::format("; node {} -> {}", node, dep);
    check(c.dangling_data == 0, fmt::format("{} data deps name no node{}", c.dangling_data,
                                            c.dangling_data > 0 ? examples : ""));
    s += c.dangling_ctrl == 0 ? std::string("  ok   ctrl deps name nodes\n")
                              : fmt::format("  note {} ctrl deps name no node{}\n", c.dangling_ctrl,
                                            c.dangling_data == 0 ? examples : "");
    check(c.in_cycles_data == 0,
          c.in_cycles_data == 0
              ? std::string("data deps acyclic")
              : fmt::format("{} nodes on or behind a cycle of data deps", c.in_cycles_data));
    s += c.in_cycles_all == 0
             ? std::string("  ok   data + ctrl deps acyclic\n")
             : fmt::format(
                   "  note {} nodes on or behind a cycle of data + ctrl deps (ctrl deps "
                   "as Chakra's converter writes them: the host-ET parent, not an order)\n",
                   c.in_cycles_all);
    s += fmt::format(
        "  feeder (data deps, smallest id first): {} issuable at start, in order {}{}; a replay "
        "issues {} of {}\n",
        c.feeder_initial, ids(c.feeder_first),
        c.feeder_initial > c.feeder_first.size() ? ", ..." : "", c.feeder_issued, f.nodes.size());
    s += fmt::format(
        "  feeder (data + ctrl deps): {} issuable at start, in order {}{}; a replay issues {} of "
        "{}\n",
        c.all_deps_initial, ids(c.all_deps_first),
        c.all_deps_initial > c.all_deps_first.size() ? ", ..." : "", c.all_deps_issued,
        f.nodes.size());
  }
  if (files.size() > 1) {
    const auto bad = collective_mismatches(files, checks);
    if (bad.empty()) {
      s += fmt::format(
          "collectives consistent across the {} files: {} COMM_COLL nodes each, same comm_type, "
          "comm_size and pg_name in the same order\n",
          files.size(), checks[0].collectives.size());
    } else {
      ++problems;
      s += "collectives NOT consistent across the files:\n";
      for (const auto& l : bad) s += "  " + l + "\n";
    }
  }
  return s;
}

}  // namespace chopper::chakra
