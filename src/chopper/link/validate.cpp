#include "chopper/link/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <utility>

#include "chopper/hierarchy/label.hpp"

namespace chopper {

namespace {

// What validation needs of one readable rank.
struct Item {
  size_t slot;  // index into Run::ranks
  int64_t rank;
  int64_t world_size;  // -1 unknown
  std::string backend;
  Ns first = kNoTime, last = kNoTime;
  const std::string* file;
  bool has_span() const { return first != kNoTime && last != kNoTime; }
  bool wildcard() const { return world_size < 0 && backend.empty(); }
};

RunProblem problem(RunDiag k, int64_t rank, std::vector<std::string> files, std::string msg,
                   uint64_t count = 1, int64_t of_count = -1) {
  std::sort(files.begin(), files.end());
  return RunProblem{k, rank, std::move(files), std::move(msg), count, of_count};
}

// "a, b, c and 4 more"
std::string name_files(const std::vector<std::string>& files, size_t show = 3) {
  std::string s;
  for (size_t i = 0; i < files.size() && i < show; ++i) s += (i ? ", " : "") + files[i];
  if (files.size() > show) s += fmt::format(" and {} more", files.size() - show);
  return s;
}

// "0, 3-5, 9"
std::string rank_ranges(const std::vector<int64_t>& r, size_t show = 8) {
  std::string s;
  size_t shown = 0;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (shown == show) {
      s += ", …";
      break;
    }
    s += (s.empty() ? "" : ", ") +
         (j == i ? fmt::format("{}", r[i]) : fmt::format("{}-{}", r[i], r[j]));
    ++shown;
    i = j + 1;
  }
  return s;
}

// A time point for a message: UTC when it is an epoch time, else seconds on the trace's clock.
std::string when(Ns t) {
  if (t == kNoTime) return "no events";
  if (t < 946684800LL * 1'000'000'000LL)  // before 2000: not an epoch time
    return fmt::format("from {:.3f} s", static_cast<double>(t) / 1e9);
  const std::time_t s = static_cast<std::time_t>(t / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return std::string("from ") + buf + " UTC";
}

// Numeric rank order, unknown ranks last, ties by file name.
bool rank_order(const RankSlot& a, const RankSlot& b) {
  const int64_t ra = a.rank < 0 ? INT64_MAX : a.rank;
  const int64_t rb = b.rank < 0 ? INT64_MAX : b.rank;
  return ra != rb ? ra < rb : a.file < b.file;
}

// Gives the readable ranks among `slots` that have none an id above every known rank and world
// size among them, in path order (rank_assigned). Whether any was given.
bool assign_ranks(Run& run, const std::vector<size_t>& slots) {
  int64_t next = 0;
  std::vector<RankSlot*> unknown;
  size_t readable = 0;
  for (size_t i : slots) {
    RankSlot& s = run.ranks[i];
    if (!s.ok) continue;
    ++readable;
    next = std::max({next, s.rank + 1, s.trace.meta.world_size});
    if (s.rank < 0) unknown.push_back(&s);
  }
  // A run of one trace (a single-GPU profile) is rank 0 or its world's next id: nothing to warn.
  const bool alone = readable == 1;
  std::sort(unknown.begin(), unknown.end(),
            [](const RankSlot* a, const RankSlot* b) { return a->file < b->file; });
  for (RankSlot* s : unknown) {
    s->rank = next++;
    s->trace.meta.rank = s->rank;
    s->trace.meta.rank_source = "assigned";
    if (alone) continue;
    run.problems.push_back(
        problem(RunDiag::kRankAssigned, s->rank, {s->file},
                fmt::format("{}: no rank in distributedInfo or the file name: given id {}", s->file,
                            s->rank)));
  }
  return !unknown.empty();
}

// Items (indices into the readable ranks): a time cluster, or a part (the files of one run).
using Part = std::vector<size_t>;

// unreadable_file, missing_path: one problem per file load_run could not read.
void check_unreadable_files(Run& run) {
  for (const RankSlot& s : run.ranks) {
    if (s.ok) continue;
    run.problems.push_back(problem(s.missing ? RunDiag::kMissingPath : RunDiag::kUnreadableFile,
                                   s.rank, {s.file}, s.error));
  }
}

std::vector<Item> readable_items(const Run& run) {
  std::vector<Item> items;
  for (size_t i = 0; i < run.ranks.size(); ++i) {
    const RankSlot& s = run.ranks[i];
    if (!s.ok) continue;
    items.push_back(Item{i, s.rank, s.trace.meta.world_size, s.trace.meta.backend,
                         s.span_first_ns(), s.span_last_ns(), &s.file});
  }
  return items;
}

// world_size_mismatch: the files name more than one world size (with split_runs, they are runs).
void check_world_sizes(Run& run, const std::vector<Item>& items, const ValidateOptions& opt) {
  std::map<int64_t, std::vector<std::string>> by_ws;
  for (const Item& it : items)
    if (it.world_size >= 0) by_ws[it.world_size].push_back(*it.file);
  if (by_ws.size() <= 1 || opt.split_runs) return;
  std::vector<std::string> all;
  std::string msg = "the files disagree on the world size:";
  for (const auto& [ws, files] : by_ws) {
    msg += fmt::format(" {} in {};", ws, name_files(files, 2));
    all.insert(all.end(), files.begin(), files.end());
  }
  msg.pop_back();
  run.problems.push_back(
      problem(RunDiag::kWorldSizeMismatch, -1, std::move(all), msg, by_ws.size()));
}

// rank_out_of_range: a rank its file gives at or above the file's world size.
void check_ranks_below_world_size(Run& run, const std::vector<Item>& items) {
  for (const Item& it : items)
    if (it.world_size >= 0 && it.rank >= it.world_size &&
        run.ranks[it.slot].trace.meta.rank_source != "assigned")
      run.problems.push_back(problem(RunDiag::kRankOutOfRange, it.rank, {*it.file},
                                     fmt::format("{}: rank {} is not below its world size {}",
                                                 *it.file, it.rank, it.world_size)));
}

// Time clusters of the items with a span: spans sorted by start; a span joins the cluster when
// the gap is at most the larger of min_run_gap_ns and the longest span involved.
std::vector<Part> time_clusters(const std::vector<Item>& items, Ns min_run_gap_ns) {
  Part order;
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].has_span()) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return items[a].first != items[b].first ? items[a].first < items[b].first
                                            : *items[a].file < *items[b].file;
  });
  std::vector<Part> clusters;
  Ns end = 0, longest = 0;
  for (size_t i : order) {
    const Item& it = items[i];
    const Ns len = it.last - it.first;
    const Ns tol = std::max({min_run_gap_ns, longest, len});
    if (clusters.empty() || it.first - end > tol) {
      clusters.emplace_back();
      end = it.last;
      longest = len;
    } else {
      end = std::max(end, it.last);
      longest = std::max(longest, len);
    }
    clusters.back().push_back(i);
  }
  return clusters;
}

