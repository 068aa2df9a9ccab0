#pragma once
// The merged timeline (`chopper timeline`): every selected rank of a labelled run in one file that
// Perfetto (ui.perfetto.dev) loads, on the aligned clock (each rank's clock offset from
// analysis/collectives subtracted): Chrome trace JSON (also read by chrome://tracing), or
// Perfetto's own protobuf trace (report/timeline_perfetto.hpp), far smaller for large runs.
// docs/formats.md, Timeline.
//
// Per rank one process (JSON pid = rank) with
//   - a "hierarchy" thread: nested slices iteration ▸ phase ▸ layer ▸ operation, each spanning its
//     GPU activities (first start to last end, cut at the next sibling's start so they nest);
//   - one thread per GPU stream: every GPU activity as a slice, its labels in args;
//   - one thread per host thread: host ops and runtime calls (unless host is off);
//   - flow arrows from each launch call to its GPU activity, and across ranks through each matched
//     collective (named by its type and sequence number in its group: "all_gather #3");
//   - counter tracks of the aligned telemetry: power, SM clock, temperatures.
// The writer walks the run once and hands every item to a TimelineSink, which encodes it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

struct TimelineOptions {
  std::vector<std::pair<int64_t, int64_t>> ranks;       // inclusive ranges; empty = every rank
  std::vector<std::pair<int64_t, int64_t>> iterations;  // inclusive ranges; empty = everything
  bool host = true;  // host ops and runtime calls (and the launch flows)
};

struct TimelineStats {
  uint64_t ranks = 0, gpu_slices = 0, hierarchy_slices = 0, host_slices = 0, launch_flows = 0,
           collective_flows = 0, counter_samples = 0;
  Ns base_ns = 0;  // aligned time of ts 0
};

// Parses "0-3,7,9-10" into inclusive ranges (throws Error naming the text).
std::vector<std::pair<int64_t, int64_t>> parse_ranges(const std::string& text);

// One argument of a slice: an integer, or a text when `text` is set.
struct TimelineArg {
  std::string_view key;
  int64_t i = 0;
  std::string_view s;
  bool text = false;
  static TimelineArg number(std::string_view key, int64_t v) { return {key, v, {}, false}; }
  static TimelineArg string(std::string_view key, std::string_view v) { return {key, 0, v, true}; }
};

// One end of a flow: a slice's track (rank, tid) and start (aligned ns).
struct TimelineFlowEnd {
  int64_t rank = -1, tid = 0;
  Ns ts = 0;
};

// A collective matched across ranks: its flow through every selected rank's activity, ranks in
// ascending order.
struct TimelineCollective {
  std::string name;  // "all_gather #3", with " (group G)" for a named group
  std::vector<TimelineFlowEnd> members;
};

// The encoder of a timeline. Times are aligned ns (the rank's clock minus its offset); tracks are
// (rank, tid): tid 0 the hierarchy, 10.. the GPU streams, 1000000 + k the host threads. Calls come
// rank by rank: process, thread (any time within the rank), slice, launch (right after its GPU
// activity's slice), counter, end_rank; collectives are given before the first rank and again,
// each with its flow id, after the last.
class TimelineSink {
 public:
  virtual ~TimelineSink() = default;
  // base_ns: the aligned time that the JSON's ts 0 is; offsets: each rank's clock offset.
  virtual void begin(Ns base_ns, const std::vector<std::pair<int64_t, Ns>>& offsets,
                     const std::vector<TimelineCollective>& collectives) = 0;
  virtual void process(int64_t rank, std::string_view name) = 0;
  virtual void thread(int64_t rank, int64_t tid, std::string_view name) = 0;
  virtual void slice(int64_t rank, int64_t tid, Ns ts, Ns dur, std::string_view name,
                     std::string_view category, std::span<const TimelineArg> args) = 0;
  // A launch flow (id, unique in the file) from the host call starting at host_ts on host_tid to
  // the GPU activity of the slice just given.
  virtual void launch(int64_t rank, uint64_t id, int64_t host_tid, Ns host_ts, int64_t gpu_tid,
                      Ns gpu_ts) = 0;
  virtual void counter(int64_t rank, std::string_view name, Ns ts, double value) = 0;
  virtual void end_rank(int64_t rank) = 0;
  virtual void collective(uint64_t id, const TimelineCollective& c) = 0;
  virtual void end() = 0;
};

// The Chrome-trace JSON encoder, writing to `out`.
std::unique_ptr<TimelineSink> json_timeline_sink(OutputFile& out);

// One rank of a timeline: its slot (the labelled trace) and its aligned telemetry (may be null).
struct TimelineRank {
  const RankSlot* slot = nullptr;
  const RankHardware* hw = nullptr;
};

// Writes the timeline of `ranks` (labelled, in the run's order) to `sink`. `ra` gives the clock
// offsets and the matched collectives.
TimelineStats write_timeline(const std::vector<TimelineRank>& ranks, const RunAnalysis& ra,
                             const TimelineOptions& o, TimelineSink& sink);

// The ranks of a loaded run, with their telemetry from `hw` (may be null).
std::vector<TimelineRank> timeline_ranks(const Run& run, const HardwareRun* hw);

// The Chrome-trace JSON timeline of `run` (labelled) to `out`; `hw` (may be null) the aligned
// telemetry.
TimelineStats write_timeline(const Run& run, const RunAnalysis& ra, const HardwareRun* hw,
                             const TimelineOptions& o, OutputFile& out);

// The size of a JSON timeline (uncompressed bytes) above which Perfetto's JSON import struggles
// (docs/formats.md, Timeline): the UI parses the trace in the browser, whose memory is typically
// limited to 2 GB at run time, with the trace held at several times its file size (2-4x for
// protobuf, more for JSON); JSON files of 900 MB crash it (google/perfetto#99), and
// chrome://tracing stops at 256 MB (google/trace-viewer#627).
inline constexpr uint64_t kJsonTimelineLimitBytes = 256ull << 20;  // 256 MiB

// What to say of a JSON timeline of `bytes` (uncompressed): "" up to kJsonTimelineLimitBytes; past
// it, a note (ending in a newline) that Perfetto's JSON import struggles at that size and that
// --format perfetto or fewer ranks (--ranks) or iterations (--iterations) make a file it loads.
std::string json_timeline_size_note(uint64_t bytes);

}  // namespace chopper
