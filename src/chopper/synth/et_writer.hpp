#pragma once
// The host execution trace (ExecutionTraceObserver JSON, schema 1.1.1-chakra.0.0.4) of one
// synthetic rank, written beside its Kineto trace with `chopper synth --et`: one operator node per
// cpu_op and user_annotation the Kineto trace holds, with the same name and rf_id (the Kineto
// event's `Record function id`), under a process root and a thread node per thread. A launching
// op's inputs are its "Input Dims", "Input type" and "Concrete Inputs" in the ET's spelling (one
// 6-tuple tensor per tensor argument; its first tensor argument is the output of the thread's
// previous launching op), and it outputs one new tensor.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/base/error.hpp"

namespace chopper::synth_model {

class EtWriter {
 public:
  EtWriter(std::string path, int64_t pid, int device, double drop_dims)
      : path_(std::move(path)), device_(device), drop_dims_(drop_dims) {
    fmt::format_to(std::back_inserter(buf_),
                   "{{\"schema\": \"1.1.1-chakra.0.0.4\", \"pid\": {}, \"time\": \"2026-01-01 "
                   "00:00:00\", \"start_ts\": 0, \"nodes\": [\n{{\"id\": 1, \"name\": "
                   "\"[pytorch|profiler|execution_trace|process]\", \"ctrl_deps\": 1, {}, {}, "
                   "{}}},\n{{\"id\": 2, \"name\": \"[pytorch|profiler|execution_trace|thread]\", "
                   "\"ctrl_deps\": 1, {}, {}, {}}},\n{{\"id\": 3, \"name\": "
                   "\"[pytorch|profiler|execution_trace|thread]\", \"ctrl_deps\": 1, {}, {}, {}}}",
                   pid, kEmptyIo, kEmptyOut, attrs(0, 0), kEmptyIo, kEmptyOut, attrs(0, 1),
                   kEmptyIo, kEmptyOut, attrs(0, 2));
  }
  // Whether the launching op of External id `ext` leaves "Input Dims" out of the Kineto trace
  // (a fraction drop_dims of them, by a hash of the id).
  bool drop(int64_t ext) const {
    return drop_dims_ > 0 && static_cast<double>((static_cast<uint64_t>(ext) * 2654435761u) %
                                                 1000) < drop_dims_ * 1000;
  }
  // A node without inputs (a range, record_param_comms, ProfilerStep).
  void plain(std::string_view name, int64_t rf, bool bwd) { node(name, rf, bwd, kEmptyIo, "", 0); }
  // A launching op with its Kineto shapes; `dropped`: the Kineto trace has none.
  void launch(std::string_view name, int64_t rf, bool bwd, std::string_view dims,
              std::string_view types, std::string_view concrete, bool dropped) {
    const std::vector<std::string> d = split(dims), ty = split(types), cc = split(concrete);
    std::string values = "[", shapes = "[", ets = "[";
    int64_t& last = last_out_[bwd ? 1 : 0];
    bool first_tensor = true;
    int64_t out_elems = 1;
    for (size_t i = 0; i < d.size(); ++i) {
      const std::string t = i < ty.size() ? unquote(ty[i]) : "";
      const std::string c = i < cc.size() ? unquote(cc[i]) : "";
      if (i) {
        values += ", ";
        shapes += ", ";
        ets += ", ";
      }
      shapes += d[i];
      if (t.empty()) {
        values += "null";
        ets += "\"None\"";
      } else if (t == "Scalar") {
        if (c == "True" || c == "False") {
          values += c == "True" ? "true" : "false";
          ets += "\"Bool\"";
        } else if (is_json_number(c)) {
          values += c;
          ets += c.find_first_of(".eE") == std::string::npos ? "\"Int\"" : "\"Double\"";
        } else {
          values += "\"" + c + "\"";
          ets += "\"Double\"";
        }
      } else {
        const int64_t n = elems(d[i]);
        int64_t id = next_tensor_++;
        if (first_tensor && last > 0) id = last;
        if (first_tensor) out_elems = n;
        first_tensor = false;
        values += fmt::format("[{0}, {0}, 0, {1}, 2, \"cuda:{2}\"]", id, n, device_);
        ets += "\"Tensor(" + t + ")\"";
      }
    }
    values += "]";
    shapes += "]";
    ets += "]";
    const int64_t out = next_tensor_++;
    last = out;
    const std::string io = fmt::format(R"("inputs": {{"values": {}, "shapes": {}, "types": {}}})",
                                       values, shapes, ets);
    const std::string outs = fmt::format(
        R"j("outputs": {{"values": [[{0}, {0}, 0, {1}, 2, "cuda:{2}"]], "shapes": [[{1}]], "types": ["Tensor(c10::BFloat16)"]}})j",
        out, out_elems, device_);
    node(name, rf, bwd, io, outs, 0);
    ++operators_with_inputs_;
    dropped_ += dropped ? 1 : 0;
  }
  uint64_t operators() const { return operators_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t close() {
    buf_ += "\n], \"finish_ts\": 0}\n";
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) throw Error(path_ + ": cannot write");
    const bool ok = std::fwrite(buf_.data(), 1, buf_.size(), f) == buf_.size();
    std::fclose(f);
    if (!ok) throw Error(path_ + ": write failed");
    return buf_.size();
  }

