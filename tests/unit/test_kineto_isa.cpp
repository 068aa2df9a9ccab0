// The Kineto parser's copies for each x86-64 level (kineto_parser.inc: baseline, v2, v3) give the
// same RankTrace, byte for byte, on the committed traces, the fuzz corpus, the shared real traces
// (when present) and synthetic input aimed at the places where the levels' code differs; and
// read_kineto runs the level CHOPPER_ISA asks for. A file read on two threads (split) gives the
// one-thread RankTrace, byte for byte, on the same inputs (KinetoSplit).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "chopper/base/error.hpp"
#include "chopper/ingest/kineto/trace_merge.hpp"
#include "chopper/synth/synth.hpp"
#include "test_util.hpp"

using namespace chopper;

namespace {

std::vector<KinetoIsa> supported_isas() {
  std::vector<KinetoIsa> v;
  for (KinetoIsa isa : kKinetoIsas)
    if (kineto_isa_supported(isa)) v.push_back(isa);
  return v;
}

// A column's bytes (vector<bool> one byte per element).
template <class T>
std::string bytes_of(const std::vector<T>& col) {
  std::string s;
  if constexpr (std::is_same_v<T, bool>) {
    for (bool b : col) s.push_back(b ? '\1' : '\0');
  } else {
    static_assert(std::is_trivially_copyable_v<T>);
    s.resize(col.size() * sizeof(T));
    if (!col.empty()) std::memcpy(s.data(), col.data(), s.size());
  }
  return s;
}

// Every column of a table, in for_each_column's order.
template <class Table>
std::vector<std::string> columns_of(Table& t) {
  std::vector<std::string> cols;
  t.for_each_column([&](auto& col) { cols.push_back(bytes_of(col)); });
  return cols;
}

template <class Table>
void expect_same_columns(Table& a, Table& b, const char* table, const std::string& what) {
  const std::vector<std::string> ca = columns_of(a), cb = columns_of(b);
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i)
    EXPECT_TRUE(ca[i] == cb[i]) << what << ": " << table << " column " << i << " differs";
}

std::vector<std::string> strings_of(const StringTable& s) {
  std::vector<std::string> v;
  for (size_t i = 0; i < s.size(); ++i) v.emplace_back(s.str(static_cast<StrId>(i)));
  return v;
}

