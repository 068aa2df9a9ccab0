#include "chopper/ingest/hardware_files.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <new>
#include <optional>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/text.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/ingest/nsys/nsys_gpu_metrics.hpp"
#include "chopper/ingest/record/cpu_reader.hpp"
#include "chopper/ingest/rocprof/counter_reader.hpp"
#include "chopper/ingest/telemetry/telemetry_reader.hpp"

namespace chopper {
namespace {

namespace fs = std::filesystem;

enum class Want { kAny, kTelemetry, kCounters };

bool ends_with(std::string_view s, std::string_view t) {
  return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
}

// A name the search looks at: text tables and logs, and JSON inside the hardware subdirectories
// (top-level JSON files are traces).
bool candidate_name(std::string name, bool json_too) {
  name = ascii_lower(name);
  for (std::string_view z : {".gz", ".zst"})
    if (ends_with(name, z)) name.resize(name.size() - z.size());
  return ends_with(name, ".csv") || ends_with(name, ".txt") || ends_with(name, ".log") ||
         (json_too && ends_with(name, ".json"));
}

// The directory and file name of `path` with `token` and any compression suffix taken out, so
// that rocprofv3's "<dir>/<prefix>_kernel_trace.csv" and "<dir>/<prefix>_counter_collection.csv"
// give the same key. "" when the name has no `token`.
std::string sibling_key(const std::string& path, std::string_view token) {
  std::string p = path;
  for (std::string_view z : {".gz", ".zst"})
    if (ends_with(ascii_lower(p), z)) p.resize(p.size() - z.size());
  const size_t slash = p.find_last_of('/');
  const size_t at = p.rfind(token);
  if (at == std::string::npos || (slash != std::string::npos && at < slash)) return "";
  return p.substr(0, at) + "\x1f" + p.substr(at + token.size());
}

struct Candidate {
  std::string path;
  Want want;
  std::string skip;  // found in a directory but not a regular file: why it is not read
};

struct Result {
  std::string path;
  bool telemetry = false, counters = false;
  TelemetryData t;
  CounterTable c;
  std::optional<CpuUtilization> cpu;  // chopper record's CPU files
  std::optional<ThreadSamples> threads;
  std::string skipped, error;
  RecordFile recorded = RecordFile::kNone;  // a chopper record file other than its GPU file
  RecordMeta meta;
  ClockCheck clock;
};

// The first 4 KiB of a file (decompressed), for sniffing.
std::string head_of(const std::string& path) {
  std::string head(4096, '\0');
  auto src = ByteSource::open_file(path);
  size_t n = 0;
  while (n < head.size()) {
    const size_t k = src->read(head.data() + n, head.size() - n);
    if (k == 0) break;
    n += k;
  }
  head.resize(n);
  return head;
}

// Whether a counter file is whole by itself: a JSON one (a CUPTI range-profiler pass, rocprofv3's
// JSON). A rocprofv3 counter CSV takes its times from the kernel trace beside it.
bool standalone(const CounterTable& t) {
  return t.format == "cupti-range-json" || t.format == "rocprofv3-json";
}

// `to` is asked for only when the file is telemetry (its window may not be known yet).
void read_one(const Candidate& c, const std::function<TelemetryReadOptions()>& to,
              const CounterFilter& keep, Result& r) {
  r.path = c.path;
  if (!c.skip.empty()) {
    r.skipped = c.skip;
    return;
  }
  try {
    const std::string head = head_of(c.path);
    // chopper record's files other than its GPU file (which is telemetry): recognised and read.
    const RecordFile rf = c.want == Want::kCounters ? RecordFile::kNone : sniff_record_file(head);
    if (rf == RecordFile::kMeta) {
      r.meta = read_record_meta(c.path);
      r.recorded = rf;
    } else if (rf == RecordFile::kClock) {
      r.clock = read_record_clock(c.path);
      r.recorded = rf;
    } else if (rf == RecordFile::kCpu || rf == RecordFile::kThreads) {
      r.recorded = rf;
      if (rf == RecordFile::kCpu)
        r.cpu = read_cpu_csv(c.path);
      else
        r.threads = read_threads_csv(c.path);
    } else if (c.want != Want::kTelemetry && !sniff_counters(head).empty()) {
      r.c = read_counters_file(c.path);
      r.counters = true;
      if (keep && standalone(r.c) && !keep(r.c)) r.c.drop_rows();
    } else if (c.want != Want::kCounters && !sniff_telemetry(head, c.path).empty()) {
      r.t = read_telemetry_file(c.path, to());
      r.telemetry = true;
    } else if (c.want == Want::kAny) {
      r.skipped = "neither telemetry nor hardware counters";
    } else {
      r.error =
          c.path + ": byte 0: not " +
          (c.want == Want::kTelemetry ? "a telemetry file (see docs/telemetry_formats.md)"
                                      : "a hardware-counter file (see docs/counter_formats.md)");
    }
  } catch (const NotATraceError& e) {
    // Looked like one (a Kineto JSON in counters/ with no range-profiler events): not fatal
    // unless it was named as a counter file.
    if (c.want == Want::kAny)
      r.skipped = e.reason();
    else
      r.error = e.what();
  } catch (const std::bad_alloc&) {
    r.error = c.path + ": out of memory while reading this file";
  } catch (const std::exception& e) {
    r.error = e.what();
  }
}

// The candidate files of a run: every .csv/.txt/.log of its directories, the JSON too in their
// telemetry/ and counters/ folders, and the files named; a file found twice is read once, as named.
std::vector<Candidate> list_candidates(const std::vector<std::string>& run_paths,
                                       const std::vector<std::string>& telemetry,
                                       const std::vector<std::string>& counters) {
  std::vector<Candidate> cands;
  auto list = [&](const fs::path& dir, bool json_too) {
    std::error_code ec;
    std::vector<std::string> found;
    std::vector<std::pair<std::string, std::string>> odd;  // not regular files: path, why
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (!candidate_name(e.path().filename().string(), json_too)) continue;
      std::error_code fe;
      const fs::file_status st = e.status(fe);
      if (st.type() == fs::file_type::regular) {
        found.push_back(e.path().string());
      } else if (st.type() == fs::file_type::not_found) {
        std::error_code le;
        if (e.is_symlink(le)) odd.emplace_back(e.path().string(), "a dangling symbolic link");
      } else if (st.type() != fs::file_type::directory) {
        struct stat sb {};
        odd.emplace_back(e.path().string(), ::stat(e.path().c_str(), &sb) == 0
                                                ? "not a regular file (" +
                                                      std::string(file_type_name(sb.st_mode)) + ")"
                                                : "not a regular file");
      }
    }
    std::sort(found.begin(), found.end());
    for (auto& f : found) cands.push_back({std::move(f), Want::kAny, ""});
    for (auto& [f, why] : odd) cands.push_back({std::move(f), Want::kAny, std::move(why)});
  };
  for (const std::string& p : run_paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) continue;
    list(p, false);
    for (const char* sub : {"telemetry", "counters"})
      if (fs::is_directory(fs::path(p) / sub, ec)) list(fs::path(p) / sub, true);
  }
  for (const std::string& p : telemetry) cands.push_back({p, Want::kTelemetry, ""});
  for (const std::string& p : counters) cands.push_back({p, Want::kCounters, ""});
  // A file found twice (named and in a directory) is read once, as named.
  std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    return a.path != b.path ? a.path < b.path : a.want > b.want;
  });
  cands.erase(std::unique(cands.begin(), cands.end(),
                          [](const Candidate& a, const Candidate& b) { return a.path == b.path; }),
              cands.end());
  return cands;
}