// Splits a time cluster by (world size, backend) into `parts`; files without distributedInfo go
// with the largest such part.
void split_by_signature(const std::vector<Item>& items, const Part& members,
                        std::vector<Part>& parts) {
  std::map<std::pair<int64_t, std::string>, Part> sig;
  Part wild;
  for (size_t i : members) {
    if (items[i].wildcard())
      wild.push_back(i);
    else
      sig[{items[i].world_size, items[i].backend}].push_back(i);
  }
  size_t largest = SIZE_MAX;
  for (auto& [k, v] : sig) {
    if (largest == SIZE_MAX || v.size() > parts[largest].size()) largest = parts.size();
    parts.push_back(std::move(v));
  }
  if (wild.empty()) return;
  if (largest == SIZE_MAX) {
    parts.push_back(std::move(wild));
  } else {
    parts[largest].insert(parts[largest].end(), wild.begin(), wild.end());
  }
}

// Ranks without events (no span) go with the largest compatible part.
void add_ranks_without_span(const std::vector<Item>& items, std::vector<Part>& parts) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].has_span()) continue;
    size_t best = SIZE_MAX;
    for (size_t p = 0; p < parts.size(); ++p) {
      const Item& f = items[parts[p].front()];
      const bool fits = items[i].wildcard() || f.wildcard() ||
                        (f.world_size == items[i].world_size && f.backend == items[i].backend);
      if (fits && (best == SIZE_MAX || parts[p].size() > parts[best].size())) best = p;
    }
    if (best == SIZE_MAX) {
      parts.push_back({i});
    } else {
      parts[best].push_back(i);
    }
  }
}

// The earliest start of a part's spans (INT64_MAX: none has one).
Ns part_first(const std::vector<Item>& items, const Part& p) {
  Ns t = INT64_MAX;
  for (size_t i : p)
    if (items[i].has_span()) t = std::min(t, items[i].first);
  return t;
}

// A part's files, sorted.
std::vector<std::string> files_of(const std::vector<Item>& items, const Part& p) {
  std::vector<std::string> f;
  for (size_t i : p) f.push_back(*items[i].file);
  std::sort(f.begin(), f.end());
  return f;
}

