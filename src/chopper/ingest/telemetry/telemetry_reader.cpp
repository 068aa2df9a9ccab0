// Sniffing and dispatch of the telemetry readers, and what they share: the series builder, unit
// conversion, diagnostics helpers, throttle-reason text.
#include "chopper/ingest/telemetry/telemetry_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

#include "chopper/base/error.hpp"
#include "chopper/base/text.hpp"
#include "chopper/ingest/record/record_gpu.hpp"
#include "chopper/ingest/telemetry/detail.hpp"

namespace chopper {

namespace telemetry {

namespace {
constexpr Ns kResetNs = 1000000000;  // time back by more than this: a clock reset
}

size_t SeriesBuilder::series(const GpuRef& gpu, Metric m, std::string_view source,
                             ClockDomain clock) {
  std::string key = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", gpu.index, gpu.bus_id, gpu.uuid,
                                gpu.host, static_cast<int>(m), source);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  Series s;
  s.gpu = gpu;
  s.metric = m;
  s.source = std::string(source);
  s.clock = clock;
  d_.series.push_back(std::move(s));
  lines_.emplace_back();
  index_.emplace(std::move(key), d_.series.size() - 1);
  return d_.series.size() - 1;
}

size_t SeriesBuilder::series(size_t slot, const GpuRef& gpu, Metric m, std::string_view source,
                             ClockDomain clock) {
  if (gpu.index < 0 || gpu.index >= 4096) return series(gpu, m, source, clock);
  if (slot >= cache_.size()) cache_.resize(slot + 1);
  std::vector<int64_t>& c = cache_[slot];
  const auto gi = static_cast<size_t>(gpu.index);
  if (gi >= c.size()) c.resize(gi + 1, -1);
  if (c[gi] >= 0) {
    const Series& s = d_.series[static_cast<size_t>(c[gi])];
    if (s.metric == m && s.clock == clock && s.gpu.index == gpu.index && s.source == source &&
        s.gpu.bus_id == gpu.bus_id && s.gpu.uuid == gpu.uuid && s.gpu.host == gpu.host)
      return static_cast<size_t>(c[gi]);
  }
  const size_t id = series(gpu, m, source, clock);
  c[gi] = static_cast<int64_t>(id);
  return id;
}

MetricRange metric_range(Metric m) {
  switch (m) {
    case Metric::kPowerW:
    case Metric::kPowerAvgW:
      return {0, kMaxPowerW};
    case Metric::kSmClockMhz:
    case Metric::kMemClockMhz:
      return {0, kMaxClockMhz};
    case Metric::kTempGpuC:
    case Metric::kTempHotspotC:
    case Metric::kTempMemC:
      return {kMinTempC, kMaxTempC};
    case Metric::kUtilGpuPct:
    case Metric::kUtilMemPct:
      return {0, 100};
    case Metric::kThrottleReasons:
      return {0, 18446744073709551615.0};
    case Metric::kEnergyJ:
    case Metric::kLinkTxBytes:
    case Metric::kLinkRxBytes:
    case Metric::kPcieTxBytes:
    case Metric::kPcieRxBytes:
      return {0, kMaxCumulative};
  }
  return {0, 0};
}

void SeriesBuilder::add(size_t s, Ns t, double v, uint64_t line) {
  if (!std::isfinite(v)) {
    count(d_, "bad_value", line, "not a finite number");
    return;
  }
  Series& se = d_.series[s];
  const MetricRange r = metric_range(se.metric);
  if (v < r.lo || v > r.hi) {
    d_.diagnostics.add("telemetry_out_of_range", [&] {
      return fmt::format("{}: {} of GPU {} = {:g}, outside {}'s range [{:g}, {:g}]: dropped",
                         where(line), se.source, se.gpu.index, v, metric_name(se.metric), r.lo,
                         r.hi);
    });
    return;
  }
  se.t_ns.push_back(t);
  se.value.push_back(v);
  lines_[s].push_back(line);
}

void SeriesBuilder::drop_energy_spikes(Series& s, const std::vector<uint64_t>* lines,
                                       size_t first) {
  size_t keep = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (keep > 0) {
      const double rise = s.value[i] - s.value[keep - 1];
      const double dt_s = static_cast<double>(s.t_ns[i] - s.t_ns[keep - 1]) * 1e-9;
      if (rise > kMaxPowerW * dt_s + kEnergySlackJ) {
        d_.diagnostics.add("telemetry_out_of_range", [&] {
          const size_t at = first + i;
          return fmt::format(
              "{}: {} of GPU {} rises {:g} J in {:.3f} s (over {:g} W): the sample is dropped",
              lines != nullptr && at < lines->size() ? where((*lines)[at])
                                                     : std::string("a sample"),
              s.source, s.gpu.index, rise, dt_s, kMaxPowerW);
        });
        continue;
      }
    }
    s.t_ns[keep] = s.t_ns[i];
    s.value[keep] = s.value[i];
    ++keep;
  }
  s.t_ns.resize(keep);
  s.value.resize(keep);
}

