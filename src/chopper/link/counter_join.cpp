// Hardware counters joined to a rank's kernels: which rank's trace a counter file describes
// (assign_counter_files), and each dispatch paired with its kernel (join_counters), by
// correlation id when the file is the traced run's, else by kernel name and order.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "chopper/base/text.hpp"
#include "chopper/link/hardware_align.hpp"

namespace chopper {

size_t counter_file_slot(const std::vector<RankActivity>& ranks, const CounterTable& ct) {
  // The rank the file says (a Kineto counter pass's distributedInfo), else its file name's.
  const int64_t rank = ct.rank >= 0 ? ct.rank : rank_from_file_name(ct.file);
  size_t slot = SIZE_MAX;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i].ok && ranks[i].rank >= 0 && ranks[i].rank == rank) slot = i;
  const int64_t pid = ct.first_row_pid();
  if (slot == SIZE_MAX && pid != -1) {
    for (size_t i = 0; i < ranks.size() && slot == SIZE_MAX; ++i) {
      if (!ranks[i].ok || ranks[i].rank < 0) continue;
      const std::vector<int64_t>& p = ranks[i].pids;
      if (std::find(p.begin(), p.end(), pid) != p.end()) slot = i;
    }
  }
  if (slot == SIZE_MAX) {
    size_t ok = 0;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i].ok && ranks[i].rank >= 0) ++ok, slot = i;
    if (ok != 1) slot = SIZE_MAX;
  }
  return slot;
}

std::vector<size_t> assign_counter_files(const std::vector<RankActivity>& ranks,
                                         const std::vector<CounterTable>& counters,
                                         std::vector<CounterJoin>& joins) {
  // Counters -> ranks: the rank in the file name, else a process id of the rank's trace, else the
  // only rank; the first file to claim a rank has it.
  std::vector<size_t> out(counters.size(), SIZE_MAX);
  std::vector<bool> taken(ranks.size(), false);
  joins.assign(counters.size(), CounterJoin{});
  for (size_t f = 0; f < counters.size(); ++f) {
    const CounterTable& ct = counters[f];
    CounterJoin& j = joins[f];
    j.file = ct.file;
    j.dispatches = ct.dispatches();
    const size_t slot = counter_file_slot(ranks, ct);
    if (slot == SIZE_MAX) {
      const int64_t named = ct.rank >= 0 ? ct.rank : rank_from_file_name(ct.file);
      bool unread = false;
      for (const RankActivity& r : ranks) unread = unread || (r.rank == named && !r.ok);
      j.method =
          named < 0 ? "none: no rank in the file name, no matching process id"
          : unread  ? fmt::format(
                          "none: the trace of rank {} (as the file says) could not "
                           "be read",
                          named)
                   : fmt::format("none: rank {} (as the file says) has no trace in the run", named);
      continue;
    }
    j.rank = ranks[slot].rank;
    if (taken[slot]) {
      j.method = "none: the rank already has a counter file";
      continue;
    }
    taken[slot] = true;
    out[f] = slot;
  }
  return out;
}

namespace {

// A kernel name without a leading "void ", its argument list and, with `templates`, its template
// arguments.
std::string_view kernel_stem(std::string_view n, bool templates) {
  while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
  if (n.rfind("void ", 0) == 0) n.remove_prefix(5);
  size_t cut = n.find('(');
  if (templates) cut = std::min(cut, n.find('<'));
  if (cut != std::string_view::npos) n = n.substr(0, cut);
  while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
  return n;
}

bool contains_any(const std::string& lower, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (lower.find(k) != std::string::npos) return true;
  return false;
}

}  // namespace

bool kernel_names_agree(std::string_view a, std::string_view b) {
  if (a == b) return true;
  if (kernel_stem(a, false) == kernel_stem(b, false)) return true;
  const std::string_view sa = kernel_stem(a, true), sb = kernel_stem(b, true);
  return !sa.empty() && sa == sb;
}

std::string_view trace_vendor(const RankTrace& t) {
  if (t.meta.rocm) return "amd";
  for (const auto& [k, v] : t.meta.versions) {
    const std::string key = ascii_lower(k);
    if (contains_any(key, {"roctracer", "hip_", "rocm"})) return "amd";
    if (contains_any(key, {"cupti", "cuda_"})) return "nvidia";
  }
  for (const DeviceProps& d : t.meta.devices) {
    const std::string name = ascii_lower(d.name);
    if (contains_any(name, {"nvidia", "tesla", "geforce", "quadro"})) return "nvidia";
    if (contains_any(name, {"amd", "instinct", "radeon"})) return "amd";
  }
  return "";
}

