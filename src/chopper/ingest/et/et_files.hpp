#pragma once
// Finding a run's host execution traces and matching them to its ranks (docs/formats.md,
// "PyTorch host execution trace (ET)"). Beside the rank traces, a JSON file is a host ET when its
// first bytes are a JSON object with "schema" and "nodes" and no "traceEvents", whatever its name
// (PyTorch's own names: *et*.json[.gz], host*.json[.gz], rank-N.json in a *_chakra folder); files
// named with --et are host ETs. A rank takes the ET whose pid is its host ops' pid (when one ET
// alone has it), else the one whose file name gives its rank.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chopper/ingest/load.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct HostEtFile {
  std::string path;
  std::string schema;
  int64_t pid = -1;   // the "pid" of its head, -1 if not seen
  int64_t rank = -1;  // from its file name (rank_from_file_name, else the last number), -1 none
};
struct HostEtFiles {
  std::vector<HostEtFile> files;
};

// The rank a host ET's file name gives: "rank-3", "rank_3" (rank_from_file_name), else the last
// run of digits of its name before ".json" ("host.3.json", "et_3.json.gz"); -1 if none.
int64_t host_et_rank_from_name(const std::string& path);

// Takes the host ETs out of `files` (those whose head says so; missing and skipped entries are
// left) and adds the `named` ones (--et; a named file is an ET whatever its content says, and its
// reader will say if it is not). Null when there is none.
std::shared_ptr<const HostEtFiles> take_host_et_files(std::vector<TracePath>& files,
                                                      const std::vector<std::string>& named);

// Whether a trace path is a host ET: a readable file (not "-", not skipped or missing) whose head
// says so. run_trace_files (ingest/load.hpp) leaves such files out of a run's traces.
bool is_host_et_path(const TracePath& f);

// The host ETs of a run: those among `paths` (files and directories, as run_trace_files lists
// them) and the `named` ones (take_host_et_files). Null when there is none.
std::shared_ptr<const HostEtFiles> find_host_et_files(const std::vector<std::string>& paths,
                                                      const std::vector<std::string>& named);

// The ET of a rank: by pid (the ET's pid is the pid of some host op's thread, and no other ET has
// it), else by rank (the trace's meta.rank and the ET's file-name rank). Null if none.
const HostEtFile* match_host_et(const HostEtFiles& ets, const RankTrace& t);

}  // namespace chopper