void SeriesBuilder::finish() {
  std::vector<Series> out;
  out.reserve(d_.series.size());
  for (size_t k = 0; k < d_.series.size(); ++k) {
    Series& s = d_.series[k];
    const std::vector<uint64_t>& lines = lines_[k];
    const size_t n = s.t_ns.size();
    size_t start = 0;
    while (start < n || (n == 0 && start == 0)) {
      size_t end = start + 1;
      bool unordered = false;
      for (; end < n; ++end) {
        const Ns prev = s.t_ns[end - 1], cur = s.t_ns[end];
        if (cur < prev && prev - cur > kResetNs) {
          d_.diagnostics.add("clock_reset", [&] {
            return fmt::format(
                "{}: {} of GPU {}: time goes back {:.3f} s; the samples from here on are a "
                "new series",
                where(lines[end]), s.source, s.gpu.index, static_cast<double>(prev - cur) / 1e9);
          });
          break;
        }
        if (cur < prev) {
          unordered = true;
          d_.diagnostics.add("out_of_order", [&] {
            return fmt::format("{}: {} of GPU {}: time goes back {:.3f} s", where(lines[end]),
                               s.source, s.gpu.index, static_cast<double>(prev - cur) / 1e9);
          });
        }
      }
      if (n == 0) end = 0;
      Series seg;
      seg.gpu = s.gpu;
      seg.metric = s.metric;
      seg.source = s.source;
      seg.clock = s.clock;
      if (unordered) {
        std::vector<size_t> idx(end - start);
        std::iota(idx.begin(), idx.end(), start);
        std::stable_sort(idx.begin(), idx.end(),
                         [&](size_t a, size_t b) { return s.t_ns[a] < s.t_ns[b]; });
        seg.t_ns.reserve(idx.size());
        seg.value.reserve(idx.size());
        for (size_t i : idx) {
          seg.t_ns.push_back(s.t_ns[i]);
          seg.value.push_back(s.value[i]);
        }
      } else if (start == 0 && end == n) {  // one segment in order: the series as it is
        seg.t_ns = std::move(s.t_ns);
        seg.value = std::move(s.value);
      } else {
        const auto b = static_cast<std::ptrdiff_t>(start), e = static_cast<std::ptrdiff_t>(end);
        seg.t_ns.assign(s.t_ns.begin() + b, s.t_ns.begin() + e);
        seg.value.assign(s.value.begin() + b, s.value.begin() + e);
      }
      if (seg.metric == Metric::kEnergyJ)
        drop_energy_spikes(seg, unordered ? nullptr : &lines, start);
      // A series that never got a sample (every value N/A) is not kept.
      if (!seg.t_ns.empty()) out.push_back(std::move(seg));
      if (n == 0) break;
      start = end;
    }
  }
  d_.series = std::move(out);
  lines_.clear();
  index_.clear();
  cache_.clear();
}

