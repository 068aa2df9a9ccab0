// `chopper record`'s CPU files matched to ranks by process id, and their readers' diagnostics
// (hardware_align.hpp: assign_recorded_cpu, recorded_cpu_diagnostics).
#include <algorithm>
#include <set>
#include <utility>

#include "chopper/link/hardware_align.hpp"

namespace chopper {
namespace {

// Each rank's process ids in first-seen order (RankActivity::pids).
void assign(const std::vector<std::vector<int64_t>>& pids, HardwareRun& hw) {
  std::vector<std::set<int64_t>> host_pids(hw.cpu_data.size());
  for (size_t h = 0; h < hw.cpu_data.size(); ++h)
    host_pids[h].insert(hw.cpu_data[h].threads.pid.begin(), hw.cpu_data[h].threads.pid.end());
  for (size_t r = 0; r < pids.size() && r < hw.ranks.size(); ++r) {
    RankHardware& rh = hw.ranks[r];
    for (int64_t p : pids[r]) {
      for (size_t h = 0; h < host_pids.size() && rh.cpu == nullptr; ++h)
        if (host_pids[h].count(p) != 0) rh.cpu = &hw.cpu_data[h], rh.cpu_pid = p;
      if (rh.cpu != nullptr) break;
    }
    if (rh.cpu == nullptr && hw.cpu_data.size() == 1 && !pids[r].empty())
      rh.cpu = &hw.cpu_data.front();  // the only host, its process not found
  }
}

void add_rows(const std::string& file, const Diagnostics& diags, uint64_t rows_read,
              std::vector<DiagnosticRow>& rows) {
  for (const Diagnostics::Entry& e : diags.entries()) {
    DiagnosticRow d;
    d.file = file;
    d.kind = e.kind;
    FileDiag k{};
    d.severity = parse_file_diag(e.kind, k) ? file_diag_severity(k) : Severity::kWarning;
    d.stage = "read";
    d.count = e.count;
    d.of_count = static_cast<int64_t>(rows_read);
    d.example = e.examples.empty() ? "" : e.examples.front();
    if (rows_read > 0)
      d.share_of_events = static_cast<double>(e.count) / static_cast<double>(rows_read);
    rows.push_back(std::move(d));
  }
}

}  // namespace

void assign_recorded_cpu(std::vector<RecordedCpu> cpu, const std::vector<RankActivity>& ranks,
                         HardwareRun& hw) {
  hw.cpu_data = std::move(cpu);
  std::vector<std::vector<int64_t>> pids(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].ok) pids[r] = ranks[r].pids;
  assign(pids, hw);
}

void assign_recorded_cpu(std::vector<RecordedCpu> cpu, const Run& run, HardwareRun& hw) {
  hw.cpu_data = std::move(cpu);
  std::vector<std::vector<int64_t>> pids(run.ranks.size());
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    if (!run.ranks[r].ok) continue;
    for (const ThreadKey& th : run.ranks[r].trace.threads)
      if (std::find(pids[r].begin(), pids[r].end(), th.pid) == pids[r].end())
        pids[r].push_back(th.pid);
  }
  assign(pids, hw);
}

std::vector<DiagnosticRow> recorded_cpu_diagnostics(const HardwareRun& hw) {
  std::vector<DiagnosticRow> rows;
  for (const RecordedCpu& c : hw.cpu_data) {
    if (!c.cpus.file.empty()) add_rows(c.cpus.file, c.cpus.diagnostics, c.cpus.rows_read, rows);
    if (!c.threads.file.empty())
      add_rows(c.threads.file, c.threads.diagnostics, c.threads.rows_read, rows);
  }
  return rows;
}

}  // namespace chopper
