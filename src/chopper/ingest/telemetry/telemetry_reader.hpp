#pragma once
// GPU telemetry readers: nvidia-smi --query-gpu CSV, amd-smi metric/monitor CSV and JSON, rocm-smi
// CSV, dcgmi dmon text, the headerless `t,value` CSVs of Zeus/NVML samplers (CharLLM-PPT) and the
// GPU file of `chopper record` (ingest/record/record_gpu.hpp). The
// format is found from the content (the first 4 KiB, decompressed), never from the file name,
// except for Zeus files, whose metric and GPU are only in the name. See docs/telemetry_formats.md
// for what is read from each format, field by field.
//
// Common rules, all formats:
// - One Series per (GPU, metric), values converted to the unit the Metric names (mW -> W, GHz ->
//   MHz, mJ/uJ -> J, KiB -> bytes), sorted by time.
// - Bad rows and values never abort: N/A / [Not Supported] / [Unknown Error] values, short rows,
//   bad timestamps, unknown units are skipped and counted in TelemetryData::diagnostics by kind,
//   with examples "line N: ...". Fields that are not read are listed once ("unused_field").
// - A last line without its end-of-line is a truncated write: it is dropped and counted
//   ("truncated_line"); every complete row before it is kept.
// - Time going back by up to 1 s between two samples of one series is re-sorted and counted
//   ("out_of_order"). Time going back by more than 1 s is a clock reset ("clock_reset"): the
//   samples from there on go into a new Series for the same GPU and metric, after the first one in
//   `series` (file order), so a file can hold several series of one (GPU, metric), each on its own
//   ascending clock, none of them mixed with the other's.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopper/base/input.hpp"
#include "chopper/model/series.hpp"
#include "chopper/model/telemetry_window.hpp"

namespace chopper {

// Reading with a TelemetryWindow (model/telemetry_window.hpp: the rows of interest, which
// link/hardware_align.hpp's telemetry_window() computes from a run). A profile covers
// seconds of a job that telemetry records for hours; with a window, a file whose rows ascend in
// time is read only where its rows fall in a range, widened by max(pad_ns, pad_periods × the
// sample interval), plus its first and last rows (those within that widening of the first and
// last row's time, and at least 64 lines at each end), so that the recording's extent stays known.
// The rows left out are counted, never dropped silently: diagnostic "rows_outside_window", with
// where they were and their times.
// - A plain file is searched by binary search on its rows' timestamps (mapped, parsed where it
//   lies), after probes spread over it found them ascending; the skipped rows are counted from
//   their bytes (estimated: bytes / the mean row length read).
// - A compressed file (read_telemetry_file only) is decompressed whole, but of the rows outside
//   the ranges only the time is read (so time going back is seen anywhere); they are counted
//   exactly.
// - Read whole: files smaller than min_file_bytes; formats and clocks with no ranges here
//   (relative and monotonic time, dcgmi, rocm-smi, amd-smi JSON, Zeus); and whenever the file does
//   not allow a windowed read to give the rows a whole read gives there: time going back (a clock
//   reset or rows out of order) among the rows or probes read, a header that changes, a bad row
//   or timestamp among the rows read, or sampling too slow for the widening (then the read is
//   tried once more, widened for the interval the rows showed).
// Not seen by a windowed read of a plain file: a step back of its clock (or a new header with as
// many fields) between two probes that no probe or row read shows. What it gives differs from a
// whole read only outside the ranges: which rows, TelemetryData::samples, the diagnostics of rows
// not read. See docs/telemetry_formats.md, "Reading only the rows a run can use".
struct TelemetryReadOptions {
  // Sampling interval of formats that print no time (dcgmi dmon; rocm-smi and amd-smi output with
  // no timestamp column): snapshot k is put at k * this, ClockDomain::kRelative.
  int64_t dcgmi_interval_ms = 1000;
  // Rows of interest; empty: every row is read.
  TelemetryWindow window;
};

// Which telemetry format the first bytes (up to 4 KiB, decompressed) look like: "nvidia-smi",
// "amd-smi", "rocm-smi", "dcgmi", "zeus", "chopper-record"; "" if none. `file_name` is only used
// for Zeus files (headerless `t,value` rows), which are telemetry only when the name says metric
// and GPU.
std::string_view sniff_telemetry(std::string_view head, std::string_view file_name);

// Reads one file. Throws NotATraceError if it is not telemetry; InputError naming the file and the
// byte offset (of the decompressed text), with "line N: ..." in the reason, if it cannot be read
// at all (a header only, no known field, no time column). Bad rows are counted, never fatal.
// Examples of a windowed read of a plain file say "byte N" where line numbers are not known.
// read_telemetry windows only plain (mappable) input; read_telemetry_file compressed files too.
TelemetryData read_telemetry(ByteSource& src, const TelemetryReadOptions& o = {});
TelemetryData read_telemetry_file(const std::string& path, const TelemetryReadOptions& o = {});

}  // namespace chopper