// The part's distributed metadata: of its first file that has any.
const Item& meta_of(const std::vector<Item>& items, const Part& p) {
  for (size_t i : p)
    if (!items[i].wildcard()) return items[i];
  return items[p.front()];
}

// "a, b and 2 more (4 file(s), 4 rank(s), world size 4, nccl, from ... UTC)"
std::string describe(const std::vector<Item>& items, const Part& p) {
  const Item& f = meta_of(items, p);
  std::set<int64_t> ranks;
  for (size_t i : p) ranks.insert(items[i].rank);
  return fmt::format("{} ({} file(s), {} rank(s){}{}, {})", name_files(files_of(items, p), 2),
                     p.size(), ranks.size(),
                     f.world_size >= 0 ? fmt::format(", world size {}", f.world_size) : "",
                     f.backend.empty() ? "" : ", " + f.backend, when(part_first(items, p)));
}

// The runs the files come from: time clusters split by distributed metadata, each part's items by
// rank then file, the parts in time order (then by first file).
std::vector<Part> find_parts(const std::vector<Item>& items, const ValidateOptions& opt) {
  std::vector<Part> parts;
  for (const Part& c : time_clusters(items, opt.min_run_gap_ns))
    split_by_signature(items, c, parts);
  add_ranks_without_span(items, parts);
  for (Part& p : parts)
    std::sort(p.begin(), p.end(), [&](size_t a, size_t b) {
      return items[a].rank != items[b].rank ? items[a].rank < items[b].rank
                                            : *items[a].file < *items[b].file;
    });
  auto part_file = [&](const Part& p) {
    std::string f = *items[p.front()].file;
    for (size_t i : p) f = std::min(f, *items[i].file);
    return f;
  };
  std::sort(parts.begin(), parts.end(), [&](const Part& a, const Part& b) {
    const Ns ta = part_first(items, a), tb = part_first(items, b);
    return ta != tb ? ta < tb : part_file(a) < part_file(b);
  });
  return parts;
}

// different_runs: the files make more than one part (with split_runs, they are runs).
void check_one_run(Run& run, const std::vector<Item>& items, const std::vector<Part>& parts,
                   const ValidateOptions& opt) {
  if (parts.size() <= 1 || opt.split_runs) return;
  std::vector<std::string> all;
  std::string msg = fmt::format("the files come from {} different runs:", parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k == 3) {
      msg += fmt::format(" and {} more;", parts.size() - 3);
      break;
    }
    msg += fmt::format(" run {}: {};", k + 1, describe(items, parts[k]));
  }
  for (const Part& p : parts) {
    auto f = files_of(items, p);
    all.insert(all.end(), f.begin(), f.end());
  }
  msg.back() = '.';
  msg += " (analyze --split-runs analyses each on its own)";
  run.problems.push_back(problem(RunDiag::kDifferentRuns, -1, std::move(all), msg, parts.size()));
}

// A part's items by rank, each rank's in file order. (A rank still unknown, with split_runs, is a
// rank of its own: its id comes later.)
std::map<int64_t, Part> ranks_of(const std::vector<Item>& items, const Part& p) {
  std::map<int64_t, Part> by_rank;
  for (size_t i : p)
    by_rank[items[i].rank >= 0 ? items[i].rank : INT64_MIN + static_cast<int64_t>(i)].push_back(i);
  for (auto& [r, v] : by_rank)
    std::sort(v.begin(), v.end(),
              [&](size_t a, size_t b) { return *items[a].file < *items[b].file; });
  return by_rank;
}

// duplicate_rank: a rank that more than one file of a part claims (with split_runs, the copies
// are runs).
void check_duplicate_ranks(Run& run, const std::vector<Item>& items,
                           const std::map<int64_t, Part>& by_rank, const ValidateOptions& opt) {
  if (opt.split_runs) return;
  for (const auto& [r, v] : by_rank) {
    if (v.size() <= 1) continue;
    std::vector<std::string> f;
    for (size_t i : v) f.push_back(*items[i].file);
    const std::string msg =
        fmt::format("rank {} is claimed by {} files ({}): {}", r, v.size(),
                    run.ranks[items[v.front()].slot].trace.meta.rank_source, name_files(f));
    run.problems.push_back(problem(RunDiag::kDuplicateRank, r, std::move(f), msg, v.size()));
  }
}

