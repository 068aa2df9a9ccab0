// Hostile input: what a user, a broken job or an attacker can hand chopper, and what it must do
// with it. Each test names the input, the behaviour wanted and why; together they are the
// hostile-input suite that CI runs (crash, hang, memory, bad error, silent loss). Hang-prone tests
// run under a watchdog that fails the test (and ends the process) instead of hanging CI.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <signal.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>
#include <thread>

#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/info_report.hpp"
#include "chopper/report/output_dir.hpp"
#include "chopper/report/sqlite_sink.hpp"
#include "compress_util.hpp"
#include "test_util.hpp"

using namespace chopper;
namespace fs = std::filesystem;

namespace {

using chopper::test::gzip;
using chopper::test::zstd;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Runs f; if it has not returned after `seconds`, reports a hang and ends the process (a thread
// stuck in open(2) or in a regex cannot be stopped any other way).
template <class F>
void within(int seconds, const char* what, F&& f) {
  std::atomic<bool> done{false};
  std::thread watchdog([&done, seconds, what] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!done.load()) {
      std::fprintf(stderr, "FAILED: %s: still running after %d s (a hang)\n", what, seconds);
      std::fflush(stderr);
      std::_Exit(1);
    }
  });
  struct Stop {
    std::atomic<bool>& d;
    std::thread& t;
    ~Stop() {
      d = true;
      t.join();
    }
  } stop{done, watchdog};
  f();
}

// A fresh directory for one test.
fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("chopper_hostile_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// A trace whose one event has a name of `name_bytes` 'a's, between two ordinary events, as
// multi-member gzip: the name is `name_bytes` / 1 MiB copies of one compressed member, so a
// trace of hundreds of MiB costs a few hundred KiB to build.
std::string gzip_trace_with_long_name(size_t name_mib) {
  std::string head = gzip(
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "before", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
{"ph": "X", "cat": "cpu_op", "name": ")");
  const std::string mib = gzip(std::string(size_t{1} << 20, 'a'));
  std::string out = head;
  for (size_t i = 0; i < name_mib; ++i) out += mib;
  out += gzip(R"(", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
{"ph": "X", "cat": "cpu_op", "name": "after", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]})");
  return out;
}

std::vector<std::string> host_names(const RankTrace& t) {
  std::vector<std::string> v;
  for (size_t i = 0; i < t.host.size(); ++i) v.emplace_back(t.strings.str(t.host.name[i]));
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// ---- 1. Regexes: a linear-time engine for built-in and user rules.

// A host-op name of hundreds of thousands of bytes reaching the built-in rules (std::regex
// recursed once per character and overflowed the stack at ~26,000: SIGSEGV). Wanted: labelled as
// any name is, in time linear in its length.
TEST(Hostile, LongNamesThroughBuiltinRules) {
  const size_t n = 200000;
  const std::string module = "nn.Module: " + std::string(n, 'a') + "DecoderLayer_7";
  const std::string kernel = "ampere_" + std::string(n, 'x') + "_gemm_" + std::string(n, '1');
  const std::string events =
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
{"ph": "X", "cat": "python_function", "name": ")" +
      module + R"(", "pid": 1, "tid": 1, "ts": 10, "dur": 500},
{"ph": "X", "cat": "cpu_op", "name": "layers.)" +
      std::string(n, '9') +
      R"(", "pid": 1, "tid": 1, "ts": 20, "dur": 100, "args": {"External id": 1}},
{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#)" +
      std::string(n, '1') +
      R"(", "pid": 1, "tid": 1, "ts": 21, "dur": 90, "args": {"External id": 2}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 30, "dur": 10, "args": {"correlation": 1, "External id": 2}},
{"ph": "X", "cat": "kernel", "name": ")" +
      kernel +
      R"(", "pid": 0, "tid": 7, "ts": 50, "dur": 20, "args": {"correlation": 1, "External id": 2, "device": 0, "stream": 7}})";
  RankTrace t = test::parse(test::trace_of(events));
  within(60, "labelling long names", [&] { label_trace(Taxonomy::builtin(), t); });
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu.iteration[0], 3);
  EXPECT_EQ(t.gpu.layer[0], 7) << "the module's instance number";
  EXPECT_EQ(op_class_name(t.gpu.op_class[0]), std::string("gemm"));
}

