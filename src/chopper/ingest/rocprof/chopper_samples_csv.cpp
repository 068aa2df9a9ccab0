// Chopper's device-sampling CSVs (libchopper_device_counters.so, rocprofiler-sdk device counting;
// see docs/counter_formats.md for what is documented of them and what is assumed):
//   kernel_traces_rank<r>.csv    kernel_name,start_ns,end_ns,duration_ns,agent_id,queue_id,
//                                correlation_id
//   counter_samples_rank<r>.csv  timestamp_ns,counter_name,counter_value,agent_id,<dimensions...>
// Both are on one clock (the rocprofiler-sdk timestamp, taken to be BOOTTIME like rocprofv3's).
#include <string>

#include "chopper/base/utf8.hpp"
#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper::rocprof {

namespace {
std::string_view field_of(const std::vector<std::string_view>& f, int c) {
  return c < 0 ? std::string_view{} : f[static_cast<size_t>(c)];
}
}  // namespace

CounterTable read_chopper_kernel_csv(ByteSource& src, std::string head) {
  CounterTable t;
  t.file = src.name();
  t.format = "chopper-kernel-csv";
  t.clock = ClockDomain::kMonotonic;
  TableBuilder b(t);
  Header h;
  int c_kernel = -1, c_start = -1, c_end = -1, c_dur = -1, c_agent = -1, c_corr = -1;
  bool columns_known = false;
  // The kernel name is the first column; a name with commas written without quotes is rejoined.
  int merge_col = -1;
  {
    // The header is read by read_csv_rows; the merge column must be known before the first row,
    // so it is taken from the head the sniffer saw (the first line).
    csv::Splitter first;
    std::string_view hv = head;
    if (hv.size() >= 3 && hv.substr(0, 3) == "\xEF\xBB\xBF") hv.remove_prefix(3);
    first.split(hv.substr(0, hv.find('\n')));
    for (size_t i = 0; i < first.size(); ++i)
      if (csv::lower(first[i]) == "kernel_name") merge_col = static_cast<int>(i);
  }
  read_csv_rows(
      src, std::move(head), t, h,
      [&](const std::vector<std::string_view>& f, uint64_t line_no, std::string_view l) {
        if (!columns_known) {
          c_kernel = h.col("kernel_name");
          c_start = h.col("start_ns");
          c_end = h.col("end_ns");
          c_dur = h.col("duration_ns");
          c_agent = h.col("agent_id");
          c_corr = h.col("correlation_id");
          columns_known = true;
        }
        auto bad = [&](DiagKind kind) {
          t.diagnostics.add(kind, [&] { return example(line_no, l); });
        };
        Ns start = kNoTime, end = kNoTime, dur = -1;
        if (!parse_i64(field_of(f, c_start), start) || start < 0) return bad("bad_timestamp");
        std::string_view s = field_of(f, c_end);
        if (!s.empty() && (!parse_i64(s, end) || end < 0)) return bad("bad_timestamp");
        s = field_of(f, c_dur);
        if (!s.empty() && (!parse_i64(s, dur) || dur < 0)) {
          bad("bad_duration");
          dur = -1;
        }
        if (end == kNoTime && dur >= 0) end = start + dur;
        if (end == kNoTime) return bad("bad_timestamp");
        if (dur >= 0 && end - start != dur) bad("duration_mismatch");
        int64_t corr = -1;
        s = field_of(f, c_corr);
        if (!s.empty() && !parse_i64(s, corr)) {
          bad("bad_correlation_id");
          corr = -1;
        }
        if (corr >= 0) {
          if (b.find(-1, 1, corr) != SIZE_MAX) return bad("duplicate_dispatch");
        }
        size_t r = b.add_row();
        if (corr >= 0) b.bind(-1, 1, corr, r);
        t.correlation_id[r] = corr;
        t.kernel[r] = std::string(field_of(f, c_kernel));
        repair_utf8(t.kernel[r]);
        s = field_of(f, c_agent);
        if (!s.empty() && !parse_agent(s, t.agent[r])) bad("bad_agent_id");
        t.start_ns[r] = start;
        t.end_ns[r] = end;
        if (end < start) bad("end_before_start");
      },
      merge_col);
  b.finish();
  return t;
}

CounterTable read_chopper_samples_csv(ByteSource& src, std::string head) {
  CounterTable t;
  t.file = src.name();
  t.format = "chopper-counter-samples-csv";
  t.clock = ClockDomain::kMonotonic;
  t.cumulative = true;
  TableBuilder b(t);
  Header h;
  int c_ts = -1, c_name = -1, c_value = -1, c_agent = -1;
  bool columns_known = false;
  read_csv_rows(src, std::move(head), t, h,
                [&](const std::vector<std::string_view>& f, uint64_t line_no, std::string_view l) {
                  if (!columns_known) {
                    c_ts = h.col("timestamp_ns");
                    c_name = h.col("counter_name");
                    c_value = h.col("counter_value");
                    c_agent = h.col("agent_id");
                    columns_known = true;
                  }
                  auto bad = [&](DiagKind kind) {
                    t.diagnostics.add(kind, [&] { return example(line_no, l); });
                  };
                  Ns ts = kNoTime;
                  if (!parse_i64(field_of(f, c_ts), ts) || ts < 0) return bad("bad_timestamp");
                  int32_t agent = -1;
                  std::string_view s = field_of(f, c_agent);
                  if (!s.empty() && !parse_agent(s, agent)) {
                    bad("bad_agent_id");
                    agent = -1;
                  }
                  std::string_view name = field_of(f, c_name);
                  if (name.empty()) return bad("empty_counter_name");
                  s = field_of(f, c_value);
                  if (s.empty()) return bad("empty_counter_value");
                  double v = 0;
                  if (!parse_f64(s, v)) return bad("bad_counter_value");
                  // One row per (agent, sample time); the instances (dimension columns) of a
                  // counter are summed.
                  size_t r = b.find(agent, 2, ts);
                  if (r == SIZE_MAX) {
                    r = b.add_row();
                    b.bind(agent, 2, ts, r);
                    t.agent[r] = agent;
                    t.start_ns[r] = ts;
                    t.end_ns[r] = ts;
                  }
                  b.add_cell(r, b.counter(name), v);
                });
  b.finish();
  return t;
}

}  // namespace chopper::rocprof
