// chopper record's GPU files -> ranks, by the traces' process ids (record_align.hpp).
#include "chopper/link/record_align.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace chopper {

namespace {

// Files placed on ranks by process id: chopper record's GPU files and an Nsight Systems export's
// GPU metrics (its own processes).
bool by_pid(const TelemetryData& d) {
  return d.format == "chopper-record" || d.format == "nsys-gpu-metrics";
}

}  // namespace

RecordedRanks recorded_host_ranks(const std::vector<RankActivity>& ranks,
                                  const std::vector<TelemetryData>& telemetry) {
  RecordedRanks out;
  out.ranks.assign(telemetry.size(), {});
  out.notes.assign(telemetry.size(), std::string());
  std::set<std::string> hosts;
  for (const TelemetryData& d : telemetry)
    if (d.format == "chopper-record") hosts.insert(d.recorder.host);
  for (size_t f = 0; f < telemetry.size(); ++f) {
    const TelemetryData& d = telemetry[f];
    if (!by_pid(d)) continue;
    std::vector<size_t>& mine = out.ranks[f];
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (!ranks[i].ok) continue;
      for (int64_t pid : ranks[i].pids)
        if (std::find(d.recorder.pids.begin(), d.recorder.pids.end(), pid) !=
            d.recorder.pids.end()) {
          mine.push_back(i);
          break;
        }
    }
  }
  // A rank that several hosts' pids hold (process ids repeat across hosts, e.g. in containers)
  // cannot be told: left out of each, said in its note.
  std::vector<size_t> hosts_of(ranks.size(), 0);
  for (const std::vector<size_t>& r : out.ranks)
    for (size_t i : r) ++hosts_of[i];
  for (size_t f = 0; f < telemetry.size(); ++f) {
    const TelemetryData& d = telemetry[f];
    if (!by_pid(d)) continue;
    std::vector<size_t>& mine = out.ranks[f];
    std::string both;
    for (size_t i : mine)
      if (hosts_of[i] > 1) both += (both.empty() ? "" : ", ") + std::to_string(ranks[i].rank);
    std::erase_if(mine, [&](size_t i) { return hosts_of[i] > 1; });
    if (!both.empty())
      out.notes[f] = fmt::format(
          "rank(s) {}: a process id also in another {}, left out{}", both,
          d.format == "nsys-gpu-metrics" ? "export's processes" : "host's record.json pids",
          mine.empty() ? "; placed by its file name or order" : "");
    if (!mine.empty() || !both.empty()) continue;
    if (d.format == "nsys-gpu-metrics") {
      out.notes[f] =
          "no trace's process id is one of the export's: placed by its file name or order";
      continue;
    }
    const std::string why =
        d.recorder.found
            ? fmt::format("no trace's process id is in {}'s record.json pids", d.recorder.host)
            : fmt::format("no record.json of host {} beside it", d.recorder.host);
    if (hosts.size() == 1) {
      for (size_t i = 0; i < ranks.size(); ++i)
        if (ranks[i].ok) mine.push_back(i);
      out.notes[f] = why + ": the only recorded host, given every rank";
    } else {
      out.notes[f] = why + ": placed by its file name or order";
    }
  }
  return out;
}

}  // namespace chopper
