// The host execution trace reader (ingest/et) and its link to the Kineto trace (link/et_link.cpp):
// a hand-made fixture (tests/data/et: host_rank0.json, kineto_rank0.json) whose expected counts,
// producers and FLOPs are worked out by hand below; malformed input; an ET with no Kineto
// counterpart; the real sample of ../shared/traces/chakra.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "chopper/analysis/flops.hpp"
#include "chopper/base/error.hpp"
#include "chopper/ingest/et/et_files.hpp"
#include "chopper/ingest/et/et_reader.hpp"
#include "chopper/link/et_link.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/info_report.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

ExecTrace read_et_text(const std::string& text, const std::string& name = "et.json") {
  auto src = ByteSource::from_memory(text, name);
  return read_host_et(*src);
}

int32_t row_of_id(const ExecTrace& et, int64_t id) {
  for (size_t i = 0; i < et.size(); ++i)
    if (et.id[i] == id) return static_cast<int32_t>(i);
  return kNoRow;
}

// The producers of node `id`'s input tensors, as node ids (-1: none), in argument order.
std::vector<int64_t> producers_of(const ExecTrace& et, int64_t id) {
  std::vector<int64_t> out;
  const auto i = static_cast<size_t>(row_of_id(et, id));
  for (uint32_t a = et.in_begin[i]; a < et.out_begin[i]; ++a)
    for (uint32_t k = et.args[a].tensor_begin; k < et.args[a].tensor_end; ++k)
      out.push_back(et.producer[k] < 0 ? -1 : et.id[static_cast<size_t>(et.producer[k])]);
  return out;
}

}  // namespace

TEST(HostEt, FixtureReads) {
  ExecTrace et = read_host_et_file(data_path("et/host_rank0.json"));
  EXPECT_EQ(et.schema, "1.1.1-chakra.0.0.4");
  EXPECT_EQ(et.pid, 4242);
  ASSERT_EQ(et.size(), 10u);
  EXPECT_EQ(et.root, 0);  // node id 1, the process root
  // aten::mm (id 5): two tensor inputs [2, 3] and [3, 4], its 6-tuples as written.
  const auto mm = static_cast<size_t>(row_of_id(et, 5));
  ASSERT_EQ(et.out_begin[mm] - et.in_begin[mm], 2u);
  const EtArg& a0 = et.args[et.in_begin[mm]];
  EXPECT_EQ(et.strings.str(a0.shape), "[2, 3]");
  EXPECT_EQ(et.strings.str(a0.type), "Tensor(float)");
  ASSERT_EQ(a0.tensor_end - a0.tensor_begin, 1u);
  const EtTensor& t0 = et.tensors[et.arg_tensors[a0.tensor_begin]];
  EXPECT_EQ(t0.tensor_id, 100);
  EXPECT_EQ(t0.num_elem, 6);
  EXPECT_EQ(t0.elem_bytes, 4);
  EXPECT_EQ(t0.bytes(), 24);
  EXPECT_EQ(et.strings.str(t0.device), "cuda:0");
  EXPECT_EQ(et.rf_id[mm], 11);
  EXPECT_EQ(et.strings.str(et.op_schema[mm]), "aten::mm(Tensor self, Tensor mat2) -> Tensor");
  // aten::cat (id 8): a tensor list of two tensors, then an Int.
  const auto cat = static_cast<size_t>(row_of_id(et, 8));
  const EtArg& l = et.args[et.in_begin[cat]];
  EXPECT_EQ(l.tensor_end - l.tensor_begin, 2u);
  EXPECT_EQ(et.strings.str(et.args[et.in_begin[cat] + 1].value), "0");
  // The process group of "## process_group:init ##".
  ASSERT_EQ(et.process_groups.size(), 1u);
  EXPECT_EQ(et.process_groups[0].name, "0");
  EXPECT_EQ(et.process_groups[0].desc, "default_pg");
  EXPECT_EQ(et.process_groups[0].size, 2);
  EXPECT_EQ(et.process_groups[0].ranks, (std::vector<int64_t>{0, 1}));
  // future_attr on node 7 is not read: counted, the file named. Node 5's kernel_backend,
  // kernel_file and tensor_range (PyTorch 2.11 writes them on every node) are known, not kept.
  EXPECT_EQ(et.diagnostics.count("et_unknown_attr"), 1u);
}

