// The streamed analyze (pipeline/) against the same run analysed in memory: every table, cell for
// cell. The in-memory path (load_run, validate_run, label_run, align_hardware, analyze_run) is the
// one the goldens check against truth.json; the streamed one reads each rank alone, spools its
// rows and keeps only its partial. Also the processes of an MPI run, simulated in one process by
// threads that exchange bytes (ThreadComm): the parts cross "processes" encoded, the spool files
// are sent or read in place, and the tables must be the same as one process writes.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "chopper/analysis/findings.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/part_codec.hpp"
#include "chopper/pipeline/stream.hpp"
#include "chopper/report/analysis_report.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/findings_report.hpp"
#include "chopper/report/hardware_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/spool.hpp"
#include "chopper/synth/synth.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

namespace chopper {
namespace {

namespace fs = std::filesystem;

// Every table written to it, whole.
struct Collect : TableSink {
  std::map<std::string, std::unique_ptr<Table>> tables;
  std::vector<std::string> order;
  Table* cur = nullptr;
  void begin(const TableSchema& s) override {
    auto t = std::make_unique<Table>(s);
    cur = t.get();
    order.push_back(s.name);
    tables[s.name] = std::move(t);
  }
  void row(std::span<const Cell> cells) override { cur->add_row(cells); }
  void end() override { cur = nullptr; }
};

std::string cell_text(const Table& t, size_t r, size_t c) {
  const Cell x = t.cell(r, c);
  switch (x.kind) {
    case Cell::kNull:
      return "NULL";
    case Cell::kInt:
      return std::to_string(x.i);
    case Cell::kReal: {
      uint64_t bits;
      std::memcpy(&bits, &x.r, 8);
      return "r" + std::to_string(bits);
    }
    case Cell::kText:
      return "t" + std::string(x.s);
  }
  return "?";
}

std::vector<std::string> rows_of(const Table& t) {
  std::vector<std::string> v;
  for (size_t r = 0; r < t.rows(); ++r) {
    std::string s;
    for (size_t c = 0; c < t.cols(); ++c) s += cell_text(t, r, c) + "\x1f";
    v.push_back(std::move(s));
  }
  return v;
}

// Tables equal cell for cell, in order (`unordered`: as multisets of rows). The hierarchy's
// operation rows of one rank follow its operations' first appearance in that rank (the in-memory
// aggregation numbers them over every rank), so it is compared as a set.
void expect_same(const Collect& a, const Collect& b, const std::string& what) {
  EXPECT_EQ(a.order, b.order) << what;
  for (const auto& [name, ta] : a.tables) {
    auto it = b.tables.find(name);
    ASSERT_NE(it, b.tables.end()) << what << ": " << name;
    const Table& tb = *it->second;
    ASSERT_EQ(ta->rows(), tb.rows()) << what << ": " << name;
    std::vector<std::string> ra = rows_of(*ta), rb = rows_of(tb);
    if (name == "hierarchy") {
      std::sort(ra.begin(), ra.end());
      std::sort(rb.begin(), rb.end());
    }
    size_t diff = 0;
    for (size_t r = 0; r < ra.size(); ++r)
      if (ra[r] != rb[r] && diff++ < 3)
        ADD_FAILURE() << what << ": " << name << " row " << r << "\n  " << ra[r] << "\n  " << rb[r];
    EXPECT_EQ(diff, 0u) << what << ": " << name;
  }
}

const std::vector<Level> kLevels = {Level::kGpu, Level::kIteration, Level::kPhase, Level::kLayer,
                                    Level::kOperation};

// The run analysed in memory, as `chopper report` and the goldens analyse it, written as analyze
// writes it.
Collect in_memory(const std::string& dir, bool hardware) {
  const Taxonomy tax = Taxonomy::builtin();
  Run run = load_run({dir});
  validate_run(run);
  label_run(tax, run, 2);
  HardwareRun hw;
  if (hardware) {
    HardwareFiles hf = load_hardware({dir}, {}, run.counter_passes, 2,
                                     telemetry_window(run, HardwareAlignOptions{}));
    hw = align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
    assign_recorded_cpu(std::move(hf.recorded_cpu), run, hw);
  }
  AnalysisOptions o;
  o.threads = 2;
  const RunAnalysis ra = analyze_run(run, o, &hw);
  Collect c;
  write_gpu_activities(run, c);
  InMemoryRankRows rows(run, ra, o);
  analysis_tables(ra, o, c, rows);
  hardware_tables(ra, o, c, rows);
  findings_table(decide_findings(ra, o), c);
  write_hierarchy(aggregate_prefixes(run, kLevels), c);
  write_coverage(label_coverage(run), c);
  write_table(rules_table(tax), c);
  // As `chopper report` writes them: the run's, the hardware files' anomalies, then the hardware
  // files that could not be used.
  std::vector<DiagnosticRow> diags = run_diagnostics(run);
  for (DiagnosticRow& d : hardware_diagnostics(hw.telemetry_data, hw.counter_data))
    diags.push_back(std::move(d));
  for (DiagnosticRow& d : hardware_use_diagnostics(hw)) diags.push_back(std::move(d));
  write_diagnostics(diags, c);
  return c;
}

// A streamed run's tables, written as analyze writes them.
Collect written(StreamedRun& sr, const Taxonomy& tax) {
  AnalysisOptions o;
  o.threads = 2;
  Collect c;
  write_rank_table(RankStream::kGpuActivities, *sr.rows, c);
  analysis_tables(sr.ra, o, c, *sr.rows);
  hardware_tables(sr.ra, o, c, *sr.rows);
  findings_table(decide_findings(sr.ra, o), c);
  write_hierarchy(sr.gpu_level, *sr.rows, c);
  write_coverage(sr.coverage, c);
  write_table(rules_table(tax), c);
  write_diagnostics(sr.diagnostics, c);
  return c;
}

StreamOptions options(const std::string& dir, bool hardware) {
  StreamOptions so;
  so.paths = {dir};
  so.load.threads = 2;
  so.analysis.threads = 2;
  so.hardware = hardware;
  return so;
}

// ---- processes as threads

// A mailbox per (from, to, tag): what one "process" sends, another receives, in order.
class Hub {
 public:
  explicit Hub(int n) : n_(n) {}
  void put(int from, int to, int tag, std::string b) {
    std::lock_guard<std::mutex> lk(m_);
    box_[{from, to, tag}].push_back(std::move(b));
    cv_.notify_all();
  }
  std::string take(int from, int to, int tag) {
    std::unique_lock<std::mutex> lk(m_);
    auto& q = box_[{from, to, tag}];
    cv_.wait(lk, [&] { return !q.empty(); });
    std::string b = std::move(q.front());
    q.pop_front();
    return b;
  }
  int size() const { return n_; }

