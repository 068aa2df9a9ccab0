// Telemetry readers: nvidia-smi, amd-smi (CSV, JSON), rocm-smi, dcgmi dmon, Zeus t,value CSVs.
// Every input below is written in the layout the real tool prints (the source of each layout is
// named beside it); expected numbers are derived in the comments.
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"
#include "compress_util.hpp"

namespace chopper {
namespace {

using chopper::test::gzip;
using chopper::test::zstd;

// 2026-01-01 00:00:00 UTC in seconds: 56 years of which 14 leap (1972..2024) -> 20454 days.
constexpr Ns kJan2026 = Ns{1767225600} * 1000000000;
constexpr Ns kS = 1000000000;
constexpr Ns kMs = 1000000;

TelemetryData read(std::string_view text, std::string name = "telemetry.csv",
                   TelemetryReadOptions o = {}) {
  auto src = ByteSource::from_memory(text, std::move(name));
  return read_telemetry(*src, o);
}

std::vector<const Series*> find_all(const TelemetryData& d, int gpu, Metric m) {
  std::vector<const Series*> out;
  for (const Series& s : d.series)
    if (s.gpu.index == gpu && s.metric == m) out.push_back(&s);
  return out;
}

const Series& find(const TelemetryData& d, int gpu, Metric m) {
  auto all = find_all(d, gpu, m);
  if (all.size() != 1) {
    ADD_FAILURE() << "GPU " << gpu << " " << metric_name(m) << ": " << all.size() << " series";
    static const Series empty;
    return empty;
  }
  return *all[0];
}

// Reads every prefix of `text`: never a crash; either an InputError (including NotATraceError)
// or data whose row count is the number of complete data lines in the prefix (a cut last line is
// dropped and counted as truncated_line).
template <class IsData>
void check_truncations(const std::string& text, const std::string& name, IsData is_data) {
  for (size_t k = 0; k <= text.size(); ++k) {
    const std::string cut = text.substr(0, k);
    uint64_t complete_rows = 0;
    size_t p = 0;
    for (;;) {
      const size_t nl = cut.find('\n', p);
      if (nl == std::string::npos) break;
      if (is_data(std::string_view(cut).substr(p, nl - p))) ++complete_rows;
      p = nl + 1;
    }
    try {
      TelemetryData d = read(cut, name);
      EXPECT_EQ(d.samples, complete_rows) << "cut at " << k;
      const bool partial = !cut.empty() && cut.back() != '\n';
      EXPECT_EQ(d.diagnostics.count("truncated_line"), partial ? 1u : 0u) << "cut at " << k;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      // Only prefixes without a complete data row may fail.
      EXPECT_EQ(complete_rows, 0u) << "cut at " << k << ": " << e.what();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// nvidia-smi. Layout: `nvidia-smi --query-gpu=timestamp,index,pci.bus_id,power.draw,
// clocks.current.sm,clocks.current.memory,temperature.gpu,temperature.memory,utilization.gpu,
// utilization.memory,clocks_event_reasons.active --format=csv -lms 500` (nvidia-smi(1) and
// --help-query-gpu: header "name [unit]", values "<v> <unit>", time "YYYY/MM/DD HH:MM:SS.mmm",
// unavailable values "[N/A]", "[Not Supported]").
const std::string kNvidiaCsv =
    "timestamp, index, pci.bus_id, power.draw [W], clocks.current.sm [MHz], "
    "clocks.current.memory [MHz], temperature.gpu, temperature.memory, utilization.gpu [%], "
    "utilization.memory [%], clocks_event_reasons.active\n"
    "2026/01/01 00:00:05.123, 0, 00000000:18:00.0, 350.12 W, 1980 MHz, 2619 MHz, 45, 52, 97 %, "
    "40 %, 0x0000000000000000\n"
    "2026/01/01 00:00:05.125, 1, 00000000:2A:00.0, 300.00 W, 1755 MHz, 2619 MHz, 47, [N/A], 95 %, "
    "38 %, 0x0000000000000004\n"
    "2026/01/01 00:00:05.623, 0, 00000000:18:00.0, 690.50 W, 1410 MHz, 2619 MHz, 46, 53, 100 %, "
    "41 %, 0x0000000000000024\n"
    "2026/01/01 00:00:05.625, 1, 00000000:2A:00.0, [Not Supported], 1980 MHz, 2619 MHz, 48, "
    "[N/A], 99 %, 39 %, 0x0000000000000001\n";

TEST(TelemetryNvidiaSmi, UnitsLayout) {
  const TelemetryData d = read(kNvidiaCsv);
  EXPECT_EQ(d.format, "nvidia-smi");
  EXPECT_EQ(d.samples, 4u);
  const Series& p0 = find(d, 0, Metric::kPowerW);
  ASSERT_EQ(p0.size(), 2u);
  EXPECT_EQ(p0.clock, ClockDomain::kRealtimeLocal);
  EXPECT_EQ(p0.source, "power.draw [W]");
  EXPECT_EQ(p0.gpu.bus_id, "00000000:18:00.0");
  // 00:00:05.123 on 2026-01-01, read as if UTC.
  EXPECT_EQ(p0.t_ns[0], kJan2026 + 5 * kS + 123 * kMs);
  EXPECT_DOUBLE_EQ(p0.value[0], 350.12);
  EXPECT_DOUBLE_EQ(p0.value[1], 690.50);
  // GPU 1's second power value is [Not Supported]: one sample, one diagnostic.
  EXPECT_EQ(find(d, 1, Metric::kPowerW).size(), 1u);
  EXPECT_EQ(d.diagnostics.count("value_not_supported"), 1u);
  // GPU 1's memory temperature is [N/A] twice: no series at all (never a NaN sample).
  EXPECT_TRUE(find_all(d, 1, Metric::kTempMemC).empty());
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 2u);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kSmClockMhz).value[1], 1410);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kMemClockMhz).value[0], 2619);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempGpuC).value[0], 45);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kUtilGpuPct).value[1], 100);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kUtilMemPct).value[0], 38);
  // Throttle masks as NVML bits: 0x24 = sw_power_cap | sw_thermal.
  const Series& r0 = find(d, 0, Metric::kThrottleReasons);
  EXPECT_DOUBLE_EQ(r0.value[1], kThrottleSwPowerCap | kThrottleSwThermal);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kThrottleReasons).value[0], kThrottleSwPowerCap);
  // pci.bus_id is an identity field, not unused; nothing else is unused.
  EXPECT_EQ(d.diagnostics.count("unused_field"), 0u);
  // 2 GPUs x 8 metrics (power, 2 clocks, 2 temperatures, 2 utilizations, throttle), except GPU
  // 1's memory temperature: 15 series.
  EXPECT_EQ(d.series.size(), 15u);
}

