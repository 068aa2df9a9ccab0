// chopper record end to end: the binary run around small commands, with the stand-in GPU
// libraries (standin_nvml.cpp, standin_amdsmi.cpp) found through LD_LIBRARY_PATH as the real ones
// would be. Paths come from tests/CMakeLists.txt: CHOPPER_BIN, STANDIN_NVML_DIR,
// STANDIN_AMDSMI_DIR, RECORD_TEST_TMP.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "standin_values.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string h = name[0] != '\0' ? name : "localhost";
  for (char& c : h)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return h;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A directory of its own for each test.
std::string test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path d =
      fs::path(RECORD_TEST_TMP) / (std::string(info->test_suite_name()) + "." + info->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// The environment of the runs: this one, LD_LIBRARY_PATH replaced by `lib_dir` ("" : none), plus
// `extra` (NAME=VALUE).
std::vector<std::string> run_env(const std::string& lib_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string s = *e;
    if (s.rfind("LD_LIBRARY_PATH=", 0) == 0 || s.rfind("STANDIN_", 0) == 0) continue;
    env.push_back(s);
  }
  if (!lib_dir.empty()) env.push_back("LD_LIBRARY_PATH=" + lib_dir);
  for (auto& x : extra) env.push_back(std::move(x));
  return env;
}

// Starts `args` in `cwd` with `env`, stderr into `err_path`. Returns the pid.
pid_t start(const std::vector<std::string>& args, const std::vector<std::string>& env,
            const std::string& cwd, const std::string& err_path) {
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid = -1;
  const int r = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  EXPECT_EQ(r, 0) << args[0];
  return pid;
}

int wait_status(pid_t pid) {
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

struct Recorded {
  std::string dir, run;  // the test's directory; RUN
  int status = -1;
  std::string err;  // chopper's stderr
  std::string file(const std::string& ext) const {
    return run + "/telemetry/" + host_name() + "." + ext;
  }
};

std::vector<std::string> record_args(const std::string& run, std::vector<std::string> options,
                                     std::vector<std::string> cmd) {
  std::vector<std::string> a = {CHOPPER_BIN, "record", "-o", run};
  a.insert(a.end(), options.begin(), options.end());
  a.push_back("--");
  a.insert(a.end(), cmd.begin(), cmd.end());
  return a;
}

Recorded record(std::vector<std::string> options, std::vector<std::string> cmd,
                const std::vector<std::string>& env) {
  Recorded r;
  r.dir = test_dir();
  r.run = r.dir + "/run";
  const pid_t pid = start(record_args(r.run, std::move(options), std::move(cmd)), env, r.dir,
                          r.dir + "/stderr.txt");
  r.status = wait_status(pid);
  r.err = slurp(r.dir + "/stderr.txt");
  return r;
}

// CSV rows (the header first), cells split on commas outside quotes.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp(path));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"') {
        if (quoted && i + 1 < line.size() && line[i + 1] == '"') {
          cells.back() += '"';
          ++i;
        } else {
          quoted = !quoted;
        }
      } else if (c == ',' && !quoted) {
        cells.emplace_back();
      } else {
        cells.back() += c;
      }
    }
    rows.push_back(std::move(cells));
  }
  return rows;
}

std::optional<int64_t> json_int(const std::string& json, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return std::nullopt;
  return std::stoll(m[1].str());
}

std::string milli(uint64_t v) {
  char b[64];
  std::snprintf(b, sizeof b, "%llu.%03llu", static_cast<unsigned long long>(v / 1000),
                static_cast<unsigned long long>(v % 1000));
  return b;
}

int64_t median_spacing_ns(std::vector<int64_t> t) {
  std::vector<int64_t> d;
  for (size_t i = 1; i < t.size(); ++i) d.push_back(t[i] - t[i - 1]);
  std::sort(d.begin(), d.end());
  return d.empty() ? 0 : d[d.size() / 2];
}

