#include "chopper/pipeline/part_codec.hpp"

#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "chopper/base/bytes.hpp"
#include "chopper/base/error.hpp"
#include "chopper/pipeline/part_values.hpp"

namespace chopper {
namespace {

constexpr uint64_t kMagic = 0x3274726170706863ull;  // "chppart2"

// Every row struct of a partial, member by member (pipeline/part_values.hpp).
using part_values::Dec;
using part_values::Enc;

void enc_activity(ByteWriter& w, const RankActivity& a) {
  w.put(a.ok);
  w.put(a.rank);
  w.put(a.device);
  w.put(a.devices);
  for (const BusyTime* b : {&a.busy, &a.compute, &a.other}) {
    w.put_pod_vec(b->starts());
    w.put_pod_vec(b->ends());
  }
  w.put_pod_vec(a.pids);
  w.put(a.gpu_first_ns);
  w.put(a.gpu_last_ns);
}

void enc_analysis(ByteWriter& w, const RankAnalysis& r) {
  if (!r.idle.empty() || !r.launch.empty() || !r.queues.empty() || !r.kernel_hw.empty() ||
      !r.hw_levels.empty())
    throw Error("encode_parts: a partial still holds spooled rows");
  Enc e{w, r.names.get()};
  w.put(r.rank);
  w.put(r.ok);
  w.put<uint64_t>(r.names->size());
  for (StrId i = 1; i < r.names->size(); ++i) w.put_str(r.names->str(i));
  e.value(r.device_name);
  e.value(r.breakdown);
  e.value(r.exposed);
  e.value(r.ops);
  e.value(r.launch_prep_ns);
  e.value(r.launch_call_ns);
  e.value(r.launch_stats);
  e.value(r.idle_causes);
  e.value(r.kernels);
  e.value(r.operations);
  e.value(r.classes);
  e.value(r.colls);
  e.value(r.components);
  e.value(r.flops);
  e.value(r.gpu_time_ns);
  e.value(r.units);
  e.value(r.power);
  e.value(r.cpu);
  e.value(r.work);
  e.value(r.durations);
  e.value(r.counter_ops);
}

void enc_part(ByteWriter& w, const RankPart& p) {
  w.put<uint64_t>(p.file);
  w.put_str(p.not_trace);
  w.put(p.counter_pass);
  const RankSlot& s = p.slot;
  w.put_str(s.file);
  w.put(s.rank);
  w.put(s.ok);
  w.put_str(s.error);
  w.put(s.missing);
  w.put(s.first_ns);
  w.put(s.last_ns);
  w.put_str(s.trace.file);  // slot_shell keeps it
  w.put(s.trace.meta.rank);
  w.put(s.trace.meta.world_size);
  w.put_str(s.trace.meta.backend);
  w.put_str(s.trace.meta.rank_source);
  w.put(p.needs_rank);
  enc_activity(w, p.activity);
  w.put(p.analysed);
  enc_analysis(w, p.analysis);
  w.put_pod_vec(p.gpu_rows);
  Enc e{w};
  e.value(p.coverage);
  e.value(p.diagnostics);
  e.value(p.joins);
  w.put(p.process);
  w.put(p.spool);
  w.put(p.chunks);
}

// ---- decoding

void dec_activity(ByteReader& r, RankActivity& a) {
  r.get(a.ok);
  r.get(a.rank);
  r.get(a.device);
  r.get(a.devices);
  for (BusyTime* b : {&a.busy, &a.compute, &a.other}) {
    std::vector<Ns> s, e;
    r.get_pod_vec(s);
    r.get_pod_vec(e);
    *b = BusyTime(std::move(s), std::move(e));
  }
  r.get_pod_vec(a.pids);
  r.get(a.gpu_first_ns);
  r.get(a.gpu_last_ns);
}

void dec_analysis(ByteReader& r, RankAnalysis& a) {
  r.get(a.rank);
  r.get(a.ok);
  const auto nn = r.get<uint64_t>();
  for (uint64_t i = 1; i < nn; ++i) {
    const std::string s = r.get_str();
    if (a.names->intern(s) != i) throw Error("decode_parts: names out of order");
  }
  Dec d{r, a.names.get()};
  d.value(a.device_name);
  d.value(a.breakdown);
  d.value(a.exposed);
  d.value(a.ops);
  d.value(a.launch_prep_ns);
  d.value(a.launch_call_ns);
  d.value(a.launch_stats);
  d.value(a.idle_causes);
  d.value(a.kernels);
  d.value(a.operations);
  d.value(a.classes);
  d.value(a.colls);
  d.value(a.components);
  d.value(a.flops);
  d.value(a.gpu_time_ns);
  d.value(a.units);
  d.value(a.power);
  d.value(a.cpu);
  d.value(a.work);
  d.value(a.durations);
  d.value(a.counter_ops);
}

void dec_part(ByteReader& r, RankPart& p) {
  p.file = r.get<uint64_t>();
  p.not_trace = r.get_str();
  r.get(p.counter_pass);
  RankSlot& s = p.slot;
  s.file = r.get_str();
  r.get(s.rank);
  r.get(s.ok);
  s.error = r.get_str();
  r.get(s.missing);
  r.get(s.first_ns);
  r.get(s.last_ns);
  s.trace.file = r.get_str();
  r.get(s.trace.meta.rank);
  r.get(s.trace.meta.world_size);
  s.trace.meta.backend = r.get_str();
  s.trace.meta.rank_source = r.get_str();
  r.get(p.needs_rank);
  dec_activity(r, p.activity);
  r.get(p.analysed);
  dec_analysis(r, p.analysis);
  r.get_pod_vec(p.gpu_rows);
  Dec d{r};
  d.value(p.coverage);
  d.value(p.diagnostics);
  d.value(p.joins);
  r.get(p.process);
  r.get(p.spool);
  r.get(p.chunks);
}

}  // namespace

std::string encode_parts(const std::vector<RankPart>& parts) {
  ByteWriter w;
  w.put(kMagic);
  w.put<uint64_t>(parts.size());
  for (const RankPart& p : parts) enc_part(w, p);
  return w.take();
}

std::vector<RankPart> decode_parts(std::string_view bytes) {
  ByteReader r(bytes);
  if (r.get<uint64_t>() != kMagic) throw Error("decode_parts: not encoded parts");
  std::vector<RankPart> parts(r.get<uint64_t>());
  for (RankPart& p : parts) dec_part(r, p);
  if (!r.done()) throw Error("decode_parts: bytes left over");
  return parts;
}

}  // namespace chopper
