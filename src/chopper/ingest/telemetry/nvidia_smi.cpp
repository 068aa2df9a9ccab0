// nvidia-smi --query-gpu=... --format=csv[,nounits][,noheader] [-l N | -lms N].
// Header "timestamp, index, power.draw [W], clocks.current.sm [MHz], ..." (units in brackets; with
// nounits the brackets may be absent), rows "2026/01/01 00:00:05.123, 0, 350.12 W, 1980 MHz, ...".
// Loop modes print the header once or again from time to time: any later header line is accepted
// (and may change the columns).
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "chopper/base/text.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

namespace {

struct Alias {
  std::string_view name;
  Metric metric;
  int priority;  // the highest wins when two fields give one metric
};
constexpr std::array<Alias, 17> kAliases{{
    {"power.draw.instant", Metric::kPowerW, 3},
    {"power.draw", Metric::kPowerW, 2},
    {"power.draw.average", Metric::kPowerAvgW, 1},
    {"clocks.current.sm", Metric::kSmClockMhz, 3},
    {"clocks.sm", Metric::kSmClockMhz, 3},
    {"clocks.current.graphics", Metric::kSmClockMhz, 2},
    {"clocks.gr", Metric::kSmClockMhz, 2},
    {"clocks.current.memory", Metric::kMemClockMhz, 2},
    {"clocks.mem", Metric::kMemClockMhz, 2},
    {"temperature.gpu", Metric::kTempGpuC, 1},
    {"temperature.memory", Metric::kTempMemC, 1},
    {"utilization.gpu", Metric::kUtilGpuPct, 1},
    {"utilization.memory", Metric::kUtilMemPct, 1},
    {"clocks_event_reasons.active", Metric::kThrottleReasons, 2},
    {"clocks_throttle_reasons.active", Metric::kThrottleReasons, 2},
    {"clocks_reasons.active", Metric::kThrottleReasons, 2},
    {"power.draw.instantaneous", Metric::kPowerW, 3},
}};

struct ReasonBit {
  std::string_view name;
  uint32_t bit;
};
constexpr std::array<ReasonBit, 11> kReasonBits{{
    {"gpu_idle", kThrottleGpuIdle},
    {"applications_clocks_setting", kThrottleAppClocks},
    {"sw_power_cap", kThrottleSwPowerCap},
    {"hw_slowdown", kThrottleHwSlowdown},
    {"sync_boost", kThrottleSyncBoost},
    {"sw_thermal_slowdown", kThrottleSwThermal},
    {"hw_thermal_slowdown", kThrottleHwThermal},
    {"hw_power_brake_slowdown", kThrottleHwPowerBrake},
    {"display_clock_setting", kThrottleDisplayClocks},
    {"sw_thermal", kThrottleSwThermal},
    {"hw_thermal", kThrottleHwThermal},
}};

// "power.draw [W]" -> "power.draw", "W".
void split_name(std::string_view f, std::string& base, std::string& unit) {
  f = trim(f);
  unit.clear();
  const size_t lb = f.rfind(" [");
  if (lb != std::string_view::npos && f.back() == ']') {
    unit = std::string(trim(f.substr(lb + 2, f.size() - lb - 3)));
    f = trim(f.substr(0, lb));
  }
  base = ascii_lower(f);
}

const Alias* find_alias(std::string_view base) {
  for (const Alias& a : kAliases)
    if (a.name == base) return &a;
  return nullptr;
}

// The reason bit of "clocks_event_reasons.sw_power_cap" (0 if not such a field).
uint32_t reason_bit(std::string_view base) {
  for (std::string_view p :
       {"clocks_event_reasons.", "clocks_throttle_reasons.", "clocks_reasons."}) {
    if (base.substr(0, p.size()) == p) {
      const std::string_view r = base.substr(p.size());
      for (const ReasonBit& b : kReasonBits)
        if (b.name == r) return b.bit;
    }
  }
  return 0;
}

enum class Role : uint8_t { kUnused, kTime, kIndex, kBus, kUuid, kMetric, kReasonBit };

struct Column {
  Role role = Role::kUnused;
  Metric metric = Metric::kPowerW;
  uint32_t bit = 0;
  std::string source;  // as written
  std::string unit;    // from the header, "" if none
  // The last unit met in this column and its factor to the metric's unit (rows repeat it).
  std::string memo_unit;
  double memo_scale = 0;
  bool memo = false;
};

struct Header {
  std::string text;
  std::vector<Column> cols;
  int time = -1, index = -1, bus = -1, uuid = -1, throttle = -1;
  bool any_reason_bit = false;
};

bool build_header(std::string_view line, const std::vector<std::string_view>& f, Header& h,
                  TelemetryData& d, std::unordered_set<std::string>& seen, uint64_t line_no) {
  h = Header{};
  h.text = std::string(line);
  h.cols.resize(f.size());
  std::array<int, kMetricCount> best{};
  std::array<int, kMetricCount> best_prio{};
  best.fill(-1);
  std::string base, unit;
  for (size_t i = 0; i < f.size(); ++i) {
    split_name(f[i], base, unit);
    Column& c = h.cols[i];
    c.source = std::string(trim(f[i]));
    c.unit = unit;
    const int ii = static_cast<int>(i);
    if (base == "timestamp") {
      c.role = Role::kTime;
      h.time = ii;
    } else if (base == "index") {
      c.role = Role::kIndex;
      h.index = ii;
    } else if (base == "pci.bus_id" || base == "gpu_bus_id") {
      c.role = Role::kBus;
      h.bus = ii;
    } else if (base == "uuid" || base == "gpu_uuid") {
      c.role = Role::kUuid;
      h.uuid = ii;
    } else if (const Alias* a = find_alias(base)) {
      c.role = Role::kMetric;
      c.metric = a->metric;
      const auto m = static_cast<size_t>(a->metric);
      if (best[m] < 0 || a->priority > best_prio[m]) {
        if (best[m] >= 0) h.cols[static_cast<size_t>(best[m])].role = Role::kUnused;
        best[m] = ii;
        best_prio[m] = a->priority;
      } else {
        c.role = Role::kUnused;
      }
    } else if (const uint32_t bit = reason_bit(base)) {
      c.role = Role::kReasonBit;
      c.bit = bit;
      h.any_reason_bit = true;
    }
  }
  h.throttle = best[static_cast<size_t>(Metric::kThrottleReasons)];
  bool any_metric = h.any_reason_bit;
  for (const Column& c : h.cols) {
    if (c.role == Role::kMetric) any_metric = true;
    if (c.role == Role::kUnused) unused_field(d, seen, c.source, line_no);
  }
  return any_metric;
}

bool is_header_line(const std::vector<std::string_view>& f) {
  if (f.empty()) return false;
  std::string base, unit;
  split_name(f[0], base, unit);
  return base == "timestamp" || base == "index" || nvidia_header(f);
}

// A data row's time for the rows of interest, without parsing the rest of the row: a row of this
// header has its number of fields and a timestamp in its time column.
RowTime row_time(const Header& h) {
  return [nf = h.cols.size(), tc = static_cast<size_t>(h.time), f = std::vector<std::string_view>(),
          stamp = CalendarMemo()](std::string_view line, Ns& t, bool check_layout) mutable {
    if (line.find('"') == std::string_view::npos) {
      if (check_layout && static_cast<size_t>(std::count(line.begin(), line.end(), ',')) + 1 != nf)
        return false;
      size_t b = 0;
      for (size_t k = 0; k < tc; ++k) b = line.find(',', b) + 1;
      const size_t e = line.find(',', b);
      return stamp.parse(trim(line.substr(b, e == std::string_view::npos ? e : e - b)), t);
    }
    split_csv(line, f);
    return (!check_layout || f.size() == nf) && f.size() > tc && stamp.parse(f[tc], t);
  };
}

}  // namespace

