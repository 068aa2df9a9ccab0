// Headerless `t,value` CSVs of Zeus/NVML samplers as CharLLM-PPT's modified Zeus writes them:
// one file per metric and GPU, `<ZEUS_CSV_PATH>/<stem>_<global rank>.csv`, rows
// "1712169098.466282,350.5" (t = time.time(), epoch seconds) and -1 for a failed read.
//
// Accepted file names (case-insensitive; after dropping .gz / .zst / .zstd, then .csv / .txt):
//   <stem>_<N>        Zeus / CharLLM-PPT: N is the global rank (stored as the GPU index)
//   <stem>_gpu<N>     e.g. power_gpu3.csv, sm_clock_gpu0.csv
//   <stem>_rank<N>, <stem>_rank_<N>
//   gpu<N>_<stem>     e.g. gpu3_power.csv
// Stems: gpu_power / power (W), gpu_thermal / gpu_temp / temperature (C), mem_thermal /
// mem_temp (C), hotspot_temp (C), gpu_util / util (%), mem_util (%), sm_clock / gpu_clock /
// gfx_clock / clock (MHz), mem_clock (MHz), energy / gpu_energy (J), pcie_{tx,rx}_bytes (B),
// nvlink_{tx,rx}_throughput (cumulative KiB despite the name -> bytes), nvlink_{tx,rx}_bytes (B).
// mem_power and pcie_{tx,rx}_throughput (KB/s rates) have no Metric: such a file is read into no
// series and says so ("unsupported_metric"). Host files (system_*) are not GPU telemetry.
// t >= 1e8 s is epoch time (kRealtimeUtc); smaller values are seconds from the start
// (kRelative), decided on the first row.
#include <fmt/format.h>

#include <array>

#include "chopper/base/text.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper::telemetry {

namespace {

struct Stem {
  std::string_view name;
  Metric metric;
  double scale;
  bool supported;
};
constexpr std::array<Stem, 26> kStems{{
    {"gpu_power", Metric::kPowerW, 1.0, true},
    {"power", Metric::kPowerW, 1.0, true},
    {"mem_power", Metric::kPowerW, 1.0, false},
    {"gpu_thermal", Metric::kTempGpuC, 1.0, true},
    {"gpu_temp", Metric::kTempGpuC, 1.0, true},
    {"temperature", Metric::kTempGpuC, 1.0, true},
    {"mem_thermal", Metric::kTempMemC, 1.0, true},
    {"mem_temp", Metric::kTempMemC, 1.0, true},
    {"hotspot_temp", Metric::kTempHotspotC, 1.0, true},
    {"gpu_util", Metric::kUtilGpuPct, 1.0, true},
    {"util", Metric::kUtilGpuPct, 1.0, true},
    {"mem_util", Metric::kUtilMemPct, 1.0, true},
    {"sm_clock", Metric::kSmClockMhz, 1.0, true},
    {"gpu_clock", Metric::kSmClockMhz, 1.0, true},
    {"gfx_clock", Metric::kSmClockMhz, 1.0, true},
    {"clock", Metric::kSmClockMhz, 1.0, true},
    {"mem_clock", Metric::kMemClockMhz, 1.0, true},
    {"energy", Metric::kEnergyJ, 1.0, true},
    {"gpu_energy", Metric::kEnergyJ, 1.0, true},
    {"pcie_tx_bytes", Metric::kPcieTxBytes, 1.0, true},
    {"pcie_rx_bytes", Metric::kPcieRxBytes, 1.0, true},
    {"nvlink_tx_throughput", Metric::kLinkTxBytes, 1024.0, true},
    {"nvlink_rx_throughput", Metric::kLinkRxBytes, 1024.0, true},
    {"nvlink_tx_bytes", Metric::kLinkTxBytes, 1.0, true},
    {"nvlink_rx_bytes", Metric::kLinkRxBytes, 1.0, true},
    {"pcie_tx_throughput", Metric::kPcieTxBytes, 1.0, false},
}};

const Stem* find_stem(std::string_view s) {
  if (s == "pcie_rx_throughput") {
    static constexpr Stem kRx{"pcie_rx_throughput", Metric::kPcieRxBytes, 1.0, false};
    return &kRx;
  }
  for (const Stem& st : kStems)
    if (st.name == s) return &st;
  return nullptr;
}

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool strip_suffix(std::string& s, std::string_view suf) {
  if (s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0) {
    s.resize(s.size() - suf.size());
    return true;
  }
  return false;
}

bool fill(const Stem* st, std::string_view num, ZeusName& out) {
  if (st == nullptr || !all_digits(num)) return false;
  int64_t n = 0;
  if (parse_int64(num, n) != DecimalStatus::kExact) return false;
  out.metric = st->metric;
  out.scale = st->scale;
  out.supported = st->supported;
  out.stem = std::string(st->name);
  out.gpu = static_cast<int32_t>(n);
  return true;
}

}  // namespace

