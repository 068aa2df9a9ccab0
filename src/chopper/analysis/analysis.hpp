#pragma once
// Where the time goes: every analysis of a labelled run, each in three steps
// (docs/architecture.md, "Analyses: partial, merge, finalize"):
// a *partial* over one rank (analyze_rank, run in parallel), a *merge* of the partials, and a
// *finalize* that does the cross-rank work (collective matching, clock offsets, stragglers, the
// end-to-end view). Formulas, units and sources: docs/metrics.md.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/intervals.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

struct AnalysisOptions {
  unsigned threads = 0;                // 0 = all cores
  Ns kernel_wait_ns = 30000;           // HTA's consecutive_kernel_delay (30 µs)
  Ns runtime_cutoff_ns = 50000;        // HTA launch stats: CPU launch duration outlier
  Ns launch_delay_cutoff_ns = 100000;  // HTA launch stats: launch delay outlier
  int64_t queue_full = 1024;           // HTA: queue length at which launches block
  size_t top_n = 20;                   // kernel/operation breakdowns: rows before "others"
  int64_t tokens_per_step = 0;         // global tokens per iteration (0 = unknown)
  std::string device;                  // device-database key; "" = from the trace
  DType dtype = DType::kBf16;          // the matrix rate MFU is measured against
  bool align_clocks = true;            // apply the estimated clock offsets
};

// A label key: iteration (kNoId = none), phase, layer (-1 = none), operation (text). The
// operation's text is a view: into the names of the RankAnalysis the key came from (below), so a
// key lives as long as the analysis it belongs to. Millions of keys (one per operation instance
// and per launch row) share a few hundred names.
struct LabelKey {
  int64_t iteration = kNoId;
  Phase phase = Phase::kNone;
  int32_t layer = -1;
  std::string_view operation;
  auto operator<=>(const LabelKey&) const = default;
};

// Temporal breakdown of one rank over one window (an iteration, or the whole trace).
struct BreakdownRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;  // kNoId = the whole trace
  Ns start_ns = 0, total_ns = 0;
  Ns compute_ns = 0, non_compute_ns = 0, idle_ns = 0;
  Ns exposed_comm_ns = 0, exposed_memcpy_ns = 0;
  Ns comm_ns = 0, overlapped_comm_ns = 0, memcpy_ns = 0;
};

// Idle time of one stream by cause (HTA's idle_time_breakdown).
struct IdleRow {
  int64_t rank = -1;
  int32_t device = -1;
  int64_t stream = -1;
  int64_t iteration = kNoId;  // kNoId = the whole trace
  uint64_t gaps = 0;
  Ns host_wait_ns = 0, kernel_wait_ns = 0, other_ns = 0;
};

// Communication and its exposure per label (phase, layer, operation of the collectives).
struct ExposedRow {
  int64_t rank = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns comm_ns = 0;     // this label's share of the union of communication time
  Ns exposed_ns = 0;  // of which no compute ran
};

// One compute-operation instance on one rank (Chopper's (gpu, iteration, layer, op)).
struct OpInstance {
  int64_t rank = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns first_start_ns = 0, last_end_ns = 0;  // on this rank's clock
  Ns kernel_ns = 0;
  Ns comm_overlap_ns = 0;  // |[first, last) ∩ union(communication)|
  double flops = 0;
  Ns lead_ns = -1;  // finalize: max over ranks of first_start (aligned) − own; -1 if unmatched
};

// Launch overhead per label (Chopper's prep/call split, with waits on other GPU work removed).
// docs/metrics.md ("Launch overhead"): gap = gpu_wait + prep + call + wait + graph + no_launch.
struct LaunchRow {
  int64_t rank = -1;
  LabelKey key;
  uint64_t kernels = 0, gaps = 0;
  Ns gap_ns = 0;        // GPU idle before the kernel (between compute kernels)
  Ns gpu_wait_ns = 0;   // of which communication or copies ran (not launch overhead)
  Ns prep_ns = 0;       // of the rest: before the host issued the launch (host late)
  Ns call_ns = 0;       // of the rest: launch call start to kernel start (launch latency), up to
                        // the call's end + the launch-delay cutoff
  Ns wait_ns = 0;       // of the rest: later still (launched, GPU idle: an event, a sync)
  Ns graph_ns = 0;      // of the rest: before a kernel of a graph launch after its first kernel
                        // started (the GPU between the graph's kernels, not the host)
  Ns no_launch_ns = 0;  // of the rest: kernel with no launch in the trace (cannot split)
  Ns overhead_ns() const { return prep_ns + call_ns; }
};

