// The waterfall, finalized over the run (finalize_hardware): each kernel's overlap reference (the
// median solo time of its work), the shape classes' achievable references, the parts made exact
// and additive per kernel, the rows per operation instance and per phase, and the what-if rows.
// Formulas, units and sources: docs/metrics.md ("Hardware"). The per-rank units come from
// hardware_partial (analysis/hardware.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "chopper/analysis/parts.hpp"

namespace chopper {

namespace {

// A kernel's finished waterfall parts, bounded against implausible inputs (counters, clocks): no
// part is infinite or NaN (it counts 0), theoretical, instruction and utilization lie in [0, d]
// and together in [0, d], and overlap and frequency, which are differences of estimates and may
// be negative per kernel (noise: an instance faster than its solo reference, a clock rounded a
// cycle up), are kept signed but at most d in size, so that sums over kernels stay unbiased. The
// residual is what they leave. The rows (bound_waterfall_row) then put every part in [0, observed].
void bound_waterfall_parts(WaterfallUnit& u) {
  const double d = std::max(0.0, static_cast<double>(u.observed_ns));
  double left = d;
  for (double* p : {&u.theoretical_ns, &u.instruction_ns, &u.utilization_ns}) {
    if (!std::isfinite(*p) || *p < 0) *p = 0;
    *p = std::min(*p, left);
    left -= *p;
  }
  for (double* p : {&u.overlap_ns, &u.frequency_ns}) {
    if (!std::isfinite(*p)) *p = 0;
    *p = std::clamp(*p, -d, left);
    left -= *p;
  }
  u.residual_ns = left;
  // Not a part of the sum: of utilization, the time beyond the achievable (signed, at most d).
  if (!std::isfinite(u.below_achievable_ns)) u.below_achievable_ns = 0;
  u.below_achievable_ns = std::clamp(u.below_achievable_ns, -d, d);
}

// A waterfall row's parts (sums over its kernels), bounded: each part in [0, observed] and the
// parts summing to observed. A negative sum (noise of the signed parts over few kernels) counts 0,
// each part is cut to what the parts before it left (theoretical, instruction, utilization,
// overlap, frequency, in that order), and the residual is what they leave.
void bound_waterfall_row(WaterfallRow& w) {
  double left = std::max(0.0, static_cast<double>(w.observed_ns));
  for (double* p :
       {&w.theoretical_ns, &w.instruction_ns, &w.utilization_ns, &w.overlap_ns, &w.frequency_ns}) {
    if (!std::isfinite(*p) || *p < 0) *p = 0;
    *p = std::min(*p, left);
    left -= *p;
  }
  w.residual_ns = left;
  // below_achievable is a part of utilization (signed per kernel: noise cancels in the sum)
  if (!std::isfinite(w.below_achievable_ns)) w.below_achievable_ns = 0;
  w.below_achievable_ns = std::clamp(w.below_achievable_ns, 0.0, w.utilization_ns);
}

}  // namespace

namespace {

// What-if, per iteration on its slowest rank, one loss removed at a time (first order: the
// compute stream's kernels run back to back, so time taken from them comes off the iteration).
void what_if_rows(RunAnalysis& ra) {
  // The slowest ranks' frequency and overlap losses per iteration, each summed in unit order.
  struct Losses {
    double freq = 0, ovl = 0;
    bool fk = false, ok = false;
  };
  std::set<int64_t> slowest;
  for (const IterationRow& it : ra.iterations) slowest.insert(it.slowest_rank);
  std::vector<std::unordered_map<int64_t, Losses>> losses(ra.ranks.size());
  for (size_t i = 0; i < ra.ranks.size(); ++i) {
    if (slowest.count(ra.ranks[i].rank) == 0) continue;
    for (const WaterfallUnit& u : ra.ranks[i].units) {
      Losses& l = losses[i][u.key.iteration];
      l.freq += u.frequency_ns;
      l.ovl += u.overlap_ns;
      l.fk = l.fk || u.frequency_known;
      l.ok = l.ok || u.overlap_known;
    }
  }
  for (const IterationRow& it : ra.iterations) {
    WhatIfRow w;
    w.iteration = it.iteration;
    w.rank = it.slowest_rank;
    w.observed_ns = it.time_ns;
    auto comp = [&](const char* k) {
      auto f = it.components.find(k);
      return f == it.components.end() ? Ns{0} : f->second;
    };
    w.perfect_overlap_ns = it.time_ns - comp("exposed_comm");
    // Chopper's launch overhead: the host late between kernels (prep) and the launch call.
    w.no_launch_gaps_ns = it.time_ns - comp("host_late") - comp("launch_overhead");
    w.no_straggler_ns = it.time_ns - (it.straggler.significant ? it.straggler.cost_ns : 0);
    for (size_t i = 0; i < ra.ranks.size(); ++i) {
      if (ra.ranks[i].rank != it.slowest_rank) continue;
      const auto f = losses[i].find(it.iteration);
      if (f == losses[i].end()) continue;
      const Losses& l = f->second;
      if (l.fk) w.max_clock_ns = it.time_ns - std::llround(l.freq);
      if (l.ok) w.no_overlap_slowdown_ns = it.time_ns - std::llround(l.ovl);
    }
    ra.what_if.push_back(w);
  }
}

// The run-wide references of the waterfall and the rows made with them (finalize_hardware), one
// pass per method.
class WaterfallFinalize {
 public:
  explicit WaterfallFinalize(RunAnalysis& ra) : ra_(ra) {}