bool to_metric_unit(Metric m, std::string_view unit_in, double fallback_scale, double& v) {
  unit_in = trim(unit_in);
  if (unit_in.size() > 15) return false;  // no unit is that long
  char low[16];
  for (size_t i = 0; i < unit_in.size(); ++i) {
    const char c = unit_in[i];
    low[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  std::string_view u(low, unit_in.size());
  if (u.substr(0, 2) == "\xC2\xB0") u.remove_prefix(2);  // "°C"
  if (u.empty()) {
    v *= fallback_scale;
    return true;
  }
  double k = 0;
  switch (m) {
    case Metric::kPowerW:
    case Metric::kPowerAvgW:
      k = u == "w"                          ? 1
          : u == "mw"                       ? 1e-3
          : u == "kw"                       ? 1e3
          : (u == "uw" || u == "\xC2\xB5w") ? 1e-6
                                            : 0;
      break;
    case Metric::kEnergyJ:
      k = u == "j"                                              ? 1
          : u == "mj"                                           ? 1e-3
          : u == "kj"                                           ? 1e3
          : (u == "uj" || u == "\xC2\xB5j" || u == "\xCE\xBCj") ? 1e-6
                                                                : 0;
      break;
    case Metric::kSmClockMhz:
    case Metric::kMemClockMhz:
      k = u == "mhz" ? 1 : u == "ghz" ? 1e3 : u == "khz" ? 1e-3 : u == "hz" ? 1e-6 : 0;
      break;
    case Metric::kTempGpuC:
    case Metric::kTempHotspotC:
    case Metric::kTempMemC:
      k = (u == "c" || u == "degc" || u == "celsius") ? 1 : u == "mc" ? 1e-3 : 0;
      break;
    case Metric::kUtilGpuPct:
    case Metric::kUtilMemPct:
      k = u == "%" ? 1 : 0;
      break;
    case Metric::kThrottleReasons:
      k = 0;
      break;
    case Metric::kLinkTxBytes:
    case Metric::kLinkRxBytes:
    case Metric::kPcieTxBytes:
    case Metric::kPcieRxBytes:
      k = (u == "b" || u == "bytes")  ? 1
          : (u == "kb" || u == "kib") ? 1024.0
          : (u == "mb" || u == "mib") ? 1048576.0
          : (u == "gb" || u == "gib") ? 1073741824.0
                                      : 0;
      break;
  }
  if (k == 0) return false;
  v *= k;
  return true;
}

void count(TelemetryData& d, DiagKind kind, uint64_t line, std::string_view what) {
  d.diagnostics.add(kind, [&] { return fmt::format("{}: {}", where(line), what); });
}

void unused_field(TelemetryData& d, std::unordered_set<std::string>& seen, std::string_view name,
                  uint64_t line) {
  if (!seen.insert(std::string(name)).second) return;
  d.diagnostics.add("unused_field", fmt::format("{}: {}", where(line), name));
}

void fail(const LineReader& in, std::string_view what) {
  throw InputError(in.name(), in.line_offset(), fmt::format("{}: {}", where(in.line_no()), what));
}

bool parse_throttle_text(std::string_view s, double& mask) {
  s = trim(s);
  if (s.empty()) return false;
  double v = 0;
  std::string_view unit;
  if (parse_quantity(s, v, unit) == ValueStatus::kOk && unit.empty()) {
    if (v < 0) return false;
    mask = v;
    return true;
  }
  uint32_t m = 0;
  bool any = false;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() &&
           (s[i] == '|' || s[i] == ';' || s[i] == ',' || s[i] == ' ' || s[i] == '+' || s[i] == '/'))
      ++i;
    const size_t b = i;
    while (i < s.size() && s[i] != '|' && s[i] != ';' && s[i] != ',' && s[i] != ' ' &&
           s[i] != '+' && s[i] != '/')
      ++i;
    if (i == b) continue;
    const std::string w = ascii_lower(s.substr(b, i - b));
    if (w == "none" || w == "unthrottled" || w == "no" || w == "0")
      any = true;
    else if (w == "power" || w == "ppt" || w == "socket_power" || w == "power_cap" || w == "pviol")
      m |= kThrottleSwPowerCap, any = true;
    else if (w == "thermal" || w == "socket_thermal" || w == "temp" || w == "tviol" ||
             w == "sw_thermal")
      m |= kThrottleSwThermal, any = true;
    else if (w == "hbm_thermal" || w == "vr_thermal" || w == "mem_thermal" || w == "hw_thermal")
      m |= kThrottleHwThermal, any = true;
    else if (w == "prochot" || w == "hw_slowdown")
      m |= kThrottleHwSlowdown, any = true;
    else if (w == "idle" || w == "gpu_idle")
      m |= kThrottleGpuIdle, any = true;
    else if (w == "app_clocks" || w == "clocks_setting" || w == "user")
      m |= kThrottleAppClocks, any = true;
    else if (w == "throttled" || w == "other")
      m |= kThrottleOther, any = true;
  }
  if (!any) return false;
  mask = m;
  return true;
}

namespace {
bool is_number(std::string_view s) {
  double v = 0;
  std::string_view unit;
  return parse_quantity(s, v, unit) == ValueStatus::kOk && unit.empty();
}
}  // namespace

bool sniff_is_json(std::string_view head) {
  for (char c : head) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '[';
  }
  return false;
}

