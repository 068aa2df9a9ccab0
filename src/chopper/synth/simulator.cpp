// The simulator's model: collectives (ring timing, host ops, link transfer), the host's actions,
// and each compute activity's launch, idle-time truth, clock and effect-by-effect duration.
#include "chopper/synth/simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace chopper::synth_model {

namespace {

// ---------------------------------------------------------------- randomness (counter-based)
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double uniform(uint64_t h) {
  return static_cast<double>(mix(h) >> 11) * (1.0 / 9007199254740992.0);
}
// Standard normal from a key: deterministic, independent of evaluation order.
double gauss(uint64_t key) {
  const double u1 = std::max(uniform(key * 2 + 1), 1e-12), u2 = uniform(key * 2 + 2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

Ns Simulator::coll_duration(const KernelDef& k) const {
  const double n = c_.ranks;
  if (n <= 1) return 8000;
  const bool multi = nodes_ > 1;
  const double bw =
      (multi ? std::min(d_.intra_node_bw_gbs, d_.inter_node_bw_gbs) : d_.intra_node_bw_gbs) * 1e9 *
      c_.comm_efficiency;
  const double alpha = multi ? 10e-6 : 4e-6;
  const double steps = k.cls == OpClass::kAllReduce ? 2 * (n - 1) : (n - 1);
  const double t = steps / n * static_cast<double>(k.coll_bytes) / bw + steps * alpha * 0.25;
  return static_cast<Ns>(std::llround(t * 1e9 * c_.comm_slowdown));
}

int Simulator::clock_for(const RankSim& r) const {
  const double h0 = 5e6, h1 = 60e6;  // ns of sustained load before and at full throttle
  const double x = std::clamp((r.heat - h0) / (h1 - h0), 0.0, 1.0);
  int f = static_cast<int>(std::lround(fmax_ - (fmax_ - floor_mhz_) * x));
  f = f / 15 * 15;  // clocks move in 15 MHz steps
  if (f > fmax_) f = fmax_;
  return f;
}

void Simulator::cool(RankSim& r, Ns until) const {
  if (until > r.heat_t) {
    r.heat = std::max(0.0, r.heat - 0.5 * static_cast<double>(until - r.heat_t));
    r.heat_t = until;
  }
}

Ns Simulator::coll_arrive(const RankSim& r, const Action& a) const {
  // Host: the collective's host ops take host_op + launch; the kernel is ready after latency.
  const Ns host_ready = r.host + c_.host_op_ns / 2 + c_.launch_ns + c_.launch_latency_ns;
  // NCCL waits for the compute that produced its input (reduce-scatter of gradients).
  const Ns after = a.phase == Phase::kBackward ? r.compute_free : 0;
  return std::max({host_ready, r.comm_free, after});
}

// The collective's host ops (record_param_comms, the launch call) and its kernel on the comm
// stream, then its truth.
void Simulator::coll_finish(RankSim& r, const Action& a, Ns arrival, Ns end, Emit* e) {
  const KernelDef& k = p_.kdefs[static_cast<size_t>(a.kdef)];
  const Ns h0 = r.host;
  const Ns rt_start = h0 + c_.host_op_ns / 2;
  const Ns rt_end = rt_start + c_.launch_ns;
  r.host = rt_end + 2000;
  r.comm_free = end;
  r.coll_span[static_cast<size_t>(a.coll)] = {arrival, end};
  r.issued = static_cast<size_t>(a.coll) + 1;
  if (e == nullptr) return;
  TraceWriter& w = *e->w;
  const bool bwd = a.backward_thread;
  const int64_t corr = e->ids.corr++;
  const int64_t ext = e->ids.ext++;
  const Ns off = node_offset(r.node);
  const bool amd = d_.vendor == Vendor::kAmd;
  const int64_t elems = k.coll_bytes / dtype_bytes(c_.dtype);
  const char* cname = k.cls == OpClass::kAllGather       ? "_allgather_base"
                      : k.cls == OpClass::kReduceScatter ? "_reduce_scatter_base"
                                                         : "allreduce";
  const int64_t in_n = k.cls == OpClass::kAllGather ? elems / c_.ranks : elems;
  const int64_t out_n = k.cls == OpClass::kReduceScatter ? elems / c_.ranks : elems;
  std::string ranks = "[";
  for (int i = 0; i < c_.ranks; ++i) ranks += (i ? ", " : "") + std::to_string(i);
  ranks += "]";
  const std::string comm_args = fmt::format(
      "\"Collective name\": \"{}\", \"dtype\": \"BFloat16\", \"In msg nelems\": {}, \"Out msg "
      "nelems\": {}, \"Group size\": {}, \"Process Group Name\": \"0\", \"Process Group "
      "Description\": \"default_pg\", \"Process Group Ranks\": \"{}\"",
      cname, in_n, out_n, c_.ranks, ranks);
  auto& b = w.buf();
  fmt::format_to(std::back_inserter(b),
                 ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", "
                 "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External "
                 "id\": {}, \"Record function id\": {}, {}}}}}",
                 pid(r), tid(r, bwd), w.ts(h0 + off), us(r.host - h0 - 1000), ext, rf_id(*e, ext),
                 comm_args);
  if (e->et != nullptr) e->et->plain("record_param_comms", ext, bwd);
  runtime_event(w, r, bwd, amd ? "hipExtLaunchKernel" : "cudaLaunchKernelExC", rt_start + off,
                rt_end - rt_start, corr, ext);
  flow(w, corr, pid(r), tid(r, bwd), rt_start + off, 0, comm_stream_, arrival + off);
  fmt::format_to(std::back_inserter(b),
                 ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, "
                 "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{",
                 k.name, local_rank(r.rank), comm_stream_, w.ts(arrival + off), us(end - arrival));
  if (amd) {
    fmt::format_to(
        std::back_inserter(b),
        "\"device\": {}, \"stream\": {}, \"correlation\": {}, \"kind\": \"Dispatch Kernel\"}}}}",
        local_rank(r.rank), comm_stream_, corr);
  } else {
    fmt::format_to(std::back_inserter(b),
                   "\"External id\": {}, \"queued\": 0, \"device\": {}, \"context\": 1, "
                   "\"stream\": {}, \"correlation\": {}, \"registers per thread\": 96, \"shared "
                   "memory\": 4528, \"grid\": [{}, 1, 1], \"block\": [544, 1, 1], {}}}}}",
                   ext, local_rank(r.rank), comm_stream_, corr, std::min(32, c_.ranks * 2),
                   comm_args);
  }
  coll_truth(r, a, k, arrival, end, *e, corr);
  w.flush_if_big();
}

// A collective kernel's truth: its row, its link transfer (BusySpan), its effect entry.
void Simulator::coll_truth(RankSim& r, const Action& a, const KernelDef& k, Ns arrival, Ns end,
                           Emit& e, int64_t corr) {
  const Ns off = node_offset(r.node);
  KernelTruth kt{};
  kt.correlation = corr;
  kt.iteration = c_.first_step + r.iteration;
  kt.phase = a.phase;
  kt.layer = a.layer;
  kt.op = a.op;
  kt.cls = k.cls;
  kt.clock_mhz = r.clock_mhz;
  kt.start_ns = arrival + off;
  kt.dur_ns = end - arrival;
  kt.nominal_ns = coll_duration(k);
  kt.kernel = k.name.c_str();
  e.kernels->push_back(kt);
  {
    // Ring: each GPU sends (and receives) steps / n of the message. Across nodes, the GPU whose
    // ring successor (predecessor) is on the next (previous) node sends (receives) over the
    // network instead of NVLink.
    const double n = c_.ranks;
    const double steps = k.cls == OpClass::kAllReduce ? 2 * (n - 1) : (n - 1);
    const double bytes = n > 1 ? steps / n * static_cast<double>(k.coll_bytes) : 0.0;
    const int lr = local_rank(r.rank);
    const bool one_node = nodes_ <= 1;
    BusySpan span{arrival + off, end + off, r.clock_mhz, true};
    span.xfer_start = std::max(arrival, end - kt.nominal_ns) + off;
    span.tx_bytes = one_node || lr != c_.gpus_per_node - 1 ? bytes : 0.0;
    span.rx_bytes = one_node || lr != 0 ? bytes : 0.0;
    e.busy->push_back(span);
  }
  Effects& ef = (*e.effects)[EffectKey{kt.iteration, a.phase, a.layer, a.op}];
  ++ef.kernels;
  ef.kernel_ns += kt.dur_ns;
}

Ns Simulator::theoretical_ns(bool matrix, double flops, double bytes) const {
  const double peak = matrix ? d_.matrix_tflops(c_.dtype) * 1e12 : d_.vector_tflops_fp32 * 1e12;
  return std::llround(std::max(flops / peak, bytes / (d_.mem_bw_gbs * 1e9)) * 1e9);
}

void Simulator::runtime_event(TraceWriter& w, const RankSim& r, bool bwd, const char* name, Ns ts,
                              Ns dur, int64_t corr, int64_t ext) const {
  fmt::format_to(std::back_inserter(w.buf()),
                 ",\n{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
                 "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                 "\"cbid\": 211, \"correlation\": {}}}}}",
                 name, pid(r), tid(r, bwd), w.ts(ts), us(dur), ext, corr);
}

void Simulator::flow(TraceWriter& w, int64_t id, int64_t spid, int64_t stid, Ns sts, int64_t fpid,
                     int64_t ftid, Ns fts) const {
  fmt::format_to(
      std::back_inserter(w.buf()),
      ",\n{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", "
      "\"name\": \"ac2g\"}},\n{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
      "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}}",
      id, spid, stid, w.ts(sts), id, fpid, ftid, w.ts(fts));
}

// Everything but collectives.
void Simulator::step(RankSim& r, size_t pc, const std::vector<Ns>* coll_end, Emit* e) {
  const Action& a = p_.acts[pc];
  switch (a.act) {
    case Act::kStepBegin:
      step_begin(r, e);
      return;
    case Act::kStepEnd:
      step_end(r, e);
      return;
    case Act::kRangeBegin:
      range_begin(r, a, e);
      return;
    case Act::kRangeEnd:
      range_end(r, a, e);
      return;
    case Act::kLaunch: {
      const KernelDef& k = p_.kdefs[static_cast<size_t>(a.kdef)];
      launch_kernel(r, &k, e, p_.ops[static_cast<size_t>(a.op)].c_str(), k.cls, k.flops, k.bytes,
                    k.name.c_str(), k.host_op.c_str(), a.phase, a.layer, a.backward_thread, a.op,
                    pc);
      return;
    }
    case Act::kWaitColl: {
      const Ns end = (*coll_end)[static_cast<size_t>(a.coll)];
      r.wait_until = std::max(r.wait_until, end);
      return;
    }
    case Act::kColl:
      return;  // handled by the driver
  }
}

// ProfilerStep#N begins: the data loader's stall (and the straggler's host delay), then the batch
// goes to the GPU.
void Simulator::step_begin(RankSim& r, Emit* e) {
  const Ns off = node_offset(r.node);
  ++r.iteration;
  const Ns begin = r.host;
  Ns stall = c_.data_loader_stall_ns;
  if (r.rank == c_.straggler_rank) stall += c_.straggler_host_ns;
  r.pending_stall = stall;
  r.step_spans.push_back({begin, begin});
  if (e != nullptr) {
    e->steps->push_back({c_.first_step + r.iteration, {begin + off, 0}});
    if (stall > 0) {
      fmt::format_to(std::back_inserter(e->w->buf()),
                     ",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                     "\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\", "
                     "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": "
                     "{{\"External id\": {}, \"Record function id\": {}}}}}",
                     pid(r), tid(r, false), e->w->ts(begin + 1000 + off), us(stall), e->ids.ext,
                     rf_id(*e, e->ids.ext));
      if (e->et != nullptr)
        e->et->plain("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", e->ids.ext,
                     false);
      ++e->ids.ext;
    }
  }
  r.host += 1000 + stall + 1000;
  // The batch goes to the GPU.
  launch_kernel(r, nullptr, e, "aten::copy_", OpClass::kMemcpy, 0, s_.T * 8,
                "Memcpy HtoD (Pinned -> Device)", "aten::copy_", Phase::kOther, -1, false, -1);
}

// The step ends with loss.item(): the loss comes to the host, which waits for the GPU; then the
// ProfilerStep range closes.
void Simulator::step_end(RankSim& r, Emit* e) {
  const Ns off = node_offset(r.node);
  // loss.item(): copy the loss to the host and wait for it.
  launch_kernel(r, nullptr, e, "aten::_local_scalar_dense", OpClass::kMemcpy, 0, 4,
                "Memcpy DtoH (Device -> Pageable)", "aten::_local_scalar_dense", Phase::kOther, -1,
                false, -1);
  const Ns sync_start = r.host;
  r.host = std::max(r.host, std::max(r.compute_free, r.comm_free)) + 5000;
  if (!r.step_spans.empty()) r.step_spans.back().second = r.host;
  if (e != nullptr) {
    auto& w = *e->w;
    fmt::format_to(
        std::back_inserter(w.buf()),
        ",\n{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"{}\", \"pid\": {}, "
        "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"cbid\": 131, \"correlation\": "
        "{}}}}}",
        d_.vendor == Vendor::kAmd ? "hipStreamSynchronize" : "cudaStreamSynchronize", pid(r),
        tid(r, false), w.ts(sync_start + off), us(r.host - 5000 - sync_start), e->ids.corr++);
    auto& st = e->steps->back();
    st.second.second = r.host + off;
    const Ns step_start = st.second.first;
    fmt::format_to(std::back_inserter(w.buf()),
                   ",\n{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                   "\"ProfilerStep#{}\", \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, "
                   "\"args\": {{\"External id\": {}, \"Record function id\": {}}}}}",
                   st.first, pid(r), tid(r, false), w.ts(step_start), us(r.host + off - step_start),
                   e->ids.ext, rf_id(*e, e->ids.ext));
    if (e->et != nullptr) e->et->plain(fmt::format("ProfilerStep#{}", st.first), e->ids.ext, false);
    ++e->ids.ext;
  }
}

// A host range opens (a backward op's also draws the fwdbwd flow from its forward op).
void Simulator::range_begin(RankSim& r, const Action& a, Emit* e) {
  const Ns off = node_offset(r.node);
  r.host += a.annotation ? 1500 : 3000;
  if (e == nullptr) return;
  auto& open = a.backward_thread ? e->open_bwd : e->open_main;
  OpenRange o{a.range, r.host, a.annotation, e->ids.ext++, -1, a.fwd_of, {}};
  if (a.fwd_of >= 0) {
    o.seq = e->fwd_seq[static_cast<size_t>(a.fwd_of)];
    // fwdbwd flow: forward op -> this backward op.
    fmt::format_to(
        std::back_inserter(e->w->buf()),
        ",\n{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": "
        "\"fwdbwd\", \"name\": \"fwdbwd\"}},\n{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, "
        "\"tid\": {}, \"ts\": {}, \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"}}",
        e->fwd_flow[static_cast<size_t>(a.fwd_of)], pid(r), tid(r, false),
        e->w->ts(e->fwd_ts[static_cast<size_t>(a.fwd_of)] + off),
        e->fwd_flow[static_cast<size_t>(a.fwd_of)], pid(r), tid(r, true), e->w->ts(r.host + off));
  }
  open.push_back(std::move(o));
}

// A host range closes and is written.
void Simulator::range_end(RankSim& r, const Action& a, Emit* e) {
  const Ns off = node_offset(r.node);
  r.host += 1000;
  if (e == nullptr) return;
  auto& open = a.backward_thread ? e->open_bwd : e->open_main;
  OpenRange o = std::move(open.back());
  open.pop_back();
  auto& w = *e->w;
  if (o.seq >= 0) {
    fmt::format_to(
        std::back_inserter(w.buf()),
        ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, \"tid\": "
        "{}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"Sequence number\": "
        "{}, \"Fwd thread id\": {}, \"Record function id\": {}}}}}",
        p_.ops[static_cast<size_t>(o.name)], pid(r), tid(r, true), w.ts(o.start + off),
        us(r.host - o.start), o.ext, o.seq, tid(r, false), rf_id(*e, o.ext));
    if (e->et != nullptr) e->et->plain(p_.ops[static_cast<size_t>(o.name)], o.ext, true);
  } else {
    fmt::format_to(std::back_inserter(w.buf()),
                   ",\n{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, "
                   "\"Record function id\": {}}}}}",
                   o.annotation ? "user_annotation" : "cpu_op", p_.ops[static_cast<size_t>(o.name)],
                   pid(r), tid(r, a.backward_thread), w.ts(o.start + off), us(r.host - o.start),
                   o.ext, rf_id(*e, o.ext));
    if (e->et != nullptr)
      e->et->plain(p_.ops[static_cast<size_t>(o.name)], o.ext, a.backward_thread);
  }
  w.flush_if_big();
}

// How long `work` ns of compute starting at `start` take beside this GPU's collectives: inside
// the union of their intervals it progresses at 1 / (1 + comm_interference), elsewhere at 1. So
// the duration d solves d = work + comm_interference x (overlap of [start, start + d) with the
// collectives), exactly: walk the intervals in start order. Times relative to `start` (doubles
// hold them to well under a ns); the end rounded to the ns.
Ns Simulator::slowed(RankSim& r, Ns start, Ns work) const {
  const double k = 1.0 + c_.comm_interference;
  const Ns horizon = start + static_cast<Ns>(std::ceil(static_cast<double>(work) * k)) + 1;
  auto& sp = r.scratch;
  sp.clear();
  // Issued ones from comm_head, then the rest (each part in start order).
  auto take = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && r.coll_span[i].first < horizon; ++i)
      if (r.coll_span[i].second > start) sp.push_back(r.coll_span[i]);
  };
  take(r.comm_head, r.issued);
  take(r.issued, r.coll_span.size());
  if (sp.empty()) return work;
  std::sort(sp.begin(), sp.end());
  double t = 0, left = static_cast<double>(work);
  for (const auto& [a0, b0] : sp) {
    const double a = static_cast<double>(a0 - start), b = static_cast<double>(b0 - start);
    if (b <= t) continue;
    if (a > t) {
      if (left <= a - t) break;
      left -= a - t;
      t = a;
    }
    if (left <= (b - t) / k) {
      t += left * k;
      left = 0;
      break;
    }
    left -= (b - t) / k;
    t = b;
  }
  return std::max(work, static_cast<Ns>(std::llround(t + left)));
}