// A user rule with nested quantifiers, `^(a+)+$`, on a name that almost matches: a backtracking
// engine takes 2^n steps (it hung). Wanted: no match, at once.
TEST(Hostile, CatastrophicUserRuleRunsInLinearTime) {
  Taxonomy tx = Taxonomy::builtin();
  tx.load_toml_text(
      "[[rule]]\nname = \"evil\"\nlevel = \"operation\"\nmatch = '^(a+)+$'\n"
      "[[rule]]\nname = \"evil_layer\"\nlevel = \"layer\"\nmatch = '(x*)*y(\\d+)'\n",
      "rules.toml");
  const std::string name = std::string(40, 'a') + "!";
  const std::string layer = std::string(5000, 'x');
  RankTrace t =
      test::parse(test::trace_of(R"({"ph": "X", "cat": "user_annotation", "name": ")" + name +
                                 R"(", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "user_annotation", "name": ")" +
                                 layer + R"(", "pid": 1, "tid": 1, "ts": 1, "dur": 90},
{"ph": "X", "cat": "cpu_op", "name": "aaaa", "pid": 1, "tid": 1, "ts": 2, "dur": 50, "args": {"External id": 2}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 10, "args": {"correlation": 1, "External id": 2}},
{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 50, "dur": 20, "args": {"correlation": 1, "External id": 2, "device": 0, "stream": 7}})"));
  within(20, "a catastrophic-backtracking rule", [&] { label_trace(tx, t); });
  ASSERT_EQ(t.gpu.size(), 1u);
  // "aaaa" matches ^(a+)+$ and is the innermost op; the long names match nothing.
  EXPECT_EQ(t.strings.str(t.gpu.operation[0]), "aaaa");
  EXPECT_EQ(t.label_rules[t.gpu.operation_rule[0]], "evil");
  EXPECT_EQ(t.gpu.layer[0], -1);
}

// What ECMAScript had and RE2 has not (backreferences, lookahead, lookbehind) must be an error
// naming the rules file, its line and the rule, not a rule that silently never matches.
TEST(Hostile, UserRuleRe2CannotCompileNamesFileAndRule) {
  for (const char* pattern : {R"((a)\1)", "foo(?=bar)", "(?<!x)y", "(?!z)zz"}) {
    Taxonomy tx = Taxonomy::builtin();
    const std::string e = error_of([&] {
      tx.load_toml_text(
          "\n[[rule]]\nname = \"bad\"\nlevel = \"phase\"\nphase = \"other\"\n"
          "match = '" +
              std::string(pattern) + "'\n",
          "my_rules.toml");
    });
    EXPECT_EQ(e.rfind("my_rules.toml:2: rule 'bad': bad regex", 0), 0u) << e;
    EXPECT_NE(e.find("RE2"), std::string::npos) << e;
  }
  // Operation labels keep their $n / $& syntax.
  Taxonomy tx = Taxonomy::builtin();
  tx.load_toml_text(
      "[[rule]]\nname = \"lbl\"\nlevel = \"operation\"\nmatch = '^my_(\\w+)_(\\d+)$'\n"
      "label = '$2:$1 [$&] $$ $9'\n",
      "rules.toml");
  RankTrace t = test::parse(test::trace_of(
      R"({"ph": "X", "cat": "user_annotation", "name": "my_attn_12", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 10, "args": {"correlation": 1}},
{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 50, "dur": 20, "args": {"correlation": 1, "device": 0, "stream": 7}})"));
  label_trace(tx, t);
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.strings.str(t.gpu.operation[0]), "12:attn [my_attn_12] $ $9");
}

// ---- 2, 3. Files that are not regular files.

