// The Kineto reader on hand-written input. Every expected number below is counted by hand from the
// input text in the test or from tests/data/mini_train.json (34 events; see the comments).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <isa-l/igzip_lib.h>
#include <unistd.h>
#include <zstd.h>

#include <random>

#include "chopper/base/error.hpp"
#include "chopper/base/time.hpp"
#include "test_util.hpp"

using namespace chopper;
using chopper::test::parse;
using chopper::test::trace_of;

namespace {

std::string gzip_of(const std::string& in) {
  std::string out(in.size() + 1024, '\0');
  isal_zstream s;
  isal_deflate_init(&s);
  s.gzip_flag = IGZIP_GZIP;
  s.end_of_stream = 1;
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uint32_t>(in.size());
  s.next_out = reinterpret_cast<uint8_t*>(out.data());
  s.avail_out = static_cast<uint32_t>(out.size());
  EXPECT_EQ(isal_deflate_stateless(&s), COMP_OK);
  out.resize(s.total_out);
  return out;
}

std::string zstd_of(const std::string& in) {
  std::string out(ZSTD_compressBound(in.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 1));
  return out;
}

std::string mini() {
  return chopper::test::read_file(chopper::test::data_path("mini_train.json"));
}

// Reading must fail with an InputError whose message names the file and a byte offset.
void expect_input_error(const std::string& bytes, const std::string& what_part) {
  auto src = ByteSource::from_memory(bytes, "bad.json");
  try {
    RankTrace t = read_kineto(*src);
    FAIL() << "no error; read " << t.total_events << " events";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.json: byte ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what_part), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
  }
}

// The (pid, tid) of each row of a table, from its thread column.
std::vector<std::pair<int64_t, int64_t>> pid_tids(const RankTrace& t,
                                                  const std::vector<int32_t>& thread) {
  std::vector<std::pair<int64_t, int64_t>> v;
  for (int32_t th : thread) {
    const ThreadKey& k = t.threads.at(static_cast<size_t>(th));
    v.emplace_back(k.pid, k.tid);
  }
  return v;
}
int64_t host_pid(const RankTrace& t, size_t i) {
  return t.threads.at(static_cast<size_t>(t.host.thread.at(i))).pid;
}
int64_t host_tid(const RankTrace& t, size_t i) {
  return t.threads.at(static_cast<size_t>(t.host.thread.at(i))).tid;
}
// The "Input Dims" text of each host op ("" if none).
std::vector<std::string> input_dims(const RankTrace& t) {
  std::vector<std::string> v;
  for (size_t i = 0; i < t.host.size(); ++i)
    v.emplace_back(t.strings.str(t.shapes_of(i).input_dims));
  return v;
}

}  // namespace

TEST(KinetoReader, MiniTrainCountsAndMetadata) {
  RankTrace t = parse(mini());
  // 26 complete events + 2 flow starts + 2 flow ends + 2 metadata + 1 instant + 1 counter.
  EXPECT_EQ(t.total_events, 34u);
  EXPECT_EQ(t.x_events("cpu_op"), 6u);
  EXPECT_EQ(t.x_events("cuda_runtime"), 6u);
  EXPECT_EQ(t.x_events("kernel"), 6u);
  EXPECT_EQ(t.x_events("user_annotation"), 2u);
  EXPECT_EQ(t.x_events("python_function"), 1u);  // counted although skipped
  EXPECT_EQ(t.x_events("gpu_user_annotation"), 1u);
  EXPECT_EQ(t.x_events("gpu_memcpy"), 1u);
  EXPECT_EQ(t.x_events("gpu_memset"), 1u);
  EXPECT_EQ(t.x_events("cuda_sync"), 1u);
  EXPECT_EQ(t.x_events("Trace"), 1u);
  // Stored rows: python_function is not a host op unless asked for.
  EXPECT_EQ(t.host.size(), 8u);  // 6 cpu_op + 2 user_annotation
  EXPECT_EQ(t.runtime.size(), 6u);
  EXPECT_EQ(t.gpu.size(), 9u);  // 6 kernels, 1 memcpy, 1 memset, 1 sync
  EXPECT_EQ(t.flows.size(), 4u);
  EXPECT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.counters.size(), 1u);
  EXPECT_TRUE(t.diagnostics.count("integer_above_int64") == 0) << "Comms Id is not read";

  const TraceMetadata& m = t.meta;
  EXPECT_EQ(m.rank, 1);
  EXPECT_EQ(m.world_size, 2);
  EXPECT_EQ(m.rank_source, "distributedInfo");
  EXPECT_EQ(m.backend, "nccl");
  EXPECT_EQ(m.nccl_version, "2.21.5");
  ASSERT_EQ(m.process_groups.size(), 1u);
  EXPECT_EQ(m.process_groups[0].desc, "default_pg");
  EXPECT_EQ(m.process_groups[0].ranks, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(m.devices.size(), 1u);
  EXPECT_EQ(m.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.devices[0].num_sms, 132);
  EXPECT_TRUE(m.has_base_time);
  EXPECT_EQ(m.base_time_ns, 1700000000000000000);
  EXPECT_EQ(m.ts_format, "relative_to_base");
  EXPECT_EQ(m.trace_name, "mini_train.json");

  // The GEMM kernel: ts 30.500 µs after the base, dur 100.250 µs.
  const GpuActivities& g = t.gpu;
  size_t gemm = 0;
  while (gemm < g.size() && t.strings.str(g.name[gemm]).rfind("sm90_xmma", 0) != 0) ++gemm;
  ASSERT_LT(gemm, g.size());
  EXPECT_EQ(g.start_ns[gemm], 1700000000000030500);
  EXPECT_EQ(g.dur_ns[gemm], 100250);
  EXPECT_EQ(g.device[gemm], 0);
  EXPECT_EQ(g.stream[gemm], 7);
  EXPECT_EQ(g.correlation[gemm], 1001);
  EXPECT_EQ(g.external_id[gemm], 2);
  EXPECT_EQ(g.grid[gemm], (std::array<int32_t, 3>{8, 2, 1}));
  EXPECT_EQ(g.block[gemm], (std::array<int32_t, 3>{128, 1, 1}));
  EXPECT_EQ(g.registers[gemm], 168);
  EXPECT_EQ(g.shared_mem_bytes[gemm], 1024);

  // aten::mm keeps its shapes and autograd ids.
  size_t mm = 0;
  while (mm < t.host.size() && t.strings.str(t.host.name[mm]) != "aten::mm") ++mm;
  ASSERT_LT(mm, t.host.size());
  EXPECT_EQ(t.strings.str(t.shapes_of(mm).input_dims), "[[64, 128], [128, 256]]");
  EXPECT_EQ(t.strings.str(t.shapes_of(mm).input_types), "[\"float\", \"float\"]");
  EXPECT_EQ(t.host.sequence_number[mm], 7);
  EXPECT_EQ(t.host.fwd_thread_id[mm], 0);

  // [memory] instant and the counter sample.
  EXPECT_EQ(t.instants.mem_bytes[0], 1024);
  EXPECT_EQ(t.instants.mem_total_allocated[0], 2048);
  EXPECT_EQ(t.strings.str(t.counters.name[0]), "power.watts");
  EXPECT_DOUBLE_EQ(t.counters.value[0], 300.5);

  // Steps: ProfilerStep#5 [0, 1000 µs) and #6 [1000, 1500 µs).
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].number, 5);
  EXPECT_EQ(t.steps[1].number, 6);
  EXPECT_EQ(t.steps[1].end_ns - t.steps[1].start_ns, 500000);
}

