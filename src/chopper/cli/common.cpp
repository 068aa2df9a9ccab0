#include "chopper/cli/common.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/memory.hpp"
#include "chopper/base/progress.hpp"
#include "chopper/base/terminal.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/link/validate.hpp"

namespace chopper::cli {

CLI::Validator in_half_open(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(v, x) || !(x >= lo && x < hi))
          return fmt::format("{} is not a number at least {} and below {}", v, lo, hi);
        return "";
      },
      fmt::format("NUMBER in [{}, {})", lo, hi));
}

CLI::Validator in_open_closed(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(v, x) || !(x > lo && x <= hi))
          return fmt::format("{} is not a number above {} and at most {}", v, lo, hi);
        return "";
      },
      fmt::format("NUMBER in ({}, {}]", lo, hi));
}

CLI::Validator in_closed(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(v, x) || !(x >= lo && x <= hi))
          return fmt::format("{} is not a number from {} to {}", v, lo, hi);
        return "";
      },
      fmt::format("NUMBER in [{}, {}]", lo, hi));
}

CLI::Validator integer_at_least(int64_t lo) {
  return CLI::Validator(
      [lo](std::string& v) -> std::string {
        int64_t x = 0;
        if (!CLI::detail::lexical_cast(v, x) || x < lo)
          return fmt::format("{} is not an integer of at least {}", v, lo);
        return "";
      },
      fmt::format("INTEGER >= {}", lo));
}

CLI::Validator output_directory() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        std::error_code ec;
        if (v.empty()) return "an empty path";
        if (std::filesystem::exists(v, ec) && !std::filesystem::is_directory(v, ec))
          return v + " exists and is not a directory";
        return "";
      },
      "DIR");
}

CLI::Validator thread_count() {
  return CLI::Range(0u, 1024u).description("0 (all cores) to 1024");
}

void add_run_options(CLI::App* app, RunOptions& o, bool rules, bool split_runs) {
  app->add_option("paths", o.paths,
                  "Trace files or directories of them (.json, .json.gz, .json.zst)")
      ->required();
  if (rules)
    app->add_option("--rules", o.rules,
                    "TOML file of labelling rules that add to or override the built-in taxonomy "
                    "(docs/hierarchy.md)")
        ->check(CLI::ExistingFile);
  if (rules)
    app->add_option("--iteration-regex", o.iteration_regex,
                    "Every host op or annotation whose name matches this RE2 regex is an "
                    "iteration: numbered by capture group 1 when the regex has one, else 0, 1, ... "
                    "in time order (default: ProfilerStep#N, else repeated top-level annotations, "
                    "else the whole trace; docs/hierarchy.md)")
        ->type_name("REGEX");
  app->add_flag("--keep-python", o.keep_python,
                "Keep every python_function event as a host op (nn.Module ranges are always kept)");
  app->add_option("-j,--threads", o.threads, "Threads (default: all cores)")->check(thread_count());
  app->add_option("--max-decompressed-gib", o.max_decompressed_gib,
                  "Largest size a compressed (gzip, zstd) file may decompress to, in GiB; a "
                  "larger one is an error naming it")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24))
      ->capture_default_str();
  app->add_option("--max-event-mib", o.max_event_mib,
                  "Largest JSON text of one trace event, in MiB; a larger event is skipped and "
                  "counted (event_too_large)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{4096}))
      ->capture_default_str();
  app->add_option("--max-files", o.max_files,
                  "Most trace files one run may have; more is an error, before any is read")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30))
      ->capture_default_str();
  if (split_runs)
    app->add_flag("--split-runs", o.split_runs,
                  "Files of several runs (time spans apart, different world sizes, a rank twice) "
                  "are grouped into runs and each analysed into DIR/run-<k>/, instead of being "
                  "refused");
}

bool is_stream_path(const std::string& path) {
  struct stat st {};
  return path == "-" || (::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode));
}