TEST(TelemetryNvidiaSmi, NoUnitsAndAliases) {
  // --format=csv,nounits: bare values; the header may keep or drop "[W]". power.draw.instant is
  // preferred over power.draw for kPowerW; power.draw.average is kPowerAvgW; clocks.sm wins over
  // clocks.gr; name and pstate are not read and are listed once.
  const std::string text =
      "timestamp, index, name, pstate, power.draw [W], power.draw.instant, power.draw.average, "
      "clocks.gr, clocks.sm, clocks.mem\n"
      "2026/01/01 00:00:01.000, 0, NVIDIA H100 80GB HBM3, P0, 400.5, 410.25, 390.0, 1700, 1980, "
      "2619\n"
      "2026/01/01 00:00:02.000, 0, NVIDIA H100 80GB HBM3, P0, 401.5, 411.25, 391.0, 1700, 1975, "
      "2619\n";
  const TelemetryData d = read(text);
  const Series& p = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p.source, "power.draw.instant");
  EXPECT_DOUBLE_EQ(p.value[1], 411.25);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kPowerAvgW).value[0], 390.0);
  const Series& c = find(d, 0, Metric::kSmClockMhz);
  EXPECT_EQ(c.source, "clocks.sm");
  EXPECT_DOUBLE_EQ(c.value[1], 1975);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kMemClockMhz).value[0], 2619);
  // name, pstate, power.draw (lost to .instant), clocks.gr (lost to clocks.sm).
  EXPECT_EQ(d.diagnostics.count("unused_field"), 4u);
  EXPECT_EQ(find(d, 0, Metric::kPowerW).t_ns[1] - find(d, 0, Metric::kPowerW).t_ns[0], kS);
}

