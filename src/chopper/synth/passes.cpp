// The generator's two passes. Pass 1 runs all ranks in lockstep over the program, keeping only
// scalar state (and each rank's collective intervals), to find when every collective ends (the
// last rank to arrive starts it); with comm interference each iteration in rounds until those
// intervals settle. Pass 2 runs each rank alone (in parallel) with those end times and writes its
// trace. Both passes share one step function and a counter-based RNG, so they agree to the
// nanosecond.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/synth/run.hpp"

namespace chopper::synth_model {

namespace {

// Pass 1 over program actions [from, to): every rank in lockstep, collective by collective, to
// find when each collective ends (coll_end).
void lockstep(const SynthConfig& c, Simulator& sim, const Program& prog, std::vector<RankSim>& st,
              std::vector<Ns>& coll_end, size_t from, size_t to) {
  std::vector<Ns> arrivals(static_cast<size_t>(c.ranks));
  for (size_t pc = from; pc < to; ++pc) {
    const Action& a = prog.acts[pc];
    if (a.act == Act::kColl) {
      Ns last = 0;
      for (int r = 0; r < c.ranks; ++r) {
        arrivals[static_cast<size_t>(r)] = sim.coll_arrive(st[static_cast<size_t>(r)], a);
        last = std::max(last, arrivals[static_cast<size_t>(r)]);
      }
      const Ns end = last + sim.coll_duration(prog.kdefs[static_cast<size_t>(a.kdef)]);
      coll_end[static_cast<size_t>(a.coll)] = end;
      for (int r = 0; r < c.ranks; ++r)
        sim.coll_finish(st[static_cast<size_t>(r)], a, arrivals[static_cast<size_t>(r)], end,
                        nullptr);
    } else {
      for (int r = 0; r < c.ranks; ++r)
        sim.step(st[static_cast<size_t>(r)], pc, &coll_end, nullptr);
    }
  }
}

}  // namespace

// Pass 1, iteration by iteration. A kernel's duration depends on the collectives it runs beside,
// some issued by the host after it (the next all-gather while the kernel still runs), and their
// times depend on kernel durations in turn. So with comm interference each iteration runs in
// rounds from the same start, each with the collective intervals of the round before (kNoSpan
// at first), until none changes; the dependence is causal (a collective depends on what ran
// before it), so the rounds settle (two or three). Iterations are apart: the host waits for the
// GPU at each step's end, before it issues the next step's work. Returns the ranks' final states
// (their step spans and collective intervals among them).
std::vector<RankSim> settle(const SynthConfig& c, Simulator& sim, const Program& prog,
                            std::vector<Ns>& coll_end) {
  coll_end.assign(static_cast<size_t>(prog.n_colls), 0);
  std::vector<RankSim> st(static_cast<size_t>(c.ranks));
  for (int r = 0; r < c.ranks; ++r) {
    RankSim& x = st[static_cast<size_t>(r)];
    x.rank = r;
    x.node = r / c.gpus_per_node;
    Simulator::start_rank(x, Simulator::kRunStart + static_cast<Ns>(r % 7) * 1300);
    x.coll_span.assign(static_cast<size_t>(prog.n_colls), kNoSpan);
  }
  std::vector<size_t> cut;  // each iteration's first action, then the end
  for (size_t pc = 0; pc < prog.acts.size(); ++pc)
    if (prog.acts[pc].act == Act::kStepBegin) cut.push_back(pc);
  cut.push_back(prog.acts.size());
  std::vector<RankScalars> saved(st.size());
  std::vector<size_t> steps(st.size());
  std::vector<std::pair<Ns, Ns>> before;
  constexpr int kMaxRounds = 32;
  for (size_t i = 0; i + 1 < cut.size(); ++i) {
    if (c.comm_interference <= 0) {
      lockstep(c, sim, prog, st, coll_end, cut[i], cut[i + 1]);
      continue;
    }
    size_t c0 = SIZE_MAX, c1 = 0;  // the iteration's collectives
    for (size_t pc = cut[i]; pc < cut[i + 1]; ++pc)
      if (prog.acts[pc].act == Act::kColl) {
        c0 = std::min(c0, static_cast<size_t>(prog.acts[pc].coll));
        c1 = std::max(c1, static_cast<size_t>(prog.acts[pc].coll) + 1);
      }
    if (c0 > c1) c0 = c1;
    for (size_t r = 0; r < st.size(); ++r) {
      saved[r] = st[r];
      steps[r] = st[r].step_spans.size();
    }
    for (int round = 1;; ++round) {
      before.clear();
      for (const RankSim& x : st)
        before.insert(before.end(), x.coll_span.begin() + static_cast<std::ptrdiff_t>(c0),
                      x.coll_span.begin() + static_cast<std::ptrdiff_t>(c1));
      lockstep(c, sim, prog, st, coll_end, cut[i], cut[i + 1]);
      bool same = true;
      for (size_t r = 0; r < st.size() && same; ++r)
        same = std::equal(st[r].coll_span.begin() + static_cast<std::ptrdiff_t>(c0),
                          st[r].coll_span.begin() + static_cast<std::ptrdiff_t>(c1),
                          before.begin() + static_cast<std::ptrdiff_t>(r * (c1 - c0)));
      if (same) break;
      if (round >= kMaxRounds)
        throw Error(fmt::format(
            "chopper synth: the collectives' times of iteration {} did not settle in {} rounds", i,
            round));
      for (size_t r = 0; r < st.size(); ++r) {
        static_cast<RankScalars&>(st[r]) = saved[r];
        st[r].step_spans.resize(steps[r]);
      }
    }
  }
  return st;
}

// Per rank and iteration: the step time of `c` minus that of `cf` (the same job without one
// effect: its cost), both settled.
std::vector<std::vector<Ns>> step_cost(const std::vector<RankSim>& st, const SynthConfig& cf,
                                       const DeviceSpec& dev, const Program& prog,
                                       const Shapes& shapes) {
  Simulator sim_cf(cf, dev, prog, shapes);
  std::vector<Ns> cf_end;
  const std::vector<RankSim> st_cf = settle(cf, sim_cf, prog, cf_end);
  std::vector<std::vector<Ns>> cost(st.size());
  for (size_t r = 0; r < st.size(); ++r)
    for (size_t i = 0; i < st[r].step_spans.size() && i < st_cf[r].step_spans.size(); ++i)
      cost[r].push_back((st[r].step_spans[i].second - st[r].step_spans[i].first) -
                        (st_cf[r].step_spans[i].second - st_cf[r].step_spans[i].first));
  return cost;
}
namespace {

// The trace's deviceProperties: one entry per GPU of the node.
std::string device_properties(const SynthConfig& c, const DeviceSpec& dev) {
  std::string dev_props = "[";
  for (int i = 0; i < c.gpus_per_node; ++i) {
    dev_props += fmt::format(
        "{}\n    {{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, \"computeMajor\": {}, "
        "\"computeMinor\": {}, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": "
        "2048, \"regsPerBlock\": 65536, \"warpSize\": {}, \"sharedMemPerBlock\": 49152, "
        "\"numSms\": {}, \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, "
        "\"sharedMemPerMultiprocessor\": 233472}}",
        i ? "," : "", i, json_string(dev.marketing_name),
        static_cast<int64_t>(dev.mem_gib * 1073741824.0), dev.compute_major, dev.compute_minor,
        dev.warp_size, dev.sm_count);
  }
  dev_props += "]";
  return dev_props;
}

// The trace's head: schema, devices, distributed info, runtime versions, process and thread names.
void write_trace_head(const SynthConfig& c, bool amd, const Simulator& sim, const RankSim& rs,
                      const std::string& dev_props, const std::string& ranks_list, TraceWriter& w) {
  const int r = rs.rank;
  auto& b = w.buf();
  fmt::format_to(
      std::back_inserter(b),
      "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": {},\n  \"distributedInfo\": "
      "{{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \"pg_count\": 1, "
      "\"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
      "\"cuda:nccl\", \"pg_size\": {}, \"ranks\": {}}}], \"nccl_version\": \"{}\"}},\n  "
      "\"record_shapes\": 1,\n  {},\n  \"traceEvents\": [\n",
      dev_props, r, c.ranks, c.ranks, ranks_list, "2.21.5",
      amd ? "\"roctracer_version\": 4, \"hip_runtime_version\": 60342134, "
            "\"hip_driver_version\": 60342134"
          : "\"cupti_version\": 24, \"cuda_runtime_version\": 12060, \"cuda_driver_version\": "
            "12060");
  fmt::format_to(
      std::back_inserter(b),
      "{{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": {}, \"tid\": 0, "
      "\"args\": {{\"name\": \"python\"}}}},\n{{\"name\": \"process_name\", \"ph\": \"M\", "
      "\"ts\": 0.000, \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": "
      "\"python\"}}}},\n{{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": "
      "{}, \"tid\": {}, \"args\": {{\"name\": \"thread {} (python)\"}}}}",
      sim.pid(rs), r % c.gpus_per_node, sim.pid(rs), sim.tid(rs, false), sim.tid(rs, false));
}

// Pass 2 of one rank: the program with pass 1's collective end times, written as rank-N.json.
void trace_rank(const SynthConfig& c, bool amd, Simulator& sim, const Program& prog,
                const std::vector<RankSim>& st, const std::vector<Ns>& coll_end,
                const std::string& dev_props, const std::string& ranks_list,
                const std::string& out_dir, size_t ri, RankOutput& out) {
  const int r = static_cast<int>(ri);
  RankSim rs;
  rs.rank = r;
  rs.node = r / c.gpus_per_node;
  Simulator::start_rank(rs, Simulator::kRunStart + static_cast<Ns>(r % 7) * 1300);
  rs.coll_span = st[ri].coll_span;  // pass 1's, which this pass reproduces
  out.offset = sim.node_offset(rs.node);
  TraceWriter w(fmt::format("{}/rank-{}.json", out_dir, r), Simulator::kBase);
  Simulator::Emit e{&w, &out.kernels, &out.effects, &out.busy, &out.clock, &out.steps,
                    {}, {},           {},           {},        {},         {}};
  e.fwd_seq.assign(prog.acts.size(), -1);
  e.fwd_flow.assign(prog.acts.size(), -1);
  e.fwd_ts.assign(prog.acts.size(), 0);
  std::optional<EtWriter> et;
  if (c.et) {
    et.emplace(fmt::format("{}/rank-{}.et.json", out_dir, r), sim.pid(rs), r % c.gpus_per_node,
               c.et_drop_dims);
    e.et = &*et;
  }
  write_trace_head(c, amd, sim, rs, dev_props, ranks_list, w);
  for (size_t pc = 0; pc < prog.acts.size(); ++pc) {
    const Action& a = prog.acts[pc];
    if (a.act == Act::kColl) {
      const Ns arr = sim.coll_arrive(rs, a);
      const auto pass1 = rs.coll_span[static_cast<size_t>(a.coll)];
      sim.coll_finish(rs, a, arr, coll_end[static_cast<size_t>(a.coll)], &e);
      if (rs.coll_span[static_cast<size_t>(a.coll)] != pass1)
        throw Error(
            fmt::format("chopper synth: rank {} collective {} differs between passes", r, a.coll));
    } else {
      sim.step(rs, pc, &coll_end, &e);
    }
  }
  fmt::format_to(std::back_inserter(w.buf()),
                 "\n  ],\n  \"traceName\": \"rank-{}.json\",\n  \"displayTimeUnit\": \"ms\",\n "
                 " \"baseTimeNanoseconds\": {}\n}}\n",
                 r, Simulator::kBase);
  out.bytes = w.close();
  if (et) {
    out.bytes += et->close();
    out.et_operators = et->operators();
    out.et_dims_dropped = et->dropped();
  }
}

}  // namespace

std::vector<RankOutput> trace_ranks(const SynthConfig& c, const DeviceSpec& dev, Simulator& sim,
                                    const Program& prog, const std::vector<RankSim>& st,
                                    const std::vector<Ns>& coll_end, const std::string& out_dir,
                                    SynthSummary& sum) {
  std::vector<RankOutput> outs(static_cast<size_t>(c.ranks));
  const bool amd = dev.vendor == Vendor::kAmd;
  const std::string dev_props = device_properties(c, dev);
  std::string ranks_list = "[";
  for (int i = 0; i < c.ranks; ++i) ranks_list += (i ? ", " : "") + std::to_string(i);
  ranks_list += "]";
  const unsigned threads = c.threads == 0 ? default_threads() : c.threads;
  parallel_for(static_cast<size_t>(c.ranks), threads, [&](size_t ri) {
    RankOutput& out = outs[ri];
    try {
      trace_rank(c, amd, sim, prog, st, coll_end, dev_props, ranks_list, out_dir, ri, out);
    } catch (const std::exception& ex) {
      out.error = ex.what();
    }
  });
  for (size_t r = 0; r < outs.size(); ++r) {
    if (!outs[r].error.empty()) throw Error(outs[r].error);
    sum.trace_files.push_back(fmt::format("{}/rank-{}.json", out_dir, r));
    sum.bytes_written += outs[r].bytes;
    sum.kernels += outs[r].kernels.size();
  }
  return outs;
}

}  // namespace chopper::synth_model
