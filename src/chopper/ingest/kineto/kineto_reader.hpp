#pragma once
// Reader for PyTorch-profiler (Kineto) / Chrome-trace JSON: object form {"traceEvents": [...], ...}
// and array form [...]; plain, gzip or zstd, detected from the content. The file is streamed: the
// decompressed text passes through a window of a few MiB, each event is parsed in one pass straight
// from it, and only the columns chopper uses are kept (docs/formats.md).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "chopper/base/enum_names.hpp"
#include "chopper/base/input.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct HostEtFiles;  // ingest/et/et_files.hpp

struct KinetoReadOptions {
  bool keep_python = false;       // keep python_function events as host ops
  size_t window_bytes = 1 << 20;  // initial decompression window (grows for huge events)
  // Plain files are parsed where they lie (mapped copy-on-write, ByteSource::map_in_place)
  // instead of being copied through read(2); false reads them through the window like compressed
  // input (tests compare the two).
  bool in_place = true;
  // An event (one element of traceEvents) whose JSON text is longer than this is skipped without
  // being held in memory, and counted (event_too_large): it bounds the memory one event, and so
  // any name, argument or string of it, can take. Real events are at most a few KiB.
  size_t max_event_bytes = size_t{16} << 20;
  // Two threads on one file (read_kineto_file only): a plain file of at least split_min_bytes,
  // mapped in place, is read by a second reader from an element of traceEvents near its middle
  // on while the first reads up to there; the first checks that the point is between two
  // elements and joins the two parts (trace_merge.hpp), else reads on alone. The RankTrace is the
  // one-thread one in every case. The pipeline sets `split` when a thread would otherwise idle.
  bool split = false;
  size_t split_min_bytes = size_t{32} << 20;
  // Tests: the second reader starts at this byte exactly (0: at the first `},{` from the middle),
  // and *split_joins (if set) counts the reads whose two parts were joined.
  uint64_t split_at = 0;
  uint64_t* split_joins = nullptr;
  // The run's host execution traces (null: none): pipeline/load.cpp links each rank's to it.
  std::shared_ptr<const HostEtFiles> host_et;
};

// Throws InputError (file + byte offset) when the file cannot be read as a trace at all: empty,
// not JSON, truncated, corrupt compression, larger than the decompressed-size cap, or memory ran
// out while reading it. Anything smaller goes to RankTrace::diagnostics.
RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt = {});
RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt = {});

// The parser is compiled for three x86-64 levels, and read_kineto runs the one chosen once per
// process: the fastest this CPU runs, or the one the environment variable CHOPPER_ISA names
// (baseline, v2 or v3; auto or empty: the fastest) for tests and benchmarks. A value that is not
// a level, or a level this CPU lacks, is reported once on stderr and the fastest used instead.
// Every level gives the same RankTrace. Elsewhere than on x86-64 there is only the baseline.
// kBaseline: x86-64: SSE2; kV2: x86-64-v2: SSSE3, SSE4.1 (and SSE4.2, POPCNT); kV3: x86-64-v3's
// AVX, AVX2, BMI1 and BMI2 (and v2's).
#define CHOPPER_KINETO_ISAS(X) \
  X(kBaseline, "baseline")     \
  X(kV2, "v2")                 \
  X(kV3, "v3")
CHOPPER_ENUM(KinetoIsa, CHOPPER_KINETO_ISAS)
inline constexpr KinetoIsa kKinetoIsas[] = {KinetoIsa::kBaseline, KinetoIsa::kV2, KinetoIsa::kV3};
inline std::string_view kineto_isa_name(KinetoIsa isa) {
  return enum_name(isa);
}
// Built in, and this CPU (and, for AVX, its OS) runs it.
bool kineto_isa_supported(KinetoIsa isa);
// The level for a CHOPPER_ISA value (null: unset): the one it names if this CPU runs it, else the
// fastest it runs; *warning (if given) says why the value was not followed, empty if it was.
KinetoIsa choose_kineto_isa(const char* forced, std::string* warning = nullptr);
// The level read_kineto runs: choose_kineto_isa(getenv("CHOPPER_ISA")), on first use.
KinetoIsa kineto_isa();
// read_kineto with the given level, which must be supported (else std::invalid_argument).
RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt, KinetoIsa isa);
// read_kineto_file with the given level.
RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt, KinetoIsa isa);

}  // namespace chopper