std::string_view counter_vendor(const CounterTable& ct) {
  if (ct.format.rfind("rocprofv3", 0) == 0 || ct.format.rfind("chopper", 0) == 0) return "amd";
  if (ct.format.rfind("cupti", 0) == 0) return "nvidia";
  return "";
}

namespace {

// Counter clock − trace clock over the pairs made (median), and the share of timed pairs within
// kTimeToleranceNs of it; NaN when no pair has a time.
double counter_offsets(const GpuActivities& g, const CounterTable& ct, const RankHardware& rh,
                       Ns& median) {
  std::vector<Ns> d;
  for (size_t i = 0; i < g.size(); ++i) {
    const int32_t row = rh.counter_row[i];
    if (row >= 0 && static_cast<size_t>(row) < ct.start_ns.size() &&
        ct.start_ns[static_cast<size_t>(row)] != kNoTime)
      d.push_back(ct.start_ns[static_cast<size_t>(row)] - g.start_ns[i]);
  }
  if (d.empty()) return std::nan("");
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  median = d[d.size() / 2];
  size_t near = 0;
  for (Ns x : d) near += std::abs(x - median) <= kTimeToleranceNs ? 1 : 0;
  return static_cast<double>(near) / static_cast<double>(d.size());
}

struct IdPairs {
  uint64_t paired = 0, ambiguous = 0, names_agree = 0;
};

// Each dispatch paired with the kernel of its correlation id (rh.counter_row); a kernel claimed
// twice keeps its first dispatch.
IdPairs pair_by_correlation(const RankTrace& tr, const CounterTable& ct, RankHardware& rh) {
  const GpuActivities& g = tr.gpu;
  std::unordered_map<int64_t, int32_t> by_corr;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] == GpuKind::kKernel && g.correlation[i] >= 0)
      by_corr.emplace(g.correlation[i], static_cast<int32_t>(i));
  IdPairs p;
  for (size_t row = 0; row < ct.size(); ++row) {
    if (ct.correlation_id[row] < 0) continue;
    auto it = by_corr.find(ct.correlation_id[row]);
    if (it == by_corr.end()) continue;
    if (rh.counter_row[static_cast<size_t>(it->second)] >= 0) {
      ++p.ambiguous;
      continue;
    }
    rh.counter_row[static_cast<size_t>(it->second)] = static_cast<int32_t>(row);
    ++p.paired;
    if (kernel_names_agree(ct.kernel[row], tr.strings.str(g.name[static_cast<size_t>(it->second)])))
      ++p.names_agree;
  }
  return p;
}

// Correlation ids pair a dispatch with a kernel when one run recorded both (ids restart at 1 in
// every process, so another run's file pairs half of them by chance): its kernel names must
// agree and its times keep one offset. Accepted: j says so and the answer is empty. Refused: why
// (j.name_match_rate set). Too few pairs to judge: empty, j untouched.
std::string judge_id_pairs(const GpuActivities& g, const CounterTable& ct, const IdPairs& p,
                           CounterJoin& j, RankHardware& rh, bool& accepted) {
  accepted = false;
  if (!(p.paired * 2 >= ct.size() && p.paired > 0)) return {};
  const double rate = static_cast<double>(p.names_agree) / static_cast<double>(p.paired);
  Ns median = 0;
  const double on_time =
      rate >= kNameAgreementMin ? counter_offsets(g, ct, rh, median) : std::nan("");
  j.name_match_rate = rate;
  if (rate < kNameAgreementMin)
    return fmt::format(
        "correlation ids pair {} of {} dispatches with kernels, but only {:.0f}% of their "
        "kernel names agree (at least {:.0f}% needed): not the traced run's",
        p.paired, ct.dispatches(), 100 * rate, 100 * kNameAgreementMin);
  if (on_time < kTimeAgreementMin)  // NaN (no times) passes
    return fmt::format(
        "correlation ids pair {} of {} dispatches with kernels of the same names, but only "
        "{:.0f}% of their times lie within {} ms of one offset (at least {:.0f}% needed): not "
        "the traced run's",
        p.paired, ct.dispatches(), 100 * on_time, kTimeToleranceNs / 1000000,
        100 * kTimeAgreementMin);
  j.method = "correlation id";
  j.matched = p.paired;
  j.ambiguous = p.ambiguous;
  j.offset_ns = median;
  j.same_run = rh.counters_same_run = true;
  accepted = true;
  return {};
}

