// The analyses strung together: partials per rank in parallel, then the cross-rank finalize.
#include "chopper/analysis/analysis.hpp"

#include "chopper/analysis/parts.hpp"
#include "chopper/base/phase_log.hpp"
#include "chopper/base/thread_pool.hpp"

namespace chopper {

RankAnalysis analyze_rank(const RankTrace& t, int64_t rank, const AnalysisOptions& o,
                          const RankHardware* hw) {
  RankAnalysis out;
  out.rank = rank;
  out.ok = true;
  if (!t.meta.devices.empty()) out.device_name = t.meta.devices.front().name;
  const RankContext c(t, rank, *out.names);
  breakdown_partial(c, o, out);
  launch_partial(c, o, out);
  collective_partial(c, out);
  hardware_partial(c, o, hw, out);
  return out;
}

RunAnalysis finalize(std::vector<RankAnalysis> partials, const AnalysisOptions& o,
                     const HardwareRun* hw) {
  RunAnalysis ra;
  ra.ranks = std::move(partials);
  ra.hardware = hw;
  finalize_collectives(ra, o);
  phase_mark("finalize: collectives");
  finalize_stragglers(ra);
  phase_mark("finalize: stragglers");
  finalize_end_to_end(ra, o);
  phase_mark("finalize: end to end");
  finalize_hardware(ra, o);
  return ra;
}

RunAnalysis analyze_run(const Run& run, const AnalysisOptions& o, const HardwareRun* hw) {
  std::vector<RankAnalysis> partials(run.ranks.size());
  const unsigned threads = o.threads == 0 ? default_threads() : o.threads;
  parallel_for(run.ranks.size(), threads, [&](size_t i) {
    const RankSlot& s = run.ranks[i];
    if (!s.ok) {
      partials[i].rank = s.rank;
      return;
    }
    const RankHardware* h = hw != nullptr && i < hw->ranks.size() ? &hw->ranks[i] : nullptr;
    partials[i] = analyze_rank(s.trace, s.rank, o, h);
  });
  return finalize(std::move(partials), o, hw);
}

}  // namespace chopper
