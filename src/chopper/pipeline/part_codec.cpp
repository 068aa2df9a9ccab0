#include "chopper/pipeline/part_codec.hpp"

#include "chopper/base/bytes.hpp"
#include "chopper/base/error.hpp"

namespace chopper {
namespace {

constexpr uint64_t kMagic = 0x3174726170706863ull;  // "chppart1"

// ---- encoding

struct Enc {
  ByteWriter& w;
  const StringTable* names = nullptr;  // the analysis's: label keys and signatures as ids

  void id(std::string_view s) {
    const StrId i = names->find(s);
    if (i == UINT32_MAX) throw Error("encode_parts: a label is not in its analysis's names");
    w.put<uint32_t>(i);
  }
  void key(const LabelKey& k) {
    w.put(k.iteration);
    w.put(k.phase);
    w.put(k.layer);
    id(k.operation);
  }
};

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
  w.put_str(r.device_name);
  w.put_pod_vec(r.breakdown);
  w.put<uint64_t>(r.exposed.size());
  for (const ExposedRow& x : r.exposed) {
    w.put(x.rank);
    e.key(x.key);
    w.put(x.op_class);
    w.put(x.kernels);
    w.put(x.comm_ns);
    w.put(x.exposed_ns);
  }
  w.put<uint64_t>(r.ops.size());
  for (const OpInstance& x : r.ops) {
    w.put(x.rank);
    e.key(x.key);
    w.put(x.op_class);
    w.put(x.kernels);
    w.put(x.first_start_ns);
    w.put(x.last_end_ns);
    w.put(x.kernel_ns);
    w.put(x.comm_overlap_ns);
    w.put(x.flops);
    w.put(x.lead_ns);
  }
  w.put(r.launch_prep_ns);
  w.put(r.launch_call_ns);
  w.put(r.launch_stats);
  w.put<uint64_t>(r.idle_causes.size());
  for (const IdleCauseRow& x : r.idle_causes) {
    w.put(x.rank);
    w.put(x.iteration);
    w.put_str(x.cause);
    w.put(x.gaps);
    w.put(x.idle_ns);
    w.put(x.median_gap_ns);
    w.put(x.max_gap_ns);
    w.put<uint64_t>(x.frames.size());
    for (const auto& [name, ns] : x.frames) {
      w.put_str(name);
      w.put(ns);
    }
  }
  for (const std::vector<NameStat>* v : {&r.kernels, &r.operations, &r.classes}) {
    w.put<uint64_t>(v->size());
    for (const NameStat& x : *v) {
      w.put(x.rank);
      w.put_str(x.name);
      w.put_str(x.group);
      w.put(x.count);
      w.put(x.total_ns);
      w.put(x.min_ns);
      w.put(x.max_ns);
      w.put(x.share);
    }
  }
  w.put<uint64_t>(r.colls.size());
  for (const CollRecord& x : r.colls) {
    w.put(x.rank);
    w.put_str(x.group);
    w.put(x.index);
    w.put(x.type);
    w.put(x.called);
    w.put(x.start_ns);
    w.put(x.end_ns);
    w.put(x.bytes);
    w.put(x.in_bytes);
    w.put(x.out_bytes);
    w.put(x.group_size);
    w.put_str(x.dtype);
    w.put_str(x.algorithm);
    w.put_str(x.protocol);
    e.key(x.key);
  }
  w.put<uint64_t>(r.components.size());
  for (const auto& [it, comp] : r.components) {
    w.put(it);
    w.put<uint64_t>(comp.size());
    for (const auto& [k, v] : comp) {
      w.put_str(k);
      w.put(v);
    }
  }
  w.put<uint64_t>(r.flops.size());
  for (const auto& [it, f] : r.flops) {
    w.put(it);
    w.put(f);
  }
  w.put(r.gpu_time_ns);
  w.put<uint64_t>(r.units.size());
  for (const WaterfallUnit& u : r.units) {
    w.put(u.row);
    e.key(u.key);
    w.put(u.op_class);
    e.id(u.signature);
    e.id(u.shape_class);
    w.put(u.observed_ns);
    for (double d : {u.theoretical_ns, u.issued_ns, u.active_ns, u.overlap_share, u.instruction_ns,
                     u.utilization_ns, u.overlap_ns, u.frequency_ns, u.residual_ns, u.flops,
                     u.bytes, u.achievable_ns, u.below_achievable_ns})
      w.put(d);
    for (bool b : {u.compute_bound, u.theoretical_known, u.instruction_known, u.frequency_known,
                   u.overlap_known, u.overlap_estimated})
      w.put(b);
  }
  w.put<uint64_t>(r.power.size());
  for (const PowerRow& p : r.power) {
    w.put(p.rank);
    w.put(p.iteration);
    w.put_str(p.phase);
    w.put(p.time_ns);
    for (double d : {p.energy_j, p.peak_power_w, p.mean_clock_mhz, p.max_temp_c, p.max_hotspot_c,
                     p.max_mem_temp_c, p.busy_power_w, p.idle_power_w, p.power_cv,
                     p.max_dp_dt_w_per_s, p.max_clock_share, p.energy_counter_j, p.link_tx_bytes,
                     p.link_rx_bytes, p.pcie_tx_bytes, p.pcie_rx_bytes})
      w.put(d);
    w.put<uint64_t>(p.throttle_ns.size());
    for (const auto& [k, v] : p.throttle_ns) {
      w.put_str(k);
      w.put(v);
    }
  }
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
  w.put<uint64_t>(p.coverage.size());
  for (const CoverageRow& c : p.coverage) {
    w.put(c.rank);
    w.put_str(c.level);
    w.put_str(c.scope);
    w.put_str(c.rule);
    w.put(c.activities);
    w.put(c.kernel_ns);
    w.put(c.scope_kernel_ns);
  }
  w.put<uint64_t>(p.diagnostics.size());
  for (const DiagnosticRow& d : p.diagnostics) {
    w.put(d.rank);
    w.put_str(d.file);
    w.put_str(d.kind);
    w.put(d.severity);
    w.put_str(d.stage);
    w.put(d.count);
    w.put(d.of_count);
    w.put_str(d.example);
    w.put(d.gpu_time_ns);
    w.put(d.rank_gpu_time_ns);
    w.put(d.share_of_gpu_time);
    w.put(d.share_of_events);
  }
  w.put<uint64_t>(p.joins.size());
  for (const auto& [c, j] : p.joins) {
    w.put<uint64_t>(c);
    w.put_str(j.file);
    w.put(j.rank);
    w.put(j.dispatches);
    w.put(j.matched);
    w.put(j.ambiguous);
    w.put_str(j.method);
    w.put(j.offset_ns);
    w.put(j.same_run);
    w.put(j.name_match_rate);
  }
  w.put(p.process);
  w.put(p.spool);
  w.put(p.chunks);
}

// ---- decoding

struct Dec {
  ByteReader& r;
  StringTable* names = nullptr;

