#pragma once
// Joins two parts of one trace file read apart: the Kineto reader reads a large plain file on two
// threads (KinetoReadOptions::split), the first from the start, the second from an element
// boundary of traceEvents on, each into its own RankTrace; append_trace then gives the RankTrace
// that one reading of the whole file gives.
#include <cstddef>
#include <span>
#include <vector>

#include "chopper/model/rank_trace.hpp"

namespace chopper {

// Where b holds StrIds of its own outside its StrId columns: rows of b's vectors.
struct TailTextIds {
  std::span<const size_t> flows;   // flow ids 0x8000000000000000 | StrId (a text id)
  std::span<const size_t> device;  // GPU rows whose device is a text pid's id (-StrId - 2)
  std::span<const size_t> stream;  // GPU rows whose stream is a text tid's id (-StrId - 2)
};

// Appends b, read from the file after a, to a as the reader would have filled it reading on:
// b's strings interned into a's table in b's id order (both were interned in file order, so the
// ids are the ones one reading gives) and b's thread keys found or appended in a.threads, and
// every StrId and thread column of b's rows mapped to them; b's rows appended after a's, their
// rows in a.shapes and a.comm_args moved past a's; the metadata event names, the flags, the
// event and byte counts and the diagnostics (Diagnostics::merge: a's examples first) joined.
// Text pids and tids are ids -StrId - 2: every pid and tid v of b (thread keys, metadata names,
// counters) below -1 with -v - 2 below b's string count must be one (the reader does not join a
// part with such a number), and `ids` names the other places b holds a StrId. Only what the reader
// fills while parsing events is joined: a's file, metadata parsed from the top level and per-file
// counts are left as they are. Returns b's StrId -> a's StrId, for the reader's own per-category
// state.
std::vector<StrId> append_trace(RankTrace& a, RankTrace& b, const TailTextIds& ids);

}  // namespace chopper