std::string own_outputs_note(const Run& run) {
  std::vector<std::string> own;
  for (const auto& [file, why] : run.skipped)
    if (is_own_output(why)) own.push_back(std::filesystem::path(file).filename().string());
  if (own.empty()) return "";
  std::string s;
  for (size_t i = 0; i < own.size() && i < 3; ++i) s += (i ? ", " : "") + own[i];
  if (own.size() > 3) s += fmt::format(" and {} more", own.size() - 3);
  return fmt::format(" ({} written by chopper, not traces: name the run's trace files)", s);
}

Taxonomy run_taxonomy(const RunOptions& o) {
  Taxonomy t = Taxonomy::builtin();
  if (!o.rules.empty()) t.load_toml(o.rules);
  if (!o.iteration_regex.empty()) t.add_iteration_regex(o.iteration_regex);
  return t;
}

size_t run_errors(const Run& run) {
  size_t n = 0;
  for (const RunProblem& p : run.problems) n += run_diag_severity(p.kind) == Severity::kError;
  return n;
}

namespace {

// The problems on stderr, errors first; at most three lines per kind except for files that could
// not be read (each is named).
void print_problems(const Run& run) {
  for (Severity sev : {Severity::kError, Severity::kWarning}) {
    for (RunDiag k : all_run_diags()) {
      if (run_diag_severity(k) != sev || k == RunDiag::kNotATrace) continue;
      size_t n = 0, shown = 0;
      const size_t cap = k == RunDiag::kUnreadableFile || k == RunDiag::kMissingPath ? SIZE_MAX : 3;
      for (const RunProblem& p : run.problems) {
        if (p.kind != k) continue;
        ++n;
        if (shown < cap) {
          ++shown;
          fmt::print(stderr, "chopper: {} ({}): {}\n", severity_name(sev), run_diag_name(k),
                     terminal_safe(p.message));
        }
      }
      if (n > shown)
        fmt::print(stderr, "chopper: … and {} more {} (the diagnostics table lists them)\n",
                   n - shown, run_diag_name(k));
    }
  }
  for (const RunProblem& p : run.problems)
    if (p.kind == RunDiag::kRunSplit) fmt::print(stderr, "chopper: {}\n", terminal_safe(p.message));
}

std::optional<Run> load_validated(const RunOptions& o, const char* cmd,
                                  std::vector<RunGroup>& groups) {
  if (o.preloaded) return std::move(*o.preloaded);  // for_each_run printed its problems
  Run run;
  try {
    LoadOptions lo = load_options(o);
    LoadProgress progress(o, cmd, lo);
    run = load_run(o.paths, lo);
    ValidateOptions vo;
    vo.split_runs = o.split_runs;
    groups = validate_run(run, vo);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper {}: {}\n", cmd, terminal_safe(e.what()));
    return std::nullopt;
  }
  print_run_problems(run);
  return run;
}

}  // namespace

void print_run_problems(const Run& run) {
  for (const auto& [file, why] : run.skipped) {
    if (is_own_output(why)) continue;  // chopper's own files: in the diagnostics table only
    const bool pass = std::find(run.counter_passes.begin(), run.counter_passes.end(), file) !=
                      run.counter_passes.end();
    fmt::print(stderr, "chopper: {} {} ({}{})\n", pass ? "not a rank:" : "skipped",
               terminal_safe(file), pass ? "" : "not a trace: ", terminal_safe(why));
  }
  print_problems(run);
}

LoadOptions load_options(const RunOptions& o) {
  LoadOptions lo;
  lo.max_files = o.max_files;
  lo.et_files = o.et_files;
  lo.kineto.keep_python = o.keep_python;
  lo.kineto.max_event_bytes = static_cast<size_t>(o.max_event_mib) << 20;
  lo.threads = o.threads;
  set_max_decompressed_bytes(o.max_decompressed_gib << 30);
  return lo;
}

LoadProgress::LoadProgress(const RunOptions& o, const char* cmd, LoadOptions& lo)
    : LoadProgress(o, cmd) {
  if (!ticker_.joinable()) return;
  loads_ = true;
  lo.progress = [this](size_t d, size_t n, uint64_t b) {
    done_ = d;
    total_ = n;
    bytes_ = b;
  };
}