// What the host was doing while the GPU sat idle waiting for it, per rank, iteration window and
// end-to-end component (launch.cpp; docs/metrics.md, "Idle causes"): the host-side pieces of the
// gaps between compute kernels, each given to the cause its host frames show.
struct IdleCauseRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  std::string cause;  // the end-to-end component: data_loading, host_sync, host_optimizer,
                      // host_stall, host_late or launch_overhead
  uint64_t gaps = 0;  // gaps between compute kernels with time of this cause in the window
  Ns idle_ns = 0;     // Σ of it: equals the component of the window
  Ns median_gap_ns = 0, max_gap_ns = 0;  // of the cause's time per gap
  // The host frames that cover it, largest first (at most 5): name, ns.
  std::vector<std::pair<std::string, Ns>> frames;
};

// HTA's launch statistics, per rank, one row per launch call: a graph launch is one launch (its
// call duration counted once), its delay to the first of its activities.
struct LaunchStats {
  int64_t rank = -1;
  uint64_t launches = 0;                              // launch calls with at least one GPU activity
  uint64_t activities = 0;                            // GPU activities with a launch call
  uint64_t graph_launches = 0, graph_activities = 0;  // of those: graph launches, their activities
  Ns cpu_mean_ns = 0, cpu_p50_ns = 0, cpu_p95_ns = 0, cpu_max_ns = 0;
  Ns delay_mean_ns = 0, delay_p50_ns = 0, delay_p95_ns = 0, delay_max_ns = 0;
  uint64_t short_kernels = 0, runtime_outliers = 0, delay_outliers = 0;
};

struct QueueRow {
  int64_t rank = -1;
  int32_t device = -1;
  int64_t stream = -1;
  uint64_t launches = 0;  // launch calls with an activity on the stream (a graph launch once)
  int64_t max_queue = 0;
  double mean_queue = 0;  // time-weighted, from the first launch to the last start
  Ns full_ns = 0;         // time with queue length >= queue_full
};

// Kernel / operation / class breakdown rows (rank -1 = all ranks).
struct NameStat {
  int64_t rank = -1;
  std::string name;   // kernel name, operation, or class; "others" = folded rest
  std::string group;  // gpu class (kernels), op class (operations)
  uint64_t count = 0;
  Ns total_ns = 0, min_ns = 0, max_ns = 0;
  double share = 0;  // of the rank's (or run's) GPU activity time
};

// One communication activity, ready to be matched across ranks.
struct CollRecord {
  int64_t rank = -1;
  std::string group;  // process group name, else its ranks, else "" (default group)
  int64_t index = 0;  // order within (rank, group)
  CollType type = CollType::kUnknown, called = CollType::kUnknown;
  Ns start_ns = 0, end_ns = 0;  // rank's clock
  int64_t bytes = -1;           // message size (NCCL convention), -1 unknown
  int64_t in_bytes = -1, out_bytes = -1;
  int64_t group_size = -1;
  std::string dtype, algorithm, protocol;
  LabelKey key;
};

// One collective matched across ranks, or (ranks = 1) one rank's collective when no other rank
// of its group was loaded.
struct CollectiveRow {
  std::string group;
  int64_t index = 0;
  CollType type = CollType::kUnknown, called = CollType::kUnknown;
  LabelKey key;  // from the lowest rank
  int64_t ranks = 0, group_size = -1;
  int64_t bytes = -1;
  std::string dtype, algorithm;
  Ns start_ns = 0;                          // earliest start (aligned)
  Ns latency_ns = 0;                        // min duration over ranks (TraceLens's comm_latency)
  Ns max_dur_ns = 0;                        // max duration over ranks
  Ns arrival_skew_ns = 0;                   // latest start − earliest start (-1: one rank)
  Ns end_skew_ns = 0;                       // latest end − earliest end (-1: one rank)
  int64_t last_rank = -1, first_rank = -1;  // arrived last / first
  double algbw_gbs = 0, busbw_gbs = 0;      // 0 when the size is unknown
  double imbalance = 0;                     // all-to-all(v): max/mean rank bytes; 0 otherwise
};

