#pragma once
// Puts the hardware's side of a run on the trace clock (docs/architecture.md, "The data's way",
// step 3): each telemetry file is matched to the node whose ranks it describes and shifted onto
// that node's trace clock; each counter file is matched to its rank and its rows joined to the
// rank's GPU activities.
//
// Telemetry clock: the offset (telemetry clock − trace clock) starts from what the file says (UTC
// epoch: 0; a date with no zone: the whole quarter-hour zone offset that puts the trace inside the
// recording; monotonic or relative: unknown) and is then refined by cross-correlating the GPU busy
// share the trace implies for every sample's interval with the utilization (or power) the tool
// recorded, over every GPU of the file at once. docs/metrics.md ("Hardware alignment").
// Counters: joined by correlation id when one run recorded both, else by (kernel name, occurrence
// order) as Chopper does; the match rate and ambiguous matches are reported. A file is refused
// (method "none: …", no counter of it used) when its vendor is not the trace's, when the kernel
// names of the dispatches correlation ids pair agree below kNameAgreementMin, or when their times
// keep no one offset to the trace (docs/metrics.md, "Hardware alignment").
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "chopper/link/validate.hpp"
#include "chopper/model/recorded_cpu.hpp"
#include "chopper/model/run.hpp"
#include "chopper/model/series.hpp"
#include "chopper/model/telemetry_window.hpp"

namespace chopper {

struct HardwareAlignOptions {
  // The zone of telemetry stamped in local time, when the user knows it (hours east of UTC);
  // otherwise every quarter-hour zone that puts the trace inside the recording is tried.
  bool utc_offset_known = false;
  double utc_offset_h = 0;
};

// How one telemetry file was placed. A file that could not be placed has method "none: <why>"
// (not aligned: its offset and uncertainty mean nothing, its correlation is NaN).
struct TelemetryAlignment {
  std::string file;
  std::string format;
  int64_t node = -1;                          // node index (ranks node*gpus_per_node ...)
  std::vector<int64_t> ranks;                 // ranks whose GPU the file describes
  ClockDomain clock = ClockDomain::kUnknown;  // the file's own clock
  Ns offset_ns = 0;       // telemetry clock − trace clock (subtracted from every sample)
  Ns uncertainty_ns = 0;  // half-width of the offsets the correlation cannot tell apart
  Ns period_ns = 0;       // median sample interval of the file's own samples
  // Pearson r of busy share vs utilization (or the power fit's R) at the chosen offset, in
  // [-1, 1]; NaN when nothing could be compared (not aligned, or no sample varied).
  double correlation = std::nan("");
  std::string method;  // "utc+correlation", "zone+correlation", "correlation", "recorder clock",
                       // "none: ..."
  uint64_t samples = 0;
  bool aligned() const { return method.rfind("none", 0) != 0; }
};

// How one counter file was joined.
struct CounterJoin {
  std::string file;
  int64_t rank = -1;
  uint64_t dispatches = 0, matched = 0, ambiguous = 0;
  std::string method;  // "correlation id", "kernel name + order", "none: ..." (refused)
  Ns offset_ns = 0;    // counter clock − trace clock (median over matched dispatches)
  // Of the dispatches the join paired with a kernel (for a refused file: the pairing it tried),
  // the share whose kernel names agree (kernel_names_agree); NaN when none was paired.
  double name_match_rate = std::nan("");
  // Joined by correlation id: the counters were recorded in the traced run itself. Otherwise they
  // come from a separate pass (a replay: CUPTI's range profiler, rocprofv3 in another run), whose
  // cycle counts were taken at that pass's clocks, not the traced ones.
  bool same_run = false;
};

// The union of a rank's GPU activity as sorted, disjoint intervals with a running sum, so the busy
// time in any window costs two binary searches.
class BusyTime {
 public:
  enum Which { kAll, kCompute, kOther };
  BusyTime() = default;
  explicit BusyTime(const GpuActivities& g, Which which = kAll);
  // From intervals as intervals() gives them (sorted, disjoint).
  BusyTime(std::vector<Ns> start, std::vector<Ns> end);
  bool empty() const { return start_.empty(); }
  Ns first() const { return start_.front(); }
  Ns last() const { return end_.back(); }
  // |busy ∩ [lo, hi)|
  Ns in(Ns lo, Ns hi) const {
    if (hi <= lo || start_.empty()) return 0;
    return upto(hi) - upto(lo);
  }
  const std::vector<Ns>& starts() const { return start_; }
  const std::vector<Ns>& ends() const { return end_; }

