#pragma once
// Places every GPU activity of a rank in iteration -> phase -> layer -> operation and gives the
// operation its class (docs/hierarchy.md has every rule):
//   iteration  the iteration range (ProfilerStep#N, or a user rule) that contains the launch (the
//              runtime call), not the GPU start; with no launch in the trace, the step whose
//              GPU-side span (its launched activities' GPU extent on the device) holds it;
//   phase      from the launching op's ranges (autograd, optimizer, FSDP/DDP hooks, annotations),
//              fwdbwd flows and Sequence numbers, then thread windows and transfers; whatever is
//              in an iteration and still has none is the step's `other` work;
//   layer      the innermost range naming a block; a backward op takes its forward op's layer;
//   operation  the innermost user annotation, else the outermost op below the innermost
//              structural range; a backward op takes its forward op's operation; a collective
//              outside annotations is its collective type.
// Needs link_trace() and classify_trace(). Each label records the rule that set it. The passes, in
// their order and with the file each is in: hierarchy/label_passes.hpp.
#include "chopper/hierarchy/taxonomy.hpp"
#include "chopper/model/rank_trace.hpp"
#include "chopper/model/run.hpp"

namespace chopper {

// The diagnostic label_trace adds once per rank: where its iterations came from (the example:
// "rule profiler_step", "--iteration-regex '...'", "repeated annotation 'decode'", "whole trace
// ..."), counted once per iteration. Info, not a warning (link/validate.cpp).
inline constexpr std::string_view kIterationSourceDiag = file_diag_name(FileDiag::kIterationSource);

void label_trace(const Taxonomy& taxonomy, RankTrace& t);
// Labels every readable rank, in parallel (threads 0 = all cores).
void label_run(const Taxonomy& taxonomy, Run& run, unsigned threads = 0);

}  // namespace chopper