// A FIFO with no writer, named as a trace: open(2) without O_NONBLOCK waits for a writer forever.
// Wanted: an error naming the file.
TEST(Hostile, FifoNamedAsTraceIsAnErrorNotAHang) {
  const fs::path d = scratch("fifo");
  const std::string fifo = (d / "rank0.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string e;
  within(20, "opening a FIFO", [&] { e = error_of([&] { ByteSource::open_file(fifo); }); });
  EXPECT_EQ(e, fifo + ": byte 0: not a regular file (a FIFO)");
  chopper::Run run;
  within(20, "loading a FIFO", [&] { run = load_run({fifo}); });
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_FALSE(run.ranks[0].ok);
  EXPECT_EQ(run.ranks[0].error, fifo + ": byte 0: not a regular file (a FIFO)");
  fs::remove_all(d);
}

// In a run directory, a FIFO (or a socket, or a symlink to a directory) named like a trace: it
// used to be dropped without a word. Wanted: skipped and listed with the reason, the rest read.
TEST(Hostile, NonRegularFilesInRunDirectoryAreSkippedAndListed) {
  const fs::path d = scratch("fifo_dir");
  fs::copy_file(test::data_path("mini_train.json"), d / "rank0.json");
  ASSERT_EQ(::mkfifo((d / "rank1.json").c_str(), 0600), 0);
  fs::create_directory(d / "sub");
  fs::create_directory_symlink(d / "sub", d / "rank2.json");
  chopper::Run run;
  within(20, "loading a directory with a FIFO", [&] { run = load_run({d.string()}); });
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_TRUE(run.ranks[0].ok);
  std::map<std::string, std::string> skipped(run.skipped.begin(), run.skipped.end());
  EXPECT_EQ(skipped[(d / "rank1.json").string()], "not a regular file (a FIFO)");
  EXPECT_EQ(skipped[(d / "rank2.json").string()], "not a regular file (a directory)");
  fs::remove_all(d);
}

// A dangling symlink in a run directory (a rank file deleted, its link left): the listing's error
// for that entry rejected the whole run. Wanted: that entry skipped and listed, the ranks read.
TEST(Hostile, DanglingSymlinkInRunDirectoryIsSkipped) {
  const fs::path d = scratch("dangling");
  fs::copy_file(test::data_path("mini_train.json"), d / "rank0.json");
  // Several, so that one of them comes last in the listing whatever the order.
  for (int i = 1; i <= 8; ++i)
    fs::create_symlink(d / ("gone" + std::to_string(i)),
                       d / ("rank" + std::to_string(i) + ".json"));
  chopper::Run run;
  ASSERT_NO_THROW(run = load_run({d.string()}));
  ASSERT_EQ(run.ranks.size(), 1u);
  EXPECT_TRUE(run.ranks[0].ok);
  ASSERT_EQ(run.skipped.size(), 8u);
  for (const auto& [file, why] : run.skipped) EXPECT_EQ(why, "a dangling symbolic link") << file;
  fs::remove_all(d);
}

// ---- 4. Time arithmetic.

// ts + dur beyond int64 nanoseconds: the end wrapped to a negative time. Wanted: the event
// counted (time_overflow, with its byte offset) and skipped; every kept end is representable.
TEST(Hostile, TsPlusDurOverflowIsCountedAndSkipped) {
  const RankTrace t = test::parse(test::trace_of(
      R"({"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
{"ph": "X", "cat": "cpu_op", "name": "bad", "pid": 1, "tid": 1, "ts": 9223372036854775, "dur": 1000},
{"ph": "X", "cat": "kernel", "name": "bad_k", "pid": 0, "tid": 7, "ts": 9223372036854775.807, "dur": 0.001, "args": {"device": 0, "stream": 7}},
{"ph": "X", "cat": "cuda_runtime", "name": "bad_r", "pid": 1, "tid": 1, "ts": 9223372036854, "dur": 9223372036854775}
)"));
  EXPECT_EQ(host_names(t), std::vector<std::string>{"ok"});
  EXPECT_EQ(t.gpu.size(), 0u);
  EXPECT_EQ(t.runtime.size(), 0u);
  EXPECT_EQ(t.diagnostics.count("time_overflow"), 3u);
  for (const auto& e : t.diagnostics.entries())
    if (e.kind == "time_overflow") {
      ASSERT_FALSE(e.examples.empty());
      EXPECT_NE(e.examples[0].find("byte "), std::string::npos) << e.examples[0];
    }
}

// Times far apart: each fits int64, their difference did not (info printed a negative span).
// Wanted: times are kept within 2^62 ns of 1970 (years 1824 to 2116), ends included, so that any
// two differ by less than int64; the others are counted and skipped.
TEST(Hostile, TimesFarFromEpochAreSkipped) {
  const RankTrace t = test::parse(test::trace_of(
      R"({"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": -4000000000000000, "dur": 1, "args": {"device": 0, "stream": 7}},
{"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 4000000000000000, "dur": 1, "args": {"device": 0, "stream": 7}},
{"ph": "X", "cat": "kernel", "name": "too_early", "pid": 0, "tid": 7, "ts": -9000000000000000, "dur": 1, "args": {"device": 0, "stream": 7}},
{"ph": "X", "cat": "kernel", "name": "too_late", "pid": 0, "tid": 7, "ts": 9000000000000000, "dur": 1, "args": {"device": 0, "stream": 7}},
{"ph": "i", "cat": "x", "name": "too_late_instant", "pid": 1, "tid": 1, "ts": 9000000000000000, "s": "t"})"));
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.gpu.start_ns[1] + t.gpu.dur_ns[1] - t.gpu.start_ns[0], 8000000000000001000);
  EXPECT_EQ(t.instants.size(), 0u);
  EXPECT_EQ(t.diagnostics.count("time_overflow"), 3u);
}

// baseTimeNanoseconds that puts an event past int64 (signed overflow when the base was added).
// Wanted: that event counted and skipped, the others kept on the absolute clock.
TEST(Hostile, BaseTimeOverflowIsCountedAndSkipped) {
  const RankTrace t = test::parse(test::trace_of(
      R"({"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
{"ph": "X", "cat": "cpu_op", "name": "late", "pid": 1, "tid": 1, "ts": 9000000000000000, "dur": 5},
{"ph": "X", "cat": "cpu_op", "name": "long", "pid": 1, "tid": 1, "ts": 20, "dur": 1000000000000000},
{"ph": "i", "cat": "x", "name": "late_instant", "pid": 1, "tid": 1, "ts": 1000000000000000, "s": "t"})",
      R"("baseTimeNanoseconds": 4000000000000000000, )"));
  EXPECT_EQ(host_names(t), std::vector<std::string>{"ok"});
  ASSERT_EQ(t.host.size(), 1u);
  EXPECT_EQ(t.host.start_ns[0], 4000000000000010000);
  EXPECT_EQ(t.instants.size(), 0u);
  EXPECT_EQ(t.diagnostics.count("time_overflow"), 3u);
  // A base that is itself out of range takes every event out, each counted.
  const RankTrace u = test::parse(test::trace_of(
      R"({"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 5})",
      R"("baseTimeNanoseconds": 9223372036854775807, )"));
  EXPECT_EQ(u.host.size(), 0u);
  EXPECT_EQ(u.diagnostics.count("time_overflow"), 1u);
}

