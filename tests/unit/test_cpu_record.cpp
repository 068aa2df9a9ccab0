// `chopper record`'s CPU files (docs/telemetry_formats.md, "chopper record"): the readers' values
// and diagnostics, the cpu_utilization rows of the hand-made fixtures in tests/data/record_cpu/
// (written by make_fixtures.py there, whose docstring gives the design) against a hand
// computation, and the two CPU findings. docs/metrics.md, "CPU utilization".
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/record/cpu_reader.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/cpu_report.hpp"
#include "chopper/report/html/report_html.hpp"
#include "test_util.hpp"

namespace chopper {
namespace {

using test::data_path;

constexpr Ns kMs = 1000000;

const Diagnostics::Entry* entry(const Diagnostics& d, const std::string& kind) {
  for (const Diagnostics::Entry& e : d.entries())
    if (e.kind == kind) return &e;
  return nullptr;
}

TEST(CpuReader, ValuesAndBadRows) {
  const std::string text =
      "time_ns,cpu,util_pct,user_pct,system_pct,iowait_pct,steal_pct\n"  // line 1
      "1000,0,25.5,20.0,5.5,0.0,0\n"                                     // 2: kept
      "1000,1,100.0,,0.0,0.0,0\n"                                        // 3: user empty
      "2000,0,abc,1,1,1,0\n"                                             // 4: util not a number
      "2000,1,50.0,50.0\n"                                               // 5: 4 fields of 7
      "x,0,1,1,1,1,0\n"                                                  // 6: bad time
      "3000,-1,1,1,1,1,0\n"                                              // 7: bad cpu
      "3000,0,120.0,1,1,1,0\n"                                           // 8: util above 100
      "4000,0,10.0,5.0,5.0,0.0,0";                                       // 9: cut (no \n)
  auto src = ByteSource::from_memory(text, "host.cpu.csv");
  const CpuUtilization c = read_cpu_csv(*src);
  // Rows 2, 3, 4 and 8 are kept (a value that cannot be used is NaN in a kept row).
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c.time_ns[0], 1000);
  EXPECT_EQ(c.cpu[1], 1);
  EXPECT_DOUBLE_EQ(c.util_pct[0], 25.5);
  EXPECT_DOUBLE_EQ(c.system_pct[0], 5.5);
  EXPECT_TRUE(std::isnan(c.user_pct[1]));  // empty: not available, never 0
  EXPECT_DOUBLE_EQ(c.util_pct[1], 100.0);
  EXPECT_TRUE(std::isnan(c.util_pct[2]));
  EXPECT_TRUE(std::isnan(c.util_pct[3]));
  EXPECT_EQ(c.rows_read, 8u);  // lines 2..9
  const Diagnostics& d = c.diagnostics;
  EXPECT_EQ(d.count("value_not_available"), 1u);
  EXPECT_EQ(d.count("bad_value"), 1u);
  EXPECT_EQ(d.count("bad_row"), 2u);  // line 5 (field count), line 7 (cpu)
  EXPECT_EQ(d.count("bad_timestamp"), 1u);
  EXPECT_EQ(d.count("telemetry_out_of_range"), 1u);
  EXPECT_EQ(d.count("truncated_line"), 1u);
  EXPECT_EQ(d.count("unused_field"), 1u);  // steal_pct
  EXPECT_EQ(entry(d, "bad_row")->examples.front(),
            "line 5: 4 fields, the header has 7: 2000,1,50.0,50.0");
  EXPECT_EQ(entry(d, "truncated_line")->examples.front().rfind("line 9: ", 0), 0u);
  EXPECT_EQ(entry(d, "bad_timestamp")->examples.front(), "line 6: time_ns 'x'");
}

TEST(ThreadsReader, QuotedNamesAndBadRows) {
  const std::string text =
      "time_ns,pid,ppid,tid,comm,processor,cpu_time_ns\n"  // 1
      "100,42,1,42,python3,3,1000000\n"                    // 2
      "100,42,1,43,\"a,\"\"b\"\" c\",0,20\n"               // 3: comm a,"b" c
      "100,42,1,44,\"open,1,7\n"                           // 4: quote never closes
      "200,42,1,42,python3,,2000000\n"                     // 5: processor empty
      "200,42,1,45,pt_data_worker,1,\n"                    // 6: cpu time empty
      "200,4x,1,46,w,1,5\n"                                // 7: pid not an integer
      "300,42,1,42,python3,2,3000";                        // 8: cut
  auto src = ByteSource::from_memory(text, "host.threads.csv");
  const ThreadSamples s = read_threads_csv(*src);
  ASSERT_EQ(s.size(), 3u);  // lines 2, 3, 5
  EXPECT_EQ(s.comm[1], "a,\"b\" c");
  EXPECT_EQ(s.tid[1], 43);
  EXPECT_EQ(s.cpu_time_ns[1], 20);
  EXPECT_EQ(s.processor[0], 3);
  EXPECT_EQ(s.processor[2], -1);
  EXPECT_EQ(s.time_ns[2], 200);
  EXPECT_EQ(s.cpu_time_ns[2], 2000000);
  EXPECT_EQ(s.rows_read, 7u);
  const Diagnostics& d = s.diagnostics;
  EXPECT_EQ(d.count("bad_quoting"), 1u);
  EXPECT_EQ(entry(d, "bad_quoting")->examples.front(), "line 4: 100,42,1,44,\"open,1,7");
  EXPECT_EQ(d.count("value_not_available"), 1u);
  EXPECT_EQ(d.count("bad_row"), 1u);
  EXPECT_EQ(d.count("truncated_line"), 1u);
}

TEST(CpuReader, RecognisedByHeader) {
  EXPECT_TRUE(is_cpu_csv("time_ns,cpu,util_pct,user_pct,system_pct,iowait_pct\n1,0,1,1,1,1\n"));
  EXPECT_TRUE(is_threads_csv("time_ns,pid,ppid,tid,comm,processor,cpu_time_ns\r\n"));
  EXPECT_FALSE(is_cpu_csv("time_ns,cpu_load\n"));
  EXPECT_FALSE(is_threads_csv("time_ns,cpu,util_pct\n"));
  EXPECT_FALSE(is_cpu_csv("timestamp, index, power.draw [W]\n"));
}

TEST(CpuReader, FoundInTheRunDirectory) {
  // The fixture's telemetry/ holds testhost.cpu.csv, testhost.threads.csv and testhost.record.json:
  // the two CSVs are one host's files; no telemetry or counter file.
  const HardwareFiles hf = load_hardware({data_path("record_cpu/serial")}, {}, {}, 1);
  ASSERT_EQ(hf.recorded_cpu.size(), 1u);
  const RecordedCpu& r = hf.recorded_cpu.front();
  EXPECT_EQ(r.host, "testhost");
  EXPECT_EQ(r.cpus.size(), 120u);    // 30 ticks × 4 CPUs
  EXPECT_EQ(r.threads.size(), 18u);  // 5 threads × 4 samples, less 2 unchanged
  EXPECT_TRUE(r.cpus.diagnostics.empty());
  EXPECT_TRUE(r.threads.diagnostics.empty());
  EXPECT_TRUE(hf.telemetry.empty());
  EXPECT_TRUE(hf.errors.empty());
  EXPECT_TRUE(has_hardware_files({data_path("record_cpu/serial")}, {}, {}));
}

// A run analysed in memory as `chopper report` does (cli/common.cpp, load_run_hardware).
struct Analysed {
  Run run;
  HardwareRun hw;
  RunAnalysis ra;
  Findings f;
};

std::unique_ptr<Analysed> analyse(const std::string& path) {
  auto a = std::make_unique<Analysed>();
  a->run = load_run({path});
  validate_run(a->run);
  label_run(Taxonomy::builtin(), a->run, 1);
  HardwareFiles hf = load_hardware({path}, {}, {}, 1, telemetry_window(a->run));
  a->hw = align_hardware(a->run, std::move(hf.telemetry), std::move(hf.counters));
  assign_recorded_cpu(std::move(hf.recorded_cpu), a->run, a->hw);
  AnalysisOptions o;
  o.threads = 1;
  a->ra = analyze_run(a->run, o, &a->hw);
  a->f = decide_findings(a->ra, o);
  return a;
}

const Finding* find(const Findings& f, FindingKind k) {
  for (const Finding& x : f.all)
    if (x.kind == k) return &x;
  return nullptr;
}
bool significant(const Findings& f, FindingKind k) {
  const Finding* x = find(f, k);
  return x != nullptr && x->significant;
}

TEST(CpuUtilization, SerialFixtureByHand) {
  const auto a = analyse(data_path("record_cpu/serial"));
  ASSERT_EQ(a->ra.ranks.size(), 1u);
  EXPECT_EQ(a->hw.ranks[0].cpu_pid, 4242);  // the trace's pid is in the threads file
  const std::vector<CpuRow>& rows = a->ra.ranks[0].cpu;
  ASSERT_EQ(rows.size(), 3u);
  // CLOCK_REALTIME of both: the windows are [S + 100 i ms, S + 100 (i + 1) ms), each the ten
  // 10 ms cpu ticks i*10+1 .. i*10+10 and the thread samples at both ends.
  const Ns process[3] = {95 * kMs, 105 * kMs, 95 * kMs};
  for (size_t i = 0; i < 3; ++i) {
    const CpuRow& r = rows[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(r.iteration, static_cast<int64_t>(i) + 1);
    EXPECT_EQ(r.host, "testhost");
    EXPECT_EQ(r.pid, 4242);
    EXPECT_EQ(r.window_ns, 100 * kMs);
    EXPECT_EQ(r.cpus, 4);
    // 7 quiet ticks (1 busy core: 25%) and 3 busy ones (3 cores: 75%): (7 × 25 + 3 × 75) / 10.
    EXPECT_NEAR(r.host_util_pct, 40.0, 1e-9);
    EXPECT_NEAR(r.host_busy_cores, 1.6, 1e-9);  // (7 × 1 + 3 × 3) / 10
    // user: cpu0 80 always; busy ticks + 100 + 50 + 50: (7 × 80/4 + 3 × 280/4) / 10 = 35.
    EXPECT_NEAR(r.host_user_pct, 35.0, 1e-9);
    EXPECT_NEAR(r.host_system_pct, 5.0, 1e-9);   // cpu0's 20 over 4 CPUs
    EXPECT_NEAR(r.host_iowait_pct, 1.75, 1e-9);  // cpu3's 10 in 7 of 10 ticks, over 4 CPUs
    // Main thread 90 ms + autograd 5 ms; "my,"odd" thread" gains 10 ms between its rows at 0 and
    // 200 ms: within the 100 ms sampling interval before its second row (unchanged at 100 ms,
    // so no row then), i.e. all in iteration 2.
    EXPECT_EQ(r.process_cpu_time_ns, process[i]);
    EXPECT_NEAR(r.process_cores, static_cast<double>(process[i]) / (100.0 * kMs), 1e-12);
    EXPECT_NEAR(r.main_thread_busy_share, 0.9, 1e-12);
    // The child named pt_data_worker is the only worker: the compile worker (python3, 50 ms)
    // is a child too, but names no thread pt_data_worker.
    EXPECT_EQ(r.workers, 1);
    EXPECT_EQ(r.worker_cpu_time_ns, 20 * kMs);
    EXPECT_NEAR(r.worker_cores, 0.2, 1e-12);
    EXPECT_NEAR(r.worker_busy_share, 0.2, 1e-12);
    EXPECT_NEAR(r.busiest_worker_share, 0.2, 1e-12);
    // The GPU waits for the host 20 µs before kernel A and 60 ms between A and B; all of it in
    // quiet ticks (1 and 3..8): 25% busy, 3 idle cores.
    EXPECT_EQ(r.host_wait_ns, 60 * kMs + 20000);
    EXPECT_NEAR(r.host_wait_util_pct, 25.0, 1e-9);
    EXPECT_NEAR(r.host_wait_idle_cores, 3.0, 1e-9);
  }
  // Finding (a): the host late 60 ms of 100 while 3 of 4 cores idle and the main thread 90% busy.
  const Finding* s = find(a->f, FindingKind::kHostSerial);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->significant);
  // host_late + launch_overhead + host_stall = the 60.02 ms the GPU waits for the host.
  EXPECT_NEAR(s->cost_ns, 60.02e6, 1);
  EXPECT_EQ(s->samples, 3u);
  EXPECT_NE(s->evidence.find("4 logical CPUs were 25.0% busy (3.0 cores idle"), std::string::npos)
      << s->evidence;
  EXPECT_NE(s->evidence.find("busy 90.0% of the iteration"), std::string::npos) << s->evidence;
  EXPECT_EQ(find(a->f, FindingKind::kLoaderSaturated), nullptr);
}

TEST(CpuUtilization, LoaderFixtureByHand) {
  const auto a = analyse(data_path("record_cpu/loader"));
  const std::vector<CpuRow>& rows = a->ra.ranks[0].cpu;
  ASSERT_EQ(rows.size(), 3u);
  for (const CpuRow& r : rows) {
    // Every tick: 30 + 96 + 94 + 0 = 220% → 2.2 cores, 55%.
    EXPECT_NEAR(r.host_util_pct, 55.0, 1e-9);
    EXPECT_NEAR(r.host_busy_cores, 2.2, 1e-9);
    EXPECT_EQ(r.process_cpu_time_ns, 30 * kMs);
    EXPECT_NEAR(r.main_thread_busy_share, 0.3, 1e-12);
    // Two workers, 96 and 94 ms per 100 ms: 1.9 cores, 0.95 of one core each, the busiest 0.96.
    EXPECT_EQ(r.workers, 2);
    EXPECT_EQ(r.worker_cpu_time_ns, 190 * kMs);
    EXPECT_NEAR(r.worker_cores, 1.9, 1e-12);
    EXPECT_NEAR(r.worker_busy_share, 0.95, 1e-12);
    EXPECT_NEAR(r.busiest_worker_share, 0.96, 1e-12);
    // The GPU idle 60.02 ms before kernel A, the host in the DataLoader's __next__.
    EXPECT_EQ(r.host_wait_ns, 60 * kMs + 20000);
    EXPECT_NEAR(r.host_wait_idle_cores, 1.8, 1e-9);
  }
  // Finding (b): data loading costs 60 ms per iteration and the workers are saturated.
  const Finding* l = find(a->f, FindingKind::kLoaderSaturated);
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(l->significant);
  EXPECT_NEAR(l->cost_ns, 60e6, 1);
  EXPECT_NE(l->evidence.find("2 data-loader workers used 1.90 cores (95.0% of one core each; "
                             "the busiest 96.0%)"),
            std::string::npos)
      << l->evidence;
  // 0.95 cores per worker: single-threaded workers, no word of threads inside them.
  EXPECT_EQ(l->evidence.find("cores of threads"), std::string::npos) << l->evidence;
  // The main thread is 30% busy: not serial.
  EXPECT_FALSE(significant(a->f, FindingKind::kHostSerial));
}

TEST(CpuUtilization, PlainFixtureHasNoCpuFinding) {
  // The serial fixture's CPU files, but kernels back to back: the GPU waits 20 µs per iteration.
  const auto a = analyse(data_path("record_cpu/plain"));
  ASSERT_EQ(a->ra.ranks[0].cpu.size(), 3u);
  EXPECT_EQ(a->ra.ranks[0].cpu[0].host_wait_ns, 20000);
  EXPECT_FALSE(significant(a->f, FindingKind::kHostSerial));
  EXPECT_FALSE(significant(a->f, FindingKind::kLoaderSaturated));
  EXPECT_EQ(find(a->f, FindingKind::kLoaderSaturated), nullptr);  // 20% busy workers
}

TEST(CpuUtilization, EmptyWithoutCpuFiles) {
  const auto a = analyse(data_path("mini_train.json"));
  for (const RankAnalysis& r : a->ra.ranks) EXPECT_TRUE(r.cpu.empty());
  EXPECT_EQ(find(a->f, FindingKind::kHostSerial), nullptr);
  html::TableStore store;
  cpu_utilization_table(a->ra, store);
  ASSERT_NE(store.get("cpu_utilization"), nullptr);
  EXPECT_EQ(store.get("cpu_utilization")->rows(), 0u);
}

TEST(CpuUtilization, TableCellsAndDiagnosticsRows) {
  const auto a = analyse(data_path("record_cpu/serial"));
  html::TableStore store;
  cpu_utilization_table(a->ra, store);
  const Table& t = *store.get("cpu_utilization");
  ASSERT_EQ(t.rows(), 3u);
  EXPECT_EQ(t.get_int(1, t.col("process_cpu_time_ns")), 105 * kMs);
  EXPECT_EQ(t.get_text(0, t.col("host")), "testhost");
  EXPECT_EQ(kCpuUtilizationTable.columns[kCpuUtilizationTable.handle("host_busy_cores").index].unit,
            "cores");
  // A clean fixture: no reader row in the diagnostics.
  EXPECT_TRUE(recorded_cpu_diagnostics(a->hw).empty());
}

TEST(CpuUtilization, BadRowsReachTheDiagnosticsTable) {
  // The serial fixture with a bad row and a cut last line appended to its cpu file: both counted
  // in a diagnostics row naming the file (stage read), the rows before them still used.
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("chopper_cpu_diag_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(data_path("record_cpu/serial"), dir, fs::copy_options::recursive);
  const std::string cpu = (dir / "telemetry" / "testhost.cpu.csv").string();
  {
    std::ofstream out(cpu, std::ios::app);
    out << "1700000000400000000,0,12.0\n1700000000410000000,0,1";  // lines 122 and 123 (cut)
  }
  const auto a = analyse(dir.string());
  EXPECT_EQ(a->ra.ranks[0].cpu.size(), 3u);
  const std::vector<DiagnosticRow> rows = recorded_cpu_diagnostics(a->hw);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].file, cpu);
  EXPECT_EQ(rows[0].kind, "bad_row");
  EXPECT_EQ(rows[0].stage, "read");
  EXPECT_EQ(rows[0].of_count, 122);  // data lines 2..123
  EXPECT_EQ(rows[0].example, "line 122: 3 fields, the header has 6: 1700000000400000000,0,12.0");
  EXPECT_EQ(rows[1].kind, "truncated_line");
  EXPECT_EQ(rows[1].example, "line 123: 1700000000410000000,0,1");
  // As the diagnostics table gets them (after the other hardware files' rows).
  const std::vector<DiagnosticRow> all = hardware_use_diagnostics(a->hw);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].kind, "truncated_line");
  fs::remove_all(dir);
}

