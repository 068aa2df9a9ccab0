// Hardware files that do not belong to the traced run, or not to it alone: a counter file of
// another process, vendor or run is refused (no counter of it used), a telemetry file whose
// recording does not reach the traced time is not aligned (correlation NULL), two telemetry files
// for one node's GPUs are an error naming both unless they are one recording split in time, which
// is put together (energy per iteration as from the whole file: truth.json's energy_j within the
// 1% the hardware goldens use). The fixtures are the real rocprofv3 documentation CSVs and
// synthetic runs' own files, rewritten as a user would get them (shifted by days, renamed, split,
// copied beside another tool's file). docs/metrics.md, "Hardware" / "Alignment".
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>

#include "chopper/analysis/analysis.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

// A run analysed as analyze analyses it in memory: its hardware files read through the run's
// telemetry window, aligned, joined.
struct Analysed {
  Run run;
  std::vector<std::string> errors;  // unreadable files, then files that cannot be used together
  HardwareRun hw;
  RunAnalysis ra;
};

std::unique_ptr<Analysed> analyse(const std::vector<std::string>& paths,
                                  const std::vector<std::string>& counters = {}) {
  auto a = std::make_unique<Analysed>();
  a->run = load_run(paths);
  validate_run(a->run);
  label_run(Taxonomy::builtin(), a->run, 2);
  std::vector<std::string> c = counters;
  c.insert(c.end(), a->run.counter_passes.begin(), a->run.counter_passes.end());
  HardwareFiles hf = load_hardware(paths, {}, c, 2, telemetry_window(a->run));
  a->errors = hf.errors;
  a->hw = align_hardware(a->run, std::move(hf.telemetry), std::move(hf.counters));
  a->errors.insert(a->errors.end(), a->hw.errors.begin(), a->hw.errors.end());
  AnalysisOptions o;
  o.threads = 2;
  a->ra = analyze_run(a->run, o, &a->hw);
  return a;
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.rfind(p, 0) == 0;
}

// Rewrites a CSV file's data lines (not its first line): `f` gets the line's fields as written
// (quotes kept; commas inside quotes do not split) and its index among the data lines.
void rewrite_csv(const fs::path& p,
                 const std::function<void(std::vector<std::string>&, size_t)>& f) {
  std::ifstream in(p);
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  for (size_t k = 0; std::getline(in, line); ++k) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      if (ch == ',' && !quoted)
        fields.emplace_back();
      else
        fields.back() += ch;
    }
    f(fields, k);
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
    out += "\n";
  }
  in.close();
  std::ofstream(p, std::ios::binary | std::ios::trunc) << out;
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

void write_lines(const fs::path& p, const std::vector<std::string>& v, size_t from, size_t to) {
  std::string s = v.front() + "\n";
  for (size_t i = from; i < to; ++i) s += v[i] + "\n";
  std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

SynthConfig one_node(const std::string& device) {
  SynthConfig c = small(device, Parallelism::kFsdp);
  c.ranks = 2;
  c.gpus_per_node = 2;
  c.telemetry_interval_ms = 2;  // as the hardware goldens: energy within 1% per iteration
  return c;
}

const DiagnosticRow* find_diag(const std::vector<DiagnosticRow>& rows, const std::string& kind,
                               const std::string& file) {
  for (const DiagnosticRow& d : rows)
    if (d.kind == kind && d.file == file) return &d;
  return nullptr;
}

}  // namespace