// One op with one GPU activity on the compute stream. `k` is null for the built-in copies.
void Simulator::launch_kernel(RankSim& r, const KernelDef* k, Emit* e, const char* op_label,
                              OpClass cls, double flops, double bytes, const char* kname,
                              const char* host_op, Phase phase, int layer, bool bwd, int32_t op_id,
                              size_t pc) {
  LaunchTimes lt{};
  lt.op_start = r.host;
  lt.rt_start = r.host + c_.host_op_ns;
  lt.rt_end = lt.rt_start + c_.launch_ns;
  r.host = lt.rt_end + 1000;
  const Ns ready = lt.rt_end + c_.launch_latency_ns;
  const Ns free = r.compute_free;
  lt.start = std::max({ready, free, r.wait_until});
  r.wait_until = 0;
  const IdleTruth idle = idle_truth(r, free, lt.rt_start, ready, lt.start);
  const KernelClock clk = kernel_clock(r, lt.start);
  const bool matrix = k != nullptr && k->matrix;
  const Durations d = durations(r, clk, matrix, cls, flops, bytes, lt.start, pc);
  lt.dur = d.d4;
  r.compute_free = lt.start + lt.dur;
  const double intensity = (cls == OpClass::kGemm || cls == OpClass::kAttention) ? 1.0 : 0.35;
  r.heat = std::min(90e6, r.heat + intensity * static_cast<double>(lt.dur));
  r.heat_t = lt.start + lt.dur;

  if (e == nullptr) return;
  const int64_t corr = e->ids.corr++;
  const int64_t ext = e->ids.ext++;
  write_cpu_op(r, *e, k, host_op, phase, bwd, pc, lt, ext);
  write_gpu_activity(r, *e, k, cls, bytes, kname, bwd, matrix, lt, corr, ext);
  record_kernel(r, *e, op_label, cls, flops, bytes, kname, phase, layer, op_id, matrix, lt, idle,
                clk, d, corr);
  e->w->flush_if_big();
}