TEST(TelemetryNvidiaSmi, RepeatedHeadersUnitConversionAndFoldedReasons) {
  // -l loop output appended to one file prints the header again. Units other than the metric's
  // are converted (mW -> W, GHz -> MHz). Individual reason fields are folded into the mask.
  const std::string text =
      "timestamp, index, power.draw [W], clocks.sm [MHz], clocks_event_reasons.sw_power_cap, "
      "clocks_event_reasons.hw_slowdown\n"
      "2026/01/01 00:00:01.000, 0, 350000 mW, 1.98 GHz, Active, Not Active\n"
      "timestamp, index, power.draw [W], clocks.sm [MHz], clocks_event_reasons.sw_power_cap, "
      "clocks_event_reasons.hw_slowdown\n"
      "2026/01/01 00:00:02.000, 0, 351 W, 1980 MHz, Active, Active\n"
      "2026/01/01 00:00:03.000, 0, 352 W, 1980 MHz, Not Active, Not Active\n";
  const TelemetryData d = read(text);
  EXPECT_EQ(d.samples, 3u);
  const Series& p = find(d, 0, Metric::kPowerW);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p.value[0], 350.0);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kSmClockMhz).value[0], 1980.0);
  const Series& r = find(d, 0, Metric::kThrottleReasons);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r.value[0], kThrottleSwPowerCap);
  EXPECT_DOUBLE_EQ(r.value[1], kThrottleSwPowerCap | kThrottleHwSlowdown);
  EXPECT_DOUBLE_EQ(r.value[2], 0);
  EXPECT_TRUE(d.diagnostics.empty());
}

TEST(TelemetryNvidiaSmi, BadRowsAreCountedNotFatal) {
  const std::string text =
      "timestamp, index, power.draw [W]\n"
      "2026/01/01 00:00:01.000, 0, 350 W\n"
      "2026/01/01 00:00:02.000, 0\n"                // short row
      "2026/13/01 00:00:03.000, 0, 351 W\n"         // month 13
      "2026/01/01 00:00:04.000, 0, 352 furlongs\n"  // unknown unit
      "2026/01/01 00:00:05.000, 0, [Unknown Error]\n"
      "2026/01/01 00:00:06.000, 0, 353 W\n";
  const TelemetryData d = read(text);
  EXPECT_EQ(d.diagnostics.count("bad_row"), 1u);
  EXPECT_EQ(d.diagnostics.count("bad_timestamp"), 1u);
  EXPECT_EQ(d.diagnostics.count("unknown_unit"), 1u);
  EXPECT_EQ(d.diagnostics.count("value_error"), 1u);
  const Series& p = find(d, 0, Metric::kPowerW);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p.value[1], 353);
  // Examples name the line.
  for (const auto& e : d.diagnostics.entries()) {
    if (e.kind == "bad_row") {
      EXPECT_EQ(e.examples[0].rfind("line 3:", 0), 0u) << e.examples[0];
    }
  }
}

// A throttle mask no 64-bit integer holds (found by the fuzzer: converting it was undefined
// behaviour) is counted as a bad value; the row's other fields and the next row's mask are kept.
TEST(TelemetryNvidiaSmi, ThrottleMaskBeyondSixtyFourBitsIsABadValue) {
  const std::string text =
      "timestamp, index, power.draw [W], clocks_event_reasons.active\n"
      "2026/01/01 00:00:01.000, 0, 350 W, 1900000000000000000000000000000\n"
      "2026/01/01 00:00:02.000, 0, 351 W, 0x0000000000000004\n";
  const TelemetryData d = read(text);
  EXPECT_EQ(d.diagnostics.count("bad_value"), 1u);
  EXPECT_EQ(find(d, 0, Metric::kPowerW).size(), 2u);
  const Series& m = find(d, 0, Metric::kThrottleReasons);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m.value[0], 4);
}

TEST(TelemetryNvidiaSmi, ClockResetStartsANewSeriesAndSmallStepsBackAreSorted) {
  // Samples at 10 s, 11 s, 10.5 s (back 0.5 s: out of order, sorted), 12 s, then 3 s (back 9 s:
  // a clock reset), 4 s. Result: series A = {10, 10.5, 11, 12}, series B = {3, 4}, in file order.
  const std::string text =
      "timestamp, index, power.draw [W]\n"
      "2026/01/01 00:00:10.000, 0, 1 W\n"
      "2026/01/01 00:00:11.000, 0, 2 W\n"
      "2026/01/01 00:00:10.500, 0, 3 W\n"
      "2026/01/01 00:00:12.000, 0, 4 W\n"
      "2026/01/01 00:00:03.000, 0, 5 W\n"
      "2026/01/01 00:00:04.000, 0, 6 W\n";
  const TelemetryData d = read(text);
  EXPECT_EQ(d.diagnostics.count("out_of_order"), 1u);
  EXPECT_EQ(d.diagnostics.count("clock_reset"), 1u);
  auto all = find_all(d, 0, Metric::kPowerW);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->t_ns, (std::vector<Ns>{kJan2026 + 10 * kS, kJan2026 + 10500 * kMs,
                                           kJan2026 + 11 * kS, kJan2026 + 12 * kS}));
  EXPECT_EQ(all[0]->value, (std::vector<double>{1, 3, 2, 4}));
  EXPECT_EQ(all[1]->t_ns, (std::vector<Ns>{kJan2026 + 3 * kS, kJan2026 + 4 * kS}));
}