TEST(CpuUtilization, OneHostWithoutTheTracesProcess) {
  // The serial fixture's threads file with the rank's process renamed 4242 -> 5242: the run's only
  // host is still the rank's (host columns as before), its process unknown (NULL).
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("chopper_cpu_pid_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(data_path("record_cpu/serial"), dir, fs::copy_options::recursive);
  const fs::path threads = dir / "telemetry" / "testhost.threads.csv";
  std::string text = test::read_file(threads.string());
  for (size_t at; (at = text.find("4242")) != std::string::npos;) text.replace(at, 4, "5242");
  std::ofstream(threads, std::ios::trunc) << text;
  const auto a = analyse(dir.string());
  EXPECT_EQ(a->hw.ranks[0].cpu_pid, -1);
  ASSERT_EQ(a->ra.ranks[0].cpu.size(), 3u);
  const CpuRow& r = a->ra.ranks[0].cpu[0];
  EXPECT_NEAR(r.host_util_pct, 40.0, 1e-9);
  EXPECT_NEAR(r.host_wait_idle_cores, 3.0, 1e-9);
  EXPECT_EQ(r.process_cpu_time_ns, -1);
  EXPECT_TRUE(std::isnan(r.main_thread_busy_share));
  html::TableStore store;
  cpu_utilization_table(a->ra, store);
  const Table& t = *store.get("cpu_utilization");
  EXPECT_TRUE(t.is_null(0, t.col("pid")));
  EXPECT_TRUE(t.is_null(0, t.col("workers")));
  EXPECT_TRUE(t.is_null(0, t.col("process_cores")));
  EXPECT_FALSE(t.is_null(0, t.col("host_busy_cores")));
  fs::remove_all(dir);
}

TEST(CpuUtilization, ReportFigureOnlyWithCpuFiles) {
  // The report draws the host's cores per iteration when cpu_utilization has rows, and has no CPU
  // section at all otherwise (reports render, analyses decide).
  const auto a = analyse(data_path("record_cpu/serial"));
  html::TableStore with;
  cpu_utilization_table(a->ra, with);
  const std::string s = html::render_report(with, html::ReportInfo{});
  const size_t at = s.find("<figure id=\"fig-cpu\"");
  ASSERT_NE(at, std::string::npos);
  const std::string fig = s.substr(at, s.find("</figure>", at) - at);
  EXPECT_NE(fig.find("data-rank=\"0\" data-iteration=\"3\" data-util-pct=\"40\""),
            std::string::npos);
  const auto b = analyse(data_path("mini_train.json"));
  html::TableStore without;
  cpu_utilization_table(b->ra, without);
  const std::string n = html::render_report(without, html::ReportInfo{});
  EXPECT_EQ(n.find("fig-cpu"), std::string::npos);
  EXPECT_EQ(n.find("Host CPUs"), std::string::npos);
}

}  // namespace
}  // namespace chopper