// Truth for the compute stream's idle time before this activity, [free, start), split the way
// docs/metrics.md defines the breakdown: while a collective runs on this GPU the time is exposed
// communication (the GPU is busy with it, no compute hides it), even where the host is also late;
// the rest before the launch is ready is the host's: before the launch call starts the host is late
// (Python, framework: host_late), from the call's start to ready it is the launch latency
// (launch_overhead), the first part of the two the data-loader stall; after ready, the activity
// waits for a collective: exposed communication. So a slow host whose gaps the next layer's
// all-gather fills costs exposed communication there, and the four add up to the idle time:
// nothing is charged twice or left out.
Simulator::IdleTruth Simulator::idle_truth(RankSim& r, Ns free, Ns rt_start, Ns ready, Ns start) {
  const Ns mid = std::clamp(ready, free, start);
  const Ns split = std::clamp(rt_start, free, mid);  // the launch call's start
  Ns covered = 0, covered_late = 0;  // [free, mid), [free, split) while a collective ran
  while (r.comm_head < r.issued && r.coll_span[r.comm_head].second <= free) ++r.comm_head;
  for (size_t i = r.comm_head; i < r.issued && r.coll_span[i].first < mid; ++i) {
    const Ns a = std::max(r.coll_span[i].first, free);
    covered += std::min(r.coll_span[i].second, mid) - a;
    covered_late += std::max<Ns>(0, std::min(r.coll_span[i].second, split) - a);
  }
  IdleTruth t{};
  t.exposed = covered + (start - mid);
  t.host_late = (split - free) - covered_late;
  t.host_gap = (mid - split) - (covered - covered_late);  // the launch latency
  t.stall = std::min(t.host_late + t.host_gap, r.pending_stall);
  r.pending_stall = 0;
  const Ns stall_late = std::min(t.stall, t.host_late);
  t.host_late -= stall_late;
  t.host_gap -= t.stall - stall_late;
  return t;
}

