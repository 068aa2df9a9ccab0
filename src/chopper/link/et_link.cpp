#include "chopper/link/et_link.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace chopper {

std::string_view et_type_as_kineto(std::string_view ty) {
  if (ty.starts_with("Tensor(") && ty.ends_with(")")) return ty.substr(7, ty.size() - 8);
  if (ty == "None" || ty.empty()) return "";
  if (ty == "Int" || ty == "Double" || ty == "Bool" || ty == "Long" || ty == "Float" ||
      ty == "Scalar")
    return "Scalar";
  return ty;  // GenericList[...], Device, String, ...: as written
}

namespace {

// A value's JSON text as Kineto's "Concrete Inputs" writes it: "" for tensors and None, a
// string's content, True/False for booleans, numbers and int lists as written.
std::string concrete_of(std::string_view type, std::string_view value) {
  if (type.starts_with("Tensor") || type.starts_with("GenericList") || value == "null") return "";
  if (value == "true") return "True";
  if (value == "false") return "False";
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    return std::string(value.substr(1, value.size() - 2));
  return std::string(value);
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

}  // namespace

void link_et_producers(ExecTrace& et) {
  const size_t n = et.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return et.id[a] < et.id[b]; });
  et.producer.assign(et.arg_tensors.size(), kNoRow);
  std::unordered_map<int64_t, int32_t> last_out;  // tensor_id -> node row
  for (uint32_t i : order) {
    for (uint32_t a = et.in_begin[i]; a < et.out_begin[i]; ++a)
      for (uint32_t k = et.args[a].tensor_begin; k < et.args[a].tensor_end; ++k) {
        auto it = last_out.find(et.tensors[et.arg_tensors[k]].tensor_id);
        if (it != last_out.end()) et.producer[k] = it->second;
      }
    for (uint32_t a = et.out_begin[i]; a < et.args_end[i]; ++a)
      for (uint32_t k = et.args[a].tensor_begin; k < et.args[a].tensor_end; ++k)
        last_out[et.tensors[et.arg_tensors[k]].tensor_id] = static_cast<int32_t>(i);
  }
}