struct ClockOffset {
  int64_t rank = -1;
  int64_t reference_rank = -1;
  Ns offset_ns = 0;  // rank clock − reference clock; subtract to align
  uint64_t collectives = 0;
  Ns spread_ns = 0;  // median absolute deviation of the per-collective estimates
  bool applied = false;
};

struct StragglerRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  uint64_t op_instances = 0;
  Ns total_lead_ns = 0, mean_lead_ns = 0, max_lead_ns = 0;
  uint64_t collectives = 0, arrived_last = 0;
  Ns coll_wait_ns = 0;      // Σ (latest arrival − own arrival) over its collectives
  bool waited_for = false;  // the rank with the least total lead in this iteration
  // The straggler counterfactual (StragglerCost): this rank's exposed communication, and the part
  // of it spent waiting for the iteration's significant straggler (0 when there is none).
  Ns exposed_comm_ns = 0, straggler_wait_ns = 0;
};

// What a straggler costs one iteration: the time the iteration would save if the rank the others
// wait for ran like the median rank. In synchronous data parallelism every rank's step ends
// together, so each rank's step is its own work plus its waiting at collectives (exposed
// communication); the rank with the least waiting is the one the others wait for, and the step
// would shorten by the median rank's waiting minus its own. Significant when that exceeds both
// 3 robust σ of the ranks' waiting (1.4826 × MAD about the median) and 1% of the step.
// docs/metrics.md ("Stragglers").
struct StragglerCost {
  int64_t iteration = kNoId;
  int64_t rank = -1;  // the rank with the least exposed communication
  Ns cost_ns = 0;     // median − least exposed communication over the ranks
  Ns sigma_ns = 0;    // 1.4826 × MAD of the ranks' exposed communication
  Ns step_ns = 0;     // median step time of the ranks
  bool significant = false;
  // The rank's excess over the median rank, by what it spent longer on (they add up to about
  // cost_ns): compute (slower kernels) and the rest of its own time (host late, idle, copies).
  Ns excess_compute_ns = 0, excess_other_ns = 0;
};

// MFU is given only when the FLOPs of at least this share of the compute time are known.
inline constexpr double kMfuMinCoverage = 0.5;

// The rank an iteration's figures show, from its ranks' windows (rank, ns): the slowest rank when
// it is significantly slower than the others (its window − the others' median > max(3 × the
// others' robust σ, 1% of that median); robust σ = 1.4826 × MAD), else the lowest rank ("ranks
// equal within noise"). `significant` says which. docs/metrics.md, End to end.
int64_t rank_shown(const std::vector<std::pair<int64_t, Ns>>& windows, bool& significant);

// One iteration, end to end (time of the rank shown: the significantly slowest, else the lowest).
struct IterationRow {
  int64_t iteration = 0;
  int64_t ranks = 0;
  Ns time_ns = 0, min_time_ns = 0, mean_time_ns = 0, max_time_ns = 0;
  // The rank whose figures are shown (rank_shown): the slowest rank when slowest_significant,
  // else the lowest rank (ranks equal within noise).
  int64_t slowest_rank = -1;
  bool slowest_significant = false;
  int64_t tokens = 0;
  double tokens_per_s = 0, time_per_token_ns = 0;
  double flops = 0, tflops_per_gpu = 0;
  // Share of the compute operations' kernel time (all ranks) whose FLOPs are known.
  double flops_coverage = 0;
  double mfu = -1;  // -1 = no peak rate known, or flops_coverage < kMfuMinCoverage
  // Components of the slowest rank's iteration (they add up to time_ns).
  std::map<std::string, Ns> components;
  int64_t straggler_rank = -1;   // the significant straggler (StragglerCost), -1 = none
  Ns straggler_lead_ns = 0;      // Chopper's lead: mean lead of the others over the least-lead rank
  int64_t least_lead_rank = -1;  // the rank with the least total lead (Chopper's waited-for rank)
  StragglerCost straggler;       // the counterfactual, significant or not
};