// ---- 5. Memory: event size, decompressed size, out of memory.

// One event of 40 MiB (a 4 MB gzip can hold a 4 GiB name): the window grew to hold it whole, then
// the name was copied and interned (12.6 GB for 4 GiB). Wanted: an event larger than
// max_event_bytes (16 MiB) is skipped without being held, counted as event_too_large; the events
// around it are read. Plain input parsed in place and copied, and gzip.
TEST(Hostile, HugeEventIsSkippedWithoutHoldingIt) {
  const fs::path d = scratch("huge_event");
  const std::string plain =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "before", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
{"ph": "X", "cat": "cpu_op", "name": ")" +
      std::string(size_t{40} << 20, 'a') + R"(", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
{"ph": "X", "cat": "cpu_op", "name": "after", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]})";
  write(d / "plain.json", plain);
  for (bool in_place : {true, false}) {
    KinetoReadOptions o;
    o.in_place = in_place;
    const RankTrace t = read_kineto_file((d / "plain.json").string(), o);
    EXPECT_EQ(host_names(t), (std::vector<std::string>{"before", "after"})) << in_place;
    EXPECT_EQ(t.diagnostics.count("event_too_large"), 1u) << in_place;
    EXPECT_EQ(t.total_events, 3u);
  }
  // 128 MiB of name in 150 KiB of gzip; the reader's memory stays near the 16 MiB limit.
  write(d / "bomb.json.gz", gzip_trace_with_long_name(128));
  const RankTrace t = read_kineto_file((d / "bomb.json.gz").string());
  EXPECT_EQ(host_names(t), (std::vector<std::string>{"before", "after"}));
  EXPECT_EQ(t.diagnostics.count("event_too_large"), 1u);
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  if (!kSanitized) {  // ASan's quarantine and shadow memory say nothing about the reader
    EXPECT_LT(ru.ru_maxrss, 160 * 1024) << "peak resident KiB";
  }
  // A smaller limit, set per read.
  KinetoReadOptions small;
  small.max_event_bytes = 100;
  const RankTrace s = read_kineto_file((d / "bomb.json.gz").string(), small);
  EXPECT_EQ(host_names(s), (std::vector<std::string>{"before", "after"}));
  fs::remove_all(d);
}

