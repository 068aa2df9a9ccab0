#pragma once
// Internals shared by the telemetry readers (one .cpp per format): the series builder that groups
// samples per (GPU, metric), sorts them and splits at clock resets; unit conversion; the
// per-format entry points that telemetry_reader.cpp dispatches to.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "chopper/ingest/telemetry/csv.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"

namespace chopper::telemetry {

// The plausible range of each metric (docs/telemetry_formats.md, "Limits and ranges"): a sample
// outside it is dropped and counted ("telemetry_out_of_range"). Power is per GPU.
inline constexpr double kMaxPowerW = 5000;
inline constexpr double kMaxClockMhz = 10000;
inline constexpr double kMinTempC = -50, kMaxTempC = 200;
inline constexpr double kMaxCumulative = 1e18;  // energy (J) and link counters (bytes)
// An energy counter may not rise faster than kMaxPowerW: a rise beyond it (plus this slack, for
// the counters' rounding) between two samples drops the later sample.
inline constexpr double kEnergySlackJ = 1;
struct MetricRange {
  double lo, hi;
};
MetricRange metric_range(Metric m);

// An amd-smi JSON file is one document (or a few), read whole: up to this many bytes
// (decompressed), its lines too (kMaxRowBytes, csv.hpp, is every other format's row limit).
inline constexpr size_t kMaxJsonBytes = size_t{256} << 20;

// Collects samples into TelemetryData::series.
class SeriesBuilder {
 public:
  explicit SeriesBuilder(TelemetryData& d) : d_(d) {}
  // The series of (gpu, metric, source), created on first use.
  size_t series(const GpuRef& gpu, Metric m, std::string_view source, ClockDomain clock);
  // The same, remembered per `slot` (the reader's column) and GPU index, and checked against
  // what is asked: a row's values find their series without building a key.
  size_t series(size_t slot, const GpuRef& gpu, Metric m, std::string_view source,
                ClockDomain clock);
  // One sample read on line `line` (NaN and infinities are counted as bad values, not stored).
  void add(size_t s, Ns t, double v, uint64_t line);
  // Sorts each series by time, counting out-of-order samples; splits at clock resets (time back by
  // more than 1 s): see telemetry_reader.hpp.
  void finish();

 private:
  // Drops the samples of an energy counter (sorted, one clock) that rise faster than kMaxPowerW;
  // `lines` (null: not known, the samples were re-sorted) are the series' sample lines, the
  // segment starting at `first`.
  void drop_energy_spikes(Series& s, const std::vector<uint64_t>* lines, size_t first);
  TelemetryData& d_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::vector<uint64_t>> lines_;  // per series, the line of each sample
  std::vector<std::vector<int64_t>> cache_;   // [slot][GPU index] -> series, -1 = none
};

// Converts `v` in `unit` (as written after the value or in the header; "" = `fallback_scale`) to
// the unit of `m`. False for a unit that does not fit the metric.
bool to_metric_unit(Metric m, std::string_view unit, double fallback_scale, double& v);

// Counts one row-level problem: kind, "line N: what".
void count(TelemetryData& d, DiagKind kind, uint64_t line, std::string_view what);
// The same, `what()` called only while examples are kept.
template <class F>
void count_with(TelemetryData& d, DiagKind kind, uint64_t line, F&& what) {
  d.diagnostics.add(kind, [&] { return where(line) + ": " + std::string(what()); });
}
// Lists a field that is not read, once per name.
void unused_field(TelemetryData& d, std::unordered_set<std::string>& seen, std::string_view name,
                  uint64_t line);
// Throws InputError for the reader's current line.
[[noreturn]] void fail(const LineReader& in, std::string_view what);

// Throttle reasons as text (amd-smi, our synthetic files): "NONE", "POWER", "THERMAL|PROCHOT", a
// number or hex mask. False if no word is known.
bool parse_throttle_text(std::string_view s, double& mask);

// Sniffing (telemetry_reader.cpp): the format name or "".
std::string_view sniff(std::string_view head, std::string_view file_name);
bool sniff_is_json(std::string_view head);
// Whether a CSV header (split) is one of these tools' (defined in their reader files).
bool nvidia_header(const std::vector<std::string_view>& fields);
bool amd_header(const std::vector<std::string_view>& fields);
bool rocm_header(const std::vector<std::string_view>& fields);

// Per-format readers; `in` is positioned at the start.
void read_nvidia_smi(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);
void read_amd_smi_csv(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);
void read_amd_smi_json(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);
void read_rocm_smi(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);
void read_dcgmi(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);
void read_zeus(LineReader& in, const TelemetryReadOptions& o, TelemetryData& d);

// Zeus file names: metric (and the scale from the file's unit to the metric's) and GPU. False if
// the name is not one of the accepted patterns (see zeus_csv.cpp). `supported` is false for a
// known Zeus metric that has no Metric (pcie_*_throughput rates, mem_power).
struct ZeusName {
  Metric metric = Metric::kPowerW;
  double scale = 1.0;
  int32_t gpu = -1;
  bool by_rank = false;  // the number is a global rank (`<stem>_<N>`, `_rank<N>`), not a GPU index
  bool supported = true;
  std::string stem;
};
bool parse_zeus_name(std::string_view file_name, ZeusName& out);

}  // namespace chopper::telemetry