 private:
  static constexpr std::string_view kEmptyIo =
      R"("inputs": {"values": [], "shapes": [], "types": []})";
  static constexpr std::string_view kEmptyOut =
      R"("outputs": {"values": [], "shapes": [], "types": []})";

  static std::string attrs(int64_t rf, int tid) {
    return fmt::format(
        R"("attrs": [{{"name": "rf_id", "type": "uint64", "value": {}}}, {{"name": "fw_parent", "type": "uint64", "value": 0}}, {{"name": "seq_id", "type": "int64", "value": -1}}, {{"name": "scope", "type": "uint64", "value": 0}}, {{"name": "tid", "type": "uint64", "value": {}}}, {{"name": "fw_tid", "type": "uint64", "value": 0}}, {{"name": "op_schema", "type": "string", "value": ""}}])",
        rf, tid);
  }
  void node(std::string_view name, int64_t rf, bool bwd, std::string_view io, std::string_view outs,
            int) {
    fmt::format_to(std::back_inserter(buf_),
                   ",\n{{\"id\": {}, \"name\": \"{}\", \"ctrl_deps\": {}, {}, {}, {}}}", next_id_++,
                   name, bwd ? 3 : 2, io, outs.empty() ? kEmptyOut : outs, attrs(rf, bwd ? 2 : 1));
    ++operators_;
  }
  // The top-level elements of a JSON array's text (strings without escapes, as Kineto writes
  // shapes and types).
  static std::vector<std::string> split(std::string_view a) {
    std::vector<std::string> out;
    if (a.size() < 2 || a.front() != '[') return out;
    int depth = 0;
    bool str = false;
    size_t start = 1;
    for (size_t i = 1; i + 1 < a.size(); ++i) {
      const char c = a[i];
      if (str) {
        str = c != '"';
      } else if (c == '"') {
        str = true;
      } else if (c == '[') {
        ++depth;
      } else if (c == ']') {
        --depth;
      } else if (c == ',' && depth == 0) {
        out.push_back(trim(a.substr(start, i - start)));
        start = i + 1;
      }
    }
    std::string last = trim(a.substr(start, a.size() - 1 - start));
    if (!last.empty() || !out.empty()) out.push_back(last);
    return out;
  }
  static std::string trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return std::string(s);
  }
  static std::string unquote(const std::string& s) {
    return s.size() >= 2 && s.front() == '"' ? s.substr(1, s.size() - 2) : s;
  }
  static bool is_json_number(const std::string& s) {
    if (s.empty()) return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    bool dot = false;
    for (; i < s.size(); ++i) {
      if (s[i] == '.') {
        if (dot || i + 1 >= s.size()) return false;  // "0." is not JSON
        dot = true;
      } else if (s[i] < '0' || s[i] > '9') {
        return false;
      }
    }
    return true;
  }
  static int64_t elems(const std::string& shape) {
    int64_t n = 1;
    for (const std::string& x : split(shape)) {
      if (x.empty() || x[0] == '[') return 1;
      n *= std::stoll(x);
    }
    return n;
  }

  std::string path_;
  int device_;
  double drop_dims_;
  std::string buf_;
  int64_t next_id_ = 4;
  int64_t next_tensor_ = 1;
  int64_t last_out_[2] = {0, 0};
  uint64_t operators_ = 0, operators_with_inputs_ = 0, dropped_ = 0;
};

}  // namespace chopper::synth_model