  // The overlap reference of each piece of work (its signature), over every rank and iteration:
  // the median active time of its instances that ran with no communication on the GPU. (A line
  // through (overlapped ns, active ns) of overlapped instances was tried and dropped: a kernel
  // that runs longer overlaps more of the same collective, so noise alone makes a slope.)
  void overlap_refs() {
    for (const RankAnalysis& r : ra_.ranks)
      for (const WaterfallUnit& u : r.units) {
        Ref& f = refs_[u.signature];
        if (u.overlap_share <= 0) f.solo.push_back(u.active_ns);
      }
    for (auto& [sig, f] : refs_) {
      if (!f.solo.empty()) {
        auto mid = f.solo.begin() + static_cast<std::ptrdiff_t>(f.solo.size() / 2);
        std::nth_element(f.solo.begin(), mid, f.solo.end());
        f.ref = *mid;
        f.known = true;
      }
    }
    // The run's slowdown rate: active time added per ns of overlapped time, over the kernels
    // whose work has a reference. Work with none (every instance overlapped alike) gets its
    // overlap loss from this rate, and is counted as estimated.
    double added = 0, overlapped = 0;
    for (const RankAnalysis& r : ra_.ranks)
      for (const WaterfallUnit& u : r.units) {
        const Ref& f = refs_[u.signature];
        if (u.overlap_share <= 0 || !f.known) continue;
        added += u.active_ns - f.ref;
        overlapped += u.overlap_share * static_cast<double>(u.observed_ns);
      }
    rate_ = overlapped > 0 ? std::max(0.0, added / overlapped) : 0;
    rate_known_ = overlapped > 0;
  }

  // The compute-loss reference of each shape class: the median over its kernels of the roofline
  // share they reach (theoretical ÷ solo time at the maximum clock: what the work typically
  // reaches here; the p90, its best, is context: the best of many instances that vary is partly
  // luck), and the run's shortest compute kernel, below which no kernel is expected to finish
  // (launch and ramp).
  void class_refs() {
    for (const RankAnalysis& r : ra_.ranks)
      for (const WaterfallUnit& u : r.units) {
        if (u.observed_ns > 0 && (shortest_ == 0 || static_cast<double>(u.observed_ns) < shortest_))
          shortest_ = static_cast<double>(u.observed_ns);
        if (!u.theoretical_known || u.shape_class.empty()) continue;
        const double ref = solo_ref(u);
        if (ref > 0) classes_[u.shape_class].share.push_back(u.theoretical_ns / ref);
      }
    for (auto& [k, c] : classes_) {
      auto p90 = c.share.begin() + static_cast<std::ptrdiff_t>(
                                       std::ceil(0.9 * static_cast<double>(c.share.size())) - 1);
      std::nth_element(c.share.begin(), p90, c.share.end());
      c.row.best_roofline_share = *p90;
      auto mid = c.share.begin() + static_cast<std::ptrdiff_t>((c.share.size() - 1) / 2);
      std::nth_element(c.share.begin(), mid, c.share.end());
      c.row.median_roofline_share = *mid;
      c.row.shape_class = std::string(k);
      c.share = {};
    }
  }

