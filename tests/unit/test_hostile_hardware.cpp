// Hostile input for the hardware paths (issue 28, part 2): telemetry and counter files whose rows
// are mostly broken, whose values are absurd, whose dispatch ids repeat, whose rows are huge
// (gigabytes in a small gzip), and what analyze shows of them. Each expected number is derived
// in the comment beside it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/parts.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/rocprof/counter_reader.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"
#include "chopper/pipeline/stream.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/synth/synth.hpp"
#include "compress_util.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

namespace chopper {
namespace {

namespace fs = std::filesystem;

TelemetryData read_tel(const std::string& text, const std::string& name = "gpu.csv") {
  auto src = ByteSource::from_memory(text, name);
  return read_telemetry(*src);
}

CounterTable read_ctr(const std::string& text, const std::string& name = "ctr.csv") {
  auto src = ByteSource::from_memory(text, name);
  return read_counters(*src);
}

// A small synthetic H100 run (2 ranks on one node, 1 layer, 2 iterations) in a temporary
// directory, with its nvidia-smi telemetry, for the end-to-end tests.
fs::path synth_two_ranks(const std::string& name) {
  SynthConfig c = test::small("h100", Parallelism::kFsdp);
  c.ranks = 2;
  c.gpus_per_node = 2;
  c.layers = 1;
  c.iterations = 2;
  c.threads = 2;
  const fs::path dir = test::temp_dir(name);
  synthesize(c, dir.string());
  return dir;
}

const DiagnosticRow* find_row(const std::vector<DiagnosticRow>& rows, std::string_view kind) {
  for (const DiagnosticRow& d : rows)
    if (d.kind == kind) return &d;
  return nullptr;
}

constexpr const char* kNvHeader = "timestamp, index, power.draw [W], clocks.current.sm [MHz]\n";

// nvidia-smi row k (k seconds after 2026-01-01 00:00:00, 300 W, 1980 MHz).
std::string nv_row(int k, int gpu = 0, const std::string& power = "300 W") {
  return fmt::format("2026/01/01 00:{:02}:{:02}.000, {}, {}, 1980 MHz\n", k / 60, k % 60, gpu,
                     power);
}

// ---- defect 1: the hardware files' anomalies reach the diagnostics table and the terminal

TEST(HostileHardware, NineOfTenTelemetryRowsBrokenAreShown) {
  // 10 data rows, 9 of them with 2 fields where the header has 4: bad_row 9, 1 sample kept, so
  // of_count = 1 + 9 = 10 and the share 0.9, far above the 0.1% analyze shows.
  std::string t = kNvHeader + nv_row(0);
  for (int k = 1; k < 10; ++k) t += "2026/01/01 00:00:0" + std::to_string(k) + ".000, 0\n";
  const TelemetryData d = read_tel(t, "node0.nvidia-smi.csv");
  EXPECT_EQ(d.samples, 1u);
  EXPECT_EQ(d.diagnostics.count("bad_row"), 9u);
  const std::vector<DiagnosticRow> rows = hardware_diagnostics({d}, {});
  const DiagnosticRow* r = find_row(rows, "bad_row");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->file, "node0.nvidia-smi.csv");
  EXPECT_EQ(r->rank, -1);
  EXPECT_EQ(r->stage, "read");
  EXPECT_EQ(r->severity, Severity::kWarning);
  EXPECT_EQ(r->count, 9u);
  EXPECT_EQ(r->of_count, 10);
  EXPECT_DOUBLE_EQ(r->share_of_events, 0.9);
  const std::string text = diagnostics_text(rows);
  EXPECT_NE(text.find("hardware-file anomalies above 0.1% of the rows in 1 file(s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("node0.nvidia-smi.csv: bad_row 9 of 10 rows"), std::string::npos) << text;
}

TEST(HostileHardware, ManyBadRowsOfALongFileAreShown) {
  // 1,002 rows, the good ones rows 0, 10, ..., 1000 (101), the other 901 one word each:
  // bad_row 901 of 1,002.
  std::string t = kNvHeader;
  for (int k = 0; k < 1002; ++k) t += k % 10 == 0 ? nv_row(k) : "garbage\n";
  const TelemetryData d = read_tel(t);
  EXPECT_EQ(d.samples, 101u);
  EXPECT_EQ(d.diagnostics.count("bad_row"), 901u);
  const std::vector<DiagnosticRow> rows = hardware_diagnostics({d}, {});
  ASSERT_NE(find_row(rows, "bad_row"), nullptr);
  EXPECT_EQ(find_row(rows, "bad_row")->of_count, 1002);
  EXPECT_NE(diagnostics_text(rows).find("gpu.csv: bad_row 901 of 1002 rows"), std::string::npos);
}

TEST(HostileHardware, CleanFilesAndInfoKindsAreNotShown) {
  // A clean file: no row; a field not read (unused_field) is info and not an anomaly.
  const TelemetryData d =
      read_tel("timestamp, index, power.draw [W], name\n2026/01/01 00:00:00.000, 0, 300 W, H100\n");
  const std::vector<DiagnosticRow> rows = hardware_diagnostics({d}, {});
  const DiagnosticRow* r = find_row(rows, "unused_field");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->severity, Severity::kInfo);
  EXPECT_EQ(diagnostics_text(rows), "");
}

// chopper record reads the cumulative counters (energy, PCIe, NVLink) every counter_interval_ms,
// not every tick: an empty energy_j between two readings is "not read", no missing value (it was
// counted as one on every row), while an empty power_w still is. Three rows, energy on the first
// and the last: the energy series has those two samples, the power series the two rows with power.
TEST(HostileHardware, RecordedCountersEmptyBetweenReadingsAreNotMissing) {
  const TelemetryData d = read_tel(
      "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
      "util_mem_pct,throttle_reasons\n"
      "1795846654601772332,0,GPU-1,82.957,2608.015,345,3201,41,0,0,0x1\n"
      "1795846654611772332,0,GPU-1,,,345,3201,41,0,0,0x1\n"
      "1795846654621772332,0,GPU-1,90.000,2609.700,1980,3201,42,100,20,0x0\n",
      "vm.gpu.csv");
  EXPECT_EQ(d.format, "chopper-record");
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 1u);  // power_w of row 2 only
  size_t energy = 0, power = 0;
  for (const Series& s : d.series) {
    if (s.metric == Metric::kEnergyJ) energy = s.size();
    if (s.metric == Metric::kPowerW) power = s.size();
  }
  EXPECT_EQ(energy, 2u);
  EXPECT_EQ(power, 2u);
}

const char* kCounterHeader =
    "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\","
    "\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\","
    "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\","
    "\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";

std::string ctr_row(int disp, const std::string& counter, const std::string& value,
                    long long start = 1000, long long end = 2000) {
  return fmt::format(
      "{0},{0},4,1,4242,4242,1048576,16,\"gemm\",64,0,0,8,0,16,\"{1}\",{2},{3},{4}\n", disp,
      counter, value, start, end);
}

TEST(HostileHardware, ShortCounterRowsAreShown) {
  // 4 dispatches x 2 counters; the second counter's row of each dispatch is cut short (17 fields
  // where the header has 19): bad_field_count 4, 4 dispatches kept, of_count 4 + 4 = 8.
  std::string t = kCounterHeader;
  for (int d = 1; d <= 4; ++d) {
    t += ctr_row(d, "SQ_WAVES", "64");
    t += fmt::format("{0},{0},4,1,4242,4242,1048576,16,\"gemm\",64,0,0,8,0,16,\"GRBM_COUNT\",9\n",
                     d);
  }
  const CounterTable c = read_ctr(t);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.diagnostics.count("bad_field_count"), 4u);
  const std::vector<DiagnosticRow> rows = hardware_diagnostics({}, {c});
  const DiagnosticRow* r = find_row(rows, "bad_field_count");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->of_count, 8);
  EXPECT_NE(diagnostics_text(rows).find("ctr.csv: bad_field_count 4 of 8 rows"), std::string::npos);
}

