#pragma once
// RankParts as bytes, for the processes of an MPI run (pipeline/stream.hpp): what one process's
// per-rank stage kept of its ranks, sent to process 0 (and, after the first pass, to every
// process). Decoding gives back every field the finalize and the tables read, exactly (reals as
// their bits), so the tables of an MPI run are those of one process. The rows a stage spooled
// (idle, launch, queues, kernel_hw, hw_levels) are not part of it: they must be empty.
#include <string>
#include <string_view>
#include <vector>

#include "chopper/pipeline/rank_stage.hpp"

namespace chopper {

std::string encode_parts(const std::vector<RankPart>& parts);
// Throws Error on bytes encode_parts did not make.
std::vector<RankPart> decode_parts(std::string_view bytes);

}  // namespace chopper
