#include "chopper/ingest/et/et_reader.hpp"

#include <simdjson.h>

#include <charconv>
#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/ingest/json_document.hpp"

namespace chopper {

namespace od = simdjson::ondemand;

namespace {

constexpr int kMaxDepth = 32;  // deeper values are kept as text, their tensors not looked for

std::string_view trim_ws(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view tok, int64_t& v) {
  const char* e = tok.data() + tok.size();
  auto [p, ec] = std::from_chars(tok.data(), e, v);
  return ec == std::errc() && p == e;
}

// One node's arguments as the file lists them (values, shapes and types are parallel arrays).
struct ArgLists {
  std::vector<std::string> values, shapes, types;
  std::vector<std::vector<EtTensor>> tensors;  // per value
  void clear() {
    values.clear();
    shapes.clear();
    types.clear();
    tensors.clear();
  }
};

class EtReader {
 public:
  explicit EtReader(ExecTrace& t) : t_(t) {}

  void read(od::document& doc) {
    reset();
    od::object top;
    if (doc.get_object().get(top))
      throw NotATraceError(t_.file, 0, "not a host execution trace (not a JSON object)");
    bool has_nodes = false;
    for (auto field : top) {
      std::string_view key = field.unescaped_key();
      od::value v = field.value();
      if (key == "schema") {
        t_.schema = std::string(v.get_string().value());
      } else if (key == "pid") {
        t_.pid = v.get_int64().value();
      } else if (key == "time") {
        std::string_view s;
        if (!v.get_string().get(s)) t_.time = std::string(s);
      } else if (key == "start_ts") {
        int64_t x = 0;
        if (!v.get_int64().get(x)) t_.start_ts = x;
      } else if (key == "finish_ts") {
        int64_t x = 0;
        if (!v.get_int64().get(x)) t_.finish_ts = x;
      } else if (key == "nodes") {
        od::array nodes;
        if (v.get_array().get(nodes))
          throw NotATraceError(t_.file, 0, "not a host execution trace (\"nodes\" is no array)");
        has_nodes = true;
        for (od::value n : nodes) read_node(n);
      } else {
        t_.diagnostics.add("et_unknown_attr", t_.file + ": top-level key " + std::string(key));
      }
    }
    if (!has_nodes)
      throw NotATraceError(t_.file, 0, "not a host execution trace (no \"nodes\" array)");
  }
  // Complete nodes (a node is complete once its arguments are placed).
  size_t records() const { return t_.args_end.size(); }
  // Drops a node the document broke off in the middle of (the records before it are kept).
  void trim() {
    const size_t n = t_.args_end.size();
    t_.id.resize(n);
    t_.name.resize(n);
    t_.parent.resize(n);
    t_.kind.resize(n);
    t_.rf_id.resize(n);
    t_.seq_id.resize(n);
    t_.fw_parent.resize(n);
    t_.tid.resize(n);
    t_.scope.resize(n);
    t_.op_schema.resize(n);
    t_.in_begin.resize(n);
    t_.out_begin.resize(n);
    if (t_.root != kNoRow && static_cast<size_t>(t_.root) >= n) t_.root = kNoRow;
  }

 private:
  void reset() {
    const std::string file = t_.file;
    const uint64_t bytes = t_.file_bytes;
    t_ = ExecTrace{};
    t_.file = file;
    t_.file_bytes = bytes;
  }