std::string_view sniff(std::string_view head, std::string_view file_name) {
  if (head.size() >= 3 && head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);
  if (sniff_is_json(head)) {
    // amd-smi metric --json: objects with "gpu" and metric groups; never a Chrome/Kineto trace.
    if (head.find("\"traceEvents\"") != std::string_view::npos) return "";
    if (head.find("\"gpu\"") == std::string_view::npos) return "";
    for (std::string_view k : {"\"power\"", "\"usage\"", "\"clock\"", "\"temperature\"",
                               "\"energy\"", "\"power_usage\"", "\"gfx_clock\""})
      if (head.find(k) != std::string_view::npos) return "amd-smi";
    return "";
  }
  // Lines of the head; the last one may be cut by the 4 KiB window.
  std::vector<std::string_view> lines;
  for (size_t p = 0; p < head.size();) {
    size_t nl = head.find('\n', p);
    if (nl == std::string_view::npos) nl = head.size();
    std::string_view l = trim(head.substr(p, nl - p));
    if (!l.empty()) lines.push_back(l);
    p = nl + 1;
  }
  if (lines.empty()) return "";
  std::vector<std::string_view> f;
  for (size_t i = 0; i < lines.size() && i < 8; ++i) {
    split_ws(lines[i], f);
    if ((!f.empty() && istarts_with(f[0], "#Entity")) ||
        (f.size() >= 2 && is_number(f[0]) && istarts_with(f[1], "#Entity")))
      return "dcgmi";
  }
  split_csv(lines[0], f);
  if (record_gpu_header(f)) return "chopper-record";
  if (f.size() >= 2) {
    if (nvidia_header(f)) return "nvidia-smi";
    if (amd_header(f)) return "amd-smi";
    if (rocm_header(f)) return "rocm-smi";
  }
  // Zeus: rows of two numbers, metric and GPU in the file name.
  size_t rows = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 == lines.size() && head.back() != '\n') break;  // possibly cut
    split_csv(lines[i], f);
    if (f.size() != 2 || !is_number(f[0]) || !is_number(f[1])) return "";
    ++rows;
  }
  if (rows == 0) return "";
  ZeusName zn;
  if (!parse_zeus_name(file_name, zn)) return "";
  return "zeus";
}

}  // namespace telemetry

std::string_view sniff_telemetry(std::string_view head, std::string_view file_name) {
  return telemetry::sniff(head, file_name);
}

namespace {

// Sniffs and reads what `in` holds.
TelemetryData parse(telemetry::LineReader& in, const TelemetryReadOptions& o) {
  const std::string_view head = in.head(4096);
  const std::string_view fmt_name = telemetry::sniff(head, in.name());
  if (fmt_name.empty()) {
    throw NotATraceError(in.name(), 0,
                         "not GPU telemetry (no nvidia-smi, amd-smi, rocm-smi, dcgmi or Zeus "
                         "layout in the first bytes)");
  }
  TelemetryData d;
  d.file = in.name();
  d.format = std::string(fmt_name);
  in.limit_rows(telemetry::kMaxRowBytes, &d.diagnostics);
  if (fmt_name == "nvidia-smi")
    telemetry::read_nvidia_smi(in, o, d);
  else if (fmt_name == "amd-smi" && telemetry::sniff_is_json(head))
    telemetry::read_amd_smi_json(in, o, d);
  else if (fmt_name == "amd-smi")
    telemetry::read_amd_smi_csv(in, o, d);
  else if (fmt_name == "rocm-smi")
    telemetry::read_rocm_smi(in, o, d);
  else if (fmt_name == "dcgmi")
    telemetry::read_dcgmi(in, o, d);
  else if (fmt_name == "chopper-record")
    telemetry::read_record_gpu(in, o, d);
  else
    telemetry::read_zeus(in, o, d);
  return d;
}

TelemetryData read_whole(ByteSource& src, const char* block, const TelemetryReadOptions& o) {
  telemetry::LineReader in(src);
  if (block != nullptr) in.use_block(block, src.raw_size());
  TelemetryData d = parse(in, o);
  for (const std::string& w : src.warnings()) d.diagnostics.add("container", w);
  return d;
}

// The ranges widened by `w` either side, in time order, overlapping ones merged.
std::vector<std::pair<Ns, Ns>> widened(std::vector<std::pair<Ns, Ns>> r, Ns w) {
  for (auto& [f, t] : r) f -= w, t += w;
  std::sort(r.begin(), r.end());
  std::vector<std::pair<Ns, Ns>> out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

// The largest median interval between a series' samples (0 if no series has two): the sample
// interval the widening must cover.
Ns largest_period(const TelemetryData& d) {
  Ns best = 0;
  std::vector<Ns> gaps;
  for (const Series& s : d.series) {
    gaps.clear();
    for (size_t i = 1; i < s.size(); ++i)
      if (s.t_ns[i] > s.t_ns[i - 1]) gaps.push_back(s.t_ns[i] - s.t_ns[i - 1]);
    if (gaps.empty()) continue;
    std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2),
                     gaps.end());
    best = std::max(best, gaps[gaps.size() / 2]);
  }
  return best;
}

