// A run `chopper record` wrote (tests/data/record_run, made by hand): one rank's Kineto trace
// (pid 4242, baseTimeNanoseconds B = 1790000000000000000) and, in telemetry/, host gpunode7's
// gpu.csv, clock.csv, record.json (pids 4240, 4242, 4250), cpu.csv and threads.csv.
//
// The trace: ProfilerStep#1..4 on the host over [100, 200), [200, 330), [330, 420), [420, 560) ms
// after B; in each, one kernel from 1 ms after the step's start to 60, 90, 30 and 100 ms after it.
// gpu.csv: GPU 0 sampled every 10 ms from B to B + 600 ms (61 rows), each sample describing the
// 10 ms ending at its stamp: 300 W (util 100 %, SM 1980 MHz) when that interval overlaps a kernel,
// 100 W (util 0, 1410 MHz, throttle 0x1 gpu_idle) otherwise; the energy counter starts at 1000 J
// and grows by power × 10 ms per row. Row t = 50 ms has an empty temp_c; a 62nd row (t = 610 ms)
// is cut (no end of line); pcie_tx_bytes_per_s is a rate no metric holds.
//
// Energy per iteration (a step's edges fall on sample stamps, so each sample interval lies wholly
// inside or outside it and the energy is the sum of its samples × 10 ms):
//   step 1 [100, 200): samples 110..160 busy (6 × 3 J) + 170..200 idle (4 × 1 J) = 22 J, 220 W
//   step 2 [200, 330): 210..290 busy (9 × 3 J) + 300..330 idle (4 × 1 J) = 31 J, 31/0.13 W
//   step 3 [330, 420): 340..360 busy (3 × 3 J) + 370..420 idle (6 × 1 J) = 15 J, 15/0.09 W
//   step 4 [420, 560): 430..520 busy (10 × 3 J) + 530..560 idle (4 × 1 J) = 34 J, 34/0.14 W
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/record/record_meta.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/hardware_report.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

constexpr Ns kB = 1790000000000000000;
constexpr Ns kMs = 1000000;

std::string run_dir() {
  return data_path("record_run");
}
std::string gpu_file() {
  return data_path("record_run/telemetry/gpunode7.gpu.csv");
}

const Series& series_of(const TelemetryData& d, int gpu, Metric m) {
  for (const Series& s : d.series)
    if (s.gpu.index == gpu && s.metric == m) return s;
  ADD_FAILURE() << "no " << metric_name(m) << " series of GPU " << gpu;
  static const Series none;
  return none;
}

TelemetryData read_text(const std::string& text) {
  auto src = ByteSource::from_memory(text, "host.gpu.csv");
  return read_telemetry(*src);
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The fixture copied to a temp dir, `edit` applied to its telemetry/ folder.
template <class Edit>
fs::path edited_copy(const std::string& name, Edit edit) {
  const fs::path dir = temp_dir("record_" + name);
  fs::copy(run_dir(), dir, fs::copy_options::recursive);
  edit(dir / "telemetry");
  return dir;
}

struct Aligned {
  Run run;
  HardwareFiles files;
  HardwareRun hw;
};
std::unique_ptr<Aligned> align_dir(const std::string& dir) {
  auto a = std::make_unique<Aligned>();
  a->run = load_run({dir});
  label_run(Taxonomy::builtin(), a->run, 1);
  a->files = load_hardware({dir}, {}, {}, 1);
  a->hw = align_hardware(a->run, a->files.telemetry, {});
  return a;
}

}  // namespace

