// libFuzzer target for the Kineto reader, linker and classifier, and for op_cost() on every host
// op's recorded shapes. The first byte picks the decompression window (tiny windows exercise
// events that straddle refills), --keep-python, whether plain input is parsed in place (as a
// mapped file is) or copied through the window, and a tiny event-size limit; the rest is the file.
// Any input must end in a RankTrace or an InputError: never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chopper/analysis/flops.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"
#include "chopper/link/link.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  chopper::KinetoReadOptions opt;
  opt.window_bytes = 16u + (static_cast<size_t>(data[0]) << 6);
  opt.keep_python = (data[0] & 1) != 0;
  opt.in_place = (data[0] & 2) != 0;
  // Bit 2: a tiny event limit, so that events larger than it take the streaming skip path.
  if ((data[0] & 4) != 0) opt.max_event_bytes = 32u + (static_cast<size_t>(data[0]) << 1);
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    auto src = chopper::ByteSource::from_memory(bytes, "fuzz.json");
    chopper::RankTrace t = chopper::read_kineto(*src, opt);
    chopper::link_trace(t);
    chopper::classify_trace(t);
    const chopper::HostOps& h = t.host;
    for (size_t i = 0; i < h.size(); ++i)
      (void)chopper::op_cost(t.strings.str(h.name[i]), t.strings.str(t.shapes_of(i).input_dims),
                             t.strings.str(t.shapes_of(i).input_types),
                             t.strings.str(t.shapes_of(i).concrete_inputs));
  } catch (const chopper::InputError&) {
  }
  return 0;
}
