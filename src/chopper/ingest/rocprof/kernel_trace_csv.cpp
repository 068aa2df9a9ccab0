// rocprofv3 kernel_trace.csv: one row per kernel dispatch with its start and end (BOOTTIME ns),
// no counters. Read by header name, so the 2024 layout (18 columns, Private/Group_Segment_Size),
// the current one (22 columns, Stream_Id, Accum_VGPR_Count) and `rocpd convert` output (Guid)
// all read.
#include <string>

#include "chopper/base/utf8.hpp"
#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper::rocprof {

CounterTable read_kernel_trace_csv(ByteSource& src, std::string head) {
  CounterTable t;
  t.file = src.name();
  t.format = "rocprofv3-kernel-trace-csv";
  t.clock = ClockDomain::kMonotonic;
  TableBuilder b(t);
  Header h;
  int c_corr = -1, c_disp = -1, c_agent = -1, c_pid = -1, c_kernel = -1, c_start = -1, c_end = -1,
      c_kind = -1;
  bool columns_known = false;
  auto field = [](const std::vector<std::string_view>& f, int c) {
    return c < 0 ? std::string_view{} : f[static_cast<size_t>(c)];
  };
  read_csv_rows(src, std::move(head), t, h,
                [&](const std::vector<std::string_view>& f, uint64_t line_no, std::string_view l) {
                  if (!columns_known) {
                    c_corr = h.col("correlation_id");
                    c_disp = h.col("dispatch_id");
                    c_agent = h.col("agent_id");
                    c_pid = h.col("process_id");
                    c_kernel = h.col("kernel_name");
                    c_start = h.col("start_timestamp");
                    c_end = h.col("end_timestamp");
                    c_kind = h.col("kind");
                    columns_known = true;
                  }
                  auto bad = [&](DiagKind kind) {
                    t.diagnostics.add(kind, [&] { return example(line_no, l); });
                  };
                  std::string_view kind = field(f, c_kind);
                  if (!kind.empty() && kind != "KERNEL_DISPATCH")
                    return bad("not_a_kernel_dispatch");
                  int64_t disp = -1, corr = -1, pid = -1;
                  std::string_view s = field(f, c_disp);
                  if (!s.empty() && !parse_i64(s, disp)) return bad("bad_dispatch_id");
                  s = field(f, c_corr);
                  if (!s.empty() && !parse_i64(s, corr)) return bad("bad_correlation_id");
                  if (disp < 0 && corr < 0) return bad("missing_dispatch_id");
                  Ns start = kNoTime, end = kNoTime;
                  if (!parse_i64(field(f, c_start), start) || !parse_i64(field(f, c_end), end) ||
                      start < 0 || end < 0)
                    return bad("bad_timestamp");
                  s = field(f, c_pid);
                  if (!s.empty() && !parse_i64(s, pid)) {
                    bad("bad_process_id");
                    pid = -1;
                  }
                  int key_kind = disp >= 0 ? 0 : 1;
                  int64_t id = disp >= 0 ? disp : corr;
                  if (b.find(pid, key_kind, id) != SIZE_MAX) return bad("duplicate_dispatch");
                  size_t r = b.add_row();
                  b.bind(pid, key_kind, id, r);
                  t.dispatch_id[r] = disp;
                  t.correlation_id[r] = corr;
                  t.pid[r] = pid;
                  t.kernel[r] = std::string(field(f, c_kernel));
                  repair_utf8(t.kernel[r]);
                  s = field(f, c_agent);
                  if (!s.empty() && !parse_agent(s, t.agent[r])) bad("bad_agent_id");
                  t.start_ns[r] = start;
                  t.end_ns[r] = end;
                  if (end < start) bad("end_before_start");
                });
  b.finish("counter_repeated_summed");
  return t;
}

}  // namespace chopper::rocprof