// The real rocprofv3 documentation files (an AMD process, pid 19396, `addition_kernel` and its
// kin, BOOTTIME stamps) named with --counters on the real H100 trace: the file is AMD's and the
// trace NVIDIA's (CUDA versions, an H100 device): refused, and no kernel gets a counter value.
TEST(HardwareFiles, RealRocprofCountersRefusedOnH100Trace) {
  if (!have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  const std::string trace = shared_path("traces/kineto/tracelens_h100_qwen0.5b.json.gz");
  const std::string cc = shared_path("traces/rocprofv3/docs_counter_collection.csv");
  const std::string kt = shared_path("traces/rocprofv3/docs_kernel_trace.csv");
  auto a = analyse({trace}, {cc, kt});
  EXPECT_TRUE(a->errors.empty()) << a->errors.front();
  ASSERT_EQ(a->hw.counters.size(), 1u);
  const CounterJoin& j = a->hw.counters.front();
  EXPECT_EQ(j.file, cc);
  EXPECT_EQ(j.dispatches, 7u);  // 7 rows of one counter each
  EXPECT_EQ(j.matched, 0u);
  EXPECT_EQ(j.method,
            "none: AMD counters (rocprofv3-counter-csv) on a trace of NVIDIA GPUs: not this run's "
            "hardware (docs/counter_formats.md)");
  EXPECT_FALSE(j.same_run);
  ASSERT_EQ(a->hw.ranks.size(), 1u);
  EXPECT_EQ(a->hw.ranks[0].counters, nullptr);
  // No kernel of the trace has a counter value: the trace has no telemetry and the refused file
  // joins nothing, so no activity has hardware data and kernel_hw has no row at all (joined, the
  // file gave a row per GPU activity, with counter values on the kernels its ids paired).
  for (const RankAnalysis& r : a->ra.ranks) EXPECT_TRUE(r.kernel_hw.empty()) << r.kernel_hw.size();
  // The diagnostics table names the file and why.
  const std::vector<DiagnosticRow> d = hardware_use_diagnostics(a->hw);
  const DiagnosticRow* row = find_diag(d, "counter_file_refused", cc);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->count, 7u);
  EXPECT_NE(row->example.find("AMD counters"), std::string::npos) << row->example;
}

// The same real files beside a synthetic H100 run's rank 0, whose correlation ids start at 1 as
// in every process: 6 of the 7 dispatches' ids are ids of its kernels (its NCCL and PyTorch
// kernels: none is an addition_kernel), which a join by id alone took for the run's own counters
// (an offset of −56 years, BOOTTIME against the epoch). Refused for its vendor; and, were its
// vendor not known (a format the check does not know), for its names: 0% of the 6 pairs agree, and
// no dispatch's kernel name is in the trace.
TEST(HardwareFiles, RealRocprofCountersRefusedOnSyntheticH100Run) {
  if (!have_shared_traces()) GTEST_SKIP() << "../shared/traces is absent";
  const std::string cc = shared_path("traces/rocprofv3/docs_counter_collection.csv");
  const std::string kt = shared_path("traces/rocprofv3/docs_kernel_trace.csv");
  const fs::path dir = temp_dir("hwfiles_docs_h100");
  SynthConfig c = one_node("h100");
  c.counters = false;
  c.telemetry = false;
  synthesize(c, dir.string());
  auto a = analyse({(dir / "rank-0.json").string()}, {cc, kt});
  ASSERT_EQ(a->hw.counters.size(), 1u);
  const CounterJoin& j = a->hw.counters.front();
  EXPECT_EQ(j.rank, 0);
  EXPECT_EQ(j.matched, 0u);
  EXPECT_TRUE(starts_with(j.method,
                          "none: AMD counters (rocprofv3-counter-csv) on a trace of "
                          "NVIDIA GPUs"))
      << j.method;
  EXPECT_EQ(a->hw.ranks[0].counters, nullptr);
  for (const RankAnalysis& r : a->ra.ranks) EXPECT_TRUE(r.kernel_hw.empty()) << r.kernel_hw.size();
  HardwareFiles again = load_hardware({}, {}, {cc, kt}, 2);
  ASSERT_EQ(again.counters.size(), 1u);
  again.counters[0].format = "unknown";
  CounterJoin j2 = j;
  RankHardware rh;
  join_counters(a->run.ranks[0].trace, again.counters[0], j2, rh);
  EXPECT_EQ(j2.method,
            "none: correlation ids pair 6 of 7 dispatches with kernels, but only 0% of their "
            "kernel names agree (at least 90% needed): not the traced run's; and no dispatch's "
            "kernel name is in the trace");
  EXPECT_EQ(j2.name_match_rate, 0.0);
  EXPECT_EQ(j2.matched, 0u);
  EXPECT_EQ(rh.counters, nullptr);
  fs::remove_all(dir);
}