// Hardware view of one GPU activity (kernel_hw): telemetry at its time and its counters. NaN =
// not recorded.
struct KernelHw {
  int32_t row = -1;  // GPU activity row of the rank
  double clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double power_w = std::numeric_limits<double>::quiet_NaN();
  double energy_j = std::numeric_limits<double>::quiet_NaN();
  double temp_c = std::numeric_limits<double>::quiet_NaN();
  // Counters (analysis/hardware.cpp, CounterMap): cycles at the clock run, matrix-unit busy
  // cycles, issued matrix FLOPs of the peak's dtype, CUDA-core FLOPs.
  double active_cycles = std::numeric_limits<double>::quiet_NaN();
  double matrix_busy_cycles = std::numeric_limits<double>::quiet_NaN();
  double matrix_flops = std::numeric_limits<double>::quiet_NaN();
  double vector_flops = std::numeric_limits<double>::quiet_NaN();
  // active_cycles ÷ duration, when the counters were taken in the traced run itself.
  double counter_clock_mhz = std::numeric_limits<double>::quiet_NaN();
};

// The waterfall of one compute kernel (Chopper's overhead breakdown, made additive): observed =
// theoretical + instruction + utilization + overlap + frequency + residual. docs/metrics.md.
struct WaterfallUnit {
  int32_t row = -1;
  LabelKey key;
  OpClass op_class = OpClass::kNone;
  std::string_view signature;  // kernel, operation, phase, FLOPs: instances of the same work
  Ns observed_ns = 0;
  double theoretical_ns = 0;  // FLOPs (or bytes) at peak rate and maximum clock
  double issued_ns = 0;       // issued matrix work at peak (counters), else = theoretical
  double active_ns = 0;       // the kernel's cycles at the maximum clock
  double overlap_share = 0;   // of its time, with communication running on the GPU
  bool compute_bound = true;
  bool theoretical_known = false, instruction_known = false, frequency_known = false;
  // finalize: the parts
  double instruction_ns = 0, utilization_ns = 0, overlap_ns = 0, frequency_ns = 0, residual_ns = 0;
  // The compute-loss split of utilization (docs/metrics.md, Waterfall): the work's shape class
  // (operation, input shapes and types; "" = cost unknown), its FLOPs and bytes (the op's, shared
  // by duration), the time at the achievable rate (partial: the roofline at the documented
  // achievable efficiencies; finalize: the better of that and the class's best in the run, never
  // below the run's shortest kernel), and the part of utilization beyond it (finalize).
  std::string_view shape_class;
  double flops = 0, bytes = 0;
  double achievable_ns = 0, below_achievable_ns = 0;
  bool overlap_known = false;
  bool overlap_estimated = false;  // no reference of its own: the run's slowdown rate applied
};

// Power and energy of one rank over an iteration window (phase "" = the whole window; "idle" =
// no GPU activity), from aligned telemetry.
struct PowerRow {
  int64_t rank = -1;
  int64_t iteration = kNoId;
  std::string phase;
  Ns time_ns = 0;
  double energy_j = 0;
  double peak_power_w = std::numeric_limits<double>::quiet_NaN();
  double mean_clock_mhz = std::numeric_limits<double>::quiet_NaN();
  double max_temp_c = std::numeric_limits<double>::quiet_NaN();
  double max_hotspot_c = std::numeric_limits<double>::quiet_NaN();
  double max_mem_temp_c = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, Ns> throttle_ns;                           // by reason name
  double busy_power_w = std::numeric_limits<double>::quiet_NaN();  // mean over busy samples
  double idle_power_w = std::numeric_limits<double>::quiet_NaN();  // mean over idle samples
  // Whole-window rows only (NaN elsewhere or when not recorded):
  double power_cv = std::numeric_limits<double>::quiet_NaN();           // σ / mean of the samples
  double max_dp_dt_w_per_s = std::numeric_limits<double>::quiet_NaN();  // largest |Δp| / Δt
  double max_clock_share = std::numeric_limits<double>::quiet_NaN();    // samples at ≥ 99% f_max
  double energy_counter_j = std::numeric_limits<double>::quiet_NaN();   // Δ of the energy counter
  double link_tx_bytes = std::numeric_limits<double>::quiet_NaN();      // Δ NVLink / XGMI sent
  double link_rx_bytes = std::numeric_limits<double>::quiet_NaN();
  double pcie_tx_bytes = std::numeric_limits<double>::quiet_NaN();
  double pcie_rx_bytes = std::numeric_limits<double>::quiet_NaN();
};