 private:
  int n_;
  std::mutex m_;
  std::condition_variable cv_;
  std::map<std::tuple<int, int, int>, std::deque<std::string>> box_;
};

// Collectives on top of the mailboxes (tags below 0 are theirs).
class ThreadComm : public Comm {
 public:
  ThreadComm(Hub& h, int rank) : h_(h), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return h_.size(); }
  bool is_mpi() const override { return true; }
  void barrier() override { allgather(""); }
  void broadcast(std::string& bytes, int root) override {
    if (rank_ == root) {
      for (int p = 0; p < size(); ++p)
        if (p != root) h_.put(root, p, -1, bytes);
    } else {
      bytes = h_.take(root, rank_, -1);
    }
  }
  std::vector<std::string> gather(std::string_view mine, int root) override {
    if (rank_ != root) {
      h_.put(rank_, root, -2, std::string(mine));
      return {};
    }
    std::vector<std::string> all(static_cast<size_t>(size()));
    for (int p = 0; p < size(); ++p)
      all[static_cast<size_t>(p)] = p == root ? std::string(mine) : h_.take(p, root, -2);
    return all;
  }
  std::vector<std::string> allgather(std::string_view mine) override {
    for (int p = 0; p < size(); ++p)
      if (p != rank_) h_.put(rank_, p, -3, std::string(mine));
    std::vector<std::string> all(static_cast<size_t>(size()));
    for (int p = 0; p < size(); ++p)
      all[static_cast<size_t>(p)] = p == rank_ ? std::string(mine) : h_.take(p, rank_, -3);
    return all;
  }
  void send(int to, int tag, std::string_view bytes) override {
    h_.put(rank_, to, tag, std::string(bytes));
  }
  std::string recv(int from, int tag) override { return h_.take(from, rank_, tag); }
  int64_t allreduce_max(int64_t v) override {
    int64_t m = v;
    for (const std::string& s : allgather(std::to_string(v)))
      m = std::max<int64_t>(m, std::stoll(s));
    return m;
  }
  int64_t allreduce_sum(int64_t v) override {
    int64_t m = 0;
    for (const std::string& s : allgather(std::to_string(v))) m += std::stoll(s);
    return m;
  }

