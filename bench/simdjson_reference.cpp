// chopper-bench-simdjson: a machine reference for chopper-bench-ingest. How fast does simdjson,
// the fastest general JSON parser we know of, parse the same uncompressed trace on this machine?
//
//   chopper-bench-simdjson FILE [--repeat R] [--expect-x-events N]
//
// The file is loaded into memory first (not timed). Then, R times each, best (least CPU) kept:
//   dom        simdjson::dom::parser::parse of the whole document (the tape only: no tables, no
//              interning), then a walk of traceEvents counting the "ph": "X" events;
//   on-demand  simdjson::ondemand over traceEvents, every member of every event visited (key
//              unescaped, the value's raw token taken, no number converted), counting the
//              "ph": "X" events.
// chopper's ingest does more than either (UTF-8 repair, exact ns times, tables, linking ids,
// diagnostics) and streams the file instead of holding it, so "chopper MB/s / simdjson MB/s" says
// how close to this machine's JSON-parsing speed it runs. MB = 10^6 bytes; CPU = process CPU time.
// Exit status: 0, 1 if simdjson failed or the X-event count differs from --expect-x-events,
// 2 usage error. Needs about 2x the file in memory. Run by hand (run_ingest_bench.sh), not in CI.
#include <fmt/format.h>
#include <simdjson.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <typeinfo>

namespace {

// The kernel On-Demand was compiled for (simdjson::ondemand names it at compile time).
std::string on_demand_kernel() {
  const std::string_view t = typeid(simdjson::ondemand::parser).name();
  for (const char* k :
       {"icelake", "haswell", "westmere", "arm64", "ppc64", "lasx", "lsx", "fallback"})
    if (t.find(k) != std::string_view::npos) return k;
  return std::string(t);
}

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// X events by a DOM parse; -1 on a parse error.
int64_t x_by_dom(simdjson::dom::parser& parser, const simdjson::padded_string& json) {
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return -1;
  simdjson::dom::array events;
  if (doc["traceEvents"].get_array().get(events) != simdjson::SUCCESS) return -1;
  int64_t x = 0;
  for (simdjson::dom::element e : events) {
    std::string_view ph;
    if (e["ph"].get_string().get(ph) == simdjson::SUCCESS && ph == "X") ++x;
  }
  return x;
}

// X events by an On-Demand pass that visits every member of every event; -1 on an error.
int64_t x_by_on_demand(simdjson::ondemand::parser& parser, const simdjson::padded_string& json) {
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) return -1;
  simdjson::ondemand::array events;
  if (doc["traceEvents"].get_array().get(events) != simdjson::SUCCESS) return -1;
  int64_t x = 0;
  for (auto item : events) {
    simdjson::ondemand::object ev;
    if (item.get_object().get(ev) != simdjson::SUCCESS) return -1;
    for (auto field : ev) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) return -1;
      std::string_view raw;
      raw = field.value().raw_json_token();
      if (key == "ph" && raw.size() >= 3 && raw.substr(0, 3) == "\"X\"") ++x;
    }
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int repeat = 3;
  int64_t expect_x = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--expect-x-events" && i + 1 < argc) {
      expect_x = std::atoll(argv[++i]);
    } else if (!a.starts_with("--") && path.empty()) {
      path = a;
    } else {
      fmt::print(stderr, "usage: chopper-bench-simdjson FILE [--repeat R] [--expect-x-events N]\n");
      return 2;
    }
  }
  if (path.empty()) {
    fmt::print(stderr, "usage: chopper-bench-simdjson FILE [--repeat R] [--expect-x-events N]\n");
    return 2;
  }
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json) != simdjson::SUCCESS) {
    fmt::print(stderr, "{}: cannot load (simdjson reads plain JSON only)\n", path);
    return 1;
  }
  const double mb = static_cast<double>(json.size()) / 1e6;
  simdjson::dom::parser dom;
  simdjson::ondemand::parser on_demand;
  int status = 0;
  auto run = [&](const char* what, auto&& parse) {
    double best = 1e300;
    int64_t x = -1;
    for (int r = 0; r < repeat; ++r) {
      const double c0 = cpu_now();
      x = parse();
      best = std::min(best, cpu_now() - c0);
    }
    const bool ok = x >= 0 && (expect_x < 0 || x == expect_x);
    if (!ok) status = 1;
    fmt::print("{:<10} {:8.1f} MB  CPU s {:7.3f}  {:8.1f} MB/s per core  X events {}{}\n", what, mb,
               best, mb / best, x, ok ? "" : "  (MISMATCH or parse error)");
    fmt::print(
        "simdjson_result parser={} mb={:.1f} cpu_s={:.3f} mbps_per_core={:.1f} x_events={}\n", what,
        mb, best, mb / best, x);
  };
  fmt::print("simdjson: dom {}, on-demand {}; best of {}\n",
             simdjson::get_active_implementation()->name(), on_demand_kernel(), repeat);
  run("dom", [&] { return x_by_dom(dom, json); });
  run("on-demand", [&] { return x_by_on_demand(on_demand, json); });
  return status;
}