struct NamePairs {
  uint64_t matched = 0, ambiguous = 0;
};

// Kernel name and occurrence order (Chopper): the k-th dispatch of a name is the k-th kernel
// of that name in the trace, in start order. Names agree by construction; a name dispatched a
// different number of times than traced counts the difference as ambiguous.
NamePairs pair_by_name_order(const RankTrace& tr, const CounterTable& ct, RankHardware& rh) {
  const GpuActivities& g = tr.gpu;
  rh.counter_row.assign(g.size(), -1);
  std::vector<int32_t> kernels;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.kind[i] == GpuKind::kKernel) kernels.push_back(static_cast<int32_t>(i));
  std::stable_sort(kernels.begin(), kernels.end(),
                   [&](int32_t a, int32_t b) { return g.start_ns[a] < g.start_ns[b]; });
  std::unordered_map<std::string_view, std::vector<int32_t>> by_name;
  for (int32_t i : kernels) by_name[tr.strings.str(g.name[i])].push_back(i);
  std::vector<size_t> rows(ct.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  if (!ct.start_ns.empty())
    std::stable_sort(rows.begin(), rows.end(),
                     [&](size_t a, size_t b) { return ct.start_ns[a] < ct.start_ns[b]; });
  std::unordered_map<std::string_view, size_t> seen;
  NamePairs p;
  for (size_t row : rows) {
    auto it = by_name.find(ct.kernel[row]);
    if (it == by_name.end()) continue;
    size_t& k = seen[ct.kernel[row]];
    if (k < it->second.size()) {
      rh.counter_row[static_cast<size_t>(it->second[k])] = static_cast<int32_t>(row);
      ++p.matched;
    }
    ++k;
  }
  for (const auto& [name, n] : seen)
    if (n != by_name[name].size())
      p.ambiguous += n > by_name[name].size() ? n - by_name[name].size() : by_name[name].size() - n;
  return p;
}

}  // namespace

void join_counters(const RankTrace& tr, const CounterTable& ct, CounterJoin& j, RankHardware& rh) {
  const GpuActivities& g = tr.gpu;
  j.matched = j.ambiguous = 0;
  j.offset_ns = 0;
  j.same_run = rh.counters_same_run = false;
  j.name_match_rate = std::nan("");
  auto refuse = [&](std::string why) {
    j.method = "none: " + std::move(why);
    j.matched = 0;
    j.same_run = rh.counters_same_run = false;
    rh.counters = nullptr;
    rh.counter_row.clear();
  };
  // Another vendor's counters describe another machine.
  const std::string_view tv = trace_vendor(tr), cv = counter_vendor(ct);
  if (!tv.empty() && !cv.empty() && tv != cv) {
    refuse(
        fmt::format("{} counters ({}) on a trace of {} GPUs: not this run's hardware "
                    "(docs/counter_formats.md)",
                    cv == "amd" ? "AMD" : "NVIDIA", ct.format, tv == "amd" ? "AMD" : "NVIDIA"));
    return;
  }
  rh.counters = &ct;
  rh.counter_row.assign(g.size(), -1);
  bool accepted = false;
  const std::string id_refused =
      judge_id_pairs(g, ct, pair_by_correlation(tr, ct, rh), j, rh, accepted);
  if (accepted) return;
  const NamePairs p = pair_by_name_order(tr, ct, rh);
  if (p.matched == 0) {
    refuse(id_refused.empty() ? std::string("no dispatch's kernel name is in the trace")
                              : id_refused + "; and no dispatch's kernel name is in the trace");
    return;
  }
  j.method = "kernel name + order";
  if (!id_refused.empty()) j.method += " (" + id_refused + ")";
  j.matched = p.matched;
  j.ambiguous = p.ambiguous;
  j.name_match_rate = 1.0;
  Ns median = 0;
  counter_offsets(g, ct, rh, median);
  j.offset_ns = median;
}

}  // namespace chopper