// Threads are listed once each, in order of first appearance, whichever table meets them
// first; input shapes go to their side table only for the ops that recorded some.
TEST(KinetoReader, ThreadsAndShapesSideTables) {
  const RankTrace t = parse(trace_of(
      R"({"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 10, "ts": 1, "dur": 9,)"
      R"( "args": {"Input Dims": [[2, 3]], "Input type": ["float"]}},)"
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 10,)"
      R"( "ts": 2, "dur": 1, "args": {"correlation": 5}},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 11, "ts": 3, "dur": 1},)"
      R"({"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 4, "cat": "ac2g", "name": "ac2g",)"
      R"( "bp": "e"},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "c", "pid": 2, "tid": 10, "ts": 5, "dur": 1,)"
      R"( "args": {"Concrete Inputs": ["", "1"]}},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 11, "ts": 6, "dur": 1})"));
  ASSERT_EQ(t.threads.size(), 4u);
  EXPECT_EQ(t.threads[0], (ThreadKey{1, 10}));
  EXPECT_EQ(t.threads[1], (ThreadKey{1, 11}));
  EXPECT_EQ(t.threads[2], (ThreadKey{0, 7}));
  EXPECT_EQ(t.threads[3], (ThreadKey{2, 10}));
  EXPECT_EQ(t.host.thread, (std::vector<int32_t>{0, 1, 3, 1}));
  EXPECT_EQ(t.runtime.thread, (std::vector<int32_t>{0}));
  EXPECT_EQ(t.flows.thread, (std::vector<int32_t>{2}));
  ASSERT_EQ(t.shapes.size(), 2u);
  EXPECT_EQ(t.host.shapes, (std::vector<int32_t>{0, -1, 1, -1}));
  EXPECT_EQ(t.strings.str(t.shapes_of(0).input_dims), "[[2, 3]]");
  EXPECT_EQ(t.strings.str(t.shapes_of(0).input_types), "[\"float\"]");
  EXPECT_EQ(t.shapes_of(0).concrete_inputs, 0u);
  EXPECT_EQ(t.shapes_of(1).input_dims, 0u);
  EXPECT_EQ(t.shapes_of(1).concrete_inputs, 0u);
  EXPECT_EQ(t.strings.str(t.shapes_of(2).concrete_inputs), "[\"\", \"1\"]");
}

TEST(KinetoReader, KeepPythonAddsPythonFunctionsAsHostOps) {
  KinetoReadOptions opt;
  opt.keep_python = true;
  RankTrace t = parse(mini(), opt);
  EXPECT_EQ(t.host.size(), 9u);
  EXPECT_EQ(t.x_events("python_function"), 1u);
}

// nn.Module ranges are kept without --keep-python, whatever the order of their members; other
// python_function events are skipped (but counted). Four python_function events, two modules.
TEST(KinetoReader, KeepsModuleRangesAmongPythonFunctions) {
  const std::string text = trace_of(
      R"({"ph": "X", "cat": "python_function", "name": "nn.Module: LlamaDecoderLayer_3", )"
      R"("pid": 1, "tid": 2, "ts": 10, "dur": 50, "args": {"Python id": 7}},)"
      R"({"ph": "X", "cat": "python_function", "pid": 1, "tid": 2, "ts": 12, "dur": 40, )"
      R"("name": "nn.Module: Linear_9"},)"
      R"({"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(114): forward", )"
      R"("pid": 1, "tid": 2, "ts": 13, "dur": 30},)"
      R"({"name": "nn.Modulex", "ph": "X", "cat": "python_function", "pid": 1, "tid": 2, )"
      R"("ts": 14, "dur": 1})");
  for (size_t window : {64ul, 8ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    RankTrace t = parse(text, opt);
    EXPECT_EQ(t.x_events("python_function"), 4u);
    ASSERT_EQ(t.host.size(), 2u);
    EXPECT_EQ(t.strings.str(t.host.name[0]), "nn.Module: LlamaDecoderLayer_3");
    EXPECT_EQ(t.host.start_ns[0], 10000);
    EXPECT_EQ(t.host.dur_ns[0], 50000);
    EXPECT_EQ(t.strings.str(t.host.name[1]), "nn.Module: Linear_9");
    // ts and dur came before the name: parsed again after the name said "keep".
    EXPECT_EQ(t.host.start_ns[1], 12000);
    EXPECT_EQ(t.host.dur_ns[1], 40000);
    EXPECT_EQ(host_tid(t, 1), 2);
    EXPECT_EQ(t.host.kind[1], HostKind::kPythonFunction);
    EXPECT_TRUE(t.diagnostics.empty());
  }
}

// Same content, plain, gzip and zstd, with windows smaller than one event: identical tables.
TEST(KinetoReader, CompressionAndWindowSizeDoNotChangeTheResult) {
  const std::string text = mini();
  RankTrace ref = parse(text);
  for (const std::string& bytes : {gzip_of(text), zstd_of(text), text}) {
    for (size_t window : {64ul, 1000ul, 8ul << 20}) {
      KinetoReadOptions opt;
      opt.window_bytes = window;
      RankTrace t = parse(bytes, opt);
      EXPECT_EQ(t.total_events, ref.total_events) << window;
      EXPECT_EQ(t.gpu.start_ns, ref.gpu.start_ns);
      EXPECT_EQ(t.gpu.dur_ns, ref.gpu.dur_ns);
      EXPECT_EQ(t.host.start_ns, ref.host.start_ns);
      EXPECT_EQ(t.runtime.correlation, ref.runtime.correlation);
      EXPECT_EQ(t.gpu.host_op_idx, ref.gpu.host_op_idx);
      EXPECT_EQ(t.uncompressed_bytes, text.size());
    }
  }
}

TEST(KinetoReader, ArrayFormWithLegacyCategoriesAndStringTids) {
  // 2021 Kineto: Operator/Runtime/Kernel, lower-case "external id", "stream 7" tids, flows "async".
  const std::string text = R"J([
    {"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 5, "tid": "5", "ts": 100, "dur": 900},
    {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 5, "tid": "5", "ts": 110, "dur": 50, "args": {"external id": 11}},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": "5", "ts": 120, "dur": 5, "args": {"correlation": 77, "external id": 11}},
    {"ph": "s", "id": 77, "pid": 5, "tid": 5, "ts": 120, "cat": "async", "name": "launch"},
    {"ph": "X", "cat": "Kernel", "name": "implicit_convolve_sgemm", "pid": 0, "tid": "stream 7", "ts": 130, "dur": 20, "args": {"correlation": 77, "external id": 11, "device": 0, "stream": 7}},
    {"ph": "f", "id": 77, "pid": 0, "tid": "stream 7", "ts": 130, "cat": "async", "name": "launch", "bp": "e"}
  ])J";
  RankTrace t = parse(text);
  EXPECT_EQ(t.total_events, 6u);
  EXPECT_TRUE(t.meta.legacy_2021);
  EXPECT_EQ(t.meta.ts_format, "int_epoch_us");
  EXPECT_EQ(t.x_events("Operator"), 2u);
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu.stream[0], 7);
  EXPECT_EQ(t.gpu.start_ns[0], 130000);
  EXPECT_EQ(host_tid(t, 0), 5);  // "5" as a number
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].number, 3);
  EXPECT_EQ(t.gpu.host_op_idx[0], 1);  // aten::conv2d
  EXPECT_DOUBLE_EQ(t.link_rate(), 1.0);
  EXPECT_EQ(t.flows.kind[0], FlowKind::kLaunch);
}

TEST(KinetoReader, StringPidsFloatEpochAndRocmKernelsWithoutExternalId) {
  const std::string text = trace_of(R"J(
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1712195495519689.047, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 9, "tid": 9, "ts": 1712195495519690.001, "dur": 5.5, "args": {"External id": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 9, "tid": 9, "ts": 1712195495519691.000, "dur": 1.25, "args": {"External id": 3, "correlation": 40, "stream": "0x1a2b", "kernel": "add_kernel"}},
    {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 2, "tid": 1, "ts": 1712195495519693.999, "dur": 2, "args": {"device": 2, "stream": 1, "correlation": 40, "kind": "Dispatch Kernel"}},
    {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 1712195495519700})J");
  RankTrace t = parse(text);
  EXPECT_EQ(t.total_events, 5u);
  EXPECT_EQ(t.meta.ts_format, "float_epoch_us");
  EXPECT_TRUE(t.meta.rocm);
  ASSERT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu.start_ns[0], 1712195495519693999);  // exact: a double would give ...694000
  EXPECT_EQ(t.gpu.device[0], 2);
  EXPECT_EQ(t.gpu.external_id[0], kNoId);
  EXPECT_EQ(t.gpu.host_op_idx[0], 0);  // via correlation -> hipLaunchKernel -> External id 3
  EXPECT_EQ(t.gpu.link_path[0], LinkPath::kRuntimeExternalId);
  EXPECT_EQ(t.runtime.dur_ns[0], 1250);
  EXPECT_LT(t.threads.at(static_cast<size_t>(t.instants.thread.at(0))).pid, 0)
      << "string pid \"\" gets a negative id";
  EXPECT_TRUE(t.diagnostics.empty());
}

