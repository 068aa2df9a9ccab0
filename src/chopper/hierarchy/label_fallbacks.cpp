// The labelling's fallbacks (label_passes.hpp): a phase for work no phase range covers, and the
// layer of DDP bucket collectives. Labeller::run calls them in this order.
#include <algorithm>
#include <unordered_map>

#include "chopper/base/sort.hpp"
#include "chopper/hierarchy/label_passes.hpp"

namespace chopper::labelling {

// ---- phase fallbacks for activities whose launching op is in no phase range, in this order

// 1. ranges that cover every thread (a loss.backward annotation on the main thread).
void Labeller::phase_from_all_thread_ranges() {
  if (spans_.empty()) return;
  std::sort(spans_.begin(), spans_.end(),
            [](const Span& x, const Span& y) { return x.start < y.start; });
  for (size_t a = 0; a < ng_; ++a) {
    if (g_.phase[a] != Phase::kNone || launch_ts_[a] == kNoId) continue;
    auto it = std::upper_bound(spans_.begin(), spans_.end(), launch_ts_[a],
                               [](Ns v, const Span& s) { return v < s.start; });
    for (int k = 0; k < 8 && it != spans_.begin(); ++k) {
      --it;
      if (launch_ts_[a] < it->end) {
        g_.phase[a] = it->phase;
        g_.phase_rule[a] = it->rule;
        break;
      }
    }
  }
}

// 2. the autograd engine's thread: it launched backward work and no forward work in the
// iteration.
void Labeller::phase_from_autograd_thread() {
  struct ThreadUse {
    bool backward = false, forward = false;
  };
  std::unordered_map<uint64_t, ThreadUse> use;  // (tid, iteration)
  auto key = [](int64_t tid, int64_t it) {
    return static_cast<uint64_t>(tid) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(it);
  };
  for (size_t a = 0; a < ng_; ++a) {
    if (launch_ts_[a] == kNoId) continue;
    if (g_.phase[a] == Phase::kBackward) use[key(launch_tid_[a], g_.iteration[a])].backward = true;
    if (g_.phase[a] == Phase::kForward) use[key(launch_tid_[a], g_.iteration[a])].forward = true;
  }
  for (size_t a = 0; a < ng_; ++a) {
    if (g_.phase[a] != Phase::kNone || launch_ts_[a] == kNoId) continue;
    auto it = use.find(key(launch_tid_[a], g_.iteration[a]));
    if (it != use.end() && it->second.backward && !it->second.forward) {
      g_.phase[a] = Phase::kBackward;
      g_.phase_rule[a] = r_.thread;
    }
  }
}

// 3. transfers: outside every phase, or host<->device copies that only a Sequence number
// (aten::to) put in the forward pass.
void Labeller::phase_of_transfers() {
  for (size_t a = 0; a < ng_; ++a) {
    const bool transfer = g_.cls[a] == GpuClass::kMemcpy || g_.cls[a] == GpuClass::kMemset;
    const bool host_copy =
        g_.cls[a] == GpuClass::kMemcpy &&
        (g_.memcpy_dir[a] == MemcpyDir::kHtoD || g_.memcpy_dir[a] == MemcpyDir::kDtoH);
    if ((transfer && g_.phase[a] == Phase::kNone) || (host_copy && g_.phase_rule[a] == r_.seq)) {
      g_.phase[a] = Phase::kOther;
      g_.phase_rule[a] = r_.transfer;
    }
  }
}

// 4. compute launched between the iteration's last forward launch and its first backward launch:
// loss.backward()'s gradient seed (aten::ones_like), which has no Sequence number and sits in no
// range.
void Labeller::phase_of_backward_seed() {
  struct Gap {
    Ns last_fwd = INT64_MIN, first_bwd = INT64_MAX;
  };
  std::unordered_map<int64_t, Gap> gaps;  // iteration -> gap
  for (size_t a = 0; a < ng_; ++a) {
    if (g_.iteration[a] == kNoId || launch_ts_[a] == kNoId) continue;
    if (g_.phase[a] == Phase::kForward)
      gaps[g_.iteration[a]].last_fwd = std::max(gaps[g_.iteration[a]].last_fwd, launch_ts_[a]);
    if (g_.phase[a] == Phase::kBackward)
      gaps[g_.iteration[a]].first_bwd = std::min(gaps[g_.iteration[a]].first_bwd, launch_ts_[a]);
  }
  for (size_t a = 0; a < ng_; ++a) {
    if (g_.phase[a] != Phase::kNone || g_.iteration[a] == kNoId || launch_ts_[a] == kNoId) continue;
    auto it = gaps.find(g_.iteration[a]);
    if (it != gaps.end() && it->second.last_fwd < launch_ts_[a] &&
        launch_ts_[a] < it->second.first_bwd && it->second.last_fwd != INT64_MIN &&
        it->second.first_bwd != INT64_MAX) {
      g_.phase[a] = Phase::kBackward;
      g_.phase_rule[a] = r_.seed;
    }
  }
}

// 5. a rank with no backward and no optimizer work: everything in an iteration is forward.
void Labeller::phase_of_forward_only_rank() {
  for (size_t a = 0; a < ng_; ++a)
    if (g_.phase[a] == Phase::kBackward || g_.phase[a] == Phase::kOptimizer) return;
  for (size_t a = 0; a < ng_; ++a)
    if (g_.phase[a] == Phase::kNone && g_.iteration[a] != kNoId) {
      g_.phase[a] = Phase::kForward;
      g_.phase_rule[a] = r_.fwd_only;
    }
}

// 6. whatever is still without a phase inside an iteration ran in the step outside every forward,
// backward and optimizer range that the rules know (and, with no launch, has no range at all):
// the step's other work.
void Labeller::phase_of_step_remainder() {
  for (size_t a = 0; a < ng_; ++a)
    if (g_.phase[a] == Phase::kNone && g_.iteration[a] != kNoId) {
      g_.phase[a] = Phase::kOther;
      g_.phase_rule[a] = r_.remainder;
    }
}

// ---- layer fallback

// A backward collective without a layer: the layer of the last backward compute launched before
// it on its thread in the same iteration (DDP buckets).
void Labeller::layer_of_ddp_buckets() {
  std::vector<uint32_t> idx;
  bool need = false;
  for (size_t a = 0; a < ng_; ++a) {
    if (launch_ts_[a] == kNoId || g_.phase[a] != Phase::kBackward) continue;
    idx.push_back(static_cast<uint32_t>(a));
    need |= g_.cls[a] == GpuClass::kCommunication && g_.layer_rule[a] == kNoRule;
  }
  if (!need) return;
  sort_by_runs(idx, [&](uint32_t x, uint32_t y) {
    if (launch_tid_[x] != launch_tid_[y]) return launch_tid_[x] < launch_tid_[y];
    if (launch_ts_[x] != launch_ts_[y]) return launch_ts_[x] < launch_ts_[y];
    return x < y;
  });
  int64_t tid = kNoId, iter = kNoId;
  int32_t layer = -1;
  uint16_t layer_rule = kNoRule;
  for (uint32_t a : idx) {
    if (launch_tid_[a] != tid || g_.iteration[a] != iter) {
      tid = launch_tid_[a];
      iter = g_.iteration[a];
      layer = -1;
      layer_rule = kNoRule;
    }
    if (g_.cls[a] == GpuClass::kCommunication) {
      if (g_.layer_rule[a] == kNoRule && layer_rule != kNoRule) {
        g_.layer[a] = layer;
        g_.layer_rule[a] = r_.bucket;
      }
    } else if (g_.cls[a] == GpuClass::kCompute) {
      layer = g_.layer[a];
      layer_rule = g_.layer_rule[a];
    }
  }
}

}  // namespace chopper::labelling
