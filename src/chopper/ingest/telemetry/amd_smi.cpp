// amd-smi output, CSV and JSON.
//
// - `amd-smi metric --csv [-w N]`: the CLI flattens its nested result per GPU into one row
//   (amdsmi_cli/amdsmi_logger.py flatten_dict): "timestamp" (int seconds, in watch mode) first,
//   "gpu", then the leaf names of each group: usage (gfx_activity, umc_activity, mm_activity),
//   power (socket_power, gfx_voltage, soc_voltage, mem_voltage, throttle_status,
//   power_management), clock (gfx_0_clk, gfx_0_min_clk, ..., mem_0_clk, ...), temperature (edge,
//   hotspot, mem), energy (total_energy_consumption), ...
// - `amd-smi monitor --csv [-w N]` (and our synthetic generator): "timestamp,gpu,power_usage,
//   hotspot_temperature,memory_temperature,gfx,gfx_clock,mem,mem_clock,...,throttle_status".
// - `amd-smi metric --json` / `monitor --json`: a list of per-GPU objects (or an object holding
//   such a list, or one JSON document per watch iteration); values are numbers, strings with
//   units, "N/A", or {"value": v, "unit": "W"}.
// The timestamp is epoch time (seconds; ms / us / ns recognized by magnitude): kRealtimeUtc.
// Without one, each snapshot (a new group starts when a GPU repeats) is at k * interval,
// kRelative.
#include <fmt/format.h>
#include <simdjson.h>

#include <array>

#include "chopper/base/error.hpp"
#include "chopper/base/text.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

namespace {

struct AmdField {
  bool ok = false;
  Metric metric = Metric::kPowerW;
  int priority = 0;
};

// The metric of a flattened amd-smi field name (lower case). `metric_layout`: names of
// `amd-smi metric`, where "mem" is the memory temperature; in `amd-smi monitor` it is the memory
// utilization.
AmdField amd_field(std::string_view n, bool metric_layout) {
  struct E {
    std::string_view name;
    Metric m;
    int prio;
  };
  static constexpr std::array<E, 24> kTable{{
      {"power_usage", Metric::kPowerW, 1},
      {"socket_power", Metric::kPowerW, 2},
      {"current_socket_power", Metric::kPowerW, 3},
      {"average_socket_power", Metric::kPowerAvgW, 1},
      {"gfx_clock", Metric::kSmClockMhz, 1},
      {"gfx_0_clk", Metric::kSmClockMhz, 2},
      {"gfx_clk", Metric::kSmClockMhz, 1},
      {"mem_clock", Metric::kMemClockMhz, 1},
      {"mem_0_clk", Metric::kMemClockMhz, 2},
      {"edge_temperature", Metric::kTempGpuC, 1},
      {"edge", Metric::kTempGpuC, 2},
      {"hotspot_temperature", Metric::kTempHotspotC, 1},
      {"hotspot", Metric::kTempHotspotC, 2},
      {"junction_temperature", Metric::kTempHotspotC, 1},
      {"memory_temperature", Metric::kTempMemC, 1},
      {"gfx", Metric::kUtilGpuPct, 1},
      {"gfx_activity", Metric::kUtilGpuPct, 2},
      {"gfx_usage", Metric::kUtilGpuPct, 1},
      {"umc_activity", Metric::kUtilMemPct, 2},
      {"mem_usage", Metric::kUtilMemPct, 1},
      {"total_energy_consumption", Metric::kEnergyJ, 2},
      {"energy", Metric::kEnergyJ, 1},
      {"throttle_status", Metric::kThrottleReasons, 1},
      {"throttle", Metric::kThrottleReasons, 1},
  }};
  if (n == "mem")
    return metric_layout ? AmdField{true, Metric::kTempMemC, 2}
                         : AmdField{true, Metric::kUtilMemPct, 1};
  for (const E& e : kTable)
    if (e.name == n) return AmdField{true, e.m, e.prio};
  return {};
}

bool monitor_layout(const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (n == "power_usage" || n == "gfx_clock" || n == "hotspot_temperature" ||
        n == "memory_temperature" || n == "mem_clock")
      return true;
  return false;
}

// Assigns snapshot numbers to rows without a time: a new snapshot starts when a GPU repeats.
struct Snapshots {
  int64_t k = 0;
  std::unordered_set<int32_t> seen;
  int64_t next(int32_t gpu) {
    if (!seen.insert(gpu).second) {
      ++k;
      seen.clear();
      seen.insert(gpu);
    }
    return k;
  }
};

// Adds one value (text, with or without unit) of field `source` to the series. `slot`: the
// field's column, for SeriesBuilder's cache (SIZE_MAX: none).
void add_value(SeriesBuilder& b, TelemetryData& d, const GpuRef& g, Metric m,
               std::string_view source, std::string_view text, std::string_view unit_hint,
               ClockDomain clock, Ns t, uint64_t ln, size_t slot = SIZE_MAX) {
  auto series = [&] {
    return slot == SIZE_MAX ? b.series(g, m, source, clock) : b.series(slot, g, m, source, clock);
  };
  double x = 0;
  if (m == Metric::kThrottleReasons) {
    const std::string_view v = trim(text);
    double dummy = 0;
    std::string_view u;
    const ValueStatus st = parse_quantity(v, dummy, u);
    if (st == ValueStatus::kNotAvailable || st == ValueStatus::kNotSupported) {
      count_with(d, value_status_kind(st), ln, [&] { return fmt::format("{} = '{}'", source, v); });
      return;
    }
    if (!parse_throttle_text(v, x)) {
      count_with(d, "bad_value", ln, [&] { return fmt::format("{} = '{}'", source, v); });
      return;
    }
    b.add(series(), t, x, ln);
    return;
  }
  std::string_view u;
  const ValueStatus st = parse_quantity(text, x, u);
  if (st != ValueStatus::kOk) {
    count_with(d, value_status_kind(st), ln,
               [&] { return fmt::format("{} = '{}'", source, trim(text)); });
    return;
  }
  if (u.empty()) u = unit_hint;
  // Energy without a unit: amd-smi prints total_energy_consumption in J.
  if (!to_metric_unit(m, u, 1.0, x)) {
    count_with(d, "unknown_unit", ln, [&] { return fmt::format("{} = '{}'", source, trim(text)); });
    return;
  }
  b.add(series(), t, x, ln);
}

}  // namespace

