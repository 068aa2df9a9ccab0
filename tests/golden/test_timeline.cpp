// The merged timeline (report/timeline.hpp) read back: a synthetic 4-rank run on two nodes whose
// clocks differ by 137.421 µs. Every GPU activity must be in the file exactly once, on the
// aligned clock (its start minus its rank's applied clock offset, to the nanosecond), with its
// labels; the hierarchy slices must nest; each launch has a flow; the telemetry has counter
// tracks; and an iteration selection keeps exactly that iteration's activities.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/timeline.hpp"
#include "golden/truth.hpp"

using namespace chopper;
using namespace chopper::test;

namespace {

struct Slice {
  int64_t pid, tid;
  Ns ts, dur;  // ns
};

// "12.345" µs -> 12345 ns, exactly (the writer prints three decimals).
Ns ns_of(double us) {
  return static_cast<Ns>(std::llround(us * 1000.0));
}

struct TimelineRun {
  fs::path dir;
  Run run;
  HardwareRun hw;
  RunAnalysis ra;
};

TimelineRun& setup() {
  static TimelineRun s = [] {
    TimelineRun x;
    SynthConfig c = small("h100", Parallelism::kFsdp);
    c.node_clock_offset_ns = 137'421;
    c.iterations = 3;
    x.dir = temp_dir("timeline");
    synthesize(c, x.dir.string());
    x.run = load_run({x.dir.string()});
    label_run(Taxonomy::builtin(), x.run, 2);
    HardwareFiles hf = load_hardware({x.dir.string()}, {}, {}, 2, telemetry_window(x.run, {}));
    x.hw = align_hardware(x.run, std::move(hf.telemetry), std::move(hf.counters), {});
    AnalysisOptions o;
    o.threads = 2;
    x.ra = analyze_run(x.run, o, &x.hw);
    return x;
  }();
  return s;
}

std::string write(const TimelineOptions& o, TimelineStats* st) {
  TimelineRun& s = setup();
  const fs::path p = s.dir / "timeline.json";
  OutputFile f(p.string(), false);
  *st = write_timeline(s.run, s.ra, &s.hw, o, f);
  f.commit();
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

Ns offset(const RunAnalysis& ra, int64_t rank) {
  for (const ClockOffset& c : ra.clock_offsets)
    if (c.rank == rank) return c.applied ? c.offset_ns : 0;
  return 0;
}

}  // namespace

TEST(Timeline, EveryGpuActivityOnceOnTheAlignedClock) {
  TimelineStats st;
  const std::string text = write({}, &st);
  const TimelineRun& s = setup();
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  const Ns base = doc["otherData"]["base_ns"].get_int64().value();
  EXPECT_EQ(base, st.base_ns);
  // The offsets: node 1 (ranks 2, 3) is 137.421 µs ahead; estimated from collective ends.
  int nonzero = 0;
  for (const RankSlot& r : s.run.ranks) nonzero += offset(s.ra, r.rank) != 0 ? 1 : 0;
  EXPECT_EQ(nonzero, 2);

  // Expected: every GPU activity, keyed by (rank, correlation, GPU-class name).
  std::map<std::tuple<int64_t, int64_t, std::string>, Ns> want;  // -> aligned ts − base
  std::set<std::string> classes;
  size_t launched = 0;
  for (const RankSlot& r : s.run.ranks) {
    const GpuActivities& g = r.trace.gpu;
    for (size_t i = 0; i < g.size(); ++i) {
      const std::string cls(gpu_class_name(g.cls[i]));
      classes.insert(cls);
      ASSERT_TRUE(want.emplace(std::tuple{r.rank, g.correlation[i], cls},
                               g.start_ns[i] - offset(s.ra, r.rank) - base)
                      .second);
      launched += g.runtime_idx[i] >= 0 ? 1 : 0;
    }
  }
  std::set<int64_t> processes;
  std::map<int64_t, std::vector<Slice>> hierarchy;  // by pid
  size_t found = 0, starts = 0, finishes = 0, power = 0;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const std::string_view ph = e["ph"].get_string().value();
    if (ph == "M" && e["name"].get_string().value() == "process_name") {
      processes.insert(e["pid"].get_int64().value());
    } else if (ph == "X") {
      const std::string cat(e["cat"].get_string().value());
      const int64_t pid = e["pid"].get_int64().value();
      const Ns ts = ns_of(e["ts"].get_double().value());
      if (e["tid"].get_int64().value() == 0) {
        hierarchy[pid].push_back({pid, 0, ts, ns_of(e["dur"].get_double().value())});
      } else if (classes.count(cat)) {
        const int64_t corr = e["args"]["correlation"].get_int64().value();
        auto w = want.find({pid, corr, cat});
        ASSERT_NE(w, want.end()) << "rank " << pid << " correlation " << corr;
        EXPECT_EQ(ts, w->second) << "rank " << pid << " correlation " << corr;
        want.erase(w);  // a second copy would not be found
        ++found;
        if (cat == "compute") {
          EXPECT_FALSE(e["args"]["iteration"].error());
          EXPECT_FALSE(e["args"]["phase"].error());
        }
      }
    } else if (ph == "s" && e["cat"].get_string().value() == "launch") {
      ++starts;
    } else if (ph == "f" && e["cat"].get_string().value() == "launch") {
      ++finishes;
    } else if (ph == "C" && e["name"].get_string().value() == "power_w") {
      ++power;
    }
  }
  EXPECT_TRUE(want.empty()) << want.size() << " GPU activities missing";
  EXPECT_EQ(found, st.gpu_slices);
  EXPECT_EQ(processes.size(), s.run.ranks.size());
  EXPECT_EQ(starts, launched);
  EXPECT_EQ(finishes, launched);
  EXPECT_GT(power, 0u);
  EXPECT_GT(st.collective_flows, 0u);
  // The hierarchy nests: sorted by start (longer first), each slice lies inside the enclosing
  // open slice or starts at or after its end.
  for (auto& [pid, v] : hierarchy) {
    SCOPED_TRACE("rank " + std::to_string(pid));
    ASSERT_FALSE(v.empty());
    std::sort(v.begin(), v.end(), [](const Slice& a, const Slice& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<Ns> open;  // ends
    for (const Slice& x : v) {
      while (!open.empty() && x.ts >= open.back()) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(x.ts + x.dur, open.back()) << "slice at " << x.ts << " crosses its parent";
      }
      open.push_back(x.ts + x.dur);
    }
  }
}

TEST(Timeline, IterationAndRankSelection) {
  const TimelineRun& s = setup();
  const int64_t it = s.ra.iterations.at(1).iteration;
  TimelineOptions o;
  o.iterations = {{it, it}};
  o.ranks = parse_ranges("1-2");
  TimelineStats st;
  const std::string text = write(o, &st);
  size_t want = 0;
  for (const RankSlot& r : s.run.ranks)
    if (r.rank == 1 || r.rank == 2)
      for (size_t i = 0; i < r.trace.gpu.size(); ++i) want += r.trace.gpu.iteration[i] == it;
  EXPECT_EQ(st.ranks, 2u);
  EXPECT_EQ(st.gpu_slices, want);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    const int64_t pid = e["pid"].get_int64().value();
    EXPECT_TRUE(pid == 1 || pid == 2);
  }
}

