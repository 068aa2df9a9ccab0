// chopper-make-hour-telemetry: a long GPU telemetry recording around a synthesized run's traced
// span, for the telemetry bench (run_telemetry_bench.sh).
//
//   chopper-make-hour-telemetry SHORT_CSV OUT [--minutes 60] [--at-minute 37] [--amd]
//                               [--utc-offset-s 3600]
//
// SHORT_CSV is the nvidia-smi CSV `chopper synth` writes beside a run
// (telemetry/node0.nvidia-smi.csv: local-time stamps on the node's clock offset, one row per GPU
// every interval). OUT gets a recording of --minutes minutes at the same interval, in the same
// format (header included), with the short file's rows verbatim at their own times, which fall
// --at-minute minutes into it; the rows before and after take clocks, temperatures and throttle
// reasons from the short file's rows cyclically (training goes on around the profiled steps),
// restamped, and utilization (74-100%) and power (400-640 W) from a fixed pseudo-random sequence:
// busy GPUs whose samples correlate with the traces at no other offset. --periodic repeats the
// profiled steps' utilization and power instead (jittered by ±8 points and ±25 W): a steady job's
// sawtooth, which the zone search of the alignment may match at a wrong quarter hour (see
// bench/README.md).
//
// --amd writes the same samples as `amd-smi monitor --csv` does (the generator's amd-smi layout:
// epoch milliseconds, UTC, i.e. the local stamps minus --utc-offset-s), for the amd-smi variant.
// Exit status 0, or 1 on a read or write error, 2 on usage.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "chopper/ingest/telemetry/csv.hpp"

