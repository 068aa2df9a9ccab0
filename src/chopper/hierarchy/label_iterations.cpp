// The labelling's iteration passes (label_passes.hpp): where the iterations come from, the steps,
// and the iteration of work with no launch.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "chopper/hierarchy/label.hpp"
#include "chopper/hierarchy/label_passes.hpp"

namespace chopper::labelling {

namespace {

// A host op that can mark an iteration by repeating: a user annotation or an nn.Module call.
bool window_kind(const RankTrace& t, size_t u) {
  const HostOps& h = t.host;
  if (h.kind[u] == HostKind::kUserAnnotation) return true;
  return h.kind[u] == HostKind::kPythonFunction &&
         t.strings.str(h.name[u]).substr(0, 11) == "nn.Module: ";
}

// The iterations of a rank no iteration rule matches: the outermost annotations (user
// annotations and nn.Module calls with no such range around them) that launch GPU work. If the
// names that occur twice or more launch at least half of that work, these ops are the iterations,
// with the ones whose names occur once among them (sglang's and vLLM's decode steps and a single
// prefill, a model's top-level forward, TorchRec's "## ... ##" ranges). Else, if one op launches
// more than half of it (a wrapper around the whole profile), the search goes on inside it, up to 8
// levels deep. Else none (the whole trace is one window). `order`: host ops, every parent before
// its children. Returns the ops, in no order.
std::vector<int32_t> repeated_annotations(const RankTrace& t, const std::vector<int32_t>& order) {
  const HostOps& h = t.host;
  const GpuActivities& g = t.gpu;
  const size_t nh = h.size();
  std::vector<int32_t> out;
  if (nh == 0) return out;
  // GPU activities launched under each op (itself and everything below it).
  std::vector<uint64_t> launched(nh, 0);
  for (size_t a = 0; a < g.size(); ++a)
    if (g.host_op_idx[a] != kNoRow && g.kind[a] != GpuKind::kSync)
      ++launched[static_cast<size_t>(g.host_op_idx[a])];
  for (size_t k = nh; k-- > 0;) {
    const auto u = static_cast<size_t>(order[k]);
    if (h.parent[u] != kNoRow) launched[static_cast<size_t>(h.parent[u])] += launched[u];
  }
  // The nearest annotation above each op (kNoRow: none).
  std::vector<int32_t> outer(nh, kNoRow);
  for (int32_t i : order) {
    const auto u = static_cast<size_t>(i);
    const int32_t p = h.parent[u];
    if (p == kNoRow) continue;
    outer[u] = window_kind(t, static_cast<size_t>(p)) ? p : outer[static_cast<size_t>(p)];
  }
  int32_t inside = kNoRow;
  for (int level = 0; level < 8; ++level) {
    std::unordered_map<StrId, uint64_t> times;  // name -> ops at this level
    std::vector<int32_t> level_ops;
    uint64_t total = 0;
    int32_t biggest = kNoRow;
    for (int32_t i : order) {
      const auto u = static_cast<size_t>(i);
      if (outer[u] != inside || launched[u] == 0 || !window_kind(t, u)) continue;
      level_ops.push_back(i);
      ++times[h.name[u]];
      total += launched[u];
      if (biggest == kNoRow || launched[u] > launched[static_cast<size_t>(biggest)]) biggest = i;
    }
    if (level_ops.empty()) break;
    uint64_t repeated = 0;
    for (int32_t i : level_ops)
      if (times[h.name[static_cast<size_t>(i)]] >= 2) repeated += launched[static_cast<size_t>(i)];
    if (repeated > 0 && 2 * repeated >= total) {
      out = std::move(level_ops);  // the repeated steps and their siblings (a single prefill)
      break;
    }
    if (2 * launched[static_cast<size_t>(biggest)] <= total) break;
    inside = biggest;
  }
  return out;
}

// The GPU-side span of each iteration on each device: [earliest GPU start, latest GPU end] of the
// activities launched in it (syncs aside), sorted by device and start.
struct GpuSpan {
  int64_t device;
  Ns start, end;
  int64_t number;
};

std::vector<GpuSpan> gpu_step_spans(const GpuActivities& g) {
  std::vector<GpuSpan> spans;
  std::unordered_map<uint64_t, size_t> at;  // (device, iteration) -> spans row
  for (size_t a = 0; a < g.size(); ++a) {
    if (g.iteration[a] == kNoId || g.kind[a] == GpuKind::kSync) continue;
    const Ns s = g.start_ns[a], e = s + g.dur_ns[a];
    const uint64_t k = static_cast<uint64_t>(g.device[a]) * 0x9E3779B97F4A7C15ull ^
                       static_cast<uint64_t>(g.iteration[a]);
    auto [it, fresh] = at.try_emplace(k, spans.size());
    if (fresh) {
      spans.push_back({g.device[a], s, e, g.iteration[a]});
    } else {
      GpuSpan& sp = spans[it->second];
      sp.start = std::min(sp.start, s);
      sp.end = std::max(sp.end, e);
    }
  }
  std::sort(spans.begin(), spans.end(), [](const GpuSpan& x, const GpuSpan& y) {
    return x.device != y.device ? x.device < y.device : x.start < y.start;
  });
  return spans;
}

}  // namespace

// The ranges of the first iteration rule (in taxonomy order) that matches any op. (Matches every
// host-op name, in row order: the operation labels rules make are interned here.)
void Labeller::find_rule_iterations() {
  for (size_t i = 0; i < nh_; ++i) {
    const NameMatch& nm = m_.host(h_.name[i]);
    if (nm.iter_rule == kNoRule || nm.iter_rule > iter_rule_) continue;
    if (nm.iter_rule < iter_rule_) {
      iters_.clear();
      iter_rule_ = nm.iter_rule;
    }
    iters_.push_back({h_.start_ns[i], h_.start_ns[i] + h_.dur_ns[i], nm.iter_num});
  }
  std::sort(iters_.begin(), iters_.end(), starts_before);
  if (iter_rule_ == kNoRule) return;
  const NameRule& r = tx_.rules()[iter_rule_];
  // A rule without a capture group (--iteration-regex) numbers its ranges by occurrence.
  if (r.captures == 0)
    for (size_t k = 0; k < iters_.size(); ++k) iters_[k].number = static_cast<int64_t>(k);
  iter_source_ = r.name == kIterationRegexRule
                     ? fmt::format("--iteration-regex '{}'", r.pattern)
                     : fmt::format("rule {}{}", r.name,
                                   r.source == "builtin" ? "" : fmt::format(" ({})", r.source));
}

// No iteration rule matched: the iterations come from the trace's own structure, repeated
// annotations (repeated_annotations), else the whole trace is one.
void Labeller::find_structural_iterations() {
  if (iter_rule_ != kNoRule) return;
  const std::vector<int32_t> windows = repeated_annotations(t_, order_);
  if (windows.empty()) {
    whole_trace_ = true;
    iter_source_ = nh_ == 0 ? "whole trace (no host ops)" : "whole trace (no range repeats)";
    return;
  }
  window_op_.assign(nh_, 0);
  std::vector<StrId> names;
  for (int32_t w : windows) {
    const auto u = static_cast<size_t>(w);
    // The window and the ranges around it (a wrapper the search went into) are structural.
    for (int32_t p = w; p != kNoRow && window_op_[static_cast<size_t>(p)] == 0;
         p = h_.parent[static_cast<size_t>(p)])
      window_op_[static_cast<size_t>(p)] = 1;
    iters_.push_back({h_.start_ns[u], h_.start_ns[u] + h_.dur_ns[u], 0});
    if (std::find(names.begin(), names.end(), h_.name[u]) == names.end())
      names.push_back(h_.name[u]);
  }
  std::sort(iters_.begin(), iters_.end(), starts_before);
  for (size_t k = 0; k < iters_.size(); ++k) iters_[k].number = static_cast<int64_t>(k);
  iter_rule_ = r_.repeated;
  iter_source_ = "repeated annotation ";
  for (size_t k = 0; k < names.size() && k < 3; ++k)
    iter_source_ += fmt::format("{}'{}'", k ? ", " : "", t_.strings.str(names[k]));
  if (names.size() > 3) iter_source_ += fmt::format(" and {} more", names.size() - 3);
}

// No iterations found: the whole trace is one iteration (0), every activity, launched or not.
void Labeller::label_whole_trace() {
  if (!whole_trace_) return;
  for (size_t a = 0; a < ng_; ++a) {
    g_.iteration[a] = 0;
    g_.iteration_rule[a] = r_.whole;
  }
}

// The iterations the analyses open their windows from (RankTrace::steps), and where they came
// from (the iteration_source diagnostic).
void Labeller::record_steps() {
  t_.steps.clear();
  for (const IterRange& r : iters_) t_.steps.push_back({r.number, r.start, r.end});
  if (whole_trace_) {
    Ns lo = INT64_MAX, hi = INT64_MIN;
    for (size_t a = 0; a < ng_; ++a) {
      lo = std::min(lo, g_.start_ns[a]);
      hi = std::max(hi, g_.start_ns[a] + g_.dur_ns[a]);
    }
    if (ng_ > 0) t_.steps.push_back({0, lo, hi});
  }
  t_.diagnostics.add(FileDiag::kIterationSource, iter_source_);
  if (t_.steps.size() > 1)
    t_.diagnostics.add_count(FileDiag::kIterationSource, t_.steps.size() - 1);
}

// Iteration for activities with no launch: the GPU-side span of a step. An activity that was not
// linked to a runtime call or a host op (its launch is missing from the trace) but that ran on
// the GPU entirely within [earliest GPU start, latest GPU end] of the activities of its device
// launched in step N belongs to step N: the GPU runs a step's work in launch order, so work
// queued between two of the step's kernels is the step's. Work before the first step's GPU span
// (launched before the profiler started) stays without an iteration.
void Labeller::iteration_from_gpu_step_span() {
  if (iters_.empty()) return;
  const std::vector<GpuSpan> spans = gpu_step_spans(g_);
  uint64_t placed = 0;
  for (size_t a = 0; a < ng_ && !spans.empty(); ++a) {
    if (launch_ts_[a] != kNoId || g_.iteration[a] != kNoId) continue;
    const Ns s = g_.start_ns[a], e = s + g_.dur_ns[a];
    // The latest-starting span on the device that starts at or before s and holds [s, e).
    auto it =
        std::upper_bound(spans.begin(), spans.end(), std::make_pair(g_.device[a], s),
                         [](const std::pair<int64_t, Ns>& v, const GpuSpan& sp) {
                           return v.first != sp.device ? v.first < sp.device : v.second < sp.start;
                         });
    for (int k = 0; k < 8 && it != spans.begin(); ++k) {
      --it;
      if (it->device != g_.device[a]) break;
      if (e <= it->end) {
        g_.iteration[a] = it->number;
        g_.iteration_rule[a] = r_.gpu_span;
        ++placed;
        break;
      }
    }
  }
  if (placed > 0) t_.diagnostics.add_count("gpu_activity_in_step_span_without_launch", placed);
}

}  // namespace chopper::labelling