// Hardware view of one hierarchy node of one rank (hierarchy_hw): each moment of GPU time is
// given to the activity that started first and covers it (as the phase rows of PowerRow), and
// summed over the node's activities. level: "gpu", "iteration", "phase", "layer", "operation".
struct HwLevelRow {
  int64_t rank = -1;
  const char* level = "gpu";
  LabelKey key;
  Ns time_ns = 0;  // GPU time given to the node
  double energy_j = 0;
  double clock_mhz_ns = 0;  // ∫ clock dt over the time with clock samples
  Ns clock_ns = 0;
  double max_temp_c = std::numeric_limits<double>::quiet_NaN();
};

// Waterfall parts summed over a group (an operation instance, a phase of an iteration).
struct WaterfallRow {
  int64_t rank = -1;
  LabelKey key;  // operation "" = every operation of the phase; phase kNone = the iteration
  OpClass op_class = OpClass::kNone;
  uint64_t kernels = 0;
  Ns observed_ns = 0;
  double theoretical_ns = 0, instruction_ns = 0, utilization_ns = 0, overlap_ns = 0,
         frequency_ns = 0, residual_ns = 0;
  double below_achievable_ns = 0;  // of utilization_ns: beyond the achievable time (the loss)
  uint64_t unknown_theoretical = 0, unknown_instruction = 0, unknown_overlap = 0,
           unknown_frequency = 0;  // kernels whose part could not be measured
  uint64_t estimated_overlap = 0;  // of unknown_overlap: estimated with the run's slowdown rate
};

// Achievable efficiencies (docs/metrics.md, Waterfall): the share of the datasheet peak that tuned
// libraries reach on large, well-shaped work (cuBLAS/hipBLASLt GEMMs and flash attention 70–80% of
// the dense matrix peak, streaming kernels ~80% of HBM bandwidth), and half the vector peak.
inline constexpr double kAchievableMatrix = 0.75;
inline constexpr double kAchievableVector = 0.5;
inline constexpr double kAchievableBandwidth = 0.8;

// One shape class of compute work over the run (all ranks): what it achieves against its
// roofline, the best instances of the class and the achievable efficiency (docs/metrics.md,
// Waterfall).
struct ShapeClassRow {
  std::string shape_class;  // operation, input dims, input types
  std::string family;       // gemm, attention_fwd, ... (flops.hpp)
  bool compute_bound = true;
  uint64_t kernels = 0;
  double time_ns = 0;         // Σ solo time at the maximum clock (the waterfall's reference)
  double theoretical_ns = 0;  // Σ roofline time
  double achievable_ns = 0;   // Σ time at the achievable rate
  double below_achievable_ns = 0;
  double flops = 0, bytes = 0;
  double roofline_share = 0;       // theoretical_ns / time_ns
  double best_roofline_share = 0;  // p90 over the class's kernels of theoretical / reference
  // median over the class's kernels of theoretical / reference: what the work typically reaches
  // in this run (the class's achievable reference: docs/metrics.md, Waterfall)
  double median_roofline_share = 0;
};