bool library_loads(const char* name) {
  void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

const std::string kNvmlHeader =
    "time_ns,gpu,uuid,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temp_c,util_gpu_pct,"
    "util_mem_pct,throttle_reasons";

// The stand-in's reads happen within the sample's read window, around its stamped time: each value
// of the row must equal the stand-in's value at a millisecond near the stamp (each library call
// reads the clock again, so a read that straddles a millisecond, or is preempted between two
// calls on a busy or sanitized build, gives values of neighbouring milliseconds). Returns the
// largest distance in ms, over the row's values, to the nearest millisecond where that value
// matches, within 200 ms; nullopt when a value matches at none (a wrong value). The read window
// is a few µs, so nearly every row matches within 2 ms (the tests ask 90%).
template <typename Expected>
std::optional<int64_t> matching_ms(int64_t time_ns, const std::vector<std::string>& row,
                                   Expected expected) {
  const int64_t ms = time_ns / 1000000;
  constexpr int64_t kWindowMs = 200;
  std::vector<std::vector<std::string>> at(2 * kWindowMs + 1);  // expected(ms + d - kWindowMs)
  for (int64_t d = -kWindowMs; d <= kWindowMs; ++d)
    at[static_cast<size_t>(d + kWindowMs)] = expected(ms + d);
  int64_t worst = 0;
  for (size_t k = 0; k < row.size(); ++k) {
    std::optional<int64_t> best;
    for (int64_t d = 0; d <= kWindowMs && !best; ++d)
      for (int64_t sd : {-d, d}) {
        const auto& e = at[static_cast<size_t>(sd + kWindowMs)];
        if (k < e.size() && e[k] == row[k]) {
          best = d;
          break;
        }
      }
    if (!best) return std::nullopt;
    worst = std::max(worst, *best);
  }
  return worst;
}

// ---------------------------------------------------------------------------------------------

// Every sample equals the stand-in NVML's values at its stamped time; times ascend within the
// run; the spacing is the interval; the optional column offered (memory temperature) is there,
// those the library does not offer (PCIe, NVLink) are not, and device 1's failing utilization
// call leaves its cells empty.
TEST(Record, NvmlStandInValuesTimesInterval) {
  // The cumulative counters every tick too (1 ms ≤ the interval), so that every row is checked.
  const Recorded r = record({"--interval-ms", "20", "--counter-interval-ms", "1"}, {"sleep", "1"},
                            run_env(STANDIN_NVML_DIR));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string json = slurp(r.file("record.json"));
  EXPECT_NE(json.find("\"gpu_backend\": \"nvml\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu_note\": \"NVML 12.999.0-standin\""), std::string::npos) << json;
  EXPECT_NE(json.find("{\"index\": 1, \"name\": \"Standin H100 80GB HBM3\", \"uuid\": "
                      "\"GPU-5ad0c0de-0000-4000-8000-000000000001\"}"),
            std::string::npos)
      << json;
  const int64_t start = *json_int(json, "start_realtime_ns"),
                end = *json_int(json, "end_realtime_ns");
  const auto rows = read_csv(r.file("gpu.csv"));
  ASSERT_GT(rows.size(), 1u);
  std::string header;
  for (const auto& c : rows[0]) header += (header.empty() ? "" : ",") + c;
  EXPECT_EQ(header, kNvmlHeader + ",mem_temp_c");
  std::vector<int64_t> times[2];
  size_t matched = 0, near = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), 12u) << "row " << i;
    const int64_t t = std::stoll(row[0]);
    const unsigned d = static_cast<unsigned>(std::stoul(row[1]));
    ASSERT_LT(d, 2u);
    EXPECT_GE(t, start);
    EXPECT_LE(t, end);
    if (!times[d].empty()) {
      EXPECT_GT(t, times[d].back()) << "row " << i;
    }
    times[d].push_back(t);
    auto expected = [&](int64_t ms) {
      const bool util = standin::nvml_has_util(d);
      char uuid[64];
      std::snprintf(uuid, sizeof uuid, "GPU-5ad0c0de-0000-4000-8000-%012u", d);
      char mask[32];
      std::snprintf(mask, sizeof mask, "0x%llx",
                    static_cast<unsigned long long>(standin::nvml_throttle(d, ms)));
      return std::vector<std::string>{
          row[0],
          std::to_string(d),
          std::string(uuid),
          milli(standin::nvml_power_mw(d, ms)),
          milli(standin::nvml_energy_mj(d, ms)),
          std::to_string(standin::nvml_sm_mhz(d, ms)),
          std::to_string(standin::nvml_mem_mhz(d, ms)),
          std::to_string(standin::nvml_temp_c(d, ms)),
          util ? std::to_string(standin::nvml_util_gpu(d, ms)) : std::string(),
          util ? std::to_string(standin::nvml_util_mem(d, ms)) : std::string(),
          std::string(mask),
          std::to_string(standin::nvml_mem_temp_c(d, ms))};
    };
    const auto off = matching_ms(t, row, expected);
    if (off) {
      ++matched;
      if (*off <= 2) ++near;
    } else {
      ADD_FAILURE() << "row " << i << " is not the stand-in's values near its time";
    }
  }
  EXPECT_EQ(matched, rows.size() - 1);
  EXPECT_GE(near * 10, matched * 9) << "rows within 2 ms of their stamp";
  for (const auto& ts : times) {
    // sleep 1 at 20 ms: about 50 samples per GPU (fewer on a loaded machine: late ticks skipped).
    EXPECT_GE(ts.size(), 30u);
    const int64_t median = median_spacing_ns(ts);
    EXPECT_GE(median, 16000000) << "median spacing within 20% of 20 ms";
    EXPECT_LE(median, 24000000) << "median spacing within 20% of 20 ms";
  }
}

