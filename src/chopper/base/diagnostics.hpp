#pragma once
// Anomalies in input, counted by kind with the first few examples. Nothing is dropped silently:
// every event a reader cannot use is counted here and shown by `chopper info` and `analyze`.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chopper/base/enum_names.hpp"

namespace chopper {

// How bad a problem is. error: the result would be wrong or partial (a file unread, files of two
// runs mixed); warning: the result holds, with less in it than the input (events skipped, ranks
// missing); info: worth knowing (the link rate, a file that is not a trace).
#define CHOPPER_SEVERITIES(X) \
  X(kError, "error")          \
  X(kWarning, "warning")      \
  X(kInfo, "info")
CHOPPER_ENUM(Severity, CHOPPER_SEVERITIES)
inline std::string_view severity_name(Severity s) {
  return enum_name(s);
}

// The run-level diagnostic kinds: what loading and validating a run (ingest/load, link/validate)
// find, declared once here with their severity and meaning. X(enumerator, name, severity, doc).
// The per-file kinds (readers, linking, labelling) are CHOPPER_FILE_DIAGNOSTICS below.
#define CHOPPER_RUN_DIAGNOSTICS(X)                                                               \
  X(kMissingPath, "missing_path", kError,                                                        \
    "a path named on the command line does not exist; the other paths are read")                 \
  X(kUnreadableFile, "unreadable_file", kError,                                                  \
    "a trace file (named, or found in a directory under a trace name) cannot be read; the "      \
    "example names the byte offset; the other ranks go on")                                      \
  X(kDuplicateRank, "duplicate_rank", kError,                                                    \
    "two or more files claim one rank (from distributedInfo or the file name)")                  \
  X(kWorldSizeMismatch, "world_size_mismatch", kError,                                           \
    "the files' distributedInfo.world_size differ")                                              \
  X(kRankOutOfRange, "rank_out_of_range", kError, "a rank at or above its file's world size")    \
  X(kDifferentRuns, "different_runs", kError,                                                    \
    "the files come from different runs: time spans far apart or differing distributed "         \
    "metadata (world size, backend); --split-runs analyses each run on its own")                 \
  X(kMissingRanks, "missing_ranks", kWarning,                                                    \
    "ranks below the world size that no file holds (a subset of ranks was profiled, or files "   \
    "are missing)")                                                                              \
  X(kRankAssigned, "rank_assigned", kWarning,                                                    \
    "a file says its rank neither in distributedInfo nor in its name: it got a unique id above " \
    "the known ranks and world size, in path order")                                             \
  X(kNotATrace, "not_a_trace", kInfo,                                                            \
    "a JSON file in a run directory that is not a trace (truth.json, rocprofv3 or amd-smi "      \
    "JSON, a CUPTI counter pass); skipped")                                                      \
  X(kRunSplit, "run_split", kInfo,                                                               \
    "--split-runs: the files were grouped into several runs; this is one of them")               \
  X(kGpuActivityUnlinked, "gpu_activity_unlinked", kInfo,                                        \
    "kernels, memcpys and memsets that reached no host op (count of of_count; 1 - count / "      \
    "of_count is the link rate)")

enum class RunDiag : uint8_t {
#define CHOPPER_X(e, name, sev, doc) e,
  CHOPPER_RUN_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
std::string_view run_diag_name(RunDiag k);
Severity run_diag_severity(RunDiag k);
std::string_view run_diag_doc(RunDiag k);
// Parses a name written by run_diag_name; false if it is not a run-level kind.
bool parse_run_diag(std::string_view name, RunDiag& k);
// Every kind, in declaration order.
std::span<const RunDiag> all_run_diags();

// Everything reading one file (the Kineto, telemetry and counter readers), linking and labelling
// its events and using its hardware data can count, declared once (as Perfetto's stats.h): X(
// enumerator, name, severity, doc). A Diagnostics (below) takes only these kinds, so a name not
// here does not compile. The severity is the one the `diagnostics` table gives the kind; the
// docs are docs/formats.md's table "Anomaly kinds", checked against this list by a test
// (tests/unit/test_diagnostic_kinds.cpp). A counter table also holds its kernel trace's kinds,
// prefixed `kernel_trace_` (warnings).
#define CHOPPER_FILE_DIAGNOSTICS(X)                                                                \
  /* Kineto JSON traces (ingest/kineto) */                                                         \
  X(kMissingTs, "missing_ts", kWarning, "an event without `ts`: skipped")                          \
  X(kInvalidTime, "invalid_time", kWarning, "a `ts` or `dur` that is not a number: skipped")       \
  X(kTimeOutOfRange, "time_out_of_range", kWarning,                                                \
    "a `ts` or `dur` too large for an int64 of ns: skipped")                                       \
  X(kMissingDur, "missing_dur", kWarning, "a complete event without `dur`: taken as 0")            \
  X(kNegativeDur, "negative_dur", kWarning, "a negative `dur`: taken as 0")                        \
  X(kMissingName, "missing_name", kWarning,                                                        \
    "an event of a read category without `name`: kept, with an empty name")                        \
  X(kSubNsTimeRounded, "sub_ns_time_rounded", kWarning,                                            \
    "a time with digits below 1 ns: rounded to the ns")                                            \
  X(kIntegerAboveInt64, "integer_above_int64", kWarning,                                           \
    "an integer arg above int64: the field is dropped, the event kept")                            \
  X(kInvalidInteger, "invalid_integer", kWarning,                                                  \
    "an integer arg that is not a valid integer: the field is dropped, the event kept")            \
  X(kInvalidUtf8, "invalid_utf8", kWarning,                                                        \
    "a kept string (or a JSON document) with invalid UTF-8: its bad bytes replaced by `?`")        \
  X(kInvalidEscape, "invalid_escape", kWarning, "an invalid escape in a string: kept as written")  \
  X(kMalformedEvent, "malformed_event", kWarning, "an event that is not valid JSON: skipped")      \
  X(kNonObjectEvent, "non_object_event", kWarning,                                                 \
    "an element of `traceEvents` that is not an object: skipped")                                  \
  X(kUnsupportedPhase, "unsupported_phase", kWarning,                                              \
    "an event whose `ph` chopper does not use: counted, not stored")                               \
  X(kFlowMissingFields, "flow_missing_fields", kWarning, "a flow event without ts or id: skipped") \
  X(kCompressionWarning, "compression_warning", kWarning,                                          \
    "what the gzip or zstd decoder warned of (e.g. data after the last frame)")                    \
  X(kMalformedMetadata, "malformed_metadata", kWarning,                                            \
    "a top-level value or metadata field chopper cannot use: ignored")                             \
  X(kUnreadDeviceCategory, "unread_device_category", kWarning,                                     \
    "complete events of a device-like category not read as GPU activities (one per category)")     \
  X(kTopLevelValueTooLarge, "top_level_value_too_large", kWarning,                                 \
    "a top-level value other than `traceEvents` above its limit: skipped")                         \
  X(kEventTooLarge, "event_too_large", kWarning, "an event above --max-event-mib: skipped")        \
  X(kTimeOverflow, "time_overflow", kWarning,                                                      \
    "an event whose start or end is beyond 2^62 ns of 1970: skipped")                              \
  X(kGpuActivityOutsideTrace, "gpu_activity_outside_trace", kWarning,                              \
    "a GPU activity with ts 0 in a trace whose times are far from 0, or more than 10 minutes "     \
    "outside its host events (CUPTI lost its time, e.g. in its counter mode): skipped")            \
  /* linking (link/link.cpp, link/classify.cpp) */                                                 \
  X(kRuntimeExternalIdNotEnclosing, "runtime_external_id_not_enclosing", kWarning,                 \
    "a runtime call whose External id names a host op that does not enclose it")                   \
  X(kGpuActivityWithoutRuntimeCall, "gpu_activity_without_runtime_call", kWarning,                 \
    "a GPU activity whose correlation id matches no runtime call")                                 \
  X(kGpuActivityWithoutHostOp, "gpu_activity_without_host_op", kWarning,                           \
    "a GPU activity that reached no host op")                                                      \
  X(kGpuExternalIdOpAfterGpuStart, "gpu_external_id_op_after_gpu_start", kWarning,                 \
    "a GPU activity whose External id op starts after the activity")                               \
  X(kHostExternalIdShared, "host_external_id_shared", kWarning,                                    \
    "host ops that share one External id")                                                         \
  X(kHostOpPartialOverlap, "host_op_partial_overlap", kWarning,                                    \
    "host ops of a thread that overlap without nesting")                                           \
  X(kCollectiveTypeUnknown, "collective_type_unknown", kWarning,                                   \
    "a communication kernel whose collective type is not known")                                   \
  /* labelling (hierarchy/label.cpp) */                                                            \
  X(kGpuActivityInStepSpanWithoutLaunch, "gpu_activity_in_step_span_without_launch", kWarning,     \
    "activities with no launch that gpu_step_span placed in a step")                               \
  X(kIterationSource, "iteration_source", kInfo,                                                   \
    "what the iteration windows are (ProfilerStep, a repeated annotation, ...): not an anomaly")   \
  /* JSON documents of the hardware readers (ingest/json_document.cpp) */                          \
  X(kJsonError, "json_error", kWarning, "a JSON document that does not parse: the rest skipped")   \
  X(kTruncatedJson, "truncated_json", kWarning, "a JSON document cut short: the rest skipped")     \
  /* telemetry (ingest/telemetry, docs/telemetry_formats.md) */                                    \
  X(kBadValue, "bad_value", kWarning, "a value that is not a number: sample skipped")              \
  X(kValueNotAvailable, "value_not_available", kWarning,                                           \
    "a value written N/A (or empty, NA, -): sample skipped")                                       \
  X(kValueNotSupported, "value_not_supported", kWarning,                                           \
    "a value written [Not Supported]: sample skipped")                                             \
  X(kValueError, "value_error", kWarning, "a value written [Unknown Error] or [...]: skipped")     \
  X(kUnknownUnit, "unknown_unit", kWarning, "a unit that does not fit the metric: skipped")        \
  X(kTruncatedLine, "truncated_line", kWarning,                                                    \
    "a last line without end of line (a cut write): dropped")                                      \
  X(kBadRow, "bad_row", kWarning,                                                                  \
    "a row with the wrong field count, a bad GPU id, or before a header: skipped")                 \
  X(kBadTimestamp, "bad_timestamp", kWarning, "a row whose time cannot be read: skipped")          \
  X(kTruncatedDocument, "truncated_document", kWarning,                                            \
    "a cut last amd-smi JSON document: dropped")                                                   \
  X(kUnsupportedEntity, "unsupported_entity", kInfo,                                               \
    "a dcgmi entity other than GPU (GPU-I, GPU-CI, ...): not read")                                \
  X(kFailedRead, "failed_read", kWarning, "Zeus's failed-read marker (-1): sample skipped")        \
  X(kUnsupportedMetric, "unsupported_metric", kInfo,                                               \
    "a Zeus file of a metric chopper has none for: no series")                                     \
  X(kTelemetryOutOfRange, "telemetry_out_of_range", kWarning,                                      \
    "a sample outside its metric's plausible range: dropped")                                      \
  X(kClockReset, "clock_reset", kWarning,                                                          \
    "time going back by more than 1 s: a new series from there on")                                \
  X(kOutOfOrder, "out_of_order", kWarning, "time going back by at most 1 s: re-sorted")            \
  X(kUnusedField, "unused_field", kInfo, "a field chopper does not read: listed once per name")    \
  X(kRowsOutsideWindow, "rows_outside_window", kInfo,                                              \
    "rows outside the traced window that a windowed read left out")                                \
  X(kRowTooLong, "row_too_long", kWarning, "a row (line) longer than 1 MiB: skipped")              \
  X(kContainer, "container", kWarning,                                                             \
    "what the gzip or zstd decoder of a telemetry file warned of")                                 \
  /* counters (ingest/rocprof, ingest/cupti, docs/counter_formats.md) */                           \
  X(kBadDuration, "bad_duration", kWarning, "a duration that is not a non-negative integer")       \
  X(kDurationMismatch, "duration_mismatch", kWarning, "end − start differs from the duration")     \
  X(kBadCorrelationId, "bad_correlation_id", kWarning, "a correlation id that is not an integer")  \
  X(kBadDispatchId, "bad_dispatch_id", kWarning, "a dispatch id that is not an integer")           \
  X(kMissingDispatchId, "missing_dispatch_id", kWarning,                                           \
    "a row with neither dispatch nor correlation id: skipped")                                     \
  X(kBadProcessId, "bad_process_id", kWarning, "a process id that is not an integer")              \
  X(kDuplicateDispatch, "duplicate_dispatch", kWarning, "a second row of one dispatch: skipped")   \
  X(kDispatchIdRepeated, "dispatch_id_repeated", kWarning,                                         \
    "a dispatch id given to two dispatches: the id's rows removed")                                \
  X(kBadAgentId, "bad_agent_id", kWarning, "an agent that is not a number or `word number`")       \
  X(kEndBeforeStart, "end_before_start", kWarning, "a dispatch that ends before it starts")        \
  X(kEmptyCounterName, "empty_counter_name", kWarning, "a counter row without a name: skipped")    \
  X(kEmptyCounterValue, "empty_counter_value", kWarning, "a counter row without a value: skipped") \
  X(kBadCounterValue, "bad_counter_value", kWarning, "a counter value that is not a number")       \
  X(kCounterRepeatedSummed, "counter_repeated_summed", kWarning,                                   \
    "a counter given twice for one dispatch: the values summed")                                   \
  X(kCounterOutOfRange, "counter_out_of_range", kWarning,                                          \
    "a counter value outside its plausible range: dropped")                                        \
  X(kContainerWarning, "container_warning", kWarning,                                              \
    "what the gzip or zstd decoder of a counter file warned of")                                   \
  X(kJoinUnmatched, "join_unmatched", kWarning,                                                    \
    "a counter row with no dispatch in the kernel trace")                                          \
  X(kJoinAmbiguous, "join_ambiguous", kWarning,                                                    \
    "the kernel trace holds the id twice: the first row used")                                     \
  X(kJoinKernelMismatch, "join_kernel_mismatch", kWarning,                                         \
    "the counter row's and the kernel trace's kernel names differ: the counter's kept")            \
  X(kNotAKernelDispatch, "not_a_kernel_dispatch", kWarning,                                        \
    "a kernel-trace row whose Kind is not KERNEL_DISPATCH: skipped")                               \
  X(kUnknownKernelId, "unknown_kernel_id", kWarning,                                               \
    "a dispatch of a kernel id not in kernel_symbols")                                             \
  X(kUnknownAgent, "unknown_agent", kWarning, "a dispatch of an agent not in agents")              \
  X(kUnknownCounterId, "unknown_counter_id", kWarning,                                             \
    "a counter id not in the counters list: named counter_ID")                                     \
  X(kRangeNotComplete, "range_not_complete", kWarning,                                             \
    "a CUPTI profiler range that is not a complete event: skipped")                                \
  X(kBadQuoting, "bad_quoting", kWarning, "a CSV row whose quotes do not close: skipped")          \
  X(kTruncatedLastLine, "truncated_last_line", kWarning,                                           \
    "a cut last CSV row (open quote or too few fields): skipped")                                  \
  X(kRepeatedHeader, "repeated_header", kWarning, "the CSV header again inside the file: skipped") \
  X(kBadFieldCount, "bad_field_count", kWarning,                                                   \
    "a CSV row with more or fewer fields than the header")                                         \
  X(kUnterminatedLastLine, "unterminated_last_line", kWarning,                                     \
    "a complete last CSV row without a final newline: kept, its last field may be cut")            \
  /* Nsight Systems SQLite exports (ingest/nsys, docs/formats.md) */                               \
  X(kNsysUnread, "nsys_unread", kInfo,                                                             \
    "a table, column or GPU metric of an Nsight Systems export that chopper does not read: "       \
    "listed once each, with its row count")                                                        \
  X(kNsysBadRow, "nsys_bad_row", kWarning,                                                         \
    "an Nsight Systems export row that cannot be used (end before start, no time): skipped")       \
  X(kNsysUnknownString, "nsys_unknown_string", kWarning,                                           \
    "a string id not in the export's StringIds: kept with an empty name")                          \
  X(kNsysRank, "nsys_rank", kInfo,                                                                 \
    "how an Nsight Systems export's process and device became this rank")                          \
  /* using the hardware files (link/hardware_align.cpp) */                                         \
  X(kHardwareFileUnreadable, "hardware_file_unreadable", kError,                                   \
    "a telemetry or counter file that cannot be read: the rest of the run is analysed")            \
  X(kTelemetryConflict, "telemetry_conflict", kError,                                              \
    "a telemetry file describes a node another file describes: not aligned")                       \
  X(kTelemetryNotAligned, "telemetry_not_aligned", kWarning,                                       \
    "a telemetry file no rank could be aligned with: not used")                                    \
  X(kCounterFileRefused, "counter_file_refused", kWarning,                                         \
    "a counter file whose dispatches could not be joined with the rank's kernels: not used")       \
  /* PyTorch host execution traces (ingest/et, link/et_link.cpp) */                                \
  X(kEtNodeSkipped, "et_node_skipped", kWarning,                                                   \
    "a host ET node that is not an object or has no integer id: skipped")                          \
  X(kEtValueSkipped, "et_value_skipped", kWarning,                                                 \
    "a host ET field of the wrong JSON type (inputs, attrs, a tensor tuple): the field skipped")   \
  X(kEtUnknownAttr, "et_unknown_attr", kInfo,                                                      \
    "a host ET attribute chopper does not read: counted, listed once per name and type")           \
  X(kEtWithoutRfId, "et_without_rf_id", kInfo,                                                     \
    "host ET operator nodes without rf_id: they cannot be linked to Kineto")                       \
  X(kEtUnreadable, "et_unreadable", kWarning,                                                      \
    "the rank's host ET could not be read: the rank is analysed without it")                       \
  X(kEtLink, "et_link", kInfo,                                                                     \
    "the host ET linked to the rank's Kineto host ops by rf_id: file and link rate")               \
  X(kEtNoCounterpart, "et_no_counterpart", kWarning,                                               \
    "a host ET none of whose operators has a Kineto host op of the same rf_id")                    \
  X(kEtNameMismatch, "et_name_mismatch", kWarning,                                                 \
    "a host ET node and the Kineto host op of its rf_id have different names: not linked")         \
  X(kFlopsFromEt, "flops_from_et", kInfo,                                                          \
    "host ops without Input Dims that take the host ET's shapes (their FLOPs and bytes)")

enum class FileDiag : uint8_t {
#define CHOPPER_X(e, name, sev, doc) e,
  CHOPPER_FILE_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
};
constexpr std::string_view file_diag_name(FileDiag k) {
  switch (k) {
#define CHOPPER_X(e, name, sev, doc) \
  case FileDiag::e:                  \
    return name;
    CHOPPER_FILE_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
  }
  return "";
}
Severity file_diag_severity(FileDiag k);
std::string_view file_diag_doc(FileDiag k);
// Parses a name written by file_diag_name; false if it is not a per-file kind.
bool parse_file_diag(std::string_view name, FileDiag& k);
// Every kind, in declaration order.
std::span<const FileDiag> all_file_diags();

// A kind as Diagnostics takes it: a FileDiag, or its name as a string literal, looked up when
// compiled (a name not in CHOPPER_FILE_DIAGNOSTICS is a compile error).
class DiagKind {
 public:
  constexpr DiagKind(FileDiag k) : k_(k) {}  // NOLINT(google-explicit-constructor)
  template <size_t N>
  consteval DiagKind(const char (&name)[N]) : k_(find(std::string_view(name, N - 1))) {}  // NOLINT
  constexpr FileDiag kind() const { return k_; }
  constexpr std::string_view name() const { return file_diag_name(k_); }