// The GPU file: format, clock, every row's values, and what is counted.
TEST(RecordedRun, GpuFileValuesAndDiagnostics) {
  const TelemetryData d = read_telemetry_file(gpu_file());
  EXPECT_EQ(d.format, "chopper-record");
  EXPECT_EQ(d.samples, 61u);  // rows t = 0..600 ms; the cut 62nd is not one
  const Series& p = series_of(d, 0, Metric::kPowerW);
  ASSERT_EQ(p.size(), 61u);
  EXPECT_EQ(p.clock, ClockDomain::kRealtimeUtc);
  EXPECT_EQ(p.gpu.uuid, "GPU-5d9a3c1e-7f42-4b8e-9a10-2c3d4e5f6a7b");
  EXPECT_EQ(p.t_ns.front(), kB);
  EXPECT_EQ(p.t_ns.back(), kB + 600 * kMs);
  EXPECT_DOUBLE_EQ(p.value[11], 300.0);  // t = 110 ms: the interval (100, 110] holds a kernel
  EXPECT_DOUBLE_EQ(p.value[17], 100.0);  // t = 170 ms: after step 1's kernel (ends at 160)
  // Energy counter: 1000 J + 28 busy samples × 3 J + 33 idle × 1 J.
  EXPECT_DOUBLE_EQ(series_of(d, 0, Metric::kEnergyJ).value.back(), 1117.0);
  EXPECT_EQ(series_of(d, 0, Metric::kSmClockMhz).value[11], 1980.0);
  EXPECT_EQ(series_of(d, 0, Metric::kMemClockMhz).value[0], 2619.0);
  EXPECT_EQ(series_of(d, 0, Metric::kUtilGpuPct).value[11], 100.0);
  EXPECT_EQ(series_of(d, 0, Metric::kUtilMemPct).value[11], 40.0);
  EXPECT_EQ(series_of(d, 0, Metric::kThrottleReasons).value[0], 1.0);  // 0x...01: gpu_idle
  EXPECT_EQ(series_of(d, 0, Metric::kTempMemC).value[0], 60.0);
  // temp_c: one empty cell (t = 50 ms): 60 samples, the empty one counted, never read as 0.
  const Series& temp = series_of(d, 0, Metric::kTempGpuC);
  EXPECT_EQ(temp.size(), 60u);
  EXPECT_EQ(temp.t_ns[5], kB + 60 * kMs);
  EXPECT_EQ(d.diagnostics.count("value_not_available"), 1u);
  EXPECT_EQ(d.diagnostics.count("truncated_line"), 1u);
  EXPECT_EQ(d.diagnostics.count("unused_field"), 1u);  // pcie_tx_bytes_per_s
  EXPECT_EQ(d.series.size(), 9u);  // the 9 metric columns of GPU 0 (pcie_tx_bytes_per_s unused)
}

// Rows that cannot be read are counted, never fatal; two GPUs give two series of each metric;
// a header of other names (or order) is not this format.
TEST(RecordedRun, GpuFileBadRows) {
  const std::string h =
      "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
      "util_mem_pct,throttle_reasons,nvlink_tx_bytes,fan_pct\n";
  const std::string text = h +
                           "1790000000000000000,0,GPU-a,200.5,10.000,1980,2619,50,90,30,0x0,5,40\n"
                           "1790000000005000000,1,GPU-b,210,11.000,1980,2619,51,91,31,0x4,6,40\n"
                           "17900000000x0000000,0,GPU-a,200,12,1,1,1,1,1,0x0,7,40\n"   // bad time
                           "1790000000010000000,-1,GPU-a,200,12,1,1,1,1,1,0x0,7,40\n"  // bad GPU
                           "1790000000010000000,0,GPU-a,200\n"                         // short
                           "1790000000010000000,0,GPU-a,300 W,12,1980,2619,50,abc,30,0x0,7,40\n" +
                           h;  // written again: ignored
  const TelemetryData d = read_text(text);
  EXPECT_EQ(d.format, "chopper-record");
  EXPECT_EQ(d.samples, 3u);
  EXPECT_EQ(d.diagnostics.count("bad_timestamp"), 1u);
  EXPECT_EQ(d.diagnostics.count("bad_row"), 2u);
  EXPECT_EQ(d.diagnostics.count("bad_value"), 2u);     // "300 W" (a unit), "abc"
  EXPECT_EQ(d.diagnostics.count("unused_field"), 1u);  // fan_pct
  EXPECT_EQ(series_of(d, 0, Metric::kPowerW).size(), 1u);
  EXPECT_EQ(series_of(d, 0, Metric::kUtilGpuPct).size(), 1u);
  EXPECT_EQ(series_of(d, 0, Metric::kSmClockMhz).size(), 2u);
  EXPECT_DOUBLE_EQ(series_of(d, 1, Metric::kPowerW).value[0], 210.0);
  EXPECT_EQ(series_of(d, 1, Metric::kThrottleReasons).value[0], 4.0);
  EXPECT_EQ(series_of(d, 1, Metric::kLinkTxBytes).value[0], 6.0);
  EXPECT_EQ(sniff_telemetry("gpu,time_ns,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,"
                            "util_gpu_pct,util_mem_pct,throttle_reasons\n",
                            "x.gpu.csv"),
            "");
  EXPECT_THROW(read_text(h), InputError);  // a header and no row
  // A metric's column given twice: the first is read, the second listed as unused.
  const TelemetryData twice = read_text(
      "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
      "util_mem_pct,throttle_reasons,power_w\n"
      "1790000000000000000,0,GPU-a,200,10,1980,2619,50,90,30,0x0,999\n");
  EXPECT_EQ(twice.diagnostics.count("unused_field"), 1u);
  EXPECT_DOUBLE_EQ(series_of(twice, 0, Metric::kPowerW).value.at(0), 200.0);
}

