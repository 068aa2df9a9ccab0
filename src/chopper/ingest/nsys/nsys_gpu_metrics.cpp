#include "chopper/ingest/nsys/nsys_gpu_metrics.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "chopper/ingest/nsys/nsys_db.hpp"

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
  for (const auto& [name, n] : unread)
    out.diagnostics.add("nsys_unread", fmt::format("{}: GPU metric '{}' ({} samples): chopper has "
                                                   "no metric for it",
                                                   file, name, n));
  return out;
}

}  // namespace chopper