LoadProgress::LoadProgress(const RunOptions& o, const char* cmd) {
  // Progress on stderr for long commands: only on a terminal, from the first second on, a line
  // redrawn five times a second: while files are read, how many, their bytes and the time; then
  // the phase the pipeline says it is in.
  if (!o.progress || ::isatty(2) == 0) return;
  progress_phase("");
  // Seconds since the command's first line was set up: a line for the phases after the load
  // goes on counting from where the load's left off.
  static const auto t0 = std::chrono::steady_clock::now();
  ticker_ = std::thread([this, cmd] {
    bool shown = false;
    while (!finished_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (secs < 1.0 || finished_) continue;
      const std::string phase = progress_phase_now();
      // The files' line until the pipeline names a phase (it does once they are read).
      const bool loading = loads_ && phase.empty();
      if (!loading && phase.empty()) continue;
      shown = true;
      if (loading)
        fmt::print(stderr, "\rchopper {}: loading… {} file(s) done{}, {:.1f} MB, {:.1f} s\033[K",
                   cmd, done_.load(), total_ ? fmt::format(" of {}", total_.load()) : "",
                   static_cast<double>(bytes_.load()) / 1e6, secs);
      else
        fmt::print(stderr, "\rchopper {}: {}… {:.1f} s\033[K", cmd, terminal_safe(phase), secs);
      std::fflush(stderr);
    }
    if (shown) fmt::print(stderr, "\r\033[K");
  });
}

LoadProgress::~LoadProgress() {
  finished_ = true;
  if (ticker_.joinable()) ticker_.join();
  progress_phase("");
}

std::optional<Run> load_reporting(const RunOptions& o, const char* cmd) {
  std::vector<RunGroup> groups;
  return load_validated(o, cmd, groups);
}

int for_each_run(const RunOptions& o, const char* cmd,
                 const std::function<int(const RunOptions&, size_t)>& each) {
  std::vector<RunGroup> groups;
  RunOptions lo = o;
  lo.split_runs = true;
  lo.preloaded.reset();
  std::optional<Run> all = load_validated(lo, cmd, groups);
  if (!all) return 2;
  std::vector<Run> runs = split_run(std::move(*all), groups);
  int worst = 0;
  size_t refused = 0;
  for (size_t k = 0; k < runs.size(); ++k) {
    RunOptions ro = o;
    ro.split_runs = false;
    ro.preloaded = std::make_shared<Run>(std::move(runs[k]));
    const int rc = each(ro, k);
    refused += rc == 2;
    worst = std::max(worst, rc);
  }
  return refused == runs.size() ? 2 : worst != 0 ? 1 : 0;
}

std::optional<LabelledRun> load_labelled(const RunOptions& o, const char* cmd) {
  LabelledRun lr;
  try {
    lr.taxonomy = run_taxonomy(o);
  } catch (const Error& e) {
    fmt::print(stderr, "chopper {}: {}\n", cmd, terminal_safe(e.what()));
    return std::nullopt;
  }
  std::optional<Run> run = load_reporting(o, cmd);
  if (!run) return std::nullopt;
  lr.run = std::move(*run);
  if (lr.run.ranks.size() == lr.run.failed()) {
    fmt::print(stderr, "chopper {}: no readable trace files{}\n", cmd, own_outputs_note(lr.run));
    return std::nullopt;
  }
  if (run_is_mixed(lr.run)) {
    fmt::print(stderr,
               "chopper {}: the files are not one run (above): nothing analysed; name one run's "
               "files{}\n",
               cmd, std::string_view(cmd) == "analyze" ? ", or use --split-runs" : "");
    return std::nullopt;
  }
  // Labelling reuses the memory loading freed (link's temporaries; base/memory.hpp). Then what
  // both kept goes back to the system, and the analyses, whose large blocks are not reused the
  // same way, map them and give them back when freed.
  label_run(lr.taxonomy, lr.run, o.threads);
  release_free_memory();
  return_freed_memory();
  return lr;
}

