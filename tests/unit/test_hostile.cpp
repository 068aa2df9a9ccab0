// Hostile input: what a user, a broken job or an attacker can hand chopper, and what it must do
// with it. Each test names the input, the behaviour wanted and why; together they are the
// hostile-input suite that CI runs (crash, hang, memory, bad error, silent loss). Hang-prone tests
// run under a watchdog that fails the test (and ends the process) instead of hanging CI.
#include <fcntl.h>
#include <fmt/format.h>
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
#include <set>
#include <thread>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/csv_sink.hpp"
#include "chopper/report/html/report_html.hpp"
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
// Wanted: no hang. Opened as a plain file it is refused; named as a trace it is read as a stream
// (a pipe, `<(zcat ...)`), and one with no writer reads as empty: an error naming the file.
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
  EXPECT_EQ(run.ranks[0].error, fifo + ": byte 0: empty file: no JSON trace in it");
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

// What Kineto wrote on an H200 with CUPTI's per-kernel counters on (PyTorch 2.11): the kernels
// launched before the profiled steps come with ts 0, one of them ending at the epoch's present
// (the trace's own times are relative to baseTimeNanoseconds), and Kineto's own "overhead" rows
// at ts 0 too. Kept, the kernel breakdown summed 1.8e18 ns of compute. Wanted: the activities at
// ts 0 (the trace's GPU times are 57 days past it) counted (gpu_activity_outside_trace) and
// skipped, the overhead row not taken for the host's start; the kernels of the trace kept.
TEST(Hostile, GpuActivityWithZeroTimestampOutsideTheTraceIsSkipped) {
  const RankTrace t = test::parse(test::trace_of(
      R"X({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 4989670956183.98, "dur": 100},
{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4989670956190, "dur": 5, "args": {"correlation": 50}},
{"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0, "ts": 0.0, "dur": 0.0},
{"ph": "X", "cat": "kernel", "name": "early", "pid": 0, "tid": 7, "ts": 0.0, "dur": 0.0, "args": {"device": 0, "stream": 7, "correlation": 19}},
{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 0.0, "dur": 0.0, "args": {"device": 0, "stream": 7, "correlation": 23}},
{"ph": "X", "cat": "kernel", "name": "forever", "pid": 0, "tid": 7, "ts": 0.0, "dur": 1795846696955862.0, "args": {"device": 0, "stream": 7, "correlation": 3144}},
{"ph": "X", "cat": "kernel", "name": "mm", "pid": 0, "tid": 7, "ts": 4989670956200, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 50}},
{"ph": "X", "cat": "kernel", "name": "tail", "pid": 0, "tid": 7, "ts": 4989670956100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 12}})X",
      R"("baseTimeNanoseconds": 1790857026000000000, )"));
  // "tail" (a kernel of the step before, 84 us before the first host op) is a real activity.
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.strings.str(t.gpu.name[0]), "mm");
  EXPECT_EQ(t.strings.str(t.gpu.name[1]), "tail");
  EXPECT_EQ(t.gpu.dur_ns[0], 40000);
  EXPECT_EQ(t.diagnostics.count("gpu_activity_outside_trace"), 3u);
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

// ---- Issue 28: every failure an error, safe output.

