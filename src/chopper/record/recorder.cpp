#include "chopper/record/recorder.hpp"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <memory>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/record/child.hpp"
#include "chopper/record/clock.hpp"
#include "chopper/record/cpu_sampler.hpp"
#include "chopper/record/csv_stream.hpp"
#include "chopper/record/gpu_backend.hpp"
#include "chopper/record/run_info.hpp"
#include "chopper/record/thread_sampler.hpp"

namespace chopper::record {

namespace {

constexpr int64_t kSecondNs = 1000000000;

std::string default_run_dir() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char name[64];
  std::strftime(name, sizeof name, "chopper-run-%Y%m%d-%H%M%S", &tm);
  return name;
}

// The GPU library --gpu asks for; nullptr for none. Fills the run's gpu_backend / gpu_note.
// Returns false (said on stderr) when a library named explicitly cannot be used.
bool choose_gpu(const std::string& gpu, std::unique_ptr<GpuBackend>& backend, RunInfo& info) {
  if (gpu == "none") {
    info.gpu_note = "--gpu none";
    return true;
  }
  GpuOpen nvml, amd;
  if (gpu == "nvml" || gpu == "auto") nvml = open_nvml();
  if (gpu == "nvml" && !nvml.backend) {
    fmt::print(stderr, "chopper record: --gpu nvml: {}\n", terminal_safe(nvml.error));
    return false;
  }
  if (gpu == "amdsmi" || (gpu == "auto" && !nvml.backend)) amd = open_amdsmi();
  if (gpu == "amdsmi" && !amd.backend) {
    fmt::print(stderr, "chopper record: --gpu amdsmi: {}\n", terminal_safe(amd.error));
    return false;
  }
  backend = nvml.backend ? std::move(nvml.backend) : std::move(amd.backend);
  if (backend) {
    info.gpu_backend = backend->name();
    info.gpu_note = backend->version();
    info.gpus = backend->devices();
    return true;
  }
  info.gpu_note = "no GPU library: NVML: " + nvml.error + "; AMD SMI: " + amd.error;
  fmt::print(stderr, "chopper record: no GPU found ({}): recording CPU only\n",
             terminal_safe(info.gpu_note.substr(std::strlen("no GPU library: "))));
  return true;
}

std::string gpu_header(const GpuBackend& g) {
  std::string h =
      "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
      "util_mem_pct,throttle_reasons";
  const auto extras = g.extras();
  for (unsigned k = 0; k < kGpuExtraCount; ++k)
    if (extras[k]) h.append(",").append(kGpuExtraColumns[k]);
  return h;
}

template <typename T>
void append_opt(fmt::memory_buffer& b, const std::optional<T>& v) {
  b.push_back(',');
  if (v) append_int(b, *v);
}

// Everything one recording holds open, and one tick of it.
struct Recording {
  RunInfo info;
  std::string json_path;
  std::unique_ptr<GpuBackend> gpu;
  std::array<bool, kGpuExtraCount> extras{};
  GpuSample sample;
  CsvStream gpu_csv, cpu_csv, threads_csv, clock_csv;
  std::optional<CpuSampler> cpu;
  std::optional<ThreadSampler> threads;

  // Every GPU read once (each row stamped with the realtime midpoint of its own reads), their
  // cumulative counters too when `counters`, then /proc/stat; each file handed to the kernel.
  void tick(bool counters) {
    if (gpu) {
      const auto& devices = gpu->devices();
      for (size_t i = 0; i < devices.size(); ++i) {
        const int64_t before = realtime_ns();
        gpu->read(i, sample, counters);
        const int64_t after = realtime_ns();
        fmt::memory_buffer& b = gpu_csv.buf();
        append_int(b, before + (after - before) / 2);
        b.push_back(',');
        append_int(b, devices[i].index);
        b.push_back(',');
        append_cell(b, devices[i].uuid);
        b.push_back(',');
        if (sample.power_mw) append_milli(b, *sample.power_mw);
        b.push_back(',');
        if (sample.energy_mj) append_milli(b, *sample.energy_mj);
        append_opt(b, sample.sm_clock_mhz);
        append_opt(b, sample.mem_clock_mhz);
        append_opt(b, sample.temp_c);
        append_opt(b, sample.util_gpu_pct);
        append_opt(b, sample.util_mem_pct);
        b.push_back(',');
        if (sample.throttle_reasons) {
          char hex[24];
          const auto end = fmt::format_to(hex, "0x{:x}", *sample.throttle_reasons);
          b.append(hex, end);
        }
        for (unsigned k = 0; k < kGpuExtraCount; ++k)
          if (extras[k]) append_opt(b, sample.extra[k]);
        b.push_back('\n');
      }
      gpu_csv.flush();
    }
    if (cpu) {
      cpu->sample(cpu_csv);
      cpu_csv.flush();
    }
  }
  void sample_threads() {
    if (!threads) return;
    threads->sample(threads_csv);
    threads_csv.flush();
  }
  void second() {
    append_clock_row(clock_csv);
    clock_csv.flush();
    if (threads) info.pids = threads->pids();
    try {
      write_record_json(json_path, info);
    } catch (const Error& e) {
      // Said once; the samples go on (the file is written again at the end).
      if (!json_failed) fmt::print(stderr, "chopper record: {}\n", terminal_safe(e.what()));
      json_failed = true;
    }
  }
  bool json_failed = false;
};

// Opens the run's files (throws Error naming the one that failed).
void open_files(Recording& r, const std::string& dir, bool no_cpu) {
  const std::string base = dir + "/" + r.info.host;
  r.json_path = base + ".record.json";
  if (r.gpu) {
    r.extras = r.gpu->extras();
    r.gpu_csv.open(base + ".gpu.csv", gpu_header(*r.gpu));
  }
  if (!no_cpu) {
    r.cpu.emplace();
    r.cpu->open();
    r.cpu_csv.open(base + ".cpu.csv", "time_ns,cpu,util_pct,user_pct,system_pct,iowait_pct");
    r.threads_csv.open(base + ".threads.csv", "time_ns,pid,ppid,tid,comm,processor,cpu_time_ns");
  }
  r.clock_csv.open(base + ".clock.csv", "realtime_ns,monotonic_ns");
}

// Sleeps until the monotonic time `deadline_ns`; true when CMD ended meanwhile.
bool sleep_until(int64_t deadline_ns, ChildProcess& child) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / kSecondNs);
  ts.tv_nsec = static_cast<long>(deadline_ns % kSecondNs);
  for (;;) {
    const int r = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    if (r != EINTR) return child.poll();
    if (child.poll()) return true;  // SIGCHLD woke us
  }
}