// Everything read_kineto fills, compared exactly: every column of every table, the string table
// (ids included), threads, shapes, collective args, counts, metadata and diagnostics (kinds,
// counts and examples).
void expect_identical(RankTrace& a, RankTrace& b, const std::string& what) {
  EXPECT_EQ(a.file, b.file) << what;
  EXPECT_EQ(a.file_bytes, b.file_bytes) << what;
  EXPECT_EQ(a.uncompressed_bytes, b.uncompressed_bytes) << what;
  EXPECT_EQ(strings_of(a.strings), strings_of(b.strings)) << what;
  EXPECT_EQ(a.strings.repaired_utf8_bytes(), b.strings.repaired_utf8_bytes()) << what;
  expect_same_columns(a.gpu, b.gpu, "gpu", what);
  expect_same_columns(a.host, b.host, "host", what);
  expect_same_columns(a.runtime, b.runtime, "runtime", what);
  expect_same_columns(a.flows, b.flows, "flows", what);
  expect_same_columns(a.instants, b.instants, "instants", what);
  EXPECT_EQ(bytes_of(a.counters.name), bytes_of(b.counters.name)) << what;
  EXPECT_EQ(bytes_of(a.counters.pid), bytes_of(b.counters.pid)) << what;
  EXPECT_EQ(bytes_of(a.counters.ts_ns), bytes_of(b.counters.ts_ns)) << what;
  EXPECT_EQ(bytes_of(a.counters.value), bytes_of(b.counters.value)) << what;
  EXPECT_EQ(a.threads, b.threads) << what;
  ASSERT_EQ(a.shapes.size(), b.shapes.size()) << what;
  for (size_t i = 0; i < a.shapes.size(); ++i) {
    EXPECT_EQ(a.shapes[i].input_dims, b.shapes[i].input_dims) << what;
    EXPECT_EQ(a.shapes[i].input_types, b.shapes[i].input_types) << what;
    EXPECT_EQ(a.shapes[i].concrete_inputs, b.shapes[i].concrete_inputs) << what;
  }
  ASSERT_EQ(a.comm_args.size(), b.comm_args.size()) << what;
  for (size_t i = 0; i < a.comm_args.size(); ++i) {
    const CommArgs &x = a.comm_args[i], &y = b.comm_args[i];
    EXPECT_EQ(std::tie(x.collective_name, x.dtype, x.in_nelems, x.out_nelems, x.group_size,
                       x.pg_name, x.pg_desc, x.pg_ranks, x.in_split, x.out_split, x.seq),
              std::tie(y.collective_name, y.dtype, y.in_nelems, y.out_nelems, y.group_size,
                       y.pg_name, y.pg_desc, y.pg_ranks, y.in_split, y.out_split, y.seq))
        << what << ": comm_args " << i;
  }
  EXPECT_EQ(a.collectives.size(), b.collectives.size()) << what;
  EXPECT_EQ(a.x_events_by_category, b.x_events_by_category) << what;
  EXPECT_EQ(a.events_by_ph, b.events_by_ph) << what;
  EXPECT_EQ(a.total_events, b.total_events) << what;
  EXPECT_EQ(a.steps.size(), b.steps.size()) << what;
  const TraceMetadata &m = a.meta, &n = b.meta;
  EXPECT_EQ(std::tie(m.rank, m.world_size, m.rank_source, m.backend, m.nccl_version, m.pg_count,
                     m.schema_version, m.base_time_ns, m.has_base_time, m.trace_name,
                     m.display_time_unit, m.versions, m.other, m.ts_format, m.legacy_2021, m.rocm,
                     m.process_names, m.thread_names),
            std::tie(n.rank, n.world_size, n.rank_source, n.backend, n.nccl_version, n.pg_count,
                     n.schema_version, n.base_time_ns, n.has_base_time, n.trace_name,
                     n.display_time_unit, n.versions, n.other, n.ts_format, n.legacy_2021, n.rocm,
                     n.process_names, n.thread_names))
      << what << ": metadata";
  ASSERT_EQ(m.process_groups.size(), n.process_groups.size()) << what;
  for (size_t i = 0; i < m.process_groups.size(); ++i) {
    const ProcessGroup &x = m.process_groups[i], &y = n.process_groups[i];
    EXPECT_EQ(std::tie(x.name, x.desc, x.backend_config, x.size, x.ranks),
              std::tie(y.name, y.desc, y.backend_config, y.size, y.ranks))
        << what << ": process group " << i;
  }
  ASSERT_EQ(m.devices.size(), n.devices.size()) << what;
  for (size_t i = 0; i < m.devices.size(); ++i) {
    const DeviceProps &x = m.devices[i], &y = n.devices[i];
    EXPECT_EQ(std::tie(x.id, x.name, x.total_global_mem_bytes, x.compute_major, x.compute_minor,
                       x.num_sms, x.warp_size, x.max_threads_per_block,
                       x.shared_mem_per_block_bytes, x.regs_per_block),
              std::tie(y.id, y.name, y.total_global_mem_bytes, y.compute_major, y.compute_minor,
                       y.num_sms, y.warp_size, y.max_threads_per_block,
                       y.shared_mem_per_block_bytes, y.regs_per_block))
        << what << ": device " << i;
  }
  const auto& da = a.diagnostics.entries();
  const auto& db = b.diagnostics.entries();
  ASSERT_EQ(da.size(), db.size()) << what;
  for (size_t i = 0; i < da.size(); ++i) {
    EXPECT_EQ(da[i].kind, db[i].kind) << what;
    EXPECT_EQ(da[i].count, db[i].count) << what << ": " << da[i].kind;
    EXPECT_EQ(da[i].examples, db[i].examples) << what << ": " << da[i].kind;
  }
}