// Clock at the kernel's start, after the GPU cooled while idle.
Simulator::KernelClock Simulator::kernel_clock(RankSim& r, Ns start) {
  cool(r, start);
  KernelClock k{};
  k.f_dvfs = clock_for(r);  // the clock DVFS alone would run
  const int cap =
      r.rank == c_.straggler_rank ? static_cast<int>(fmax_ * c_.straggler_clock) / 15 * 15 : fmax_;
  k.f = std::min(k.f_dvfs, cap);
  k.changed = k.f != r.clock_mhz;
  r.clock_mhz = k.f;
  return k;
}

// Duration, effect by effect.
Simulator::Durations Simulator::durations(RankSim& r, const KernelClock& clk, bool matrix,
                                          OpClass cls, double flops, double bytes, Ns start,
                                          size_t pc) {
  const int f_dvfs = clk.f_dvfs, f = clk.f;
  const double peak = matrix ? d_.matrix_tflops(c_.dtype) * 1e12 : d_.vector_tflops_fp32 * 1e12;
  const double t_mem = bytes / (d_.mem_bw_gbs * 1e9 * c_.memory_efficiency) * 1e9;
  const double eff = matrix ? c_.matrix_efficiency : 0.5;
  const double t_comp0 = flops / (peak * eff) * 1e9;
  const double t_comp1 = matrix ? t_comp0 / (1.0 - c_.mfu_loss) : t_comp0;
  const double t_comp_dvfs = t_comp1 * fmax_ / f_dvfs;
  const double t_comp_f = t_comp1 * fmax_ / f;
  const Ns floor_ns = cls == OpClass::kMemcpy || cls == OpClass::kMemset ? 1500 : 2500;
  auto dur_of = [&](double tc) {
    return std::max<Ns>(floor_ns, std::llround(std::max(tc, t_mem)));
  };
  Durations d{};
  d.nominal = dur_of(t_comp0);
  d.d1 = dur_of(t_comp1);
  // DVFS is charged from the maximum clock to the clock DVFS runs; a straggler's cap only for
  // what it takes below that (nothing when DVFS already holds the clock under the cap).
  d.d_dvfs = dur_of(t_comp_dvfs);
  d.d2 = dur_of(t_comp_f);
  // Noise on the work, then the work slowed wherever a collective runs beside it on this GPU.
  d.d3 = d.d2;
  if (c_.noise > 0) {
    const double z = std::clamp(
        gauss(c_.seed * 1000003ULL + static_cast<uint64_t>(r.rank) * 7919ULL * 1000003ULL +
              pc * 31 + static_cast<uint64_t>(r.iteration) * 1000000007ULL),
        -3.0, 3.0);
    d.d3 = std::max<Ns>(floor_ns, d.d2 + std::llround(static_cast<double>(d.d2) * c_.noise * z));
  }
  d.d4 = c_.comm_interference > 0 ? slowed(r, start, d.d3) : d.d3;
  return d;
}