// Each chopper record GPU file gets its host's record.json and clock check: the ones in its
// directory whose host (record.json's "host", else the file name's) is the GPU file's, else the
// only ones in its directory.
void attach_recorded_hosts(HardwareFiles& out) {
  auto dir_of = [](const std::string& p) {
    const size_t s = p.find_last_of('/');
    return s == std::string::npos ? std::string() : p.substr(0, s);
  };
  for (TelemetryData& d : out.telemetry) {
    if (d.format != "chopper-record") continue;
    const std::string dir = dir_of(d.file), host = record_file_host(d.file);
    const RecordMeta* meta = nullptr;
    size_t in_dir = 0;
    const RecordMeta* only = nullptr;
    for (const RecordMeta& m : out.recorded_hosts) {
      if (dir_of(m.file) != dir) continue;
      ++in_dir;
      only = &m;
      if (!host.empty() && (m.host == host || record_file_host(m.file) == host)) meta = &m;
    }
    if (meta == nullptr && in_dir == 1) meta = only;
    const ClockCheck* clock = nullptr;
    size_t clocks_in_dir = 0;
    const ClockCheck* only_clock = nullptr;
    for (const ClockCheck& c : out.recorded_clocks) {
      if (dir_of(c.file) != dir) continue;
      ++clocks_in_dir;
      only_clock = &c;
      if (!host.empty() && record_file_host(c.file) == host) clock = &c;
    }
    if (clock == nullptr && clocks_in_dir == 1) clock = only_clock;
    d.recorder.host = host;
    if (meta != nullptr) {
      d.recorder.found = true;
      d.recorder.host = meta->host;
      d.recorder.pids = meta->pids;
    }
    if (clock != nullptr) d.recorder.clock_note = clock->note();
  }
}

}  // namespace

bool has_hardware_files(const std::vector<std::string>& run_paths,
                        const std::vector<std::string>& telemetry,
                        const std::vector<std::string>& counters) {
  if (!telemetry.empty() || !counters.empty()) return true;
  for (const Candidate& c : list_candidates(run_paths, telemetry, counters)) {
    if (!c.skip.empty()) continue;
    try {
      const std::string head = head_of(c.path);
      if (!sniff_counters(head).empty() || !sniff_telemetry(head, c.path).empty() ||
          is_cpu_csv(head) || is_threads_csv(head))
        return true;
    } catch (const std::exception&) {
      return true;  // unreadable: load_hardware reports it
    }
  }
  return !nsys_exports_with_gpu_metrics(run_paths).empty();
}

