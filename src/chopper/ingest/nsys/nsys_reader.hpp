#pragma once
// Reader for Nsight Systems SQLite exports (nsys export --type sqlite; docs/formats.md, "Nsight
// Systems SQLite export"): kernels, memcpys, memsets, synchronizations, CUDA runtime calls and
// NVTX ranges into the RankTrace model the Kineto reader fills, so linking, labelling and every
// analysis apply unchanged. One export may hold several processes, each on one or more GPUs: each
// (process, device) pair with GPU work is one rank, read through its part path
// "FILE#process=PID,device=DEV,rank=K" (nsys_rank_paths lists them).
#include <cstdint>
#include <string>
#include <vector>

#include "chopper/model/rank_trace.hpp"

namespace chopper {

struct NsysPart {
  int64_t pid = -1;
  int32_t device = -1;
  int64_t rank = -1;  // -1: not numbered by the part path
};

// The (process, device) pairs that have GPU work (kernels, memcpys, memsets, synchronizations), by
// process id, then device. Throws InputError for a file that cannot be read as an export.
std::vector<NsysPart> nsys_parts(const std::string& file);
// "FILE#process=PID,device=DEV,rank=K".
std::string nsys_part_path(const std::string& file, const NsysPart& p);
// Splits a part path into its file and part; false if `path` is not one (or its file exists under
// the whole name).
bool parse_nsys_part_path(const std::string& path, std::string& file, NsysPart& p);

// The paths an export is read through, numbering ranks from `*next_rank` on (advanced): the file
// itself when it holds at most one (process, device) pair (its rank then comes from its name, or is
// assigned), else one part path per pair, ranked in the order above.
std::vector<std::string> nsys_rank_paths(const std::string& file, int64_t* next_rank);

// Reads one export (or one part of it, by its part path), unlinked. Throws InputError naming the
// file for one that cannot be read (truncated, corrupt), NotATraceError for an SQLite file that is
// no export (chopper's own chopper.sqlite among them). A plain path to an export of several
// (process, device) pairs is an InputError naming the part paths to read instead.
RankTrace read_nsys_file(const std::string& path);

}  // namespace chopper