TEST(HostEt, ProducersOnFixture) {
  ExecTrace et = read_host_et_file(data_path("et/host_rank0.json"));
  link_et_producers(et);
  // mm (5) reads 100, 101: produced by no node. add (6) reads 102 (mm's output) and 103.
  EXPECT_EQ(producers_of(et, 5), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(producers_of(et, 6), (std::vector<int64_t>{5, -1}));
  EXPECT_EQ(producers_of(et, 7), (std::vector<int64_t>{6}));      // relu reads add's 104
  EXPECT_EQ(producers_of(et, 8), (std::vector<int64_t>{5, 7}));   // cat's list: 102 and 105
  EXPECT_EQ(producers_of(et, 9), (std::vector<int64_t>{8, -1}));  // 106 from cat; 101 none
  EXPECT_EQ(producers_of(et, 10), (std::vector<int64_t>{9}));     // zero_ reads 107
}

TEST(HostEt, LinksFixtureToKineto) {
  RankTrace t = read_kineto_file(data_path("et/kineto_rank0.json"));
  link_trace(t);
  link_exec_trace(t, read_host_et_file(data_path("et/host_rank0.json")));
  ASSERT_TRUE(t.exec_trace);
  const ExecTrace& et = *t.exec_trace;
  // Operators: ids 3..10 (8); with rf_id: all but zero_ (7); with a Kineto host op of their
  // rf_id: 10, 11, 12, 13, 14 (5; rf 1 and 99 have none); all 5 linked (names agree).
  EXPECT_EQ(et.operator_nodes, 8u);
  EXPECT_EQ(et.with_rf_id, 7u);
  EXPECT_EQ(et.with_counterpart, 5u);
  EXPECT_EQ(et.linked, 5u);
  EXPECT_DOUBLE_EQ(et.link_rate(), 1.0);
  EXPECT_DOUBLE_EQ(et.link_rate_all(), 5.0 / 8.0);
  // mm, relu and cat had no Input Dims in Kineto and take the ET's (add keeps its own; the
  // ProfilerStep has no inputs).
  EXPECT_EQ(et.shapes_from_et, 3u);
  EXPECT_EQ(t.diagnostics.count("flops_from_et"), 3u);
  EXPECT_EQ(t.diagnostics.count("et_link"), 1u);
  EXPECT_EQ(t.diagnostics.count("et_without_rf_id"), 1u);
  size_t mm = SIZE_MAX, add = SIZE_MAX;
  for (size_t i = 0; i < t.host.size(); ++i) {
    if (t.strings.str(t.host.name[i]) == "aten::mm") mm = i;
    if (t.strings.str(t.host.name[i]) == "aten::add") add = i;
  }
  ASSERT_NE(mm, SIZE_MAX);
  EXPECT_EQ(et.host_op[static_cast<size_t>(row_of_id(et, 5))], static_cast<int32_t>(mm));
  EXPECT_EQ(t.strings.str(t.shapes_of(mm).input_dims), "[[2, 3], [3, 4]]");
  EXPECT_EQ(t.strings.str(t.shapes_of(mm).input_types), "[\"float\", \"float\"]");
  // FLOPs from the ET's shapes: mm of [2, 3] x [3, 4] = 2 * 2 * 3 * 4 = 48; bytes (6 + 12 + 8)
  // floats of 4 B = 104.
  const OpCost c = op_cost("aten::mm", t.strings.str(t.shapes_of(mm).input_dims),
                           t.strings.str(t.shapes_of(mm).input_types),
                           t.strings.str(t.shapes_of(mm).concrete_inputs));
  EXPECT_DOUBLE_EQ(c.flops, 48);
  EXPECT_DOUBLE_EQ(c.bytes, 104);
  // add's Kineto shapes stay (the reader's row 0, the only one it made); the 3 from the ET follow.
  EXPECT_EQ(t.host.shapes[add], 0);
  EXPECT_EQ(t.shapes.size(), 4u);
}

TEST(HostEt, NoKinetoCounterpartIsLinkRateZero) {
  // The fixture's ET against a trace whose host ops carry other rf_ids.
  const std::string kineto = trace_of(
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
          "args": {"External id": 1, "Record function id": 5000}})");
  RankTrace t = parse(kineto);
  link_exec_trace(t, read_host_et_file(data_path("et/host_rank0.json")));
  ASSERT_TRUE(t.exec_trace);
  EXPECT_EQ(t.exec_trace->linked, 0u);
  EXPECT_EQ(t.exec_trace->with_counterpart, 0u);
  EXPECT_DOUBLE_EQ(t.exec_trace->link_rate_all(), 0.0);
  EXPECT_EQ(t.diagnostics.count("et_no_counterpart"), 1u);
  EXPECT_EQ(t.shapes.size(), 0u);  // nothing taken from it
}