// missing_ranks: ranks below the world size that no file of the part holds (an unreadable file
// whose name gives its rank counts as present: it has its own error).
void check_missing_ranks(Run& run, const std::vector<Item>& items, const Part& p, size_t n_parts) {
  const int64_t ws = meta_of(items, p).world_size;
  if (ws <= 0) return;
  std::set<int64_t> have;
  for (size_t i : p) have.insert(items[i].rank);
  for (const RankSlot& s : run.ranks)
    if (!s.ok && s.rank >= 0) have.insert(s.rank);
  // The count is exact; the ranges named are those below the first 100,000 missing (a corrupt
  // world size may be huge).
  const auto present =
      static_cast<int64_t>(std::distance(have.lower_bound(0), have.lower_bound(ws)));
  const auto n_missing = static_cast<uint64_t>(ws - present);
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < ws && missing.size() < 100000; ++r)
    if (!have.count(r)) missing.push_back(r);
  if (n_missing == 0) return;
  run.problems.push_back(
      problem(RunDiag::kMissingRanks, -1, files_of(items, p),
              fmt::format("world size {} but no file for rank(s) {} ({} of {} missing{})", ws,
                          rank_ranges(missing), n_missing, ws,
                          n_parts > 1 ? " in " + describe(items, p) : ""),
              n_missing, ws));
}

// A part's groups: the n-th copy of each rank (in file order) goes to the n-th group.
void add_groups(const std::vector<Item>& items, const std::map<int64_t, Part>& by_rank,
                std::vector<RunGroup>& groups) {
  size_t copies = 1;
  for (const auto& [r, v] : by_rank) copies = std::max(copies, v.size());
  for (size_t c = 0; c < copies; ++c) {
    RunGroup g;
    for (const auto& [r, v] : by_rank)
      if (c < v.size()) g.push_back(items[v[c]].slot);
    groups.push_back(std::move(g));
  }
}

// run_split (split_runs, more than one group): names the groups.
void report_run_split(Run& run, const std::vector<RunGroup>& groups) {
  std::string msg = fmt::format("--split-runs: {} runs:", groups.size());
  std::vector<std::string> all;
  for (size_t k = 0; k < groups.size() && k < 3; ++k) {
    std::vector<std::string> f;
    for (size_t i : groups[k]) f.push_back(run.ranks[i].file);
    msg += fmt::format(" run-{}: {} ({} file(s));", k + 1, name_files(f, 2), f.size());
  }
  if (groups.size() > 3) msg += fmt::format(" and {} more;", groups.size() - 3);
  msg.pop_back();
  for (const RankSlot& s : run.ranks) all.push_back(s.file);
  run.problems.push_back(problem(RunDiag::kRunSplit, -1, std::move(all), msg, groups.size()));
}

}  // namespace

