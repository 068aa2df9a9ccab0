// rocprofv3 --output-format json ("rocprofiler-sdk-tool"): kernel_dispatch buffer records (one row
// per dispatch, with start/end) and counter_collection callback records (the counters of a
// dispatch; rows are merged by dispatch id). Kernel names come from kernel_symbols, counter names
// from counters, agent numbers (node ids, as the CSV's Agent_Id) from agents; all are resolved at
// the end of each process object, so the order of its keys does not matter.
//
// The document is parsed with simdjson On-Demand over one padded copy of the uncompressed text (a
// rocprofv3 JSON is tens of MB where a CSV would be used for more); no DOM is built.
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper::rocprof {

namespace {

namespace od = simdjson::ondemand;

constexpr int kByDispatch = 0;
constexpr int kByCorrelation = 1;

uint64_t as_u64(od::value v) {
  od::json_type ty = v.type();
  if (ty == od::json_type::object) {  // {"handle": N}
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "handle") return f.value().get_uint64();
    }
    return 0;
  }
  return v.get_uint64();
}

int64_t as_time(od::value v) {
  uint64_t t = v.get_uint64();
  return t > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? kNoTime
                                                                        : static_cast<int64_t>(t);
}

struct Dispatch {
  int64_t corr = -1, disp = -1;
  uint64_t agent_handle = 0, kernel_id = 0;
  bool have_agent = false, have_kernel = false;
  Ns start = kNoTime, end = kNoTime;
};

void read_correlation(od::value v, Dispatch& d) {
  od::json_type ty = v.type();
  if (ty != od::json_type::object) {
    d.corr = static_cast<int64_t>(v.get_uint64());
    return;
  }
  for (auto f : v.get_object()) {
    std::string_view k = f.unescaped_key();
    if (k == "internal") d.corr = static_cast<int64_t>(f.value().get_uint64());
  }
}

void read_dispatch_info(od::value v, Dispatch& d) {
  for (auto f : v.get_object()) {
    std::string_view k = f.unescaped_key();
    if (k == "agent_id") {
      d.agent_handle = as_u64(f.value());
      d.have_agent = true;
    } else if (k == "kernel_id") {
      d.kernel_id = f.value().get_uint64();
      d.have_kernel = true;
    } else if (k == "dispatch_id") {
      d.disp = static_cast<int64_t>(f.value().get_uint64());
    }
  }
}

class JsonReader {
 public:
  JsonReader(CounterTable& t) : t_(t), b_(t) {}