// A windowed read (TelemetryWindow) of a long recording: 200 s of 2 GPUs at 10 ms, a window of
// 1 s at 100 s: the rows read are the window's, widened by max(20 ms, 2 periods) = 20 ms either
// side (1 s + 40 ms of 10 ms rows: 104 or 105 ticks of 2 GPUs), plus the first and last 64 lines;
// inside the window the samples are the whole read's; the rest is counted as
// rows_outside_window.
TEST(RecordedRun, WindowedRead) {
  std::string text =
      "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
      "util_mem_pct,throttle_reasons\n";
  for (int k = 0; k < 20000; ++k)
    for (int g = 0; g < 2; ++g)
      text += std::to_string(kB + k * 10 * kMs + g * 100000) + "," + std::to_string(g) + ",GPU-x," +
              std::to_string(100 + k % 50) + "," + std::to_string(k) + ",1980,2619,50," +
              std::to_string(k % 100) + ",10,0x0\n";
  const TelemetryData whole = read_text(text);
  EXPECT_EQ(whole.samples, 40000u);
  TelemetryReadOptions o;
  const Ns from = kB + 100000 * kMs, to = from + 1000 * kMs;
  o.window.utc = {{from, to}};
  o.window.pad_ns = 20 * kMs;
  o.window.pad_periods = 2;
  o.window.min_file_bytes = 0;
  auto src = ByteSource::from_memory(text, "host.gpu.csv");
  const TelemetryData part = read_telemetry(*src, o);
  EXPECT_GE(part.samples, 2 * 103u + 2 * 64u);
  EXPECT_LE(part.samples, 2 * 105u + 2 * 64u);
  const double left_out = static_cast<double>(whole.samples - part.samples);
  EXPECT_NEAR(static_cast<double>(part.diagnostics.count("rows_outside_window")), left_out,
              0.01 * left_out);
  const Series& w = series_of(whole, 1, Metric::kPowerW);
  const Series& p = series_of(part, 1, Metric::kPowerW);
  EXPECT_EQ(p.t_ns.front(), w.t_ns.front());
  EXPECT_EQ(p.t_ns.back(), w.t_ns.back());
  size_t inside = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w.t_ns[i] < from || w.t_ns[i] > to) continue;
    ++inside;
    const auto it = std::lower_bound(p.t_ns.begin(), p.t_ns.end(), w.t_ns[i]);
    ASSERT_TRUE(it != p.t_ns.end() && *it == w.t_ns[i]);
    EXPECT_EQ(p.value[static_cast<size_t>(it - p.t_ns.begin())], w.value[i]);
  }
  EXPECT_EQ(inside, 100u);  // GPU 1's stamps at 100.0001 .. 100.9901 s
}