  // The JSON text of v, compact (", " between elements, as Kineto writes Input Dims), into out;
  // the 6-tuple tensors it holds into tensors (null: not looked for).
  void walk(od::value v, std::string& out, std::vector<EtTensor>* tensors, int depth) {
    od::json_type type = v.type().value();
    if (type == od::json_type::array) {
      od::array a = v.get_array().value();
      if (depth >= kMaxDepth) {
        out += trim_ws(a.raw_json().value());
        return;
      }
      out += '[';
      // The first six elements' tokens, to tell a tensor tuple.
      std::string_view tok[6];
      bool scalar[6] = {};
      size_t n = 0;
      for (od::value e : a) {
        if (n > 0) out += ", ";
        od::json_type et = e.type().value();
        if (et == od::json_type::array || et == od::json_type::object) {
          walk(e, out, tensors, depth + 1);
        } else {
          std::string_view s = trim_ws(e.raw_json_token());
          if (n < 6) {
            tok[n] = s;
            scalar[n] = true;
          }
          out += s;
        }
        ++n;
      }
      out += ']';
      if (tensors != nullptr && n == 6 && scalar[5] && !tok[5].empty() && tok[5][0] == '"') {
        EtTensor x;
        int64_t* f[5] = {&x.tensor_id, &x.storage_id, &x.offset, &x.num_elem, &x.elem_bytes};
        bool ok = true;
        for (size_t i = 0; i < 5 && ok; ++i) ok = scalar[i] && parse_int(tok[i], *f[i]);
        if (ok) {
          std::string_view dev = tok[5].substr(1, tok[5].size() >= 2 ? tok[5].size() - 2 : 0);
          x.device = t_.strings.intern(dev);
          tensors->push_back(x);
        }
      }
    } else if (type == od::json_type::object) {
      out += trim_ws(v.get_object().value().raw_json().value());
    } else {
      out += trim_ws(v.raw_json_token());
    }
  }

  // A JSON array of values into `dst`, each as text (and its tensors when `tensors`).
  void read_list(od::value v, std::vector<std::string>& dst,
                 std::vector<std::vector<EtTensor>>* tensors, std::string_view what) {
    od::array a;
    if (v.get_array().get(a)) {
      t_.diagnostics.add("et_value_skipped",
                         node_where() + ": " + std::string(what) + " is not an array");
      return;
    }
    for (od::value e : a) {
      std::string text;
      std::vector<EtTensor> ts;
      walk(e, text, tensors != nullptr ? &ts : nullptr, 1);
      dst.push_back(std::move(text));
      if (tensors != nullptr) tensors->push_back(std::move(ts));
    }
  }

  void read_io(od::value v, ArgLists& io, std::string_view what) {
    od::json_type type = v.type().value();
    if (type == od::json_type::array) {  // schema 1.0.1: the values alone
      read_list(v, io.values, &io.tensors, what);
      return;
    }
    od::object o;
    if (v.get_object().get(o)) {
      t_.diagnostics.add("et_value_skipped",
                         node_where() + ": " + std::string(what) + " is neither object nor array");
      return;
    }
    for (auto f : o) {
      std::string_view k = f.unescaped_key();
      if (k == "values") {
        read_list(f.value(), io.values, &io.tensors, what);
      } else if (k == "shapes") {
        read_list(f.value(), io.shapes, nullptr, what);
      } else if (k == "types") {
        read_list(f.value(), io.types, nullptr, what);
      } else if (k != "strides") {  // strides (1.1.1): not used
        t_.diagnostics.add("et_unknown_attr",
                           t_.file + ": " + std::string(what) + "." + std::string(k));
      }
    }
  }

