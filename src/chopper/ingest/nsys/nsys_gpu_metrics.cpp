#include "chopper/ingest/nsys/nsys_gpu_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "chopper/ingest/load.hpp"
#include "chopper/ingest/nsys/nsys_db.hpp"
#include "chopper/ingest/nsys/nsys_detect.hpp"
#include "chopper/ingest/nsys/nsys_reader.hpp"

namespace chopper {

namespace {

// The Metric a metric name maps onto (its name without the bracketed unit), if chopper has one.
std::optional<Metric> metric_of(std::string_view name) {
  const size_t bracket = name.find(" [");
  const std::string_view base = name.substr(0, bracket);
  if (base == "GPC Clock Frequency") return Metric::kSmClockMhz;
  if (base == "GR Active") return Metric::kUtilGpuPct;
  return std::nullopt;
}

}  // namespace

TelemetryData read_nsys_gpu_metrics(const std::string& file) {
  nsys::Db db(file);
  TelemetryData out;
  out.file = file;
  out.format = "nsys-gpu-metrics";
  if (!db.has_table("GPU_METRICS") || !db.has_table("TARGET_INFO_GPU_METRICS")) return out;
  Ns origin = 0;
  ClockDomain clock = ClockDomain::kRelative;
  if (db.has_table("TARGET_INFO_SESSION_START_TIME") &&
      db.has_column("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"))
    db.query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
             [&](const nsys::Db::Row& r) {
               if (!r.null(0)) {
                 origin = r.i64(0);
                 clock = ClockDomain::kRealtimeUtc;
               }
             });
  // One series per (GPU, metric name); metric names of the same Metric on one GPU stay apart.
  std::map<std::pair<int32_t, std::string>, size_t> index;
  std::map<std::string, uint64_t> unread;
  db.query(
      "SELECT m.typeId & 255, n.metricName, m.timestamp, m.value FROM GPU_METRICS m JOIN "
      "(SELECT DISTINCT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS) n ON "
      "m.typeId = n.typeId AND m.metricId = n.metricId WHERE m.timestamp IS NOT NULL ORDER BY "
      "n.metricName, m.typeId, m.timestamp",
      [&](const nsys::Db::Row& r) {
        ++out.samples;
        const std::string name(r.text(1));
        const std::optional<Metric> m = metric_of(name);
        if (!m) {
          ++unread[name];
          return;
        }
        const auto gpu = static_cast<int32_t>(r.i64(0));
        auto [it, fresh] = index.try_emplace({gpu, name}, out.series.size());
        if (fresh) {
          Series s;
          s.gpu.index = gpu;
          s.metric = *m;
          s.source = name;
          s.clock = clock;
          out.series.push_back(std::move(s));
        }
        Series& s = out.series[it->second];
        s.t_ns.push_back(origin + r.i64(2));
        s.value.push_back(r.f64(3));
      });
  out.recorder.host = file;
  for (const NsysPart& p : nsys_parts(file))
    if (std::find(out.recorder.pids.begin(), out.recorder.pids.end(), p.pid) ==
        out.recorder.pids.end())
      out.recorder.pids.push_back(p.pid);
  for (const auto& [name, n] : unread)
    out.diagnostics.add("nsys_unread", fmt::format("{}: GPU metric '{}' ({} samples): chopper has "
                                                   "no metric for it",
                                                   file, name, n));
  return out;
}

bool nsys_has_gpu_metrics(const std::string& file) {
  try {
    if (!nsys::has_sqlite_header(file) || nsys::sqlite_kind(file) != nsys::SqliteKind::kNsysExport)
      return false;
    nsys::Db db(file);
    if (!db.has_table("GPU_METRICS") || !db.has_table("TARGET_INFO_GPU_METRICS")) return false;
    bool any = false;
    db.query("SELECT 1 FROM GPU_METRICS LIMIT 1", [&](const nsys::Db::Row&) { any = true; });
    return any;
  } catch (const std::exception&) {
    return false;  // read as a trace, the file says what is wrong with it
  }
}

std::vector<std::string> nsys_exports_with_gpu_metrics(const std::vector<std::string>& run_paths) {
  std::vector<std::string> out;
  std::vector<TracePath> files;
  try {
    files = expand_trace_paths(run_paths);
  } catch (const std::exception&) {
    return out;  // a directory that cannot be listed: reading the traces says so
  }
  for (const TracePath& f : files) {
    if (f.skip.empty() && !f.missing && f.path != "-" && nsys_has_gpu_metrics(f.path))
      out.push_back(f.path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace chopper
