// rocm-smi --csv (e.g. `rocm-smi --showpower --showtemp --showclocks --showuse --csv`):
//
//   device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),
//     Temperature (Sensor memory) (C),...,sclk clock speed:,sclk clock level:,
//     mclk clock speed:,...,Current Socket Graphics Package Power (W),GPU use (%)
//   card0,35.0,40.0,38.0,...,(1900Mhz),1,(900Mhz),...,133.0,0
//
// One row per GPU per invocation. rocm-smi prints no time: if a wrapper added a column named
// timestamp / time / date (epoch seconds, ms, ... or a calendar time) it is used (kRealtimeUtc /
// kRealtimeLocal); otherwise each snapshot (a new one starts when a device repeats or the header
// is printed again) is at k * interval, ClockDomain::kRelative.
#include <fmt/format.h>

#include <array>

#include "chopper/base/text.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

namespace {

struct RocmField {
  bool ok = false;
  Metric metric = Metric::kPowerW;
  int priority = 0;
  double scale = 1.0;  // when the value has no unit
};

RocmField rocm_field(std::string_view name) {
  const std::string n = ascii_lower(trim(name));
  auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
  if (has("temperature (sensor edge)")) return {true, Metric::kTempGpuC, 1, 1.0};
  if (has("temperature (sensor junction)")) return {true, Metric::kTempHotspotC, 1, 1.0};
  if (has("temperature (sensor memory)")) return {true, Metric::kTempMemC, 1, 1.0};
  if (has("average graphics package power")) return {true, Metric::kPowerAvgW, 1, 1.0};
  if (has("current socket graphics package power")) return {true, Metric::kPowerW, 3, 1.0};
  if (has("graphics package power")) return {true, Metric::kPowerW, 2, 1.0};
  if (n.rfind("sclk clock speed", 0) == 0) return {true, Metric::kSmClockMhz, 1, 1.0};
  if (n.rfind("mclk clock speed", 0) == 0) return {true, Metric::kMemClockMhz, 1, 1.0};
  if (n == "gpu use (%)") return {true, Metric::kUtilGpuPct, 1, 1.0};
  if (n == "gpu memory use (%)" || n.rfind("memory activity", 0) == 0)
    return {true, Metric::kUtilMemPct, 1, 1.0};
  if (has("accumulated energy (uj)")) return {true, Metric::kEnergyJ, 1, 1e-6};
  return {};
}

bool is_time_name(std::string_view n) {
  return iequals(n, "timestamp") || iequals(n, "time") || iequals(n, "date");
}

}  // namespace

bool rocm_header(const std::vector<std::string_view>& fields) {
  if (fields.empty()) return false;
  size_t d = 0;
  if (is_time_name(fields[0])) d = 1;
  if (d >= fields.size() || !iequals(fields[d], "device")) return false;
  for (std::string_view f : fields)
    if (rocm_field(f).ok) return true;
  return false;
}

void read_rocm_smi(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d) {
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  std::vector<std::string_view> f;
  std::string header_text;
  std::vector<std::string> names;
  std::vector<RocmField> cols;
  int time_col = -1, dev_col = -1;
  bool have_header = false;
  int64_t snap = 0;
  bool new_snap = false;
  std::unordered_set<int32_t> in_snap;
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
    if (rocm_header(f)) {
      if (have_header) new_snap = true;  // another invocation
      if (have_header && header_text == line) continue;
      header_text = std::string(line);
      names.clear();
      cols.assign(f.size(), RocmField{});
      time_col = dev_col = -1;
      std::array<int, kMetricCount> best{}, prio{};
      best.fill(-1);
      for (size_t i = 0; i < f.size(); ++i) {
        names.emplace_back(trim(f[i]));
        const int ii = static_cast<int>(i);
        if (is_time_name(f[i])) {
          time_col = ii;
          continue;
        }
        if (iequals(f[i], "device")) {
          dev_col = ii;
          continue;
        }
        const RocmField r = rocm_field(f[i]);
        if (!r.ok) continue;
        const auto m = static_cast<size_t>(r.metric);
        if (best[m] < 0 || r.priority > prio[m]) {
          if (best[m] >= 0) cols[static_cast<size_t>(best[m])].ok = false;
          best[m] = ii;
          prio[m] = r.priority;
          cols[i] = r;
        }
      }
      for (size_t i = 0; i < f.size(); ++i)
        if (!cols[i].ok && static_cast<int>(i) != time_col && static_cast<int>(i) != dev_col)
          unused_field(d, seen, names[i], ln);
      have_header = true;
      continue;
    }
    if (!have_header) {
      count(d, "bad_row", ln, "data before any header line");
      continue;
    }
    if (f.size() != names.size()) {
      count(d, "bad_row", ln,
            fmt::format("{} fields where the header has {}", f.size(), names.size()));
      continue;
    }
    std::string_view dev = f[static_cast<size_t>(dev_col)];
    if (istarts_with(dev, "card")) dev.remove_prefix(4);
    int64_t idx = -1;
    if (parse_int64(dev, idx) != DecimalStatus::kExact || idx < 0 || idx > INT32_MAX) {
      count(d, "bad_row", ln, fmt::format("device '{}'", f[static_cast<size_t>(dev_col)]));
      continue;
    }
    GpuRef g;
    g.index = static_cast<int32_t>(idx);
    Ns t = 0;
    ClockDomain clock = ClockDomain::kRelative;
    if (time_col >= 0) {
      const std::string_view ts = f[static_cast<size_t>(time_col)];
      if (parse_calendar(ts, t)) {
        clock = ClockDomain::kRealtimeLocal;
      } else if (parse_epoch(ts, t)) {
        clock = ClockDomain::kRealtimeUtc;
      } else {
        count(d, "bad_timestamp", ln, fmt::format("timestamp '{}'", ts));
        continue;
      }
    } else {
      if (new_snap || !in_snap.insert(g.index).second) {
        if (!in_snap.empty()) ++snap;
        in_snap.clear();
        in_snap.insert(g.index);
      }
      new_snap = false;
      t = snap * o.dcgmi_interval_ms * 1000000;
    }
    ++d.samples;
    for (size_t i = 0; i < f.size(); ++i) {
      if (!cols[i].ok) continue;
      double x = 0;
      std::string_view u;
      const ValueStatus st = parse_quantity(f[i], x, u);
      if (st != ValueStatus::kOk) {
        count(d, value_status_kind(st), ln, fmt::format("{} = '{}'", names[i], f[i]));
        continue;
      }
      if (!to_metric_unit(cols[i].metric, u, cols[i].scale, x)) {
        count(d, "unknown_unit", ln, fmt::format("{} = '{}'", names[i], f[i]));
        continue;
      }
      b.add(b.series(g, cols[i].metric, names[i], clock), t, x, ln);
    }
  }
  if (!have_header) fail(in, "no rocm-smi header line");
  if (d.samples == 0) fail(in, "no complete data row after the header");
  b.finish();
}

}  // namespace chopper::telemetry