// The ticker: absolute deadlines on CLOCK_MONOTONIC, every interval from the start (no drift);
// a tick whose deadline has passed is skipped, not run late in a burst.
void sample_until_exit(Recording& r, ChildProcess& child, const RecordOptions& o) {
  const int64_t interval = int64_t{o.interval_ms} * 1000000;
  const int64_t thread_interval = int64_t{o.thread_interval_ms} * 1000000;
  const int64_t counter_interval = int64_t{o.counter_interval_ms} * 1000000;
  int64_t next = monotonic_ns();
  int64_t next_threads = next, next_second = next + kSecondNs, next_counters = next;
  while (!child.poll()) {
    // The counters at the first tick at or after their deadline (a tick is never run late).
    const bool counters = monotonic_ns() >= next_counters;
    r.tick(counters);
    int64_t now = monotonic_ns();
    if (counters) {
      next_counters += counter_interval;
      if (next_counters <= now)
        next_counters += ((now - next_counters) / counter_interval + 1) * counter_interval;
    }
    if (now >= next_threads) {
      r.sample_threads();
      next_threads += thread_interval;
      if (next_threads <= now)
        next_threads += ((now - next_threads) / thread_interval + 1) * thread_interval;
    }
    if (now >= next_second) {
      r.second();
      next_second += kSecondNs;
      if (next_second <= now) next_second += ((now - next_second) / kSecondNs + 1) * kSecondNs;
    }
    next += interval;
    now = monotonic_ns();
    if (next <= now) next += ((now - next) / interval + 1) * interval;
    if (sleep_until(next, child)) break;
  }
}

int64_t own_cpu_ns() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return (int64_t{ru.ru_utime.tv_sec} + ru.ru_stime.tv_sec) * kSecondNs +
         (int64_t{ru.ru_utime.tv_usec} + ru.ru_stime.tv_usec) * 1000;
}

}  // namespace

int record(const RecordOptions& o) {
  namespace fs = std::filesystem;
  Recording r;
  r.info.host = file_host_name();
  r.info.command = o.command;
  r.info.interval_ms = o.interval_ms;
  r.info.thread_interval_ms = o.thread_interval_ms;
  r.info.counter_interval_ms = o.counter_interval_ms;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  r.info.logical_cpus = cpus > 0 ? static_cast<unsigned>(cpus) : 0;
  if (!choose_gpu(o.gpu, r.gpu, r.info)) return 2;
  std::string run_dir;
  try {
    std::error_code ec;
    const fs::path dir = fs::absolute(o.run_dir.empty() ? default_run_dir() : o.run_dir, ec);
    fs::create_directories(dir / "telemetry", ec);
    if (ec) throw Error((dir / "telemetry").string() + ": cannot be created: " + ec.message());
    run_dir = dir.lexically_normal().string();
    if (run_dir.size() > 1 && run_dir.back() == '/') run_dir.pop_back();
    open_files(r, run_dir + "/telemetry", o.no_cpu);
    r.info.start_realtime_ns = realtime_ns();
    write_record_json(r.json_path, r.info);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper record: {}\n", terminal_safe(e.what()));
    return 2;
  }
  ::setenv("CHOPPER_RUN_DIR", run_dir.c_str(), 1);
  append_clock_row(r.clock_csv);
  r.clock_csv.flush();
  ChildProcess child;
  const int err = child.spawn(o.command);
  int status = 0;
  if (err != 0) {
    fmt::print(stderr, "chopper record: {}: {}\n", terminal_safe(o.command[0]),
               err == ENOENT ? "command not found" : std::strerror(err));
    status = err == ENOENT ? 127 : 126;
  } else {
    r.info.pids = {child.pid()};
    if (r.cpu) r.threads.emplace(child.pid());
    sample_until_exit(r, child, o);
    status = child.status();
  }
  r.info.end_realtime_ns = realtime_ns();
  r.info.exit_status = status;
  if (r.threads) r.info.pids = r.threads->pids();
  append_clock_row(r.clock_csv);
  r.clock_csv.flush();
  r.info.recorder_cpu_ns = own_cpu_ns();
  try {
    write_record_json(r.json_path, r.info);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper record: {}\n", terminal_safe(e.what()));
  }
  for (CsvStream* f : {&r.gpu_csv, &r.cpu_csv, &r.threads_csv, &r.clock_csv}) {
    f->close();
    if (f->lost_bytes() > 0)
      fmt::print(stderr, "chopper record: {}: {} bytes of samples could not be written\n",
                 f->path(), f->lost_bytes());
  }
  return status;
}

}  // namespace chopper::record
