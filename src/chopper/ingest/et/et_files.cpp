#include "chopper/ingest/et/et_files.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "chopper/ingest/et/et_reader.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

int64_t host_et_rank_from_name(const std::string& path) {
  const int64_t r = rank_from_file_name(path);
  if (r >= 0) return r;
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find(".json");
  if (dot != std::string::npos) name.resize(dot);
  size_t e = name.size();
  while (e > 0 && !std::isdigit(static_cast<unsigned char>(name[e - 1]))) --e;
  size_t b = e;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(name[b - 1])) && e - b < 9) --b;
  return b < e ? std::stoll(name.substr(b, e - b)) : -1;
}

std::shared_ptr<const HostEtFiles> take_host_et_files(std::vector<TracePath>& files,
                                                      const std::vector<std::string>& named) {
  auto out = std::make_shared<HostEtFiles>();
  std::set<std::string> seen;
  std::vector<TracePath> kept;
  kept.reserve(files.size());
  for (TracePath& f : files) {
    if (!is_host_et_path(f)) {
      kept.push_back(std::move(f));
      continue;
    }
    EtHead h = sniff_host_et_file(f.path);
    if (!h.is_et) {
      kept.push_back(std::move(f));
      continue;
    }
    seen.insert(f.path);
    out->files.push_back({f.path, h.schema, h.pid, host_et_rank_from_name(f.path)});
  }
  files = std::move(kept);
  for (const std::string& p : named) {
    if (!seen.insert(p).second) continue;
    EtHead h = sniff_host_et_file(p);
    out->files.push_back({p, h.schema, h.pid, host_et_rank_from_name(p)});
  }
  if (out->files.empty()) return nullptr;
  return out;
}

bool is_host_et_path(const TracePath& f) {
  // Standard input and pipes are not looked at: what is read of them is gone.
  std::error_code ec;
  return !f.missing && f.skip.empty() && f.path != "-" &&
         std::filesystem::is_regular_file(f.path, ec) && sniff_host_et_file(f.path).is_et;
}

std::shared_ptr<const HostEtFiles> find_host_et_files(const std::vector<std::string>& paths,
                                                      const std::vector<std::string>& named) {
  std::vector<TracePath> files = expand_trace_paths(paths);
  return take_host_et_files(files, named);
}

const HostEtFile* match_host_et(const HostEtFiles& ets, const RankTrace& t) {
  std::set<int64_t> pids;
  for (size_t i = 0; i < t.host.size(); ++i) {
    const int32_t th = t.host.thread[i];
    if (th >= 0 && static_cast<size_t>(th) < t.threads.size()) pids.insert(t.threads[th].pid);
  }
  const HostEtFile* by_pid = nullptr;
  size_t pid_hits = 0;
  for (const HostEtFile& e : ets.files) {
    if (e.pid >= 0 && pids.count(e.pid) > 0) {
      // An ET whose pid another ET shares says nothing by its pid.
      const auto same = std::count_if(ets.files.begin(), ets.files.end(),
                                      [&](const HostEtFile& o) { return o.pid == e.pid; });
      if (same == 1) {
        by_pid = &e;
        ++pid_hits;
      }
    }
  }
  if (pid_hits == 1) return by_pid;
  if (t.meta.rank < 0) return nullptr;
  const HostEtFile* by_rank = nullptr;
  for (const HostEtFile& e : ets.files) {
    if (e.rank == t.meta.rank) {
      if (by_rank != nullptr) return nullptr;  // two ETs of one rank: neither
      by_rank = &e;
    }
  }
  return by_rank;
}

}  // namespace chopper