// A Kineto trace from before PyTorch wrote "Record function id" (as the real
// hta_a100_alexnet_cuda_sync and hta_v100_float_epoch_ts traces: "Ev Idx" on every op, no rf_id)
// has no key to the ET: "Ev Idx" counts the profiler's events from 0 and would pair the fixture's
// rf_ids 10..14 with unrelated ops, so nothing is linked and the reason is said.
TEST(HostEt, EvIdxIsNoJoinKey) {
  const std::string kineto = trace_of(
      R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
          "ts": 0, "dur": 100, "args": {"External id": 10, "Ev Idx": 10}},
         {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
          "args": {"External id": 11, "Ev Idx": 11}})");
  RankTrace t = parse(kineto);
  link_exec_trace(t, read_host_et_file(data_path("et/host_rank0.json")));
  ASSERT_TRUE(t.exec_trace);
  EXPECT_EQ(t.exec_trace->with_rf_id, 7u);
  EXPECT_EQ(t.exec_trace->with_counterpart, 0u);
  EXPECT_EQ(t.exec_trace->linked, 0u);
  std::string why;
  for (const auto& e : t.diagnostics.entries())
    if (e.kind == "et_no_counterpart")
      for (const auto& x : e.examples) why += x;
  EXPECT_NE(why.find("none of the Kineto trace's 2 host ops carries a 'Record function id'"),
            std::string::npos)
      << why;
}

TEST(HostEt, MalformedIsInputErrorNamingFileAndOffset) {
  for (const std::string& bad :
       {std::string("not json at all"), std::string(R"({"schema": "1.0.1", "nodes": 5})"),
        std::string(R"({"schema": "1.0.1", "nodes": [{"id": 1, "name": )")}) {
    SCOPED_TRACE(bad);
    try {
      read_et_text(bad, "bad_et.json");
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "bad_et.json");
      EXPECT_NE(std::string(e.what()).find("bad_et.json"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("byte"), std::string::npos) << e.what();
    }
  }
  // A JSON object that is no ET (a Kineto trace): NotATraceError.
  EXPECT_THROW(read_et_text(R"({"traceEvents": []})"), NotATraceError);
}

TEST(HostEt, SkipsBadNodesAndCountsThem) {
  // A node that is not an object, one without an id, and a good one (schema 1.0.1's flat keys).
  ExecTrace et = read_et_text(
      R"j({"schema": "1.0.1", "pid": 7, "nodes": [5, {"name": "x"},
         {"id": 3, "name": "aten::relu", "parent": 1, "rf_id": 9, "inputs": [[1, 1, 0, 4, 4, "cpu"]],
          "input_shapes": [[4]], "input_types": ["Tensor(float)"], "outputs": [], "output_shapes": [],
          "output_types": []}]
})j");
  ASSERT_EQ(et.size(), 1u);
  EXPECT_EQ(et.id[0], 3);
  EXPECT_EQ(et.parent[0], 1);
  EXPECT_EQ(et.rf_id[0], 9);
  EXPECT_EQ(et.strings.str(et.args[0].shape), "[4]");
  EXPECT_EQ(et.tensors.size(), 1u);
  EXPECT_EQ(et.diagnostics.count("et_node_skipped"), 2u);
}