  std::string_view id() {
    const auto i = r.get<uint32_t>();
    if (i >= names->size()) throw Error("decode_parts: a label id out of range");
    return names->str(i);
  }
  LabelKey key() {
    LabelKey k;
    r.get(k.iteration);
    r.get(k.phase);
    r.get(k.layer);
    k.operation = id();
    return k;
  }
};

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
  a.device_name = r.get_str();
  r.get_pod_vec(a.breakdown);
  a.exposed.resize(r.get<uint64_t>());
  for (ExposedRow& x : a.exposed) {
    r.get(x.rank);
    x.key = d.key();
    r.get(x.op_class);
    r.get(x.kernels);
    r.get(x.comm_ns);
    r.get(x.exposed_ns);
  }
  a.ops.resize(r.get<uint64_t>());
  for (OpInstance& x : a.ops) {
    r.get(x.rank);
    x.key = d.key();
    r.get(x.op_class);
    r.get(x.kernels);
    r.get(x.first_start_ns);
    r.get(x.last_end_ns);
    r.get(x.kernel_ns);
    r.get(x.comm_overlap_ns);
    r.get(x.flops);
    r.get(x.lead_ns);
  }
  r.get(a.launch_prep_ns);
  r.get(a.launch_call_ns);
  r.get(a.launch_stats);
  a.idle_causes.resize(r.get<uint64_t>());
  for (IdleCauseRow& x : a.idle_causes) {
    r.get(x.rank);
    r.get(x.iteration);
    x.cause = r.get_str();
    r.get(x.gaps);
    r.get(x.idle_ns);
    r.get(x.median_gap_ns);
    r.get(x.max_gap_ns);
    x.frames.resize(r.get<uint64_t>());
    for (auto& [name, ns] : x.frames) {
      name = r.get_str();
      r.get(ns);
    }
  }
  for (std::vector<NameStat>* v : {&a.kernels, &a.operations, &a.classes}) {
    v->resize(r.get<uint64_t>());
    for (NameStat& x : *v) {
      r.get(x.rank);
      x.name = r.get_str();
      x.group = r.get_str();
      r.get(x.count);
      r.get(x.total_ns);
      r.get(x.min_ns);
      r.get(x.max_ns);
      r.get(x.share);
    }
  }
  a.colls.resize(r.get<uint64_t>());
  for (CollRecord& x : a.colls) {
    r.get(x.rank);
    x.group = r.get_str();
    r.get(x.index);
    r.get(x.type);
    r.get(x.called);
    r.get(x.start_ns);
    r.get(x.end_ns);
    r.get(x.bytes);
    r.get(x.in_bytes);
    r.get(x.out_bytes);
    r.get(x.group_size);
    x.dtype = r.get_str();
    x.algorithm = r.get_str();
    x.protocol = r.get_str();
    x.key = d.key();
  }
  for (uint64_t n = r.get<uint64_t>(); n > 0; --n) {
    const auto it = r.get<int64_t>();
    auto& comp = a.components[it];
    for (uint64_t m = r.get<uint64_t>(); m > 0; --m) {
      std::string k = r.get_str();
      comp[std::move(k)] = r.get<Ns>();
    }
  }
  for (uint64_t n = r.get<uint64_t>(); n > 0; --n) {
    const auto it = r.get<int64_t>();
    a.flops[it] = r.get<double>();
  }
  r.get(a.gpu_time_ns);
  a.units.resize(r.get<uint64_t>());
  for (WaterfallUnit& u : a.units) {
    r.get(u.row);
    u.key = d.key();
    r.get(u.op_class);
    u.signature = d.id();
    u.shape_class = d.id();
    r.get(u.observed_ns);
    for (double* p : {&u.theoretical_ns, &u.issued_ns, &u.active_ns, &u.overlap_share,
                      &u.instruction_ns, &u.utilization_ns, &u.overlap_ns, &u.frequency_ns,
                      &u.residual_ns, &u.flops, &u.bytes, &u.achievable_ns, &u.below_achievable_ns})
      r.get(*p);
    for (bool* p : {&u.compute_bound, &u.theoretical_known, &u.instruction_known,
                    &u.frequency_known, &u.overlap_known, &u.overlap_estimated})
      r.get(*p);
  }
  a.power.resize(r.get<uint64_t>());
  for (PowerRow& p : a.power) {
    r.get(p.rank);
    r.get(p.iteration);
    p.phase = r.get_str();
    r.get(p.time_ns);
    for (double* x : {&p.energy_j, &p.peak_power_w, &p.mean_clock_mhz, &p.max_temp_c,
                      &p.max_hotspot_c, &p.max_mem_temp_c, &p.busy_power_w, &p.idle_power_w,
                      &p.power_cv, &p.max_dp_dt_w_per_s, &p.max_clock_share, &p.energy_counter_j,
                      &p.link_tx_bytes, &p.link_rx_bytes, &p.pcie_tx_bytes, &p.pcie_rx_bytes})
      r.get(*x);
    for (uint64_t m = r.get<uint64_t>(); m > 0; --m) {
      std::string k = r.get_str();
      p.throttle_ns[std::move(k)] = r.get<Ns>();
    }
  }
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
  p.coverage.resize(r.get<uint64_t>());
  for (CoverageRow& c : p.coverage) {
    r.get(c.rank);
    c.level = r.get_str();
    c.scope = r.get_str();
    c.rule = r.get_str();
    r.get(c.activities);
    r.get(c.kernel_ns);
    r.get(c.scope_kernel_ns);
  }
  p.diagnostics.resize(r.get<uint64_t>());
  for (DiagnosticRow& d : p.diagnostics) {
    r.get(d.rank);
    d.file = r.get_str();
    d.kind = r.get_str();
    r.get(d.severity);
    d.stage = r.get_str();
    r.get(d.count);
    r.get(d.of_count);
    d.example = r.get_str();
    r.get(d.gpu_time_ns);
    r.get(d.rank_gpu_time_ns);
    r.get(d.share_of_gpu_time);
    r.get(d.share_of_events);
  }
  p.joins.resize(r.get<uint64_t>());
  for (auto& [c, j] : p.joins) {
    c = r.get<uint64_t>();
    j.file = r.get_str();
    r.get(j.rank);
    r.get(j.dispatches);
    r.get(j.matched);
    r.get(j.ambiguous);
    j.method = r.get_str();
    r.get(j.offset_ns);
    r.get(j.same_run);
    r.get(j.name_match_rate);
  }
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
