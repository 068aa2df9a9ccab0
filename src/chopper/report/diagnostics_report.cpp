#include "chopper/report/diagnostics_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace chopper {

namespace {

// A hardware file's kind's severity (CHOPPER_FILE_DIAGNOSTICS); a kind it holds for another file
// (a counter table's kernel_trace_* kinds) is a warning.
Severity file_kind_severity(std::string_view k) {
  FileDiag d{};
  return parse_file_diag(k, d) ? file_diag_severity(d) : Severity::kWarning;
}

// The kinds of a hardware reader that skip a whole row (its other kinds skip a value, or say
// something of rows that were kept).
bool hardware_row_kind(std::string_view k) {
  for (DiagKind r :
       {DiagKind("bad_row"), DiagKind("bad_timestamp"), DiagKind("truncated_line"),
        DiagKind("truncated_document"), DiagKind("row_too_long"), DiagKind("bad_field_count"),
        DiagKind("bad_quoting"), DiagKind("truncated_last_line"), DiagKind("repeated_header"),
        DiagKind("missing_dispatch_id"), DiagKind("duplicate_dispatch"),
        DiagKind("dispatch_id_repeated"), DiagKind("not_a_kernel_dispatch"),
        DiagKind("empty_counter_name"), DiagKind("empty_counter_value"),
        DiagKind("bad_counter_value"), DiagKind("bad_agent_id")})
    if (k == r.name()) return true;
  return false;
}

void add_file_rows(const std::string& file, const Diagnostics& diags, uint64_t kept,
                   std::vector<DiagnosticRow>& rows) {
  uint64_t of = kept;
  for (const Diagnostics::Entry& e : diags.entries())
    if (hardware_row_kind(e.kind)) of += e.count;
  for (const Diagnostics::Entry& e : diags.entries()) {
    DiagnosticRow d;
    d.file = file;
    d.kind = e.kind;
    d.severity = file_kind_severity(e.kind);
    d.stage = "read";
    d.count = e.count;
    d.of_count = static_cast<int64_t>(of);
    d.example = e.examples.empty() ? "" : e.examples.front();
    if (of > 0) d.share_of_events = static_cast<double>(e.count) / static_cast<double>(of);
    rows.push_back(std::move(d));
  }
}

}  // namespace

std::vector<DiagnosticRow> hardware_diagnostics(const std::vector<TelemetryData>& telemetry,
                                                const std::vector<CounterTable>& counters) {
  std::vector<DiagnosticRow> rows;
  for (const TelemetryData& t : telemetry) add_file_rows(t.file, t.diagnostics, t.samples, rows);
  for (const CounterTable& c : counters) add_file_rows(c.file, c.diagnostics, c.dispatches(), rows);
  return rows;
}

void write_diagnostics(const std::vector<DiagnosticRow>& rows, TableSink& sink) {
  sink.begin(kDiagnosticsTable.schema());
  for (const DiagnosticRow& d : rows) kDiagnosticsTable.put(sink, d);
  sink.end();
}