 private:
  Hub& h_;
  int rank_;
};

// The run streamed over `n` simulated processes; process 0's tables.
Collect streamed_by(int n, const std::string& dir, bool hardware, bool shared_files) {
  const Taxonomy tax = Taxonomy::builtin();
  Hub hub(n);
  std::vector<std::unique_ptr<StreamedRun>> res(static_cast<size_t>(n));
  std::vector<std::thread> th;
  const fs::path scratch = fs::path(dir) / "scratch";
  fs::create_directories(scratch);
  for (int p = 0; p < n; ++p)
    th.emplace_back([&, p] {
      ThreadComm c(hub, p);
      StreamOptions so = options(dir, hardware);
      so.load.threads = 1;
      so.mpi_shared_files = shared_files;
      res[static_cast<size_t>(p)] = stream_run(so, tax, scratch.string(), c);
    });
  for (auto& t : th) t.join();
  for (int p = 1; p < n; ++p) EXPECT_FALSE(res[static_cast<size_t>(p)]->analysed);
  EXPECT_TRUE(res[0]->analysed);
  Collect c = written(*res[0], tax);
  res.clear();  // spool files removed; none left
  EXPECT_TRUE(fs::is_empty(scratch)) << "spool files left behind";
  return c;
}

// The run streamed in this process, its rows spooled or its ranks kept in memory.
Collect streamed(const std::string& dir, bool hardware, RowStore store = RowStore::kSpool) {
  const Taxonomy tax = Taxonomy::builtin();
  StreamOptions so = options(dir, hardware);
  so.rows = store;
  std::unique_ptr<StreamedRun> sr = stream_run(so, tax, dir, comm());
  EXPECT_TRUE(sr->analysed);
  return written(*sr, tax);
}

std::string synth_run(const std::string& name, SynthConfig c) {
  const fs::path dir = test::temp_dir("stream_" + name);
  synthesize(c, dir.string());
  return dir.string();
}

SynthConfig demo(const std::string& device, int ranks) {
  SynthConfig c = test::small(device, Parallelism::kFsdp);
  EXPECT_TRUE(apply_scenario("demo", c));
  c.ranks = ranks;
  c.gpus_per_node = 4;
  c.layers = 2;
  c.iterations = 2;
  c.threads = 2;
  return c;
}

// Rank 2's file renamed so that its name says no rank, and its distributedInfo taken out:
// validation gives it an id above the others.
void unrank(const std::string& dir, const std::string& file) {
  std::string text = test::read_file(dir + "/" + file);
  const std::regex di(R"("distributedInfo": \{.*?"nccl_version": "[^"]*"\},?)");
  text = std::regex_replace(text, di, "", std::regex_constants::format_first_only);
  fs::remove(dir + "/" + file);
  std::ofstream(dir + "/worker-c.json") << text;
  ASSERT_EQ(text.find("distributedInfo"), std::string::npos);
}

TEST(Stream, HardwareRunEqualsInMemory) {
  // H100 FSDP with nvidia-smi telemetry and a CUPTI pass per rank: the run is read twice (the
  // telemetry alignment needs every rank first).
  const std::string dir = synth_run("h100", demo("h100", 8));
  const Collect mem = in_memory(dir, true);
  expect_same(mem, streamed(dir, true), "h100 demo");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "h100 demo, ranks kept in memory");
  fs::remove_all(dir);
}

TEST(Stream, AmdRunEqualsInMemory) {
  // MI300X with amd-smi telemetry and rocprofv3 counters, a straggler and node clock offsets.
  SynthConfig c = demo("mi300x", 8);
  c.straggler_rank = 5;
  c.node_clock_offset_ns = 30000;
  const std::string dir = synth_run("mi300x", c);
  const Collect mem = in_memory(dir, true);
  expect_same(mem, streamed(dir, true), "mi300x");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "mi300x, ranks kept in memory");
  fs::remove_all(dir);
}

TEST(Stream, RecordedCpuRunEqualsInMemory) {
  // `chopper record`'s CPU files only (tests/data/record_cpu/serial): the hardware pass runs for
  // them, and the cpu_utilization rows come out as in memory (3 iterations of rank 0).
  const fs::path dir = test::temp_dir("record_cpu");
  fs::copy(test::data_path("record_cpu/serial"), dir, fs::copy_options::recursive);
  const Collect mem = in_memory(dir.string(), true);
  ASSERT_EQ(mem.tables.at("cpu_utilization")->rows(), 3u);
  expect_same(mem, streamed(dir.string(), true), "recorded CPU");
  expect_same(mem, streamed(dir.string(), true, RowStore::kMemory), "recorded CPU, kept");
  fs::remove_all(dir);
}