// A read's outcome: the trace, or the InputError's message.
struct Outcome {
  std::optional<RankTrace> trace;
  std::string error;
};
Outcome read_with(KinetoIsa isa, std::string_view bytes, const KinetoReadOptions& opt) {
  Outcome o;
  try {
    auto src = ByteSource::from_memory(bytes, "input.json");
    o.trace = read_kineto(*src, opt, isa);
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}
Outcome read_file_with(KinetoIsa isa, const std::string& path, const KinetoReadOptions& opt) {
  Outcome o;
  try {
    auto src = ByteSource::open_file(path);
    o.trace = read_kineto(*src, opt, isa);
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}

// Level `isa`'s outcome equals the baseline's.
template <class Read>
void expect_level_agrees(KinetoIsa isa, Read&& read, const std::string& what) {
  Outcome want = read(KinetoIsa::kBaseline);
  Outcome got = read(isa);
  const std::string w = fmt::format("{} ({} against baseline)", what, kineto_isa_name(isa));
  EXPECT_EQ(got.error, want.error) << w;
  EXPECT_EQ(got.trace.has_value(), want.trace.has_value()) << w;
  if (got.trace && want.trace) expect_identical(*got.trace, *want.trace, w);
}

// The options each fuzz input's first byte picks (tests/fuzz/fuzz_kineto.cpp).
KinetoReadOptions fuzz_options(uint8_t b) {
  KinetoReadOptions opt;
  opt.window_bytes = 16u + (static_cast<size_t>(b) << 6);
  opt.keep_python = (b & 1) != 0;
  opt.in_place = (b & 2) != 0;
  if ((b & 4) != 0) opt.max_event_bytes = 32u + (static_cast<size_t>(b) << 1);
  return opt;
}

// Options to read each input with: the default (in place), small windows copied through, and
// --keep-python.
std::vector<std::pair<std::string, KinetoReadOptions>> option_sets() {
  std::vector<std::pair<std::string, KinetoReadOptions>> v;
  v.emplace_back("default", KinetoReadOptions{});
  for (size_t window : {16ul, 100ul, 4096ul}) {
    KinetoReadOptions o;
    o.window_bytes = window;
    o.in_place = false;
    v.emplace_back(fmt::format("window {}", window), o);
  }
  KinetoReadOptions python;
  python.keep_python = true;
  v.emplace_back("keep_python", python);
  return v;
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> v;
  if (!std::filesystem::is_directory(dir)) return v;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  return v;
}

// Input aimed at the code that differs between levels: blank runs of every length up to 40 (16
// bytes per SSE step), numbers of 0 to 21 digits (8 at a time by SWAR, 16 by SSE4.1), strings of
// 0 to 70 bytes with a quote escape or backslash at every offset (16- and 32-byte scans), events
// whose layout changes (the 32-byte pattern memos), and the same with bytes flipped at random.
std::string tricky_trace(std::mt19937_64& rng) {
  auto blanks = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(" \n\t\r"[rng() % 4]);
    return s;
  };
  auto digits = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('0' + rng() % 10));
    return s;
  };
  auto text = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng() % 40;
      if (r == 0)
        s += "\\\"";
      else if (r == 1)
        s += "\\\\";
      else if (r == 2)
        s += "\\u00e9";
      else if (r == 3)
        s += "\xc3\xa9";
      else if (r == 4)
        s += "\xff";
      else
        s.push_back(static_cast<char>('a' + rng() % 26));
    }
    return s;
  };
  const char* cats[] = {"cpu_op",     "kernel",          "cuda_runtime",    "ac2g",
                        "gpu_memcpy", "python_function", "user_annotation", "cuda_driver"};
  std::string events;
  for (int i = 0; i < 600; ++i) {
    if (i > 0) events += "," + blanks(rng() % 3 == 0 ? rng() % 40 : 1);
    const size_t b = rng() % 4 == 0 ? rng() % 40 : (rng() % 2);  // blanks, mostly Kineto's
    const std::string sp = blanks(b);
    const char* cat = cats[rng() % std::size(cats)];
    const std::string ts = digits(1 + rng() % 16) + (rng() % 2 ? "." + digits(rng() % 5) : "");
    const std::string dur = (rng() % 8 == 0 ? "-" : "") + digits(rng() % 22);
    const std::string id = digits(1 + rng() % 21);
    if (rng() % 5 == 0) {
      events += fmt::format(R"({{{}"ph":{}"s",{}"id": {},{}"pid": {}, "tid": {}, "ts": {}, )"
                            R"("cat": "{}", "name": "{}"{}}})",
                            sp, sp, sp, id, sp, digits(1 + rng() % 9), digits(1 + rng() % 12), ts,
                            cat, text(rng() % 70), sp);
    } else {
      events += fmt::format(
          R"({{{}"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {},{}"ts": {}, )"
          R"("dur": {}, "args": {{{}"External id": {}, "correlation": {},{}"Sequence number": {},)"
          R"( "grid": [{}, 1, 1], "Input Dims": [[{}]], "stream": {}, "Ev Idx": {}{}}}{}}})",
          sp, cat, text(rng() % 70), digits(1 + rng() % 9), digits(1 + rng() % 12), sp, ts, dur, sp,
          id, digits(1 + rng() % 19), sp, digits(rng() % 20), digits(1 + rng() % 10),
          digits(rng() % 5), digits(1 + rng() % 3), digits(1 + rng() % 6), sp, sp);
    }
  }
  return test::trace_of(events, R"("traceName": "tricky", "distributedInfo": {"rank": 3}, )");
}

}  // namespace

TEST(KinetoIsa, TheBaselineAlwaysRuns) {
  EXPECT_TRUE(kineto_isa_supported(KinetoIsa::kBaseline));
  EXPECT_EQ(kineto_isa_name(KinetoIsa::kBaseline), "baseline");
  EXPECT_EQ(kineto_isa_name(KinetoIsa::kV2), "v2");
  EXPECT_EQ(kineto_isa_name(KinetoIsa::kV3), "v3");
  // Each level needs the one below it.
  EXPECT_TRUE(!kineto_isa_supported(KinetoIsa::kV3) || kineto_isa_supported(KinetoIsa::kV2));
  std::cout << "levels this CPU runs:";
  for (KinetoIsa isa : supported_isas()) std::cout << " " << kineto_isa_name(isa);
  std::cout << "; read_kineto runs " << kineto_isa_name(kineto_isa()) << "\n";
}

