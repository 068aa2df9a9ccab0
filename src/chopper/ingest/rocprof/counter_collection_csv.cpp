// rocprofv3 counter_collection.csv: long format, one row per (dispatch, counter), gathered here
// into one row per dispatch. The header is matched by name (any order, any case), so the 2024
// layout (no Kernel_Id, no timestamps), the current one (Accum_VGPR_Count, Start_Timestamp,
// End_Timestamp) and `rocpd convert` output (a leading Guid) all read.
#include <string>

#include "chopper/base/utf8.hpp"
#include "chopper/ingest/rocprof/internal.hpp"

namespace chopper::rocprof {

namespace {
constexpr int kByDispatch = 0;
constexpr int kByCorrelation = 1;
}  // namespace

CounterTable read_counter_collection_csv(ByteSource& src, std::string head) {
  CounterTable t;
  t.file = src.name();
  t.format = "rocprofv3-counter-csv";
  t.clock = ClockDomain::kMonotonic;
  TableBuilder b(t);
  Header h;
  int c_corr = -1, c_disp = -1, c_agent = -1, c_pid = -1, c_kernel = -1, c_name = -1, c_value = -1,
      c_start = -1, c_end = -1;
  bool columns_known = false;
  std::vector<bool> repeated;  // rows whose dispatch id holds rows of several dispatches

  auto field = [](const std::vector<std::string_view>& f, int c) {
    return c < 0 ? std::string_view{} : f[static_cast<size_t>(c)];
  };

  read_csv_rows(
      src, std::move(head), t, h,
      [&](const std::vector<std::string_view>& f, uint64_t line_no, std::string_view l) {
        if (!columns_known) {
          c_corr = h.col("correlation_id");
          c_disp = h.col("dispatch_id");
          c_agent = h.col("agent_id");
          c_pid = h.col("process_id");
          c_kernel = h.col("kernel_name");
          c_name = h.col("counter_name");
          c_value = h.col("counter_value");
          c_start = h.col("start_timestamp");
          c_end = h.col("end_timestamp");
          columns_known = true;
        }
        auto bad = [&](DiagKind kind) {
          t.diagnostics.add(kind, [&] { return example(line_no, l); });
        };
        int64_t disp = -1, corr = -1, pid = -1;
        std::string_view s = field(f, c_disp);
        if (!s.empty() && !parse_i64(s, disp)) return bad("bad_dispatch_id");
        s = field(f, c_corr);
        if (!s.empty() && !parse_i64(s, corr)) return bad("bad_correlation_id");
        if (disp < 0 && corr < 0) return bad("missing_dispatch_id");
        s = field(f, c_pid);
        if (!s.empty() && !parse_i64(s, pid)) {
          bad("bad_process_id");
          pid = -1;
        }
        int kind = disp >= 0 ? kByDispatch : kByCorrelation;
        int64_t id = disp >= 0 ? disp : corr;
        size_t r = b.find(pid, kind, id);
        std::string_view kernel = field(f, c_kernel);
        if (r == SIZE_MAX) {
          r = b.add_row();
          b.bind(pid, kind, id, r);
          t.dispatch_id[r] = disp;
          t.correlation_id[r] = corr;
          t.pid[r] = pid;
          t.kernel[r] = std::string(kernel);
          repair_utf8(t.kernel[r]);
          s = field(f, c_agent);
          if (!s.empty() && !parse_agent(s, t.agent[r])) bad("bad_agent_id");
          for (int which = 0; which < 2; ++which) {
            s = field(f, which == 0 ? c_start : c_end);
            Ns v = kNoTime;
            if (s.empty()) continue;
            if (!parse_i64(s, v) || v < 0) {
              bad("bad_timestamp");
              continue;
            }
            (which == 0 ? t.start_ns[r] : t.end_ns[r]) = v;
          }
          if (t.start_ns[r] != kNoTime && t.end_ns[r] != kNoTime && t.end_ns[r] < t.start_ns[r])
            bad("end_before_start");
        } else {
          // Rows of one dispatch agree on its kernel and times; rows that do not are of several
          // dispatches under one id (ids that repeat): which counters belong to which dispatch is
          // unknown, and the id's row is removed at the end.
          bool clash = false;
          if (t.kernel[r] != kernel) {
            std::string k(kernel);
            repair_utf8(k);
            clash = k != t.kernel[r];
          }
          for (int which = 0; which < 2 && !clash; ++which) {
            s = field(f, which == 0 ? c_start : c_end);
            Ns v = kNoTime;
            const Ns have = which == 0 ? t.start_ns[r] : t.end_ns[r];
            if (!s.empty() && parse_i64(s, v) && have != kNoTime && v != have) clash = true;
          }
          if (clash) {
            if (repeated.size() <= r) repeated.resize(r + 1, false);
            repeated[r] = true;
            bad("dispatch_id_repeated");
          }
        }
        std::string_view name = field(f, c_name);
        if (name.empty()) return bad("empty_counter_name");
        size_t c = b.counter(name);
        s = field(f, c_value);
        if (s.empty()) return bad("empty_counter_value");
        double v = 0;
        if (!parse_f64(s, v)) return bad("bad_counter_value");
        b.add_cell(r, c, v);
      });
  b.finish("counter_repeated_summed");
  if (!repeated.empty()) remove_rows(t, repeated);
  return t;
}

}  // namespace chopper::rocprof