TEST(KinetoReader, BadEventsAreCountedNotFatal) {
  const std::string text = trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no ts", "pid": 1, "tid": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "bad ts", "pid": 1, "tid": 1, "ts": "abc", "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "no dur", "pid": 1, "tid": 1, "ts": 5},
    {"ph": "X", "cat": "cpu_op", "name": "neg dur", "pid": 1, "tid": 1, "ts": 5, "dur": -3},
    {"ph": "X", "cat": "kernel", "name": "big id", "pid": 0, "tid": 7, "ts": 6, "dur": 1, "args": {"External id": 99999999999999999999, "correlation": 5}},
    {"ph": "X", "cat": "cpu_op", "name": "sub-ns", "pid": 1, "tid": 1, "ts": 7.0001, "dur": 1},
    {"ph": "f", "id": 12345, "pid": 0, "tid": 7, "ts": 6, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"ph": "B", "name": "begin", "pid": 1, "tid": 1, "ts": 9},
    {"ph": "X", "cat": "cpu_op", "name": "broken", "pid": 1, "tid": 1, "ts": 1 "dur": 2},
    42,
    {"ph": "X", "cat": "cpu_op", "name": "after", "pid": 1, "tid": 1, "ts": 10, "dur": 1})J");
  RankTrace t = parse(text);
  // 12 entries in traceEvents, all counted; 6 usable host ops: ok, no dur (0), neg dur (0),
  // sub-ns, after... and "no ts"/"bad ts"/"broken" are skipped.
  EXPECT_EQ(t.total_events, 12u);
  EXPECT_EQ(t.host.size(), 5u);
  EXPECT_EQ(t.gpu.size(), 1u);
  EXPECT_EQ(t.gpu.external_id[0], kNoId);
  EXPECT_EQ(t.diagnostics.count("missing_ts"), 1u);
  EXPECT_EQ(t.diagnostics.count("invalid_time"), 1u);
  EXPECT_EQ(t.diagnostics.count("missing_dur"), 1u);
  EXPECT_EQ(t.diagnostics.count("negative_dur"), 1u);
  EXPECT_EQ(t.diagnostics.count("integer_above_int64"), 1u);
  EXPECT_EQ(t.diagnostics.count("sub_ns_time_rounded"), 1u);
  EXPECT_EQ(t.diagnostics.count("unsupported_phase"), 1u);
  EXPECT_EQ(t.diagnostics.count("malformed_event"), 1u);
  EXPECT_EQ(t.diagnostics.count("non_object_event"), 1u);
  // The flow end without a start is kept (4878 such in HTA's DDP trace) and harms nothing.
  EXPECT_EQ(t.flows.size(), 1u);
  // Every example names a byte offset.
  for (const auto& e : t.diagnostics.entries())
    for (const auto& ex : e.examples) EXPECT_EQ(ex.rfind("byte ", 0), 0u) << e.kind << ": " << ex;
}

TEST(KinetoReader, InvalidUtf8IsReplacedAndCounted) {
  std::string text = trace_of(
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\xff\xfe name\", \"pid\": 1, \"tid\": "
      "1, "
      "\"ts\": 1, \"dur\": 1},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\xc3\xa9\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 2, \"dur\": 1}");
  RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 2u);
  EXPECT_EQ(t.strings.str(t.host.name[0]), "bad?? name");
  EXPECT_EQ(t.strings.str(t.host.name[1]), "caf\xc3\xa9");  // valid UTF-8 is untouched
  EXPECT_EQ(t.diagnostics.count("invalid_utf8"), 1u);
}

// Invalid UTF-8 is repaired where text is kept, and counted once per kept string, at the byte
// offset of its first invalid byte: a repeated name is counted at each occurrence (the name memo
// must not hide the second), and maps to the same string.
TEST(KinetoReader, InvalidUtf8IsCountedAtEachKeptString) {
  const std::string ev =
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"x\xff\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 1, \"dur\": 1}";
  const std::string text = trace_of(ev + "," + ev + "," + ev);
  for (size_t window : {size_t{16}, size_t{64}, size_t{1} << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    const RankTrace t = parse(text, opt);
    ASSERT_EQ(t.host.size(), 3u) << window;
    EXPECT_EQ(t.strings.str(t.host.name[0]), "x?");
    EXPECT_EQ(t.host.name[1], t.host.name[0]);
    EXPECT_EQ(t.host.name[2], t.host.name[0]);
    EXPECT_EQ(t.diagnostics.count("invalid_utf8"), 3u) << window;
    const auto& ex = t.diagnostics.entries().at(0).examples;
    ASSERT_EQ(ex.size(), 3u);
    EXPECT_EQ(ex[0],
              fmt::format("byte {}: 1 invalid UTF-8 byte(s) replaced by '?'", text.find('\xff')));
    EXPECT_EQ(ex[2],
              fmt::format("byte {}: 1 invalid UTF-8 byte(s) replaced by '?'", text.rfind('\xff')));
  }
}

// Every other place text is kept from: a top-level key and value, a thread name, a shapes arg, a
// collective arg, a string pid, a counter's series, an escaped name (counted at its event, the
// text being an unescaped copy). Bytes that are not kept (a skipped python_function event, an
// unknown arg) are not looked at: nothing is counted for them and nothing else changes.
TEST(KinetoReader, InvalidUtf8IsRepairedWhereverTextIsKept) {
  const std::string text =
      "{\"schemaVersion\": 1, \"traceName\": \"run\xfe\", \"x_\xfe\": 1, \"traceEvents\": ["
      "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": "
      "\"main\xc3\"}},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 1, \"dur\": 5, \"args\": {\"Input type\": [\"fl\xffoat\"], \"Odd\": \"\xff\"}},"
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"nccl:all_reduce\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 2, \"dur\": 1, \"args\": {\"Collective name\": \"all\xe2\x82reduce\"}},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"esc\\\"\xff\", \"pid\": \"host\xff\", "
      "\"tid\": 1, \"ts\": 3, \"dur\": 1},"
      "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"py\xff\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 4, \"dur\": 1},"
      "{\"ph\": \"C\", \"name\": \"mem\xff\", \"pid\": 1, \"ts\": 5, \"args\": {\"v\": 1}}"
      "]}";
  const RankTrace t = parse(text);
  EXPECT_EQ(t.meta.trace_name, "run?");
  using KV = std::pair<std::string, std::string>;
  EXPECT_EQ(t.meta.other, (std::vector<KV>{{"x_?", "1"}}));
  ASSERT_EQ(t.meta.thread_names.size(), 1u);
  EXPECT_EQ(t.meta.thread_names[0].second, "main?");
  ASSERT_EQ(t.host.size(), 3u);  // python_function skipped
  EXPECT_EQ(t.strings.str(t.shapes_of(0).input_types), "[\"fl?oat\"]");
  ASSERT_EQ(t.comm_args.size(), 1u);
  EXPECT_EQ(t.strings.str(t.comm_args[0].collective_name), "all??reduce");
  EXPECT_EQ(t.strings.str(t.host.name[2]), "esc\"?");
  EXPECT_EQ(t.threads.at(static_cast<size_t>(t.host.thread[2])).pid,
            -static_cast<int64_t>(t.strings.find("host?")) - 2);
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.strings.str(t.counters.name[0]), "mem?.v");
  // traceName, the key x_, the thread name, Input type, Collective name, the escaped name, the
  // string pid, the counter: 8. Not the python_function's name, not the "Odd" arg.
  EXPECT_EQ(t.diagnostics.count("invalid_utf8"), 8u);
  EXPECT_EQ(t.diagnostics.total(), 8u);
  const auto& ex = t.diagnostics.entries().at(0).examples;
  ASSERT_EQ(ex.size(), 3u);  // the first three: traceName, the key, the thread name
  EXPECT_EQ(ex[0],
            fmt::format("byte {}: 1 invalid UTF-8 byte(s) replaced by '?'", text.find("\xfe\",")));
  EXPECT_EQ(ex[1],
            fmt::format("byte {}: 1 invalid UTF-8 byte(s) replaced by '?'", text.find("\xfe\":")));
  EXPECT_EQ(ex[2],
            fmt::format("byte {}: 1 invalid UTF-8 byte(s) replaced by '?'", text.find("\xc3\"")));
}

