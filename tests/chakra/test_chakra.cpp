// Chakra ET (chakra/et.hpp): the feeder-test sample of MLCommons Chakra read with the golden
// values of Chakra's own feeder test; a synthetic run written and read back, node by node, against
// the generator's truth.json; corrupt files refused with the file and the byte offset.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "chopper/analysis/analysis.hpp"
#include "chopper/analysis/parts.hpp"
#include "chopper/base/error.hpp"
#include "chopper/chakra/et.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;
namespace ck = chopper::chakra;

namespace {

uint64_t count_type(const ck::EtCheck& c, int type) {
  for (const auto& [t, n] : c.by_type)
    if (t == type) return n;
  return 0;
}

const ChakraProtoMsg::Node& node_by_id(const ck::EtFile& f, uint64_t id) {
  for (const auto& n : f.nodes)
    if (n.id() == id) return n;
  throw std::runtime_error("no node " + std::to_string(id));
}

// The feeder-test sample (tests/data/chakra.0.et of Chakra's feeder_tests_trace.tar.gz), extracted
// by the test fixture chakra_sample_extract into the build directory.
TEST(ChakraSample, ReadWithTheFeederTestsGoldenValues) {
  const std::string path = std::string(CHOPPER_CHAKRA_SAMPLE_DIR) + "/tests/data/chakra.0.et";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << "the Chakra sample is not here: " << path
                 << " (extracted from ../shared/traces/chakra/chakra_feeder_tests_trace.tar.gz "
                    "by the test chakra_sample_extract when ../shared is present)";
  const ck::EtFile f = ck::read_et(path);
  const ck::EtCheck c = ck::check_et(f);
  // The sample's contents (shared/research/charllm_chakra.md §3.9, counted with Chakra's own
  // protobuf module): 3,664 nodes, 3,643 COMP and 21 COMM_COLL, 181,878 data deps, and one ctrl
  // dep per node (the host ET parent).
  EXPECT_EQ(f.nodes.size(), 3664u);
  EXPECT_EQ(count_type(c, ChakraProtoMsg::COMP_NODE), 3643u);
  EXPECT_EQ(count_type(c, ChakraProtoMsg::COMM_COLL_NODE), 21u);
  EXPECT_EQ(c.by_type.size(), 2u);
  EXPECT_EQ(c.data_edges, 181878u);
  ASSERT_EQ(f.meta.attr_size() > 0, true);
  std::string schema;
  for (const auto& a : f.meta.attr())
    if (a.name() == "schema") schema = a.string_val();
  EXPECT_EQ(schema, "1.0.1");
  EXPECT_EQ(c.with_start_time, 0u);  // Chakra's converter never sets start_time_micros
  // Only 7 of the 21 COMM_COLL nodes carry comm_type: 5 ALL_REDUCE, 2 BROADCAST.
  std::map<int64_t, int> types;
  for (const auto& k : c.collectives) ++types[k.comm_type];
  EXPECT_EQ(types[-1], 14);
  EXPECT_EQ(types[ChakraProtoMsg::ALL_REDUCE], 5);
  EXPECT_EQ(types[ChakraProtoMsg::BROADCAST], 2);
  // Chakra's feeder gtest (tests/feeder/tests.cpp): the first issuable node is 216 (COMP, a CPU
  // op, rf_id 2), the next 432 (COMM_COLL, rf_id 110); the first children of 216 are 217, 430,
  // 435.
  ASSERT_GE(c.feeder_first.size(), 2u);
  EXPECT_EQ(c.feeder_first[0], 216u);
  const auto& n216 = node_by_id(f, 216);
  EXPECT_EQ(n216.type(), ChakraProtoMsg::COMP_NODE);
  EXPECT_EQ(ck::int_attr(n216, "is_cpu_op", -1), 1);
  EXPECT_EQ(ck::int_attr(n216, "rf_id", -1), 2);
  // Chakra's test checks the first three children (in file order, as the feeder links them).
  const std::vector<uint64_t> children = ck::feeder_children(f, 216);
  ASSERT_GE(children.size(), 3u);
  EXPECT_EQ(std::vector<uint64_t>(children.begin(), children.begin() + 3),
            (std::vector<uint64_t>{217, 430, 435}));
  const auto& n432 = node_by_id(f, 432);
  EXPECT_EQ(n432.type(), ChakraProtoMsg::COMM_COLL_NODE);
  EXPECT_EQ(ck::int_attr(n432, "rf_id", -1), 110);
  // getNextIssuableNode before 216 completes: the nodes without data deps, smallest id first.
  std::vector<uint64_t> at_start;
  for (const auto& n : f.nodes)
    if (n.data_deps_size() == 0) at_start.push_back(n.id());
  std::sort(at_start.begin(), at_start.end());
  ASSERT_GE(at_start.size(), 2u);
  EXPECT_EQ(at_start[0], 216u);
  EXPECT_EQ(at_start[1], 432u);
  EXPECT_EQ(c.feeder_first[1], 432u);
  EXPECT_EQ(c.feeder_initial, at_start.size());
  // Valid over data deps: every node issued in a replay, no dangling data dep, no duplicate id.
  EXPECT_EQ(c.feeder_issued, 3664u);
  EXPECT_EQ(c.in_cycles_data, 0u);
  EXPECT_EQ(c.dangling_data, 0u);
  EXPECT_TRUE(c.duplicate_ids.empty());
  EXPECT_TRUE(c.ok());
  // Its ctrl deps are host-ET parents, not an order: node 216's is 3, which is not a node, and
  // node 3317 (a kernel) has ctrl dep 3318, which data-depends on 3317: a cycle over data + ctrl.
  EXPECT_EQ(n216.ctrl_deps_size(), 1);
  EXPECT_EQ(n216.ctrl_deps(0), 3u);
  EXPECT_GT(c.dangling_ctrl, 0u);
  const auto& n3317 = node_by_id(f, 3317);
  const auto& n3318 = node_by_id(f, 3318);
  EXPECT_NE(std::find(n3317.ctrl_deps().begin(), n3317.ctrl_deps().end(), 3318u),
            n3317.ctrl_deps().end());
  EXPECT_NE(std::find(n3318.data_deps().begin(), n3318.data_deps().end(), 3317u),
            n3318.data_deps().end());
  EXPECT_GT(c.in_cycles_all, 0u);
  EXPECT_FALSE(c.strict_ok());
}

// A synthetic 2-rank run, written by build_rank_et/write_et and read back.
struct RoundTrip {
  fs::path dir;
  Run run;
  RunAnalysis ra;
  std::vector<TruthRank> truth;
  std::vector<ck::EtFile> files;
  std::vector<ck::EtCheck> checks;
};

RoundTrip& round_trip() {
  static RoundTrip rt = [] {
    RoundTrip x;
    SynthConfig c = small("h100", Parallelism::kFsdp);
    c.ranks = 2;
    c.gpus_per_node = 2;
    x.dir = temp_dir("chakra");
    synthesize(c, x.dir.string());
    x.truth = read_truth(x.dir);
    x.run = load_run({x.dir.string()});
    label_run(Taxonomy::builtin(), x.run, 2);
    AnalysisOptions o;
    o.threads = 2;
    x.ra = analyze_run(x.run, o);
    Ns start = INT64_MAX;
    for (const auto& s : x.run.ranks)
      start = std::min(start, s.trace.first_ns() - clock_offset(x.ra, s.rank));
    for (const auto& s : x.run.ranks) {
      const ck::RankEt et =
          ck::build_rank_et(s.trace, s.rank, clock_offset(x.ra, s.rank), start, nullptr, {}, {});
      const std::string path = (x.dir / ("chakra." + std::to_string(s.rank) + ".et")).string();
      ck::write_et(et, path);
      x.files.push_back(ck::read_et(path));
      x.checks.push_back(ck::check_et(x.files.back()));
    }
    return x;
  }();
  return rt;
}

TEST(ChakraRoundTrip, NodeCountsPerTypeAreTheRunsHostOpsKernelsAndCollectives) {
  RoundTrip& x = round_trip();
  ASSERT_EQ(x.files.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const RankTrace& t = x.run.ranks[r].trace;
    const ck::EtCheck& c = x.checks[r];
    uint64_t gpu_compute = 0, gpu_comm = 0;
    for (size_t a = 0; a < t.gpu.size(); ++a)
      if (t.gpu.kind[a] != GpuKind::kSync) ++(t.gpu.collective[a] >= 0 ? gpu_comm : gpu_compute);
    // Chopper's own counts: host ops (cpu_op and user_annotation), GPU work that is not a
    // collective, collectives (all all-gathers and reduce-scatters in FSDP: COMM_COLL).
    EXPECT_EQ(count_type(c, ChakraProtoMsg::COMP_NODE), t.host.size() + gpu_compute) << r;
    EXPECT_EQ(count_type(c, ChakraProtoMsg::COMM_COLL_NODE), t.collectives.size()) << r;
    EXPECT_EQ(gpu_comm, t.collectives.size());
    EXPECT_EQ(count_type(c, ChakraProtoMsg::METADATA_NODE), 1u);  // the process groups
    // Independently: every GPU activity the generator made (truth.json's kernels: kernels,
    // memcpys, memsets) is one node, found by its correlation id.
    EXPECT_EQ(t.gpu.size(), x.truth[r].kernels.size());
    uint64_t gpu_nodes = 0;
    for (const auto& n : x.files[r].nodes)
      if (ck::int_attr(n, "is_cpu_op", 1) == 0) ++gpu_nodes;
    EXPECT_EQ(gpu_nodes, x.truth[r].kernels.size());
    // Valid: no dangling or duplicate id, acyclic, every dep names an earlier node.
    EXPECT_TRUE(c.strict_ok());
    EXPECT_EQ(c.all_deps_issued, x.files[r].nodes.size());
    for (const auto& n : x.files[r].nodes)
      for (uint64_t d : n.ctrl_deps()) EXPECT_LT(d, n.id());
  }
  // The same collectives in the same order on both ranks.
  EXPECT_TRUE(ck::collective_mismatches(x.files, x.checks).empty());
  EXPECT_GT(x.checks[0].collectives.size(), 0u);
}

TEST(ChakraRoundTrip, DurationsAndStartsAreTheTruths) {
  RoundTrip& x = round_trip();
  for (size_t r = 0; r < 2; ++r) {
    std::map<int64_t, const ChakraProtoMsg::Node*> by_corr;
    for (const auto& n : x.files[r].nodes)
      if (ck::int_attr(n, "is_cpu_op", 1) == 0) by_corr[ck::int_attr(n, "correlation", -1)] = &n;
    // The run's first time on the aligned clock: the earliest event of either rank.
    Ns start = INT64_MAX;
    for (const auto& s : x.run.ranks)
      start = std::min(start, s.trace.first_ns() - clock_offset(x.ra, s.rank));
    const Ns off = clock_offset(x.ra, x.truth[r].rank);
    size_t checked = 0, comm = 0;
    for (const TruthKernel& k : x.truth[r].kernels) {
      auto it = by_corr.find(k.correlation);
      ASSERT_NE(it, by_corr.end()) << "correlation " << k.correlation;
      const auto& n = *it->second;
      // duration_micros: the activity's duration in µs, rounded to the nearest.
      EXPECT_EQ(n.duration_micros(), static_cast<uint64_t>((k.dur_ns + 500) / 1000));
      // start_time_micros: from the run's start on the aligned clock.
      EXPECT_EQ(n.start_time_micros(),
                static_cast<uint64_t>((k.start_ns - off - start + 500) / 1000));
      if (k.op_class == "all_gather" || k.op_class == "reduce_scatter") {
        ++comm;
        EXPECT_EQ(n.type(), ChakraProtoMsg::COMM_COLL_NODE);
        EXPECT_EQ(ck::int_attr(n, "comm_type", -1), k.op_class == "all_gather"
                                                        ? ChakraProtoMsg::ALL_GATHER
                                                        : ChakraProtoMsg::REDUCE_SCATTER);
        EXPECT_GT(ck::int_attr(n, "comm_size", -1), 0);
      } else {
        EXPECT_EQ(n.type(), ChakraProtoMsg::COMP_NODE);
      }
      // Launch edge: every generated kernel was launched by a host op, a node before it.
      bool launched = false;
      for (uint64_t d : n.ctrl_deps())
        launched |= ck::int_attr(x.files[r].nodes[d], "is_cpu_op", 0) == 1;
      EXPECT_TRUE(launched) << "correlation " << k.correlation;
      ++checked;
    }
    EXPECT_EQ(checked, x.truth[r].kernels.size());
    EXPECT_GT(comm, 0u);
  }
}

TEST(ChakraRoundTrip, DataDepsFromProducerConsumerPairs) {
  RoundTrip& x = round_trip();
  const RankTrace& t = x.run.ranks[0].trace;
  ck::RankEt et = ck::build_rank_et(t, 0, 0, t.first_ns(), nullptr, {}, {});
  EXPECT_EQ(et.stats.data_edges, 0u);
  std::vector<uint64_t> ids(t.host.size(), UINT64_MAX);
  // Two hand-made pairs over nodes 1 → 3 and 3 → 1 (host ops 0 and 1 mapped to those ids): the
  // first is added, the second would point forward and is left out.
  ids[0] = 1;
  ids[1] = 3;
  const uint64_t added = ck::add_data_deps(et, ids, {{0, 1}, {1, 0}});
  EXPECT_EQ(added, 1u);
  ASSERT_EQ(et.nodes[3].data_deps_size(), 1);
  EXPECT_EQ(et.nodes[3].data_deps(0), 1u);
  EXPECT_EQ(et.stats.dropped_edges, 1u);
}

// Corrupt input: the message names the file and the byte offset.
TEST(ChakraCorrupt, TruncatedAndBadVarintNameFileAndOffset) {
  RoundTrip& x = round_trip();
  const std::string path = (x.dir / "chakra.0.et").string();
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The first record's length (a one- or two-byte varint) and where the second starts.
  size_t pos = 0;
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    const auto c = static_cast<uint8_t>(bytes[pos++]);
    len |= static_cast<uint64_t>(c & 0x7f) << shift;
    if (!(c & 0x80)) break;
  }
  const size_t second = pos + len;
  // Truncated inside the second record (the first node): the error is at its length prefix.
  const std::string cut = bytes.substr(0, second + 3);
  try {
    ck::parse_et(cut, "cut.et");
    FAIL() << "a truncated file was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "cut.et");
    EXPECT_EQ(e.offset(), second);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // A length prefix of six continuation bytes: a bad varint at that offset.
  std::string bad = bytes.substr(0, second) + std::string(6, '\xff');
  try {
    ck::parse_et(bad, "bad.et");
    FAIL() << "a bad varint was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), second);
    EXPECT_NE(std::string(e.what()).find("bad.et: byte " + std::to_string(second)),
              std::string::npos)
        << e.what();
  }
  // A record that is not a Node (a field of wire type 7, which does not exist).
  std::string garbage = bytes.substr(0, second) + std::string("\x02\x0f\x00", 3);
  try {
    ck::parse_et(garbage, "garbage.et");
    FAIL() << "garbage was read";
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), second);
  }
  // The same through a file on disk: read_et names the path.
  const std::string on_disk = (x.dir / "cut.et").string();
  std::ofstream(on_disk, std::ios::binary) << cut;
  try {
    ck::read_et(on_disk);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), on_disk);
    EXPECT_EQ(e.offset(), second);
  }
}

}  // namespace
