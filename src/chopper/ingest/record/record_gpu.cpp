// chopper record's `<host>.gpu.csv` (record_gpu.hpp). Columns: time_ns (CLOCK_REALTIME ns), gpu
// (the library's index), uuid, then one metric per column, already in the unit the Metric names;
// optional columns the recorder adds when the library offers them; any other column is listed as
// "unused_field". An empty cell is a value the library could not give: counted
// ("value_not_available"), never read as 0; but for the cumulative counters (energy_j,
// nvlink_*_bytes), which the recorder reads only every counter_interval_ms: empty between reads.
#include "chopper/ingest/record/record_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "chopper/base/text.hpp"

namespace chopper::telemetry {

namespace {

constexpr std::array<std::string_view, 11> kFixed{
    "time_ns",       "gpu",    "uuid",         "power_w",      "energy_j",        "sm_clock_mhz",
    "mem_clock_mhz", "temp_c", "util_gpu_pct", "util_mem_pct", "throttle_reasons"};

struct Column {
  std::string_view name;
  Metric metric;
};
// Every column read as a metric, fixed and optional. pcie_{tx,rx}_bytes_per_s are rates, which no
// Metric holds (kPcie*Bytes are cumulative counters): they are listed as unused.
constexpr std::array<Column, 11> kMetricColumns{{
    {"power_w", Metric::kPowerW},
    {"energy_j", Metric::kEnergyJ},
    {"sm_clock_mhz", Metric::kSmClockMhz},
    {"mem_clock_mhz", Metric::kMemClockMhz},
    {"temp_c", Metric::kTempGpuC},
    {"util_gpu_pct", Metric::kUtilGpuPct},
    {"util_mem_pct", Metric::kUtilMemPct},
    {"throttle_reasons", Metric::kThrottleReasons},
    {"mem_temp_c", Metric::kTempMemC},
    {"nvlink_tx_bytes", Metric::kLinkTxBytes},
    {"nvlink_rx_bytes", Metric::kLinkRxBytes},
}};

const Column* find_column(std::string_view name) {
  for (const Column& c : kMetricColumns)
    if (c.name == name) return &c;
  return nullptr;
}

// The time of a row: the integer before its first comma (a row of `nf` fields when
// `check_layout`).
RowTime row_time(size_t nf) {
  return [nf, f = std::vector<std::string_view>()](std::string_view line, Ns& t,
                                                   bool check_layout) mutable {
    std::string_view first;
    if (line.find('"') == std::string_view::npos) {
      if (check_layout && static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1 != nf)
        return false;
      first = trim(line.substr(0, line.find(',')));
    } else {
      split_csv(line, f);
      if ((check_layout && f.size() != nf) || f.empty()) return false;
      first = f[0];
    }
    int64_t v = 0;
    if (parse_int64(first, v) != DecimalStatus::kExact || v <= 0) return false;
    t = v;
    return true;
  };
}

}  // namespace

bool record_gpu_header(const std::vector<std::string_view>& fields) {
  if (fields.size() < kFixed.size()) return false;
  for (size_t i = 0; i < kFixed.size(); ++i)
    if (fields[i] != kFixed[i]) return false;
  return true;
}

void read_record_gpu(LineReader& in, const TelemetryReadOptions& /*o*/, TelemetryData& d) {
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  std::vector<std::string_view> f;
  std::string header;
  std::vector<const Column*> cols;  // per column: its metric, or null (time, gpu, uuid, unused)
  std::string_view line;
  bool complete = true;
  while (in.next(line, complete)) {
    const uint64_t ln = in.line_no();
    if (trim(line).empty()) continue;
    if (!complete) {
      count(d, "truncated_line", ln, "the last line has no end of line (a cut write): dropped");
      break;
    }
    split_csv(line, f);
    if (header.empty()) {
      if (!record_gpu_header(f)) fail(in, "not the header of chopper record's GPU file");
      header = std::string(line);
      cols.assign(f.size(), nullptr);
      std::vector<bool> taken(kMetricCount, false);  // a column given twice: the first read
      for (size_t i = 3; i < f.size(); ++i) {        // after time_ns, gpu, uuid
        cols[i] = find_column(f[i]);
        if (cols[i] != nullptr && taken[static_cast<size_t>(cols[i]->metric)]) cols[i] = nullptr;
        if (cols[i] == nullptr)
          unused_field(d, seen, f[i], ln);
        else
          taken[static_cast<size_t>(cols[i]->metric)] = true;
      }
      in.rows_of_interest(ClockDomain::kRealtimeUtc, row_time(f.size()));
      continue;
    }
    if (line == header) continue;  // written again (a recorder restarted on the same file)
    if (f.size() != cols.size()) {
      count(d, "bad_row", ln,
            fmt::format("{} fields where the header has {}", f.size(), cols.size()));
      continue;
    }
    int64_t t = 0;
    if (parse_int64(f[0], t) != DecimalStatus::kExact || t <= 0) {
      count(d, "bad_timestamp", ln, fmt::format("time_ns '{}'", f[0]));
      continue;
    }
    int64_t idx = -1;
    if (parse_int64(f[1], idx) != DecimalStatus::kExact || idx < 0 || idx > INT32_MAX) {
      count(d, "bad_row", ln, fmt::format("GPU index '{}'", f[1]));
      continue;
    }
    GpuRef g;
    g.index = static_cast<int32_t>(idx);
    g.uuid = std::string(f[2]);
    ++d.samples;
    for (size_t i = 3; i < cols.size(); ++i) {
      const Column* c = cols[i];
      if (c == nullptr) continue;
      if (f[i].empty()) {
        // The cumulative counters are read every counter_interval_ms (record.json), not every
        // tick: empty between reads by design.
        if (c->metric == Metric::kEnergyJ || c->metric == Metric::kLinkTxBytes ||
            c->metric == Metric::kLinkRxBytes)
          continue;
        count_with(d, "value_not_available", ln,
                   [&] { return fmt::format("{} is empty (not available)", c->name); });
        continue;
      }
      double x = 0;
      std::string_view unit;
      const ValueStatus st = parse_quantity(f[i], x, unit);
      const bool mask_ok = c->metric != Metric::kThrottleReasons ||
                           (x >= 0 && x < 18446744073709551616.0);  // a 64-bit mask
      if (st != ValueStatus::kOk || !unit.empty() || !mask_ok) {
        count_with(d, st == ValueStatus::kOk ? DiagKind("bad_value") : value_status_kind(st), ln,
                   [&] { return fmt::format("{} = '{}'", c->name, f[i].substr(0, 40)); });
        continue;
      }
      b.add(b.series(i, g, c->metric, c->name, ClockDomain::kRealtimeUtc), t, x, ln);
    }
  }
  if (header.empty()) fail(in, "no header line");
  if (d.samples == 0) fail(in, "no complete data row after the header");
  b.finish();
}

}  // namespace chopper::telemetry