// record.json (unknown keys accepted, null end and exit status) and clock.csv.
TEST(RecordedRun, MetaAndClockFiles) {
  const RecordMeta m = read_record_meta(data_path("record_run/telemetry/gpunode7.record.json"));
  EXPECT_EQ(m.host, "gpunode7");
  EXPECT_EQ(m.pids, (std::vector<int64_t>{4240, 4242, 4250}));
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_EQ(m.gpus[0].index, 0);
  EXPECT_EQ(m.gpus[0].uuid, "GPU-5d9a3c1e-7f42-4b8e-9a10-2c3d4e5f6a7b");
  EXPECT_EQ(m.interval_ms, 10);
  EXPECT_EQ(m.exit_status, 0);
  EXPECT_EQ(m.command, (std::vector<std::string>{"python3", "train.py"}));
  const fs::path dir = temp_dir("record_meta");
  fs::create_directories(dir);
  write(dir / "n1.record.json",
        R"({"format": "chopper-record", "version": 1, "host": "n1", "end_realtime_ns": null,)"
        R"( "exit_status": null, "pids": [7]})");
  const RecordMeta running = read_record_meta((dir / "n1.record.json").string());
  EXPECT_EQ(running.end_realtime_ns, -1);
  EXPECT_EQ(running.exit_status, -1);
  write(dir / "n1.json", R"({"format": "other"})");
  EXPECT_THROW(read_record_meta((dir / "n1.json").string()), InputError);

  // The fixture's clock: realtime - monotonic the same at both ends.
  const ClockCheck steady = read_record_clock(data_path("record_run/telemetry/gpunode7.clock.csv"));
  EXPECT_EQ(steady.pairs, 2u);
  EXPECT_EQ(steady.drift_ns, 0);
  EXPECT_EQ(steady.note(), "");
  // Over 10 s: +0.2 ms a second for 4 s (slew), a 5 ms jump, then steady: drift 5.8 ms.
  std::string c = "realtime_ns,monotonic_ns\n";
  Ns off = 1000;
  for (int k = 0; k <= 10; ++k) {
    if (k >= 1 && k <= 4) off += 200000;
    if (k == 6) off += 5000000;
    c += std::to_string(kB + k * 1000 * kMs + off) + "," + std::to_string(k * 1000 * kMs) + "\n";
  }
  c += "123";  // cut
  write(dir / "n1.clock.csv", c);
  const ClockCheck j = read_record_clock((dir / "n1.clock.csv").string());
  EXPECT_EQ(j.pairs, 11u);
  EXPECT_EQ(j.bad_rows, 1u);
  EXPECT_EQ(j.drift_ns, 5800000);
  EXPECT_EQ(j.step_ns, 5000000);
  EXPECT_EQ(j.step_line, 8u);  // header on line 1, k = 6 on line 8
  EXPECT_EQ(j.note(),
            "realtime - monotonic changed by +5.800 ms over 10.0 s (580000 ns/s); stepped by "
            "+5.000 ms at line 8 (a clock jump)");
  fs::remove_all(dir);
}

// The run directory: every recorder file recognised (none skipped, none an error), the GPU file
// given its host's pids, and the CPU files left for their reader.
TEST(RecordedRun, FilesRecognised) {
  const HardwareFiles hf = load_hardware({run_dir()}, {}, {}, 1);
  EXPECT_TRUE(hf.errors.empty()) << (hf.errors.empty() ? "" : hf.errors.front());
  EXPECT_TRUE(hf.skipped.empty()) << (hf.skipped.empty() ? "" : hf.skipped.front().first);
  ASSERT_EQ(hf.telemetry.size(), 1u);
  EXPECT_TRUE(hf.telemetry[0].recorder.found);
  EXPECT_EQ(hf.telemetry[0].recorder.host, "gpunode7");
  EXPECT_EQ(hf.telemetry[0].recorder.pids, (std::vector<int64_t>{4240, 4242, 4250}));
  EXPECT_EQ(hf.telemetry[0].recorder.clock_note, "");
  EXPECT_EQ(hf.recorded_hosts.size(), 1u);
  EXPECT_EQ(hf.recorded_clocks.size(), 1u);
  EXPECT_EQ(hf.recorded_cpu_files.size(), 2u);  // cpu.csv, threads.csv
}