bool amd_header(const std::vector<std::string_view>& fields) {
  bool gpu = false, metric = false;
  for (std::string_view f : fields) {
    const std::string n = ascii_lower(trim(f));
    if (n == "gpu") gpu = true;
    if (n != "mem" && n != "gfx" && n != "energy" && amd_field(n, true).ok) metric = true;
  }
  return gpu && metric;
}

void read_amd_smi_csv(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d) {
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  std::vector<std::string_view> f;
  std::string header_text;
  std::vector<std::string> names;
  std::vector<int> role;  // -1 unused, -2 time, -3 gpu, else Metric
  int time_col = -1, gpu_col = -1;
  bool have_header = false;
  Snapshots snaps;
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
    // The usual line, a data row of the current header (whose gpu field is never a name).
    int64_t idx = -1;
    const bool row = have_header && f.size() == names.size() && gpu_col >= 0 &&
                     parse_int64(f[static_cast<size_t>(gpu_col)], idx) == DecimalStatus::kExact;
    if (!row && amd_header(f)) {
      if (have_header && header_text == line) continue;  // watch mode repeats the header
      // Rows left out before this line may have been of the other layout.
      if (have_header) in.window_unsafe(fmt::format("{}: the header changes", where(ln)));
      header_text = std::string(line);
      names.clear();
      for (std::string_view x : f) names.push_back(ascii_lower(trim(x)));
      const bool metric_layout = !monitor_layout(names);
      role.assign(names.size(), -1);
      time_col = gpu_col = -1;
      std::array<int, kMetricCount> best{}, prio{};
      best.fill(-1);
      for (size_t i = 0; i < names.size(); ++i) {
        const int ii = static_cast<int>(i);
        if (names[i] == "timestamp") {
          role[i] = -2;
          time_col = ii;
          continue;
        }
        if (names[i] == "gpu") {
          role[i] = -3;
          gpu_col = ii;
          continue;
        }
        const AmdField a = amd_field(names[i], metric_layout);
        if (!a.ok) continue;
        const auto m = static_cast<size_t>(a.metric);
        if (best[m] < 0 || a.priority > prio[m]) {
          if (best[m] >= 0) role[static_cast<size_t>(best[m])] = -1;
          best[m] = ii;
          prio[m] = a.priority;
          role[i] = static_cast<int>(a.metric);
        }
      }
      for (size_t i = 0; i < names.size(); ++i)
        if (role[i] == -1) unused_field(d, seen, f[i], ln);
      if (!have_header && time_col >= 0) {
        // Rows of interest: a row of this header has its number of fields and an epoch time.
        in.rows_of_interest(
            ClockDomain::kRealtimeUtc, [nf = names.size(), tc = static_cast<size_t>(time_col),
                                        g = std::vector<std::string_view>()](
                                           std::string_view l, Ns& t, bool check_layout) mutable {
              split_csv(l, g);
              return (!check_layout || g.size() == nf) && g.size() > tc && parse_epoch(g[tc], t);
            });
      }
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
    GpuRef g;
    if (!row || idx < 0 || idx > INT32_MAX) {
      count(d, "bad_row", ln, fmt::format("gpu '{}'", f[static_cast<size_t>(gpu_col)]));
      continue;
    }
    g.index = static_cast<int32_t>(idx);
    Ns t = 0;
    ClockDomain clock = ClockDomain::kRelative;
    if (time_col >= 0) {
      if (!parse_epoch(f[static_cast<size_t>(time_col)], t)) {
        count(d, "bad_timestamp", ln,
              fmt::format("timestamp '{}'", f[static_cast<size_t>(time_col)]));
        continue;
      }
      clock = ClockDomain::kRealtimeUtc;
    } else {
      t = snaps.next(g.index) * o.dcgmi_interval_ms * 1000000;
    }
    ++d.samples;
    for (size_t i = 0; i < f.size(); ++i) {
      if (role[i] < 0) continue;
      add_value(b, d, g, static_cast<Metric>(role[i]), names[i], f[i], "", clock, t, ln, i);
    }
  }
  if (!have_header) fail(in, "no amd-smi header line");
  if (d.samples == 0) fail(in, "no complete data row after the header");
  b.finish();
}