TEST(Stream, NoHardwareAndAssignedRankEqualInMemory) {
  // No hardware files: one pass; a file without a rank is analysed again once validation gives
  // it one.
  const std::string dir = synth_run("nohw", demo("h100", 4));
  fs::remove_all(dir + "/telemetry");
  fs::remove_all(dir + "/counters");
  unrank(dir, "rank-2.json");
  const Collect mem = in_memory(dir, true);
  const Table& d = *mem.tables.at("diagnostics");
  bool assigned = false;
  for (size_t r = 0; r < d.rows(); ++r) assigned |= d.get_text(r, d.col("kind")) == "rank_assigned";
  EXPECT_TRUE(assigned) << "the fixture should have a file without a rank";
  expect_same(mem, streamed(dir, true), "no hardware, assigned rank");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "assigned rank, kept in memory");
  const Collect nohw = in_memory(dir, false);
  expect_same(nohw, streamed(dir, false), "--no-hardware");
  expect_same(nohw, streamed(dir, false, RowStore::kMemory), "--no-hardware, kept in memory");
  fs::remove_all(dir);
}

TEST(Stream, AssignedRankWithHardwareEqualsInMemory) {
  const std::string dir = synth_run("hw_assigned", demo("h100", 4));
  unrank(dir, "rank-3.json");
  const Collect mem = in_memory(dir, true);
  expect_same(mem, streamed(dir, true), "hardware, assigned rank");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "hardware, assigned rank, kept");
  fs::remove_all(dir);
}

TEST(Stream, CounterPassAmongTracesEqualsInMemory) {
  // No hardware file in sight until a trace turns out to be a CUPTI pass: the run is read again
  // with the passes known.
  const std::string dir = synth_run("pass", demo("h100", 4));
  fs::remove_all(dir + "/telemetry");
  for (const auto& e : fs::directory_iterator(dir + "/counters"))
    fs::rename(e.path(), fs::path(dir) / e.path().filename());
  fs::remove_all(dir + "/counters");
  const Collect mem = in_memory(dir, true);
  const Table& j = *mem.tables.at("counter_join");
  EXPECT_EQ(j.rows(), 4u);
  expect_same(mem, streamed(dir, true), "counter passes among the traces");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "counter passes, ranks kept");
  fs::remove_all(dir);
}

TEST(Stream, UnreadableFileEqualsInMemory) {
  // A trace cut short and a file that is not JSON: each a failed rank, the others analysed.
  const std::string dir = synth_run("bad", demo("h100", 4));
  const std::string t = test::read_file(dir + "/rank-1.json");
  std::ofstream(dir + "/rank-1.json") << t.substr(0, t.size() / 2);
  std::ofstream(dir + "/rank-9.json") << "garbage";
  const Collect mem = in_memory(dir, true);
  expect_same(mem, streamed(dir, true), "unreadable files");
  expect_same(mem, streamed(dir, true, RowStore::kMemory), "unreadable files, ranks kept");
  fs::remove_all(dir);
}

TEST(Stream, ProcessesGiveTheTablesOfOne) {
  // 2, 3 and 4 simulated processes, spool rows sent over the "network" or read in place; a file
  // without a rank, one that cannot be read, and truth.json (not a trace) among them.
  SynthConfig c = demo("h100", 8);
  c.straggler_rank = 6;
  const std::string dir = synth_run("procs", c);
  unrank(dir, "rank-7.json");
  std::ofstream(dir + "/rank-12.json") << "{\"traceEvents\": [";
  // A broken telemetry row: the file's bad_row row in the diagnostics table, whoever reads it.
  std::ofstream(dir + "/telemetry/node1.nvidia-smi.csv", std::ios::app) << "garbage\n";
  const Collect one = in_memory(dir, true);
  {
    const Table& d = *one.tables.at("diagnostics");
    bool found = false;
    for (size_t r = 0; r < d.rows(); ++r)
      found = found || (cell_text(d, r, 2) == "tbad_row" &&
                        cell_text(d, r, 1) == "t" + dir + "/telemetry/node1.nvidia-smi.csv");
    EXPECT_TRUE(found) << "the telemetry file's bad_row in the diagnostics table";
  }
  expect_same(one, streamed_by(2, dir, true, false), "2 processes, gathered");
  expect_same(one, streamed_by(3, dir, true, true), "3 processes, shared files");
  expect_same(one, streamed_by(4, dir, true, false), "4 processes, gathered");
  expect_same(in_memory(dir, false), streamed_by(2, dir, false, false), "2 processes, no hardware");
  fs::remove_all(dir);
}