// A compressed file larger than the decompressed-size cap: an error naming the file and the
// compressed offset (the cap is 64 GiB by default; configurable per process and per source).
TEST(Hostile, DecompressedSizeIsCapped) {
  const fs::path d = scratch("cap");
  write(d / "bomb.json.gz", gzip_trace_with_long_name(8));
  const uint64_t was = max_decompressed_bytes();
  EXPECT_EQ(was, uint64_t{64} << 30);
  set_max_decompressed_bytes(uint64_t{4} << 20);
  const std::string e = error_of([&] { read_kineto_file((d / "bomb.json.gz").string()); });
  set_max_decompressed_bytes(was);
  EXPECT_EQ(e.rfind((d / "bomb.json.gz").string() + ": byte ", 0), 0u) << e;
  EXPECT_NE(e.find("decompressed data exceeds the limit of 4 MiB per file"), std::string::npos)
      << e;
  // Under the cap, the same file reads.
  EXPECT_NO_THROW(read_kineto_file((d / "bomb.json.gz").string()));
  fs::remove_all(d);
}

// Memory running out while a file is read: std::bad_alloc reached the user as "std::bad_alloc",
// naming no file. Wanted: an InputError naming the file (the other ranks go on).
TEST(Hostile, OutOfMemoryNamesTheFile) {
  class Starved : public ByteSource {
   public:
    Starved() { name_ = "starved.json"; }
    size_t read(char* dst, size_t cap) override {
      if (calls_++ > 0) throw std::bad_alloc();
      const std::string_view head = R"({"traceEvents": [{"ph": "X", )";
      const size_t n = std::min(cap, head.size());
      std::memcpy(dst, head.data(), n);
      return n;
    }
    uint64_t raw_offset() const override { return 29; }
    uint64_t raw_size() const override { return 1000; }

   private:
    int calls_ = 0;
  };
  Starved src;
  KinetoReadOptions o;
  o.in_place = false;
  const std::string e = error_of([&] { read_kineto(src, o); });
  EXPECT_EQ(e, "starved.json: byte 29: out of memory while reading this file");
}

// ---- 6. Output: atomic, locked, no stale files.