void link_exec_trace(RankTrace& t, ExecTrace et) {
  // rf_id -> host op (cpu_op and user_annotation; python functions carry none).
  std::unordered_map<int64_t, int32_t> by_rf;
  by_rf.reserve(t.host.size());
  uint64_t host_ops = 0;  // cpu_op and user_annotation, with an rf_id or not
  for (size_t i = 0; i < t.host.size(); ++i) {
    if (t.host.kind[i] == HostKind::kPythonFunction) continue;
    ++host_ops;
    const int64_t rf = t.host.record_function_id[i];
    if (rf != kNoId) by_rf.emplace(rf, static_cast<int32_t>(i));
  }
  const size_t n = et.size();
  et.host_op.assign(n, kNoRow);
  et.operator_nodes = et.with_rf_id = et.with_counterpart = et.linked = et.shapes_from_et = 0;
  uint64_t mismatched = 0;
  std::string first_mismatch;
  for (size_t i = 0; i < n; ++i) {
    if (et.kind[i] != EtNodeKind::kOperator) continue;
    ++et.operator_nodes;
    if (et.rf_id[i] == kNoId) continue;
    ++et.with_rf_id;
    auto it = by_rf.find(et.rf_id[i]);
    if (it == by_rf.end()) continue;
    ++et.with_counterpart;
    const std::string_view en = et.strings.str(et.name[i]);
    const std::string_view kn = t.strings.str(t.host.name[static_cast<size_t>(it->second)]);
    if (en != kn) {
      if (mismatched++ == 0)
        first_mismatch = fmt::format("{}: node {} '{}' and the Kineto host op '{}' of rf_id {}",
                                     et.file, et.id[i], en, kn, et.rf_id[i]);
      continue;
    }
    ++et.linked;
    et.host_op[i] = it->second;
    // Shapes for a host op that recorded none, from a node that has inputs.
    const size_t op = static_cast<size_t>(it->second);
    if (et.out_begin[i] == et.in_begin[i]) continue;
    if (t.host.shapes[op] >= 0 && t.shapes[static_cast<size_t>(t.host.shapes[op])].input_dims != 0)
      continue;
    std::string dims = "[", types = "[", concrete = "[";
    for (uint32_t a = et.in_begin[i]; a < et.out_begin[i]; ++a) {
      const EtArg& arg = et.args[a];
      if (a > et.in_begin[i]) {
        dims += ", ";
        types += ", ";
        concrete += ", ";
      }
      const std::string_view shape = et.strings.str(arg.shape);
      dims += shape.empty() ? "[]" : shape;
      const std::string_view ty = et.strings.str(arg.type);
      json_string(types, et_type_as_kineto(ty));
      json_string(concrete, concrete_of(ty, et.strings.str(arg.value)));
    }
    dims += ']';
    types += ']';
    concrete += ']';
    InputShapes s;
    s.input_dims = t.strings.intern(dims);
    s.input_types = t.strings.intern(types);
    s.concrete_inputs = t.strings.intern(concrete);
    t.host.shapes[op] = static_cast<int32_t>(t.shapes.size());
    t.shapes.push_back(s);
    ++et.shapes_from_et;
  }
  link_et_producers(et);
  et.link_done = true;

  t.diagnostics.merge(et.diagnostics);
  if (et.operator_nodes > et.with_rf_id) {
    const uint64_t k = et.operator_nodes - et.with_rf_id;
    t.diagnostics.add("et_without_rf_id", fmt::format("{}: {} operator nodes", et.file, k));
    if (k > 1) t.diagnostics.add_count("et_without_rf_id", k - 1);
  }
  if (mismatched > 0) {
    t.diagnostics.add("et_name_mismatch", first_mismatch);
    if (mismatched > 1) t.diagnostics.add_count("et_name_mismatch", mismatched - 1);
  }
  auto pct = [](uint64_t a, uint64_t b) {
    return b == 0 ? std::string("-") : fmt::format("{:.1f}%", 100.0 * double(a) / double(b));
  };
  t.diagnostics.add("et_link",
                    fmt::format("{} (schema {}): {} of {} operator nodes with a Kineto host op of "
                                "their rf_id linked ({}); {} of all {} operator nodes ({})",
                                et.file, et.schema, et.linked, et.with_counterpart,
                                pct(et.linked, et.with_counterpart), et.linked, et.operator_nodes,
                                pct(et.linked, et.operator_nodes)));
  // A Kineto trace written before PyTorch recorded the rf_id ("Record function id", added in
  // April 2024: pytorch/pytorch#122948) has no key to join: its "Ev Idx" is the profiler's event
  // index and its "External id" a correlation id, neither of them the ET's rf_id
  // (pytorch/pytorch#122833), so no node is linked rather than linked wrongly.
  if (et.with_counterpart == 0 && by_rf.empty() && host_ops > 0)
    t.diagnostics.add("et_no_counterpart",
                      fmt::format("{}: none of its {} operator nodes can be linked: none of the "
                                  "Kineto trace's {} host ops carries a 'Record function id' "
                                  "(PyTorch writes it since April 2024); 'Ev Idx' and 'External "
                                  "id' are other counters, not the ET's rf_id: profile with a "
                                  "newer PyTorch",
                                  et.file, et.operator_nodes, host_ops));
  else if (et.with_counterpart == 0)
    t.diagnostics.add("et_no_counterpart",
                      fmt::format("{}: none of its {} operator nodes has a Kineto host op of the "
                                  "same rf_id (link rate 0): is it the same run and rank?",
                                  et.file, et.operator_nodes));
  if (et.shapes_from_et > 0) {
    t.diagnostics.add("flops_from_et", fmt::format("{}: {} host ops without Input Dims take the "
                                                   "ET's shapes",
                                                   et.file, et.shapes_from_et));
    if (et.shapes_from_et > 1) t.diagnostics.add_count("flops_from_et", et.shapes_from_et - 1);
  }
  t.exec_trace = std::make_shared<ExecTrace>(std::move(et));
}

}  // namespace chopper
