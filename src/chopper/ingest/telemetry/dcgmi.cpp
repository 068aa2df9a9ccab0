// dcgmi dmon text output (`dcgmi dmon -e 155,156,100,101,150,140,203,204 -d 1000`):
//
//   #Entity   POWER    TOTEC       SMCLK  MMCLK  GTEMP  MTEMP  GPUTL  MCUTL
//   ID        W        mJ          MHZ    MHZ    C      C      %      %
//   GPU 0     250.300  123456789   1980   2619   45     52     97     40
//   GPU 1     N/A      ...
//
// The two header lines come back from time to time; values are whitespace-separated, the entity
// is two tokens ("GPU 0"; MIG instances "GPU-I 3", "GPU-CI 1" are skipped and counted). dcgmi
// prints no time: sample group k (a group ends when an entity repeats) is at k * interval,
// ClockDomain::kRelative. A wrapper that prefixes each line with epoch seconds ("1777708107.135
// GPU 0 ...") or a calendar time ("2026-01-01T00:00:05.123") gives kRealtimeUtc /
// kRealtimeLocal times instead.
#include <fmt/format.h>

#include <array>

#include "chopper/base/text.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

namespace {

struct DcgmField {
  std::string_view tag;
  Metric metric;
  double scale;  // from the field's unit to the metric's, when the ID line gives none
};
// DCGM field short names: 155 POWER (W), 156 TOTEC (mJ), 100 SMCLK, 101 MMCLK (MHz), 150 GTEMP /
// TMPTR (C), 140 MTEMP / MMTMP (C), 203 GPUTL, 204 MCUTL (%).
constexpr std::array<DcgmField, 10> kFields{{
    {"POWER", Metric::kPowerW, 1.0},
    {"TOTEC", Metric::kEnergyJ, 1e-3},
    {"SMCLK", Metric::kSmClockMhz, 1.0},
    {"MMCLK", Metric::kMemClockMhz, 1.0},
    {"GTEMP", Metric::kTempGpuC, 1.0},
    {"TMPTR", Metric::kTempGpuC, 1.0},
    {"MTEMP", Metric::kTempMemC, 1.0},
    {"MMTMP", Metric::kTempMemC, 1.0},
    {"GPUTL", Metric::kUtilGpuPct, 1.0},
    {"MCUTL", Metric::kUtilMemPct, 1.0},
}};

const DcgmField* find_field(std::string_view tag) {
  for (const DcgmField& f : kFields)
    if (iequals(f.tag, tag)) return &f;
  return nullptr;
}

}  // namespace

void read_dcgmi(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d) {
  SeriesBuilder b(d);
  std::unordered_set<std::string> seen;
  std::vector<std::string> names;
  std::vector<const DcgmField*> fields;
  std::vector<std::string> units;
  bool have_header = false;
  std::vector<std::string_view> tok;
  int64_t group = 0;
  std::unordered_set<int32_t> in_group;
  std::string_view line;
  bool complete = true;
  while (in.next(line, complete)) {
    const uint64_t ln = in.line_no();
    if (trim(line).empty()) continue;
    if (!complete) {
      count(d, "truncated_line", ln, "the last line has no end of line (a cut write): dropped");
      break;
    }
    split_ws(line, tok);
    // An optional time prefix written by a wrapper.
    size_t p = 0;
    Ns t = 0;
    ClockDomain clock = ClockDomain::kRelative;
    if (!tok.empty() && !istarts_with(tok[0], "#") && !istarts_with(tok[0], "GPU") &&
        tok[0] != "ID") {
      if (parse_calendar(tok[0], t)) {
        clock = ClockDomain::kRealtimeLocal;
        p = 1;
      } else if (tok.size() >= 2 && parse_calendar(fmt::format("{} {}", tok[0], tok[1]), t)) {
        clock = ClockDomain::kRealtimeLocal;
        p = 2;
      } else if (parse_epoch(tok[0], t)) {
        clock = ClockDomain::kRealtimeUtc;
        p = 1;
      } else {
        count(d, "bad_row", ln, fmt::format("'{}'", line.substr(0, 80)));
        continue;
      }
    }
    if (p >= tok.size()) continue;
    if (istarts_with(tok[p], "#Entity")) {
      std::vector<std::string> nn;
      for (size_t i = p + 1; i < tok.size(); ++i) nn.emplace_back(tok[i]);
      if (have_header && nn == names) continue;
      names = std::move(nn);
      fields.assign(names.size(), nullptr);
      units.assign(names.size(), std::string());
      bool any = false;
      for (size_t i = 0; i < names.size(); ++i) {
        fields[i] = find_field(names[i]);
        if (fields[i] != nullptr)
          any = true;
        else
          unused_field(d, seen, names[i], ln);
      }
      if (!any) fail(in, "no known dcgmi dmon field in the header");
      have_header = true;
      continue;
    }
    if (tok[p] == "ID") {
      if (have_header && tok.size() - p - 1 == names.size())
        for (size_t i = 0; i < names.size(); ++i) units[i] = ascii_lower(tok[p + 1 + i]);
      continue;
    }
    if (!have_header) {
      count(d, "bad_row", ln, "data before any header line");
      continue;
    }
    if (tok.size() < p + 2) {
      count(d, "bad_row", ln, "no entity");
      continue;
    }
    if (tok[p] != "GPU") {
      count(d, "unsupported_entity", ln, fmt::format("entity '{} {}'", tok[p], tok[p + 1]));
      continue;
    }
    if (tok.size() - p - 2 != names.size()) {
      count(d, "bad_row", ln,
            fmt::format("{} values where the header has {}", tok.size() - p - 2, names.size()));
      continue;
    }
    int64_t idx = -1;
    if (parse_int64(tok[p + 1], idx) != DecimalStatus::kExact || idx < 0 || idx > INT32_MAX) {
      count(d, "bad_row", ln, fmt::format("entity 'GPU {}'", tok[p + 1]));
      continue;
    }
    GpuRef g;
    g.index = static_cast<int32_t>(idx);
    if (!in_group.insert(g.index).second) {
      ++group;
      in_group.clear();
      in_group.insert(g.index);
    }
    if (clock == ClockDomain::kRelative) t = group * o.dcgmi_interval_ms * 1000000;
    ++d.samples;
    for (size_t i = 0; i < names.size(); ++i) {
      if (fields[i] == nullptr) continue;
      const std::string_view v = tok[p + 2 + i];
      double x = 0;
      std::string_view u;
      const ValueStatus st = parse_quantity(v, x, u);
      if (st != ValueStatus::kOk) {
        count(d, value_status_kind(st), ln, fmt::format("{} = '{}'", names[i], v));
        continue;
      }
      // DCGM prints blank-value sentinels as N/A; anything else is a number in the ID unit.
      if (!to_metric_unit(fields[i]->metric, u.empty() ? std::string_view(units[i]) : u,
                          fields[i]->scale, x)) {
        count(d, "unknown_unit", ln, fmt::format("{} = '{}' ({})", names[i], v, units[i]));
        continue;
      }
      b.add(b.series(g, fields[i]->metric, names[i], clock), t, x, ln);
    }
  }
  if (!have_header) fail(in, "no dcgmi dmon header line (#Entity ...)");
  if (d.samples == 0) fail(in, "no complete data row after the header");
  b.finish();
}

}  // namespace chopper::telemetry