namespace {

TableSchema schema_of(const std::string& name) {
  TableSchema s;
  s.name = name;
  s.doc = "test table " + name;
  s.columns = {{"x", ColType::kInt, "a number"}};
  return s;
}

void write_rows(TableSink& sink, const std::string& name, int rows) {
  sink.begin(schema_of(name));
  for (int i = 0; i < rows; ++i) {
    const Cell c = Cell::of(i);
    sink.row(std::span<const Cell>(&c, 1));
  }
  sink.end();
}

// What `analyze` writes: the database and (unless csv is false) a CSV per table, staged in
// the output directory and committed at the end.
void analyze_like(const fs::path& dir, const std::vector<std::pair<std::string, int>>& tables,
                  bool csv) {
  OutputDir out(dir.string());
  {
    SqliteSink db(out.stage("chopper.sqlite"));
    std::optional<CsvSink> c;
    FanoutSink sink;
    sink.add(db);
    sink.add(out.recorder());
    if (csv) {
      c.emplace(dir.string(), &out);
      sink.add(*c);
    }
    for (const auto& [name, rows] : tables) write_rows(sink, name, rows);
  }
  out.commit();
}

// Table name -> rows, from the database's own catalogue; -1 for a catalogued table that is not
// there.
std::map<std::string, int> tables_in(const fs::path& db_path) {
  std::map<std::string, int> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {{"<cannot open>", -1}};
  }
  std::vector<std::string> names;
  sqlite3_exec(
      db, "SELECT table_name FROM chopper_tables ORDER BY table_name",
      [](void* v, int, char** col, char**) {
        static_cast<std::vector<std::string>*>(v)->emplace_back(col[0]);
        return 0;
      },
      &names, nullptr);
  for (const std::string& n : names) {
    int rows = -1;
    sqlite3_exec(
        db, ("SELECT count(*) FROM \"" + n + "\"").c_str(),
        [](void* v, int, char** col, char**) {
          *static_cast<int*>(v) = std::atoi(col[0]);
          return 0;
        },
        &rows, nullptr);
    out[n] = rows;
  }
  sqlite3_close(db);
  return out;
}

std::vector<std::string> files_in(const fs::path& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// analyze killed while writing (SIGINT, SIGKILL, a crash): the database was removed first and
// written in place, so what was left had a catalogue listing tables that were not there, and the
// earlier run's results were gone. Wanted: the earlier outputs stay whole until the new ones are
// complete (written to temporary names and renamed), and the next run clears the leftovers.
TEST(Hostile, KilledAnalyzeLeavesEarlierOutputsWhole) {
  const fs::path d = scratch("killed");
  analyze_like(d, {{"a", 3}, {"b", 4}}, true);
  const std::map<std::string, int> before{{"a", 3}, {"b", 4}};
  ASSERT_EQ(tables_in(d / "chopper.sqlite"), before);
  const std::string a_csv = test::read_file((d / "a.csv").string());

  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the run that is killed half way through table b
    OutputDir out(d.string());
    SqliteSink db(out.stage("chopper.sqlite"));
    CsvSink csv(d.string(), &out);
    FanoutSink sink;
    sink.add(db);
    sink.add(csv);
    write_rows(sink, "a", 100);
    sink.begin(schema_of("b"));
    const Cell c = Cell::of(1);
    for (int i = 0; i < 100; ++i) sink.row(std::span<const Cell>(&c, 1));
    ::raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(tables_in(d / "chopper.sqlite"), before);
  EXPECT_EQ(test::read_file((d / "a.csv").string()), a_csv);
  // The next run takes the lock and removes what the killed one left.
  { OutputDir again(d.string()); }
  EXPECT_EQ(files_in(d),
            (std::vector<std::string>{".chopper.lock", "a.csv", "b.csv", "chopper.sqlite"}));
  fs::remove_all(d);
}

// Two analyze runs into one directory at once interleaved their writes (NUL bytes in a CSV).
// Wanted: the second gets a clear error naming the directory while the first holds it.
TEST(Hostile, SecondWriterGetsAClearError) {
  const fs::path d = scratch("lock");
  {
    OutputDir first(d.string());
    const std::string e = error_of([&] { OutputDir second(d.string()); });
    EXPECT_EQ(e, d.string() + ": another chopper analyze is writing to this directory (it holds " +
                     (d / ".chopper.lock").string() + "); wait for it or choose another -o");
  }
  EXPECT_NO_THROW(OutputDir third(d.string()));
  fs::remove_all(d);
}

// analyze --no-csv after a run with CSVs left the old CSVs beside the new database. Wanted: the
// CSV of every table this run declares and does not write as CSV is removed; other files (the
// user's, or CSVs chopper does not write) stay.
TEST(Hostile, StaleCsvsOfEarlierRunsAreRemoved) {
  const fs::path d = scratch("stale");
  analyze_like(d, {{"a", 3}, {"b", 4}}, true);
  write(d / "notes.csv", "mine\n");
  analyze_like(d, {{"a", 5}, {"b", 6}}, false);
  EXPECT_EQ(files_in(d),
            (std::vector<std::string>{".chopper.lock", "chopper.sqlite", "notes.csv"}));
  EXPECT_EQ(tables_in(d / "chopper.sqlite"), (std::map<std::string, int>{{"a", 5}, {"b", 6}}));
  // With CSVs again, then a run that no longer writes b as CSV.
  analyze_like(d, {{"a", 1}, {"b", 1}}, true);
  EXPECT_TRUE(fs::exists(d / "b.csv"));
  fs::remove_all(d);
}

// ---- 9. JSON output of file names that are not UTF-8.

// info --json wrote a file name's bytes raw: not JSON (invalid UTF-8). Wanted: valid JSON, each
// invalid byte shown as U+FFFD.
TEST(Hostile, InfoJsonOfNonUtf8FileNameParses) {
  const fs::path d = scratch("utf8");
  const std::string bad = "rank0-\xff\xfe-\xc3.json";
  fs::copy_file(test::data_path("mini_train.json"), d / bad);
  write(d / "rank1-\xe9t\xe9.json", "{\"traceEvents\": [{");
  const chopper::Run run = load_run({d.string()});
  ASSERT_EQ(run.ranks.size(), 2u);
  const std::string json = info_json(run);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json.substr(0, 300);
  simdjson::dom::array arr;
  ASSERT_EQ(doc.get_array().get(arr), simdjson::SUCCESS);
  std::vector<std::string> files;
  for (simdjson::dom::element e : arr) {
    std::string_view f;
    ASSERT_EQ(e["file"].get_string().get(f), simdjson::SUCCESS);
    files.emplace_back(f);
  }
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], (d / "rank0-\xEF\xBF\xBD\xEF\xBF\xBD-\xEF\xBF\xBD.json").string());
  EXPECT_EQ(files[1], (d / "rank1-\xEF\xBF\xBDt\xEF\xBF\xBD.json").string());
  fs::remove_all(d);
}

