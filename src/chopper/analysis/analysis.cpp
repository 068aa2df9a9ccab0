// The analyses strung together: partials per rank in parallel, then the cross-rank finalize.
#include "chopper/analysis/analysis.hpp"

#include "chopper/analysis/parts.hpp"
#include "chopper/base/thread_pool.hpp"

namespace chopper {

RankAnalysis analyze_rank(const RankTrace& t, int64_t rank, const AnalysisOptions& o) {
  RankAnalysis out;
  out.rank = rank;
  out.ok = true;
  if (!t.meta.devices.empty()) out.device_name = t.meta.devices.front().name;
  const RankContext c(t, rank, *out.names);
  breakdown_partial(c, o, out);
  launch_partial(c, o, out);
  collective_partial(c, out);
  return out;
}

RunAnalysis finalize(std::vector<RankAnalysis> partials, const AnalysisOptions& o) {
  RunAnalysis ra;
  ra.ranks = std::move(partials);
  finalize_collectives(ra, o);
  finalize_stragglers(ra);
  finalize_end_to_end(ra, o);
  return ra;
}

RunAnalysis analyze_run(const Run& run, const AnalysisOptions& o) {
  std::vector<RankAnalysis> partials(run.ranks.size());
  const unsigned threads = o.threads == 0 ? default_threads() : o.threads;
  parallel_for(run.ranks.size(), threads, [&](size_t i) {
    const RankSlot& s = run.ranks[i];
    if (!s.ok) {
      partials[i].rank = s.rank;
      return;
    }
    partials[i] = analyze_rank(s.trace, s.rank, o);
  });
  return finalize(std::move(partials), o);
}

}  // namespace chopper
