// The hardware side of the run, from pass 2's record: the power and link model, the telemetry
// (nvidia-smi / amd-smi CSV per node, or the NVML sampler's CSV per metric and rank) and the
// counter passes (rocprofv3 counter collection on AMD, a CUPTI range pass on NVIDIA).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/synth/run.hpp"

namespace chopper::synth_model {

namespace fs = std::filesystem;

namespace {

// Telemetry: one CSV per node, as nvidia-smi / amd-smi print it. The power model: a GPU draws
// idle_w, plus (tdp_w - idle_w) x (0.55 + 0.45 x (clock / max clock)^2) while a compute kernel
// runs, plus (tdp_w - idle_w) x 0.15 while a collective runs. Utilization is the share of the
// interval with any kernel running (nvidia-smi's utilization.gpu). A power sample is the mean
// power over the sampling interval that ends at it; clocks, temperature and throttle reasons are
// read at the sample. Samples are taken on the node's own clock (the one its traces use) and
// stamped on the telemetry tool's clock: nvidia-smi prints local wall time with no zone, and both
// tools stamp a query a few ms after its reading (telemetry_offset_ns() in truth.json).
// Joules a rank's GPU draws over [lo, hi); `from` walks its busy spans (in start order).
double power_over(const DeviceSpec& dev, const RankOutput& o, size_t& from, Ns lo, Ns hi) {
  double joules = dev.idle_w * static_cast<double>(hi - lo) * 1e-9;
  while (from < o.busy.size() && o.busy[from].end <= lo) ++from;
  for (size_t j = from; j < o.busy.size() && o.busy[j].start < hi; ++j) {
    const Ns x = std::max<Ns>(0, std::min(o.busy[j].end, hi) - std::max(o.busy[j].start, lo));
    const double fr = static_cast<double>(o.busy[j].mhz) / dev.max_clock_mhz;
    joules += (dev.tdp_w - dev.idle_w) * (o.busy[j].comm ? 0.15 : 0.55 + 0.45 * fr * fr) *
              static_cast<double>(x) * 1e-9;
  }
  return joules;
}

// nvidia-smi style timestamp "2026/01/01 00:00:05.123" from epoch ns.
std::string smi_time(Ns t) {
  const std::time_t s = static_cast<std::time_t>(t / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>((t / 1000000) % 1000));
}

// CharLLM-PPT's NVML sampler (Zeus): one headerless "t,value" CSV per metric and rank.
void write_nvml_telemetry(const SynthConfig& c, const HardwareModel& hw,
                          const std::vector<RankOutput>& outs, const std::string& out_dir,
                          SynthSummary& sum) {
  const DeviceSpec& dev = *hw.dev;
  std::error_code ec;
  // CharLLM-PPT's NVML sampler (Zeus): one headerless "t,value" CSV per metric and rank, t =
  // time.time() epoch seconds stamped telemetry_lag_ms after the reading; power the mean over
  // the interval, utilization the busy share, the energy counter in J and the NVLink counters
  // in KiB (NVML's "throughput" fields are cumulative) as they stand at the sample.
  fs::create_directories(out_dir + "/telemetry", ec);
  const Ns T = c.telemetry_interval_ms * 1000000;
  const Ns lag = c.telemetry_lag_ms * 1000000LL;
  const char* stems[] = {"gpu_power",
                         "gpu_util",
                         "sm_clock",
                         "gpu_temp",
                         "gpu_energy",
                         "nvlink_tx_throughput",
                         "nvlink_rx_throughput"};
  for (size_t r = 0; r < outs.size(); ++r) {
    const RankOutput& o = outs[r];
    Ns t0 = INT64_MAX, t1 = 0;
    for (const auto& step : o.steps)
      t0 = std::min(t0, step.second.first), t1 = std::max(t1, step.second.second);
    std::string txt[7];
    size_t pi = 0, bi = 0, ci = 0;
    const auto& u = hw.busy_union[r];
    double energy = 5.0e6 + 1000.0 * static_cast<double>(r);  // the counter's origin, J
    double tx_kib = 1.0e9, rx_kib = 2.0e9;                    // the counters' origins, KiB
    for (Ns t = (t0 / T) * T; t <= t1 + T; t += T) {          // from before the first step
      Ns busy = 0;
      while (bi < u.size() && u[bi].second <= t - T) ++bi;
      for (size_t j = bi; j < u.size() && u[j].first < t; ++j)
        busy += std::max<Ns>(0, std::min(u[j].second, t) - std::max(u[j].first, t - T));
      const double joules = power_over(dev, o, pi, t - T, t);
      energy += joules;
      const auto [tx, rx] = link_over(o, t - T, t);
      tx_kib += tx / 1024, rx_kib += rx / 1024;
      while (ci + 1 < o.clock.size() && o.clock[ci + 1].t <= t) ++ci;
      const int mhz = o.clock.empty() || o.clock[ci].t > t ? dev.max_clock_mhz : o.clock[ci].mhz;
      const double heat = o.clock.empty() || o.clock[ci].t > t ? 0.0 : o.clock[ci].heat;
      const int temp = 32 + static_cast<int>(40.0 * std::min(1.0, heat / 60e6));
      const double ts = static_cast<double>(t + lag) * 1e-9;
      const double v[7] = {
          joules / (static_cast<double>(T) * 1e-9),
          std::min(100.0, 100.0 * static_cast<double>(busy) / static_cast<double>(T)),
          static_cast<double>(mhz),
          static_cast<double>(temp),
          energy,
          std::floor(tx_kib),
          std::floor(rx_kib)};
      for (int q = 0; q < 7; ++q)
        fmt::format_to(std::back_inserter(txt[q]), "{:.6f},{:.6f}\n", ts, v[q]);
    }
    for (int q = 0; q < 7; ++q) {
      const std::string path = fmt::format("{}/telemetry/{}_{}.csv", out_dir, stems[q], r);
      write_text_file(path, txt[q], sum.telemetry_files, sum);
    }
  }
}

// nvidia-smi / amd-smi: one CSV per node.
void write_smi_telemetry(const SynthConfig& c, const HardwareModel& hw,
                         const std::vector<RankOutput>& outs, const std::string& out_dir,
                         SynthSummary& sum) {
  const DeviceSpec& dev = *hw.dev;
  const bool amd = dev.vendor == Vendor::kAmd;
  const Ns tel_offset = telemetry_offset_ns(c, amd);
  std::error_code ec;
  fs::create_directories(out_dir + "/telemetry", ec);
  const int nodes = (c.ranks + c.gpus_per_node - 1) / c.gpus_per_node;
  const Ns T = c.telemetry_interval_ms * 1000000;
  for (int n = 0; n < nodes; ++n) {
    const std::string path =
        fmt::format("{}/telemetry/node{}.{}.csv", out_dir, n, amd ? "amd-smi" : "nvidia-smi");
    std::string txt = amd ? "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,"
                            "gfx,gfx_clock,mem_clock,throttle_status\n"
                          : "timestamp, index, power.draw [W], clocks.current.sm [MHz], "
                            "clocks.current.memory [MHz], temperature.gpu, temperature.memory, "
                            "utilization.gpu [%], clocks_event_reasons.active\n";
    const int first = n * c.gpus_per_node, last = std::min(c.ranks, first + c.gpus_per_node);
    Ns t0 = INT64_MAX, t1 = 0;
    for (int r = first; r < last; ++r) {
      for (const auto& s : outs[static_cast<size_t>(r)].steps) {
        t0 = std::min(t0, s.second.first);
        t1 = std::max(t1, s.second.second);
      }
    }
    std::vector<size_t> bi(static_cast<size_t>(last - first), 0),
        pi(static_cast<size_t>(last - first), 0), ci(static_cast<size_t>(last - first), 0);
    for (Ns t = (t0 / T) * T; t <= t1 + T; t += T) {  // from before the first step
      for (int r = first; r < last; ++r) {
        const RankOutput& o = outs[static_cast<size_t>(r)];
        const size_t k = static_cast<size_t>(r - first);
        // Busy share of (t - T, t].
        const auto& u = hw.busy_union[static_cast<size_t>(r)];
        Ns busy = 0;
        while (bi[k] < u.size() && u[bi[k]].second <= t - T) ++bi[k];
        for (size_t j = bi[k]; j < u.size() && u[j].first < t; ++j)
          busy += std::max<Ns>(0, std::min(u[j].second, t) - std::max(u[j].first, t - T));
        const double power = power_over(dev, o, pi[k], t - T, t) / (static_cast<double>(T) * 1e-9);
        while (ci[k] + 1 < o.clock.size() && o.clock[ci[k] + 1].t <= t) ++ci[k];
        const int mhz =
            o.clock.empty() || o.clock[ci[k]].t > t ? dev.max_clock_mhz : o.clock[ci[k]].mhz;
        const double heat = o.clock.empty() || o.clock[ci[k]].t > t ? 0.0 : o.clock[ci[k]].heat;
        const double util = std::min(1.0, static_cast<double>(busy) / static_cast<double>(T));
        const int temp = 32 + static_cast<int>(40.0 * std::min(1.0, heat / 60e6));
        const unsigned reasons = mhz < dev.max_clock_mhz ? (r == c.straggler_rank ? 0x2u : 0x4u)
                                                         : (util < 0.01 ? 0x1u : 0u);
        const Ns ts = t + tel_offset;
        if (amd) {
          txt += fmt::format("{},{},{:.0f},{},{},{:.0f},{},{},{}\n", ts / 1000000, r - first, power,
                             temp + 8, temp + 4, util * 100, mhz, dev.mem_clock_mhz,
                             reasons ? "POWER" : "NONE");
        } else {
          txt += fmt::format("{}, {}, {:.2f} W, {} MHz, {} MHz, {}, {}, {:.0f} %, 0x{:016x}\n",
                             smi_time(ts), r - first, power, mhz, dev.mem_clock_mhz, temp, temp + 6,
                             util * 100, reasons);
        }
      }
    }
    write_text_file(path, txt, sum.telemetry_files, sum);
  }
}

// rocprofv3 counter collection (AMD), recorded with the traces (same correlation ids): one file
// per rank, one row per compute dispatch x counter, as rocprofv3 --pmc writes it. Counters as the
// hardware sums them: GRBM_GUI_ACTIVE over the XCDs (cycles the GPU was active: duration x
// clock), SQ_VALU_MFMA_BUSY_CYCLES over CUs x 4 SIMDs (the MFMA work's cycles at the peak rate,
// the same at any clock), SQ_INSTS_VALU_MFMA_MOPS_BF16 (MFMA FLOPs / 512). Timestamps on
// BOOTTIME.
void write_rocprof_counters(const SynthConfig& c, const DeviceSpec& dev,
                            const std::vector<RankOutput>& outs, const std::string& out_dir,
                            SynthSummary& sum) {
  std::error_code ec;
  fs::create_directories(out_dir + "/counters", ec);
  const Ns boot = Simulator::kRunStart - 3600000000000LL;  // the host booted an hour earlier
  const int xcds = xcd_count(dev);
  const double peak = dev.matrix_tflops(c.dtype) * 1e12;
  for (size_t r = 0; r < outs.size(); ++r) {
    const std::string path = fmt::format("{}/counters/rank{}_counter_collection.csv", out_dir, r);
    std::string txt =
        "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\","
        "\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\","
        "\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\","
        "\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"\n";
    uint64_t dispatch = 0;
    const int64_t pid = 4000 + static_cast<int64_t>(r);
    for (const KernelTruth& k : outs[r].kernels) {
      if (is_comm(k.cls) || k.cls == OpClass::kMemcpy || k.cls == OpClass::kMemset) continue;
      ++dispatch;
      const bool mfma = k.cls == OpClass::kGemm || k.cls == OpClass::kAttention;
      const double active = static_cast<double>(k.dur_ns) * k.clock_mhz / 1000.0 * xcds;
      const double mfma_cycles =
          mfma ? k.flops / peak * dev.max_clock_mhz * 1e6 * dev.sm_count * 4 : 0.0;
      const std::pair<const char*, double> counters[] = {
          {"GRBM_GUI_ACTIVE", active},
          {"SQ_INSTS_VALU_MFMA_MOPS_BF16", mfma ? k.flops / 512.0 : 0.0},
          {"SQ_VALU_MFMA_BUSY_CYCLES", mfma_cycles},
      };
      const Ns start = k.start_ns - boot;
      for (const auto& [cn, v] : counters)
        txt += fmt::format(
            "{},{},\"Agent {}\",1,{},{},{},{},\"{}\",256,0,0,128,0,96,\"{}\",{:.0f},{},{}\n",
            k.correlation, dispatch, 4 + r % static_cast<size_t>(c.gpus_per_node), pid, pid,
            dev.sm_count * 4 * 256, k.op + 10, k.kernel, cn, v, start, start + k.dur_ns);
    }
    write_text_file(path, txt, sum.counter_files, sum);
  }
}

// NVIDIA: a CUPTI range-profiler pass per rank, as Kineto writes it with profiler_metrics and
// profiler_measure_per_kernel (a separate run: the range profiler cannot run beside the activity
// trace). One cuda_profiler_range event per kernel, in the order the kernels ran, named by the
// kernel, pid = the device, ts/dur splitting the pass's span evenly (not the kernels' times).
// The pass replays each kernel alone at the maximum clock, so its cycle counts hold no DVFS or
// co-running communication: gpc__cycles_elapsed.max = (nominal + matrix-unit loss) x f_max;
// sm__pipe_tensor_cycles_active.sum = the tensor work's cycles at the peak rate over every SM;
// sm__ops_path_tensor_src_<dt>_dst_fp32.sum = its FLOPs; CUDA-core work as FFMA instructions.
void write_cupti_counters(const SynthConfig& c, const DeviceSpec& dev,
                          const std::vector<RankOutput>& outs, const std::string& out_dir,
                          SynthSummary& sum) {
  std::error_code ec;
  fs::create_directories(out_dir + "/counters", ec);
  const double peak = dev.matrix_tflops(c.dtype) * 1e12;
  const char* dt = c.dtype == DType::kFp16   ? "fp16"
                   : c.dtype == DType::kFp8  ? "fp8"
                   : c.dtype == DType::kBf16 ? "bf16"
                                             : "tf32";
  const std::string tensor_ops = fmt::format("sm__ops_path_tensor_src_{}_dst_fp32.sum", dt);
  for (size_t r = 0; r < outs.size(); ++r) {
    const std::string path = fmt::format("{}/counters/rank{}.cupti_range.json", out_dir, r);
    std::vector<const KernelTruth*> ks;
    for (const KernelTruth& k : outs[r].kernels)
      if (k.cls != OpClass::kMemcpy && k.cls != OpClass::kMemset) ks.push_back(&k);
    std::stable_sort(ks.begin(), ks.end(), [](const KernelTruth* a, const KernelTruth* b) {
      return a->start_ns < b->start_ns;
    });
    const int dev_index = static_cast<int>(r % static_cast<size_t>(c.gpus_per_node));
    std::string txt = fmt::format(
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{{\"id\": {}, \"name\": {}, "
        "\"numSms\": {}}}],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
        "\"world_size\": {}}},\n  \"traceEvents\": [",
        dev_index, json_string(dev.name), dev.sm_count, r, c.ranks);
    const Ns t0 = Simulator::kRunStart / 1000 + 600000000;  // µs, a pass ten minutes later
    const Ns step_us = 50000;
    for (size_t i = 0; i < ks.size(); ++i) {
      const KernelTruth& k = *ks[i];
      const bool mfma = k.cls == OpClass::kGemm || k.cls == OpClass::kAttention;
      const double cycles =
          static_cast<double>(k.nominal_ns + k.mfu_ns) * dev.max_clock_mhz / 1000.0;
      const double tensor_cycles =
          mfma ? k.flops / peak * dev.max_clock_mhz * 1e6 * dev.sm_count : 0.0;
      txt += fmt::format(
          "{}\n  {{\"ph\": \"X\", \"cat\": \"cuda_profiler_range\", \"name\": {}, \"pid\": {}, "
          "\"tid\": 0, \"ts\": {}, \"dur\": {}, \"args\": {{\"gpc__cycles_elapsed.max\": {:.0f}, "
          "\"sm__pipe_tensor_cycles_active.sum\": {:.0f}, \"{}\": {:.0f}, "
          "\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\": {:.0f}}}}}",
          i == 0 ? "" : ",", json_string(k.kernel), dev_index, t0 + static_cast<Ns>(i) * step_us,
          step_us, cycles, tensor_cycles, tensor_ops, mfma ? k.flops : 0.0,
          mfma || is_comm(k.cls) ? 0.0 : k.flops / 2);
    }
    txt += "\n  ],\n  \"traceName\": \"" + fmt::format("rank{}.cupti_range.json", r) + "\"\n}\n";
    write_text_file(path, txt, sum.counter_files, sum);
  }
}

}  // namespace

// The telemetry tool's clock minus the trace clock of the same node: nvidia-smi prints local wall
// time without a zone (the run's zone is UTC+1 here), amd-smi prints epoch milliseconds; both
// stamp a sample telemetry_lag_ms after it was read.
Ns telemetry_offset_ns(const SynthConfig& c, bool amd) {
  const bool utc = amd || c.telemetry_format == "nvml";  // epoch stamps: amd-smi, the sampler
  return (utc ? 0 : c.telemetry_utc_offset_s * 1000000000LL) + c.telemetry_lag_ms * 1000000LL;
}

HardwareModel hardware_model(const DeviceSpec& dev, std::vector<RankOutput>& outs) {
  HardwareModel hw;
  hw.dev = &dev;
  // Kernels in start order; their union (what utilization counts).
  hw.busy_union.resize(outs.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    auto& b = outs[r].busy;
    std::sort(b.begin(), b.end(),
              [](const BusySpan& x, const BusySpan& y) { return x.start < y.start; });
    for (const BusySpan& x : b) {
      if (!hw.busy_union[r].empty() && x.start <= hw.busy_union[r].back().second)
        hw.busy_union[r].back().second = std::max(hw.busy_union[r].back().second, x.end);
      else
        hw.busy_union[r].push_back({x.start, x.end});
    }
  }
  // Energy of every iteration (host step span), exactly, from the same model.
  hw.iter_energy.resize(outs.size());
  for (size_t r = 0; r < outs.size(); ++r) {
    size_t from = 0;
    for (const auto& step : outs[r].steps)
      hw.iter_energy[r].push_back(
          power_over(dev, outs[r], from, step.second.first, step.second.second));
  }
  return hw;
}

std::pair<double, double> link_over(const RankOutput& o, Ns lo, Ns hi) {
  std::pair<double, double> b{0, 0};
  for (const BusySpan& x : o.busy) {
    if (!x.comm || x.end <= x.xfer_start) continue;
    const Ns in = std::max<Ns>(0, std::min(x.end, hi) - std::max(x.xfer_start, lo));
    const double share = static_cast<double>(in) / static_cast<double>(x.end - x.xfer_start);
    b.first += x.tx_bytes * share;
    b.second += x.rx_bytes * share;
  }
  return b;
}

void write_text_file(const std::string& path, const std::string& txt,
                     std::vector<std::string>& files, SynthSummary& sum) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw Error(path + ": write failed");
  const bool ok = std::fwrite(txt.data(), 1, txt.size(), f) == txt.size();
  std::fclose(f);
  if (!ok) throw Error(path + ": write failed");
  files.push_back(path);
  sum.bytes_written += txt.size();
}

void write_telemetry(const SynthConfig& c, const HardwareModel& hw,
                     const std::vector<RankOutput>& outs, const std::string& out_dir,
                     SynthSummary& sum) {
  const bool nvml = hw.dev->vendor != Vendor::kAmd && c.telemetry_format == "nvml";
  if (c.telemetry && nvml) write_nvml_telemetry(c, hw, outs, out_dir, sum);
  if (c.telemetry && !nvml) write_smi_telemetry(c, hw, outs, out_dir, sum);
}

void write_counters(const SynthConfig& c, const DeviceSpec& dev,
                    const std::vector<RankOutput>& outs, const std::string& out_dir,
                    SynthSummary& sum) {
  const bool amd = dev.vendor == Vendor::kAmd;
  if (amd && c.counters) write_rocprof_counters(c, dev, outs, out_dir, sum);
  if (!amd && c.counters) write_cupti_counters(c, dev, outs, out_dir, sum);
}

}  // namespace chopper::synth_model