// ---- defect 2: absurd values are dropped and counted

TEST(HostileHardware, TelemetryOutOfRangeDropped) {
  // Per GPU: power 0..5,000 W, clocks 0..10,000 MHz, temperature -50..200 C, utilization
  // 0..100 %. Of these 8 values, 5 are out of range and dropped: 1e308 W, -1e6 W, 20,000 MHz,
  // 300 C and 150 %; power keeps 300 W and 450 W, the clock 1980 MHz.
  const std::string t =
      "timestamp, index, power.draw [W], clocks.current.sm [MHz], temperature.gpu, "
      "utilization.gpu [%]\n"
      "2026/01/01 00:00:00.000, 0, 300 W, 1980 MHz, 300, 150 %\n"
      "2026/01/01 00:00:01.000, 0, 1e308 W, 20000 MHz, 60, 50 %\n"
      "2026/01/01 00:00:02.000, 0, -1000000 W, 1980 MHz, 61, 51 %\n"
      "2026/01/01 00:00:03.000, 0, 450 W, 1980 MHz, 62, 52 %\n";
  const TelemetryData d = read_tel(t);
  EXPECT_EQ(d.diagnostics.count("telemetry_out_of_range"), 4u + 1u);
  for (const Series& s : d.series) {
    for (double v : s.value) {
      EXPECT_TRUE(std::isfinite(v));
      EXPECT_GE(v, 0);
    }
    if (s.metric == Metric::kPowerW) {
      EXPECT_EQ(s.value, (std::vector<double>{300, 450}));
    }
    if (s.metric == Metric::kSmClockMhz) {
      EXPECT_EQ(s.value.size(), 3u);
    }
    if (s.metric == Metric::kTempGpuC) {
      EXPECT_EQ(s.value.size(), 3u);
    }
    if (s.metric == Metric::kUtilGpuPct) {
      EXPECT_EQ(s.value.size(), 3u);
    }
  }
}