TEST(TelemetryNvidiaSmi, Truncations) {
  check_truncations(kNvidiaCsv, "smi.csv",
                    [](std::string_view l) { return l.rfind("2026/", 0) == 0; });
}

TEST(TelemetryNvidiaSmi, GzipAndZstdGiveTheSameSeries) {
  const TelemetryData plain = read(kNvidiaCsv);
  for (const std::string& packed : {gzip(kNvidiaCsv), zstd(kNvidiaCsv)}) {
    auto src = ByteSource::from_memory(packed, "smi.csv.gz");
    const TelemetryData d = read_telemetry(*src);
    ASSERT_EQ(d.series.size(), plain.series.size());
    for (size_t i = 0; i < d.series.size(); ++i) {
      EXPECT_EQ(d.series[i].t_ns, plain.series[i].t_ns);
      EXPECT_EQ(d.series[i].value, plain.series[i].value);
    }
  }
}

TEST(TelemetryNvidiaSmi, HeaderOnlyOrNoTimestampIsAnError) {
  try {
    read("timestamp, index, power.draw [W]\n", "h.csv");
    FAIL() << "no error for a header only";
  } catch (const InputError& e) {
    EXPECT_NE(e.reason().find("line 1:"), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "h.csv");
  }
  EXPECT_THROW(read("index, power.draw [W]\n0, 350 W\n"), InputError);
}

// ---------------------------------------------------------------------------------------------
// amd-smi.
TEST(TelemetryAmdSmi, MonitorLayoutAsOurGeneratorWritesIt) {
  // `amd-smi monitor --csv` columns (amdsmi_cli: gpu, power_usage, hotspot_temperature,
  // memory_temperature, gfx, gfx_clock, mem_clock, throttle_status) with an epoch-ms timestamp.
  const std::string text =
      "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,gfx,gfx_clock,mem_clock,"
      "throttle_status\n"
      "1767225605123,0,650,80,72,97,2100,1300,NONE\n"
      "1767225605123,1,700,85,74,99,1900,1300,POWER\n"
      "1767225605223,0,660,81,72,98,2100,1300,THERMAL\n"
      "1767225605223,1,N/A,85,74,99,1850,1300,POWER|THERMAL\n";
  const TelemetryData d = read(text, "node0.amd-smi.csv");
  EXPECT_EQ(d.format, "amd-smi");
  EXPECT_EQ(d.samples, 4u);
  const Series& p0 = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p0.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p0.t_ns, (std::vector<Ns>{kJan2026 + 5123 * kMs, kJan2026 + 5223 * kMs}));
  EXPECT_EQ(p0.value, (std::vector<double>{650, 660}));
  EXPECT_EQ(find(d, 1, Metric::kPowerW).size(), 1u);  // N/A skipped
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 1u);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempHotspotC).value[0], 80);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempMemC).value[0], 72);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kUtilGpuPct).value[0], 99);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kSmClockMhz).value[1], 1850);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kMemClockMhz).value[1], 1300);
  EXPECT_EQ(find(d, 0, Metric::kThrottleReasons).value,
            (std::vector<double>{0, kThrottleSwThermal}));
  EXPECT_EQ(find(d, 1, Metric::kThrottleReasons).value,
            (std::vector<double>{kThrottleSwPowerCap, kThrottleSwPowerCap | kThrottleSwThermal}));
}

// `amd-smi metric --csv -w 1` (amdsmi_cli/amdsmi_logger.py flattens each GPU's groups into leaf
// names; watch mode puts "timestamp", int(time.time()) seconds, first).
const std::string kAmdMetricCsv =
    "timestamp,gpu,gfx_activity,umc_activity,mm_activity,socket_power,gfx_voltage,soc_voltage,"
    "mem_voltage,throttle_status,power_management,gfx_0_clk,gfx_0_min_clk,gfx_0_max_clk,"
    "mem_0_clk,edge,hotspot,mem,total_energy_consumption\n"
    "1767225605,0,97,40,N/A,650,N/A,N/A,N/A,UNTHROTTLED,ENABLED,2100,500,2100,1300,N/A,80,72,"
    "123456.5\n"
    "1767225605,1,99,41,N/A,700,N/A,N/A,N/A,THROTTLED,ENABLED,1900,500,2100,1300,N/A,85,74,"
    "223456.5\n"
    "1767225606,0,98,40,N/A,660,N/A,N/A,N/A,UNTHROTTLED,ENABLED,2100,500,2100,1300,N/A,81,72,"
    "124116.5\n";