 private:
  void sum();
  Ns upto(Ns t) const;  // |busy ∩ (-inf, t)|
  std::vector<Ns> start_, end_, cum_;
};

// What the alignment needs of one rank's trace, kept without its events (analyze streams ranks:
// pipeline/ computes this for every rank before the analyses, and frees the trace).
struct RankActivity {
  bool ok = false;  // a readable trace (otherwise only `rank` is set)
  int64_t rank = -1;
  int32_t device = -1;            // the most common device of its activities
  int64_t devices = 0;            // devices its metadata lists
  BusyTime busy, compute, other;  // all GPU activity; compute kernels; the rest
  std::vector<int64_t> pids;      // process ids of its threads, in first-seen order
  Ns gpu_first_ns = std::numeric_limits<Ns>::max();  // activities that are not syncs, dur > 0
  Ns gpu_last_ns = std::numeric_limits<Ns>::min();
};
RankActivity rank_activity(const RankTrace& t, int64_t rank);
// The device most of a rank's GPU activities ran on (-1: none).
int32_t main_device(const GpuActivities& g);

// The hardware data of one rank, on its trace clock.
struct RankHardware {
  int64_t rank = -1;
  int32_t device = -1;                      // local GPU index
  std::array<Series, kMetricCount> series;  // by Metric; empty when not recorded
  int telemetry_file = -1;                  // index into HardwareRun::telemetry
  // Counters: the rank's table and, per GPU activity row, its row there (-1 = none).
  const CounterTable* counters = nullptr;
  std::vector<int32_t> counter_row;
  bool counters_same_run = false;  // CounterJoin::same_run
  // `chopper record`'s CPU files of the rank's host (assign_recorded_cpu; null: none) and the
  // rank's process id there (-1: none of the trace's process ids is in the host's threads file).
  const RecordedCpu* cpu = nullptr;
  int64_t cpu_pid = -1;
  const Series& at(Metric m) const { return series[static_cast<size_t>(m)]; }
  bool has(Metric m) const { return !at(m).t_ns.empty(); }
};

struct HardwareRun {
  // Files that cannot be used together (two telemetry files claiming one node's GPUs): one line
  // each, naming the files, for the caller to print as it prints unreadable files (exit status 1).
  std::vector<std::string> errors;
  // Hardware files that could not be read: (file, the reader's message), for the diagnostics
  // table (hardware_use_diagnostics); the caller prints them when it reads them.
  std::vector<std::pair<std::string, std::string>> unreadable;
  std::vector<TelemetryData> telemetry_data;
  std::vector<CounterTable> counter_data;
  std::vector<TelemetryAlignment> telemetry;  // parallel to telemetry_data
  std::vector<CounterJoin> counters;          // parallel to counter_data
  std::vector<RankHardware> ranks;            // parallel to Run::ranks
  std::vector<RecordedCpu> cpu_data;          // `chopper record`'s CPU files, by host
  bool empty() const { return telemetry_data.empty() && counter_data.empty(); }
};

// Matches, aligns and joins. Takes the files' contents; never throws on their contents (what
// cannot be placed is reported in the alignment rows). The steps below, for a run in memory.
HardwareRun align_hardware(const Run& run, std::vector<TelemetryData> telemetry,
                           std::vector<CounterTable> counters, const HardwareAlignOptions& o = {});

// Telemetry: each file matched to its node and put on the node's trace clock; hw.ranks parallel
// to `ranks` with their GPU's series (counter_data and counters left empty).
HardwareRun align_telemetry(const std::vector<RankActivity>& ranks,
                            std::vector<TelemetryData> telemetry,
                            const HardwareAlignOptions& o = {});
// Counter files to ranks: the rank the file says (a Kineto counter pass's distributedInfo), else
// its file name's, else a process id of the rank's trace, else the only rank. Returns, per file,
// the index into `ranks` (SIZE_MAX = none, or the rank already has a file: the reason is in
// joins[f].method); fills joins[f]'s file, dispatches and rank.
std::vector<size_t> assign_counter_files(const std::vector<RankActivity>& ranks,
                                         const std::vector<CounterTable>& counters,
                                         std::vector<CounterJoin>& joins);
// The rank (index into `ranks`) one counter file belongs to by those rules, whether or not an
// earlier file claimed it (SIZE_MAX: none).
size_t counter_file_slot(const std::vector<RankActivity>& ranks, const CounterTable& ct);
// Joins a rank's counter file to its GPU activities: by correlation id when at least half the
// dispatches match one and at least kNameAgreementMin of those agree on the kernel name, with
// one offset (same_run), else by kernel name and occurrence order; fills j and rh (rh.counters
// points at ct). Refuses the file (j.method "none: …", rh.counters null) when its vendor is not
// the trace's, or when neither join pairs a dispatch.
void join_counters(const RankTrace& t, const CounterTable& ct, CounterJoin& j, RankHardware& rh);
// The share of correlation-id pairs whose kernel names must agree for the join (docs/metrics.md).
inline constexpr double kNameAgreementMin = 0.9;
// A correlation-id join's dispatch times: at least kTimeAgreementMin of the timed pairs must lie
// within kTimeToleranceNs of the median offset (one clock, one run).
inline constexpr double kTimeAgreementMin = 0.9;
inline constexpr Ns kTimeToleranceNs = 1000000;
// Whether two kernel names name one kernel: equal, or equal once a leading "void ", the argument
// list and the template arguments are dropped (rocprofv3 --truncate-kernels, Kineto's demangled
// names).
bool kernel_names_agree(std::string_view a, std::string_view b);
// "nvidia", "amd" or "" (unknown): of a trace (ROCm runtime calls or versions, CUDA's, the
// devices' names) and of a counter file (rocprofv3 and Chopper's CSVs are AMD's, a CUPTI pass is
// NVIDIA's).
std::string_view trace_vendor(const RankTrace& t);
std::string_view counter_vendor(const CounterTable& ct);

// `chopper record`'s CPU files (`cpu`, kept in hw.cpu_data) to ranks (link/cpu_match.cpp): a
// rank runs on the host whose threads file holds one of its trace's process ids as a pid (that
// pid is the rank's process: RankHardware::cpu_pid); with one host and no such pid, on that host,
// its process unknown. hw.ranks must be parallel to `ranks` (the Run form reads the process ids
// from the traces).
void assign_recorded_cpu(std::vector<RecordedCpu> cpu, const std::vector<RankActivity>& ranks,
                         HardwareRun& hw);
void assign_recorded_cpu(std::vector<RecordedCpu> cpu, const Run& run, HardwareRun& hw);
// The diagnostics table's rows of the CPU files' readers (stage "read", one per file and kind).
std::vector<DiagnosticRow> recorded_cpu_diagnostics(const HardwareRun& hw);

// The diagnostics table's rows for the hardware files that could not be used: a file that could
// not be read (hardware_file_unreadable, error), a telemetry file not aligned
// (telemetry_not_aligned, warning), two telemetry files for one node's GPUs (telemetry_conflict,
// error), a counter file refused (counter_file_refused, warning).
// HardwareRun::unreadable from a read's errors (HardwareFiles::errors and error_files).
void note_unreadable(HardwareRun& hw, const std::vector<std::string>& errors,
                     const std::vector<std::string>& files);
std::vector<DiagnosticRow> hardware_use_diagnostics(const HardwareRun& hw);

// The telemetry rows the alignment of this run can use, for reading only those
// (TelemetryWindow): on each clock a file may be stamped on, the traced span of every rank with
// its GPU activity, widened by the margin align_hardware keeps around it (the span, at least
// 1 s), at every offset align_hardware would try (UTC: 0; local time: every quarter-hour zone
// from -14 h to +14 h, or the one given), with the pad its refinement needs (its widest search:
// kFinePeriods sample periods, at least kFineMinNs, in telemetry_align.cpp). Relative and monotonic
// clocks get no ranges (their files are read whole).
// Aligning what a file read through this window holds gives the offsets, series and everything
// after them that the whole file gives, when the file's sample interval is as steady inside the
// window as outside it (the period is the median interval of the samples read). Empty when no
// rank has GPU activity.
TelemetryWindow telemetry_window(const Run& run, const HardwareAlignOptions& o = {});
TelemetryWindow telemetry_window(const std::vector<RankActivity>& ranks,
                                 const HardwareAlignOptions& o = {});

// Node number a telemetry file name gives ("node1.nvidia-smi.csv", "host-03_smi.csv"), or -1.
int64_t node_from_file_name(std::string_view path);

// Series helpers on a sorted series. Mean of the linear interpolation over [lo, hi] (the value
// at lo when hi <= lo; the nearest sample outside the series' span).
double mean_linear(const Series& s, Ns lo, Ns hi);
// Integral over [lo, hi] of the series read as "each sample holds over the interval that ends at
// it" (a power sample is the mean over its interval), in value × seconds. Time outside the
// samples' span takes the nearest sample.
double integral_hold(const Series& s, Ns lo, Ns hi);
// The value at time t as a backward hold (the first sample at or after t), NaN if none.
double hold_at(const Series& s, Ns t);

}  // namespace chopper