// The cumulative counters (energy; PCIe and NVLink where offered) are read at the first tick and
// then every --counter-interval-ms, the other values every tick: at 20 ms and 100 ms, energy is
// on about one row in five per GPU (the first among them), spaced about 100 ms, and equals the
// stand-in's counter at its row's time; power is on every row. record.json says the interval.
TEST(Record, CumulativeCountersReadEveryCounterInterval) {
  const Recorded r = record({"--interval-ms", "20", "--counter-interval-ms", "100"}, {"sleep", "1"},
                            run_env(STANDIN_NVML_DIR));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_int(slurp(r.file("record.json")), "counter_interval_ms"), 100);
  const auto rows = read_csv(r.file("gpu.csv"));
  ASSERT_GT(rows.size(), 20u);
  std::vector<int64_t> energy_times[2];
  size_t per_gpu[2] = {0, 0};
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), 12u);
    const unsigned d = static_cast<unsigned>(std::stoul(row[1]));
    ASSERT_LT(d, 2u);
    EXPECT_FALSE(row[3].empty()) << "power on every row: row " << i;
    if (per_gpu[d]++ == 0) {
      EXPECT_FALSE(row[4].empty()) << "energy on the GPU's first row";
    }
    if (row[4].empty()) continue;
    const int64_t t = std::stoll(row[0]);
    energy_times[d].push_back(t);
    auto energy_at = [&](int64_t ms) {
      std::vector<std::string> e = row;
      e[4] = milli(standin::nvml_energy_mj(d, ms));
      return e;
    };
    EXPECT_TRUE(matching_ms(t, row, energy_at).has_value()) << "row " << i;
  }
  for (unsigned d = 0; d < 2; ++d) {
    ASSERT_GE(energy_times[d].size(), 4u);
    // About one in five (fewer ticks on a loaded machine change both counts alike).
    EXPECT_LE(energy_times[d].size() * 3, per_gpu[d]) << "gpu " << d;
    const int64_t median = median_spacing_ns(energy_times[d]);
    EXPECT_GE(median, 90000000) << "median spacing of energy readings near 100 ms";
    EXPECT_LE(median, 140000000) << "median spacing of energy readings near 100 ms";
  }
}

// The AMD SMI stand-in, in the struct layouts of library version 26 (ROCm 7) and of 24 (ROCm
// 6.2): the same values either way; device 1 has no edge sensor, its temp_c is the hotspot.
void check_amdsmi(const std::string& major) {
  const Recorded r =
      record({"--interval-ms", "20", "--counter-interval-ms", "1", "--gpu", "amdsmi"},
             {"sleep", "0.5"}, run_env(STANDIN_AMDSMI_DIR, {"STANDIN_AMDSMI_MAJOR=" + major}));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = slurp(r.file("record.json"));
  EXPECT_NE(json.find("\"gpu_backend\": \"amdsmi\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu_note\": \"AMD SMI " + major + ".1.0\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\": \"Standin MI300X\""), std::string::npos) << json;
  const auto rows = read_csv(r.file("gpu.csv"));
  ASSERT_GT(rows.size(), 10u);
  std::string header;
  for (const auto& c : rows[0]) header += (header.empty() ? "" : ",") + c;
  EXPECT_EQ(header, kNvmlHeader + ",mem_temp_c");
  size_t near = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), 12u);
    const unsigned d = static_cast<unsigned>(std::stoul(row[1]));
    auto expected = [&](int64_t ms) {
      const double j =
          static_cast<double>(standin::amd_energy_count(d, ms)) * standin::kAmdResolutionUj / 1e3;
      return std::vector<std::string>{
          row[0],
          std::to_string(d),
          "5a0000c0-de00-4000-8000-00000000000" + std::to_string(d),
          milli(uint64_t{standin::amd_power_w(d, ms)} * 1000),
          milli(static_cast<uint64_t>(std::llround(j))),
          std::to_string(standin::amd_gfx_mhz(d, ms)),
          std::to_string(standin::amd_mem_mhz(d, ms)),
          std::to_string(d == 1 ? standin::amd_hotspot_c(d, ms) : standin::amd_edge_c(d, ms)),
          std::to_string(standin::amd_gfx_pct(d, ms)),
          std::to_string(standin::amd_umc_pct(d, ms)),
          "",
          std::to_string(standin::amd_vram_c(d, ms))};
    };
    const auto off = matching_ms(std::stoll(row[0]), row, expected);
    EXPECT_TRUE(off.has_value()) << "version " << major << " row " << i;
    if (off && *off <= 2) ++near;
  }
  EXPECT_GE(near * 10, (rows.size() - 1) * 9) << "rows within 2 ms of their stamp";
}
TEST(Record, AmdSmiStandInLayoutOfVersion26) {
  check_amdsmi("26");
}
TEST(Record, AmdSmiStandInLayoutOfVersion24) {
  check_amdsmi("24");
}

