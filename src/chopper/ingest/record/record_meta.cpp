// chopper record's record.json and clock.csv (record_meta.hpp).
#include "chopper/ingest/record/record_meta.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/base/text.hpp"
#include "chopper/ingest/record/record_gpu.hpp"
#include "chopper/ingest/telemetry/csv.hpp"

namespace chopper {

namespace {

// A recorder file is small (record.json: a few KB; clock.csv: a line a second): read whole, up to
// this many bytes.
constexpr size_t kMaxRecordFileBytes = size_t{64} << 20;

std::string read_all(const std::string& path) {
  auto src = ByteSource::open_file(path);
  std::string s;
  char buf[65536];
  while (const size_t n = src->read(buf, sizeof buf)) {
    s.append(buf, n);
    if (s.size() > kMaxRecordFileBytes)
      throw InputError(
          path, kMaxRecordFileBytes,
          fmt::format("over {} MiB: not a file chopper record writes", kMaxRecordFileBytes >> 20));
  }
  return s;
}

std::string_view first_line(std::string_view head) {
  if (head.size() >= 3 && head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  const size_t nl = head.find('\n');
  std::string_view l = head.substr(0, nl);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  return telemetry::trim(l);
}

bool ends_with(std::string_view s, std::string_view t) {
  return s.size() >= t.size() && s.substr(s.size() - t.size()) == t;
}

}  // namespace

RecordFile sniff_record_file(std::string_view head) {
  const std::string_view l = first_line(head);
  if (l == "realtime_ns,monotonic_ns") return RecordFile::kClock;
  if (l.rfind("time_ns,cpu,util_pct", 0) == 0) return RecordFile::kCpu;
  if (l.rfind("time_ns,pid,ppid,tid,comm", 0) == 0) return RecordFile::kThreads;
  std::vector<std::string_view> f;
  telemetry::split_csv(l, f);
  if (telemetry::record_gpu_header(f)) return RecordFile::kGpu;
  // record.json: an object whose "format" is "chopper-record" (near its start: the recorder writes
  // it first).
  size_t p = 0;
  while (p < head.size() &&
         (head[p] == ' ' || head[p] == '\t' || head[p] == '\r' || head[p] == '\n'))
    ++p;
  if (p < head.size() && head[p] == '{') {
    const size_t k = head.find("\"format\"");
    if (k != std::string_view::npos) {
      size_t v = head.find(':', k);
      if (v != std::string_view::npos) {
        ++v;
        while (v < head.size() && (head[v] == ' ' || head[v] == '\t' || head[v] == '\n')) ++v;
        if (head.substr(v, 16) == "\"chopper-record\"") return RecordFile::kMeta;
      }
    }
  }
  return RecordFile::kNone;
}

std::string record_file_host(std::string_view path) {
  const size_t slash = path.find_last_of("/\\");
  std::string n(slash == std::string_view::npos ? path : path.substr(slash + 1));
  for (std::string_view z : {".gz", ".zst"})
    if (ends_with(n, z)) n.resize(n.size() - z.size());
  for (std::string_view k : {".gpu.csv", ".cpu.csv", ".threads.csv", ".clock.csv", ".record.json"})
    if (ends_with(n, k) && n.size() > k.size()) return n.substr(0, n.size() - k.size());
  return "";
}

RecordMeta read_record_meta(const std::string& path) {
  const std::string text = read_all(path);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (const auto err = parser.parse(text).get(root); err)
    throw InputError(path, 0, fmt::format("not valid JSON ({})", simdjson::error_message(err)));
  simdjson::dom::object o;
  if (root.get(o)) throw InputError(path, 0, "not a JSON object");
  std::string_view fmt_name;
  if (o["format"].get(fmt_name) || fmt_name != "chopper-record")
    throw InputError(path, 0, "no \"format\": \"chopper-record\"");
  RecordMeta m;
  m.file = path;
  auto text_of = [&](const char* key, std::string& out) {
    std::string_view v;
    if (!o[key].get(v)) out = std::string(v);
  };
  // An integer, or -1 when absent or null; InputError when it is something else.
  auto int_of = [&](const char* key) -> int64_t {
    simdjson::dom::element e;
    if (o[key].get(e) || e.is_null()) return -1;
    int64_t v = 0;
    if (e.get(v)) throw InputError(path, 0, fmt::format("\"{}\" is not an integer", key));
    return v;
  };
  text_of("host", m.host);
  text_of("gpu_backend", m.gpu_backend);
  text_of("gpu_note", m.gpu_note);
  m.version = int_of("version");
  m.interval_ms = int_of("interval_ms");
  m.thread_interval_ms = int_of("thread_interval_ms");
  m.counter_interval_ms = int_of("counter_interval_ms");
  m.logical_cpus = int_of("logical_cpus");
  m.start_realtime_ns = int_of("start_realtime_ns");
  m.end_realtime_ns = int_of("end_realtime_ns");
  m.exit_status = int_of("exit_status");
  simdjson::dom::array a;
  if (!o["command"].get(a))
    for (simdjson::dom::element e : a) {
      std::string_view s;
      if (!e.get(s)) m.command.emplace_back(s);
    }
  if (!o["pids"].get(a))
    for (simdjson::dom::element e : a) {
      int64_t v = 0;
      if (e.get(v) || v <= 0) throw InputError(path, 0, "\"pids\" holds a value that is not a pid");
      m.pids.push_back(v);
    }
  if (!o["gpus"].get(a))
    for (simdjson::dom::element e : a) {
      simdjson::dom::object g;
      if (e.get(g)) throw InputError(path, 0, "\"gpus\" holds a value that is not an object");
      RecordMeta::Gpu x;
      int64_t i = -1;
      if (!g["index"].get(i)) x.index = static_cast<int32_t>(i);
      std::string_view s;
      if (!g["name"].get(s)) x.name = std::string(s);
      if (!g["uuid"].get(s)) x.uuid = std::string(s);
      m.gpus.push_back(std::move(x));
    }
  if (m.host.empty()) m.host = record_file_host(path);
  return m;
}

ClockCheck read_record_clock(const std::string& path) {
  const std::string text = read_all(path);
  ClockCheck c;
  c.file = path;
  std::string_view rest(text);
  uint64_t line_no = 0;
  bool header = false;
  Ns first_mono = 0, first_diff = 0, prev_diff = 0, last_mono = 0, last_diff = 0;
  std::vector<std::string_view> f;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const bool complete = nl != std::string_view::npos;
    std::string_view l = rest.substr(0, nl);
    rest.remove_prefix(complete ? nl + 1 : rest.size());
    ++line_no;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    l = telemetry::trim(l);
    if (l.empty()) continue;
    if (!header) {
      if (l != "realtime_ns,monotonic_ns")
        throw InputError(path, 0, "line 1: not the header realtime_ns,monotonic_ns");
      header = true;
      continue;
    }
    telemetry::split_csv(l, f);
    int64_t rt = 0, mono = 0;
    if (!complete || f.size() != 2 || parse_int64(f[0], rt) != DecimalStatus::kExact ||
        parse_int64(f[1], mono) != DecimalStatus::kExact) {
      ++c.bad_rows;
      continue;
    }
    const Ns diff = rt - mono;
    if (c.pairs == 0) {
      first_mono = mono;
      first_diff = diff;
    } else if (std::abs(diff - prev_diff) > std::abs(c.step_ns)) {
      c.step_ns = diff - prev_diff;
      c.step_line = line_no;
    }
    prev_diff = diff;
    last_mono = mono;
    last_diff = diff;
    ++c.pairs;
  }
  if (!header) throw InputError(path, 0, "empty: no header realtime_ns,monotonic_ns");
  c.span_ns = last_mono - first_mono;
  c.drift_ns = last_diff - first_diff;
  return c;
}

std::string ClockCheck::note() const {
  if (!suspect()) return "";
  std::string s;
  if (std::abs(drift_ns) > kClockDriftLimitNs)
    s = fmt::format("realtime - monotonic changed by {:+.3f} ms over {:.1f} s ({:.0f} ns/s)",
                    static_cast<double>(drift_ns) * 1e-6, static_cast<double>(span_ns) * 1e-9,
                    drift_ns_per_s());
  if (std::abs(step_ns) > kClockStepLimitNs)
    s += fmt::format("{}stepped by {:+.3f} ms at line {} (a clock jump)", s.empty() ? "" : "; ",
                     static_cast<double>(step_ns) * 1e-6, step_line);
  return s;
}

}  // namespace chopper