// ---- Kept: a trace cut at any byte is one error line naming the file and the offset, with
// every limit in force (and a small event limit, so that the skip path is cut too).
TEST(Hostile, TruncatedAnywhereGivesOneErrorLine) {
  // Every kind of event, escapes and metadata, in 1 KiB (each cut is a whole parse).
  const std::string text = test::trace_of(
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm \"q\" \u00e9", "pid": 1, "tid": 1, "ts": 10.5, "dur": 20, "args": {"External id": 2, "Input Dims": [[2, 3], [3, 4]]}},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 13, "dur": 5, "args": {"correlation": 1, "External id": 2}},
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 10, "args": {"correlation": 1, "device": 0, "stream": 7}},
{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 13, "cat": "ac2g", "name": "ac2g"},
{"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
{"ph": "i", "cat": "x", "name": "mark", "pid": 1, "tid": 1, "ts": 30, "s": "t"},
{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}})",
      R"("distributedInfo": {"rank": 0, "world_size": 2}, "baseTimeNanoseconds": 1700000000000000000, )");
  // The default limits, and a tiny window and event limit (most events then take the skip path).
  for (const auto& [window, max_event] :
       {std::pair<size_t, size_t>{1 << 20, size_t{16} << 20}, std::pair<size_t, size_t>{16, 64}}) {
    for (size_t cut = 0; cut < text.size(); ++cut) {
      KinetoReadOptions o;
      o.max_event_bytes = max_event;
      o.window_bytes = window;
      try {
        auto src = ByteSource::from_memory(text.substr(0, cut), "cut.json");
        (void)read_kineto(*src, o);
        FAIL() << "no error for the trace cut at byte " << cut;
      } catch (const InputError& e) {
        const std::string w = e.what();
        ASSERT_EQ(w.rfind("cut.json: byte ", 0), 0u) << cut << ": " << w;
        ASSERT_EQ(w.find('\n'), std::string::npos) << cut << ": " << w;
      }
    }
  }
}