// --gpu auto with the AMD library only: AMD SMI is chosen.
TEST(Record, AutoFallsBackToAmdSmi) {
  if (library_loads("libnvidia-ml.so.1")) GTEST_SKIP() << "a real NVML is installed here";
  const Recorded r = record({"--interval-ms", "50"}, {"true"}, run_env(STANDIN_AMDSMI_DIR));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(slurp(r.file("record.json")).find("\"gpu_backend\": \"amdsmi\""), std::string::npos);
}

// Rows are in the file while CMD still runs (each tick is written, not kept until the end).
TEST(Record, StreamsWhileRunning) {
  const std::string dir = test_dir();
  const std::string run = dir + "/run";
  const pid_t pid = start(record_args(run, {"--interval-ms", "20"}, {"sleep", "2"}),
                          run_env(STANDIN_NVML_DIR), dir, dir + "/stderr.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  int ws = 0;
  ASSERT_EQ(waitpid(pid, &ws, WNOHANG), 0) << "chopper record still running";
  const std::string text = slurp(run + "/telemetry/" + host_name() + ".gpu.csv");
  const auto lines = std::count(text.begin(), text.end(), '\n');
  // After 1 s at 20 ms: ~50 ticks of 2 GPUs (at least 10 even on a loaded machine).
  EXPECT_GE(lines, 1 + 2 * 10) << text;
  EXPECT_EQ(text.back(), '\n') << "only whole rows are written";
  EXPECT_EQ(wait_status(pid), 0);
}

TEST(Record, ExitStatusPassesThrough) {
  const Recorded r = record({"--gpu", "none"}, {"sh", "-c", "exit 3"}, run_env(""));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(json_int(slurp(r.file("record.json")), "exit_status"), 3);
}

// SIGTERM sent to chopper record reaches CMD: sleep dies of it (143 = 128 + 15), and a shell
// that traps it runs its handler and exits with its own status.
TEST(Record, ForwardsSigterm) {
  for (const bool trap : {false, true}) {
    const std::string dir = test_dir();
    const std::string run = dir + "/run";
    std::vector<std::string> cmd = {"sleep", "30"};
    if (trap)
      cmd = {"sh", "-c",
             "trap 'echo TERM > \"$CHOPPER_RUN_DIR/seen\"; exit 5' TERM; sleep 30 & wait"};
    const pid_t pid =
        start(record_args(run, {"--gpu", "none"}, cmd), run_env(""), dir, dir + "/stderr.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(pid, SIGTERM);
    const int status = wait_status(pid);
    if (!trap) {
      EXPECT_EQ(status, 143);
    } else {
      EXPECT_EQ(status, 5);
      EXPECT_EQ(slurp(run + "/seen"), "TERM\n");
    }
    EXPECT_EQ(json_int(slurp(run + "/telemetry/" + host_name() + ".record.json"), "exit_status"),
              status);
  }
}

// kill -9 of chopper record: every row written is whole, and every tick sampled is in the file
// but for the one being sampled when the kill landed. The ticks sampled are counted independently:
// the stand-in logs each read of GPU 0 as it happens (STANDIN_LOG).
TEST(Record, KillNineLosesAtMostOneInterval) {
  const std::string dir = test_dir();
  const std::string run = dir + "/run";
  const pid_t pid = start(record_args(run, {"--interval-ms", "20"}, {"sleep", "3"}),
                          run_env(STANDIN_NVML_DIR, {"STANDIN_LOG=" + dir + "/reads.log"}), dir,
                          dir + "/stderr.txt");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_status(pid), 128 + SIGKILL);
  const std::string csv = run + "/telemetry/" + host_name() + ".gpu.csv";
  const std::string text = slurp(csv);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "only whole rows";
  const auto rows = read_csv(csv);
  size_t gpu0_rows = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 12u) << "row " << i;
    if (rows[i][1] == "0") ++gpu0_rows;
  }
  const std::string log = slurp(dir + "/reads.log");
  const auto reads = static_cast<size_t>(std::count(log.begin(), log.end(), '\n'));
  // About 40 ticks in 0.8 s (fewer on a loaded machine).
  EXPECT_GE(reads, 10u);
  EXPECT_LE(gpu0_rows, reads);
  EXPECT_GE(gpu0_rows + 1, reads) << "at most the tick in progress is lost";
  const std::string clock = slurp(run + "/telemetry/" + host_name() + ".clock.csv");
  EXPECT_EQ(clock.back(), '\n');
}