namespace {

std::string pct(double x) {
  return fmt::format("{:.1f}%", 100.0 * x);
}

// Run-level errors and warnings: one line per kind, its first message.
std::string run_level_text(const std::vector<DiagnosticRow>& rows) {
  std::string o;
  std::vector<std::string> kinds;
  std::map<std::string, std::pair<const DiagnosticRow*, size_t>> by_kind;
  for (Severity sev : {Severity::kError, Severity::kWarning})
    for (const DiagnosticRow& d : rows) {
      if (d.severity != sev || d.stage == "read") continue;
      auto [it, fresh] = by_kind.try_emplace(d.kind, &d, 0);
      if (fresh) kinds.push_back(d.kind);
      ++it->second.second;
    }
  for (const std::string& k : kinds) {
    const auto& [d, n] = by_kind[k];
    o += fmt::format("  {} {}: {}{}\n", severity_name(d->severity), k, d->example,
                     n > 1 ? fmt::format(" (and {} more)", n - 1) : "");
  }
  return o;
}

// Reader and linking anomalies per rank and per hardware file, when they touch more than the
// threshold; each rank's host ET link rate.
std::string reader_text(const std::vector<DiagnosticRow>& rows) {
  std::string o;
  struct RankReader {
    std::string file;
    double share = 0;
    std::vector<const DiagnosticRow*> kinds;
  };
  std::map<int64_t, RankReader> reader;
  std::map<std::string, RankReader> hardware;  // hardware files' rows (rank NULL), by file
  std::vector<const DiagnosticRow*> et_links;  // each rank's host ET link rate
  for (const DiagnosticRow& d : rows) {
    if (d.stage != "read") continue;
    if (d.kind == "et_link") et_links.push_back(&d);
    if (d.rank < 0 && !d.file.empty()) {
      if (d.severity == Severity::kInfo) continue;
      RankReader& h = hardware[d.file];
      h.file = d.file;
      if (!std::isnan(d.share_of_events)) h.share += d.share_of_events;
      h.kinds.push_back(&d);
      continue;
    }
    if (d.severity == Severity::kInfo) continue;  // what was read as it should be: not an anomaly
    RankReader& r = reader[d.rank];
    r.file = d.file;
    if (!std::isnan(d.share_of_events)) r.share += d.share_of_events;
    if (!std::isnan(d.share_of_gpu_time)) r.share = std::max(r.share, d.share_of_gpu_time);
    r.kinds.push_back(&d);
  }
  std::vector<std::pair<int64_t, const RankReader*>> shown;
  for (const auto& [rank, r] : reader)
    if (r.share > kDiagnosticsShareShown) shown.emplace_back(rank, &r);
  if (!shown.empty()) {
    o += fmt::format("  reader anomalies above {} of the events in {} rank(s):\n",
                     pct(kDiagnosticsShareShown), shown.size());
    for (size_t i = 0; i < shown.size() && i < 3; ++i) {
      const RankReader& r = *shown[i].second;
      std::vector<const DiagnosticRow*> k = r.kinds;
      std::stable_sort(k.begin(), k.end(), [](const DiagnosticRow* a, const DiagnosticRow* b) {
        return a->count > b->count;
      });
      std::string what;
      for (size_t j = 0; j < k.size() && j < 3; ++j)
        what += fmt::format("{}{} {}", j ? ", " : "", k[j]->kind, k[j]->count);
      o += fmt::format("    rank {} ({}): {}{}\n", shown[i].first, r.file, what,
                       k.front()->example.empty() ? "" : "; first: " + k.front()->example);
    }
    if (shown.size() > 3) o += fmt::format("    and {} more rank(s)\n", shown.size() - 3);
  }
  for (size_t i = 0; i < et_links.size() && i < 3; ++i)
    o += fmt::format("  host execution trace of rank {}: {}\n", et_links[i]->rank,
                     et_links[i]->example);
  if (et_links.size() > 3)
    o += fmt::format("    and {} more rank(s) with a host execution trace\n", et_links.size() - 3);
  std::vector<const RankReader*> hw_shown;
  for (const auto& [file, h] : hardware)
    if (h.share > kDiagnosticsShareShown) hw_shown.push_back(&h);
  if (!hw_shown.empty()) {
    o += fmt::format("  hardware-file anomalies above {} of the rows in {} file(s):\n",
                     pct(kDiagnosticsShareShown), hw_shown.size());
    for (size_t i = 0; i < hw_shown.size() && i < 3; ++i) {
      std::vector<const DiagnosticRow*> k = hw_shown[i]->kinds;
      std::stable_sort(k.begin(), k.end(), [](const DiagnosticRow* a, const DiagnosticRow* b) {
        return a->count > b->count;
      });
      std::string what;
      for (size_t j = 0; j < k.size() && j < 3; ++j)
        what += fmt::format("{}{} {} of {} rows", j ? ", " : "", k[j]->kind, k[j]->count,
                            k[j]->of_count);
      o += fmt::format("    {}: {}{}\n", hw_shown[i]->file, what,
                       k.front()->example.empty() ? "" : "; first: " + k.front()->example);
    }
    if (hw_shown.size() > 3) o += fmt::format("    and {} more file(s)\n", hw_shown.size() - 3);
  }
  return o;
}

// The link rate over all ranks, and the lowest rank's.
std::string link_rate_text(const std::vector<DiagnosticRow>& rows) {
  std::string o;
  uint64_t unlinked = 0, linkable = 0;
  Ns unlinked_ns = 0;
  double gpu_ns = 0;
  const DiagnosticRow* worst = nullptr;
  size_t ranks = 0;
  for (const DiagnosticRow& d : rows) {
    if (d.kind != run_diag_name(RunDiag::kGpuActivityUnlinked) || d.of_count <= 0) continue;
    ++ranks;
    unlinked += d.count;
    linkable += static_cast<uint64_t>(d.of_count);
    unlinked_ns += d.gpu_time_ns;
    gpu_ns += static_cast<double>(std::max<Ns>(d.rank_gpu_time_ns, 0));
    const double rate = 1.0 - static_cast<double>(d.count) / static_cast<double>(d.of_count);
    if (worst == nullptr ||
        rate < 1.0 - static_cast<double>(worst->count) / static_cast<double>(worst->of_count))
      worst = &d;
  }
  if (linkable > 0) {
    const double rate = 1.0 - static_cast<double>(unlinked) / static_cast<double>(linkable);
    if (rate < kLinkRateShown) {
      o += fmt::format(
          "  link rate {}: {} of {} kernels/memcpys/memsets ({} of their GPU time) reached no "
          "host op, so no operation, layer or phase from the host side",
          pct(rate), unlinked, linkable,
          gpu_ns > 0 ? pct(static_cast<double>(unlinked_ns) / gpu_ns) : "0.0%");
      if (ranks > 1)
        o += fmt::format(
            "; lowest rank {} ({}, {})", worst->rank, worst->file,
            pct(1.0 - static_cast<double>(worst->count) / static_cast<double>(worst->of_count)));
      o += "\n";
    }
  }
  return o;
}

}  // namespace

std::string diagnostics_text(const std::vector<DiagnosticRow>& rows) {
  std::string o = run_level_text(rows) + reader_text(rows) + link_rate_text(rows);
  if (o.empty()) return o;
  return "diagnostics (all in the diagnostics table):\n" + o;
}

}  // namespace chopper