// What an iteration would take (slowest rank), first order: one loss removed at a time.
struct WhatIfRow {
  int64_t iteration = 0;
  int64_t rank = -1;
  Ns observed_ns = 0;
  Ns max_clock_ns = -1;            // compute at the maximum clock (-1: clocks unknown)
  Ns perfect_overlap_ns = 0;       // no exposed communication
  Ns no_launch_gaps_ns = 0;        // no launch overhead
  Ns no_overlap_slowdown_ns = -1;  // compute not slowed by co-running communication
  Ns no_straggler_ns = 0;          // the straggler running like the median rank (StragglerCost)
};

// What one rank contributes (the partial).
struct RankAnalysis {
  int64_t rank = -1;
  bool ok = false;
  // The text of this rank's label keys (LabelKey::operation views it). Held by pointer, so the
  // views stay valid when the analysis moves.
  std::unique_ptr<StringTable> names = std::make_unique<StringTable>();
  std::string device_name;
  std::vector<BreakdownRow> breakdown;
  std::vector<IdleRow> idle;
  std::vector<ExposedRow> exposed;
  std::vector<OpInstance> ops;
  std::vector<LaunchRow> launch;
  Ns launch_prep_ns = 0, launch_call_ns = 0;  // Σ prep_ns and Σ call_ns of `launch`
  LaunchStats launch_stats;
  std::vector<IdleCauseRow> idle_causes;  // by iteration, cause
  std::vector<QueueRow> queues;
  std::vector<NameStat> kernels, operations, classes;  // full, unfolded
  std::vector<CollRecord> colls;
  // Per iteration window: the components (compute by phase.class, exposed comm, ...); after
  // finalize, exposed comm less the waiting for a significant straggler (straggler_wait).
  std::map<int64_t, std::map<std::string, Ns>> components;
  std::map<int64_t, double> flops;
  Ns gpu_time_ns = 0;
  // hardware.cpp (with telemetry or counters)
  std::vector<KernelHw> kernel_hw;
  std::vector<WaterfallUnit> units;
  std::vector<PowerRow> power;
  std::vector<HwLevelRow> hw_levels;
};

struct RunAnalysis {
  std::vector<RankAnalysis> ranks;
  std::vector<CollectiveRow> collectives;
  std::vector<ClockOffset> clock_offsets;
  std::vector<StragglerRow> stragglers;
  std::vector<IterationRow> iterations;
  std::vector<NameStat> kernels, operations, classes;  // folded to top_n, per rank and overall
  const DeviceSpec* device = nullptr;
  uint64_t unmatched_collectives = 0, mismatched_collectives = 0;
  // finalize_collectives -> finalize_stragglers: collective waits per (rank, iteration).
  std::map<std::pair<int64_t, int64_t>, StragglerRow> straggler_acc;
  // finalize_stragglers -> finalize_end_to_end: the counterfactual per iteration.
  std::map<int64_t, StragglerCost> straggler_cost;
  // hardware.cpp
  const HardwareRun* hardware = nullptr;
  std::vector<WaterfallRow> waterfall;       // per operation instance, per phase and per iteration
  std::vector<ShapeClassRow> shape_classes;  // by below_achievable_ns, largest first
  std::vector<WhatIfRow> what_if;
};

// The partial: one rank (must be labelled).
// `hw` (may be null): the rank's telemetry and counters, on its trace clock.
RankAnalysis analyze_rank(const RankTrace& t, int64_t rank, const AnalysisOptions& o,
                          const RankHardware* hw = nullptr);
// Merge + finalize over every readable rank of a labelled run; `hw` (may be null) is the run's
// aligned hardware data (link/hardware_align.hpp), parallel to run.ranks.
RunAnalysis analyze_run(const Run& run, const AnalysisOptions& o, const HardwareRun* hw = nullptr);
RunAnalysis finalize(std::vector<RankAnalysis> partials, const AnalysisOptions& o,
                     const HardwareRun* hw = nullptr);

// NCCL's bus-bandwidth factor for a collective of n ranks (docs/metrics.md).
double busbw_factor(CollType t, int64_t n);
// Bytes per element of a PyTorch dtype name ("BFloat16", "Float", ...); 0 if unknown.
int dtype_size(std::string_view dtype);

}  // namespace chopper