// Valid multi-byte characters split across window boundaries come through whole: at windows of
// 16 to 48 bytes every byte of every character ends some window.
TEST(KinetoReader, MultiByteCharactersAcrossWindowsAreKept) {
  const std::string name = "\xc3\xa9t\xe2\x82\xac\xf0\x9f\x98\x80 caf\xc3\xa9";
  std::string events;
  for (int i = 0; i < 6; ++i)
    events += fmt::format(
        "{}{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}{}\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": {}, \"dur\": 1}}",
        i == 0 ? "" : ",", std::string(static_cast<size_t>(i), ' '), name, i);
  const std::string text = trace_of(events, "\"traceName\": \"" + name + "\", ");
  for (size_t window = 16; window <= 48; ++window) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    const RankTrace t = parse(text, opt);
    ASSERT_EQ(t.host.size(), 6u) << window;
    for (size_t i = 0; i < 6; ++i)
      EXPECT_EQ(t.strings.str(t.host.name[i]), std::string(i, ' ') + name) << window;
    EXPECT_EQ(t.meta.trace_name, name) << window;
    EXPECT_TRUE(t.diagnostics.empty()) << window;
  }
}

// What one event held never carries over to the next: shapes, collective args, a metadata name,
// kernel fields, ids and the name are each followed by an event without them, and by one that
// set them and was then found malformed (skipped, counted).
TEST(KinetoReader, FieldsNeverCarryOverToTheNextEvent) {
  const std::string text = trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 9, "args": {
      "External id": 7, "Sequence number": 3, "Input Dims": [[2, 3]], "Input type": ["float"],
      "Concrete Inputs": ["", "1"], "Collective name": "allreduce", "dtype": "Float",
      "In msg nelems": 6, "Process Group Ranks": [0, 1]}},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {
      "Input Dims": [[4]], "Collective name": "broadcast", "External id": }},
    {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 4, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 1, "args": {
      "device": 0, "stream": 7, "correlation": 11, "External id": 7, "grid": [4, 1, 1],
      "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 6, "dur": 1},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2},
    {"ph": "C", "pid": 1, "ts": 7, "args": {"v": 2}})J");
  const RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 3u);  // a, b, d (c malformed)
  EXPECT_EQ(t.diagnostics.count("malformed_event"), 1u);
  EXPECT_EQ(t.strings.str(t.host.name[0]), "a");
  EXPECT_NE(t.host.shapes[0], kNoRow);
  EXPECT_NE(t.host.comm_args[0], kNoRow);
  EXPECT_EQ(t.host.external_id[0], 7);
  EXPECT_EQ(t.host.sequence_number[0], 3);
  for (size_t i : {size_t{1}, size_t{2}}) {  // b and d
    EXPECT_EQ(t.host.shapes[i], kNoRow) << i;
    EXPECT_EQ(t.host.comm_args[i], kNoRow) << i;
    EXPECT_EQ(t.host.external_id[i], kNoId) << i;
    EXPECT_EQ(t.host.sequence_number[i], kNoId) << i;
  }
  EXPECT_EQ(t.shapes.size(), 1u);
  EXPECT_EQ(t.comm_args.size(), 1u);
  ASSERT_EQ(t.gpu.size(), 2u);
  EXPECT_EQ(t.gpu.grid[0], (std::array<int32_t, 3>{4, 1, 1}));
  EXPECT_EQ(t.gpu.registers[0], 32);
  EXPECT_EQ(t.gpu.correlation[0], 11);
  EXPECT_EQ(t.gpu.grid[1], (std::array<int32_t, 3>{0, 0, 0}));
  EXPECT_EQ(t.gpu.block[1], (std::array<int32_t, 3>{0, 0, 0}));
  EXPECT_EQ(t.gpu.registers[1], -1);
  EXPECT_EQ(t.gpu.shared_mem_bytes[1], -1);
  EXPECT_EQ(t.gpu.correlation[1], kNoId);
  EXPECT_EQ(t.gpu.external_id[1], kNoId);
  ASSERT_EQ(t.meta.thread_names.size(), 1u);  // the second has no name
  EXPECT_EQ(t.meta.thread_names[0].second, "main");
  // A counter without a name after an event with one (a fuzzer found the name read there).
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.strings.str(t.counters.name[0]), ".v");
}

TEST(KinetoReader, EscapedQuotesAndBracketsInsideStrings) {
  const std::string text = trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "a\"{[b]}\\", "pid": 1, "tid": 1, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "}]", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"Input Dims": [[], [3, [4]]]}})J");
  RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 2u);
  EXPECT_EQ(t.strings.str(t.host.name[0]), "a\"{[b]}\\");
  EXPECT_EQ(t.strings.str(t.host.name[1]), "}]");
  EXPECT_EQ(t.strings.str(t.shapes_of(1).input_dims), "[[], [3, [4]]]");
  EXPECT_TRUE(t.diagnostics.empty());
}

// "Concrete Inputs" (recent PyTorch with record_shapes) is kept as its raw JSON text, like
// "Input Dims"; an op without it, or with a value that is not an array, gets 0.
TEST(KinetoReader, ConcreteInputsKept) {
  const std::string text = trace_of(R"J(
    {"ph": "X", "cat": "cpu_op", "name": "aten::_flash_attention_forward", "pid": 1, "tid": 1, "ts": 1, "dur": 5, "args": {"External id": 3, "Concrete Inputs": ["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125"], "Input type": ["c10::BFloat16"], "Input Dims": [[16, 559, 16, 64]]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 7, "dur": 1, "args": {"Input Dims": [[2, 3], [3, 4]]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 9, "dur": 1, "args": {"Concrete Inputs": "odd"}})J");
  RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 3u);
  EXPECT_EQ(t.strings.str(t.shapes_of(0).concrete_inputs),
            R"(["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125"])");
  EXPECT_EQ(t.strings.str(t.shapes_of(0).input_dims), "[[16, 559, 16, 64]]");
  EXPECT_EQ(t.host.external_id[0], 3);
  EXPECT_EQ(t.shapes_of(1).concrete_inputs, 0u);
  EXPECT_EQ(t.shapes_of(2).concrete_inputs, 0u);
  EXPECT_TRUE(t.diagnostics.empty());
}

// The parser unescapes strings itself: \uXXXX (with surrogate pairs) becomes UTF-8; a bad escape
// is kept as written and counted.
TEST(KinetoReader, UnicodeEscapes) {
  const std::string text = trace_of(
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"caf\\u00e9 \\ud83d\\ude00 \\n\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad \\q\", \"pid\": 1, \"tid\": 1, "
      "\"ts\": 2, \"dur\": 1}");
  RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 2u);
  EXPECT_EQ(t.strings.str(t.host.name[0]), "caf\xc3\xa9 \xf0\x9f\x98\x80 \n");
  EXPECT_EQ(t.strings.str(t.host.name[1]), "bad \\q");
  EXPECT_EQ(t.diagnostics.count("invalid_escape"), 1u);
}

TEST(KinetoReader, TopLevelKeysAfterTraceEventsAndUnknownKeys) {
  // baseTimeNanoseconds after traceEvents still applies to every timestamp.
  const std::string text = R"J({"metadata": {"x": [1, {"y": "]"}]}, "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 2.5, "dur": 1}],
      "systemTraceEvents": "ignored ] } text", "baseTimeNanoseconds": 1000000000000})J";
  RankTrace t = parse(text);
  ASSERT_EQ(t.host.size(), 1u);
  EXPECT_EQ(t.host.start_ns[0], 1000000002500);
  EXPECT_TRUE(t.diagnostics.empty());
}

TEST(KinetoReader, TopLevelValuesReadWholeAtEveryWindowBoundary) {
  // Top-level values other than traceEvents are scanned in bulk, window by window. Strings hold
  // brackets, commas and escaped quotes and backslashes; at window sizes 16..80 every byte of the
  // text, the backslashes included, ends some window. Each value must come back exactly as
  // written (simdjson minifies the objects, so the "notes" array comes back without blanks).
  const std::string text = R"J({"notes": ["a ] } [ {", "q\"uo\\te\\", {"k": "\\\""}, 12, true],
      "traceName": "run \"7\" [x]\\", "distributedInfo": {"rank": 3, "world_size": 4},
      "x_flag": true, "x_count": 42,
      "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 2,
      "dur": 1}], "displayTimeUnit": "ns"})J";
  for (size_t window = 16; window <= 80; ++window) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    RankTrace t = parse(text, opt);
    ASSERT_EQ(t.host.size(), 1u) << window;
    EXPECT_TRUE(t.diagnostics.empty()) << window;
    EXPECT_EQ(t.meta.trace_name, "run \"7\" [x]\\") << window;
    EXPECT_EQ(t.meta.rank, 3) << window;
    EXPECT_EQ(t.meta.world_size, 4) << window;
    EXPECT_EQ(t.meta.display_time_unit, "ns") << window;
    using KV = std::pair<std::string, std::string>;
    EXPECT_EQ(t.meta.other,
              (std::vector<KV>{{"notes", R"(["a ] } [ {","q\"uo\\te\\",{"k":"\\\""},12,true])"},
                               {"x_flag", "true"},
                               {"x_count", "42"}}))
        << window;
  }
}