std::vector<RunGroup> validate_run(Run& run, const ValidateOptions& opt) {
  check_unreadable_files(run);
  // Unknown ranks get ids above every known rank and world size, in path order: over all files,
  // or with split_runs over each run found (below).
  if (!opt.split_runs) {
    std::vector<size_t> all(run.ranks.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (assign_ranks(run, all)) std::stable_sort(run.ranks.begin(), run.ranks.end(), rank_order);
  }
  const std::vector<Item> items = readable_items(run);
  check_world_sizes(run, items, opt);
  check_ranks_below_world_size(run, items);
  const std::vector<Part> parts = find_parts(items, opt);
  check_one_run(run, items, parts, opt);
  std::vector<RunGroup> groups;
  for (const Part& p : parts) {
    const std::map<int64_t, Part> by_rank = ranks_of(items, p);
    check_duplicate_ranks(run, items, by_rank, opt);
    check_missing_ranks(run, items, p, parts.size());
    add_groups(items, by_rank, groups);
  }
  // Unreadable files go with the first group.
  if (groups.empty()) groups.emplace_back();
  for (size_t i = 0; i < run.ranks.size(); ++i)
    if (!run.ranks[i].ok) groups.front().push_back(i);
  for (auto& g : groups) {
    std::sort(g.begin(), g.end());
    if (opt.split_runs) assign_ranks(run, g);
  }
  if (opt.split_runs && groups.size() > 1) report_run_split(run, groups);
  return groups;
}

bool run_is_mixed(const Run& run) {
  for (const RunProblem& p : run.problems)
    if (p.kind == RunDiag::kDifferentRuns || p.kind == RunDiag::kDuplicateRank ||
        p.kind == RunDiag::kWorldSizeMismatch)
      return true;
  return false;
}

std::vector<Run> split_run(Run&& run, const std::vector<RunGroup>& groups) {
  std::vector<Run> out(groups.size());
  for (size_t k = 0; k < groups.size(); ++k) {
    Run& r = out[k];
    std::set<std::string> files;
    for (size_t i : groups[k]) {
      files.insert(run.ranks[i].file);
      r.ranks.push_back(std::move(run.ranks[i]));
    }
    for (const RunProblem& p : run.problems) {
      bool mine = p.files.empty() || p.kind == RunDiag::kRunSplit;
      for (const std::string& f : p.files) mine = mine || files.count(f) > 0;
      if (!mine) continue;
      r.problems.push_back(p);
      if (p.kind == RunDiag::kRunSplit) {
        RunProblem& q = r.problems.back();
        q.files.assign(files.begin(), files.end());
        q.message = fmt::format("run-{} of {} (--split-runs): {}", k + 1, groups.size(),
                                name_files(q.files));
        q.count = q.files.size();
      }
    }
    std::stable_sort(r.ranks.begin(), r.ranks.end(), rank_order);
    if (k == 0) {
      r.skipped = run.skipped;
      r.counter_passes = run.counter_passes;
    }
  }
  return out;
}

std::vector<DiagnosticRow> run_level_diagnostics(const Run& run) {
  std::vector<DiagnosticRow> rows;
  for (const RunProblem& p : run.problems) {
    DiagnosticRow d;
    d.rank = p.rank;
    if (p.files.size() == 1) d.file = p.files.front();
    d.kind = run_diag_name(p.kind);
    d.severity = run_diag_severity(p.kind);
    d.stage =
        p.kind == RunDiag::kMissingPath || p.kind == RunDiag::kUnreadableFile ? "load" : "validate";
    d.count = p.count;
    d.example = p.message;
    d.of_count = p.of_count;
    rows.push_back(std::move(d));
  }
  for (const auto& [file, why] : run.skipped) {
    DiagnosticRow d;
    d.file = file;
    d.kind = run_diag_name(RunDiag::kNotATrace);
    d.severity = run_diag_severity(RunDiag::kNotATrace);
    d.stage = "load";
    d.count = 1;
    d.example = why;
    rows.push_back(std::move(d));
  }
  return rows;
}

std::vector<DiagnosticRow> rank_diagnostics(const RankSlot& s) {
  std::vector<DiagnosticRow> rows;
  if (!s.ok) return rows;
  const RankTrace& t = s.trace;
  const GpuActivities& g = t.gpu;
  Ns gpu_time = 0, unlinked_time = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g.kind[i] == GpuKind::kSync) continue;
    gpu_time += g.dur_ns[i];
    if (g.host_op_idx[i] == kNoRow) unlinked_time += g.dur_ns[i];
  }
  for (const Diagnostics::Entry& e : t.diagnostics.entries()) {
    DiagnosticRow d;
    d.rank = s.rank;
    d.file = s.file;
    d.kind = e.kind;
    d.count = e.count;
    d.example = e.examples.empty() ? "" : e.examples.front();
    if (e.kind == kIterationSourceDiag) {  // what the iterations are: not an anomaly
      d.severity = Severity::kInfo;
      d.stage = "label";
      rows.push_back(std::move(d));
      continue;
    }
    FileDiag kind{};
    d.severity = parse_file_diag(e.kind, kind) ? file_diag_severity(kind) : Severity::kWarning;
    d.stage = "read";
    if (t.total_events > 0)
      d.share_of_events = static_cast<double>(e.count) / static_cast<double>(t.total_events);
    rows.push_back(std::move(d));
  }
  DiagnosticRow d;
  d.rank = s.rank;
  d.file = s.file;
  d.kind = run_diag_name(RunDiag::kGpuActivityUnlinked);
  d.severity = run_diag_severity(RunDiag::kGpuActivityUnlinked);
  d.stage = "link";
  d.count = t.linkable_gpu_activities - t.linked_gpu_activities;
  d.of_count = static_cast<int64_t>(t.linkable_gpu_activities);
  d.gpu_time_ns = unlinked_time;
  d.rank_gpu_time_ns = gpu_time;
  if (gpu_time > 0)
    d.share_of_gpu_time = static_cast<double>(unlinked_time) / static_cast<double>(gpu_time);
  if (t.linkable_gpu_activities > 0)
    d.example =
        fmt::format("link rate {:.1f}% ({} of {} kernels/memcpys/memsets linked)",
                    100.0 * t.link_rate(), t.linked_gpu_activities, t.linkable_gpu_activities);
  rows.push_back(std::move(d));
  return rows;
}

std::vector<DiagnosticRow> run_diagnostics(const Run& run) {
  std::vector<DiagnosticRow> rows = run_level_diagnostics(run);
  for (const RankSlot& s : run.ranks)
    for (DiagnosticRow& d : rank_diagnostics(s)) rows.push_back(std::move(d));
  return rows;
}

}  // namespace chopper