// A synthetic MI300X run's counter files, rewritten as files of another run would be: rank 0's
// kernel names replaced (its correlation ids still pair every dispatch with a kernel: 0% of the
// names agree; no name is the trace's: refused), rank 1's every other dispatch stamped 5 ms later
// (names agree, but only half the times keep one offset: not the traced run's own counters). The
// other ranks still join 100% by correlation id, every name agreeing.
TEST(HardwareFiles, CounterFilesOfAnotherRunRefused) {
  const fs::path dir = temp_dir("hwfiles_counters");
  SynthConfig c = small("mi300x", Parallelism::kFsdp);
  synthesize(c, dir.string());
  rewrite_csv(dir / "counters" / "rank0_counter_collection.csv",
              [](std::vector<std::string>& f, size_t) { f[8] = "\"other_kernel_" + f[1] + "\""; });
  rewrite_csv(dir / "counters" / "rank1_counter_collection.csv",
              [](std::vector<std::string>& f, size_t) {
                if (std::stoll(f[1]) % 2 == 0) return;
                const size_t n = f.size();
                f[n - 2] = std::to_string(std::stoll(f[n - 2]) + 5000000);
                f[n - 1] = std::to_string(std::stoll(f[n - 1]) + 5000000);
              });
  auto a = analyse({dir.string()});
  EXPECT_TRUE(a->errors.empty()) << a->errors.front();
  ASSERT_EQ(a->hw.counters.size(), 4u);
  for (const CounterJoin& j : a->hw.counters) {
    SCOPED_TRACE(j.file);
    ASSERT_GE(j.rank, 0);
    ASSERT_GT(j.dispatches, 0u);
    if (j.rank == 0) {
      EXPECT_TRUE(starts_with(j.method, "none: correlation ids pair ")) << j.method;
      EXPECT_NE(j.method.find("but only 0% of their kernel names agree"), std::string::npos)
          << j.method;
      EXPECT_EQ(j.name_match_rate, 0.0);
      EXPECT_EQ(j.matched, 0u);
    } else if (j.rank == 1) {
      // Dispatch ids 1, 3, 5, … moved: half of the timed pairs (or one more: the median offset
      // is one of the two) lie near the median. Not the traced run's recording, but a pass of
      // the same kernels: joined as a separate pass is, by kernel name and order, and its cycles
      // are not taken for the traced run's clock (same_run false).
      EXPECT_TRUE(starts_with(j.method, "kernel name + order (correlation ids pair ")) << j.method;
      EXPECT_NE(j.method.find("of the same names, but only 5"), std::string::npos) << j.method;
      EXPECT_EQ(j.name_match_rate, 1.0);
      EXPECT_EQ(j.matched, j.dispatches);
      EXPECT_FALSE(j.same_run);
    } else {
      EXPECT_EQ(j.method, "correlation id");
      EXPECT_EQ(j.matched, j.dispatches);
      EXPECT_EQ(j.name_match_rate, 1.0);
      EXPECT_TRUE(j.same_run);
    }
  }
  for (const RankHardware& rh : a->hw.ranks)
    EXPECT_EQ(rh.counters == nullptr, rh.rank == 0) << "rank " << rh.rank;
  EXPECT_EQ(hardware_use_diagnostics(a->hw).size(), 1u);
  fs::remove_all(dir);
}

