#pragma once
// Loading a run into memory: every trace file read (ingest/load.hpp) and then linked and
// classified (link/link.hpp) on the thread that read it, files in parallel. Composed here, above
// both, so that ingest/ does not depend on link/ (docs/architecture.md, "Layers"). The result does
// not depend on the thread count or on the order the paths were given in.
#include <string>
#include <vector>

#include "chopper/ingest/load.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

// Reads every trace of `paths` (files and directories) on opt.threads threads into a Run. A file
// that cannot be read, or a path that does not exist, is a failed RankSlot (its error names the
// file and byte offset); so is a file found in a directory under a trace name whose content is not
// JSON at all (a corrupt first byte). A directory's JSON file that is JSON but not a trace
// (truth.json, rocprofv3 or amd-smi JSON) is skipped and listed in Run::skipped. Throws Error when
// there are more than opt.max_files trace files, before opening any.
Run load_run(const std::vector<std::string>& paths, const LoadOptions& opt = {});

// Reads, links and classifies one file (throws InputError; NotATraceError for a file chopper
// wrote itself, see kOwnOutput); a trace whose metadata gives no rank takes its file name's.
RankTrace load_rank_file(const std::string& path, const KinetoReadOptions& opt = {});

// Reads the host ET of `t` among `ets` (match_host_et, ingest/et/et_files.hpp) and links it
// (link/et_link.hpp); one that cannot be read is an et_unreadable diagnostic of the rank.
void attach_host_et(RankTrace& t, const HostEtFiles& ets);

}  // namespace chopper