  // Sets an attribute chopper reads; false if the name is not one.
  bool set_attr(std::string_view name, od::value v) {
    int64_t* dst = nullptr;
    if (name == "rf_id")
      dst = &t_.rf_id.back();
    else if (name == "seq_id")
      dst = &t_.seq_id.back();
    else if (name == "fw_parent")
      dst = &t_.fw_parent.back();
    else if (name == "tid")
      dst = &t_.tid.back();
    else if (name == "scope")
      dst = &t_.scope.back();
    if (dst != nullptr) {
      int64_t x = 0;
      if (v.get_int64().get(x)) {
        uint64_t u = 0;
        if (v.get_uint64().get(u)) {
          t_.diagnostics.add("et_value_skipped",
                             node_where() + ": attr " + std::string(name) + " is not an integer");
          return true;
        }
        x = static_cast<int64_t>(u);
      }
      *dst = x;
      return true;
    }
    if (name == "op_schema") {
      std::string_view s;
      if (v.get_string().get(s))
        t_.diagnostics.add("et_value_skipped", node_where() + ": attr op_schema is not a string");
      else if (!s.empty())
        t_.op_schema.back() = t_.strings.intern(s);
      return true;
    }
    // Known, of no use here, not counted as unknown: fw_tid (read by PARAM); kernel_backend,
    // kernel_file (a Triton kernel's, empty on other ops) and tensor_range, which PyTorch 2.11
    // writes on every node (36k "unknown" attributes in a 12k-node ET recorded on an H200).
    return name == "fw_tid" || name == "kernel_backend" || name == "kernel_file" ||
           name == "tensor_range";
  }

  void read_attrs(od::value v) {
    od::array a;
    if (v.get_array().get(a)) {
      t_.diagnostics.add("et_value_skipped", node_where() + ": attrs is not an array");
      return;
    }
    for (od::value e : a) {
      od::object o;
      if (e.get_object().get(o)) {
        t_.diagnostics.add("et_value_skipped", node_where() + ": an attr is not an object");
        continue;
      }
      std::string name, type;
      bool known = false;
      for (auto f : o) {
        std::string_view k = f.unescaped_key();
        if (k == "name") {
          std::string_view s;
          if (!f.value().get_string().get(s)) name = std::string(s);
        } else if (k == "type") {
          std::string_view s;
          if (!f.value().get_string().get(s)) type = std::string(s);
        } else if (k == "value") {
          // PyTorch writes name, type, value in this order.
          known = set_attr(name, f.value());
        }
      }
      if (!known)
        t_.diagnostics.add("et_unknown_attr", t_.file + ": attr " + name + " (" + type + ")");
    }
  }

  std::string node_where() const {
    return t_.file + ": node " + (t_.id.empty() ? std::string("?") : std::to_string(t_.id.back()));
  }

  void read_node(od::value nv) {
    od::object o;
    if (nv.get_object().get(o)) {
      t_.diagnostics.add("et_node_skipped", t_.file + ": a node that is not an object");
      return;
    }
    // The row is opened first (attributes write into it) and dropped without an id.
    t_.id.push_back(kNoId);
    t_.name.push_back(0);
    t_.parent.push_back(-1);
    t_.kind.push_back(EtNodeKind::kOperator);
    t_.rf_id.push_back(kNoId);
    t_.seq_id.push_back(-1);
    t_.fw_parent.push_back(0);
    t_.tid.push_back(-1);
    t_.scope.push_back(-1);
    t_.op_schema.push_back(0);
    in_.clear();
    out_.clear();
    for (auto f : o) {
      std::string_view k = f.unescaped_key();
      od::value v = f.value();
      if (k == "id") {
        int64_t x = 0;
        if (!v.get_int64().get(x)) t_.id.back() = x;
      } else if (k == "name") {
        std::string_view s;
        if (!v.get_string().get(s)) t_.name.back() = t_.strings.intern(s);
      } else if (k == "ctrl_deps" || k == "parent") {
        int64_t x = 0;
        if (!v.get_int64().get(x)) t_.parent.back() = x;
      } else if (k == "inputs") {
        read_io(v, in_, "inputs");
      } else if (k == "outputs") {
        read_io(v, out_, "outputs");
      } else if (k == "input_shapes") {
        read_list(v, in_.shapes, nullptr, k);
      } else if (k == "input_types") {
        read_list(v, in_.types, nullptr, k);
      } else if (k == "output_shapes") {
        read_list(v, out_.shapes, nullptr, k);
      } else if (k == "output_types") {
        read_list(v, out_.types, nullptr, k);
      } else if (k == "attrs") {
        read_attrs(v);
      } else if (!set_attr(k, v)) {  // schema 1.0.1: attributes as keys
        t_.diagnostics.add("et_unknown_attr", t_.file + ": node key " + std::string(k));
      }
    }
    if (t_.id.back() == kNoId) {
      t_.diagnostics.add("et_node_skipped",
                         t_.file + ": a node without an integer id, after node " +
                             (t_.id.size() >= 2 ? std::to_string(t_.id[t_.id.size() - 2])
                                                : std::string("(none)")));
      pop_row();
      return;
    }
    const std::string_view name = t_.strings.str(t_.name.back());
    if (name.find("|execution_trace|process]") != std::string_view::npos ||
        name.find("|execution_graph|process]") != std::string_view::npos ||
        name == "__ROOT_PROCESS__") {
      t_.kind.back() = EtNodeKind::kRoot;
      if (t_.root == kNoRow) t_.root = static_cast<int32_t>(t_.id.size() - 1);
    } else if (name.find("|execution_trace|thread]") != std::string_view::npos ||
               name.find("|execution_graph|thread]") != std::string_view::npos ||
               name == "__ROOT_THREAD__") {
      t_.kind.back() = EtNodeKind::kThread;
    }
    t_.in_begin.push_back(static_cast<uint32_t>(t_.args.size()));
    add_args(in_);
    t_.out_begin.push_back(static_cast<uint32_t>(t_.args.size()));
    add_args(out_);
    t_.args_end.push_back(static_cast<uint32_t>(t_.args.size()));
    // "## process_group:init ##" (older: "process_group:init").
    if (name.find("process_group:init") != std::string_view::npos && !in_.values.empty())
      read_process_groups(in_.values[0]);
  }