// What a windowed read may not be trusted with, among the rows it read.
bool trustworthy(const TelemetryData& d) {
  for (DiagKind k : {DiagKind("clock_reset"), DiagKind("out_of_order"), DiagKind("bad_row"),
                     DiagKind("bad_timestamp")})
    if (d.diagnostics.count(k.name()) > 0) return false;
  return true;
}

std::string count_text(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// One diagnostic per run of rows left out.
void report_skipped(const telemetry::LineReader& in, TelemetryData& d) {
  const double row_bytes = in.lines_returned() > 0 ? static_cast<double>(in.bytes_returned()) /
                                                         static_cast<double>(in.lines_returned())
                                                   : 100.0;
  constexpr std::string_view kWhy =
      "outside the time ranges the run needs (the traced span and margins, at every clock "
      "offset the alignment tries)";
  auto times = [](const telemetry::SkippedRows& g) {
    if (g.first_t == 0 && g.last_t == 0) return std::string();
    return fmt::format(" stamped {} to {}", telemetry::format_calendar(g.first_t),
                       telemetry::format_calendar(g.last_t));
  };
  for (const telemetry::SkippedRows& g : in.skipped()) {
    uint64_t rows = 0;
    std::string text;
    if (g.lines) {
      rows = g.rows;
      text = fmt::format("lines {}-{}: {} rows{}, {}: not parsed", count_text(g.from),
                         count_text(g.to), count_text(rows), times(g), kWhy);
    } else {
      rows = std::max<uint64_t>(
          1, static_cast<uint64_t>(std::llround(static_cast<double>(g.to - g.from) / row_bytes)));
      text = fmt::format("bytes {}-{}: ~{} rows{} (counted from their size), {}: not parsed",
                         count_text(g.from), count_text(g.to), count_text(rows), times(g), kWhy);
    }
    d.diagnostics.add("rows_outside_window", std::move(text));
    if (rows > 1) d.diagnostics.add_count("rows_outside_window", rows - 1);
  }
}

// Reads `src`, windowed when the options and the file allow it (see TelemetryWindow); `reopen`
// (may be empty) gives the file again from its start, for compressed input.
TelemetryData read_any(ByteSource& src, const TelemetryReadOptions& o,
                       const std::function<std::unique_ptr<ByteSource>()>& reopen) {
  const TelemetryWindow& w = o.window;
  if (w.empty() || src.raw_size() < w.min_file_bytes) return read_whole(src, nullptr, o);
  const char* block = src.compression() == Compression::kNone ? src.map_in_place(0) : nullptr;
  if (block == nullptr && !reopen) return read_whole(src, nullptr, o);
  std::unique_ptr<ByteSource> fresh;
  ByteSource* s = &src;
  // A first guess of the sample interval (the widening is pad_ns), checked after the read.
  Ns period = w.pad_periods > 0 ? w.pad_ns / w.pad_periods : 0;
  for (int pass = 0; pass < 2; ++pass) {
    const Ns widen = std::max<Ns>(w.pad_ns, w.pad_periods * period);
    if (pass > 0 && block == nullptr) {
      fresh = reopen();
      s = fresh.get();
    }
    telemetry::LineReader in(*s);
    if (block != nullptr) in.use_block(block, s->raw_size());
    in.enable_window(widened(w.utc, widen), widened(w.local, widen), widen);
    TelemetryData d;
    try {
      d = parse(in, o);
    } catch (const InputError&) {
      // A read with rows left out is judged by the whole read, which may find what it missed.
      if (!in.window_is_unsafe() && !in.windowed()) throw;
      break;
    }
    if (in.window_is_unsafe()) break;
    if (!in.windowed()) {  // every row was read
      for (const std::string& x : s->warnings()) d.diagnostics.add("container", x);
      return d;
    }
    if (!trustworthy(d)) break;
    const Ns t = largest_period(d);
    if (t <= 0) break;
    if (w.pad_periods * t <= widen) {
      report_skipped(in, d);
      for (const std::string& x : s->warnings()) d.diagnostics.add("container", x);
      return d;
    }
    period = t + t / 2;  // sampled more slowly than guessed: once more, widened for it
  }
  if (block != nullptr) return read_whole(src, block, o);
  fresh = reopen();
  return read_whole(*fresh, nullptr, o);
}

}  // namespace

TelemetryData read_telemetry(ByteSource& src, const TelemetryReadOptions& o) {
  return read_any(src, o, {});
}

TelemetryData read_telemetry_file(const std::string& path, const TelemetryReadOptions& o) {
  auto src = ByteSource::open_file(path);
  return read_any(*src, o, [&path] { return ByteSource::open_file(path); });
}

}  // namespace chopper