// The CPU files: a row for every logical CPU, each percentage in [0, 100] with its parts not
// above the whole; a CMD burning CPU in a loop shows as its thread, CPU time growing.
TEST(Record, CpuAndThreadFiles) {
  const Recorded r =
      record({"--gpu", "none", "--interval-ms", "20", "--thread-interval-ms", "50"},
             {"sh", "-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"}, run_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = slurp(r.file("record.json"));
  const int64_t cpus = *json_int(json, "logical_cpus");
  EXPECT_EQ(cpus, sysconf(_SC_NPROCESSORS_ONLN));
  const auto rows = read_csv(r.file("cpu.csv"));
  ASSERT_GT(rows.size(), 1u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"time_ns", "cpu", "util_pct", "user_pct",
                                               "system_pct", "iowait_pct"}));
  std::vector<int> per_cpu(static_cast<size_t>(cpus));
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 6u);
    const int cpu = std::stoi(rows[i][1]);
    ASSERT_LT(cpu, cpus);
    ++per_cpu[static_cast<size_t>(cpu)];
    double v[4];
    for (int k = 0; k < 4; ++k) {
      v[k] = std::stod(rows[i][2 + k]);
      EXPECT_GE(v[k], 0.0);
      EXPECT_LE(v[k], 100.0);
    }
    EXPECT_LE(v[1] + v[2] + v[3], v[0] + 0.3) << "row " << i;  // steal is in util only
  }
  for (int n : per_cpu) EXPECT_GE(n, 1) << "every logical CPU has rows";
  const auto threads = read_csv(r.file("threads.csv"));
  EXPECT_EQ(threads[0], (std::vector<std::string>{"time_ns", "pid", "ppid", "tid", "comm",
                                                  "processor", "cpu_time_ns"}));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"pids\": \\[([0-9]+)"))) << json;
  const std::string cmd_pid = m[1].str();  // CMD first
  std::vector<int64_t> cpu_time;
  for (size_t i = 1; i < threads.size(); ++i) {
    ASSERT_EQ(threads[i].size(), 7u);
    if (threads[i][4] != "sh") continue;
    EXPECT_EQ(threads[i][1], cmd_pid);
    EXPECT_EQ(threads[i][3], cmd_pid) << "one thread: tid = pid";
    EXPECT_LT(std::stol(threads[i][5]), cpus);
    cpu_time.push_back(std::stoll(threads[i][6]));
  }
  ASSERT_GE(cpu_time.size(), 3u) << "the busy shell's rows";
  for (size_t i = 1; i < cpu_time.size(); ++i) EXPECT_GT(cpu_time[i], cpu_time[i - 1]);
}

// CMD's children are followed: a shell that starts a busy child shell; the child's thread is in
// threads.csv with CMD as its parent, and its pid in record.json's pids after CMD's.
TEST(Record, FollowsChildProcesses) {
  const Recorded r =
      record({"--gpu", "none", "--thread-interval-ms", "20"},
             {"sh", "-c", "sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'; exit 0"},
             run_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = slurp(r.file("record.json"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"pids\": \\[([0-9]+), ([0-9]+)"))) << json;
  const std::string cmd_pid = m[1].str(), child_pid = m[2].str();
  size_t child_rows = 0;
  for (const auto& row : read_csv(r.file("threads.csv"))) {
    if (row.size() != 7 || row[1] != child_pid) continue;
    EXPECT_EQ(row[2], cmd_pid) << "the child's parent is CMD";
    EXPECT_EQ(row[3], child_pid);
    ++child_rows;
  }
  EXPECT_GE(child_rows, 1u) << slurp(r.file("threads.csv"));
}