 private:
  static consteval FileDiag find(std::string_view name) {
#define CHOPPER_X(e, n, sev, doc) \
  if (name == n) return FileDiag::e;
    CHOPPER_FILE_DIAGNOSTICS(CHOPPER_X)
#undef CHOPPER_X
    throw "not a diagnostic kind: add it to CHOPPER_FILE_DIAGNOSTICS (base/diagnostics.hpp)";
  }
  FileDiag k_;
};

class Diagnostics {
 public:
  static constexpr size_t kMaxExamples = 3;

  struct Entry {
    std::string kind;
    uint64_t count = 0;
    std::vector<std::string> examples;
  };

  // Counts one anomaly of `kind`; `make_example()` (returning std::string) is called only while
  // fewer than kMaxExamples examples are stored, so the common path costs a hash lookup.
  template <class F>
  void add(DiagKind kind, F&& make_example) {
    add_named(kind.name(), make_example);
  }
  void add(DiagKind kind, std::string example) {
    add(kind, [&] { return std::move(example); });
  }
  void add_count(DiagKind kind, uint64_t n) { add_count_named(kind.name(), n); }
  // The same under `prefix` + the kind's name (a counter table's kernel-trace kinds).
  void add_prefixed(std::string_view prefix, DiagKind kind, std::string example);
  void add_count_prefixed(std::string_view prefix, DiagKind kind, uint64_t n);

  // Adds every entry of `other` (examples are kept up to kMaxExamples).
  void merge(const Diagnostics& other);

  const std::vector<Entry>& entries() const { return entries_; }
  uint64_t count(std::string_view kind) const;
  uint64_t total() const;
  bool empty() const { return entries_.empty(); }

 private:
  template <class F>
  void add_named(std::string_view kind, F&& make_example) {
    Entry& e = entry(kind);
    ++e.count;
    if (e.examples.size() < kMaxExamples) keep_example(e, make_example());
  }
  void add_count_named(std::string_view kind, uint64_t n);
  Entry& entry(std::string_view kind);
  // Stores an example, its invalid UTF-8 repaired (examples quote input text).
  static void keep_example(Entry& e, std::string example);
  std::vector<Entry> entries_;  // in order of first occurrence
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace chopper