  // Rows per operation instance (rank, label, class) and per phase and iteration (rank,
  // iteration, phase), each kernel's parts finished on the way: a rank's groups are made and
  // moved to ra.waterfall before the next rank's, so only one rank's maps are held (a run of
  // thousands of ranks has millions of instances).
  void rows() {
    reserve_rows();
    bool increasing = true;  // ranks in strictly increasing order: each rank's groups apart
    for (size_t i = 1; i < ra_.ranks.size(); ++i)
      increasing = increasing && ra_.ranks[i - 1].rank < ra_.ranks[i].rank;
    for (RankAnalysis& r : ra_.ranks) {
      for (WaterfallUnit& u : r.units) {
        finish_unit(u);
        // Kernels of no operation get an operation row of their own per class, named so: with
        // operation NULL it would read as the phase's row (or, unphased, the iteration's).
        LabelKey op_key = u.key;
        if (op_key.operation.empty()) op_key.operation = kUnlabelledOperation;
        WaterfallRow& a = by_op_[{r.rank, op_key, u.op_class}];
        a.rank = r.rank;
        a.key = op_key;
        a.op_class = u.op_class;
        add(a, u);
        WaterfallRow& b = by_phase_[{r.rank, u.key.iteration, u.key.phase}];
        b.rank = r.rank;
        b.key = {u.key.iteration, u.key.phase, -1, {}};
        add(b, u);
        WaterfallRow& it = by_phase_[{r.rank, u.key.iteration, Phase::kNone}];
        if (u.key.phase != Phase::kNone) {
          it.rank = r.rank;
          it.key = {u.key.iteration, Phase::kNone, -1, {}};
          add(it, u);
        }
      }
      // The rank's rows; the phase rows of every rank follow the operation rows (key order).
      if (increasing) flush();
    }
    flush();
    // With the ranks in increasing order a rank's groups sort after the lower ranks', so the rows
    // are in the order one map over every rank gives.
    ra_.waterfall.insert(ra_.waterfall.end(), std::make_move_iterator(phase_rows_.begin()),
                         std::make_move_iterator(phase_rows_.end()));
  }

  // The shape classes, largest loss against achievable first.
  void shape_class_rows() {
    for (auto& [k, c] : classes_) {
      if (c.row.kernels == 0) continue;
      ShapeClassRow& cr = c.row;
      cr.family = cr.shape_class.substr(0, cr.shape_class.find(' '));
      cr.roofline_share = cr.time_ns > 0 ? cr.theoretical_ns / cr.time_ns : 0;
      if (!std::isfinite(cr.below_achievable_ns)) cr.below_achievable_ns = 0;
      cr.below_achievable_ns = std::clamp(cr.below_achievable_ns, 0.0, std::max(0.0, cr.time_ns));
      ra_.shape_classes.push_back(std::move(cr));
    }
    std::sort(ra_.shape_classes.begin(), ra_.shape_classes.end(),
              [](const ShapeClassRow& a, const ShapeClassRow& b) {
                if (a.below_achievable_ns != b.below_achievable_ns)
                  return a.below_achievable_ns > b.below_achievable_ns;
                return a.shape_class < b.shape_class;
              });
  }

 private:
  struct Ref {
    std::vector<double> solo;
    double ref = 0;
    bool known = false;
  };
  struct ClassAcc {
    std::vector<double> share;
    ShapeClassRow row;
  };

  double solo_ref(const WaterfallUnit& u) {
    const Ref& f = refs_[u.signature];
    if (u.overlap_share > 0 && f.known) return f.ref;
    if (u.overlap_share > 0 && rate_known_)
      return u.active_ns -
             std::min(u.active_ns, rate_ * u.overlap_share * static_cast<double>(u.observed_ns));
    return u.active_ns;
  }

  // Room for every row at once (a row per operation instance has at least one unit; a phase row
  // per (rank, iteration, phase)): the vector is not regrown, copying millions of rows.
  void reserve_rows() {
    size_t bound = 0;
    std::set<std::tuple<int64_t, int64_t, Phase>> phases;
    for (const RankAnalysis& r : ra_.ranks) {
      bound += r.units.size();
      for (const WaterfallUnit& u : r.units) {
        phases.insert({r.rank, u.key.iteration, u.key.phase});
        phases.insert({r.rank, u.key.iteration, Phase::kNone});
      }
    }
    ra_.waterfall.reserve(ra_.waterfall.size() + bound + phases.size());
  }