TEST(Timeline, RangesParse) {
  const auto r = parse_ranges("0-3,7,9-10");
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (std::pair<int64_t, int64_t>{0, 3}));
  EXPECT_EQ(r[1], (std::pair<int64_t, int64_t>{7, 7}));
  EXPECT_EQ(r[2], (std::pair<int64_t, int64_t>{9, 10}));
  for (const char* bad : {"", "3-1", "1,", "a", "-2", "1--2"}) {
    EXPECT_THROW(parse_ranges(bad), Error) << bad;
  }
}

// Collective flows are named by their collective and its sequence number in its group
// ("all_gather #3 (group 0)"): this FSDP run's collectives are all-gathers and reduce-scatters,
// and there is one flow (one "s" event) per collective matched on more than one rank.
TEST(Timeline, CollectiveFlowsNamedByCollectiveAndSequence) {
  TimelineStats st;
  const std::string text = write({}, &st);
  const TimelineRun& s = setup();
  size_t matched = 0;
  for (const CollectiveRow& c : s.ra.collectives) matched += c.ranks > 1 ? 1 : 0;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(text);
  size_t starts = 0;
  std::set<std::string> kinds;
  for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
    if (e["ph"].get_string().value() != "s" || e["cat"].get_string().value() != "collective")
      continue;
    ++starts;
    const std::string name(e["name"].get_string().value());
    const size_t hash = name.find(" #");
    ASSERT_NE(hash, std::string::npos) << name;
    kinds.insert(name.substr(0, hash));
    EXPECT_GE(std::stoll(name.substr(hash + 2)), 0) << name;
  }
  EXPECT_EQ(starts, matched);
  EXPECT_EQ(starts, st.collective_flows);
  EXPECT_EQ(kinds, (std::set<std::string>{"all_gather", "reduce_scatter"}));
}

// The JSON's size note: nothing up to the limit, past it the advice to write Perfetto's protobuf
// format or fewer ranks.
TEST(Timeline, JsonSizeNote) {
  EXPECT_EQ(json_timeline_size_note(kJsonTimelineLimitBytes), "");
  const std::string n = json_timeline_size_note(kJsonTimelineLimitBytes * 2);
  EXPECT_NE(n.find("512 MiB of JSON is past the 256 MiB"), std::string::npos) << n;
  EXPECT_NE(n.find("--format perfetto"), std::string::npos) << n;
  EXPECT_NE(n.find("--ranks"), std::string::npos) << n;
}