// The launching cpu_op (forward ops get a Sequence number, used by their backward) and the runtime
// call with its flow to the activity.
void Simulator::write_cpu_op(RankSim& r, Emit& e, const KernelDef* k, const char* host_op,
                             Phase phase, bool bwd, size_t pc, const LaunchTimes& lt, int64_t ext) {
  const Ns off = node_offset(r.node);
  auto& w = *e.w;
  auto& b = w.buf();
  const bool fwd = phase == Phase::kForward && pc != SIZE_MAX;
  int64_t seq = -1;
  if (fwd) {
    seq = e.ids.seq++;
    e.fwd_seq[pc] = seq;
    e.fwd_flow[pc] = e.ids.flow++ + 1000000000;
    e.fwd_ts[pc] = lt.op_start;
  }
  const std::string dims = k != nullptr && !k->dims.empty() ? k->dims : "[]";
  fmt::format_to(std::back_inserter(b),
                 ",\n{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"{}\", \"pid\": {}, "
                 "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, ",
                 host_op, pid(r), tid(r, bwd), w.ts(lt.op_start + off),
                 us(lt.rt_end + 1000 - lt.op_start), ext);
  if (seq >= 0)
    fmt::format_to(std::back_inserter(b), "\"Sequence number\": {}, \"Fwd thread id\": 0, ", seq);
  const std::string_view types =
      k != nullptr && !k->types.empty() ? std::string_view(k->types) : "[\"c10::BFloat16\"]";
  // --et: a fraction of the ops that have shapes leave them to the host ET.
  const bool has_dims = k != nullptr && !k->dims.empty();
  const bool dropped = e.et != nullptr && has_dims && e.et->drop(ext);
  if (dropped) {
    fmt::format_to(std::back_inserter(b), "\"Record function id\": {}", ext);
  } else {
    fmt::format_to(std::back_inserter(b),
                   "\"Record function id\": {}, \"Input Dims\": {}, \"Input type\": {}",
                   rf_id(e, ext), dims, types);
    if (k != nullptr && !k->concrete.empty())
      fmt::format_to(std::back_inserter(b), ", \"Concrete Inputs\": {}", k->concrete);
  }
  b += "}}";
  if (e.et != nullptr) {
    if (has_dims)
      e.et->launch(host_op, ext, bwd, dims, types, k->concrete, dropped);
    else
      e.et->plain(host_op, ext, bwd);
  }
}

