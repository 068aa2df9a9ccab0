// libFuzzer target for the host execution trace reader (ingest/et) and its link to a Kineto trace
// (link/et_link.cpp). Any input must end in an ExecTrace whose columns agree in length and whose
// argument and tensor ranges lie inside their tables, linked without a crash to a small Kineto
// trace (rf_id 1 to 4), or in an InputError: never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/et/et_reader.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/link/et_link.hpp"
#include "chopper/link/link.hpp"

namespace {

chopper::RankTrace kineto() {
  static const std::string_view text =
      R"({"traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 9, "args": {"Record function id": 1}},
{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 2, "dur": 3, "args": {"Record function id": 2, "Input Dims": [[2], [2], []]}},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 20, "args": {"Record function id": 3}},
{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 11, "dur": 2, "args": {"Record function id": 4}}]})";
  auto src = chopper::ByteSource::from_memory(text, "kineto.json");
  chopper::RankTrace t = chopper::read_kineto(*src);
  chopper::link_trace(t);
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)chopper::sniff_host_et_text(bytes);
  try {
    auto src = chopper::ByteSource::from_memory(bytes, "fuzz_et.json");
    chopper::ExecTrace et = chopper::read_host_et(*src);
    const size_t n = et.size();
    if (et.name.size() != n || et.parent.size() != n || et.kind.size() != n ||
        et.rf_id.size() != n || et.seq_id.size() != n || et.fw_parent.size() != n ||
        et.tid.size() != n || et.scope.size() != n || et.op_schema.size() != n ||
        et.in_begin.size() != n || et.out_begin.size() != n || et.args_end.size() != n)
      std::abort();
    for (size_t i = 0; i < n; ++i)
      if (et.in_begin[i] > et.out_begin[i] || et.out_begin[i] > et.args_end[i] ||
          et.args_end[i] > et.args.size())
        std::abort();
    for (const chopper::EtArg& a : et.args)
      if (a.tensor_begin > a.tensor_end || a.tensor_end > et.arg_tensors.size()) std::abort();
    for (uint32_t k : et.arg_tensors)
      if (k >= et.tensors.size()) std::abort();
    chopper::RankTrace t = kineto();
    chopper::link_exec_trace(t, std::move(et));
    if (t.exec_trace->linked > t.exec_trace->with_counterpart ||
        t.exec_trace->with_counterpart > t.exec_trace->operator_nodes)
      std::abort();
  } catch (const chopper::InputError&) {
  }
  return 0;
}
