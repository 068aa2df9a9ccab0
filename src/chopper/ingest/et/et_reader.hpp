#pragma once
// Reader for PyTorch host execution traces (torch.profiler.ExecutionTraceObserver; docs/formats.md,
// "PyTorch host execution trace (ET)"): a JSON object {"schema", "pid", "time", "start_ts",
// "nodes": [...], "finish_ts"}, plain or gzip/zstd (found by content). Schemas 1.0.1 (flat node
// keys: parent, input_shapes, ..., attributes as keys) through 1.1.1-chakra.1.0.0 (inputs/outputs
// objects, attrs list), and the older execution_graph roots. The document is read whole (bounded
// by kMaxJsonDocumentBytes, ingest/json_document.hpp), each node once, into an ExecTrace.
#include <string>
#include <string_view>

#include "chopper/base/input.hpp"
#include "chopper/model/exec_trace.hpp"

namespace chopper {

// Throws InputError (file and byte offset) when the content is not a host ET (not JSON, no
// "nodes" array) or cannot be read at all; what it skips goes to ExecTrace::diagnostics.
ExecTrace read_host_et(ByteSource& src);
ExecTrace read_host_et_file(const std::string& path);

// What the first bytes of a file say: a JSON object with "schema" and "nodes" keys and no
// "traceEvents" (PyTorch writes schema, pid, time and start_ts before the nodes).
struct EtHead {
  bool is_et = false;
  std::string schema;
  int64_t pid = -1;
};
EtHead sniff_host_et_text(std::string_view head);
// Reads the first 4 KiB (decompressed) of `path`; not an ET when it cannot be read.
EtHead sniff_host_et_file(const std::string& path);

}  // namespace chopper