TEST(TelemetryAmdSmi, MetricCsvLayout) {
  const TelemetryData d = read(kAmdMetricCsv);
  EXPECT_EQ(d.format, "amd-smi");
  EXPECT_EQ(d.samples, 3u);
  const Series& p0 = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p0.t_ns, (std::vector<Ns>{kJan2026 + 5 * kS, kJan2026 + 6 * kS}));
  EXPECT_EQ(p0.source, "socket_power");
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kUtilGpuPct).value[1], 98);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kUtilMemPct).value[0], 40);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kSmClockMhz).value[0], 2100);   // gfx_0_clk
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kMemClockMhz).value[0], 1300);  // mem_0_clk
  // In the metric layout "mem" is the memory temperature (the temperature group's leaf).
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kTempMemC).value[0], 74);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kTempHotspotC).value[0], 85);
  EXPECT_TRUE(find_all(d, 0, Metric::kTempGpuC).empty());  // edge is N/A on MI300X
  // Energy in J: 124116.5 - 123456.5 = 660 J over 1 s.
  const Series& e0 = find(d, 0, Metric::kEnergyJ);
  EXPECT_DOUBLE_EQ(e0.value[1] - e0.value[0], 660.0);
  EXPECT_EQ(find(d, 0, Metric::kThrottleReasons).value, (std::vector<double>{0, 0}));
  EXPECT_EQ(find(d, 1, Metric::kThrottleReasons).value[0], kThrottleOther);
  // Only fields that are read count their N/A: edge, in each of the 3 rows.
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 3u);
  // Unused: mm_activity, 3 voltages, power_management, gfx_0_min_clk, gfx_0_max_clk.
  EXPECT_EQ(d.diagnostics.count("unused_field"), 7u);
}

TEST(TelemetryAmdSmi, NoTimestampIsRelativeSnapshots) {
  // `amd-smi metric --csv` without watch: no timestamp. Two invocations appended: the header
  // repeats and GPU 0 comes again -> snapshot 1 at 1 x interval.
  const std::string text =
      "gpu,socket_power,gfx_0_clk\n0,650,2100\n1,700,1900\n"
      "gpu,socket_power,gfx_0_clk\n0,655,2000\n1,705,1950\n";
  TelemetryReadOptions o;
  o.dcgmi_interval_ms = 250;
  const TelemetryData d = read(text, "a.csv", o);
  const Series& p1 = find(d, 1, Metric::kPowerW);
  EXPECT_EQ(p1.clock, ClockDomain::kRelative);
  EXPECT_EQ(p1.t_ns, (std::vector<Ns>{0, 250 * kMs}));
  EXPECT_EQ(p1.value, (std::vector<double>{700, 705}));
}

TEST(TelemetryAmdSmi, Truncations) {
  check_truncations(kAmdMetricCsv, "m.csv",
                    [](std::string_view l) { return l.rfind("1767", 0) == 0; });
}

// `amd-smi metric --json` (ROCm 6.x): a list with one object per GPU; values as
// {"value": v, "unit": u} or "N/A"; groups usage / power / clock / temperature / energy.
const std::string kAmdJson = R"([
  {
    "gpu": 0,
    "usage": {"gfx_activity": {"value": 97, "unit": "%"}, "umc_activity": {"value": 40, "unit": "%"},
              "mm_activity": "N/A"},
    "power": {"socket_power": {"value": 650, "unit": "W"}, "gfx_voltage": "N/A",
              "throttle_status": "THROTTLED", "power_management": "ENABLED"},
    "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}, "min_clk": {"value": 500, "unit": "MHz"}},
              "mem_0": {"clk": {"value": 1300, "unit": "MHz"}}},
    "temperature": {"edge": "N/A", "hotspot": {"value": 80, "unit": "C"}, "mem": {"value": 72, "unit": "C"}},
    "energy": {"total_energy_consumption": {"value": 123456789.0, "unit": "uJ"}}
  },
  {
    "gpu": 1,
    "usage": {"gfx_activity": {"value": 99, "unit": "%"}},
    "power": {"socket_power": {"value": 0.7, "unit": "kW"}, "throttle_status": "UNTHROTTLED"},
    "clock": {"gfx_0": {"clk": {"value": 1.9, "unit": "GHz"}}},
    "temperature": {"hotspot": {"value": 85, "unit": "C"}, "mem": {"value": 74, "unit": "C"}}
  }
]
)";