namespace {

struct JsonCtx {
  SeriesBuilder& b;
  TelemetryData& d;
  std::unordered_set<std::string>& seen;
  const TelemetryReadOptions& o;
  Snapshots& snaps;
  uint64_t entry = 0;  // 1-based entry number, used as the "line" of diagnostics
};

std::string json_text(simdjson::dom::element e) {
  switch (e.type()) {
    case simdjson::dom::element_type::STRING: {
      std::string_view v;
      return e.get(v) == simdjson::SUCCESS ? std::string(v) : "?";
    }
    case simdjson::dom::element_type::INT64: {
      int64_t v = 0;
      return e.get(v) == simdjson::SUCCESS ? std::to_string(v) : "?";
    }
    case simdjson::dom::element_type::UINT64: {
      uint64_t v = 0;
      return e.get(v) == simdjson::SUCCESS ? std::to_string(v) : "?";
    }
    case simdjson::dom::element_type::DOUBLE: {
      double v = 0;
      return e.get(v) == simdjson::SUCCESS ? fmt::format("{}", v) : "?";
    }
    case simdjson::dom::element_type::NULL_VALUE:
      return "N/A";
    default:
      return "?";
  }
}

// Collects the leaves of one GPU entry as (flattened name, text, unit).
struct Leaf {
  std::string name, text, unit;
};
void flatten(simdjson::dom::element e, const std::string& name, int depth, std::vector<Leaf>& out) {
  if (depth > 8) return;
  if (e.type() == simdjson::dom::element_type::OBJECT) {
    simdjson::dom::object obj;
    if (e.get(obj) != simdjson::SUCCESS) return;
    simdjson::dom::element v, u;
    if (obj["value"].get(v) == simdjson::SUCCESS) {
      std::string unit;
      if (obj["unit"].get(u) == simdjson::SUCCESS) unit = json_text(u);
      out.push_back(Leaf{name, json_text(v), unit});
      return;
    }
    for (auto field : obj) {
      const std::string key(std::string_view(field.key));
      flatten(field.value, depth <= 1 || name.empty() ? key : name + "_" + key, depth + 1, out);
    }
    return;
  }
  if (e.type() == simdjson::dom::element_type::ARRAY) return;  // per-engine lists: not read
  out.push_back(Leaf{name, json_text(e), ""});
}

void read_entry(JsonCtx& c, simdjson::dom::object obj) {
  ++c.entry;
  simdjson::dom::element ge;
  if (obj["gpu"].get(ge) != simdjson::SUCCESS) {
    count(c.d, "bad_row", c.entry, "a JSON entry without \"gpu\"");
    return;
  }
  int64_t idx = -1;
  if (parse_int64(json_text(ge), idx) != DecimalStatus::kExact || idx < 0 || idx > INT32_MAX) {
    count(c.d, "bad_row", c.entry, fmt::format("gpu '{}'", json_text(ge)));
    return;
  }
  GpuRef g;
  g.index = static_cast<int32_t>(idx);
  Ns t = 0;
  ClockDomain clock = ClockDomain::kRelative;
  simdjson::dom::element te;
  if (obj["timestamp"].get(te) == simdjson::SUCCESS) {
    if (!parse_epoch(json_text(te), t)) {
      count(c.d, "bad_timestamp", c.entry, fmt::format("timestamp '{}'", json_text(te)));
      return;
    }
    clock = ClockDomain::kRealtimeUtc;
  } else {
    t = c.snaps.next(g.index) * c.o.dcgmi_interval_ms * 1000000;
  }
  ++c.d.samples;
  bool metric_layout = false;
  for (auto field : obj)
    if (field.value.type() == simdjson::dom::element_type::OBJECT &&
        field.value["value"].error() != simdjson::SUCCESS)
      metric_layout = true;
  std::vector<Leaf> leaves;
  for (auto field : obj) {
    const std::string key(std::string_view(field.key));
    if (key == "gpu" || key == "timestamp") continue;
    // Group objects ("power": {...}) contribute their leaves under the leaf names, as the CSV
    // output flattens them.
    if (field.value.type() == simdjson::dom::element_type::OBJECT &&
        field.value["value"].error() != simdjson::SUCCESS) {
      std::vector<Leaf> sub;
      flatten(field.value, "", 1, sub);
      for (Leaf& l : sub) {
        // The temperature group's "mem" is the memory temperature; elsewhere it is ambiguous.
        if (l.name == "mem" && key != "temperature") l.name = key + "_mem";
        leaves.push_back(std::move(l));
      }
    } else {
      flatten(field.value, key, 1, leaves);
    }
  }
  std::array<int, kMetricCount> best{}, prio{};
  best.fill(-1);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const AmdField a = amd_field(leaves[i].name, metric_layout);
    if (!a.ok) continue;
    const auto m = static_cast<size_t>(a.metric);
    if (best[m] < 0 || a.priority > prio[m]) {
      best[m] = static_cast<int>(i);
      prio[m] = a.priority;
    }
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    const AmdField a = amd_field(leaves[i].name, metric_layout);
    if (!a.ok || best[static_cast<size_t>(a.metric)] != static_cast<int>(i)) {
      unused_field(c.d, c.seen, leaves[i].name, c.entry);
      continue;
    }
    add_value(c.b, c.d, g, a.metric, leaves[i].name, leaves[i].text, leaves[i].unit, clock, t,
              c.entry);
  }
}