// amd-smi (UTC epoch ms) and nvidia-smi (local time) files of synthetic runs, shifted three days
// later: the recording cannot reach the traced time on the file's clock (nor, for local time, in
// any time zone). Not aligned, with the reason; no correlation (NaN: NULL in the table); the
// clock and period are the file's own; the node's ranks get no series. The other node's file is
// aligned as before.
TEST(HardwareFiles, TelemetryOutsideTracedTimeNotAligned) {
  constexpr int64_t kDaysMs = 3 * 86400 * 1000LL;
  {
    const fs::path dir = temp_dir("hwfiles_amdsmi_shift");
    SynthConfig c = small("mi300x", Parallelism::kFsdp);
    c.counters = false;
    synthesize(c, dir.string());
    rewrite_csv(dir / "telemetry" / "node1.amd-smi.csv", [&](std::vector<std::string>& f, size_t) {
      f[0] = std::to_string(std::stoll(f[0]) + kDaysMs);
    });
    auto a = analyse({dir.string()});
    EXPECT_TRUE(a->errors.empty()) << a->errors.front();
    ASSERT_EQ(a->hw.telemetry.size(), 2u);
    for (const TelemetryAlignment& t : a->hw.telemetry) {
      SCOPED_TRACE(t.file);
      EXPECT_EQ(t.clock, ClockDomain::kRealtimeUtc);
      EXPECT_EQ(t.period_ns, c.telemetry_interval_ms * 1000000);
      if (t.node == 1) {
        // The recording starts about 3 days after the traced second or so ends.
        EXPECT_TRUE(starts_with(t.method,
                                "none: the recording begins 3.0 days after the traced "
                                "time ends on its UTC clock"))
            << t.method;
        EXPECT_FALSE(t.aligned());
        EXPECT_TRUE(std::isnan(t.correlation));
        EXPECT_EQ(t.samples, 0u);
      } else {
        EXPECT_TRUE(t.aligned()) << t.method;
        EXPECT_GT(t.correlation, 0.5);
        EXPECT_LE(t.correlation, 1.0);
      }
    }
    for (const RankHardware& rh : a->hw.ranks)
      EXPECT_EQ(rh.has(Metric::kPowerW), rh.rank < 2) << "rank " << rh.rank;
    const std::vector<DiagnosticRow> d = hardware_use_diagnostics(a->hw);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].kind, "telemetry_not_aligned");
    EXPECT_EQ(d[0].file, (dir / "telemetry" / "node1.amd-smi.csv").string());
    fs::remove_all(dir);
  }
  {
    const fs::path dir = temp_dir("hwfiles_nvsmi_shift");
    SynthConfig c = small("h100", Parallelism::kFsdp);
    c.counters = false;
    synthesize(c, dir.string());
    // "2026/01/01 01:00:05.123": the day moved from 01 to 04.
    rewrite_csv(dir / "telemetry" / "node0.nvidia-smi.csv",
                [](std::vector<std::string>& f, size_t) {
                  ASSERT_EQ(f[0].substr(8, 2), "01");
                  f[0].replace(8, 2, "04");
                });
    auto a = analyse({dir.string()});
    ASSERT_EQ(a->hw.telemetry.size(), 2u);
    const TelemetryAlignment& t = a->hw.telemetry[0];
    EXPECT_EQ(t.node, 0);
    EXPECT_EQ(t.clock, ClockDomain::kRealtimeLocal);
    EXPECT_EQ(t.period_ns, c.telemetry_interval_ms * 1000000);
    EXPECT_EQ(t.method, "none: the recording does not cover the traced time in any time zone");
    EXPECT_TRUE(std::isnan(t.correlation));
    EXPECT_TRUE(a->hw.telemetry[1].aligned()) << a->hw.telemetry[1].method;
    fs::remove_all(dir);
  }
}

// Two telemetry files for one node's GPUs that are not one recording split in time: a copy of
// node 0's nvidia-smi file beside it (the same samples twice), and an amd-smi file of an MI300X
// run named for node 0 beside an H100 run's nvidia-smi file. Each pair is one error naming both
// files; neither file is used (its row says which file it clashes with), and node 0's ranks get
// no series, so no energy is reported for them (not a half of it). A file for a node with no
// ranks is not aligned, for that reason, with its own clock and period.
TEST(HardwareFiles, TwoTelemetryFilesForOneNodeAreAnError) {
  const fs::path amd = temp_dir("hwfiles_amd_src");
  {
    SynthConfig c = one_node("mi300x");
    c.counters = false;
    synthesize(c, amd.string());
  }
  const fs::path dir = temp_dir("hwfiles_conflict");
  SynthConfig c = one_node("h100");
  c.counters = false;
  synthesize(c, dir.string());
  const fs::path nv = dir / "telemetry" / "node0.nvidia-smi.csv";
  const fs::path copy = dir / "telemetry" / "node0.copy.nvidia-smi.csv";
  const fs::path other = dir / "telemetry" / "node0.amd-smi.csv";
  const fs::path spare = dir / "telemetry" / "node3.nvidia-smi.csv";
  fs::copy_file(nv, copy);
  fs::copy_file(nv, spare);
  {
    auto a = analyse({dir.string()});
    ASSERT_EQ(a->errors.size(), 1u);
    EXPECT_TRUE(starts_with(a->errors[0], copy.string() + " and " + nv.string() +
                                              ": two telemetry files for the GPUs of node 0 "))
        << a->errors[0];
    EXPECT_NE(a->errors[0].find("their samples overlap in time"), std::string::npos);
    EXPECT_NE(a->errors[0].find("docs/telemetry_formats.md"), std::string::npos);
    ASSERT_EQ(a->hw.telemetry.size(), 3u);
    for (const TelemetryAlignment& t : a->hw.telemetry) {
      SCOPED_TRACE(t.file);
      EXPECT_FALSE(t.aligned());
      EXPECT_EQ(t.clock, ClockDomain::kRealtimeLocal);
      EXPECT_EQ(t.period_ns, 2000000);
      if (t.file == spare.string())
        EXPECT_EQ(t.method, "none: no ranks on node 3 (the traces' ranks are on nodes 0 to 0)");
      else
        EXPECT_EQ(t.method, "none: " + (t.file == nv.string() ? copy : nv).string() +
                                " also describes node 0's GPUs (their samples overlap in time); "
                                "neither is used");
    }
    for (const RankAnalysis& r : a->ra.ranks) EXPECT_TRUE(r.power.empty()) << r.rank;
    const std::vector<DiagnosticRow> d = hardware_use_diagnostics(a->hw);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_NE(find_diag(d, "telemetry_conflict", nv.string()), nullptr);
    EXPECT_EQ(find_diag(d, "telemetry_conflict", nv.string())->severity, Severity::kError);
    EXPECT_NE(find_diag(d, "telemetry_conflict", copy.string()), nullptr);
    EXPECT_NE(find_diag(d, "telemetry_not_aligned", spare.string()), nullptr);
  }
  fs::remove(copy);
  fs::remove(spare);
  fs::copy_file(amd / "telemetry" / "node0.amd-smi.csv", other);
  {
    auto a = analyse({dir.string()});
    ASSERT_EQ(a->errors.size(), 1u);
    EXPECT_TRUE(starts_with(a->errors[0], other.string() + " and " + nv.string() +
                                              ": two telemetry files for the GPUs of node 0 "))
        << a->errors[0];
    EXPECT_NE(a->errors[0].find("amd-smi and nvidia-smi files"), std::string::npos) << a->errors[0];
    for (const TelemetryAlignment& t : a->hw.telemetry) EXPECT_FALSE(t.aligned()) << t.file;
    for (const RankAnalysis& r : a->ra.ranks) EXPECT_TRUE(r.power.empty()) << r.rank;
  }
  fs::remove_all(dir);
  fs::remove_all(amd);
}