bool parse_zeus_name(std::string_view file_name, ZeusName& out) {
  const size_t slash = file_name.find_last_of("/\\");
  std::string s =
      ascii_lower(slash == std::string_view::npos ? file_name : file_name.substr(slash + 1));
  if (!strip_suffix(s, ".gz")) {
    if (!strip_suffix(s, ".zst")) strip_suffix(s, ".zstd");
  }
  if (!strip_suffix(s, ".csv")) strip_suffix(s, ".txt");
  if (s.rfind("system_", 0) == 0) return false;
  // gpu<N>_<stem>
  if (s.rfind("gpu", 0) == 0) {
    const size_t us = s.find('_');
    if (us != std::string::npos && fill(find_stem(s.substr(us + 1)), s.substr(3, us - 3), out))
      return true;
  }
  const size_t us = s.rfind('_');
  if (us == std::string::npos) return false;
  std::string_view stem(s.data(), us), tail(s.data() + us + 1, s.size() - us - 1);
  if (tail.rfind("gpu", 0) == 0) return fill(find_stem(stem), tail.substr(3), out);
  out.by_rank = true;
  if (tail.rfind("rank", 0) == 0) return fill(find_stem(stem), tail.substr(4), out);
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == "_rank")
    return fill(find_stem(stem.substr(0, stem.size() - 5)), tail, out);
  return fill(find_stem(stem), tail, out);
}

void read_zeus(LineReader& in, const TelemetryReadOptions& /*o*/, TelemetryData& d) {
  ZeusName zn;
  if (!parse_zeus_name(in.name(), zn)) fail(in, "the file name gives no Zeus metric and GPU");
  SeriesBuilder b(d);
  GpuRef g;
  g.index = zn.gpu;
  if (zn.by_rank) g.rank = zn.gpu;
  ClockDomain clock = ClockDomain::kUnknown;
  size_t s = 0;
  std::vector<std::string_view> f;
  std::string_view line;
  bool complete = true;
  uint64_t rows = 0;
  while (in.next(line, complete)) {
    const uint64_t ln = in.line_no();
    if (trim(line).empty()) continue;
    if (!complete) {
      count(d, "truncated_line", ln, "the last line has no end of line (a cut write): dropped");
      break;
    }
    split_csv(line, f);
    if (f.size() != 2) {
      count(d, "bad_row", ln, fmt::format("{} fields, not t,value", f.size()));
      continue;
    }
    Ns t = 0;
    if (!parse_seconds(f[0], t) || t < 0) {
      count(d, "bad_timestamp", ln, fmt::format("t '{}'", f[0]));
      continue;
    }
    ++rows;
    if (clock == ClockDomain::kUnknown) {
      clock = t >= Ns{100000000} * 1000000000 ? ClockDomain::kRealtimeUtc : ClockDomain::kRelative;
      if (zn.supported) s = b.series(g, zn.metric, zn.stem, clock);
    }
    if (!zn.supported) continue;
    double x = 0;
    std::string_view u;
    const ValueStatus st = parse_quantity(f[1], x, u);
    if (st != ValueStatus::kOk || !u.empty()) {
      count(d, st == ValueStatus::kOk ? DiagKind("bad_value") : value_status_kind(st), ln,
            fmt::format("value '{}'", f[1]));
      continue;
    }
    if (x == -1.0) {
      count(d, "failed_read", ln, "value -1 (the sampler's failed-read marker)");
      continue;
    }
    b.add(s, t, x * zn.scale, ln);
  }
  d.samples = rows;
  if (rows == 0) fail(in, "no t,value row");
  if (!zn.supported)
    d.diagnostics.add("unsupported_metric",
                      fmt::format("{}: no chopper metric for this Zeus series (a rate or memory "
                                  "power); {} rows not read",
                                  zn.stem, rows));
  b.finish();
}

}  // namespace chopper::telemetry
