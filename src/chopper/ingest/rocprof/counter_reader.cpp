// Sniffing, dispatch to the format readers, the kernel-trace join, and the helpers they share.
#include "chopper/ingest/rocprof/counter_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "chopper/base/error.hpp"
#include "chopper/base/utf8.hpp"
#include "chopper/ingest/cupti/cupti_range.hpp"
#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper {

namespace rocprof {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}
}  // namespace

bool parse_i64(std::string_view s, int64_t& out) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool parse_f64(std::string_view s, double& out) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

bool parse_agent(std::string_view s, int32_t& out) {
  s = trim(s);
  size_t end = s.size();
  size_t start = end;
  while (start > 0 && s[start - 1] >= '0' && s[start - 1] <= '9') --start;
  if (start == end || end - start > 9) return false;
  // Only a number, or a word and a number ("Agent 4", "GPU 0", "gpu-2").
  for (size_t i = 0; i < start; ++i) {
    char c = s[i];
    bool word = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == ' ' || c == '-' ||
                c == '_' || c == ':' || c == '#';
    if (!word) return false;
  }
  int64_t v = 0;
  for (size_t i = start; i < end; ++i) v = v * 10 + (s[i] - '0');
  out = static_cast<int32_t>(v);
  return true;
}

std::string example(uint64_t line_no, std::string_view text) {
  constexpr size_t kMax = 160;
  std::string out = "line " + std::to_string(line_no) + ": ";
  if (text.size() > kMax) {
    out.append(text.substr(0, kMax));
    out += "...";
  } else {
    out.append(text);
  }
  return out;
}

void Header::assign(const csv::Splitter& row) {
  names_.clear();
  index_.clear();
  for (size_t i = 0; i < row.size(); ++i) {
    names_.push_back(csv::lower(row[i]));
    index_.emplace(names_.back(), static_cast<int>(i));  // the first of duplicate names wins
  }
}

bool Header::is_repeat(const csv::Splitter& row) const {
  if (row.size() != names_.size() || names_.empty()) return false;
  for (size_t i = 0; i < row.size(); ++i)
    if (csv::lower(row[i]) != names_[i]) return false;
  return true;
}

size_t TableBuilder::add_row() {
  t_.correlation_id.push_back(-1);
  t_.dispatch_id.push_back(-1);
  t_.agent.push_back(-1);
  t_.pid.push_back(-1);
  t_.kernel.emplace_back();
  t_.start_ns.push_back(kNoTime);
  t_.end_ns.push_back(kNoTime);
  return t_.kernel.size() - 1;
}

size_t TableBuilder::counter(std::string_view name) {
  auto it = counter_index_.find(std::string(name));
  if (it != counter_index_.end()) return it->second;
  size_t c = t_.counter_names.size();
  std::string kept(name);
  repair_utf8(kept);
  t_.counter_names.push_back(kept);
  counter_index_.emplace(std::string(name), c);
  return c;
}

size_t TableBuilder::find(int64_t pid, int kind, int64_t id) const {
  auto it = rows_.find(Key{pid, id, kind});
  return it == rows_.end() ? SIZE_MAX : it->second;
}

void TableBuilder::bind(int64_t pid, int kind, int64_t id, size_t row) {
  rows_.emplace(Key{pid, id, kind}, row);
}

void TableBuilder::finish(const DiagKind* repeat_kind) {
  const size_t nc = t_.counter_names.size();
  t_.values.assign(t_.size() * nc, std::numeric_limits<double>::quiet_NaN());
  for (const Cell& c : cells_) {
    double& v = t_.values[size_t{c.row} * nc + c.counter];
    if (std::isnan(v)) {
      v = c.v;
    } else {
      v += c.v;
      if (repeat_kind != nullptr)
        t_.diagnostics.add(*repeat_kind, [&] {
          return "row " + std::to_string(c.row) + " (dispatch " +
                 std::to_string(t_.dispatch_id[c.row]) + "): " + t_.counter_names[c.counter] +
                 " repeated, summed";
        });
    }
  }
  cells_.clear();
  cells_.shrink_to_fit();
  rows_.clear();
  for (size_t r = 0; r < t_.size(); ++r) drop_implausible_counters(t_, r);
}

void drop_implausible_counters(CounterTable& t, size_t row) {
  const size_t nc = t.counter_names.size();
  if (nc == 0) return;
  double bound = kMaxCounterValue;
  const Ns s = t.start_ns[row], e = t.end_ns[row];
  if (!t.cumulative && s != kNoTime && e != kNoTime && e >= s)
    bound = std::min(bound, kMaxCountsPerNs * static_cast<double>(e - s) + kCounterSlack);
  for (size_t c = 0; c < nc; ++c) {
    double& v = t.values[row * nc + c];
    if (std::isnan(v) || (v >= 0 && v <= bound)) continue;
    t.diagnostics.add("counter_out_of_range", [&] {
      return fmt::format("dispatch {} ({}): {} = {:g}, outside [0, {:g}]: not used",
                         t.dispatch_id[row], t.kernel[row].substr(0, 60), t.counter_names[c], v,
                         bound);
    });
    v = std::numeric_limits<double>::quiet_NaN();
  }
}