bool nvidia_header(const std::vector<std::string_view>& fields) {
  std::string base, unit;
  for (std::string_view f : fields) {
    split_name(f, base, unit);
    if (find_alias(base) != nullptr || reason_bit(base) != 0) return true;
  }
  return false;
}

// One data row's samples: every metric field (in the metric's unit), and the throttle reasons (the
// mask field OR the individual reason fields).
void add_row(SeriesBuilder& b, TelemetryData& d, Header& h, const std::vector<std::string_view>& f,
             const GpuRef& g, Ns t, uint64_t ln) {
  uint32_t folded = 0;
  bool folded_any = false;
  for (size_t i = 0; i < h.cols.size(); ++i) {
    const Column& c = h.cols[i];
    if (c.role == Role::kReasonBit) {
      const std::string_view v = trim(f[i]);
      if (iequals(v, "Active")) {
        folded |= c.bit;
        folded_any = true;
      } else if (iequals(v, "Not Active")) {
        folded_any = true;
      } else {
        double x = 0;
        std::string_view u;
        const ValueStatus st = parse_quantity(v, x, u);
        count_with(d, st == ValueStatus::kOk ? DiagKind("bad_value") : value_status_kind(st), ln,
                   [&] { return fmt::format("{} = '{}'", c.source, v); });
      }
      continue;
    }
    if (c.role != Role::kMetric) continue;
    double x = 0;
    std::string_view u;
    const ValueStatus st = parse_quantity(f[i], x, u);
    if (st != ValueStatus::kOk) {
      count_with(d, value_status_kind(st), ln,
                 [&] { return fmt::format("{} = '{}'", c.source, f[i]); });
      continue;
    }
    if (c.metric == Metric::kThrottleReasons) {
      if (!u.empty() || x < 0) {
        count_with(d, "bad_value", ln, [&] { return fmt::format("{} = '{}'", c.source, f[i]); });
        continue;
      }
      continue;  // added below with the folded reason fields
    }
    const std::string_view unit = u.empty() ? std::string_view(c.unit) : u;
    Column& cm = h.cols[i];
    if (!cm.memo || unit != cm.memo_unit) {
      cm.memo_scale = 1.0;
      if (!to_metric_unit(c.metric, unit, 1.0, cm.memo_scale)) cm.memo_scale = 0;
      cm.memo_unit.assign(unit);
      cm.memo = true;
    }
    if (cm.memo_scale == 0) {
      count_with(d, "unknown_unit", ln, [&] { return fmt::format("{} = '{}'", c.source, f[i]); });
      continue;
    }
    x *= cm.memo_scale;
    b.add(b.series(i, g, c.metric, c.source, ClockDomain::kRealtimeLocal), t, x, ln);
  }
  // Throttle reasons: the mask field, OR the individual reason fields.
  double mask = 0;
  bool have_mask = false;
  if (h.throttle >= 0) {
    std::string_view u;
    if (parse_quantity(f[static_cast<size_t>(h.throttle)], mask, u) == ValueStatus::kOk &&
        u.empty()) {
      if (mask >= 0 && mask < 18446744073709551616.0)  // a 64-bit mask
        have_mask = true;
      else
        count_with(d, "bad_value", ln, [&] {
          return fmt::format("throttle mask '{}' is not a 64-bit mask",
                             f[static_cast<size_t>(h.throttle)].substr(0, 40));
        });
    }
  }
  if (have_mask || folded_any) {
    const uint64_t m = (have_mask ? static_cast<uint64_t>(mask) : 0) | folded;
    const std::string_view src =
        h.throttle >= 0 ? std::string_view(h.cols[static_cast<size_t>(h.throttle)].source)
                        : std::string_view("clocks_event_reasons.*");
    b.add(b.series(h.cols.size(), g, Metric::kThrottleReasons, src, ClockDomain::kRealtimeLocal), t,
          static_cast<double>(m), ln);
  }
}