TEST(KinetoReader, OtherTopLevelValueAbove1MiBIsSkippedAndCounted) {
  // A top-level value that is not metadata chopper reads is kept as (at most 200 characters of)
  // text: up to 1 MiB of it is held, a larger one is skipped with a diagnostic (a run directory's
  // truth.json has hundreds of MB under one key), and what follows it is still read.
  std::string text = R"J({"huge": [")J";
  text.append((1u << 20) + 1, 'x');
  text += R"J("], "small": [1, 2], "traceName": "after", "traceEvents": []})J";
  RankTrace t = parse(text);
  EXPECT_EQ(t.meta.trace_name, "after");
  EXPECT_EQ(t.diagnostics.count("top_level_value_too_large"), 1u);
  ASSERT_EQ(t.meta.other.size(), 1u);
  EXPECT_EQ(t.meta.other.front().first, "small");
  // Metadata is kept whole up to 64 MiB: a 2 MiB distributedInfo is read.
  std::string meta = R"J({"distributedInfo": {"rank": 3, "pad": ")J";
  meta.append(2u << 20, 'y');
  meta += R"J("}, "traceEvents": []})J";
  RankTrace m = parse(meta);
  EXPECT_EQ(m.meta.rank, 3);
  EXPECT_EQ(m.diagnostics.count("top_level_value_too_large"), 0u);
}

TEST(KinetoReader, TopLevelValueAbove64MiBIsSkippedAndCounted) {
  // Metadata above 64 MiB is skipped with a diagnostic, and what follows it is still read.
  std::string text = R"J({"deviceProperties": [")J";
  text.append((64u << 20) + 1, 'x');
  text += R"J("], "traceName": "after", "traceEvents": []})J";
  RankTrace t = parse(text);
  EXPECT_EQ(t.meta.trace_name, "after");
  EXPECT_EQ(t.diagnostics.count("top_level_value_too_large"), 1u);
  EXPECT_EQ(t.diagnostics.count("malformed_metadata"), 0u);
}

TEST(KinetoReader, EmptyTraceEventsIsValid) {
  RankTrace t = parse(R"J({"traceEvents": []})J");
  EXPECT_EQ(t.total_events, 0u);
  EXPECT_LT(t.link_rate(), 0.0) << "no GPU activities: link rate undefined";
}

TEST(KinetoReader, MalformedFilesGiveOneLineErrorsWithOffsets) {
  const std::string text = mini();
  expect_input_error("", "empty file");
  expect_input_error("   \n ", "empty file");
  expect_input_error(text.substr(0, text.size() / 2), "truncated JSON");
  expect_input_error(text.substr(0, 40), "truncated JSON");
  expect_input_error("Kind,Agent_Id,Queue_Id\nKERNEL_DISPATCH,1,2\n", "not a JSON trace");
  expect_input_error(R"J({"rocprofiler-sdk-tool": [{"metadata": {}}]})J", "rocprofv3");
  expect_input_error(R"J({"schemaVersion": 1})J", "no \"traceEvents\"");
  expect_input_error(R"J({"traceEvents": [{"ph": "X"})J", "truncated JSON");
  // Truncated gzip: the compressed offset is named.
  const std::string gz = gzip_of(text);
  const std::string cut = gz.substr(0, gz.size() - 100);
  auto src = ByteSource::from_memory(cut, "cut.json.gz");
  try {
    read_kineto(*src);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "cut.json.gz");
    EXPECT_NE(std::string(e.what()).find("truncated gzip"), std::string::npos) << e.what();
  }
}

// Random bytes and random cuts of a real-looking trace never crash: either an InputError or a
// trace with diagnostics. (The fuzz target explores this further under sanitizers.)
TEST(KinetoReader, RandomInputNeverCrashes) {
  std::mt19937 rng(12345);
  const std::string text = mini();
  for (int i = 0; i < 300; ++i) {
    std::string s;
    if (i % 3 == 0) {
      s.resize(rng() % 2000);
      for (char& c : s) c = static_cast<char>(rng());
    } else {
      s = text;
      const int flips = 1 + static_cast<int>(rng() % 8);
      for (int k = 0; k < flips; ++k) s[rng() % s.size()] = "{}[]\",:\\ x0\xff"[rng() % 12];
      if (i % 3 == 2) s.resize(rng() % s.size());
    }
    try {
      RankTrace t = parse(s);
      (void)t;
    } catch (const InputError&) {
    }
  }
}

// The reader grows tables through for_each_column: a column missing from it would still be
// filled, only slowly. The tables hold nothing but columns, so the columns visited must add up
// to the whole struct.
template <class Table>
size_t visited_bytes() {
  Table t;
  size_t bytes = 0;
  t.for_each_column([&](auto& col) { bytes += sizeof(col); });
  return bytes;
}
TEST(KinetoReader, ForEachColumnVisitsEveryColumn) {
  EXPECT_EQ(visited_bytes<GpuActivities>(), sizeof(GpuActivities));
  EXPECT_EQ(visited_bytes<HostOps>(), sizeof(HostOps));
  EXPECT_EQ(visited_bytes<RuntimeCalls>(), sizeof(RuntimeCalls));
  EXPECT_EQ(visited_bytes<Flows>(), sizeof(Flows));
  EXPECT_EQ(visited_bytes<Instants>(), sizeof(Instants));
}

// Tables grow in bulk from an estimate of the rows still to come (rows so far x input size /
// input read so far). 30000 kernels + 30000 runtime calls + 30000 flows, read through a small
// window (the estimate is made early, from a few KiB) and a large one (made at the end): every
// row is there, in order, whatever the estimate was.
TEST(KinetoReader, BulkTableGrowthKeepsEveryRow) {
  std::string events;
  constexpr int kN = 30000;
  for (int i = 0; i < kN; ++i) {
    if (i > 0) events += ",\n";
    events += fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": 1, )"
        R"("args": {{"correlation": {}, "stream": 7, "device": 0}}}},)"
        R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, )"
        R"("ts": {}, "dur": 1, "args": {{"correlation": {}}}}},)"
        R"({{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": {}, "pid": 1, "tid": 1, "ts": {}}})",
        i % 17, 1000 + i * 10, i, 995 + i * 10, i, i, 995 + i * 10);
  }
  const std::string text = trace_of(events);
  for (size_t window : {4096ul, 8ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    RankTrace t = parse(text, opt);
    ASSERT_EQ(t.gpu.size(), static_cast<size_t>(kN)) << window;
    ASSERT_EQ(t.runtime.size(), static_cast<size_t>(kN));
    ASSERT_EQ(t.flows.size(), static_cast<size_t>(kN));
    t.gpu.for_each_column([&](auto& col) {
      // Columns filled by the reader have a row per kernel; the rest are filled later.
      EXPECT_TRUE(col.size() == static_cast<size_t>(kN) || col.empty());
    });
    for (int i = 0; i < kN; i += 997) {
      EXPECT_EQ(t.gpu.start_ns[i], (1000 + i * 10) * 1000LL);
      EXPECT_EQ(t.gpu.correlation[i], i);
      EXPECT_EQ(t.strings.str(t.gpu.name[i]), fmt::format("k{}", i % 17));
      EXPECT_EQ(t.runtime.start_ns[i], (995 + i * 10) * 1000LL);
      EXPECT_EQ(t.flows.id[i], static_cast<uint64_t>(i));
    }
    EXPECT_EQ(t.total_events, 3u * kN);
    for (const auto& e : t.diagnostics.entries())  // no host ops in this trace: kernels unlinked
      if (e.kind != "gpu_activity_without_host_op")
        ADD_FAILURE() << e.kind << ": " << (e.examples.empty() ? "" : e.examples[0]);
  }
}