// node 0's nvidia-smi file split at a sample time into two files of one recording (one tool, one
// clock, spans apart): put together, both aligned at one offset, and each rank's energy per
// iteration is truth.json's energy_j within 1%, as from the whole file.
TEST(HardwareFiles, SplitTelemetryRecordingMerged) {
  const fs::path dir = temp_dir("hwfiles_split");
  SynthConfig c = one_node("h100");
  c.counters = false;
  synthesize(c, dir.string());
  const std::vector<TruthRank> truth = read_truth(dir);
  const fs::path nv = dir / "telemetry" / "node0.nvidia-smi.csv";
  const std::vector<std::string> v = lines_of(nv);
  ASSERT_GT(v.size(), 41u);
  // Rows go by sample time, one per GPU: split between two sample times.
  const size_t gpus = static_cast<size_t>(c.gpus_per_node), times = (v.size() - 1) / gpus;
  const size_t cut = 1 + times / 2 * gpus;
  write_lines(dir / "telemetry" / "node0.part1.nvidia-smi.csv", v, 1, cut);
  write_lines(dir / "telemetry" / "node0.part2.nvidia-smi.csv", v, cut, v.size());
  fs::remove(nv);
  auto a = analyse({dir.string()});
  EXPECT_TRUE(a->errors.empty()) << a->errors.front();
  ASSERT_EQ(a->hw.telemetry.size(), 2u);
  for (const TelemetryAlignment& t : a->hw.telemetry) {
    SCOPED_TRACE(t.file);
    EXPECT_TRUE(t.aligned()) << t.method;
    EXPECT_EQ(t.offset_ns, a->hw.telemetry[0].offset_ns);
    EXPECT_EQ(t.period_ns, 2000000);
    EXPECT_LE(std::abs(t.offset_ns - truth[0].telemetry_offset_ns), t.period_ns);
  }
  size_t checked = 0;
  for (const RankAnalysis& r : a->ra.ranks) {
    const TruthRank& tr = truth[static_cast<size_t>(r.rank)];
    for (const PowerRow& p : r.power) {
      if (!p.phase.empty()) continue;
      SCOPED_TRACE("rank " + std::to_string(r.rank) + " iteration " + std::to_string(p.iteration));
      ASSERT_TRUE(tr.energy_j.count(p.iteration));
      const double want = tr.energy_j.at(p.iteration);
      EXPECT_NEAR(p.energy_j, want, 0.01 * want);
      ++checked;
    }
  }
  EXPECT_EQ(checked, truth.size() * static_cast<size_t>(c.iterations));
  fs::remove_all(dir);
}