TEST(TelemetryAmdSmi, MetricJson) {
  const TelemetryData d = read(kAmdJson, "m.json");
  EXPECT_EQ(d.format, "amd-smi");
  EXPECT_EQ(d.samples, 2u);
  const Series& p0 = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p0.clock, ClockDomain::kRelative);  // no timestamp: snapshot 0
  EXPECT_DOUBLE_EQ(p0.value[0], 650);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kPowerW).value[0], 700);          // 0.7 kW
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kSmClockMhz).value[0], 1900);     // 1.9 GHz
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kEnergyJ).value[0], 123.456789);  // uJ -> J
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempMemC).value[0], 72);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kUtilMemPct).value[0], 40);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kMemClockMhz).value[0], 1300);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kThrottleReasons).value[0], kThrottleOther);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kThrottleReasons).value[0], 0);
  // N/A: mm_activity, gfx_voltage, edge are not metrics we read except edge -> 1 counted.
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 1u);
}

TEST(TelemetryAmdSmi, JsonWatchWithTimestampsAndTruncation) {
  // Watch mode: one document per iteration, each GPU entry with "timestamp" (epoch seconds).
  const std::string text =
      R"([{"timestamp": 1767225605, "gpu": 0, "power": {"socket_power": {"value": 650, "unit": "W"}}}])"
      "\n"
      R"([{"timestamp": 1767225606, "gpu": 0, "power": {"socket_power": {"value": 651, "unit": "W"}}}])"
      "\n";
  const TelemetryData d = read(text, "w.json");
  const Series& p = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p.t_ns, (std::vector<Ns>{kJan2026 + 5 * kS, kJan2026 + 6 * kS}));
  // Any prefix: an error or the complete documents only.
  for (size_t k = 0; k <= text.size(); ++k) {
    try {
      const TelemetryData t = read(text.substr(0, k), "w.json");
      EXPECT_LE(t.samples, 2u);
      EXPECT_GE(t.samples, 1u);
    } catch (const InputError&) {
    }
  }
  // Cut in the middle of the second document: the first is kept, the cut one is counted.
  const TelemetryData cut = read(text.substr(0, text.size() - 20), "w.json");
  EXPECT_EQ(cut.samples, 1u);
  EXPECT_EQ(cut.diagnostics.count("truncated_document"), 1u);
}

// ---------------------------------------------------------------------------------------------
// rocm-smi --showtemp --showpower --showclocks --showuse --csv (rocm_smi.py: CSV header
// "device," + the printed field names, rows "card0,...", clocks as "(1900Mhz)").
const std::string kRocmCsv =
    "device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),"
    "Temperature (Sensor memory) (C),Current Socket Graphics Package Power (W),"
    "sclk clock speed:,sclk clock level:,mclk clock speed:,mclk clock level:,GPU use (%)\n"
    "card0,35.0,40.0,38.0,133.0,(1900Mhz),1,(900Mhz),3,97\n"
    "card1,36.0,41.0,N/A,131.0,(1800Mhz),1,(900Mhz),3,95\n"
    "device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),"
    "Temperature (Sensor memory) (C),Current Socket Graphics Package Power (W),"
    "sclk clock speed:,sclk clock level:,mclk clock speed:,mclk clock level:,GPU use (%)\n"
    "card0,37.0,42.0,39.0,600.5,(2100Mhz),2,(1300Mhz),3,100\n"
    "card1,38.0,43.0,40.0,610.5,(2100Mhz),2,(1300Mhz),3,100\n";

TEST(TelemetryRocmSmi, CsvSnapshots) {
  const TelemetryData d = read(kRocmCsv, "r.csv");
  EXPECT_EQ(d.format, "rocm-smi");
  EXPECT_EQ(d.samples, 4u);
  const Series& c0 = find(d, 0, Metric::kSmClockMhz);
  EXPECT_EQ(c0.clock, ClockDomain::kRelative);
  // Two invocations: snapshot 0 at 0, snapshot 1 at 1 x the 1000 ms default interval.
  EXPECT_EQ(c0.t_ns, (std::vector<Ns>{0, kS}));
  EXPECT_EQ(c0.value, (std::vector<double>{1900, 2100}));
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kPowerW).value[1], 610.5);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempGpuC).value[0], 35);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kTempHotspotC).value[0], 40);
  EXPECT_EQ(find(d, 1, Metric::kTempMemC).size(), 1u);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kUtilGpuPct).value[0], 95);
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kMemClockMhz).value[1], 1300);
  EXPECT_EQ(d.diagnostics.count("unused_field"), 2u);  // the two clock levels
}

TEST(TelemetryRocmSmi, WrapperTimestampColumn) {
  const std::string text =
      "timestamp,device,Current Socket Graphics Package Power (W)\n"
      "1767225605.5,card0,133.0\n1767225606.5,card0,134.0\n";
  const TelemetryData d = read(text, "r.csv");
  const Series& p = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p.t_ns, (std::vector<Ns>{kJan2026 + 5500 * kMs, kJan2026 + 6500 * kMs}));
}