void read_nvidia_smi(LineReader& in, const TelemetryReadOptions& /*o*/, TelemetryData& d) {
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  CalendarMemo stamp;
  Header h;
  bool have_header = false;
  std::vector<std::string_view> f;
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
    Ns t = 0;
    // The usual line, a data row of the current header (whose time field is never a name).
    const bool row =
        have_header && f.size() == h.cols.size() && stamp.parse(f[static_cast<size_t>(h.time)], t);
    if (!row && is_header_line(f)) {
      if (have_header && h.text == line) continue;  // loop mode repeats the header
      // Rows left out before this line may have been of the other layout.
      if (have_header) in.window_unsafe(fmt::format("{}: the header changes", where(ln)));
      if (!build_header(line, f, h, d, seen, ln))
        fail(in, "no known nvidia-smi field in the header");
      if (h.time < 0) fail(in, "no timestamp field (query it with --query-gpu=timestamp,...)");
      if (!have_header) in.rows_of_interest(ClockDomain::kRealtimeLocal, row_time(h));
      have_header = true;
      continue;
    }
    if (!have_header) {
      count(d, "bad_row", ln, "data before any header line");
      continue;
    }
    if (f.size() != h.cols.size()) {
      count(d, "bad_row", ln,
            fmt::format("{} fields where the header has {}", f.size(), h.cols.size()));
      continue;
    }
    if (!row) {
      count(d, "bad_timestamp", ln, fmt::format("timestamp '{}'", f[static_cast<size_t>(h.time)]));
      continue;
    }
    GpuRef g;
    if (h.index >= 0) {
      int64_t idx = -1;
      if (parse_int64(f[static_cast<size_t>(h.index)], idx) != DecimalStatus::kExact || idx < 0 ||
          idx > INT32_MAX) {
        count(d, "bad_row", ln, fmt::format("GPU index '{}'", f[static_cast<size_t>(h.index)]));
        continue;
      }
      g.index = static_cast<int32_t>(idx);
    }
    if (h.bus >= 0) g.bus_id = std::string(f[static_cast<size_t>(h.bus)]);
    if (h.uuid >= 0) g.uuid = std::string(f[static_cast<size_t>(h.uuid)]);
    ++d.samples;
    add_row(b, d, h, f, g, t, ln);
  }
  if (!have_header) fail(in, "no nvidia-smi header line");
  if (d.samples == 0) fail(in, "no complete data row after the header");
  b.finish();
}

}  // namespace chopper::telemetry