  void read_root(od::document& doc) {
    for (auto f : doc.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k != "rocprofiler-sdk-tool") continue;
      od::value v = f.value();
      od::json_type ty = v.type();
      if (ty == od::json_type::array) {
        for (auto p : v.get_array()) read_process(p.value());
      } else {
        read_process(v);
      }
    }
  }

  // Resolves names and agents of the rows read since the current process began.
  void end_process() {
    for (size_t r = first_row_; r < t_.size(); ++r) {
      const Pending& p = pending_[r - first_row_];
      if (p.have_kernel) {
        auto it = kernels_.find(p.kernel_id);
        if (it != kernels_.end()) {
          t_.kernel[r] = it->second;
        } else {
          t_.diagnostics.add("unknown_kernel_id", [&] {
            return "dispatch " + std::to_string(t_.dispatch_id[r]) + ": kernel_id " +
                   std::to_string(p.kernel_id) + " not in kernel_symbols";
          });
        }
      }
      if (p.have_agent) {
        auto it = agents_.find(p.agent_handle);
        if (it != agents_.end()) {
          t_.agent[r] = it->second;
        } else {
          t_.diagnostics.add("unknown_agent", [&] {
            return "dispatch " + std::to_string(t_.dispatch_id[r]) + ": agent handle " +
                   std::to_string(p.agent_handle) + " not in agents";
          });
        }
      }
      t_.pid[r] = pid_;
      // One dispatch id with two kernel_dispatch or counter_collection records, or with records
      // of two kernels: which dispatch its counters and times belong to is unknown.
      if (p.kernel_clash || p.dispatch_records > 1 || p.counter_records > 1) {
        if (drop_.size() <= r) drop_.resize(r + 1, false);
        drop_[r] = true;
        t_.diagnostics.add("dispatch_id_repeated", [&] {
          return "dispatch " + std::to_string(t_.dispatch_id[r]) + ": " +
                 std::to_string(p.dispatch_records) + " kernel_dispatch and " +
                 std::to_string(p.counter_records) + " counter_collection records" +
                 (p.kernel_clash ? " of different kernels" : "") +
                 "; the row is not used (not joined)";
        });
        t_.diagnostics.add_count("dispatch_id_repeated",
                                 p.dispatch_records + p.counter_records - 1);
      }
    }
    for (const CounterCell& c : cells_) {
      auto it = counters_.find(c.counter_id);
      std::string name;
      if (it != counters_.end()) {
        name = it->second;
      } else {
        name = "counter_" + std::to_string(c.counter_id);
        t_.diagnostics.add("unknown_counter_id", [&] {
          return "counter id " + std::to_string(c.counter_id) + " not in counters";
        });
      }
      b_.add_cell(c.row, b_.counter(name), c.value);
    }
    cells_.clear();
    pending_.clear();
    kernels_.clear();
    agents_.clear();
    counters_.clear();
    first_row_ = t_.size();
    ++process_;
    pid_ = -1;
  }

  void finish() {
    b_.finish("counter_repeated_summed");
    if (!drop_.empty()) remove_rows(t_, drop_);
    drop_.clear();
  }
  void abandon() {
    end_process();
    finish();
  }
  size_t rows() const { return t_.size(); }

 private:
  struct Pending {
    uint64_t agent_handle = 0, kernel_id = 0;
    bool have_agent = false, have_kernel = false;
    bool kernel_clash = false;  // records of this id name different kernels
    uint64_t dispatch_records = 0, counter_records = 0;
  };
  struct CounterCell {
    size_t row;
    uint64_t counter_id;
    double value;
  };

  void read_process(od::value v) {
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "metadata") {
        for (auto m : f.value().get_object()) {
          std::string_view mk = m.unescaped_key();
          if (mk == "pid") pid_ = static_cast<int64_t>(m.value().get_uint64());
        }
      } else if (k == "agents") {
        for (auto a : f.value().get_array()) read_agent(a.value());
      } else if (k == "counters") {
        for (auto c : f.value().get_array()) read_counter_info(c.value());
      } else if (k == "kernel_symbols") {
        for (auto s : f.value().get_array()) read_symbol(s.value());
      } else if (k == "callback_records") {
        for (auto cf : f.value().get_object()) {
          std::string_view ck = cf.unescaped_key();
          if (ck != "counter_collection") continue;
          for (auto rec : cf.value().get_array()) read_counter_record(rec.value());
        }
      } else if (k == "buffer_records") {
        for (auto bf : f.value().get_object()) {
          std::string_view bk = bf.unescaped_key();
          if (bk != "kernel_dispatch") continue;
          for (auto rec : bf.value().get_array()) read_dispatch_record(rec.value());
        }
      }
    }
    end_process();
  }

  void read_agent(od::value v) {
    uint64_t handle = 0;
    int64_t node = -1, logical = -1;
    bool have_id = false;
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "id") {
        handle = as_u64(f.value());
        have_id = true;
      } else if (k == "node_id") {
        node = f.value().get_int64();
      } else if (k == "logical_node_id") {
        logical = f.value().get_int64();
      }
    }
    if (node < 0) node = logical;
    if (have_id && node >= 0 && node <= std::numeric_limits<int32_t>::max())
      agents_[handle] = static_cast<int32_t>(node);
  }

  void read_counter_info(od::value v) {
    uint64_t id = 0;
    bool have_id = false;
    std::string name;
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "id") {
        id = as_u64(f.value());
        have_id = true;
      } else if (k == "name") {
        name = std::string(std::string_view(f.value().get_string()));
      }
    }
    if (have_id && !name.empty()) counters_.emplace(id, std::move(name));
  }

  void read_symbol(od::value v) {
    uint64_t id = 0;
    bool have_id = false;
    std::string formatted, demangled, raw;
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "kernel_id") {
        id = f.value().get_uint64();
        have_id = true;
      } else if (k == "formatted_kernel_name") {
        formatted = std::string(std::string_view(f.value().get_string()));
      } else if (k == "demangled_kernel_name") {
        demangled = std::string(std::string_view(f.value().get_string()));
      } else if (k == "kernel_name") {
        raw = std::string(std::string_view(f.value().get_string()));
      }
    }
    if (!have_id) return;
    std::string& name = !formatted.empty() ? formatted : !demangled.empty() ? demangled : raw;
    kernels_[id] = std::move(name);
  }

  // A row for the dispatch (new or the one already read), with the fields `d` knows filled in.
  size_t row_for(const Dispatch& d) {
    int kind = d.disp >= 0 ? kByDispatch : kByCorrelation;
    int64_t id = d.disp >= 0 ? d.disp : d.corr;
    size_t r = b_.find(process_, kind, id);
    if (r == SIZE_MAX) {
      r = b_.add_row();
      b_.bind(process_, kind, id, r);
      pending_.emplace_back();
      t_.dispatch_id[r] = d.disp;
      t_.correlation_id[r] = d.corr;
    }
    Pending& p = pending_[r - first_row_];
    if (d.have_agent && !p.have_agent) {
      p.agent_handle = d.agent_handle;
      p.have_agent = true;
    }
    if (d.have_kernel && !p.have_kernel) {
      p.kernel_id = d.kernel_id;
      p.have_kernel = true;
    } else if (d.have_kernel && p.kernel_id != d.kernel_id) {
      p.kernel_clash = true;
    }
    if (t_.start_ns[r] == kNoTime) t_.start_ns[r] = d.start;
    if (t_.end_ns[r] == kNoTime) t_.end_ns[r] = d.end;
    return r;
  }

  void read_dispatch_record(od::value v) {
    Dispatch d;
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "correlation_id") {
        read_correlation(f.value(), d);
      } else if (k == "start_timestamp") {
        d.start = as_time(f.value());
      } else if (k == "end_timestamp") {
        d.end = as_time(f.value());
      } else if (k == "dispatch_info") {
        read_dispatch_info(f.value(), d);
      }
    }
    if (d.disp < 0 && d.corr < 0) {
      t_.diagnostics.add("missing_dispatch_id",
                         std::string("kernel_dispatch record without dispatch_id"));
      return;
    }
    if (d.start != kNoTime && d.end != kNoTime && d.end < d.start)
      t_.diagnostics.add("end_before_start", [&] {
        return "dispatch " + std::to_string(d.disp) + ": end before start";
      });
    size_t before = t_.size();
    size_t r = row_for(d);
    if (r < before && seen_dispatch_record_.size() > r && seen_dispatch_record_[r])
      t_.diagnostics.add("duplicate_dispatch", [&] {
        return "dispatch " + std::to_string(d.disp) + " has two kernel_dispatch records";
      });
    if (seen_dispatch_record_.size() <= r) seen_dispatch_record_.resize(r + 1, false);
    seen_dispatch_record_[r] = true;
    ++pending_[r - first_row_].dispatch_records;
  }

  void read_counter_record(od::value v) {
    Dispatch d;
    std::vector<std::pair<uint64_t, double>> values;
    for (auto f : v.get_object()) {
      std::string_view k = f.unescaped_key();
      if (k == "dispatch_data") {
        for (auto df : f.value().get_object()) {
          std::string_view dk = df.unescaped_key();
          if (dk == "correlation_id") {
            read_correlation(df.value(), d);
          } else if (dk == "dispatch_info") {
            read_dispatch_info(df.value(), d);
          } else if (dk == "start_timestamp") {
            d.start = as_time(df.value());
          } else if (dk == "end_timestamp") {
            d.end = as_time(df.value());
          }
        }
      } else if (k == "records") {
        for (auto rec : f.value().get_array()) {
          uint64_t id = 0;
          double val = std::numeric_limits<double>::quiet_NaN();
          bool have_id = false;
          for (auto rf : rec.value().get_object()) {
            std::string_view rk = rf.unescaped_key();
            if (rk == "counter_id") {
              id = as_u64(rf.value());
              have_id = true;
            } else if (rk == "value") {
              val = rf.value().get_double();
            }
          }
          if (!have_id || !std::isfinite(val)) {
            t_.diagnostics.add("bad_counter_value",
                               std::string("counter record without counter_id or value"));
            continue;
          }
          values.emplace_back(id, val);
        }
      }
    }
    if (d.disp < 0 && d.corr < 0) {
      t_.diagnostics.add("missing_dispatch_id",
                         std::string("counter_collection record without dispatch_id"));
      return;
    }
    size_t r = row_for(d);
    ++pending_[r - first_row_].counter_records;
    for (const auto& [id, val] : values) cells_.push_back({r, id, val});
  }

  CounterTable& t_;
  TableBuilder b_;
  int64_t pid_ = -1;
  int64_t process_ = 0;
  size_t first_row_ = 0;
  std::vector<Pending> pending_;
  std::vector<bool> seen_dispatch_record_;
  std::vector<bool> drop_;  // rows of a repeated dispatch id (end_process), removed at finish
  std::vector<CounterCell> cells_;
  std::unordered_map<uint64_t, std::string> kernels_, counters_;
  std::unordered_map<uint64_t, int32_t> agents_;
};

}  // namespace

CounterTable read_rocprof_json(ByteSource& src, std::string head) {
  return read_counter_json<JsonReader>(src, std::move(head), "rocprofv3 JSON", "rocprofv3-json",
                                       ClockDomain::kMonotonic);
}

}  // namespace chopper::rocprof