TEST(TelemetryRocmSmi, Truncations) {
  check_truncations(kRocmCsv, "r.csv", [](std::string_view l) { return l.rfind("card", 0) == 0; });
}

// ---------------------------------------------------------------------------------------------
// dcgmi dmon -e 155,156,100,101,150,140,203,204 (DCGM field short names; the #Entity and ID
// lines come back periodically; MIG entities are "GPU-I n").
const std::string kDcgmi =
    "#Entity   POWER    TOTEC       SMCLK  MMCLK  GTEMP  MTEMP  GPUTL  MCUTL\n"
    "ID        W        mJ          MHZ    MHZ    C      C      %      %\n"
    "GPU 0     250.300  1000000     1980   2619   45     52     97     40\n"
    "GPU 1     N/A      2000000     1755   2619   47     N/A    95     38\n"
    "GPU 0     251.300  1250000     1980   2619   45     52     97     40\n"
    "GPU 1     260.000  2260000     1755   2619   47     N/A    95     38\n"
    "#Entity   POWER    TOTEC       SMCLK  MMCLK  GTEMP  MTEMP  GPUTL  MCUTL\n"
    "ID        W        mJ          MHZ    MHZ    C      C      %      %\n"
    "GPU 0     252.300  1500000     1410   2619   46     53     100    41\n"
    "GPU-I 3   1.0      2.0         3      4      5      6      7      8\n"
    "GPU 1     261.000  2520000     1755   2619   48     N/A    99     39\n";

TEST(TelemetryDcgmi, DmonText) {
  const TelemetryData d = read(kDcgmi, "dmon.txt");
  EXPECT_EQ(d.format, "dcgmi");
  EXPECT_EQ(d.samples, 6u);
  EXPECT_EQ(d.diagnostics.count("unsupported_entity"), 1u);
  const Series& p0 = find(d, 0, Metric::kPowerW);
  EXPECT_EQ(p0.clock, ClockDomain::kRelative);
  EXPECT_EQ(p0.t_ns, (std::vector<Ns>{0, kS, 2 * kS}));  // groups 0, 1, 2 x 1000 ms
  EXPECT_EQ(p0.value, (std::vector<double>{250.3, 251.3, 252.3}));
  EXPECT_EQ(find(d, 1, Metric::kPowerW).size(), 2u);  // one N/A
  // TOTEC is mJ: 1250000 - 1000000 mJ = 250 J in 1 s (~ 250 W, consistent with POWER).
  const Series& e0 = find(d, 0, Metric::kEnergyJ);
  EXPECT_DOUBLE_EQ(e0.value[1] - e0.value[0], 250.0);
  EXPECT_DOUBLE_EQ(find(d, 0, Metric::kSmClockMhz).value[2], 1410);
  EXPECT_TRUE(find_all(d, 1, Metric::kTempMemC).empty());
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 4u);  // 1 POWER + 3 MTEMP
  EXPECT_DOUBLE_EQ(find(d, 1, Metric::kUtilMemPct).value[2], 39);
}

TEST(TelemetryDcgmi, IntervalOptionAndWrapperTime) {
  TelemetryReadOptions o;
  o.dcgmi_interval_ms = 100;
  const TelemetryData d = read(kDcgmi, "dmon.txt", o);
  EXPECT_EQ(find(d, 0, Metric::kPowerW).t_ns, (std::vector<Ns>{0, 100 * kMs, 200 * kMs}));
  // A wrapper that prefixes each line with epoch seconds.
  const std::string text =
      "1767225605.000 #Entity   POWER  SMCLK\n"
      "1767225605.000 ID        W      MHZ\n"
      "1767225605.100 GPU 0     250.3  1980\n"
      "1767225606.100 GPU 0     251.3  1980\n";
  const TelemetryData w = read(text, "dmon.txt");
  const Series& p = find(w, 0, Metric::kPowerW);
  EXPECT_EQ(p.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p.t_ns, (std::vector<Ns>{kJan2026 + 5100 * kMs, kJan2026 + 6100 * kMs}));
}

TEST(TelemetryDcgmi, Truncations) {
  check_truncations(kDcgmi, "dmon.txt", [](std::string_view l) { return l.rfind("GPU ", 0) == 0; });
}