TEST(Stream, PartsSurviveEncoding) {
  // Every field a part carries comes back: encoding the decoded parts gives the same bytes.
  const std::string dir = synth_run("codec", demo("mi300x", 4));
  const std::vector<TracePath> files = run_trace_files({dir}, 100);
  const Taxonomy tax = Taxonomy::builtin();
  StageSetup setup;
  setup.taxonomy = &tax;
  SpoolFile spool(dir + "/spool");
  std::vector<RankPart> parts;
  for (size_t i = 0; i < files.size(); ++i) {
    parts.push_back(full_stage(i, files[i], setup, -1, &spool, 0));
    if (parts.back().analysed)
      parts.back().activity = rank_activity(load_rank_file(files[i].path), parts.back().slot.rank);
  }
  size_t analysed = 0;
  for (const RankPart& p : parts) analysed += p.analysed;
  EXPECT_EQ(analysed, 4u);
  const std::string bytes = encode_parts(parts);
  const std::vector<RankPart> back = decode_parts(bytes);
  ASSERT_EQ(back.size(), parts.size());
  EXPECT_EQ(encode_parts(back), bytes);
  EXPECT_FALSE(back[0].analysis.ops.empty());
  EXPECT_EQ(back[0].analysis.ops.front().key.operation,
            parts[0].analysis.ops.front().key.operation);
  // The views point into the decoded part's own names.
  EXPECT_NE(back[0].analysis.ops.front().key.operation.data(),
            parts[0].analysis.ops.front().key.operation.data());
  EXPECT_THROW(decode_parts(bytes.substr(0, bytes.size() / 2)), Error);
  EXPECT_THROW(decode_parts("not parts"), Error);
  fs::remove_all(dir);
}

TEST(Stream, KeepsRanksInMemoryWhenTheRunFitsTheBudget) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  // One rank: kept (its trace is in memory during the stage anyway).
  EXPECT_TRUE(keep_in_memory(RowStore::kAuto, {300'000'000}, 2, 1, 24 * kGiB));
  // Two ranks on two threads: both are held at once by the stage; kept.
  EXPECT_TRUE(keep_in_memory(RowStore::kAuto, {300, 200}, 2, 1, 24 * kGiB));
  // Eight equal ranks on two threads: keeping them would hold four times what the stage holds.
  EXPECT_FALSE(
      keep_in_memory(RowStore::kAuto, std::vector<uint64_t>(8, 294'000'000), 2, 1, 24 * kGiB));
  // 1,024 small ranks: streamed, whatever the machine (memory follows the largest rank).
  EXPECT_FALSE(
      keep_in_memory(RowStore::kAuto, std::vector<uint64_t>(1024, 100'000), 16, 1, 24 * kGiB));
  // A rank larger than a quarter of the machine's memory: spooled.
  EXPECT_FALSE(keep_in_memory(RowStore::kAuto, {7 * kGiB}, 2, 1, 24 * kGiB));
  // The option wins, but MPI always spools (process 0 gathers the other processes' rows).
  EXPECT_TRUE(keep_in_memory(RowStore::kMemory, std::vector<uint64_t>(8, 1), 1, 1, 0));
  EXPECT_FALSE(keep_in_memory(RowStore::kSpool, {1}, 2, 1, 24 * kGiB));
  EXPECT_FALSE(keep_in_memory(RowStore::kMemory, {1}, 2, 2, 24 * kGiB));
}

TEST(Stream, AssignFilesBalancesBytes) {
  // Largest first, each to the process with the fewest bytes so far.
  EXPECT_EQ(assign_files({10, 9, 8, 1}, 2), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(assign_files({5, 5, 5, 5, 5}, 1), (std::vector<int>(5, 0)));
  EXPECT_EQ(assign_files({1, 2, 3}, 4), (std::vector<int>{2, 1, 0}));
  // 1,000 files of 1..1000 bytes over 3 processes: within one file of each other.
  std::vector<uint64_t> b(1000);
  for (size_t i = 0; i < b.size(); ++i) b[i] = i + 1;
  const std::vector<int> o = assign_files(b, 3);
  std::vector<uint64_t> load(3, 0);
  for (size_t i = 0; i < b.size(); ++i) load[static_cast<size_t>(o[i])] += b[i];
  const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
  EXPECT_LE(*hi - *lo, 1000u);
}

}  // namespace
}  // namespace chopper
