// chopper-bench-telemetry: what reading and aligning GPU telemetry adds to `chopper analyze`.
//
//   chopper-bench-telemetry RUN_DIR [--telemetry FILE]... [--repeat R] [--threads N]
//                           [--chopper PATH [--baseline PATH]] [--target 0.10] [--no-whole]
//
// RUN_DIR is a synthesized run with its own short telemetry (run_telemetry_bench.sh makes the demo
// run and a 1-hour recording around it). Variants: "none" (no hardware files), "short" (the files
// in RUN_DIR/telemetry), and each --telemetry FILE read instead of them; the run's other hardware
// files (counters) are in none of them.
//
// With --chopper, `PATH analyze` itself is run first on each variant (--no-hardware for "none";
// otherwise a directory of links to RUN_DIR's traces, with the variant's files as its telemetry/),
// R rounds, variants alternating: wall, user + system CPU (wait4) and peak RSS of the process,
// and what each variant adds as % of "none". --baseline runs another build on the same variants in
// the same rounds (the code before a change).
//
// In process (the traces loaded and labelled once, outside the timing), per variant, median and
// best of R runs of CPU time:
//   load      load_hardware(..., telemetry_window(run)): find, sniff and read (windowed) the files
//   align     align_hardware
//   analyses  analyze_run with the hardware, less analyze_run without it
//   read+al%  load + align, as % of analyze without telemetry: the process's median CPU time with
//             --chopper, else load + label + analyze_run in process (no tables written)
//   added     load + align + analyses, and as %
// and the peak RSS of the variant's runs (VmHWM, reset before each). Then each variant is read
// whole too (no window: what `analyze` did before windowed reading), timed once, and the two are
// compared: every alignment (offset, uncertainty, period, correlation, method, ranks) and every
// rank's aligned series (times and values) must be identical ("windowed = whole: yes"). For a
// compressed file, the time to decompress all of it (no parsing) is given: the floor of a read
// that must see every row's time.
//
// Exit status 1 when a windowed read aligns differently from the whole read, or (with --chopper)
// when reading and aligning a plain (uncompressed) --telemetry file, load + align, costs more than
// --target (default 0.10) of analyze without telemetry; 2 on usage.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/analysis/analysis.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/memory.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/link/hardware_align.hpp"
#include "chopper/pipeline/load.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Clock {
  double wall = 0, cpu = 0;
  static Clock now() {
    Clock c;
    c.wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    c.cpu = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
    return c;
  }
  Clock operator-(const Clock& o) const { return {wall - o.wall, cpu - o.cpu}; }
};

int64_t status_kib(std::string_view field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':')
      return std::atoll(line.c_str() + field.size() + 1);
  return -1;
}

