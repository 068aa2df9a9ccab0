// The analyses strung together: partials per rank in parallel, then the cross-rank finalize.
#include "chopper/analysis/analysis.hpp"

#include <algorithm>
#include <future>

#include "chopper/analysis/parts.hpp"
#include "chopper/base/phase_log.hpp"
#include "chopper/base/thread_pool.hpp"

namespace chopper {

namespace {

// What launch_partial gave `from` (run on a thread of its own), moved into `out`: its rows, its
// sums, and its components added to those of the other partials (each component is a sum).
void take_launch(RankAnalysis& from, RankAnalysis& out) {
  out.launch = std::move(from.launch);
  out.launch_prep_ns = from.launch_prep_ns;
  out.launch_call_ns = from.launch_call_ns;
  out.launch_stats = std::move(from.launch_stats);
  out.idle_causes = std::move(from.idle_causes);
  out.queues = std::move(from.queues);
  for (const auto& [iteration, parts] : from.components)
    for (const auto& [name, ns] : parts) out.components[iteration][name] += ns;
  for (StrId i = 1; i < from.names->size(); ++i) out.names->intern(from.names->str(i));
  out.thread_names.push_back(std::move(from.names));
}

}  // namespace

RankAnalysis analyze_rank(const RankTrace& t, int64_t rank, const AnalysisOptions& o,
                          const RankHardware* hw, unsigned threads) {
  RankAnalysis out;
  out.rank = rank;
  out.ok = true;
  if (!t.meta.devices.empty()) out.device_name = t.meta.devices.front().name;
  const RankContext c(t, rank, *out.names);
  if (threads <= 1) {
    breakdown_partial(c, o, out);
    work_partial(c, out);
    launch_partial(c, o, out);
    collective_partial(c, out);
    hardware_partial(c, o, hw, out);
    cpu_partial(c, o, hw, out);
    return out;
  }
  // The launch analysis (about half the work) beside the others: its own context and names, so
  // the two threads share nothing they write.
  RankAnalysis launch;
  const RankContext lc(c, *launch.names);
  std::future<void> launched =
      std::async(std::launch::async, [&lc, &o, &launch] { launch_partial(lc, o, launch); });
  try {
    breakdown_partial(c, o, out);
    work_partial(c, out);
    collective_partial(c, out);
    hardware_partial(c, o, hw, out);
    cpu_partial(c, o, hw, out);
  } catch (...) {
    launched.wait();
    throw;
  }
  launched.get();
  take_launch(launch, out);
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
  finalize_work(ra, o);
  phase_mark("finalize: work");
  finalize_hardware(ra, o);
  return ra;
}

RunAnalysis analyze_run(const Run& run, const AnalysisOptions& o, const HardwareRun* hw) {
  std::vector<RankAnalysis> partials(run.ranks.size());
  const unsigned threads = o.threads == 0 ? default_threads() : o.threads;
  // Fewer ranks than threads: each rank's analyses use the threads no rank takes.
  const unsigned per_rank =
      std::max<unsigned>(1, threads / static_cast<unsigned>(std::max<size_t>(1, run.ranks.size())));
  parallel_for(run.ranks.size(), threads, [&](size_t i) {
    const RankSlot& s = run.ranks[i];
    if (!s.ok) {
      partials[i].rank = s.rank;
      return;
    }
    const RankHardware* h = hw != nullptr && i < hw->ranks.size() ? &hw->ranks[i] : nullptr;
    partials[i] = analyze_rank(s.trace, s.rank, o, h, per_rank);
  });
  return finalize(std::move(partials), o, hw);
}

}  // namespace chopper