// Numbers in the metadata block that do not fit int64 (found by the fuzzer: 6.55e38 in
// deviceProperties) are not integers: the field keeps its "unknown" value; fractions truncate.
TEST(KinetoReader, OutOfRangeMetadataNumbersAreUnknown) {
  const std::string text = trace_of(
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1})",
      R"("distributedInfo": {"rank": 1e300, "world_size": 4.0, "backend": "nccl"}, )"
      R"("deviceProperties": [{"id": 0, "name": "H100", "numSms": 6.55e38, )"
      R"("regsPerBlock": -9.3e18, "warpSize": 32.7}], )");
  RankTrace t = parse(text);
  EXPECT_EQ(t.meta.rank, -1);
  EXPECT_EQ(t.meta.world_size, 4);
  ASSERT_EQ(t.meta.devices.size(), 1u);
  EXPECT_EQ(t.meta.devices[0].num_sms, -1);
  EXPECT_EQ(t.meta.devices[0].regs_per_block, -1);
  EXPECT_EQ(t.meta.devices[0].warp_size, 32);
  EXPECT_EQ(t.gpu.size(), 1u);
}

// Numbers are read in one pass with fast paths for the usual shapes (µs with up to three
// decimals, integers up to 18 digits); every other shape goes to the exact parsers of
// base/time.hpp. Random shapes and random blanks between tokens, read through a 64-byte window (so
// that every token is cut at a window end somewhere) and through a large one, must give what those
// exact parsers give for the same text.
// Names and categories go through a memo keyed by their length and first and last bytes; names
// that agree in all of those (and differ only in the middle, or in one byte of a short name) must
// still each keep their own text.
TEST(KinetoReader, NamesThatShareLengthAndEndsKeepTheirOwnText) {
  const std::vector<std::string> names = {"aten::matmul_XXXXX_backward_kernel",
                                          "aten::matmul_YYYYY_backward_kernel",
                                          "aaaaaaaaXbbbbbbbb",
                                          "aaaaaaaaYbbbbbbbb",  // 17 bytes: differ at byte 8
                                          "abcdefghijklmnop",
                                          "abcdefgXijklmnop",  // 16: covered by the two words
                                          "abcd",
                                          "abce",
                                          "abXd",
                                          "abc",
                                          "aXc",
                                          "ab",
                                          "a",
                                          ""};
  std::mt19937_64 rng(11);
  std::vector<std::string> want;
  std::string events;
  for (int i = 0; i < 3000; ++i) {
    const std::string& n = names[rng() % names.size()];
    want.push_back(n);
    if (!events.empty()) events += ",\n";
    events += fmt::format(
        R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": 1, "tid": 1, "ts": {}, "dur": 1}})",
        rng() % 2 != 0 ? "cpu_op" : "user_annotation", n, 10 + i);
  }
  RankTrace t = parse(trace_of(events));
  ASSERT_EQ(t.host.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(t.strings.str(t.host.name[i]), want[i]) << "event " << i;
}

// pid and tid values repeat, and the reader reuses the last value read when the 8 bytes at the
// value (digits, delimiter, what follows) are the same. Values that share prefixes, differ only
// in their last digit or in what follows them, must still each be read as written.
TEST(KinetoReader, RepeatedPidsAndTidsAreReadAsWritten) {
  const char* pids[] = {"1234567", "1234568", "123456", "12345670", "-123456", "7", "70", "0"};
  const char* after[] = {",", " ,", "\n,"};
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int64_t>> want;
  std::string events;
  std::string last_pid = "1", last_tid = "1";
  for (int i = 0; i < 2000; ++i) {
    // Mostly the previous value again (the memo's case), sometimes another.
    if (rng() % 4 == 0) last_pid = pids[rng() % 8];
    if (rng() % 3 == 0) last_tid = pids[rng() % 8];
    int64_t p = 0, t = 0;
    ASSERT_EQ(chopper::parse_int64(last_pid, p), chopper::DecimalStatus::kExact);
    ASSERT_EQ(chopper::parse_int64(last_tid, t), chopper::DecimalStatus::kExact);
    want.emplace_back(p, t);
    if (!events.empty()) events += ",\n";
    events += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "op", "pid": {}{} "tid": {}{} "ts": {}, )"
        R"("dur": 1, "args": {{"External id": {}}}}})",
        last_pid, after[rng() % 3], last_tid, after[rng() % 3], 1000 + i, i);
  }
  const std::string text = trace_of(events);
  for (size_t window : {64ul, 1ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    RankTrace t = parse(text, opt);
    ASSERT_EQ(t.host.size(), want.size()) << window;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(host_pid(t, i), want[i].first) << "event " << i << ", window " << window;
      ASSERT_EQ(host_tid(t, i), want[i].second) << "event " << i << ", window " << window;
      ASSERT_EQ(t.host.external_id[i], static_cast<int64_t>(i)) << "event " << i;
    }
  }
}

TEST(KinetoReader, NumbersReadInOnePassMatchTheExactParsers) {
  std::mt19937_64 rng(20261122);
  auto digits = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += static_cast<char>('0' + rng() % 10);
    return s;
  };
  auto decimal = [&](int max_int, int max_frac, bool allow_neg) {
    std::string s = allow_neg && rng() % 6 == 0 ? "-" : "";
    s += digits(1 + static_cast<int>(rng() % max_int));
    if (const int f = static_cast<int>(rng() % (max_frac + 1)); f > 0) s += "." + digits(f);
    return s;
  };
  const char* blanks[] = {"", " ", "\n    ", "\t", "\r\n  ", "                          "};
  auto gap = [&] { return blanks[rng() % 6]; };
  struct Want {
    Ns ts, dur;
    int64_t ext, pid;
  };
  std::vector<Want> want;
  std::string events;
  while (want.size() < 3000) {
    const std::string ts = decimal(18, 6, true), dur = decimal(6, 5, false),
                      ext = decimal(20, 0, true), pid = decimal(19, 0, false);
    Want w{};
    const DecimalStatus ts_st = parse_us_to_ns(ts, w.ts), dur_st = parse_us_to_ns(dur, w.dur);
    if (ts_st == DecimalStatus::kInvalid || ts_st == DecimalStatus::kOverflow ||
        dur_st == DecimalStatus::kInvalid || dur_st == DecimalStatus::kOverflow)
      continue;  // such an event is skipped with a diagnostic; tested elsewhere
    constexpr Ns kLimit = Ns{1} << 62;  // times kept: within 2^62 ns of 1970 (test_hostile.cpp)
    if (w.ts < -kLimit || w.ts >= kLimit || w.ts + std::max<Ns>(0, w.dur) >= kLimit) continue;
    if (parse_int64(ext, w.ext) != DecimalStatus::kExact) w.ext = kNoId;
    if (parse_int64(pid, w.pid) != DecimalStatus::kExact) continue;  // hashed as a name
    want.push_back(w);
    if (!events.empty()) events += "," + std::string(gap());
    events += fmt::format(
        R"({{{}"ph"{}:{}"X",{}"cat": "cpu_op", "name": "op", "pid":{}{},{}"tid": 7,{}"ts": {}{},)"
        R"( "dur":{}{}{},{}"args": {{{}"External id":{}{}{}}}{}}})",
        gap(), gap(), gap(), gap(), gap(), pid, gap(), gap(), ts, gap(), gap(), dur, gap(), gap(),
        gap(), gap(), ext, gap(), gap());
  }
  const std::string text = trace_of(events);
  for (size_t window : {64ul, 1ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    RankTrace t = parse(text, opt);
    ASSERT_EQ(t.host.size(), want.size()) << window;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(t.host.start_ns[i], want[i].ts) << "event " << i << ", window " << window;
      ASSERT_EQ(t.host.dur_ns[i], std::max<Ns>(0, want[i].dur)) << "event " << i;
      ASSERT_EQ(t.host.external_id[i], want[i].ext) << "event " << i;
      ASSERT_EQ(host_pid(t, i), want[i].pid) << "event " << i;
      ASSERT_EQ(host_tid(t, i), 7) << "event " << i;
    }
  }
}

// ---- plain files parsed in place (mapped copy-on-write) ----

namespace {

// A file in the temporary directory, removed when the test ends.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes) {
    static int n = 0;
    path = (std::filesystem::temp_directory_path() /
            fmt::format("chopper_test_{}_{}.json", ::getpid(), n++))
               .string();
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::filesystem::remove(path); }
};

