#pragma once
// The ground-truth generator: a synthetic multi-rank LLM training run whose every inefficiency is
// known. It writes what a real run leaves behind, in the formats real tools write (one Kineto JSON
// trace per rank, nvidia-smi / amd-smi telemetry CSV, a rocprofv3 counter_collection.csv on AMD),
// plus truth.json: what each injected effect cost, per rank, iteration, phase, layer and operation,
// and every kernel's true labels. Same seed, same bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/devices/device_db.hpp"

namespace chopper {

struct ModelPreset {
  std::string name;
  int layers, hidden, ffn, heads, kv_heads, vocab, experts, top_k;
};
const std::vector<ModelPreset>& model_presets();
const ModelPreset* find_preset(std::string_view name);

enum class Parallelism { kFsdp, kDdp };

struct SynthConfig {
  // Model and job.
  std::string preset = "llama3-8b";
  int layers = 0;  // 0 = the preset's; fewer makes small runs
  int batch = 1;   // local batch (sequences per rank)
  int seq = 4096;
  DType dtype = DType::kBf16;
  Parallelism parallel = Parallelism::kFsdp;
  int ranks = 8;
  int gpus_per_node = 8;
  std::string device = "h100";
  int iterations = 3;
  int first_step = 5;  // ProfilerStep numbers start here (after wait + warm-up)
  uint64_t seed = 1;
  double ddp_bucket_mb = 25;

  // Efficiencies of a healthy run.
  double matrix_efficiency = 0.75;  // achieved / peak for GEMMs at max clock
  double memory_efficiency = 0.80;  // achieved / peak HBM bandwidth
  double comm_efficiency = 0.80;    // achieved / link bandwidth for collectives

  // Injected inefficiencies (each 0 = off).
  double dvfs = 0;               // clock drop under sustained load: floor = max × (1 − dvfs)
  double mfu_loss = 0;           // matrix-unit utilization loss: GEMM efficiency × (1 − loss)
  double comm_interference = 0;  // compute kernels slow by this factor while comm overlaps
  double comm_slowdown = 1;      // collectives take this many times their model time
  bool prefetch = true;          // FSDP: issue the next layer's all-gather early
  int64_t host_op_ns = 12000;    // CPU time per op before its launch (Python + dispatcher)
  int64_t launch_ns = 5000;      // cudaLaunchKernel call duration
  int64_t launch_latency_ns = 3000;  // launch end -> earliest kernel start
  int64_t data_loader_stall_ns = 0;  // host stall at the start of each iteration
  int straggler_rank = -1;           // -1 = none
  double straggler_clock = 1.0;      // straggler's clock cap, × max clock
  int64_t straggler_host_ns = 0;     // extra host delay per iteration on the straggler
  int64_t node_clock_offset_ns = 0;  // node k's clock is off by k × this (alternating sign)
  double noise = 0;                  // relative σ of kernel duration noise

  int64_t telemetry_interval_ms = 10;
  int64_t telemetry_utc_offset_s = 3600;  // nvidia-smi's local time zone (UTC+1)
  int64_t telemetry_lag_ms = 4;           // a sample's stamp comes this long after its reading
  bool telemetry = true;
  // A host execution trace per rank beside its Kineto trace (rank-N.et.json), the Kineto host
  // ops' Record function id set to match (synth/et_writer.hpp); a fraction et_drop_dims of the
  // launching ops that have shapes leave them out of the Kineto trace (the ET holds them).
  bool et = false;
  double et_drop_dims = 0;
  // NVIDIA telemetry as "nvidia-smi" (one --query-gpu CSV per node) or "nvml" (CharLLM-PPT's
  // NVML sampler: one t,value CSV per metric and rank, with the energy and NVLink counters).
  std::string telemetry_format = "nvidia-smi";
  bool counters =
      true;  // per rank: rocprofv3 counter collection (AMD), a CUPTI range pass (NVIDIA)
  unsigned threads = 0;  // 0 = all cores
};

// Named scenarios: "healthy", "dvfs", "exposed-comm", "launch-bound", "straggler", "demo".
bool apply_scenario(const std::string& name, SynthConfig& c);
std::vector<std::string> scenario_names();

struct SynthSummary {
  std::vector<std::string> trace_files;
  std::vector<std::string> telemetry_files;
  std::vector<std::string> counter_files;
  std::string truth_file;
  uint64_t kernels = 0;
  uint64_t bytes_written = 0;
};

// Writes the run into `out_dir` (created): rank-N.json per rank, telemetry/…, truth.json.
// Throws Error on bad configuration or I/O failure.
SynthSummary synthesize(const SynthConfig& c, const std::string& out_dir);

}  // namespace chopper