void read_doc(JsonCtx& c, simdjson::dom::element e, int depth) {
  if (depth > 3) return;
  if (e.type() == simdjson::dom::element_type::ARRAY) {
    simdjson::dom::array arr;
    if (e.get(arr) != simdjson::SUCCESS) return;
    for (simdjson::dom::element x : arr) read_doc(c, x, depth + 1);
    return;
  }
  simdjson::dom::object obj;
  if (e.get(obj) != simdjson::SUCCESS) return;
  if (obj["gpu"].error() == simdjson::SUCCESS) {
    read_entry(c, obj);
    return;
  }
  for (auto field : obj)  // {"gpu_data": [...]}
    if (field.value.type() == simdjson::dom::element_type::ARRAY)
      read_doc(c, field.value, depth + 1);
}

}  // namespace

void read_amd_smi_json(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d) {
  std::string text;
  std::string_view line;
  bool complete = true;
  in.limit_rows(kMaxJsonBytes, &d.diagnostics);
  while (in.next(line, complete)) {
    if (text.size() + line.size() + 1 > kMaxJsonBytes)
      throw InputError(in.name(), in.line_offset(),
                       fmt::format("{}: amd-smi JSON larger than {} (the limit for a JSON "
                                   "telemetry file)",
                                   where(in.line_no()), limit_text(kMaxJsonBytes)));
    text.append(line);
    text.push_back('\n');
  }
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  Snapshots snaps;
  JsonCtx c{b, d, seen, o, snaps};
  simdjson::dom::parser parser;
  const simdjson::padded_string ps(text);
  simdjson::dom::document_stream docs;
  const size_t batch = std::max<size_t>(text.size() + 64, size_t{1} << 20);
  if (parser.parse_many(ps, batch).get(docs) != simdjson::SUCCESS)
    throw InputError(in.name(), 0, "line 1: amd-smi JSON cannot be parsed");
  for (auto it = docs.begin(); it != docs.end(); ++it) {
    simdjson::dom::element e;
    const simdjson::error_code err = (*it).get(e);
    if (err != simdjson::SUCCESS) {
      // A cut write leaves the last document incomplete: keep what came before.
      const size_t off = it.current_index();
      size_t line_no = 1;
      for (size_t i = 0; i < off && i < text.size(); ++i) line_no += text[i] == '\n' ? 1 : 0;
      if (d.samples == 0)
        throw InputError(
            in.name(), off,
            fmt::format("line {}: amd-smi JSON: {}", line_no, simdjson::error_message(err)));
      count(d, "truncated_document", line_no,
            fmt::format("amd-smi JSON: {}; what follows is dropped", simdjson::error_message(err)));
      break;
    }
    read_doc(c, e, 0);
  }
  if (docs.truncated_bytes() > 0) {
    if (d.samples == 0)
      throw InputError(in.name(), text.size() - docs.truncated_bytes(),
                       "line 1: amd-smi JSON: the document is incomplete (a cut write)");
    count(d, "truncated_document", 0,
          fmt::format("the last {} bytes are an incomplete JSON document: dropped",
                      docs.truncated_bytes()));
  }
  if (d.samples == 0) throw InputError(in.name(), 0, "line 1: no GPU entry in the amd-smi JSON");
  b.finish();
}

}  // namespace chopper::telemetry