// Alignment: "recorder clock", offset 0, uncertainty half the 10 ms period; the rank whose trace
// pid (4242) record.json lists gets GPU 0's series; the correlation at 0 is high (the power and
// utilization follow the kernels by construction).
TEST(RecordedRun, RecorderClockAlignment) {
  auto a = align_dir(run_dir());
  ASSERT_EQ(a->hw.telemetry.size(), 1u);
  const TelemetryAlignment& t = a->hw.telemetry[0];
  EXPECT_EQ(t.method, "recorder clock");
  EXPECT_EQ(t.offset_ns, 0);
  EXPECT_EQ(t.period_ns, 10 * kMs);
  EXPECT_EQ(t.uncertainty_ns, 5 * kMs);
  EXPECT_GT(t.correlation, 0.9);
  EXPECT_EQ(t.ranks, (std::vector<int64_t>{0}));
  ASSERT_EQ(a->hw.ranks.size(), 1u);
  EXPECT_TRUE(a->hw.ranks[0].has(Metric::kPowerW));
  EXPECT_TRUE(a->hw.ranks[0].has(Metric::kEnergyJ));
}

// `chopper analyze`'s power_energy table from the recorded telemetry: per iteration the energy
// and mean power computed by hand in the header comment, and the energy counter's growth equal.
TEST(RecordedRun, PerIterationEnergyAndPower) {
  auto a = align_dir(run_dir());
  AnalysisOptions o;
  o.threads = 1;
  RunAnalysis ra = analyze_run(a->run, o, &a->hw);
  struct NoRankRows : RankRows {
    void rows(RankStream, TableSink&) override {}
  } none;
  struct Keep : TableSink {
    std::map<std::string, std::unique_ptr<Table>> tables;
    Table* cur = nullptr;
    void begin(const TableSchema& s) override {
      cur = (tables[s.name] = std::make_unique<Table>(s)).get();
    }
    void row(std::span<const Cell> cells) override { cur->add_row(cells); }
    void end() override {}
  } keep;
  hardware_tables(ra, o, keep, none);
  ASSERT_TRUE(keep.tables.count("power_energy"));
  const Table& t = *keep.tables.at("power_energy");
  constexpr ColumnHandle kIter = kPowerEnergyTable.handle("iteration"),
                         kPhase = kPowerEnergyTable.handle("phase"),
                         kTime = kPowerEnergyTable.handle("time_ns"),
                         kEnergy = kPowerEnergyTable.handle("energy_j"),
                         kMean = kPowerEnergyTable.handle("mean_power_w"),
                         kCounter = kPowerEnergyTable.handle("energy_counter_j");
  const std::map<int64_t, std::pair<Ns, double>> want = {{1, {100 * kMs, 22.0}},
                                                         {2, {130 * kMs, 31.0}},
                                                         {3, {90 * kMs, 15.0}},
                                                         {4, {140 * kMs, 34.0}}};
  std::map<int64_t, bool> seen;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (!t.is_null(r, kPhase.index)) continue;
    const int64_t it = t.get_int(r, kIter.index);
    ASSERT_TRUE(want.count(it)) << "iteration " << it;
    seen[it] = true;
    const auto [ns, joules] = want.at(it);
    EXPECT_EQ(t.get_int(r, kTime.index), ns) << "iteration " << it;
    EXPECT_NEAR(t.get_real(r, kEnergy.index), joules, 1e-9) << "iteration " << it;
    EXPECT_NEAR(t.get_real(r, kMean.index), joules / (static_cast<double>(ns) * 1e-9), 1e-6)
        << "iteration " << it;
    EXPECT_NEAR(t.get_real(r, kCounter.index), joules, 1e-6) << "iteration " << it;
  }
  EXPECT_EQ(seen.size(), 4u);
}

