// Readers of `chopper record`'s CPU files (cpu_reader.hpp; the format: docs/telemetry_formats.md,
// "chopper record").
#include "chopper/ingest/record/cpu_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "chopper/ingest/telemetry/csv.hpp"

namespace chopper {
namespace {

using telemetry::LineReader;
using telemetry::where;

// The header line of `head` (without its end).
std::string_view first_line(std::string_view head) {
  const size_t e = head.find('\n');
  std::string_view l = head.substr(0, e);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  return l;
}

bool header_is(std::string_view head, std::string_view want) {
  const std::string_view l = first_line(head);
  return l.substr(0, want.size()) == want && (l.size() == want.size() || l[want.size()] == ',');
}

// Splits a CSV line at commas; "..." quotes a field ("" is a quote). False when a quote does not
// close. Fields are unquoted into `store` when they hold a doubled quote.
bool split_row(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  size_t i = 0;
  const size_t n = line.size();
  for (;;) {
    std::string f;
    if (i < n && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        if (line[i] == '"') {
          if (i + 1 < n && line[i + 1] == '"') {
            f += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        f += line[i++];
      }
      if (!closed || (i < n && line[i] != ',')) return false;
    } else {
      const size_t c = line.find(',', i);
      f.assign(line.substr(i, c == std::string_view::npos ? n - i : c - i));
      i = c == std::string_view::npos ? n : c;
    }
    out.push_back(std::move(f));
    if (i >= n) return true;
    ++i;  // the comma
    if (i == n) {
      out.emplace_back();
      return true;
    }
  }
}

template <class T>
bool parse_int(std::string_view s, T& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

bool parse_real(std::string_view s, double& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty() && std::isfinite(v);
}

// The rows of one file: the header's columns by name, each data line split, the common anomalies
// counted; `row(fields, line_no)` takes the fields of a row of the header's length.
template <class Row>
void read_rows(ByteSource& src, std::string_view want, const std::vector<std::string>& known,
               Diagnostics& d, uint64_t& rows_read, Row row) {
  LineReader lr(src);
  lr.limit_rows(telemetry::kMaxRowBytes, &d);
  std::string_view line;
  bool complete = true;
  std::vector<std::string> header, f;
  while (lr.next(line, complete)) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const uint64_t ln = lr.line_no();
    if (!complete) {  // a cut write: the recorder ends every row with "\n"
      ++rows_read;
      d.add("truncated_line", [&] { return fmt::format("{}: {}", where(ln), line); });
      continue;
    }
    if (line.empty()) continue;
    if (!header.empty()) ++rows_read;
    if (header.empty()) {
      if (!header_is(line, want) || !split_row(line, header)) {
        header.clear();
        d.add("bad_row", [&] { return fmt::format("{}: before the header: {}", where(ln), line); });
        continue;
      }
      for (const std::string& h : header)
        if (std::find(known.begin(), known.end(), h) == known.end())
          d.add("unused_field", fmt::format("{}: {}", where(ln), h));
      continue;
    }
    if (!split_row(line, f)) {
      d.add("bad_quoting", [&] { return fmt::format("{}: {}", where(ln), line); });
      continue;
    }
    if (f.size() != header.size()) {
      d.add("bad_row", [&] {
        return fmt::format("{}: {} fields, the header has {}: {}", where(ln), f.size(),
                           header.size(), line);
      });
      continue;
    }
    row(header, f, ln);
  }
}

// The index of column `name` in `header`, or -1.
int column_of(const std::vector<std::string>& header, std::string_view name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

// A percentage cell: NaN when empty (counted), not a number (counted) or outside [0, 100].
double pct_cell(const std::vector<std::string>& f, int col, uint64_t ln, std::string_view name,
                Diagnostics& d) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (col < 0) return nan;
  const std::string& s = f[static_cast<size_t>(col)];
  double v = 0;
  if (s.empty()) {
    d.add("value_not_available", [&] { return fmt::format("{}: {} empty", where(ln), name); });
    return nan;
  }
  if (!parse_real(s, v)) {
    d.add("bad_value", [&] { return fmt::format("{}: {} '{}'", where(ln), name, s); });
    return nan;
  }
  if (v < 0 || v > 100) {
    d.add("telemetry_out_of_range", [&] { return fmt::format("{}: {} {}", where(ln), name, s); });
    return nan;
  }
  return v;
}

// The name of a path without its compression suffix and `token` (".cpu.csv", ".threads.csv"), or
// the path itself when it does not end so.
std::string strip_suffix(std::string p, std::string_view token) {
  for (std::string_view z : {".gz", ".zst"})
    if (p.size() > z.size() && p.ends_with(z)) p.resize(p.size() - z.size());
  if (p.size() > token.size() && p.ends_with(token)) p.resize(p.size() - token.size());
  return p;
}

std::string host_of(const std::string& key) {
  const size_t slash = key.find_last_of('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

}  // namespace

bool is_cpu_csv(std::string_view head) {
  return header_is(head, kCpuCsvHeader);
}
bool is_threads_csv(std::string_view head) {
  return header_is(head, kThreadsCsvHeader);
}

CpuUtilization read_cpu_csv(ByteSource& src) {
  CpuUtilization c;
  c.file = src.name();
  Diagnostics& d = c.diagnostics;
  int ct = -1, cc = -1, cu = -1, cus = -1, cs = -1, ci = -1;
  bool have_cols = false;
  read_rows(src, kCpuCsvHeader,
            {"time_ns", "cpu", "util_pct", "user_pct", "system_pct", "iowait_pct"}, d, c.rows_read,
            [&](const std::vector<std::string>& h, const std::vector<std::string>& f, uint64_t ln) {
              if (!have_cols) {
                ct = column_of(h, "time_ns"), cc = column_of(h, "cpu");
                cu = column_of(h, "util_pct"), cus = column_of(h, "user_pct");
                cs = column_of(h, "system_pct"), ci = column_of(h, "iowait_pct");
                have_cols = true;
              }
              Ns t = 0;
              int32_t cpu = -1;
              if (!parse_int(f[static_cast<size_t>(ct)], t)) {
                d.add("bad_timestamp", [&] {
                  return fmt::format("{}: time_ns '{}'", where(ln), f[static_cast<size_t>(ct)]);
                });
                return;
              }
              if (!parse_int(f[static_cast<size_t>(cc)], cpu) || cpu < 0) {
                d.add("bad_row", [&] {
                  return fmt::format("{}: cpu '{}'", where(ln), f[static_cast<size_t>(cc)]);
                });
                return;
              }
              c.time_ns.push_back(t);
              c.cpu.push_back(cpu);
              c.util_pct.push_back(pct_cell(f, cu, ln, "util_pct", d));
              c.user_pct.push_back(pct_cell(f, cus, ln, "user_pct", d));
              c.system_pct.push_back(pct_cell(f, cs, ln, "system_pct", d));
              c.iowait_pct.push_back(pct_cell(f, ci, ln, "iowait_pct", d));
            });
  return c;
}

CpuUtilization read_cpu_csv(const std::string& path) {
  auto src = ByteSource::open_file(path);
  return read_cpu_csv(*src);
}

ThreadSamples read_threads_csv(ByteSource& src) {
  ThreadSamples s;
  s.file = src.name();
  Diagnostics& d = s.diagnostics;
  int col[7] = {-1, -1, -1, -1, -1, -1, -1};
  static constexpr const char* kNames[7] = {"time_ns", "pid",       "ppid",       "tid",
                                            "comm",    "processor", "cpu_time_ns"};
  bool have_cols = false;
  read_rows(
      src, kThreadsCsvHeader, {kNames, kNames + 7}, d, s.rows_read,
      [&](const std::vector<std::string>& h, const std::vector<std::string>& f, uint64_t ln) {
        if (!have_cols) {
          for (int k = 0; k < 7; ++k) col[k] = column_of(h, kNames[k]);
          have_cols = true;
        }
        if (col[6] < 0) {
          d.add("bad_row", [&] { return fmt::format("{}: no cpu_time_ns column", where(ln)); });
          return;
        }
        auto cell = [&](int k) -> const std::string& { return f[static_cast<size_t>(col[k])]; };
        Ns t = 0, cpu_time = 0;
        int64_t pid = 0, ppid = 0, tid = 0;
        if (!parse_int(cell(0), t)) {
          d.add("bad_timestamp",
                [&] { return fmt::format("{}: time_ns '{}'", where(ln), cell(0)); });
          return;
        }
        if (!parse_int(cell(1), pid) || !parse_int(cell(2), ppid) || !parse_int(cell(3), tid)) {
          d.add("bad_row", [&] {
            return fmt::format("{}: pid, ppid or tid not an integer: {},{},{}", where(ln), cell(1),
                               cell(2), cell(3));
          });
          return;
        }
        if (cell(6).empty()) {
          d.add("value_not_available",
                [&] { return fmt::format("{}: cpu_time_ns empty", where(ln)); });
          return;
        }
        if (!parse_int(cell(6), cpu_time) || cpu_time < 0) {
          d.add("bad_value",
                [&] { return fmt::format("{}: cpu_time_ns '{}'", where(ln), cell(6)); });
          return;
        }
        int32_t proc = -1;
        if (col[5] >= 0 && !cell(5).empty() && !parse_int(cell(5), proc)) {
          d.add("bad_value", [&] { return fmt::format("{}: processor '{}'", where(ln), cell(5)); });
          proc = -1;
        }
        s.time_ns.push_back(t);
        s.pid.push_back(pid);
        s.ppid.push_back(ppid);
        s.tid.push_back(tid);
        s.comm.push_back(cell(4));
        s.processor.push_back(proc);
        s.cpu_time_ns.push_back(cpu_time);
      });
  return s;
}

ThreadSamples read_threads_csv(const std::string& path) {
  auto src = ByteSource::open_file(path);
  return read_threads_csv(*src);
}

std::vector<RecordedCpu> group_recorded_cpu(std::vector<CpuUtilization> cpus,
                                            std::vector<ThreadSamples> threads) {
  std::map<std::string, RecordedCpu> by_key;
  for (CpuUtilization& c : cpus) {
    const std::string key = strip_suffix(c.file, ".cpu.csv");
    RecordedCpu& r = by_key[key];
    r.host = host_of(key);
    r.cpus = std::move(c);
  }
  for (ThreadSamples& t : threads) {
    const std::string key = strip_suffix(t.file, ".threads.csv");
    RecordedCpu& r = by_key[key];
    r.host = host_of(key);
    r.threads = std::move(t);
  }
  std::vector<RecordedCpu> out;
  for (auto& [k, r] : by_key) out.push_back(std::move(r));
  return out;
}

}  // namespace chopper