TEST(HostileHardware, EnergyCounterSpikeDropped) {
  // amd-smi energy in J, one sample a second: +660 J, then +1e12 J (a 1e12 W rise, above
  // 5,000 W: dropped), then +1,320 J over the 2 s since the sample kept before (660 W: kept).
  const std::string t =
      "timestamp,gpu,socket_power,total_energy_consumption\n"
      "1767225605,0,650,1000\n"
      "1767225606,0,660,1660\n"
      "1767225607,0,660,1000000000000\n"
      "1767225608,0,660,2980\n";
  const TelemetryData d = read_tel(t);
  EXPECT_EQ(d.diagnostics.count("telemetry_out_of_range"), 1u);
  for (const Series& s : d.series)
    if (s.metric == Metric::kEnergyJ) {
      EXPECT_EQ(s.value, (std::vector<double>{1000, 1660, 2980}));
    }
}

TEST(HostileHardware, CounterOutOfRangeDropped) {
  // Dispatch 1 lasts 1,000 ns: a counter may count at most 1e8 x 1,000 + 1e9 = 1.001e11. 1e308,
  // -5e18 and 1e26 are out of range (3), 5e11 too (4); 64 is kept.
  std::string t = kCounterHeader;
  t += ctr_row(1, "A", "1e308");
  t += ctr_row(1, "B", "-5e18");
  t += ctr_row(1, "C", "1e26");
  t += ctr_row(1, "D", "5e11");
  t += ctr_row(1, "E", "64");
  const CounterTable c = read_ctr(t);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.diagnostics.count("counter_out_of_range"), 4u);
  for (const char* n : {"A", "B", "C", "D"})
    EXPECT_TRUE(std::isnan(c.value(0, static_cast<size_t>(c.counter_index(n))))) << n;
  EXPECT_DOUBLE_EQ(c.value(0, static_cast<size_t>(c.counter_index("E"))), 64);
}

TEST(HostileHardware, CounterTimedByKernelTraceIsChecked) {
  // Without times the bound is 1e18: 5e11 is kept; once the kernel trace times dispatch 1 at
  // 1,000 ns, the bound is 1.001e11 and 5e11 goes.
  std::string t = kCounterHeader;
  t += ctr_row(1, "D", "5e11", 0, 0);
  t.replace(t.rfind(",0,0\n"), 5, ",,\n");
  CounterTable c = read_ctr(t);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.diagnostics.count("counter_out_of_range"), 0u);
  CounterTable kt;
  kt.kernel = {"gemm"};
  kt.dispatch_id = {1};
  kt.correlation_id = {1};
  kt.agent = {4};
  kt.pid = {4242};
  kt.start_ns = {5000};
  kt.end_ns = {6000};
  kt.file = "kt.csv";
  kt.diagnostics.add("bad_timestamp",
                     std::string("line 3: a row without times"));  // the trace's own
  join_kernel_trace(c, kt);
  EXPECT_EQ(c.diagnostics.count("counter_out_of_range"), 1u);
  EXPECT_TRUE(std::isnan(c.value(0, 0)));
  // The kernel trace's anomaly goes with the table it timed, naming the kernel trace.
  EXPECT_EQ(c.diagnostics.count("kernel_trace_bad_timestamp"), 1u);
  const std::vector<DiagnosticRow> rows = hardware_diagnostics({}, {c});
  ASSERT_NE(find_row(rows, "kernel_trace_bad_timestamp"), nullptr);
  EXPECT_EQ(find_row(rows, "kernel_trace_bad_timestamp")->example,
            "kt.csv: line 3: a row without times");
}