TEST(KinetoIsa, ChoiceFollowsTheEnvironmentValue) {
  const KinetoIsa best = supported_isas().back();
  std::string warning = "unset";
  EXPECT_EQ(choose_kineto_isa(nullptr, &warning), best);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(choose_kineto_isa("", &warning), best);
  EXPECT_EQ(choose_kineto_isa("auto", &warning), best);
  EXPECT_EQ(warning, "");
  // Forced to the baseline: always followed.
  EXPECT_EQ(choose_kineto_isa("baseline", &warning), KinetoIsa::kBaseline);
  EXPECT_EQ(warning, "");
  // A level this CPU runs is followed; one it lacks gives the fastest, with a warning.
  for (KinetoIsa isa : kKinetoIsas) {
    const std::string name(kineto_isa_name(isa));
    if (kineto_isa_supported(isa)) {
      EXPECT_EQ(choose_kineto_isa(name.c_str(), &warning), isa);
      EXPECT_EQ(warning, "");
    } else {
      EXPECT_EQ(choose_kineto_isa(name.c_str(), &warning), best);
      EXPECT_NE(warning.find("cannot run"), std::string::npos) << warning;
    }
  }
  // Not a level: the fastest, with a warning naming the value.
  EXPECT_EQ(choose_kineto_isa("avx512", &warning), best);
  EXPECT_NE(warning.find("CHOPPER_ISA=avx512"), std::string::npos) << warning;
  EXPECT_EQ(choose_kineto_isa("Baseline", &warning), best);
  EXPECT_FALSE(warning.empty());
}

// read_kineto runs the level CHOPPER_ISA chose (tests/CMakeLists.txt runs these tests again with
// CHOPPER_ISA=baseline and CHOPPER_ISA_EXPECT=baseline).
TEST(KinetoIsa, ReadKinetoRunsTheChosenLevel) {
  EXPECT_EQ(kineto_isa(), choose_kineto_isa(std::getenv("CHOPPER_ISA")));
  if (const char* expect = std::getenv("CHOPPER_ISA_EXPECT")) {
    EXPECT_EQ(kineto_isa_name(kineto_isa()), expect);
  }
}

TEST(KinetoIsa, UnsupportedLevelIsRefused) {
  for (KinetoIsa isa : kKinetoIsas) {
    if (kineto_isa_supported(isa)) continue;
    auto src = ByteSource::from_memory(test::trace_of(""), "x.json");
    EXPECT_THROW(read_kineto(*src, {}, isa), std::invalid_argument);
  }
}