HardwareFiles load_hardware(const std::vector<std::string>& run_paths,
                            const std::vector<std::string>& telemetry,
                            const std::vector<std::string>& counters, unsigned threads,
                            const TelemetryWindow& window, const CounterFilter& keep_counter_rows) {
  std::promise<TelemetryWindow> given;
  given.set_value(window);
  return load_hardware(run_paths, telemetry, counters, threads, given.get_future().share(),
                       keep_counter_rows);
}

HardwareFiles load_hardware(const std::vector<std::string>& run_paths,
                            const std::vector<std::string>& telemetry,
                            const std::vector<std::string>& counters, unsigned threads,
                            std::shared_future<TelemetryWindow> window,
                            const CounterFilter& keep_counter_rows) {
  const auto to = [&window] {
    TelemetryReadOptions o;
    o.window = window.get();
    return o;
  };
  std::vector<Candidate> cands = list_candidates(run_paths, telemetry, counters);
  std::vector<Result> res(cands.size());
  parallel_for(cands.size(), threads == 0 ? default_threads() : threads,
               [&](size_t i) { read_one(cands[i], to, keep_counter_rows, res[i]); });
  HardwareFiles out;
  std::vector<CounterTable> kernel_traces;
  std::vector<CpuUtilization> cpus;
  std::vector<ThreadSamples> threads_files;
  for (Result& r : res) {
    if (r.cpu) cpus.push_back(std::move(*r.cpu));
    if (r.threads) threads_files.push_back(std::move(*r.threads));
    if (!r.error.empty()) {
      out.errors.push_back(std::move(r.error));
      out.error_files.push_back(r.path);
    } else if (!r.skipped.empty()) {
      out.skipped.push_back({r.path, std::move(r.skipped)});
    } else if (r.recorded == RecordFile::kMeta) {
      out.recorded_hosts.push_back(std::move(r.meta));
    } else if (r.recorded == RecordFile::kClock) {
      out.recorded_clocks.push_back(std::move(r.clock));
    } else if (r.recorded != RecordFile::kNone) {
      out.recorded_cpu_files.push_back(r.path);
    } else if (r.telemetry) {
      out.telemetry.push_back(std::move(r.t));
    } else if (r.counters) {
      if (r.c.counter_names.empty())
        kernel_traces.push_back(std::move(r.c));
      else
        out.counters.push_back(std::move(r.c));
    }
  }
  attach_recorded_hosts(out);
  // Nsight Systems exports among the traces: their GPU metrics, on the export's own clock.
  for (const std::string& f : nsys_exports_with_gpu_metrics(run_paths)) {
    try {
      out.telemetry.push_back(read_nsys_gpu_metrics(f));
    } catch (const std::exception& e) {
      out.errors.push_back(e.what());
      out.error_files.push_back(f);
    }
  }
  out.recorded_cpu = group_recorded_cpu(std::move(cpus), std::move(threads_files));
  // Kernel traces give counter rows their timestamps; alone they hold no counters. Dispatch ids
  // are per process, so a kernel trace times only the counter file of its own process: the one
  // rocprofv3 wrote beside it (the same name with counter_collection for kernel_trace), else the
  // only counter file that lacks times when there is one.
  std::vector<CounterTable*> untimed;
  for (CounterTable& c : out.counters)
    if (!standalone(c) &&
        std::any_of(c.start_ns.begin(), c.start_ns.end(), [](Ns t) { return t == kNoTime; }))
      untimed.push_back(&c);
  std::vector<bool> timed(untimed.size(), false);
  for (const CounterTable& k : kernel_traces) {
    const std::string key = sibling_key(k.file, "kernel_trace");
    size_t match = SIZE_MAX;
    for (size_t i = 0; i < untimed.size() && !key.empty(); ++i)
      if (sibling_key(untimed[i]->file, "counter_collection") == key) match = i;
    if (match == SIZE_MAX && kernel_traces.size() == 1 && untimed.size() == 1) match = 0;
    if (match == SIZE_MAX || timed[match]) {
      out.skipped.push_back(
          {k.file, untimed.empty() ? "a kernel trace with no counter file to time"
                                   : "a kernel trace with no counter file of its own process "
                                     "beside it (rocprofv3 names them <prefix>_kernel_trace and "
                                     "<prefix>_counter_collection)"});
      continue;
    }
    join_kernel_trace(*untimed[match], k);
    timed[match] = true;
  }
  if (keep_counter_rows)  // the others, now that their kernel traces have timed them
    for (CounterTable& c : out.counters)
      if (!standalone(c) && c.size() > 0 && !keep_counter_rows(c)) c.drop_rows();
  return out;
}

}  // namespace chopper