// The run manifest: what the traces do not say. Keys: tokens_per_step, device, dtype.
// A value given on the command line wins over the manifest's (tokens_per_step and device are
// unset until given; dtype has a default, so whether it was given is passed).
void read_manifest(const std::string& path, AnalysisOptions& a, bool dtype_given) {
  // A regular file of at most 1 MiB, opened without blocking (a FIFO, /dev/zero: an error).
  apply_manifest(read_text_file(path, kMaxConfigFileBytes, "a run manifest"), path, a, dtype_given);
}

void apply_manifest(std::string_view text, const std::string& path, AnalysisOptions& a,
                    bool dtype_given) {
  toml::table t;
  try {
    t = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  for (const auto& [k, v] : t) {
    const std::string_view key = k.str();
    if (key == "tokens_per_step") {
      auto n = v.value<int64_t>();
      if (!n || *n <= 0)
        throw Error(fmt::format("{}:{}: tokens_per_step must be a positive integer", path,
                                v.source().begin.line));
      if (a.tokens_per_step == 0) a.tokens_per_step = *n;
    } else if (key == "device") {
      auto s = v.value<std::string>();
      if (!s || find_device(*s) == nullptr)
        throw Error(fmt::format("{}:{}: unknown device (known: {}; or give --device-spec FILE)",
                                path, v.source().begin.line, known_device_names()));
      if (a.device.empty()) a.device = *s;
    } else if (key == "dtype") {
      auto s = v.value<std::string>();
      auto d = s ? parse_dtype(*s) : std::nullopt;
      if (!d)
        throw Error(fmt::format("{}:{}: dtype must be one of {}", path, v.source().begin.line,
                                known_dtype_names()));
      if (!dtype_given) a.dtype = *d;
    } else {
      throw Error(fmt::format("{}:{}: unknown key '{}' (tokens_per_step, device, dtype)", path,
                              v.source().begin.line, key));
    }
  }
}

int device_options(const char* cmd, const std::string& spec, AnalysisOptions& a) {
  if (!spec.empty()) {
    try {
      const DeviceSpec* d = add_device(read_device_spec(spec));
      if (a.device.empty()) a.device = d->name;
    } catch (const Error& e) {
      fmt::print(stderr, "chopper {}: --device-spec: {}\n", cmd, e.what());
      return 2;
    }
  }
  if (!a.device.empty() && find_device(a.device) == nullptr) {
    fmt::print(stderr,
               "chopper {}: --device: unknown device '{}' (known: {}; for another device give "
               "--device-spec FILE)\n",
               cmd, a.device, known_device_names());
    return 2;
  }
  return 0;
}

HardwareRun load_run_hardware(const Run& run, const RunOptions& o,
                              const std::vector<std::string>& telemetry,
                              const std::vector<std::string>& counters,
                              const HardwareAlignOptions& align, const char* cmd, size_t& errors) {
  // Telemetry is read only where the alignment can use it (a profile covers seconds of what a
  // recording may hold for hours). CUPTI counter passes found among the traces are counter files.
  std::vector<std::string> all_counters = counters;
  all_counters.insert(all_counters.end(), run.counter_passes.begin(), run.counter_passes.end());
  HardwareFiles hf =
      load_hardware(o.paths, telemetry, all_counters, o.threads, telemetry_window(run, align));
  for (const auto& [f, why] : hf.skipped)
    fmt::print(stderr, "chopper {}: skipped {} ({})\n", cmd, terminal_safe(f), terminal_safe(why));
  for (const std::string& e : hf.errors)
    fmt::print(stderr, "chopper {}: {}\n", cmd, terminal_safe(e));
  HardwareRun hw = align_hardware(run, std::move(hf.telemetry), std::move(hf.counters), align);
  note_unreadable(hw, hf.errors, hf.error_files);
  assign_recorded_cpu(std::move(hf.recorded_cpu), run, hw);
  for (const std::string& e : hw.errors)
    fmt::print(stderr, "chopper {}: {}\n", cmd, terminal_safe(e));
  errors = hf.errors.size() + hw.errors.size();
  return hw;
}

void add_analysis_options(CLI::App* app, AnalysisCliOptions& o, AnalysisOptionsExcept except) {
  AnalysisOptions& a = o.analysis;
  if (!except.tokens_per_step)
    app->add_option("--tokens-per-step", a.tokens_per_step,
                    "Tokens per iteration over all ranks (global batch x sequence length), for "
                    "tokens/s and time per token")
        ->check(integer_at_least(1));
  app->add_option("--device", a.device,
                  "Device for MFU and the waterfall (" + known_device_names() +
                      "); default: from the trace's deviceProperties name");
  app->add_option("--device-spec", o.device_spec,
                  "TOML device spec for a device not in the table (name, [peak_tflops], "
                  "memory_bandwidth_gbs, max_clock_mhz, base_clock_mhz, tdp_w); used unless "
                  "--device names another")
      ->check(CLI::ExistingFile);
  app->add_option("--dtype", o.dtype, "Matrix dtype MFU is measured against")
      ->check(CLI::IsMember(dtype_spellings()))
      ->capture_default_str();
  app->add_option("--manifest", o.manifest,
                  "TOML run manifest: tokens_per_step, device, dtype (flags win)")
      ->check(CLI::ExistingFile);
  if (!except.hardware_files) {
    app->add_option("--telemetry", o.telemetry,
                    "GPU telemetry files (nvidia-smi, amd-smi, rocm-smi, dcgmi, Zeus CSV) besides "
                    "those found in the run's directories and their telemetry/ folders")
        ->check(CLI::ExistingFile);
    app->add_option("--counters", o.counters,
                    "Hardware-counter files (rocprofv3 counter collection, kernel trace, JSON) "
                    "besides those found in the run's directories and their counters/ folders")
        ->check(CLI::ExistingFile);
    app->add_option("--et", o.et,
                    "PyTorch host execution traces (ExecutionTraceObserver JSON) besides those "
                    "found among the run's files; each is linked to the rank of its pid or of "
                    "the rank number in its name")
        ->check(CLI::ExistingFile);
  }
  app->add_flag("--no-hardware", o.no_hardware, "Ignore telemetry and counter files");
  add_utc_offset_option(app, o.align);
  app->add_option("--top", a.top_n, "Rows per rank in the name breakdowns")
      ->check(CLI::Range(size_t{0}, size_t{1000000}))
      ->capture_default_str();
  app->add_flag(
      "--no-align", [&a](int64_t) { a.align_clocks = false; },
      "Do not apply the clock offsets estimated from collectives");
  app->add_option("--launch-delay-cutoff-ns", a.launch_delay_cutoff_ns,
                  "Launch latency ends this long after the launch call's end; a kernel starting "
                  "later waited on the GPU (idle), and counts as a launch-delay outlier (HTA: "
                  "100 µs)")
      ->check(integer_at_least(0))
      ->capture_default_str();
  app->add_option("--kernel-wait-ns", a.kernel_wait_ns,
                  "Idle gaps shorter than this count as kernel wait (HTA: 30 µs)")
      ->check(integer_at_least(0))
      ->capture_default_str();
}

int resolve_analysis_options(const char* cmd, const CLI::App* app, AnalysisCliOptions& o) {
  o.dtype_given = app->count("--dtype") > 0;
  const std::optional<DType> d = parse_dtype(o.dtype);
  if (!d) {
    fmt::print(stderr, "chopper {}: --dtype: unknown dtype '{}'\n", cmd, o.dtype);
    return 2;
  }
  o.analysis.dtype = *d;
  return device_options(cmd, o.device_spec, o.analysis);
}

void add_utc_offset_option(CLI::App* app, HardwareAlignOptions& align) {
  app->add_option(
         "--telemetry-utc-offset",
         [&align](const CLI::results_t& r) {
           try {
             size_t used = 0;
             align.utc_offset_h = std::stod(r.front(), &used);
             if (used != r.front().size() || std::abs(align.utc_offset_h) > 14) return false;
           } catch (const std::exception&) {
             return false;
           }
           align.utc_offset_known = true;
           return true;
         },
         "Hours east of UTC of telemetry stamped in local time (nvidia-smi, dcgmi); default: "
         "the zone that puts the trace inside the recording")
      ->type_name("HOURS");
}

}  // namespace chopper::cli