TEST(HostEt, SniffAndFileMatching) {
  EXPECT_TRUE(
      sniff_host_et_text(R"({"schema": "1.0.2-chakra.0.0.4", "pid": 12, "nodes": [)").is_et);
  EXPECT_EQ(sniff_host_et_text(R"({"schema": "1.0.2", "pid": 12, "nodes": [)").pid, 12);
  EXPECT_FALSE(sniff_host_et_text(R"({"schemaVersion": 1, "traceEvents": [)").is_et);
  EXPECT_FALSE(sniff_host_et_text(R"({"schema": "1", "traceEvents": [], "nodes": [)").is_et);
  EXPECT_EQ(host_et_rank_from_name("/x/host.3.json"), 3);
  EXPECT_EQ(host_et_rank_from_name("/x/rank-12.et.json.gz"), 12);
  EXPECT_EQ(host_et_rank_from_name("/x/et.json"), -1);
  // A directory holding both: the ET is taken out of the traces and linked to the rank of its pid.
  chopper::Run run = load_run({data_path("et")});
  ASSERT_EQ(run.ranks.size(), 1u);
  ASSERT_TRUE(run.ranks[0].ok) << run.ranks[0].error;
  ASSERT_TRUE(run.ranks[0].trace.exec_trace);
  EXPECT_EQ(run.ranks[0].trace.exec_trace->linked, 5u);
  EXPECT_TRUE(run.skipped.empty());
  // chopper info shows the link rate: 5 of the 5 with a counterpart, 5 of the 8 operators.
  const std::string info = info_text(run);
  EXPECT_NE(info.find("linked 5 of 5 with a Kineto host op of their rf_id (100.00%), of all "
                      "operators 62.50%; 3 host ops took the ET's shapes"),
            std::string::npos)
      << info;
  EXPECT_NE(info_json(run).find("\"host_et\": {"), std::string::npos);
}

TEST(HostEt, RealSample) {
  // ../shared/traces/chakra/chakra_host_et_1.0.2.tgz holds 1.0.2-chakra.0.0.4.json. Counted
  // independently with Python's json module: 263 nodes, one process root (id 1, ctrl_deps 1), one
  // thread node, 261 operators; 270 tensors among the inputs' values, 230 among the outputs'; 1131
  // input and 240 output arguments; the largest id 296; one process group ("0", cuda:nccl, size 2).
  const std::string tgz = shared_path("traces/chakra/chakra_host_et_1.0.2.tgz");
  if (!std::filesystem::exists(tgz)) GTEST_SKIP() << tgz << " absent";
  const auto dir =
      std::filesystem::temp_directory_path() / ("chopper_et_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cmd = "tar -xzf '" + tgz + "' -C '" + dir.string() + "' 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string file = (dir / "1.0.2-chakra.0.0.4.json").string();
  EXPECT_TRUE(sniff_host_et_file(file).is_et);
  ExecTrace et = read_host_et_file(file);
  EXPECT_EQ(et.schema, "1.0.2-chakra.0.0.4");
  EXPECT_EQ(et.pid, 788625);
  ASSERT_EQ(et.size(), 263u);
  ASSERT_NE(et.root, kNoRow);
  EXPECT_EQ(et.id[static_cast<size_t>(et.root)], 1);
  size_t threads = 0, ops = 0, in_args = 0, out_args = 0, in_tensors = 0, out_tensors = 0;
  int64_t max_id = 0;
  for (size_t i = 0; i < et.size(); ++i) {
    threads += et.kind[i] == EtNodeKind::kThread;
    ops += et.kind[i] == EtNodeKind::kOperator;
    in_args += et.out_begin[i] - et.in_begin[i];
    out_args += et.args_end[i] - et.out_begin[i];
    for (uint32_t a = et.in_begin[i]; a < et.args_end[i]; ++a)
      (a < et.out_begin[i] ? in_tensors : out_tensors) +=
          et.args[a].tensor_end - et.args[a].tensor_begin;
    max_id = std::max(max_id, et.id[i]);
  }
  EXPECT_EQ(threads, 1u);
  EXPECT_EQ(ops, 261u);
  EXPECT_EQ(in_args, 1131u);
  EXPECT_EQ(out_args, 240u);
  EXPECT_EQ(in_tensors, 270u);
  EXPECT_EQ(out_tensors, 230u);
  EXPECT_EQ(max_id, 296);
  ASSERT_EQ(et.process_groups.size(), 1u);
  EXPECT_EQ(et.process_groups[0].name, "0");
  EXPECT_EQ(et.process_groups[0].backend_config, "cuda:nccl");
  EXPECT_EQ(et.process_groups[0].size, 2);
  // Every node carries the seven attributes PARAM reads; none is unknown, no node skipped.
  EXPECT_EQ(et.diagnostics.count("et_unknown_attr"), 0u);
  EXPECT_EQ(et.diagnostics.count("et_node_skipped"), 0u);
  std::filesystem::remove_all(dir);
}