void reset_peak() {
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
double best(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

struct Variant {
  std::string name;
  std::vector<std::string> files;  // what load_hardware is given
  bool plain = false;              // a --telemetry file, uncompressed: held to the target
  bool compressed = false;         // a --telemetry file, compressed
  std::vector<double> load, align, analyses, added;
  int64_t peak_kib = 0;
  // The whole read, once.
  double whole_load = 0, whole_align = 0, decompress = -1;
  int64_t whole_peak_kib = 0;
  std::string identical = "-";
  std::string diag;  // the windowed read's rows_outside_window count
};

// Every alignment and aligned rank series of a and b, compared; "" when identical.
std::string compare(const chopper::HardwareRun& a, const chopper::HardwareRun& b) {
  if (a.telemetry.size() != b.telemetry.size()) return "a different number of telemetry files";
  for (size_t i = 0; i < a.telemetry.size(); ++i) {
    const auto& x = a.telemetry[i];
    const auto& y = b.telemetry[i];
    if (x.node != y.node || x.ranks != y.ranks || x.clock != y.clock ||
        x.offset_ns != y.offset_ns || x.uncertainty_ns != y.uncertainty_ns ||
        x.period_ns != y.period_ns || x.correlation != y.correlation || x.method != y.method)
      return fmt::format(
          "alignment of {}: offset {} / {}, ± {} / {}, period {} / {}, r {} / {}, {} / {}", x.file,
          x.offset_ns, y.offset_ns, x.uncertainty_ns, y.uncertainty_ns, x.period_ns, y.period_ns,
          x.correlation, y.correlation, x.method, y.method);
  }
  if (a.ranks.size() != b.ranks.size()) return "a different number of ranks";
  for (size_t r = 0; r < a.ranks.size(); ++r)
    for (int m = 0; m < chopper::kMetricCount; ++m) {
      const chopper::Series& x = a.ranks[r].series[static_cast<size_t>(m)];
      const chopper::Series& y = b.ranks[r].series[static_cast<size_t>(m)];
      if (x.t_ns != y.t_ns || x.value != y.value)
        return fmt::format("rank {} {}: {} / {} samples", r,
                           chopper::metric_name(static_cast<chopper::Metric>(m)), x.size(),
                           y.size());
    }
  return "";
}

// `chopper analyze` as a child process: wall, user + sys CPU, peak RSS (KiB).
struct ProcRun {
  double wall = 0, cpu = 0;
  int64_t rss_kib = 0;
  int status = 0;
};
ProcRun run_process(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  ProcRun r;
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) {
    r.status = -1;
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
          static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  r.rss_kib = ru.ru_maxrss;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

double decompress_all(const std::string& path) {
  const Clock c0 = Clock::now();
  auto src = chopper::ByteSource::open_file(path);
  std::vector<char> buf(1 << 20);
  while (src->read(buf.data(), buf.size()) > 0) {
  }
  return (Clock::now() - c0).cpu;
}

int usage() {
  fmt::print(stderr,
             "usage: chopper-bench-telemetry RUN_DIR [--telemetry FILE]... [--repeat R]\n"
             "         [--threads N] [--chopper PATH [--baseline PATH]] [--target 0.10]\n"
             "         [--no-whole]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string run_dir, chopper_bin, baseline_bin;
  std::vector<std::string> files;
  int repeat = 5;
  unsigned threads = 2;
  double target = 0.10;
  bool whole = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--telemetry" && i + 1 < argc)
      files.push_back(argv[++i]);
    else if (a == "--repeat" && i + 1 < argc)
      repeat = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (a == "--chopper" && i + 1 < argc)
      chopper_bin = argv[++i];
    else if (a == "--baseline" && i + 1 < argc)
      baseline_bin = argv[++i];
    else if (a == "--target" && i + 1 < argc)
      target = std::atof(argv[++i]);
    else if (a == "--no-whole")
      whole = false;
    else if (a.starts_with("--") || !run_dir.empty())
      return usage();
    else
      run_dir = std::string(a);
  }
  if (run_dir.empty() || repeat < 1) return usage();

  // Whole processes first, while this one is small: a child's peak RSS (wait4) starts from its
  // parent's at the spawn.
  // The variants with telemetry: the run's own (its telemetry/ folder: the generator's short
  // files), then each --telemetry file alone. Counters and other hardware files are left out of
  // every variant, so that the variants differ by their telemetry only.
  struct Tel {
    std::string name;
    std::vector<std::string> files;
    bool plain = false;       // one uncompressed --telemetry file: held to the target
    bool compressed = false;  // one compressed file: its decompression alone is timed
  };
  std::vector<Tel> tels(1);
  tels[0].name = "short";
  if (fs::is_directory(fs::path(run_dir) / "telemetry"))
    for (const auto& e : fs::directory_iterator(fs::path(run_dir) / "telemetry"))
      if (e.is_regular_file()) tels[0].files.push_back(e.path().string());
  std::sort(tels[0].files.begin(), tels[0].files.end());
  for (const std::string& f : files) {
    auto src = chopper::ByteSource::open_file(f);
    const bool plain = src->compression() == chopper::Compression::kNone;
    tels.push_back({fs::path(f).filename().string(), {f}, plain, !plain});
  }

  bool ok = true;
  double proc_none_cpu = 0;
  std::vector<std::string> proc_lines;
  if (!chopper_bin.empty()) {
    // Whole processes: one directory per variant, links to the traces and the file.
    const fs::path tmp = fs::temp_directory_path() / fmt::format("chopper_tel_bench_{}", getpid());
    fs::create_directories(tmp);
    struct PVar {
      std::string name;
      std::vector<std::string> args;
      bool plain = false;
    };
    std::vector<PVar> pv;
    pv.push_back({"none", {run_dir, "--no-hardware"}});
    for (const Tel& t : tels) {
      const fs::path d = tmp / fmt::format("v{}", pv.size());
      fs::create_directories(d / "telemetry");
      for (const auto& e : fs::directory_iterator(run_dir))
        if (e.is_regular_file())
          fs::create_symlink(fs::absolute(e.path()), d / e.path().filename());
      for (const std::string& f : t.files)
        fs::create_symlink(fs::absolute(f), d / "telemetry" / fs::path(f).filename());
      pv.push_back({t.name, {d.string()}, t.plain});
    }
    std::vector<std::string> bins = {chopper_bin};
    if (!baseline_bin.empty()) bins.push_back(baseline_bin);
    // results[bin][variant]
    std::vector<std::vector<std::vector<ProcRun>>> res(
        bins.size(), std::vector<std::vector<ProcRun>>(pv.size()));
    for (int r = 0; r < repeat; ++r)
      for (size_t b = 0; b < bins.size(); ++b)
        for (size_t i = 0; i < pv.size(); ++i) {
          std::vector<std::string> args = {bins[b], "analyze"};
          args.insert(args.end(), pv[i].args.begin(), pv[i].args.end());
          args.insert(args.end(), {"-o", (tmp / "out").string(), "-j", std::to_string(threads),
                                   "--tokens-per-step", "32768"});
          const ProcRun p = run_process(args);
          if (p.status != 0) {
            fmt::print(stderr, "chopper-bench-telemetry: {} analyze {} exited {}\n", bins[b],
                       pv[i].name, p.status);
            ok = false;
          }
          res[b][i].push_back(p);
        }
    for (size_t b = 0; b < bins.size(); ++b) {
      proc_lines.push_back(fmt::format(
          "  `{} analyze`, {} rounds, variants alternating: median (best)\n", bins[b], repeat));
      proc_lines.push_back(fmt::format("    {:<28} {:>17} {:>17} {:>9} {:>9} {:>9}\n", "variant",
                                       "wall ms", "CPU ms", "peak MiB", "+wall %", "+CPU %"));
      std::vector<double> w0, c0;
      for (const ProcRun& p : res[b][0]) w0.push_back(p.wall), c0.push_back(p.cpu);
      if (b == 0) proc_none_cpu = median(c0);
      for (size_t i = 0; i < pv.size(); ++i) {
        std::vector<double> w, c;
        int64_t rss = 0;
        for (const ProcRun& p : res[b][i]) {
          w.push_back(p.wall);
          c.push_back(p.cpu);
          rss = std::max(rss, p.rss_kib);
        }
        const double dw = 100.0 * (median(w) - median(w0)) / median(w0);
        const double dc = 100.0 * (median(c) - median(c0)) / median(c0);
        proc_lines.push_back(fmt::format(
            "    {:<28} {:>8.1f} ({:>6.1f}) {:>8.1f} ({:>6.1f}) {:>9.1f} {:>8.1f}% {:>8.1f}%\n",
            pv[i].name, median(w) * 1e3, best(w) * 1e3, median(c) * 1e3, best(c) * 1e3,
            static_cast<double>(rss) / 1024.0, dw, dc));
      }
    }
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }

  chopper::tune_allocator();
  // The traces, as analyze loads and labels them (not timed here).
  std::vector<std::string> traces;
  for (const auto& e : fs::directory_iterator(run_dir))
    if (e.path().filename().string().starts_with("rank-")) traces.push_back(e.path().string());
  std::sort(traces.begin(), traces.end());
  // What analyze does before the tables, without telemetry: the denominator of "added %" when
  // no process is timed.
  std::vector<double> pipeline_cpu;
  for (int r = 0; r < repeat; ++r) {
    const Clock c0 = Clock::now();
    chopper::Run one = chopper::load_run(traces);
    chopper::label_run(chopper::Taxonomy::builtin(), one, threads);
    const chopper::RunAnalysis ra = chopper::analyze_run(one, chopper::AnalysisOptions{}, nullptr);
    pipeline_cpu.push_back((Clock::now() - c0).cpu);
  }
  chopper::Run run = chopper::load_run(traces);
  chopper::label_run(chopper::Taxonomy::builtin(), run, threads);
  chopper::release_free_memory();
  chopper::return_freed_memory();
  const chopper::TelemetryWindow window = chopper::telemetry_window(run);
  chopper::AnalysisOptions ao;
  ao.threads = threads;

  std::vector<Variant> vs;
  for (const Tel& t : tels) {
    vs.emplace_back();
    vs.back().name = t.name;
    vs.back().files = t.files;
    vs.back().plain = t.plain;
    vs.back().compressed = t.compressed;
  }

  // "none": analyze_run without hardware.
  std::vector<double> none_cpu, none_wall;
  int64_t none_peak = 0;
  for (int r = 0; r < repeat; ++r) {
    reset_peak();
    const Clock c0 = Clock::now();
    const chopper::RunAnalysis ra = chopper::analyze_run(run, ao, nullptr);
    const Clock d = Clock::now() - c0;
    none_cpu.push_back(d.cpu);
    none_wall.push_back(d.wall);
    none_peak = std::max(none_peak, status_kib("VmHWM"));
  }
  const double base = median(none_cpu);
  for (int r = 0; r < repeat; ++r) {
    for (Variant& v : vs) {
      chopper::release_free_memory();
      reset_peak();
      const Clock c0 = Clock::now();
      chopper::HardwareFiles hf = chopper::load_hardware({}, v.files, {}, threads, window);
      const Clock c1 = Clock::now();
      for (const auto& d : hf.telemetry)
        for (const auto& e : d.diagnostics.entries())
          if (e.kind == "rows_outside_window") v.diag = fmt::format("{} rows outside", e.count);
      chopper::HardwareRun hw =
          chopper::align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
      const Clock c2 = Clock::now();
      const chopper::RunAnalysis ra = chopper::analyze_run(run, ao, &hw);
      const Clock c3 = Clock::now();
      v.load.push_back((c1 - c0).cpu);
      v.align.push_back((c2 - c1).cpu);
      v.analyses.push_back((c3 - c2).cpu - base);
      v.added.push_back((c3 - c0).cpu - base);
      v.peak_kib = std::max(v.peak_kib, status_kib("VmHWM"));
    }
  }
  if (whole) {
    for (Variant& v : vs) {
      chopper::HardwareFiles hw_w = chopper::load_hardware({}, v.files, {}, threads, window);
      chopper::HardwareRun a =
          chopper::align_hardware(run, std::move(hw_w.telemetry), std::move(hw_w.counters));
      chopper::release_free_memory();
      reset_peak();
      const Clock c0 = Clock::now();
      chopper::HardwareFiles hf = chopper::load_hardware({}, v.files, {}, threads);
      const Clock c1 = Clock::now();
      chopper::HardwareRun b =
          chopper::align_hardware(run, std::move(hf.telemetry), std::move(hf.counters));
      const Clock c2 = Clock::now();
      v.whole_peak_kib = status_kib("VmHWM");
      v.whole_load = (c1 - c0).cpu;
      v.whole_align = (c2 - c1).cpu;
      const std::string diff = compare(a, b);
      v.identical = diff.empty() ? "yes" : "NO: " + diff;
      if (!diff.empty()) ok = false;
      if (v.compressed) v.decompress = decompress_all(v.files.front());
    }
  }

  // The denominator: analyze without telemetry, the whole process if timed.
  const double denom = proc_none_cpu > 0 ? proc_none_cpu : median(pipeline_cpu);
  fmt::print("chopper-bench-telemetry {}\n", run_dir);
  fmt::print("  ranks {}, window: {} UTC and {} local-time ranges, pad {} ms / {} periods\n",
             run.ranks.size(), window.utc.size(), window.local.size(), window.pad_ns / 1000000,
             window.pad_periods);
  for (const std::string& l : proc_lines) fmt::print("{}", l);
  fmt::print("  in process, CPU ms, median of {} (best):\n", repeat);
  fmt::print("    load + label + analyze_run without telemetry  {:.2f} ({:.2f})\n",
             median(pipeline_cpu) * 1e3, best(pipeline_cpu) * 1e3);
  fmt::print("    analyze_run without hardware  {:.2f} ({:.2f}); peak RSS {} MiB\n", base * 1e3,
             best(none_cpu) * 1e3, none_peak / 1024);
  fmt::print("    % of analyze without telemetry ({}: {:.1f} ms CPU)\n",
             proc_none_cpu > 0 ? "the process, median" : "load + label + analyze_run", denom * 1e3);
  fmt::print("    {:<28} {:>15} {:>15} {:>15} {:>8} {:>15} {:>8} {:>8}  {}\n", "variant", "load",
             "align", "analyses", "read+al%", "added", "added %", "peak MiB", "rows not read");
  for (const Variant& v : vs) {
    const double read_align = median(v.load) + median(v.align);
    const double pct = 100.0 * read_align / denom;
    fmt::print(
        "    {:<28} {:>7.2f} ({:>5.2f}) {:>7.2f} ({:>5.2f}) {:>7.2f} ({:>5.2f}) {:>7.1f}% "
        "{:>7.2f} ({:>5.2f}) {:>7.1f}% {:>8}  {}\n",
        v.name, median(v.load) * 1e3, best(v.load) * 1e3, median(v.align) * 1e3,
        best(v.align) * 1e3, median(v.analyses) * 1e3, best(v.analyses) * 1e3, pct,
        median(v.added) * 1e3, best(v.added) * 1e3, 100.0 * median(v.added) / denom,
        v.peak_kib / 1024, v.diag.empty() ? "-" : v.diag);
    if (v.plain && proc_none_cpu > 0 && pct > 100.0 * target) ok = false;
  }
  if (whole) {
    fmt::print("  read whole (no window), once: CPU ms\n");
    for (const Variant& v : vs)
      fmt::print(
          "    {:<28} load {:>9.1f}, align {:>8.1f}, peak RSS {} MiB{}; windowed = whole: {}\n",
          v.name, v.whole_load * 1e3, v.whole_align * 1e3, v.whole_peak_kib / 1024,
          v.decompress >= 0 ? fmt::format("; decompressing it alone {:.1f}", v.decompress * 1e3)
                            : "",
          v.identical);
  }

  fmt::print(
      "  target: reading and aligning a plain --telemetry file (load + align) <= {:.0f}% of "
      "analyze without telemetry{}, windowed = whole: {}\n",
      target * 100, proc_none_cpu > 0 ? "" : " (not judged: no --chopper to time analyze)",
      ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