  void pop_row() {
    t_.id.pop_back();
    t_.name.pop_back();
    t_.parent.pop_back();
    t_.kind.pop_back();
    t_.rf_id.pop_back();
    t_.seq_id.pop_back();
    t_.fw_parent.pop_back();
    t_.tid.pop_back();
    t_.scope.pop_back();
    t_.op_schema.pop_back();
  }

  void add_args(const ArgLists& io) {
    const size_t n = std::max({io.values.size(), io.shapes.size(), io.types.size()});
    for (size_t i = 0; i < n; ++i) {
      EtArg a;
      if (i < io.values.size()) a.value = t_.strings.intern(io.values[i]);
      if (i < io.shapes.size()) a.shape = t_.strings.intern(io.shapes[i]);
      if (i < io.types.size()) {
        std::string_view ty = io.types[i];
        if (ty.size() >= 2 && ty.front() == '"') ty = ty.substr(1, ty.size() - 2);
        a.type = t_.strings.intern(ty);
      }
      a.tensor_begin = static_cast<uint32_t>(t_.arg_tensors.size());
      if (i < io.tensors.size()) {
        for (const EtTensor& x : io.tensors[i]) {
          t_.arg_tensors.push_back(static_cast<uint32_t>(t_.tensors.size()));
          t_.tensors.push_back(x);
        }
      }
      a.tensor_end = static_cast<uint32_t>(t_.arg_tensors.size());
      t_.args.push_back(a);
    }
  }