// The comparisons, one test per level above the baseline (v2, v3): each skipped, naming the level,
// on a CPU that cannot run it (nothing would be compared), never passed without comparing.
class KinetoIsaLevel : public ::testing::TestWithParam<KinetoIsa> {
 protected:
  void SetUp() override {
    if (!kineto_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU lacks x86-64 " << kineto_isa_name(GetParam())
                   << ": its parser copy is not compared with the baseline here";
  }
  template <class Read>
  void expect_agrees(Read&& read, const std::string& what) {
    expect_level_agrees(GetParam(), read, what);
  }
};

INSTANTIATE_TEST_SUITE_P(AboveBaseline, KinetoIsaLevel,
                         ::testing::Values(KinetoIsa::kV2, KinetoIsa::kV3),
                         [](const ::testing::TestParamInfo<KinetoIsa>& i) {
                           return std::string(kineto_isa_name(i.param));
                         });

TEST(KinetoIsa, EveryLevelAboveTheBaselineIsCompared) {
  // The levels KinetoIsaLevel compares are every level but the baseline.
  ASSERT_EQ(std::size(kKinetoIsas), 3u);
  EXPECT_EQ(kKinetoIsas[0], KinetoIsa::kBaseline);
  EXPECT_EQ(kKinetoIsas[1], KinetoIsa::kV2);
  EXPECT_EQ(kKinetoIsas[2], KinetoIsa::kV3);
}

TEST_P(KinetoIsaLevel, ReadsTheTestTracesAlike) {
  const std::vector<std::string> files = files_in(CHOPPER_TEST_DATA);
  ASSERT_GE(files.size(), 3u);
  for (const std::string& f : files) {
    const std::string bytes = test::read_file(f);
    for (const auto& [name, opt] : option_sets()) {
      const std::string what = fmt::format("{}, {}", f, name);
      expect_agrees([&](KinetoIsa isa) { return read_with(isa, bytes, opt); }, what);
    }
    expect_agrees([&](KinetoIsa isa) { return read_file_with(isa, f, KinetoReadOptions{}); },
                  f + ", file");
  }
}

TEST_P(KinetoIsaLevel, ReadsTheFuzzCorpusAlike) {
  const std::string corpus = std::string(CHOPPER_TEST_DATA) + "/../fuzz/corpus";
  const std::vector<std::string> files = files_in(corpus);
  ASSERT_GE(files.size(), 5u) << corpus;
  for (const std::string& f : files) {
    const std::string data = test::read_file(f);
    if (data.empty()) continue;
    const std::string_view bytes = std::string_view(data).substr(1);
    // As the fuzzer reads it, and as plain options do.
    const KinetoReadOptions fuzz = fuzz_options(static_cast<uint8_t>(data[0]));
    expect_agrees([&](KinetoIsa isa) { return read_with(isa, bytes, fuzz); }, f + ", fuzz options");
    for (const auto& [name, opt] : option_sets())
      expect_agrees([&](KinetoIsa isa) { return read_with(isa, bytes, opt); },
                    fmt::format("{}, {}", f, name));
  }
}

TEST_P(KinetoIsaLevel, ReadsTheSharedTracesAlike) {
  if (!test::have_shared_traces()) GTEST_SKIP() << "no ../shared/traces";
  const std::vector<std::string> files = files_in(test::shared_path("traces/kineto"));
  ASSERT_FALSE(files.empty());
  for (const std::string& f : files)
    expect_agrees([&](KinetoIsa isa) { return read_file_with(isa, f, KinetoReadOptions{}); }, f);
}

TEST_P(KinetoIsaLevel, ReadsTrickyInputAlike) {
  std::mt19937_64 rng(2026);
  for (int round = 0; round < 4; ++round) {
    const std::string text = tricky_trace(rng);
    {  // most events are read (a few have an empty number, on purpose)
      const RankTrace t = test::parse(text);
      EXPECT_EQ(t.total_events, 600u);
      EXPECT_GT(t.host.size() + t.gpu.size() + t.runtime.size() + t.flows.size(), 300u);
      EXPECT_LT(t.diagnostics.count("malformed_event"), 150u);
    }
    for (const auto& [name, opt] : option_sets()) {
      const std::string what = fmt::format("tricky trace {}, {}", round, name);
      expect_agrees([&](KinetoIsa isa) { return read_with(isa, text, opt); }, what);
    }
    // Bytes flipped at random: malformed events, cut strings and numbers.
    for (int i = 0; i < 40; ++i) {
      std::string s = text;
      const int flips = 1 + static_cast<int>(rng() % 16);
      for (int k = 0; k < flips; ++k) s[rng() % s.size()] = "{}[]\",:\\ x0\xff\n."[rng() % 15];
      if (i % 4 == 3) s.resize(rng() % s.size());
      KinetoReadOptions opt;
      opt.window_bytes = 16u << (rng() % 12);
      opt.in_place = rng() % 2 == 0;
      opt.keep_python = rng() % 2 == 0;
      expect_agrees([&](KinetoIsa isa) { return read_with(isa, s, opt); },
                    fmt::format("tricky trace {}, mutation {}", round, i));
    }
  }
}

// ---- two threads on one file (KinetoReadOptions::split, kineto_split.inc) ----
namespace {

// A temporary file holding `bytes` (the split needs a plain file, mapped in place).
struct SplitFile {
  std::string path;
  explicit SplitFile(std::string_view bytes, const std::string& name = "split") {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            fmt::format("chopper_split_{}_{}_{}.json", ::getpid(), name, n++))
               .string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) throw std::runtime_error("cannot write " + path);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  ~SplitFile() { std::filesystem::remove(path); }
};

Outcome read_split(const std::string& path, KinetoReadOptions opt, bool split, uint64_t at,
                   uint64_t* joins) {
  opt.split = split;
  opt.split_min_bytes = 0;
  opt.split_at = at;
  opt.split_joins = joins;
  Outcome o;
  try {
    o.trace = read_kineto_file(path, opt);
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}

// The split read of `path` at each byte of `at` (0: the middle's boundary) gives what one thread
// gives: the same trace, or the same error. Returns how many of them joined two parts.
uint64_t expect_split_agrees(const std::string& path, const KinetoReadOptions& opt,
                             const std::vector<uint64_t>& at, const std::string& what) {
  Outcome want = read_split(path, opt, false, 0, nullptr);
  uint64_t joins = 0;
  for (const uint64_t q : at) {
    Outcome got = read_split(path, opt, true, q, &joins);
    const std::string w = fmt::format("{}, split at {}", what, q);
    EXPECT_EQ(got.error, want.error) << w;
    EXPECT_EQ(got.trace.has_value(), want.trace.has_value()) << w;
    if (got.trace && want.trace) expect_identical(*got.trace, *want.trace, w);
    if (::testing::Test::HasFailure()) break;  // one failing point says it
  }
  return joins;
}

// Every `step`-th byte offset of a file of n bytes (from 1), and 0 (the middle's boundary).
std::vector<uint64_t> offsets(size_t n, size_t step = 1) {
  std::vector<uint64_t> v{0};
  for (uint64_t q = 1; q < n; q += step) v.push_back(q);
  return v;
}

// Events whose text looks like element boundaries where there are none: `},{` inside a string
// and `},\n  {` inside args (an array of objects), a nested object, unusual blanks and
// separators; text pids and tids (Kineto's "Spans") and tids below -1 written as numbers (one
// that could be a text's id, one that could not); the top-level keys after traceEvents (as Kineto
// writes them) and in the array form.
std::string lookalike_events() {
  return "\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"neg\", \"pid\": 1, \"tid\": -3, "
         "\"ts\": 9, \"dur\": 1},\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a},\\n  "
         "{b\", \"pid\": 1, \"tid\": "
         "2, "
         "\"ts\": 10, \"dur\": 5, \"args\": {\"External id\": 1, \"Input Dims\": [[1, 2]]}},\n  "
         "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"x\\\"},\\n  {\\\"\", \"pid\": "
         "1, "
         "\"tid\": 3, \"ts\": 11, \"dur\": 2, \"args\": {\"list\": [{\"a\": 1},\n  {\"b\": "
         "\"},\"}],"
         " \"o\": {\"c\": {\"d\": [1]}}}},\n  "
         "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\xc3\xa9\", \"pid\": 0, \"tid\": 7, "
         "\"ts\": 12, \"dur\": 3, \"args\": {\"correlation\": 5, \"device\": 0, \"stream\": 7, "
         "\"Collective name\": \"allreduce\", \"dtype\": \"Float\"}} , \t\r\n{\"ph\": \"s\", "
         "\"id\": \"zz\", \"pid\": 1, \"tid\": 2, \"ts\": 13, \"cat\": \"ac2g\", \"name\": "
         "\"ac2g\"},{\"ph\": \"f\", \"id\": \"zz\", \"pid\": 0, \"tid\": 7, \"ts\": 14, \"cat\": "
         "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n  7,\n  {\"ph\": \"X\", \"cat\": "
         "\"cpu_op\","
         " \"name\": \"bad\xff\", \"pid\": 1, \"tid\": 9, \"ts\": 15},\n  {\"ph\": \"i\", \"s\": "
         "\"p\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 16, \"args\": {\"Bytes\": "
         "64, \"Total Allocated\": 128, \"Device Id\": 0}},\n  {\"ph\": \"C\", \"name\": \"c\", "
         "\"pid\": 1, \"ts\": 17, \"args\": {\"v\": 2.5}},\n  {\"ph\": \"M\", \"name\": "
         "\"thread_name\", \"pid\": 1, \"tid\": 2, \"args\": {\"name\": \"main\"}},\n  {\"ph\": "
         "\"X\", \"cat\": \"weird\", \"name\": \"w\", \"pid\": 1, \"tid\": 2, \"ts\": 18, \"dur\": "
         "1, \"args\": {\"device\": 0}},\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
         "\"a},{b\", "
         "\"pid\": 1, \"tid\": 2, \"ts\": 19.5, \"dur\": 1},\n  {\"ph\": \"Q\"},\n  {\"ph\": "
         "\"X\", \"cat\": \"python_function\", \"name\": \"p\", \"pid\": 1, \"tid\": 2, \"ts\": "
         "20, "
         "\"dur\": 1},\n  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"PyTorch "
         "Profiler (0)\", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"ts\": 21, \"dur\": "
         "1},\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": \"gpu0\", "
         "\"tid\": \"stream x\", \"ts\": 22, \"dur\": 1},\n  {\"ph\": \"C\", \"name\": \"c2\", "
         "\"pid\": \"Spans\", \"ts\": 23, \"args\": {\"v\": 1}},\n  {\"ph\": \"X\", \"cat\": "
         "\"cpu_op\", \"name\": \"big\", \"pid\": 1, \"tid\": -549452224, \"ts\": 24, \"dur\": "
         "1},\n  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": \"Spans\", \"args\": "
         "{\"name\": \"spans\"}}\n";
}
std::string lookalike_object() {
  return "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"rank\": 2},\n  \"traceEvents\": [" +
         lookalike_events() +
         "],\n  \"traceName\": \"t},\\n  {x\",\n  \"deviceProperties\": [{\"id\": 0},\n  "
         "{\"id\": 1}],\n  \"baseTimeNanoseconds\": 1000000\n}\n";
}

}  // namespace

// At every byte of hand-made traces whose strings and args hold what looks like an element
// boundary, the split read gives the one-thread trace: points between two elements are joined,
// the rest read on alone.
TEST(KinetoSplit, EveryPointOfLookalikeTracesGivesTheSameTrace) {
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"object", lookalike_object()},
        {"array", "[" + lookalike_events() + "]"}}) {
    const SplitFile f(text, name);
    {
      // The one-thread read: 20 elements (one a number), rows of each kind (host: 3 cpu_op, 2
      // annotations, 2 more cpu_op; the python one skipped), 2 flows paired by a text id.
      Outcome o = read_split(f.path, {}, false, 0, nullptr);
      ASSERT_TRUE(o.trace) << o.error;
      EXPECT_EQ(o.trace->total_events, 20u);
      EXPECT_EQ(o.trace->host.size(), 7u);
      EXPECT_EQ(o.trace->gpu.size(), 2u);
      EXPECT_EQ(o.trace->flows.size(), 2u);
      EXPECT_EQ(o.trace->counters.size(), 2u);
    }
    for (const KinetoReadOptions& opt : {KinetoReadOptions{}, [] {
                                           KinetoReadOptions o;
                                           o.window_bytes = 16;
                                           o.keep_python = true;
                                           return o;
                                         }()}) {
      const uint64_t joins = expect_split_agrees(f.path, opt, offsets(text.size()), name);
      // Joined at each of the 18 places between two elements after the first (at least), not at
      // the places inside one.
      EXPECT_GE(joins, 18u) << name;
      EXPECT_LT(joins, text.size() / 4) << name;
    }
  }
}