std::string rocprof_json(int records, bool same_id) {
  // `records` kernel_dispatch records of kernel 8 or 9 (alternating), each with a counter
  // record; dispatch ids all 1 when `same_id`, else 1..records.
  std::string disp, ctr;
  for (int k = 0; k < records; ++k) {
    const int id = same_id ? 1 : k + 1;
    const int kernel = 8 + k % 2;
    disp += fmt::format(
        "{}{{\"correlation_id\":{{\"internal\":{}}},\"start_timestamp\":{},\"end_timestamp\":{},"
        "\"dispatch_info\":{{\"agent_id\":{{\"handle\":2}},\"kernel_id\":{},\"dispatch_id\":{}}}}}",
        k ? "," : "", k + 1, 1000 * (k + 1), 1000 * (k + 1) + 500, kernel, id);
    ctr += fmt::format(
        "{}{{\"dispatch_data\":{{\"correlation_id\":{{\"internal\":{}}},\"dispatch_info\":{{"
        "\"agent_id\":{{\"handle\":2}},\"kernel_id\":{},\"dispatch_id\":{}}}}},"
        "\"records\":[{{\"counter_id\":{{\"handle\":17}},\"value\":100}}]}}",
        k ? "," : "", k + 1, kernel, id);
  }
  return "{\"rocprofiler-sdk-tool\":[{\"metadata\":{\"pid\":908},"
         "\"agents\":[{\"id\":{\"handle\":2},\"node_id\":2}],"
         "\"counters\":[{\"id\":{\"handle\":17},\"name\":\"SQ_WAVES\"}],"
         "\"kernel_symbols\":[{\"kernel_id\":8,\"kernel_name\":\"a\"},{\"kernel_id\":9,"
         "\"kernel_name\":\"b\"}],"
         "\"callback_records\":{\"counter_collection\":[" +
         ctr + "]},\"buffer_records\":{\"kernel_dispatch\":[" + disp + "]}}]}";
}

TEST(HostileHardware, RocprofJsonRepeatedDispatchIdsNotJoined) {
  // 6 dispatches all with dispatch_id 1: one row would hold 6 dispatches' times and counters
  // (summed 600). The row is removed; dispatch_id_repeated counts its 12 records.
  const CounterTable c = read_ctr(rocprof_json(6, true), "results.json");
  EXPECT_EQ(c.format, "rocprofv3-json");
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.diagnostics.count("dispatch_id_repeated"), 12u);
  // Distinct ids: 6 rows, nothing repeated.
  const CounterTable ok = read_ctr(rocprof_json(6, false), "results.json");
  EXPECT_EQ(ok.size(), 6u);
  EXPECT_EQ(ok.diagnostics.count("dispatch_id_repeated"), 0u);
  EXPECT_DOUBLE_EQ(ok.value(0, 0), 100);
}

TEST(HostileHardware, RocprofCsvRepeatedDispatchIdsNotJoined) {
  // Dispatch id 1 written for three dispatches of one kernel at 1,000, 3,000 and 5,000 ns (the
  // later two rows disagree on the times: 2 counted), and dispatch 2 twice with the same times
  // (two counters of one dispatch: kept). Dispatch 1's row is removed; dispatch 2 stays.
  std::string t = kCounterHeader;
  t += ctr_row(1, "SQ_WAVES", "64", 1000, 2000);
  t += ctr_row(1, "SQ_WAVES", "64", 3000, 4000);
  t += ctr_row(1, "SQ_WAVES", "64", 5000, 6000);
  t += ctr_row(2, "SQ_WAVES", "64", 7000, 8000);
  t += ctr_row(2, "GRBM_COUNT", "900", 7000, 8000);
  const CounterTable c = read_ctr(t);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c.dispatch_id[0], 2);
  EXPECT_EQ(c.diagnostics.count("dispatch_id_repeated"), 2u);
  EXPECT_DOUBLE_EQ(c.value(0, static_cast<size_t>(c.counter_index("SQ_WAVES"))), 64);
}