// The runtime call, its flow, and the activity on the compute stream: a memcpy / memset or a kernel
// (with the launch configuration each vendor's profiler writes).
void Simulator::write_gpu_activity(const RankSim& r, Emit& e, const KernelDef* k, OpClass cls,
                                   double bytes, const char* kname, bool bwd, bool matrix,
                                   const LaunchTimes& lt, int64_t corr, int64_t ext) {
  const Ns off = node_offset(r.node);
  const bool amd = d_.vendor == Vendor::kAmd;
  auto& w = *e.w;
  auto& b = w.buf();
  const Ns start = lt.start, dur = lt.dur;
  const bool copy = cls == OpClass::kMemcpy && k == nullptr;
  const bool memset = cls == OpClass::kMemset;
  const char* rt = copy     ? (amd ? "hipMemcpyAsync" : "cudaMemcpyAsync")
                   : memset ? (amd ? "hipMemsetAsync" : "cudaMemsetAsync")
                            : (amd ? "hipLaunchKernel" : "cudaLaunchKernel");
  runtime_event(w, r, bwd, rt, lt.rt_start + off, lt.rt_end - lt.rt_start, corr, ext);
  flow(w, corr, pid(r), tid(r, bwd), lt.rt_start + off, local_rank(r.rank), compute_stream_,
       start + off);
  const int dev = local_rank(r.rank);
  if (copy || memset) {
    fmt::format_to(
        std::back_inserter(b),
        ",\n{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
        "\"ts\": {}, \"dur\": {}, \"args\": {{{}\"device\": {}, \"context\": 1, \"stream\": {}, "
        "\"correlation\": {}, \"bytes\": {}, \"memory bandwidth (GB/s)\": {:.3f}}}}}",
        copy ? "gpu_memcpy" : "gpu_memset", kname, dev, compute_stream_, w.ts(start + off), us(dur),
        amd ? std::string() : fmt::format("\"External id\": {}, ", ext), dev, compute_stream_, corr,
        static_cast<int64_t>(bytes), bytes / static_cast<double>(dur));
  } else if (amd) {
    fmt::format_to(
        std::back_inserter(b),
        ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
        "\"ts\": {}, \"dur\": {}, \"args\": {{\"device\": {}, \"stream\": {}, \"correlation\": "
        "{}, \"kind\": \"Dispatch Kernel\", \"grid\": [{}, 1, 1], \"block\": [256, 1, 1]}}}}",
        kname, dev, compute_stream_, w.ts(start + off), us(dur), dev, compute_stream_, corr,
        d_.sm_count * 4 * 256);
  } else {
    fmt::format_to(
        std::back_inserter(b),
        ",\n{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{}\", \"pid\": {}, \"tid\": {}, "
        "\"ts\": {}, \"dur\": {}, \"args\": {{\"External id\": {}, \"queued\": 0, \"device\": "
        "{}, \"context\": 1, \"stream\": {}, \"correlation\": {}, \"registers per thread\": {}, "
        "\"shared memory\": {}, \"blocks per SM\": 1.0, \"warps per SM\": 8.0, \"grid\": [{}, 1, "
        "1], \"block\": [{}, 1, 1], \"est. achieved occupancy %\": 25}}}}",
        kname, dev, compute_stream_, w.ts(start + off), us(dur), ext, dev, compute_stream_, corr,
        matrix ? 168 : 32, matrix ? 213504 : 0, d_.sm_count, matrix ? 384 : 128);
  }
}