void remove_rows(CounterTable& t, const std::vector<bool>& drop) {
  const size_t nc = t.counter_names.size();
  size_t k = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    if (r < drop.size() && drop[r]) continue;
    if (k != r) {
      t.correlation_id[k] = t.correlation_id[r];
      t.dispatch_id[k] = t.dispatch_id[r];
      t.agent[k] = t.agent[r];
      t.pid[k] = t.pid[r];
      t.kernel[k] = std::move(t.kernel[r]);
      t.start_ns[k] = t.start_ns[r];
      t.end_ns[k] = t.end_ns[r];
      for (size_t c = 0; c < nc; ++c) t.values[k * nc + c] = t.values[r * nc + c];
    }
    ++k;
  }
  t.correlation_id.resize(k);
  t.dispatch_id.resize(k);
  t.agent.resize(k);
  t.pid.resize(k);
  t.kernel.resize(k);
  t.start_ns.resize(k);
  t.end_ns.resize(k);
  t.values.resize(k * nc);
}

}  // namespace rocprof

namespace {

std::string_view first_line(std::string_view head) {
  if (head.size() >= 3 && head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  size_t nl = head.find('\n');
  return nl == std::string_view::npos ? head : head.substr(0, nl);
}

}  // namespace

std::string_view sniff_counters(std::string_view head) {
  std::string_view h = head;
  if (h.size() >= 3 && h.substr(0, 3) == "\xEF\xBB\xBF") h.remove_prefix(3);
  size_t i = 0;
  while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n')) ++i;
  if (i < h.size() && h[i] == '{') {
    ++i;
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == '\r' || h[i] == '\n')) ++i;
    constexpr std::string_view kKey = "\"rocprofiler-sdk-tool\"";
    if (h.substr(i, kKey.size()) == kKey) return "rocprofv3-json";
    // A Kineto trace: hardware counters when it holds CUPTI range-profiler events (known only
    // once it is read).
    return sniff_kineto_json(head) ? "cupti-range-json" : "";
  }
  if (i < h.size() && h[i] == '[') return "";
  csv::Splitter row;
  row.split(first_line(h));
  bool has_counter_name = false, has_counter_value = false, has_dispatch = false,
       has_kernel_name = false, has_start_ts = false, has_end_ts = false, has_ts_ns = false,
       has_start_ns = false, has_end_ns = false;
  for (std::string_view f : row.fields()) {
    std::string n = csv::lower(f);
    has_counter_name |= n == "counter_name";
    has_counter_value |= n == "counter_value";
    has_dispatch |= n == "dispatch_id" || n == "correlation_id";
    has_kernel_name |= n == "kernel_name";
    has_start_ts |= n == "start_timestamp";
    has_end_ts |= n == "end_timestamp";
    has_ts_ns |= n == "timestamp_ns";
    has_start_ns |= n == "start_ns";
    has_end_ns |= n == "end_ns";
  }
  if (has_counter_name && has_counter_value && has_ts_ns) return "chopper-counter-samples-csv";
  if (has_counter_name && has_counter_value && has_dispatch) return "rocprofv3-counter-csv";
  if (has_kernel_name && has_start_ts && has_end_ts && has_dispatch)
    return "rocprofv3-kernel-trace-csv";
  if (has_kernel_name && has_start_ns && has_end_ns) return "chopper-kernel-csv";
  return "";
}

CounterTable read_counters(ByteSource& src) {
  constexpr size_t kHead = size_t{64} << 10;
  std::string head(kHead, '\0');
  size_t have = 0;
  while (have < kHead) {
    size_t got = src.read(head.data() + have, kHead - have);
    if (got == 0) break;
    have += got;
  }
  head.resize(have);
  if (have == 0) throw NotATraceError(src.name(), 0, "empty file: not a counter file");
  std::string_view fmt = sniff_counters(head);
  if (fmt == "rocprofv3-counter-csv")
    return rocprof::read_counter_collection_csv(src, std::move(head));
  if (fmt == "rocprofv3-kernel-trace-csv")
    return rocprof::read_kernel_trace_csv(src, std::move(head));
  if (fmt == "rocprofv3-json") return rocprof::read_rocprof_json(src, std::move(head));
  if (fmt == "cupti-range-json") return read_cupti_ranges(src, std::move(head));
  if (fmt == "chopper-kernel-csv") return rocprof::read_chopper_kernel_csv(src, std::move(head));
  if (fmt == "chopper-counter-samples-csv")
    return rocprof::read_chopper_samples_csv(src, std::move(head));
  throw NotATraceError(src.name(), 0,
                       "not a counter file (no rocprofv3 counter/kernel-trace header, no "
                       "rocprofiler-sdk-tool JSON, no Kineto JSON, no Chopper sampling header)");
}