TEST(HostileHardware, WaterfallPartsBounded) {
  // One 1,000 ns kernel whose counters say 1e20 ns of issued matrix work and whose clock says
  // it was active 5,000 ns: unbounded, instruction would be 1e20 - 100, frequency -4,000 and the
  // residual about -1e20. Bounded: theoretical 100, instruction 900 (what is left), the others
  // 0, the parts summing to 1,000.
  RunAnalysis ra;
  RankAnalysis r;
  r.rank = 0;
  WaterfallUnit u;
  u.observed_ns = 1000;
  u.theoretical_ns = 100;
  u.theoretical_known = true;
  u.issued_ns = 1e20;
  u.instruction_known = true;
  u.active_ns = 5000;
  u.frequency_known = true;
  u.signature = "k";
  r.units.push_back(u);
  ra.ranks.push_back(std::move(r));
  finalize_hardware(ra, AnalysisOptions{});
  ASSERT_FALSE(ra.waterfall.empty());
  for (const WaterfallRow& w : ra.waterfall) {
    for (double p : {w.theoretical_ns, w.instruction_ns, w.utilization_ns, w.overlap_ns,
                     w.frequency_ns, w.residual_ns}) {
      EXPECT_TRUE(std::isfinite(p));
      EXPECT_GE(p, 0);
      EXPECT_LE(p, static_cast<double>(w.observed_ns));
    }
    EXPECT_DOUBLE_EQ(w.theoretical_ns, 100);
    EXPECT_DOUBLE_EQ(w.instruction_ns, 900);
    EXPECT_DOUBLE_EQ(w.theoretical_ns + w.instruction_ns + w.utilization_ns + w.overlap_ns +
                         w.frequency_ns + w.residual_ns,
                     1000);
  }
}

// ---- defect 3: rows over the limit are skipped without being held

long maxrss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// A gzip stream of `text_before`, then `row_bytes` bytes of 'x' (no end of line), then
// `text_after`: the long row is `row_bytes / chunk` gzip members of one compressed chunk of 16 MiB
// of 'x' (a multi-member gzip, as readers accept), so it is made in milliseconds.
std::string gzip_with_long_row(const std::string& text_before, uint64_t row_bytes,
                               const std::string& text_after) {
  constexpr size_t kChunk = size_t{16} << 20;
  const std::string member = test::gzip(std::string(kChunk, 'x'));
  std::string out = test::gzip(text_before);
  for (uint64_t n = 0; n < row_bytes / kChunk; ++n) out += member;
  out += test::gzip(text_after);
  return out;
}

TEST(HostileHardware, TwoGiBRowInSmallGzipIsSkippedInBoundedMemory) {
  // nvidia-smi header and one row, a 2 GiB row, then one more row: the long row is skipped and
  // counted (row_too_long 1), both rows are read, in bounded time and memory.
  const std::string gz =
      gzip_with_long_row(std::string(kNvHeader) + nv_row(0), uint64_t{2} << 30, "\n" + nv_row(1));
  EXPECT_LT(gz.size(), size_t{32} << 20);  // ISA-L's level 1: about 20 MB hold the 2 GiB
  const long rss0 = maxrss_kb();
  const auto t0 = std::chrono::steady_clock::now();
  auto src = ByteSource::from_memory(gz, "big.csv.gz");
  const TelemetryData d = read_telemetry(*src);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.diagnostics.count("row_too_long"), 1u);
  EXPECT_EQ(d.samples, 2u);
  EXPECT_LT(s, 20.0);
  EXPECT_LT(maxrss_kb() - rss0, 200 * 1024) << "KiB of peak resident memory added";
}