// Every column the reader fills, and the counts, must be the same (the input's size may differ).
void expect_same_tables(const RankTrace& a, const RankTrace& b, const std::string& what) {
  auto names = [](const RankTrace& t, const std::vector<StrId>& ids) {
    std::vector<std::string> s;
    for (StrId id : ids) s.emplace_back(t.strings.str(id));
    return s;
  };
  EXPECT_EQ(a.total_events, b.total_events) << what;
  EXPECT_EQ(a.events_by_ph, b.events_by_ph) << what;
  EXPECT_EQ(a.diagnostics.total(), b.diagnostics.total()) << what;
  EXPECT_EQ(a.gpu.start_ns, b.gpu.start_ns) << what;
  EXPECT_EQ(a.gpu.dur_ns, b.gpu.dur_ns) << what;
  EXPECT_EQ(a.gpu.correlation, b.gpu.correlation) << what;
  EXPECT_EQ(a.gpu.grid, b.gpu.grid) << what;
  EXPECT_EQ(names(a, a.gpu.name), names(b, b.gpu.name)) << what;
  EXPECT_EQ(a.host.start_ns, b.host.start_ns) << what;
  EXPECT_EQ(a.host.dur_ns, b.host.dur_ns) << what;
  EXPECT_EQ(a.host.external_id, b.host.external_id) << what;
  EXPECT_EQ(pid_tids(a, a.host.thread), pid_tids(b, b.host.thread)) << what;
  EXPECT_EQ(names(a, a.host.name), names(b, b.host.name)) << what;
  EXPECT_EQ(input_dims(a), input_dims(b)) << what;
  EXPECT_EQ(a.runtime.correlation, b.runtime.correlation) << what;
  EXPECT_EQ(a.flows.id, b.flows.id) << what;
  EXPECT_EQ(a.flows.ts_ns, b.flows.ts_ns) << what;
  EXPECT_EQ(a.meta.rank, b.meta.rank) << what;
  EXPECT_EQ(a.meta.trace_name, b.meta.trace_name) << what;
}
// The same tables from the same bytes.
void expect_same_trace(const RankTrace& a, const RankTrace& b, const std::string& what) {
  EXPECT_EQ(a.uncompressed_bytes, b.uncompressed_bytes) << what;
  expect_same_tables(a, b, what);
}

// About 12 MB of events of every kind chopper stores, with escapes, UTF-8 and shapes, so that a
// read crosses several of the 4 MiB steps at which the mapping is released behind the reader.
std::string large_trace() {
  std::string events;
  for (int i = 0; i < 40000; ++i) {
    if (i > 0) events += ",\n  ";
    events += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "aten::op_{}\"q\u00e9", "pid": 1, "tid": {}, )"
        R"("ts": {}.{:03}, "dur": {}.5, "args": {{"External id": {}, "Input Dims": [[{}, 8], []], )"
        R"("Ev Idx": {}}}}},)"
        R"({{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {}, "dur": 2, )"
        R"("args": {{"correlation": {}, "grid": [{}, 1, 1], "device": 0}}}},)"
        R"({{"ph": "s", "id": {}, "pid": 1, "tid": 1, "ts": {}, "cat": "ac2g", "name": "ac2g"}})",
        i % 31, 1 + i % 3, 1000 + i * 10, i % 1000, i % 7, i, i % 97, i, i % 13, 1003 + i * 10, i,
        1 + i % 64, i, 1000 + i * 10);
  }
  return trace_of(events, R"("traceName": "large", "distributedInfo": {"rank": 5}, )");
}

}  // namespace

