#include "chopper/report/info_report.hpp"

#include <fmt/format.h>

#include "chopper/analysis/summary.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/model/exec_trace.hpp"

namespace chopper {
namespace {

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string ms(Ns ns) {
  return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
}

std::string steps_text(const std::vector<int64_t>& it) {
  if (it.empty()) return "none (no ProfilerStep#N)";
  std::string s = fmt::format("{} (ProfilerStep#", it.size());
  for (size_t i = 0; i < it.size(); ++i) s += fmt::format("{}{}", i ? ", #" : "", it[i]);
  return s + ")";
}

// The rank's devices, identical ones listed once with their count ("" without devices).
std::string devices_text(const TraceMetadata& m) {
  std::string o;
  if (!m.devices.empty()) {
    // Identical devices are listed once with their count.
    std::vector<std::pair<std::string, int>> kinds;
    for (const auto& d : m.devices) {
      std::string k = fmt::format("{} ({} SMs/CUs, {})", d.name, d.num_sms,
                                  d.total_global_mem_bytes > 0
                                      ? human_bytes(static_cast<uint64_t>(d.total_global_mem_bytes))
                                      : std::string("?"));
      if (!kinds.empty() && kinds.back().first == k) {
        ++kinds.back().second;
      } else {
        kinds.emplace_back(std::move(k), 1);
      }
    }
    o += "  devices:";
    for (size_t i = 0; i < kinds.size(); ++i)
      o += fmt::format("{} {} x {}", i ? "," : "", kinds[i].second, kinds[i].first);
    o += "\n";
  }
  return o;
}

// Per collective type: kernels, time, algorithm/protocol and where the type came from.
std::string collectives_text(const RankSummary& s) {
  std::string o;
  if (!s.collectives.empty()) {
    o += "  collectives:\n";
    for (const auto& [type, c] : s.collectives) {
      o += fmt::format("    {:<15} {:>6} kernels, {} total; ", type, c.count, ms(c.total_ns));
      bool first = true;
      for (const auto& [ap, n] : c.algo_proto) {
        o += fmt::format("{}{} {}", first ? "" : ", ", ap, n);
        first = false;
      }
      o += "; type from ";
      first = true;
      for (const auto& [src, n] : c.sources) {
        o += fmt::format("{}{} {}", first ? "" : ", ", src, n);
        first = false;
      }
      o += "\n";
    }
  }
  return o;
}

}  // namespace

std::string info_text(const Run& run) {
  std::string o;
  for (const RankSlot& r : run.ranks) {
    if (!r.ok) {
      o += fmt::format("== {}\n  error: {}\n\n", r.file, r.error);
      continue;
    }
    const RankTrace& t = r.trace;
    const TraceMetadata& m = t.meta;
    const RankSummary s = summarize(t);
    o +=
        fmt::format("== rank {}{} — {}\n", m.rank >= 0 ? std::to_string(m.rank) : std::string("?"),
                    m.world_size > 0 ? fmt::format(" of {}", m.world_size) : std::string(), t.file);
    if (!m.rank_source.empty()) o += fmt::format("  rank from: {}\n", m.rank_source);
    if (m.ts_format.rfind("nsys_", 0) == 0)  // ingest/nsys: no JSON
      o += fmt::format(
          "  file: {} on disk, an Nsight Systems SQLite export, {} events; "
          "timestamps: {}\n",
          human_bytes(t.file_bytes), t.total_events, m.ts_format);
    else
      o += fmt::format("  file: {} on disk, {} of JSON, {} events; timestamps: {}{}{}\n",
                       human_bytes(t.file_bytes), human_bytes(t.uncompressed_bytes), t.total_events,
                       m.ts_format, m.legacy_2021 ? "; 2021 category names" : "",
                       m.rocm ? "; ROCm" : "");
    o += devices_text(m);
    if (!m.process_groups.empty() || !m.backend.empty())
      o += fmt::format("  distributed: backend {}, {} process group(s){}{}\n",
                       m.backend.empty() ? "?" : m.backend, m.process_groups.size(),
                       m.pg_count > static_cast<int64_t>(m.process_groups.size())
                           ? fmt::format(" listed of pg_count {}", m.pg_count)
                           : std::string(),
                       m.nccl_version.empty() ? "" : ", NCCL " + m.nccl_version);
    if (s.first_ns != kNoTime)
      o += fmt::format("  time span: {} (first event {} ns, last end {} ns)\n",
                       ms(s.last_ns - s.first_ns), s.first_ns, s.last_ns);
    o += fmt::format("  iterations: {}\n", steps_text(s.iterations));
    o += "  complete events by category:";
    for (const auto& [cat, n] : t.x_events_by_category)
      o += fmt::format(" {}={}", cat == 0 ? "(none)" : t.strings.str(cat), n);
    o += "\n  other events:";
    for (const auto& [ph, n] : t.events_by_ph)
      if (ph != 'X') o += fmt::format(" ph {}={}", ph == 0 ? '?' : ph, n);
    o += "\n";
    o += fmt::format("  GPU: {} kernels, {} memcpys", s.kernels, s.memcpys);
    if (!s.memcpy_by_dir.empty()) {
      o += " (";
      bool first = true;
      for (const auto& [d, n] : s.memcpy_by_dir) {
        o += fmt::format("{}{} {}", first ? "" : ", ", d, n);
        first = false;
      }
      o += ")";
    }
    o +=
        fmt::format(", {} memsets, {} syncs on {} streams\n", s.memsets, s.syncs, s.streams.size());
    if (!s.gpu_by_class.empty()) {
      o += "  GPU time by class:";
      for (const auto& [c, n] : s.gpu_time_ns_by_class)
        o +=
            fmt::format(" {} {} ({} activities);", c, ms(static_cast<Ns>(n)), s.gpu_by_class.at(c));
      o.pop_back();
      o += "\n";
    }
    o += fmt::format(
        "  host: {} ops, {} runtime/driver calls, {} flows, {} instants, {} counter samples\n",
        s.host_ops, s.runtime_calls, s.flows, s.instants, s.counter_samples);
    if (t.linkable_gpu_activities > 0) {
      o += fmt::format("  link rate: {:.2f}% of {} kernels/memcpys/memsets reached a host op (",
                       100.0 * t.link_rate(), t.linkable_gpu_activities);
      bool first = true;
      for (const auto& [p, n] : s.link_by_path) {
        o += fmt::format("{}{} {}", first ? "" : ", ", p, n);
        first = false;
      }
      o += ")\n";
    }
    if (const ExecTrace* et = t.exec_trace.get(); et != nullptr) {
      o += fmt::format(
          "  host ET: {} (schema {}): {} nodes, {} operators; linked {} of {} with a Kineto host "
          "op of their rf_id ({}), of all operators {}; {} host ops took the ET's shapes\n",
          et->file, et->schema, et->size(), et->operator_nodes, et->linked, et->with_counterpart,
          et->with_counterpart > 0 ? fmt::format("{:.2f}%", 100.0 * et->link_rate()) : "-",
          et->operator_nodes > 0 ? fmt::format("{:.2f}%", 100.0 * et->link_rate_all()) : "-",
          et->shapes_from_et);
    }
    o += collectives_text(s);
    if (t.diagnostics.empty()) {
      o += "  diagnostics: none\n";
    } else {
      o += fmt::format("  diagnostics: {} anomalies\n", t.diagnostics.total());
      for (const auto& e : t.diagnostics.entries()) {
        o += fmt::format("    {:<36} {:>8}", e.kind, e.count);
        if (!e.examples.empty()) o += "  e.g. " + e.examples.front();
        o += "\n";
      }
    }
    o += "\n";
  }
  for (const auto& [file, why] : run.skipped)
    o += fmt::format("skipped {} (found in a directory, not a trace: {})\n", file, why);
  if (run.failed() > 0)
    o += fmt::format("{} of {} file(s) could not be read; results above are partial.\n",
                     run.failed(), run.ranks.size());
  return o;
}

std::string info_json(const Run& run) {
  std::string o = "[";
  bool first_rank = true;
  for (const RankSlot& r : run.ranks) {
    o += first_rank ? "\n  {" : ",\n  {";
    first_rank = false;
    o += "\"file\": " + json_string(r.file);
    if (!r.ok) {
      // Same keys as a readable file, empty, plus the error.
      o += fmt::format(
          ", \"rank\": {}, \"world_size\": null, \"events\": {{}}, \"link_rate\": null, "
          "\"iterations\": [], \"diagnostics\": [], \"error\": {}}}",
          r.rank >= 0 ? std::to_string(r.rank) : "null", json_string(r.error));
      continue;
    }
    const RankTrace& t = r.trace;
    const TraceMetadata& m = t.meta;
    const RankSummary s = summarize(t);
    auto opt_int = [](int64_t v) { return v >= 0 ? std::to_string(v) : std::string("null"); };
    o += fmt::format(", \"rank\": {}, \"rank_source\": {}, \"world_size\": {}", opt_int(m.rank),
                     m.rank_source.empty() ? "null" : json_string(m.rank_source),
                     opt_int(m.world_size));
    o += fmt::format(", \"file_bytes\": {}, \"json_bytes\": {}, \"total_events\": {}", t.file_bytes,
                     t.uncompressed_bytes, t.total_events);
    o += ", \"ts_format\": " + json_string(m.ts_format);
    o += ", \"events\": {";
    bool first = true;
    for (const auto& [cat, n] : t.x_events_by_category) {
      o += fmt::format("{}{}: {}", first ? "" : ", ", json_string(t.strings.str(cat)), n);
      first = false;
    }
    o += "}, \"events_by_ph\": {";
    first = true;
    for (const auto& [ph, n] : t.events_by_ph) {
      o += fmt::format("{}{}: {}", first ? "" : ", ", json_string(std::string(1, ph)), n);
      first = false;
    }
    o += "}";
    o += t.linkable_gpu_activities > 0 ? fmt::format(", \"link_rate\": {:.6f}", t.link_rate())
                                       : std::string(", \"link_rate\": null");
    if (const ExecTrace* et = t.exec_trace.get(); et != nullptr)
      o += fmt::format(
          ", \"host_et\": {{\"file\": {}, \"schema\": {}, \"nodes\": {}, \"operators\": {}, "
          "\"with_counterpart\": {}, \"linked\": {}, \"shapes_from_et\": {}}}",
          json_string(et->file), json_string(et->schema), et->size(), et->operator_nodes,
          et->with_counterpart, et->linked, et->shapes_from_et);
    o += fmt::format(
        ", \"gpu_activities\": {{\"kernel\": {}, \"memcpy\": {}, \"memset\": {}, \"sync\": {}}}",
        s.kernels, s.memcpys, s.memsets, s.syncs);
    o += ", \"iterations\": [";
    for (size_t i = 0; i < s.iterations.size(); ++i)
      o += fmt::format("{}{}", i ? ", " : "", s.iterations[i]);
    o += "]";
    if (s.first_ns != kNoTime)
      o += fmt::format(", \"first_ns\": {}, \"last_ns\": {}, \"span_ns\": {}", s.first_ns,
                       s.last_ns, s.last_ns - s.first_ns);
    o += ", \"devices\": [";
    for (size_t i = 0; i < m.devices.size(); ++i)
      o += fmt::format("{}{{\"id\": {}, \"name\": {}, \"num_sms\": {}}}", i ? ", " : "",
                       m.devices[i].id, json_string(m.devices[i].name), m.devices[i].num_sms);
    o += "], \"collectives\": {";
    first = true;
    for (const auto& [type, c] : s.collectives) {
      o += fmt::format("{}{}: {{\"count\": {}, \"total_ns\": {}}}", first ? "" : ", ",
                       json_string(type), c.count, c.total_ns);
      first = false;
    }
    o += "}, \"diagnostics\": [";
    first = true;
    for (const auto& e : t.diagnostics.entries()) {
      o += fmt::format("{}{{\"kind\": {}, \"count\": {}, \"examples\": [", first ? "" : ", ",
                       json_string(e.kind), e.count);
      for (size_t i = 0; i < e.examples.size(); ++i)
        o += (i ? ", " : "") + json_string(e.examples[i]);
      o += "]}";
      first = false;
    }
    o += "]}";
  }
  o += run.ranks.empty() ? "]\n" : "\n]\n";
  return o;
}

}  // namespace chopper