// ---------------------------------------------------------------------------------------------
// Zeus / CharLLM-PPT: `<stem>_<rank>.csv`, no header, "t,value" with t = time.time().
TEST(TelemetryZeus, NamesAndValues) {
  const std::string text = "1767225605.05,350.5\n1767225605.10,-1\n1767225605.15,352.5\n";
  const TelemetryData d = read(text, "/runs/x/gpu_power_3.csv");
  EXPECT_EQ(d.format, "zeus");
  EXPECT_EQ(d.samples, 3u);
  const Series& p = find(d, 3, Metric::kPowerW);
  EXPECT_EQ(p.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p.t_ns, (std::vector<Ns>{kJan2026 + 5050 * kMs, kJan2026 + 5150 * kMs}));
  EXPECT_EQ(d.diagnostics.count("failed_read"), 1u);  // the -1 marker
  // Other accepted names.
  EXPECT_EQ(read(text, "power_gpu2.csv").series[0].gpu.index, 2);
  EXPECT_EQ(read(text, "gpu5_power.csv.gz").series[0].gpu.index, 5);
  EXPECT_EQ(read(text, "sm_clock_gpu0.csv").series[0].metric, Metric::kSmClockMhz);
  // (A utilization of 350.5 % is out of range: a utilization file of its own.)
  EXPECT_EQ(read("1767225605.05,35.5\n", "mem_util_rank_7.csv").series[0].gpu.index, 7);
  // NVLink "throughput" is a cumulative KiB counter: 350.5 KiB = 358912 bytes.
  const TelemetryData nv = read(text, "nvlink_rx_throughput_1.csv");
  EXPECT_EQ(nv.series[0].metric, Metric::kLinkRxBytes);
  EXPECT_DOUBLE_EQ(nv.series[0].value[0], 350.5 * 1024);
  // A KB/s rate has no Metric: no series, said so.
  const TelemetryData rate = read(text, "pcie_tx_throughput_1.csv");
  EXPECT_TRUE(rate.series.empty());
  EXPECT_EQ(rate.diagnostics.count("unsupported_metric"), 1u);
  // Relative seconds.
  const TelemetryData rel = read("0.0,50\n0.05,55\n", "gpu_util_0.csv");
  EXPECT_EQ(rel.series[0].clock, ClockDomain::kRelative);
  EXPECT_EQ(rel.series[0].t_ns, (std::vector<Ns>{0, 50 * kMs}));
}

TEST(TelemetryZeus, UnknownNamesAreNotTelemetry) {
  const std::string text = "1767225605.05,350.5\n";
  EXPECT_EQ(sniff_telemetry(text, "results.csv"), "");
  EXPECT_EQ(sniff_telemetry(text, "system_cpu_usage_0.csv"), "");
  EXPECT_THROW(read(text, "results.csv"), NotATraceError);
}

TEST(TelemetryZeus, Truncations) {
  check_truncations("1767225605.05,350.5\n1767225605.10,351.5\n1767225605.15,352.5\n",
                    "gpu_power_0.csv", [](std::string_view) { return true; });
}

// ---------------------------------------------------------------------------------------------
TEST(TelemetrySniff, FormatsAndNonTelemetry) {
  EXPECT_EQ(sniff_telemetry(kNvidiaCsv, "x"), "nvidia-smi");
  EXPECT_EQ(sniff_telemetry(kAmdMetricCsv, "x"), "amd-smi");
  EXPECT_EQ(sniff_telemetry(kAmdJson, "x"), "amd-smi");
  EXPECT_EQ(sniff_telemetry(kRocmCsv, "x"), "rocm-smi");
  EXPECT_EQ(sniff_telemetry(kDcgmi, "x"), "dcgmi");
  // A Kineto trace is not telemetry, even with "gpu"-ish keys.
  const std::string kineto =
      R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "gpu"}], "traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,)"
      R"( "args": {"device": 0, "gpu": 0, "power": 1}}]})";
  EXPECT_EQ(sniff_telemetry(kineto, "rank0.json"), "");
  EXPECT_THROW(read(kineto, "rank0.json"), NotATraceError);
  // A rocprofv3 counter collection CSV is not telemetry.
  const std::string rocprof =
      "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\","
      "\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\","
      "\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\","
      "\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n"
      "1,1,4,1,4242,4242,1048576,12,\"Cijk_Alik_Bljk\",256,0,0,128,0,32,\"SQ_WAVES\",4096,"
      "1000,2000\n";
  EXPECT_EQ(sniff_telemetry(rocprof, "counter_collection.csv"), "");
  EXPECT_THROW(read(rocprof, "counter_collection.csv"), NotATraceError);
  EXPECT_EQ(sniff_telemetry("", "gpu_power_0.csv"), "");
  EXPECT_EQ(sniff_telemetry("hello world\n", "x.txt"), "");
}

}  // namespace
}  // namespace chopper