// A worker thread's exception (a full disk while a rank's rows are spooled: "cannot write spool
// file") left std::thread and ended the process with std::terminate (exit 134), the spool files
// left behind. Wanted: the exception reaches the caller of parallel_for, once every thread has
// stopped, and no item starts after it.
TEST(Hostile, WorkerExceptionReachesTheCaller) {
  for (unsigned threads : {1u, 4u}) {
    std::atomic<size_t> ran{0};
    const std::string e = error_of([&] {
      parallel_for(1000, threads, [&](size_t i) {
        ++ran;
        if (i == 37) throw Error("spool.bin: cannot write spool file: No space left on device");
        if (threads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      });
    });
    EXPECT_EQ(e, "spool.bin: cannot write spool file: No space left on device") << threads;
    // One thread: items 0 to 37, then no more. Four: those begun before the error was seen (the
    // others take 2 ms each: 1000 of them take about 0.7 s on three threads), never all 1000.
    if (threads == 1) {
      EXPECT_EQ(ran.load(), 38u);
    }
    EXPECT_GE(ran.load(), 38u);
    EXPECT_LT(ran.load(), 1000u);
  }
}

// SIGINT or SIGTERM during analyze left ~400 MB of temporary files in the output directory until
// the next run. Wanted: the handler removes the tracked temporary files, then the process ends by
// the same signal (its status says so); a file no longer tracked (committed) stays.
TEST(Hostile, SignalRemovesTrackedTemporaryFiles) {
  const fs::path d = scratch("signal");
  const fs::path tmp = d / ".chopper-tmp-1-chopper.sqlite", kept = d / "committed.csv";
  for (int sig : {SIGINT, SIGTERM}) {
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      install_temp_file_cleanup();
      write(tmp, "partial");
      write(kept, "whole");
      track_temp_file(tmp.string());
      track_temp_file(kept.string());
      untrack_temp_file(kept.string());  // renamed into place: no longer temporary
      ::raise(sig);
      std::_Exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_FALSE(fs::exists(tmp)) << strsignal(sig);
    EXPECT_TRUE(fs::exists(kept));
  }
  fs::remove_all(d);
}

// A run killed outright (SIGKILL) leaves its temporary file beside the output: OUT.tmp-PID. The
// next start removes those whose process is gone, and keeps those of a live process (pid 1, this
// process's parent) and names that are not PREFIX<pid>.
TEST(Hostile, NextStartRemovesTemporaryFilesOfDeadProcesses) {
  const fs::path d = scratch("stale_tmp");
  std::fflush(nullptr);
  const pid_t dead = ::fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) std::_Exit(0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string out = (d / "report.html").string();
  write(out + ".tmp-" + std::to_string(dead), "left by a killed run");
  write(out + ".tmp-1", "pid 1 is alive");
  write(out + ".tmp-" + std::to_string(::getppid()), "the parent is alive");
  write(out + ".tmp-x1", "not a pid");
  {
    OutputFile f(out, false);
    f.write("<html></html>");
    f.commit();
  }
  const std::set<std::string> want{"report.html", "report.html.tmp-1",
                                   "report.html.tmp-" + std::to_string(::getppid()),
                                   "report.html.tmp-x1"};
  EXPECT_EQ(files_in(d), std::vector<std::string>(want.begin(), want.end()));
  EXPECT_EQ(test::read_file(out), "<html></html>");
  fs::remove_all(d);
}

// A rerun replaces the earlier file (removed, then the new one renamed into place: ext4 writes a
// file renamed over another to disk at once); a symbolic link at the path is replaced, not
// followed, as a rename alone would.
TEST(Hostile, OutputFileReplacesTheEarlierFile) {
  const fs::path d = scratch("replace");
  const std::string out = (d / "report.html").string();
  write(out, "an earlier, longer report");
  {
    OutputFile f(out, false);
    f.write("new");
    f.commit();
  }
  EXPECT_EQ(test::read_file(out), "new");
  write((d / "target").string(), "kept");
  const std::string link = (d / "link.html").string();
  ASSERT_EQ(::symlink("target", link.c_str()), 0);
  {
    OutputFile f(link, false);
    f.write("through no link");
    f.commit();
  }
  EXPECT_FALSE(fs::is_symlink(link));
  EXPECT_EQ(test::read_file(link), "through no link");
  EXPECT_EQ(test::read_file((d / "target").string()), "kept");
  EXPECT_EQ(files_in(d), (std::vector<std::string>{"link.html", "report.html", "target"}));
  fs::remove_all(d);
}

// `report -o DIR` said "cannot rename into place: Success". Wanted: the path named as a
// directory, before anything is written.
TEST(Hostile, OutputFileThatIsADirectorySaysSo) {
  const fs::path d = scratch("outdir");
  const std::string e = error_of([&] { OutputFile f(d.string(), false); });
  EXPECT_EQ(e, d.string() + ": is a directory; name the file to write (-o FILE)");
  EXPECT_EQ(files_in(d), std::vector<std::string>{});
  fs::remove_all(d);
}

// `--rules FIFO` blocked forever; `--rules /dev/zero` and `/dev/urandom` were read as no rules,
// without a word. Wanted: regular files only, opened without blocking, at most 1 MiB; each an
// error naming the file.
TEST(Hostile, RulesFileMustBeASmallRegularFile) {
  const fs::path d = scratch("rules_file");
  const std::string fifo = (d / "rules.toml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string e;
  within(20, "a rules FIFO", [&] { e = error_of([&] { Taxonomy::builtin().load_toml(fifo); }); });
  EXPECT_EQ(e, fifo + ": byte 0: not a regular file (a FIFO)");
  for (const char* dev : {"/dev/zero", "/dev/urandom"}) {
    within(20, dev, [&] { e = error_of([&] { Taxonomy::builtin().load_toml(dev); }); });
    EXPECT_EQ(e, std::string(dev) + ": byte 0: not a regular file (a character device)");
  }
  // One byte above the limit: refused by its size, before it is read.
  const fs::path big = d / "big.toml";
  write(big, std::string((1 << 20) + 1, '#'));
  e = error_of([&] { Taxonomy::builtin().load_toml(big.string()); });
  EXPECT_EQ(e, big.string() + ": byte 0: 1048577 bytes, above the limit of 1 MiB for a rules file");
  // At the limit, a comment-only file is read (no rules).
  fs::resize_file(big, 1 << 20);
  EXPECT_EQ(error_of([&] { Taxonomy::builtin().load_toml(big.string()); }), "no error");
  fs::remove_all(d);
}

// A rule whose match nests 100,000 groups overflowed the stack in the literal filter's reader
// (recursive per level) before RE2 saw it. Wanted: refused with the rules file, line and rule;
// 1,000 levels (the limit) still reach RE2, and the literal reader stops at its depth limit
// whoever calls it.
TEST(Hostile, DeeplyNestedRuleIsRefused) {
  const auto rule = [](size_t depth) {
    return "\n[[rule]]\nname = \"deep\"\nlevel = \"operation\"\nmatch = '" +
           std::string(depth, '(') + "ab" + std::string(depth, ')') + "'\n";
  };
  Taxonomy tx = Taxonomy::builtin();
  std::string e;
  within(20, "a deeply nested rule",
         [&] { e = error_of([&] { tx.load_toml_text(rule(100000), "deep.toml"); }); });
  EXPECT_EQ(e, "deep.toml:2: rule 'deep': groups nested 100000 deep, above the limit of 1000");
  // '(' inside a class or escaped opens no group.
  EXPECT_EQ(error_of([&] {
              Taxonomy::builtin().load_toml_text(
                  "[[rule]]\nname = \"flat\"\nlevel = \"operation\"\nmatch = '[" +
                      std::string(5000, '(') + "]x\\(" + "'\n",
                  "flat.toml");
            }),
            "no error");
  EXPECT_EQ(error_of([&] { Taxonomy::builtin().load_toml_text(rule(1001), "d.toml"); }),
            "d.toml:2: rule 'deep': groups nested 1001 deep, above the limit of 1000");
  // At the limit the pattern reaches RE2 (which may refuse it on its own terms, naming the rule).
  const std::string at =
      error_of([&] { Taxonomy::builtin().load_toml_text(rule(1000), "d.toml"); });
  EXPECT_TRUE(at == "no error" || at.rfind("d.toml:2: rule 'deep': bad regex", 0) == 0) << at;
  within(20, "the literal reader on a deep pattern", [&] {
    EXPECT_TRUE(
        required_literals(std::string(100000, '(') + "abc" + std::string(100000, ')')).empty());
  });
  EXPECT_EQ(required_literals("((((abc))))"), std::vector<std::string>{"abc"});
}

// An array-form trace of 30 events with one flipped byte (the ',' after event 4 became ']') kept
// 4 events with exit 0 and a "trailing_data 1" warning: 83% of the file ignored. Wanted: an error
// for that file naming the byte where the data goes on.
TEST(Hostile, TraceThatEndsEarlyIsAnError) {
  std::string text = "[";
  size_t comma4 = 0;
  for (int i = 0; i < 30; ++i) {
    if (i) {
      if (i == 4) comma4 = text.size();
      text += ",\n";
    }
    text += R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": )" +
            std::to_string(1700000000000000 + 10 * i) +
            R"(, "dur": 1, "args": {"device": 0, "stream": 7}})";
  }
  text += "]";
  // Whole, it reads: 30 GPU activities.
  EXPECT_EQ(read_kineto(*ByteSource::from_memory(text, "ok.json")).gpu.size(), 30u);
  text[comma4] = ']';
  const std::string e =
      error_of([&] { (void)read_kineto(*ByteSource::from_memory(text, "flipped.json")); });
  // The array ends at the flipped byte; the next event's '{' follows the newline after it.
  EXPECT_EQ(e, "flipped.json: byte " + std::to_string(comma4 + 2) +
                   ": data after the end of the JSON trace (found '{'): its structure ended early "
                   "(a damaged byte?), and the rest of the file would not be read")
      << e;
  // Trailing blanks stay allowed.
  EXPECT_EQ(
      read_kineto(*ByteSource::from_memory(text.substr(0, comma4 + 1) + " \n\t\r\n", "blanks.json"))
          .gpu.size(),
      4u);
}

// `chopper tree` wrote operation names' ESC sequences and NUL bytes raw; `info` printed a file
// name's ESC raw. Wanted: every control character shown as \xHH (C0 but tab and, for whole
// texts, newline; DEL; C1 as UTF-8; a byte that is not UTF-8); other text, UTF-8 included, kept.
TEST(Hostile, TerminalTextEscapesControls) {
  EXPECT_EQ(terminal_safe("op\x1b[31mred\x1b]0;title\x07"), "op\\x1b[31mred\\x1b]0;title\\x07");
  EXPECT_EQ(terminal_safe(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(terminal_safe("a\nb\tc\x7f"), "a\\x0ab\tc\\x7f");
  EXPECT_EQ(terminal_safe("a\nb", true), "a\nb");
  EXPECT_EQ(terminal_safe("csi \xc2\x9b"
                          "31m, lone \x9b, cut \xc3"),
            "csi \\xc2\\x9b31m, lone \\x9b, cut \\xc3");
  EXPECT_EQ(terminal_safe("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5 \xc2\xa0"),
            "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x94\xa5 \xc2\xa0");
}

// `-` and `<(zcat ...)` could not be given as a trace (a pipe is not a regular file). Wanted: a
// pipe or FIFO named explicitly is read as a stream (gzip too, never mapped); a FIFO found in a
// directory is still skipped unopened.
TEST(Hostile, TraceFromAPipeIsRead) {
  const fs::path d = scratch("pipe");
  const std::string fifo = (d / "rank0.json.gz").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string data = gzip(test::read_file(test::data_path("mini_train.json")));
  // A reader that never reads holds the FIFO open (its buffer would be dropped if the writer
  // closed before chopper opened it); the writer's end opens at once, and the thread writes and
  // closes it: the end of the stream.
  const int hold = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(hold, 0);
  const auto feed = [&] {
    const int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    EXPECT_GE(w, 0);
    return std::thread([w, &data] {
      for (size_t at = 0; at < data.size();) {
        const ssize_t n = ::write(w, data.data() + at, data.size() - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
      }
      ::close(w);
    });
  };
  chopper::Run run;
  std::thread writer = feed();
  within(30, "reading a trace from a FIFO", [&] { run = load_run({fifo}); });
  writer.join();
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
  const RankTrace plain = load_rank_file(test::data_path("mini_train.json"));
  EXPECT_EQ(run.ranks[0].trace.gpu.size(), plain.gpu.size());
  EXPECT_EQ(run.ranks[0].file, fifo);
  // Found in a directory, the same FIFO is skipped without being opened (no writer: no hang).
  within(20, "listing a directory with a FIFO", [&] { run = load_run({d.string()}); });
  EXPECT_TRUE(run.ranks.empty());
  ASSERT_EQ(run.skipped.size(), 1u);
  EXPECT_EQ(run.skipped[0].second, "not a regular file (a FIFO)");
  // The decompression cap holds for a stream too.
  set_max_decompressed_bytes(1000);
  std::string e;
  std::thread writer2 = feed();
  within(30, "a capped stream", [&] { e = error_of([&] { (void)read_kineto_file(fifo); }); });
  set_max_decompressed_bytes(kDefaultMaxDecompressedBytes);
  writer2.join();
  EXPECT_NE(e.find(fifo + ": byte "), std::string::npos) << e;
  EXPECT_NE(e.find("decompressed data exceeds the limit of 1000 bytes per file"), std::string::npos)
      << e;
  ::close(hold);
  fs::remove_all(d);
}

// The report's Content-Security-Policy allowed any inline script (script-src 'unsafe-inline'),
// so a script smuggled into the page through a name would run. Wanted: the one inline script
// allowed by its SHA-256 (base64), nothing else. The hash function is checked against FIPS 180-4's
// examples ("abc", and the 56-byte two-block message).
TEST(Hostile, ReportAllowsOnlyItsOwnScript) {
  auto hex = [](const std::string& b) {
    std::string o;
    for (unsigned char c : b) o += fmt::format("{:02x}", c);
    return o;
  };
  EXPECT_EQ(hex(html::sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(html::sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(html::sha256("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  html::TableStore ts(html::report_tables());
  const std::string page = html::render_report(ts, html::ReportInfo{});
  EXPECT_EQ(page.find("unsafe-inline'; img"), std::string::npos);
  const size_t a = page.find("<script>") + 8, b = page.find("</script>");
  ASSERT_LT(a, b);
  EXPECT_EQ(page.find("<script", a), page.find("</script>") < page.find("<script", a)
                                         ? page.find("<script", a)
                                         : std::string::npos)
      << "one inline script";
  const std::string script = page.substr(a, b - a);
  // The hash in the policy, computed with the checked function and base64 by hand.
  const std::string digest = html::sha256(script);
  static constexpr char k64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < digest.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(digest[i]) << 16;
    if (i + 1 < digest.size()) v |= static_cast<uint8_t>(digest[i + 1]) << 8;
    if (i + 2 < digest.size()) v |= static_cast<uint8_t>(digest[i + 2]);
    b64 += k64[v >> 18];
    b64 += k64[(v >> 12) & 63];
    b64 += i + 1 < digest.size() ? k64[(v >> 6) & 63] : '=';
    b64 += i + 2 < digest.size() ? k64[v & 63] : '=';
  }
  EXPECT_NE(page.find("script-src 'sha256-" + b64 + "'; img-src data:"), std::string::npos)
      << page.substr(0, 400);
}
