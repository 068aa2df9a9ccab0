// Golden test of the host ET link on synthetic runs (chopper synth --et): every operator node of
// each rank's host ET links to the Kineto host op of its rf_id (truth.json's host_et.linked: the
// generator writes each node beside the Kineto event with the same name and id), and the host ops
// whose Input Dims the generator left to the ET (host_et.dims_dropped) are the ones that take the
// ET's shapes. The FLOPs those shapes give are checked against the truth in test_flops.cpp
// (FlopsGolden.HostEtShapesMatchTruth); analyze's tables are unchanged by an ET whose shapes
// Kineto already had (drop 0).
#include <gtest/gtest.h>

#include <regex>

#include "chopper/model/exec_trace.hpp"
#include "chopper/pipeline/load.hpp"
#include "golden/truth.hpp"
#include "test_util.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct EtTruth {
  uint64_t operators = 0, linked = 0, dims_dropped = 0;
};

// Each rank's "host_et" object of truth.json, in rank order.
std::vector<EtTruth> read_et_truth(const fs::path& dir) {
  const std::string text = read_file((dir / "truth.json").string());
  const std::regex re(
      R"re("host_et": \{"file": "rank-\d+\.et\.json", "operators": (\d+), "linked": (\d+), "dims_dropped": (\d+)\})re");
  std::vector<EtTruth> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it)
    out.push_back({std::stoull((*it)[1]), std::stoull((*it)[2]), std::stoull((*it)[3])});
  return out;
}

void check_link(const std::string& name, double drop) {
  SynthConfig c = small("h100", Parallelism::kFsdp);
  c.et = true;
  c.et_drop_dims = drop;
  const fs::path dir = temp_dir("et_" + name);
  synthesize(c, dir.string());
  const std::vector<EtTruth> truth = read_et_truth(dir);
  ASSERT_EQ(truth.size(), static_cast<size_t>(c.ranks));
  Run run = load_run({dir.string()});
  ASSERT_EQ(run.ranks.size(), truth.size());
  for (size_t r = 0; r < truth.size(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankTrace& t = run.ranks[r].trace;
    ASSERT_TRUE(t.exec_trace);
    const ExecTrace& et = *t.exec_trace;
    EXPECT_GT(truth[r].operators, 100u);
    EXPECT_EQ(et.operator_nodes, truth[r].operators);
    EXPECT_EQ(et.with_counterpart, truth[r].operators);
    EXPECT_EQ(et.linked, truth[r].linked);
    EXPECT_DOUBLE_EQ(et.link_rate(), 1.0);
    EXPECT_EQ(et.shapes_from_et, truth[r].dims_dropped);
    if (drop > 0) {
      EXPECT_GT(truth[r].dims_dropped, 0u);
    }
    // Every linked node's host op has the node's name (the link's rule) and, having launched
    // work with shapes, its Input Dims.
    for (size_t i = 0; i < et.size(); ++i) {
      if (et.host_op[i] < 0) continue;
      EXPECT_EQ(t.strings.str(t.host.name[static_cast<size_t>(et.host_op[i])]),
                et.strings.str(et.name[i]));
      if (et.out_begin[i] > et.in_begin[i]) {
        EXPECT_GE(t.host.shapes[static_cast<size_t>(et.host_op[i])], 0);
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace

TEST(HostEtGolden, SyntheticLinksEveryNode) {
  check_link("drop0", 0);
}

TEST(HostEtGolden, SyntheticDroppedDimsComeFromEt) {
  check_link("drop30", 0.3);
}