TEST(Record, NoCpuWritesNoCpuFiles) {
  const Recorded r = record({"--gpu", "none", "--no-cpu"}, {"true"}, run_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(r.file("cpu.csv")));
  EXPECT_FALSE(fs::exists(r.file("threads.csv")));
  EXPECT_TRUE(fs::exists(r.file("clock.csv")));
}

// No GPU library at all: --gpu auto records the CPU only and says so in one line; --gpu nvml is an
// error (status 2) before CMD starts.
TEST(Record, NoGpuLibrary) {
  if (library_loads("libnvidia-ml.so.1") || library_loads("libamd_smi.so"))
    GTEST_SKIP() << "a real GPU library is installed here";
  const Recorded r = record({}, {"true"}, run_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("recording CPU only"), std::string::npos) << r.err;
  const std::string json = slurp(r.file("record.json"));
  EXPECT_NE(json.find("\"gpu_backend\": \"none\""), std::string::npos);
  EXPECT_NE(json.find("\"gpu_note\": \"no GPU library: NVML: "), std::string::npos) << json;
  EXPECT_FALSE(fs::exists(r.file("gpu.csv")));
  EXPECT_TRUE(fs::exists(r.file("cpu.csv")));

  const Recorded n = record({"--gpu", "nvml"}, {"touch", "ran"}, run_env(""));
  EXPECT_EQ(n.status, 2);
  EXPECT_NE(n.err.find("--gpu nvml: libnvidia-ml.so.1"), std::string::npos) << n.err;
  EXPECT_FALSE(fs::exists(n.dir + "/ran")) << "CMD must not start";

  const Recorded a = record({"--gpu", "amdsmi"}, {"touch", "ran"}, run_env(""));
  EXPECT_EQ(a.status, 2);
  EXPECT_NE(a.err.find("--gpu amdsmi: "), std::string::npos) << a.err;
  EXPECT_FALSE(fs::exists(a.dir + "/ran")) << "CMD must not start";
}

TEST(Record, CommandNotFound) {
  const Recorded r = record({"--gpu", "none"}, {"chopper-no-such-command"}, run_env(""));
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("chopper-no-such-command: command not found"), std::string::npos) << r.err;
}

TEST(Record, CommandSeesRunDir) {
  const Recorded r =
      record({"--gpu", "none"}, {"sh", "-c", "echo $CHOPPER_RUN_DIR > f"}, run_env(""));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(r.dir + "/f"), fs::absolute(r.run).string() + "\n");
}

// Recording does not slow CMD down: a fixed CPU workload timed inside CMD, alone and under
// chopper record at 10 ms with 2 stand-in GPUs, best of 3 each, within 1.5x (a generous bound:
// the sampler takes well under 1% of a core, but the test machine is shared).
TEST(Record, NoEffectOnCommandTiming) {
  const std::string dir = test_dir();
  const std::string work =
      "s=$(date +%s%N); i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; "
      "echo $(( $(date +%s%N) - s )) > \"$OUT\"";
  int64_t alone = INT64_MAX, recorded = INT64_MAX;
  for (int k = 0; k < 3; ++k) {
    const pid_t a = start({"/bin/sh", "-c", work}, run_env("", {"OUT=" + dir + "/alone"}), dir,
                          dir + "/err_alone.txt");
    ASSERT_EQ(wait_status(a), 0);
    alone = std::min<int64_t>(alone, std::stoll(slurp(dir + "/alone")));
    const pid_t b = start(record_args(dir + "/run", {"--interval-ms", "10"}, {"sh", "-c", work}),
                          run_env(STANDIN_NVML_DIR, {"OUT=" + dir + "/recorded"}), dir,
                          dir + "/err_recorded.txt");
    ASSERT_EQ(wait_status(b), 0) << slurp(dir + "/err_recorded.txt");
    recorded = std::min<int64_t>(recorded, std::stoll(slurp(dir + "/recorded")));
  }
  EXPECT_LE(static_cast<double>(recorded), 1.5 * static_cast<double>(alone))
      << "alone " << alone / 1000000 << " ms, recorded " << recorded / 1000000 << " ms";
}

}  // namespace
