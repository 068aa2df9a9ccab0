#pragma once
// Reader for PyTorch-profiler (Kineto) / Chrome-trace JSON: object form {"traceEvents": [...], ...}
// and array form [...]; plain, gzip or zstd, detected from the content. The file is streamed: the
// decompressed text passes through a window of a few MiB, each event is parsed in one pass straight
// from it, and only the columns chopper uses are kept (docs/formats.md).
#include <string>

#include "chopper/base/input.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

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
};

// Throws InputError (file + byte offset) when the file cannot be read as a trace at all: empty,
// not JSON, truncated, corrupt compression, larger than the decompressed-size cap, or memory ran
// out while reading it. Anything smaller goes to RankTrace::diagnostics.
RankTrace read_kineto(ByteSource& src, const KinetoReadOptions& opt = {});
RankTrace read_kineto_file(const std::string& path, const KinetoReadOptions& opt = {});

}  // namespace chopper