// Damaged files give the same error (message and byte) and counts with the split as without.
TEST(KinetoSplit, DamagedFilesGiveTheSameErrors) {
  const std::string text = lookalike_object();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", text.substr(0, text.size() * 2 / 3)},
      {"trailing", text + "{}"},
      {"closed early", "[" + lookalike_events() + "]], 5"},
      {"unclosed string", text.substr(0, text.find("w\"")) + "w"}};
  for (const auto& [name, bytes] : cases) {
    const SplitFile f(bytes, "damaged");
    Outcome want = read_split(f.path, {}, false, 0, nullptr);
    EXPECT_FALSE(want.error.empty()) << name;
    expect_split_agrees(f.path, {}, offsets(bytes.size()), name);
  }
}

// The committed traces and the fuzz corpus, at every third byte and the middle's boundary.
TEST(KinetoSplit, TestTracesAndFuzzCorpusGiveTheSameTrace) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& f : files_in(CHOPPER_TEST_DATA))
    if (f.ends_with(".json")) inputs.emplace_back(f, test::read_file(f));
  for (const std::string& f : files_in(std::string(CHOPPER_TEST_DATA) + "/../fuzz/corpus")) {
    const std::string data = test::read_file(f);
    if (!data.empty()) inputs.emplace_back(f, data.substr(1));
  }
  ASSERT_GE(inputs.size(), 10u);
  uint64_t joins = 0;
  for (const auto& [name, bytes] : inputs) {
    const SplitFile f(bytes, "corpus");
    joins += expect_split_agrees(f.path, {}, offsets(bytes.size(), 3), name);
  }
  std::cout << joins << " split reads joined\n";
  EXPECT_GT(joins, 100u);
}

