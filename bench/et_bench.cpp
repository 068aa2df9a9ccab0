// Reading speed of the host execution trace reader against the Kineto reader, run by hand:
//   chopper-bench-et HOST_ET.json KINETO.json [REPEAT]
// (e.g. rank-0.et.json and rank-0.json of `chopper synth --et`). Reads each file REPEAT times
// (default 5), alternating, and prints the best and median MB/s of JSON text per core (CPU time
// of this thread), reading only (no linking).
#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "chopper/ingest/et/et_reader.hpp"
#include "chopper/ingest/kineto/kineto_reader.hpp"

namespace {

double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void print(const char* what, const std::string& path, std::vector<double> s) {
  const double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  std::sort(s.begin(), s.end());
  fmt::print("{:7s} {:8.1f} MB  best {:7.1f} MB/s  median {:7.1f} MB/s  ({})\n", what, mb,
             mb / s.front(), mb / s[s.size() / 2], path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: chopper-bench-et HOST_ET.json KINETO.json [REPEAT]\n");
    return 2;
  }
  const int repeat = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::vector<double> et_s, k_s;
  size_t nodes = 0, events = 0;
  for (int i = 0; i < repeat; ++i) {
    double t0 = cpu_s();
    chopper::ExecTrace et = chopper::read_host_et_file(argv[1]);
    et_s.push_back(cpu_s() - t0);
    nodes = et.size();
    chopper::KinetoReadOptions o;
    t0 = cpu_s();
    chopper::RankTrace k = chopper::read_kineto_file(argv[2], o);
    k_s.push_back(cpu_s() - t0);
    events = k.total_events;
  }
  print("host ET", argv[1], et_s);
  print("Kineto", argv[2], k_s);
  fmt::print("{} ET nodes, {} Kineto events\n", nodes, events);
  return 0;
}