// The GPU file's clock 50 ms late (every time_ns + 50 ms): offset 0 is kept, and the method says
// where the activity would put it (+50 ms, where the samples match the kernels again).
TEST(RecordedRun, DisagreementIsReported) {
  const fs::path dir = edited_copy("shifted", [](const fs::path& tel) {
    const std::string text = read_file((tel / "gpunode7.gpu.csv").string());
    std::string out;
    size_t p = 0;
    while (p < text.size()) {
      size_t nl = text.find('\n', p);
      const std::string line = text.substr(p, nl == std::string::npos ? nl : nl - p + 1);
      p = nl == std::string::npos ? text.size() : nl + 1;
      const size_t comma = line.find(',');
      int64_t t = 0;
      if (p > line.size() && comma != std::string::npos &&
          parse_int64(line.substr(0, comma), t) == DecimalStatus::kExact)
        out += std::to_string(t + 50 * kMs) + line.substr(comma);
      else
        out += line;
    }
    write(tel / "gpunode7.gpu.csv", out);
  });
  auto a = align_dir(dir.string());
  ASSERT_EQ(a->hw.telemetry.size(), 1u);
  const TelemetryAlignment& t = a->hw.telemetry[0];
  EXPECT_EQ(t.offset_ns, 0);
  // The kernels start 1 ms into their 10 ms sample intervals, so offsets a few 0.5 ms steps
  // around +50 ms fit as well (r = 1.00): the one found is within the uncertainty (T/2) of 50.
  const std::string head = "recorder clock (disagrees with the activity: best offset ";
  ASSERT_EQ(t.method.rfind(head, 0), 0u) << t.method;
  const double best_ms = std::stod(t.method.substr(head.size()));
  EXPECT_NEAR(best_ms, 50.0, 5.0) << t.method;
  EXPECT_NE(t.method.find(" ms, r=1.00, vs r="), std::string::npos) << t.method;
  EXPECT_NE(t.method.find(" at 0; offset 0 kept)"), std::string::npos) << t.method;
  fs::remove_all(dir);
}

// A clock that stepped while recording, and a record.json whose pids no trace has (the only host:
// given every rank), are said in the method.
TEST(RecordedRun, ClockStepAndNoPidMatchAreSaid) {
  const fs::path dir = edited_copy("notes", [](const fs::path& tel) {
    write(tel / "gpunode7.clock.csv",
          "realtime_ns,monotonic_ns\n"
          "1789999999995000000,4999995000000\n"
          "1790000000300000000,5000300000000\n"
          "1790000000610000000,5000605000000\n");  // +5 ms between the last two pairs
    std::string meta = read_file((tel / "gpunode7.record.json").string());
    const size_t at = meta.find("4242");
    meta.replace(at, 4, "4243");
    write(tel / "gpunode7.record.json", meta);
  });
  auto a = align_dir(dir.string());
  ASSERT_EQ(a->hw.telemetry.size(), 1u);
  const TelemetryAlignment& t = a->hw.telemetry[0];
  EXPECT_EQ(t.method,
            "recorder clock (recorder clock suspect: realtime - monotonic changed by +5.000 ms "
            "over 0.6 s (8196721 ns/s); stepped by +5.000 ms at line 4 (a clock jump)) (no "
            "trace's process id is in gpunode7's record.json pids: the only recorded host, given "
            "every rank)");
  EXPECT_EQ(t.ranks, (std::vector<int64_t>{0}));
  EXPECT_EQ(t.offset_ns, 0);
  fs::remove_all(dir);
}