namespace {

using chopper::Ns;

struct Row {
  Ns t = 0;
  std::string index, power, sm, mem, temp, temp_mem, util, reasons;
};

std::string smi_time(Ns t) {  // as the generator writes it: "2026/01/01 01:00:05.124"
  const std::time_t s = static_cast<std::time_t>(t / 1000000000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04d}/{:02d}/{:02d} {:02d}:{:02d}:{:02d}.{:03d}", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>((t / 1000000) % 1000));
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double jitter(uint64_t h) {  // uniform in [-1, 1)
  return static_cast<double>(mix(h) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

double number(std::string_view s) {
  double v = 0;
  std::string_view unit;
  chopper::telemetry::parse_quantity(s, v, unit);
  return v;
}

int usage() {
  fmt::print(stderr,
             "usage: chopper-make-hour-telemetry SHORT_CSV OUT [--minutes M] [--at-minute A]\n"
             "                                   [--amd] [--periodic] [--utc-offset-s S]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string in_path, out_path;
  int64_t minutes = 60, at_minute = 37, utc_offset_s = 3600;
  bool amd = false, periodic = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--minutes" && i + 1 < argc)
      minutes = std::atoll(argv[++i]);
    else if (a == "--at-minute" && i + 1 < argc)
      at_minute = std::atoll(argv[++i]);
    else if (a == "--utc-offset-s" && i + 1 < argc)
      utc_offset_s = std::atoll(argv[++i]);
    else if (a == "--amd")
      amd = true;
    else if (a == "--periodic")
      periodic = true;
    else if (a.starts_with("--"))
      return usage();
    else if (in_path.empty())
      in_path = std::string(a);
    else if (out_path.empty())
      out_path = std::string(a);
    else
      return usage();
  }
  if (out_path.empty() || minutes <= 0 || at_minute < 0 || at_minute >= minutes) return usage();

  // The short file: groups of rows (one per GPU) at each sample time.
  std::ifstream in(in_path);
  if (!in) {
    fmt::print(stderr, "chopper-make-hour-telemetry: cannot read {}\n", in_path);
    return 1;
  }
  std::string header, line;
  std::getline(in, header);
  std::vector<std::vector<Row>> groups;
  std::vector<std::string_view> f;
  while (std::getline(in, line)) {
    chopper::telemetry::split_csv(line, f);
    if (f.size() != 9) continue;
    Row r;
    if (!chopper::telemetry::parse_calendar(f[0], r.t)) continue;
    r.index = std::string(f[1]);
    r.power = std::string(f[2]);
    r.sm = std::string(f[3]);
    r.mem = std::string(f[4]);
    r.temp = std::string(f[5]);
    r.temp_mem = std::string(f[6]);
    r.util = std::string(f[7]);
    r.reasons = std::string(f[8]);
    if (groups.empty() || groups.back().front().t != r.t) groups.emplace_back();
    groups.back().push_back(std::move(r));
  }
  if (groups.size() < 3) {
    fmt::print(stderr, "chopper-make-hour-telemetry: {}: too few sample times\n", in_path);
    return 1;
  }
  const Ns period = groups[1].front().t - groups[0].front().t;
  const Ns first = groups.front().front().t, last = groups.back().front().t;
  const Ns start = first - at_minute * 60 * 1000000000LL;
  const int64_t samples = minutes * 60 * 1000000000LL / period;

  std::FILE* out = std::fopen(out_path.c_str(), "wb");
  if (out == nullptr) {
    fmt::print(stderr, "chopper-make-hour-telemetry: cannot write {}\n", out_path);
    return 1;
  }
  std::string buf;
  buf.reserve(1 << 22);
  buf += amd ? "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,gfx,gfx_clock,"
               "mem_clock,throttle_status\n"
             : header + "\n";
  uint64_t rows = 0, verbatim = 0;
  const int64_t cycle = static_cast<int64_t>(groups.size());
  for (int64_t k = 0; k < samples; ++k) {
    const Ns t = start + k * period;
    const bool inside = t >= first && t <= last;
    const int64_t g = (((t - first) / period) % cycle + cycle) % cycle;
    for (const Row& r : groups[static_cast<size_t>(g)]) {
      double power = number(r.power), util = number(r.util);
      if (!inside) {
        const uint64_t h =
            static_cast<uint64_t>(k) * 64 + std::strtoull(r.index.c_str(), nullptr, 10);
        if (periodic) {  // the profiled steps' pattern, repeated
          util = std::min(100.0, std::max(0.0, util + 8.0 * jitter(h)));
          power = std::max(60.0, power + 25.0 * jitter(h ^ 0x5bd1e995));
        } else {  // busy, with no structure that the traces' could match
          util = std::min(100.0, 88.0 + 14.0 * jitter(h));
          power = 520.0 + 120.0 * jitter(h ^ 0x5bd1e995);
        }
      } else {
        ++verbatim;
      }
      if (amd) {
        const double temp = number(r.temp);
        const uint64_t reasons = static_cast<uint64_t>(number(r.reasons));
        fmt::format_to(
            std::back_inserter(buf), "{},{},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{}\n",
            (t - utc_offset_s * 1000000000LL) / 1000000, r.index, power, temp + 8, temp + 4, util,
            number(r.sm), number(r.mem), reasons != 0 ? "POWER" : "NONE");
      } else if (inside) {
        fmt::format_to(std::back_inserter(buf), "{}, {}, {}, {}, {}, {}, {}, {}, {}\n", smi_time(t),
                       r.index, r.power, r.sm, r.mem, r.temp, r.temp_mem, r.util, r.reasons);
      } else {
        fmt::format_to(std::back_inserter(buf), "{}, {}, {:.2f} W, {}, {}, {}, {}, {:.0f} %, {}\n",
                       smi_time(t), r.index, power, r.sm, r.mem, r.temp, r.temp_mem, util,
                       r.reasons);
      }
      ++rows;
    }
    if (buf.size() > (1 << 22) - 4096) {
      if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size()) return 1;
      buf.clear();
    }
  }
  if (std::fwrite(buf.data(), 1, buf.size(), out) != buf.size() || std::fclose(out) != 0) {
    fmt::print(stderr, "chopper-make-hour-telemetry: write failed: {}\n", out_path);
    return 1;
  }
  fmt::print(
      "wrote {} ({}): {} rows, {} min every {} ms; the short file's {} rows at {} .. {} "
      "(minute {})\n",
      out_path, amd ? "amd-smi" : "nvidia-smi", rows, minutes, period / 1000000, verbatim,
      smi_time(first), smi_time(last), at_minute);
  return 0;
}