// The same bytes read from a file in place, from memory in place, and copied through the
// window: the same tables, whatever the window.
TEST(KinetoReader, PlainFilesReadInPlaceGiveTheSameTables) {
  const std::string text = large_trace();
  ASSERT_GT(text.size(), 12u << 20);
  const TempFile f(text);
  KinetoReadOptions copying;
  copying.in_place = false;
  auto src = ByteSource::from_memory(text, "mem.json");
  const RankTrace want = read_kineto(*src, copying);
  ASSERT_EQ(want.host.size(), 40000u);
  ASSERT_EQ(want.gpu.size(), 40000u);
  ASSERT_EQ(want.flows.size(), 40000u);
  EXPECT_EQ(want.meta.rank, 5);
  EXPECT_EQ(want.strings.str(want.host.name[1]), "aten::op_1\"q\xc3\xa9");
  EXPECT_EQ(want.strings.str(want.shapes_of(1).input_dims), "[[1, 8], []]");
  EXPECT_EQ(want.host.start_ns[3], 1030003);  // "ts": 1030.003
  for (size_t window : {16ul, 4096ul, 1ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    expect_same_trace(read_kineto_file(f.path, opt), want, fmt::format("file, window {}", window));
    auto mem = ByteSource::from_memory(text, "mem.json");
    expect_same_trace(read_kineto(*mem, opt), want, fmt::format("memory, window {}", window));
  }
}

// The blanks between tokens change from event to event (Kineto's indentation, none, tabs and
// CRLF, runs longer than the 8 bytes a blank memo holds), at every place an event can have them:
// each event must read as its one-line, blank-free twin does, whatever the window.
TEST(KinetoReader, BlanksThatChangeFromEventToEventAreSkippedExactly) {
  const char* blanks[] = {"", " ", "\n    ", "\r\n\t\t", "\n      ", "\n                  ", "  "};
  std::mt19937_64 rng(11);
  // `~` marks every place blanks may go; each is replaced by one of `blanks`, chosen at random
  // but mostly as the place had it last time (the memos' case), or by nothing for the twin.
  const char* shapes[] = {
      R"(~{{~"ph"~:~"X"~,~"cat"~:~"cpu_op"~,~"name"~:~"aten::mm"~,~"pid"~:~1~,~"tid"~:~{}~,~)"
      R"("ts"~:~{}.250~,~"dur"~:~3.5~,~"args"~:~{{~"External id"~:~{}~,~"Record function id"~:)"
      R"(~4~,~"Sequence number"~:~{}~,~"Input Dims"~:~[[2, 3]]~}}~}}~)",
      R"(~{{~"ph"~:~"X"~,~"cat"~:~"kernel"~,~"name"~:~"k"~,~"pid"~:~0~,~"tid"~:~7~,~"ts"~:~{}~,)"
      R"(~"dur"~:~2~,~"args"~:~{{~"External id"~:~{}~,~"queued"~:~0~,~"device"~:~0~,~"stream")"
      R"(~:~7~,~"correlation"~:~{}~,~"grid"~:~[~{}~,~1~,~1~]~,~"block"~:~[~128~,~1~,~1~]~}}~}}~)",
      R"(~{{~"ph"~:~"s"~,~"id"~:~{}~,~"pid"~:~1~,~"tid"~:~1~,~"ts"~:~{}~,~"cat"~:~"ac2g"~,)"
      R"(~"name"~:~"ac2g"~}}~)",
      R"(~{{~"ph"~:~"f"~,~"id"~:~{}~,~"pid"~:~0~,~"tid"~:~7~,~"ts"~:~{}~,~"cat"~:~"ac2g"~,)"
      R"(~"name"~:~"ac2g"~,~"bp"~:~"e"~}}~)",
  };
  std::vector<std::string> last(64, "");
  std::string spaced, compact;
  for (int i = 0; i < 1200; ++i) {
    const int kind = i % 4;
    std::string ev;
    switch (kind) {
      case 0:
        ev = fmt::format(fmt::runtime(shapes[0]), 1 + i % 3, 1000 + i, i, i / 4);
        break;
      case 1:
        ev = fmt::format(fmt::runtime(shapes[1]), 1000 + i, i, 5000 + i, 1 + i % 9);
        break;
      default:
        ev = fmt::format(fmt::runtime(shapes[kind]), 5000 + i, 1000 + i);
        break;
    }
    std::string a, b;
    size_t place = 0;
    for (char c : ev) {
      if (c != '~') {
        a += c;
        b += c;
        continue;
      }
      std::string& l = last[place++ % last.size()];
      if (rng() % 3 == 0) l = blanks[rng() % std::size(blanks)];
      a += l;
    }
    if (i > 0) {
      spaced += rng() % 2 == 0 ? "," : "\n ,\t";
      compact += ",";
    }
    spaced += a;
    compact += b;
  }
  const RankTrace want = parse(trace_of(compact));
  ASSERT_EQ(want.host.size(), 300u);
  ASSERT_EQ(want.gpu.size(), 300u);
  ASSERT_EQ(want.flows.size(), 600u);
  EXPECT_EQ(want.host.start_ns[2], 1008250);   // event 8: "ts": 1008.250
  EXPECT_EQ(want.host.sequence_number[2], 2);  // 8 / 4
  EXPECT_EQ(want.strings.str(want.shapes_of(2).input_dims), "[[2, 3]]");
  EXPECT_EQ(want.gpu.grid[2], (std::array<int32_t, 3>{1 + 9 % 9, 1, 1}));
  EXPECT_EQ(want.gpu.correlation[2], 5009);
  EXPECT_EQ(want.flows.id[1], 5003u);
  EXPECT_EQ(want.diagnostics.total(), 0u);
  const std::string text = trace_of(spaced);
  for (size_t window : {16ul, 100ul, 4096ul, 1ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    const RankTrace t = parse(text, opt);
    EXPECT_EQ(t.diagnostics.total(), 0u) << window;
    expect_same_tables(t, want, fmt::format("window {}", window));
    EXPECT_EQ(t.host.sequence_number, want.host.sequence_number) << window;
    EXPECT_EQ(t.host.record_function_id, want.host.record_function_id) << window;
    EXPECT_EQ(t.gpu.block, want.gpu.block) << window;
    EXPECT_EQ(t.gpu.stream, want.gpu.stream) << window;
    EXPECT_EQ(t.gpu.external_id, want.gpu.external_id) << window;
    EXPECT_EQ(pid_tids(t, t.flows.thread), pid_tids(want, want.flows.thread)) << window;
    EXPECT_EQ(t.flows.binds_enclosing, want.flows.binds_enclosing) << window;
  }
}

// The args of one category in another order from event to event (keys that share a first byte,
// with and without a blank after the colon): each value lands where its key says, however the
// arguments met at the same place before were named.
TEST(KinetoReader, ArgsInAnyOrderAreReadByTheirKeys) {
  std::mt19937_64 rng(5);
  std::string events;
  const int n = 500;
  std::vector<std::vector<int>> kept(n);  // which arguments (by number below) each event has
  for (int i = 0; i < n; ++i) {
    std::vector<std::pair<int, std::string>> args = {
        {0, fmt::format(R"("External id":{}{})", rng() % 2 ? " " : "", i)},
        {1, R"("Ev Idx": 9)"},
        {2, fmt::format(R"("Sequence number": {})", 2 * i)},
        {3, fmt::format(R"("Record function id":{}{})", rng() % 2 ? " " : "", 3 * i)},
        {4, fmt::format(R"("Input Dims": [[{}]])", i)},
        {5, R"("Input type": ["float"])"},
        {6, R"("Input Strides": [[1]])"},
        {7, fmt::format(R"("Fwd thread id": {})", i % 2)},
    };
    if (rng() % 4 != 0) std::shuffle(args.begin(), args.end(), rng);  // else in this order
    args.resize(4 + rng() % 5);
    std::string a;
    for (const auto& [k, text] : args) {
      a += (a.empty() ? "" : ", ") + text;
      kept[static_cast<size_t>(i)].push_back(k);
    }
    if (i > 0) events += ",\n";
    events += fmt::format(
        R"({{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": {}, "dur": 1, )"
        R"("args": {{{}}}}})",
        i, a);
  }
  const RankTrace t = parse(trace_of(events));
  ASSERT_EQ(t.host.size(), static_cast<size_t>(n));
  EXPECT_EQ(t.diagnostics.total(), 0u);
  for (int i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    auto has = [&](int k) { return std::find(kept[u].begin(), kept[u].end(), k) != kept[u].end(); };
    EXPECT_EQ(t.host.external_id[u], has(0) ? i : kNoId) << "event " << i;
    EXPECT_EQ(t.host.sequence_number[u], has(2) ? 2 * i : kNoId) << "event " << i;
    EXPECT_EQ(t.host.record_function_id[u], has(3) ? 3 * i : kNoId) << "event " << i;
    EXPECT_EQ(t.strings.str(t.shapes_of(u).input_dims), has(4) ? fmt::format("[[{}]]", i) : "")
        << "event " << i;
    EXPECT_EQ(t.strings.str(t.shapes_of(u).input_types), has(5) ? "[\"float\"]" : "")
        << "event " << i;
    EXPECT_EQ(t.host.fwd_thread_id[u], has(7) ? i % 2 : kNoId) << "event " << i;
  }
}

// grid and block: Kineto's "[x, y, z]" and every other shape, each read as the general loop
// reads it (the first three non-negative integers in the array, capped at INT32_MAX; 0 where one
// is missing; nothing from a nested array).
TEST(KinetoReader, GridAndBlockShapes) {
  const std::vector<std::pair<std::string, std::array<int32_t, 3>>> cases = {
      {"[512, 1, 1]", {512, 1, 1}},
      {"[512,1,1]", {512, 1, 1}},
      {"[123456789, 2, 3]", {123456789, 2, 3}},
      {"[1234567890, 2, 3]", {1234567890, 2, 3}},  // ten digits: the general loop
      {"[99999999999, 2, 3]", {INT32_MAX, 2, 3}},
      {"[1, 2]", {1, 2, 0}},
      {"[1, 2, 3, 4]", {1, 2, 3}},
      {"[ 4 , 5 , 6 ]", {4, 5, 6}},
      {"[7,  8, 9]", {7, 8, 9}},
      {"[[1, 2, 3]]", {0, 0, 0}},
      {"[]", {0, 0, 0}},
      {"\"[1, 2, 3]\"", {0, 0, 0}},
  };
  std::string events;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (i > 0) events += ",";
    events += fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {}, "dur": 1, )"
        R"("args": {{"grid": {}, "block": {}, "correlation": {}}}}})",
        i, cases[i].first, cases[i].first, i);
  }
  for (size_t window : {16ul, 1ul << 20}) {
    KinetoReadOptions opt;
    opt.window_bytes = window;
    const RankTrace t = parse(trace_of(events), opt);
    ASSERT_EQ(t.gpu.size(), cases.size()) << window;
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(t.gpu.grid[i], cases[i].second) << cases[i].first << ", window " << window;
      EXPECT_EQ(t.gpu.block[i], cases[i].second) << cases[i].first << ", window " << window;
      EXPECT_EQ(t.gpu.correlation[i], static_cast<int64_t>(i)) << cases[i].first;
    }
  }
}

// The sentinel after the last byte: a file that ends exactly at a page boundary (the byte after
// it is in the padding pages, not in the file's last page), and files one byte either side
// (8191, 8192 and 8193 bytes with 4 KiB pages).
TEST(KinetoReader, PlainFilesEndingAtAPageBoundary) {
  const std::string base = mini();
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (size_t size : {2 * page - 1, 2 * page, 2 * page + 1}) {
    ASSERT_LT(base.size(), size);
    std::string text = base;
    text.append(size - text.size(), '\n');  // trailing blanks are allowed after the JSON
    const TempFile f(text);
    KinetoReadOptions opt;
    opt.window_bytes = 4096;
    const RankTrace t = read_kineto_file(f.path, opt);
    EXPECT_EQ(t.total_events, 34u) << size;  // as in MiniTrainCountsAndMetadata
    EXPECT_EQ(t.uncompressed_bytes, size);
    EXPECT_EQ(t.diagnostics.count("trailing_data"), 0u);
  }
}

// The reader writes into its window (the NUL sentinel after the bytes read so far, every window):
// the mapping is copy-on-write, and the file on disk is left as it was.
TEST(KinetoReader, ReadingInPlaceNeverChangesTheFile) {
  const std::string text = trace_of(
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad\xff\xfe name\", \"pid\": 1, \"tid\": "
      "1, \"ts\": 1, \"dur\": 1}");
  const TempFile f(text);
  const RankTrace t = read_kineto_file(f.path);
  ASSERT_EQ(t.host.size(), 1u);
  EXPECT_EQ(t.strings.str(t.host.name[0]), "bad?? name");
  EXPECT_EQ(t.diagnostics.count("invalid_utf8"), 1u);
  EXPECT_EQ(chopper::test::read_file(f.path), text);
}

TEST(KinetoReader, TruncatedPlainFileNamesTheFileAndOffset) {
  const std::string text = mini();
  const TempFile f(text.substr(0, text.size() / 2));
  try {
    read_kineto_file(f.path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), f.path);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("truncated JSON"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("byte {}", text.size() / 2)), std::string::npos) << msg;
  }
}