// The activity's truth: its row (each effect's increment), its effect entry, its busy span for the
// power model and, where the clock moved, a clock point.
void Simulator::record_kernel(RankSim& r, Emit& e, const char* op_label, OpClass cls, double flops,
                              double bytes, const char* kname, Phase phase, int layer,
                              int32_t op_id, bool matrix, const LaunchTimes& lt,
                              const IdleTruth& idle, const KernelClock& clk, const Durations& d,
                              int64_t corr) {
  const Ns off = node_offset(r.node);
  const Ns start = lt.start, dur = lt.dur;
  // Built-in copies have no program op: -2 = the batch upload, -3 = loss.item().
  const int32_t op_key =
      op_id >= 0 ? op_id : (std::string_view(op_label) == "aten::copy_" ? -2 : -3);
  KernelTruth kt{corr,
                 c_.first_step + r.iteration,
                 phase,
                 layer,
                 op_key,
                 cls,
                 clk.f,
                 start + off,
                 dur,
                 d.nominal,
                 d.d1 - d.nominal,
                 d.d2 - d.d_dvfs,
                 d.d_dvfs - d.d1,
                 d.d4 - d.d3,
                 d.d3 - d.d2,
                 idle.exposed,
                 idle.host_gap,
                 idle.stall,
                 idle.host_late,
                 flops,
                 bytes,
                 theoretical_ns(matrix, flops, bytes),
                 kname};
  e.kernels->push_back(kt);
  Effects& ef = (*e.effects)[EffectKey{kt.iteration, phase, layer, op_key}];
  ++ef.kernels;
  ef.kernel_ns += dur;
  ef.mfu_ns += kt.mfu_ns;
  ef.straggler_ns += kt.straggler_ns;
  ef.dvfs_ns += kt.dvfs_ns;
  ef.interference_ns += kt.interference_ns;
  ef.noise_ns += kt.noise_ns;
  ef.exposed_comm_ns += idle.exposed;
  ef.launch_ns += idle.host_gap;
  ef.stall_ns += idle.stall;
  ef.host_late_ns += idle.host_late;
  e.busy->push_back({start + off, start + dur + off, clk.f, false});
  if (clk.changed) e.clock->push_back({start + off, clk.f, r.heat});
}

}  // namespace chopper::synth_model
