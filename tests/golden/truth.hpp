#pragma once
// truth.json, as chopper synth writes it (docs/formats.md), read back for golden tests.
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "chopper/synth/synth.hpp"

namespace chopper::test {

namespace fs = std::filesystem;

inline fs::path temp_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("chopper_golden_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  return d;
}

inline SynthConfig small(const std::string& device, Parallelism par) {
  SynthConfig c;
  c.device = device;
  c.parallel = par;
  c.layers = 2;
  c.ranks = 4;
  c.gpus_per_node = 2;  // two nodes: inter-node bandwidth, node clock offsets
  c.iterations = 2;
  c.seq = 2048;
  c.threads = 2;
  return c;
}

struct TruthKernel {
  int64_t correlation, iteration, layer, clock_mhz, start_ns, dur_ns, nominal_ns, mfu_ns,
      straggler_ns, dvfs_ns, interference_ns, noise_ns, exposed_comm_ns, launch_overhead_ns,
      host_stall_ns;
  std::string phase, operation, op_class;
  double flops, bytes;
  int64_t theoretical_ns = 0;  // roofline time at max clock and peak rates
  // The launch wait splits at the launch call's start: host_late_ns before it (the host had not
  // issued the launch), launch_overhead_ns after it (the launch latency), host_stall_ns first.
  int64_t host_late_ns = 0;
};

struct TruthRank {
  int64_t rank, offset_ns;
  int64_t telemetry_offset_ns = 0;                          // telemetry clock − trace clock
  std::map<int64_t, double> energy_j;                       // per iteration (host step span)
  std::map<int64_t, std::pair<double, double>> link_bytes;  // NVLink tx, rx per iteration
  std::map<int64_t, int64_t> straggler_cost_ns;  // step time the straggler adds, per iteration
  std::map<int64_t, int64_t> noise_cost_ns;      // step time the duration noise adds
  bool straggler;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> iterations;  // N, start, end
  std::vector<TruthKernel> kernels;
  std::map<std::string, int64_t> effect_totals;
};

inline std::vector<TruthRank> read_truth(const fs::path& dir) {
  simdjson::dom::parser p;
  simdjson::dom::element doc = p.load((dir / "truth.json").string());
  std::vector<TruthRank> out;
  for (simdjson::dom::element r : doc["ranks"].get_array()) {
    TruthRank t;
    t.rank = r["rank"].get_int64();
    t.offset_ns = r["clock_offset_ns"].get_int64();
    int64_t tel = 0;
    if (r["telemetry_offset_ns"].get_int64().get(tel) == simdjson::SUCCESS)
      t.telemetry_offset_ns = tel;
    t.straggler = r["straggler"].get_bool();
    for (simdjson::dom::element it : r["iterations"].get_array()) {
      t.iterations.emplace_back(it["iteration"].get_int64(), it["start_ns"].get_int64(),
                                it["end_ns"].get_int64());
      double e = 0;
      if (it["energy_j"].get_double().get(e) == simdjson::SUCCESS)
        t.energy_j[it["iteration"].get_int64()] = e;
      int64_t sc = 0;
      if (it["straggler_cost_ns"].get_int64().get(sc) == simdjson::SUCCESS)
        t.straggler_cost_ns[it["iteration"].get_int64()] = sc;
      int64_t nc = 0;
      if (it["noise_cost_ns"].get_int64().get(nc) == simdjson::SUCCESS)
        t.noise_cost_ns[it["iteration"].get_int64()] = nc;
      double tx = 0, rx = 0;
      if (it["link_tx_bytes"].get_double().get(tx) == simdjson::SUCCESS &&
          it["link_rx_bytes"].get_double().get(rx) == simdjson::SUCCESS)
        t.link_bytes[it["iteration"].get_int64()] = {tx, rx};
    }
    for (simdjson::dom::element e : r["effects"].get_array())
      for (auto [k, v] : e.get_object())
        if (k.size() > 3 && k.substr(k.size() - 3) == "_ns")
          t.effect_totals[std::string(k)] += v.get_int64();
    for (simdjson::dom::element row : r["kernels"]["rows"].get_array()) {
      simdjson::dom::array a = row.get_array();
      TruthKernel k;
      k.correlation = a.at(0).get_int64();
      k.iteration = a.at(1).get_int64();
      k.phase = std::string(std::string_view(a.at(2)));
      k.layer = a.at(3).get_int64();
      k.operation = std::string(std::string_view(a.at(4)));
      k.op_class = std::string(std::string_view(a.at(5)));
      k.clock_mhz = a.at(6).get_int64();
      k.start_ns = a.at(7).get_int64();
      k.dur_ns = a.at(8).get_int64();
      k.nominal_ns = a.at(9).get_int64();
      k.mfu_ns = a.at(10).get_int64();
      k.straggler_ns = a.at(11).get_int64();
      k.dvfs_ns = a.at(12).get_int64();
      k.interference_ns = a.at(13).get_int64();
      k.noise_ns = a.at(14).get_int64();
      k.exposed_comm_ns = a.at(15).get_int64();
      k.launch_overhead_ns = a.at(16).get_int64();
      k.host_stall_ns = a.at(17).get_int64();
      k.flops = a.at(18).get_double();
      k.bytes = a.at(19).get_double();
      if (a.size() > 20) k.theoretical_ns = a.at(20).get_int64();
      if (a.size() > 21) k.host_late_ns = a.at(21).get_int64();
      t.kernels.push_back(k);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace chopper::test
