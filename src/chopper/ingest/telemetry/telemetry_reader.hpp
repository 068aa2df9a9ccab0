#pragma once
// GPU telemetry readers: nvidia-smi --query-gpu CSV, amd-smi metric/monitor CSV and JSON, rocm-smi
// CSV, dcgmi dmon text and the headerless `t,value` CSVs of Zeus/NVML samplers (CharLLM-PPT). The
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

#include "chopper/base/input.hpp"
#include "chopper/model/series.hpp"

namespace chopper {

struct TelemetryReadOptions {
  // Sampling interval of formats that print no time (dcgmi dmon; rocm-smi and amd-smi output with
  // no timestamp column): snapshot k is put at k * this, ClockDomain::kRelative.
  int64_t dcgmi_interval_ms = 1000;
};

// Which telemetry format the first bytes (up to 4 KiB, decompressed) look like: "nvidia-smi",
// "amd-smi", "rocm-smi", "dcgmi", "zeus"; "" if none. `file_name` is only used for Zeus files
// (headerless `t,value` rows), which are telemetry only when the name says metric and GPU.
std::string_view sniff_telemetry(std::string_view head, std::string_view file_name);

// Reads one file. Throws NotATraceError if it is not telemetry; InputError naming the file and the
// byte offset (of the decompressed text), with "line N: ..." in the reason, if it cannot be read
// at all (a header only, no known field, no time column). Bad rows are counted, never fatal.
TelemetryData read_telemetry(ByteSource& src, const TelemetryReadOptions& o = {});
TelemetryData read_telemetry_file(const std::string& path, const TelemetryReadOptions& o = {});

}  // namespace chopper