TEST(HostileHardware, LongCounterRowSkippedInBoundedMemory) {
  // A 64 MiB row in a rocprofv3 counter CSV (gzip'd) between two good rows: skipped and counted,
  // not a failed file as it was (over 64 MiB) nor held whole (up to 64 MiB).
  const std::string gz = gzip_with_long_row(std::string(kCounterHeader) + ctr_row(1, "A", "5"),
                                            uint64_t{64} << 20, "\n" + ctr_row(2, "A", "6"));
  const long rss0 = maxrss_kb();
  auto src = ByteSource::from_memory(gz, "ctr.csv.gz");
  const CounterTable c = read_counters(*src);
  EXPECT_EQ(c.diagnostics.count("row_too_long"), 1u);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_LT(maxrss_kb() - rss0, 48 * 1024);
}

TEST(HostileHardware, LongRowInPlainFileSkipped) {
  // A mapped plain file: a 3 MiB row (over the 1 MiB limit) between two good rows.
  const fs::path p = fs::temp_directory_path() / ("chopper_longrow_" + std::to_string(::getpid()));
  {
    std::ofstream f(p, std::ios::binary);
    f << kNvHeader << nv_row(0) << std::string(size_t{3} << 20, 'y') << "\n" << nv_row(1);
  }
  const TelemetryData d = read_telemetry_file(p.string());
  EXPECT_EQ(d.diagnostics.count("row_too_long"), 1u);
  EXPECT_EQ(d.samples, 2u);
  fs::remove(p);
}

// ---- end to end: the streamed analyze carries the hardware files' diagnostics

TEST(HostileHardware, AnalyzeShowsBrokenTelemetry) {
  // A synthetic H100 run whose node-0 nvidia-smi file has every other data row spoilt (2 fields):
  // analyze's diagnostics hold the file's bad_row row, and its summary names the file.
  const fs::path dir = synth_two_ranks("hostile_hw");
  const fs::path tel = dir / "telemetry" / "node0.nvidia-smi.csv";
  ASSERT_TRUE(fs::exists(tel));
  std::istringstream in(test::read_file(tel.string()));
  std::string line, out;
  uint64_t data = 0, spoilt = 0;
  for (bool header = true; std::getline(in, line); header = false) {
    if (!header && ++data % 2 == 0) {
      out += line.substr(0, line.find(',')) + ", 0\n";
      ++spoilt;
      continue;
    }
    out += line + "\n";
  }
  ASSERT_GE(spoilt, 4u);
  std::ofstream(tel) << out;
  StreamOptions so;
  so.paths = {dir.string()};
  so.load.threads = 2;
  so.analysis.threads = 2;
  std::unique_ptr<StreamedRun> sr = stream_run(so, Taxonomy::builtin(), dir.string(), comm());
  ASSERT_TRUE(sr->analysed);
  const DiagnosticRow* r = nullptr;
  for (const DiagnosticRow& d : sr->diagnostics)
    if (d.kind == "bad_row" && d.file == tel.string()) r = &d;
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->count, spoilt);
  EXPECT_EQ(r->of_count, static_cast<int64_t>(data));
  const std::string text = diagnostics_text(sr->diagnostics);
  EXPECT_NE(text.find(tel.string() + ": bad_row " + std::to_string(spoilt)), std::string::npos)
      << text;
  sr.reset();
  fs::remove_all(dir);
}

TEST(HostileHardware, UnreadableHardwareFileIsADiagnosticsRow) {
  // A telemetry file named on the command line that does not exist: an error line (exit status 1,
  // sr->hw_errors) and, like an unreadable trace, an error row of the diagnostics table naming it.
  const fs::path dir = synth_two_ranks("hostile_hw_unreadable");
  const fs::path missing = dir / "telemetry" / "node7.nvidia-smi.csv";
  StreamOptions so;
  so.paths = {dir.string()};
  so.telemetry = {missing.string()};
  so.load.threads = 2;
  so.analysis.threads = 2;
  std::unique_ptr<StreamedRun> sr = stream_run(so, Taxonomy::builtin(), dir.string(), comm());
  ASSERT_TRUE(sr->analysed);
  EXPECT_EQ(sr->hw_errors.size(), 1u);
  size_t rows = 0;
  for (const DiagnosticRow& d : sr->diagnostics)
    if (d.kind == "hardware_file_unreadable") {
      ++rows;
      EXPECT_EQ(d.file, missing.string());
      EXPECT_EQ(d.severity, Severity::kError);
      EXPECT_EQ(d.count, 1u);
      EXPECT_FALSE(d.example.empty());
    }
  EXPECT_EQ(rows, 1u);
  sr.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace chopper