// Random tricky traces and their mutations (cut, bytes flipped), split at random points.
TEST(KinetoSplit, TrickyAndMutatedTracesGiveTheSameTrace) {
  std::mt19937_64 rng(77);
  uint64_t joins = 0;
  for (int round = 0; round < 2; ++round) {
    const std::string text = tricky_trace(rng);
    for (int i = 0; i < 12; ++i) {
      std::string s = text;
      if (i > 0) {
        const int flips = static_cast<int>(rng() % 8);
        for (int k = 0; k < flips; ++k) s[rng() % s.size()] = "{}[]\",:\\ x0\xff\n."[rng() % 15];
        if (i % 4 == 3) s.resize(rng() % s.size());
      }
      KinetoReadOptions opt;
      opt.window_bytes = 16u << (rng() % 12);
      opt.keep_python = rng() % 2 == 0;
      if (i % 3 == 2) opt.max_event_bytes = 200 + rng() % 400;  // some elements are too large
      std::vector<uint64_t> at{0};
      for (int k = 0; k < 30; ++k) at.push_back(1 + rng() % (s.size() - 1));
      const SplitFile f(s, "tricky");
      joins += expect_split_agrees(f.path, opt, at, fmt::format("tricky {} mutation {}", round, i));
    }
  }
  EXPECT_GE(joins, 2u);  // at least the middle's boundary of each unmutated trace
}