  // process_group:init's first input: a JSON string holding the list of groups
  // [{"pg_name", "pg_desc", "backend_config", "pg_size" (older: "group_size"), "ranks"}, ...].
  void read_process_groups(std::string_view value_text) {
    std::string_view inner = value_text;
    if (inner.size() < 2 || inner.front() != '"') return;
    // Unescape the JSON string by parsing it.
    simdjson::padded_string quoted(value_text);
    od::parser p1;
    std::string text;
    {
      auto d = p1.iterate(quoted);
      std::string_view s;
      if (d.error() || d.value_unsafe().get_string().get(s)) {
        t_.diagnostics.add("et_value_skipped", node_where() + ": process_group:init value");
        return;
      }
      text = std::string(s);
    }
    simdjson::padded_string body(text);
    od::parser p2;
    try {
      auto d = p2.iterate(body);
      for (od::value g : d.get_array()) {
        ProcessGroup pg;
        for (auto f : g.get_object()) {
          std::string_view k = f.unescaped_key();
          od::value v = f.value();
          if (k == "pg_name") {
            od::json_type ty = v.type().value();
            if (ty == od::json_type::string)
              pg.name = std::string(v.get_string().value());
            else
              pg.name = std::string(trim_ws(v.raw_json_token()));
          } else if (k == "pg_desc") {
            pg.desc = std::string(v.get_string().value());
          } else if (k == "backend_config") {
            pg.backend_config = std::string(v.get_string().value());
          } else if (k == "pg_size" || k == "group_size") {
            pg.size = v.get_int64().value();
          } else if (k == "ranks") {
            od::json_type ty = v.type().value();
            if (ty == od::json_type::array) {
              for (od::value r : v.get_array()) pg.ranks.push_back(r.get_int64().value());
            } else if (ty == od::json_type::object) {  // {"0": 0, "1": 1}: group rank -> rank
              for (auto r : v.get_object()) pg.ranks.push_back(r.value().get_int64().value());
            }
          }
        }
        t_.process_groups.push_back(std::move(pg));
      }
    } catch (const simdjson::simdjson_error& e) {
      t_.diagnostics.add("et_value_skipped",
                         node_where() + ": process_group:init value: " + std::string(e.what()));
    }
  }

  ExecTrace& t_;
  ArgLists in_, out_;
};

}  // namespace

ExecTrace read_host_et(ByteSource& src) {
  ExecTrace t;
  t.file = src.name();
  EtReader reader(t);
  Diagnostics diags;
  read_json_document(
      src, "", "host execution trace", diags, [&](od::document& doc) { reader.read(doc); },
      [&] { return reader.records(); });
  reader.trim();
  t.file_bytes = src.raw_size();
  t.diagnostics.merge(diags);
  return t;
}

ExecTrace read_host_et_file(const std::string& path) {
  std::unique_ptr<ByteSource> src = ByteSource::open_file(path);
  return read_host_et(*src);
}

EtHead sniff_host_et_text(std::string_view head) {
  EtHead h;
  size_t i = 0;
  while (i < head.size() &&
         (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
    ++i;
  if (i >= head.size() || head[i] != '{') return h;
  const size_t schema = head.find("\"schema\"");
  if (schema == std::string_view::npos || head.find("\"traceEvents\"") != std::string_view::npos)
    return h;
  if (head.find("\"nodes\"") == std::string_view::npos) return h;
  h.is_et = true;
  // "schema": "1.0.2-chakra.0.0.4"
  size_t q = head.find('"', head.find(':', schema) + 1);
  if (q != std::string_view::npos) {
    size_t e = head.find('"', q + 1);
    if (e != std::string_view::npos) h.schema = std::string(head.substr(q + 1, e - q - 1));
  }
  const size_t pid = head.find("\"pid\"");
  if (pid != std::string_view::npos) {
    size_t p = head.find(':', pid);
    if (p != std::string_view::npos) {
      ++p;
      while (p < head.size() && head[p] == ' ') ++p;
      size_t e = p;
      while (e < head.size() && ((head[e] >= '0' && head[e] <= '9') || head[e] == '-')) ++e;
      int64_t v = -1;
      if (parse_int(head.substr(p, e - p), v)) h.pid = v;
    }
  }
  return h;
}

EtHead sniff_host_et_file(const std::string& path) {
  try {
    std::unique_ptr<ByteSource> src = ByteSource::open_file(path);
    char buf[4096];
    size_t n = 0;
    while (n < sizeof buf) {
      const size_t k = src->read(buf + n, sizeof buf - n);
      if (k == 0) break;
      n += k;
    }
    return sniff_host_et_text(std::string_view(buf, n));
  } catch (const std::exception&) {
    return {};
  }
}

}  // namespace chopper