// Two hosts, one rank each, both on device 0 of traces that list 2 devices (so the node
// arithmetic would put both ranks on node 0): each host's file goes to the rank whose pid its
// record.json lists, with no conflict. Host gpunode8 records rank 1 (pid 5252) at twice the power
// (600 W busy, 200 W idle): rank 1's step 1 energy is 2 × 22 J. A rank whose pid both hosts list
// is given to neither, and both rows say so.
TEST(RecordedRun, TwoHostsByProcessId) {
  auto replace_all = [](std::string s, const std::string& a, const std::string& b) {
    for (size_t at = s.find(a); at != std::string::npos; at = s.find(a, at + b.size()))
      s.replace(at, a.size(), b);
    return s;
  };
  auto make = [&](const std::string& name, const std::string& host_b_pids) {
    return edited_copy(name, [&](const fs::path& tel) {
      const fs::path dir = tel.parent_path();
      std::string t0 = read_file((dir / "trace.json").string());
      const std::string dev = t0.substr(t0.find("{\"id\": 0"));
      const std::string two_devices =
          dev.substr(0, dev.find('}') + 1) + ", " +
          replace_all(dev.substr(0, dev.find('}') + 1), "\"id\": 0", "\"id\": 1");
      t0 = replace_all(t0, dev.substr(0, dev.find('}') + 1), two_devices);
      write(dir / "trace.json", t0);
      std::string t1 = replace_all(t0, "4242", "5252");
      t1 = replace_all(t1, "\"rank\": 0", "\"rank\": 1");
      write(dir / "trace1.json", t1);
      std::string gpu = read_file((tel / "gpunode7.gpu.csv").string());
      gpu = replace_all(gpu, ",300.000,", ",600.000,");
      gpu = replace_all(gpu, ",100.000,", ",200.000,");
      write(tel / "gpunode8.gpu.csv", gpu);
      write(tel / "gpunode8.record.json",
            replace_all(replace_all(read_file((tel / "gpunode7.record.json").string()), "gpunode7",
                                    "gpunode8"),
                        "[\n  4240,\n  4242,\n  4250\n ]", host_b_pids));
    });
  };
  {
    const fs::path dir = make("two_hosts", "[5252]");
    auto a = align_dir(dir.string());
    EXPECT_TRUE(a->files.errors.empty());
    EXPECT_TRUE(a->hw.errors.empty()) << (a->hw.errors.empty() ? "" : a->hw.errors.front());
    ASSERT_EQ(a->hw.telemetry.size(), 2u);
    for (const TelemetryAlignment& t : a->hw.telemetry) {
      EXPECT_EQ(t.method, "recorder clock") << t.file;
      EXPECT_EQ(t.node, 0) << t.file;  // both ranks on node 0 by the traces' 2 devices
      const bool b = t.file.find("gpunode8") != std::string::npos;
      EXPECT_EQ(t.ranks, (std::vector<int64_t>{b ? 1 : 0})) << t.file;
    }
    ASSERT_EQ(a->hw.ranks.size(), 2u);
    for (const RankHardware& rh : a->hw.ranks) {
      const Series& p = rh.at(Metric::kPowerW);
      ASSERT_FALSE(p.t_ns.empty()) << "rank " << rh.rank;
      EXPECT_EQ(*std::max_element(p.value.begin(), p.value.end()), rh.rank == 1 ? 600.0 : 300.0);
      // Step 1 [100, 200) ms: 22 J on host gpunode7, twice that on gpunode8.
      EXPECT_NEAR(integral_hold(p, kB + 100 * kMs, kB + 200 * kMs), rh.rank == 1 ? 44.0 : 22.0,
                  1e-9);
    }
    fs::remove_all(dir);
  }
  {
    const fs::path dir = make("two_hosts_same_pid", "[5252, 4242]");
    auto a = align_dir(dir.string());
    ASSERT_EQ(a->hw.telemetry.size(), 2u);
    for (const TelemetryAlignment& t : a->hw.telemetry) {
      const bool b = t.file.find("gpunode8") != std::string::npos;
      if (b) {
        EXPECT_EQ(t.method,
                  "recorder clock (rank(s) 0: a process id also in another host's record.json "
                  "pids, left out)");
        EXPECT_EQ(t.ranks, (std::vector<int64_t>{1}));
      } else {
        EXPECT_EQ(t.method,
                  "none: no ranks on node 7 (the traces' ranks are on nodes 0 to 0) (rank(s) 0: "
                  "a process id also in another host's record.json pids, left out; placed by its "
                  "file name or order)");
      }
    }
    fs::remove_all(dir);
  }
}