// Large files: a synthetic run's trace and the shared real traces (decompressed: only a plain
// file is split), at the middle's boundary.
TEST(KinetoSplit, SynthAndRealTracesGiveTheSameTrace) {
  SynthConfig c;
  c.device = "h100";
  c.layers = 2;
  c.ranks = 1;
  c.gpus_per_node = 1;
  c.iterations = 2;
  c.threads = 1;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("chopper_split_synth_{}", ::getpid());
  synthesize(c, dir.string());
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& f : files_in(dir))
    if (f.ends_with("rank-0.json")) inputs.emplace_back(f, test::read_file(f));
  std::filesystem::remove_all(dir);
  ASSERT_EQ(inputs.size(), 1u);
  if (test::have_shared_traces()) {
    for (const std::string& f : files_in(test::shared_path("traces/kineto"))) {
      if (!f.ends_with(".json.gz") && !f.ends_with(".json")) continue;
      auto src = ByteSource::open_file(f);
      std::string text;
      char buf[1 << 16];
      for (size_t n; (n = src->read(buf, sizeof buf)) != 0;) text.append(buf, n);
      inputs.emplace_back(f, std::move(text));
    }
  }
  for (const auto& [name, bytes] : inputs) {
    const SplitFile f(bytes, "large");
    const uint64_t joins = expect_split_agrees(f.path, {}, {0}, name);
    if (bytes.size() > 100000) {
      EXPECT_EQ(joins, 1u) << name << ": not split";
    }
  }
  if (!test::have_shared_traces()) GTEST_SKIP() << "no ../shared/traces: only the synthetic trace";
}

// Without `split`, below split_min_bytes, or for input that is not a plain file, one thread reads.
TEST(KinetoSplit, OnlyLargePlainFilesAreSplit) {
  const SplitFile f(lookalike_object(), "small");
  uint64_t joins = 0;
  KinetoReadOptions opt;
  opt.split_joins = &joins;
  opt.split_at = lookalike_object().find("{\"ph\": \"i\"");  // between two elements
  read_kineto_file(f.path, opt);                             // split not asked for
  opt.split = true;
  opt.split_min_bytes = lookalike_object().size() + 1;
  read_kineto_file(f.path, opt);  // too small
  opt.split_min_bytes = 0;
  opt.in_place = false;
  read_kineto_file(f.path, opt);  // read through the window
  EXPECT_EQ(joins, 0u);
  opt.in_place = true;
  read_kineto_file(f.path, opt);
  EXPECT_EQ(joins, 1u);
}

// append_trace on its own: the traces of a file's two halves, read apart, joined, give the trace
// of the whole (strings, threads, text pids, shapes, comm args remapped; rows in file order).
TEST(TraceMerge, TheTwoHalvesJoinedGiveTheWhole) {
  std::vector<std::string> events;
  for (int i = 0; i < 40; ++i) {
    events.push_back(fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "op{}", "pid": {}, "tid": {}, "ts": {}, )"
        R"("dur": 2, "args": {{"External id": {}, "Input Dims": [[{}]], "Collective name": "c{}"}}}})",
        i % 7, i % 3 == 0 ? "\"Spans\"" : "1", 1 + i % 4, 100 + i * 10, i, i % 5, i % 2));
    events.push_back(fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": "stream 7", "ts": {}, )"
        R"("dur": 1, "args": {{"correlation": {}, "device": 0, "stream": 7}}}})",
        i % 5, 103 + i * 10, i));
  }
  auto join = [&](size_t from, size_t to) {
    std::string s;
    for (size_t i = from; i < to; ++i) s += (i > from ? "," : "") + events[i];
    return s;
  };
  auto read = [](const std::string& text) {
    auto src = ByteSource::from_memory(text, "m.json");
    return read_kineto(*src, {});
  };
  RankTrace whole = read(test::trace_of(join(0, events.size())));
  RankTrace a = read(test::trace_of(join(0, 30)));
  RankTrace b = read(test::trace_of(join(30, events.size())));
  ASSERT_EQ(whole.host.size(), 40u);
  ASSERT_EQ(a.host.size() + b.host.size(), 40u);
  // b alone interns its names in its own order: ids that differ from the whole's.
  ASSERT_NE(b.strings.str(b.host.name[0]), whole.strings.str(b.host.name[0]));
  const std::vector<StrId> map = append_trace(a, b, {});
  ASSERT_EQ(map.size(), b.strings.size());
  EXPECT_EQ(strings_of(a.strings), strings_of(whole.strings));
  EXPECT_EQ(a.threads, whole.threads);
  expect_same_columns(a.gpu, whole.gpu, "gpu", "joined");
  expect_same_columns(a.host, whole.host, "host", "joined");
  ASSERT_EQ(a.shapes.size(), whole.shapes.size());
  for (size_t i = 0; i < a.shapes.size(); ++i)
    EXPECT_EQ(a.shapes[i].input_dims, whole.shapes[i].input_dims) << i;
  ASSERT_EQ(a.comm_args.size(), whole.comm_args.size());
  for (size_t i = 0; i < a.comm_args.size(); ++i)
    EXPECT_EQ(a.comm_args[i].collective_name, whole.comm_args[i].collective_name) << i;
  EXPECT_EQ(a.total_events, 80u);
}