  // A kernel's parts, from its references.
  void finish_unit(WaterfallUnit& u) {
    const Ref& f = refs_[u.signature];
    const double theo = u.theoretical_known ? u.theoretical_ns : 0;
    const double issued = u.instruction_known ? u.issued_ns : theo;
    u.instruction_ns = u.instruction_known ? issued - theo : 0;
    u.overlap_known = u.overlap_share <= 0 || f.known;
    // Beside communication, the part of the active time beyond the solo reference is overlap
    // loss. Per kernel it may be negative (an instance faster than the median of the solo ones:
    // noise); clamping it would bias every sum upward, so it is kept signed.
    double ref = u.overlap_share > 0 && f.known ? f.ref : u.active_ns;
    if (u.overlap_share > 0 && !f.known && rate_known_) {
      ref = u.active_ns -
            std::min(u.active_ns, rate_ * u.overlap_share * static_cast<double>(u.observed_ns));
      u.overlap_estimated = true;
    }
    u.overlap_ns = u.active_ns - ref;
    u.utilization_ns = u.theoretical_known ? std::max(0.0, ref - issued) : 0;
    // Of utilization, the part beyond what is achievable: the better (shorter) of the time at the
    // achievable efficiencies and the time at the class's median roofline share, never below the
    // run's shortest kernel. Signed per kernel (an instance faster than the reference is noise
    // the others' slowness cancels in sums: per-kernel clamping would count every run's noise as
    // a loss); rows and classes bound their sums to [0, utilization].
    if (u.theoretical_known && !u.shape_class.empty()) {
      ClassAcc& ca = classes_[u.shape_class];
      double ach = u.achievable_ns;
      if (ca.row.median_roofline_share > 0)
        ach = std::min(ach, u.theoretical_ns / ca.row.median_roofline_share);
      u.achievable_ns = std::max(ach, std::min(shortest_, static_cast<double>(u.observed_ns)));
      u.below_achievable_ns = ref - std::max(issued, u.achievable_ns);
      ShapeClassRow& cr = ca.row;
      ++cr.kernels;
      cr.compute_bound = u.compute_bound;
      cr.time_ns += ref;
      cr.theoretical_ns += u.theoretical_ns;
      cr.achievable_ns += u.achievable_ns;
      cr.below_achievable_ns += u.below_achievable_ns;
      cr.flops += u.flops;
      cr.bytes += u.bytes;
    }
    u.frequency_ns = static_cast<double>(u.observed_ns) - u.active_ns;
    u.residual_ns = static_cast<double>(u.observed_ns) - theo - u.instruction_ns -
                    u.utilization_ns - u.overlap_ns - u.frequency_ns;
    bound_waterfall_parts(u);
  }

  static void add(WaterfallRow& w, const WaterfallUnit& u) {
    ++w.kernels;
    w.observed_ns += u.observed_ns;
    w.theoretical_ns += u.theoretical_ns;
    w.instruction_ns += u.instruction_ns;
    w.utilization_ns += u.utilization_ns;
    w.overlap_ns += u.overlap_ns;
    w.frequency_ns += u.frequency_ns;
    w.residual_ns += u.residual_ns;
    w.below_achievable_ns += u.below_achievable_ns;
    w.unknown_theoretical += u.theoretical_known ? 0 : 1;
    w.unknown_instruction += u.instruction_known ? 0 : 1;
    w.unknown_overlap += u.overlap_known ? 0 : 1;
    w.unknown_frequency += u.frequency_known ? 0 : 1;
    w.estimated_overlap += u.overlap_estimated ? 1 : 0;
  }

  void flush() {
    for (auto& [k, w] : by_op_) {
      bound_waterfall_row(w);
      ra_.waterfall.push_back(std::move(w));
    }
    for (auto& [k, w] : by_phase_) {
      bound_waterfall_row(w);
      phase_rows_.push_back(std::move(w));
    }
    by_op_.clear();
    by_phase_.clear();
  }

  RunAnalysis& ra_;
  std::unordered_map<std::string_view, Ref> refs_;
  double rate_ = 0;
  bool rate_known_ = false;
  std::unordered_map<std::string_view, ClassAcc> classes_;
  double shortest_ = 0;
  std::map<std::tuple<int64_t, LabelKey, OpClass>, WaterfallRow> by_op_;
  std::map<std::tuple<int64_t, int64_t, Phase>, WaterfallRow> by_phase_;
  std::vector<WaterfallRow> phase_rows_;
};

}  // namespace

void finalize_hardware(RunAnalysis& ra, const AnalysisOptions& /*o*/) {
  WaterfallFinalize w(ra);
  w.overlap_refs();
  w.class_refs();
  w.rows();
  w.shape_class_rows();
  what_if_rows(ra);
}

}  // namespace chopper