CounterTable read_counters_file(const std::string& path) {
  auto src = ByteSource::open_file(path);
  CounterTable t = read_counters(*src);
  t.file = path;
  for (const std::string& w : src->warnings()) t.diagnostics.add("container_warning", w);
  return t;
}

void join_kernel_trace(CounterTable& counters, const CounterTable& kt) {
  // The kernel trace's own anomalies go with the table it times (the diagnostics table lists
  // counter tables, not the kernel traces that time them): kinds prefixed "kernel_trace_",
  // examples naming the kernel trace.
  for (const Diagnostics::Entry& e : kt.diagnostics.entries()) {
    FileDiag kind{};
    if (!parse_file_diag(e.kind, kind)) throw Error("join_kernel_trace: unknown kind " + e.kind);
    for (const std::string& ex : e.examples)
      counters.diagnostics.add_prefixed("kernel_trace_", kind, kt.file + ": " + ex);
    if (e.count > e.examples.size())
      counters.diagnostics.add_count_prefixed("kernel_trace_", kind, e.count - e.examples.size());
  }
  std::unordered_map<int64_t, size_t> by_dispatch, by_corr;
  std::unordered_map<int64_t, bool> dup_dispatch, dup_corr;
  for (size_t r = 0; r < kt.size(); ++r) {
    if (kt.dispatch_id[r] >= 0 && !by_dispatch.emplace(kt.dispatch_id[r], r).second)
      dup_dispatch[kt.dispatch_id[r]] = true;
    if (kt.correlation_id[r] >= 0 && !by_corr.emplace(kt.correlation_id[r], r).second)
      dup_corr[kt.correlation_id[r]] = true;
  }
  for (size_t r = 0; r < counters.size(); ++r) {
    if (counters.start_ns[r] != kNoTime && counters.end_ns[r] != kNoTime) continue;
    size_t m = SIZE_MAX;
    bool ambiguous = false;
    if (counters.dispatch_id[r] >= 0 && !by_dispatch.empty()) {
      auto it = by_dispatch.find(counters.dispatch_id[r]);
      if (it != by_dispatch.end()) {
        m = it->second;
        ambiguous = dup_dispatch.count(counters.dispatch_id[r]) != 0;
      }
    } else if (counters.correlation_id[r] >= 0) {
      auto it = by_corr.find(counters.correlation_id[r]);
      if (it != by_corr.end()) {
        m = it->second;
        ambiguous = dup_corr.count(counters.correlation_id[r]) != 0;
      }
    }
    if (m == SIZE_MAX) {
      counters.diagnostics.add("join_unmatched", [&] {
        return "dispatch " + std::to_string(counters.dispatch_id[r]) + " correlation " +
               std::to_string(counters.correlation_id[r]) + " (" +
               counters.kernel[r].substr(0, 80) + ") not in the kernel trace";
      });
      continue;
    }
    if (ambiguous)
      counters.diagnostics.add("join_ambiguous", [&] {
        return "dispatch " + std::to_string(counters.dispatch_id[r]) +
               " appears more than once in the kernel trace; the first is used";
      });
    if (counters.start_ns[r] == kNoTime) counters.start_ns[r] = kt.start_ns[m];
    if (counters.end_ns[r] == kNoTime) counters.end_ns[r] = kt.end_ns[m];
    if (counters.kernel[r].empty()) {
      counters.kernel[r] = kt.kernel[m];
    } else if (!kt.kernel[m].empty() && kt.kernel[m] != counters.kernel[r]) {
      counters.diagnostics.add("join_kernel_mismatch", [&] {
        return "dispatch " + std::to_string(counters.dispatch_id[r]) + ": " +
               counters.kernel[r].substr(0, 60) + " vs " + kt.kernel[m].substr(0, 60);
      });
    }
    rocprof::drop_implausible_counters(counters, r);  // its duration is known now
    if (counters.agent[r] < 0) counters.agent[r] = kt.agent[m];
    if (counters.correlation_id[r] < 0) counters.correlation_id[r] = kt.correlation_id[m];
    if (counters.dispatch_id[r] < 0) counters.dispatch_id[r] = kt.dispatch_id[m];
  }
}

}  // namespace chopper
