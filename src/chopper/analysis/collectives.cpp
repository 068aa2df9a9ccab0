// Collectives across ranks: each rank's communication activities are matched by process group and
// order within it (TraceLens's key; traces carry no NCCL sequence number), clock offsets are
// estimated from the ends of matched collectives (a collective ends at nearly the same instant on
// every member), and each collective's latency, skews and bandwidths are computed on the aligned
// clock. Formulas: docs/metrics.md.
#include <algorithm>
#include <map>
#include <queue>
#include <set>

#include "chopper/analysis/parts.hpp"
#include "chopper/base/text.hpp"

namespace chopper {

int dtype_size(std::string_view d) {
  std::string s = ascii_lower(d);
  if (s.rfind("c10::", 0) == 0) s = s.substr(5);
  if (s == "bfloat16" || s == "half" || s == "float16" || s == "short" || s == "int16") return 2;
  if (s == "float" || s == "float32" || s == "int" || s == "int32" || s == "uint32") return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "int64" || s == "uint64") return 8;
  if (s.rfind("float8", 0) == 0 || s == "byte" || s == "char" || s == "bool" || s == "int8" ||
      s == "uint8")
    return 1;
  return 0;
}

// NCCL's PERFORMANCE.md: busbw = algbw × factor, so that busbw compares with the link speed.
double busbw_factor(CollType t, int64_t n) {
  if (n <= 1) return 0;
  const double dn = static_cast<double>(n);
  switch (t) {
    case CollType::kAllReduce:
      return 2.0 * (dn - 1) / dn;
    case CollType::kAllGather:
    case CollType::kReduceScatter:
    case CollType::kAllToAll:
    case CollType::kGather:
    case CollType::kScatter:
      return (dn - 1) / dn;
    case CollType::kBroadcast:
    case CollType::kReduce:
    case CollType::kSendRecv:
    case CollType::kSend:
    case CollType::kRecv:
      return 1.0;
    default:
      return 0;
  }
}

void collective_partial(const RankContext& c, RankAnalysis& out) {
  const RankTrace& t = c.t;
  const GpuActivities& g = t.gpu;
  for (const Collective& col : t.collectives) {
    const int32_t i = col.gpu_idx;
    if (i < 0 || static_cast<size_t>(i) >= g.size() || g.dur_ns[i] < 0) continue;
    CollRecord r;
    r.rank = c.rank;
    if (col.pg_name != 0) {
      r.group = std::string(t.strings.str(col.pg_name));
    } else if (col.pg_ranks != 0) {
      r.group = "ranks " + std::string(t.strings.str(col.pg_ranks));
    }
    r.type = col.type;
    r.called = col.called;
    r.start_ns = g.start_ns[i];
    r.end_ns = c.end(i);
    r.dtype = std::string(t.strings.str(col.dtype));
    const int es = dtype_size(r.dtype);
    if (es > 0) {
      if (col.in_nelems >= 0) r.in_bytes = col.in_nelems * es;
      if (col.out_nelems >= 0) r.out_bytes = col.out_nelems * es;
    }
    // NCCL's size convention: the output for all-gather, the input otherwise.
    const CollType kind = col.called != CollType::kUnknown ? col.called : col.type;
    r.bytes = kind == CollType::kAllGather ? r.out_bytes : r.in_bytes;
    r.group_size = col.group_size;
    r.algorithm = std::string(t.strings.str(col.algorithm));
    r.protocol = std::string(t.strings.str(col.protocol));
    r.key = c.label(c.raw_key(static_cast<size_t>(i), false));
    out.colls.push_back(std::move(r));
  }
  std::sort(out.colls.begin(), out.colls.end(), [](const CollRecord& a, const CollRecord& b) {
    return std::tie(a.group, a.start_ns, a.end_ns) < std::tie(b.group, b.start_ns, b.end_ns);
  });
  for (size_t k = 0; k < out.colls.size(); ++k)
    out.colls[k].index =
        k > 0 && out.colls[k - 1].group == out.colls[k].group ? out.colls[k - 1].index + 1 : 0;
}

Ns clock_offset(const RunAnalysis& ra, int64_t rank) {
  for (const ClockOffset& o : ra.clock_offsets)
    if (o.rank == rank) return o.applied ? o.offset_ns : 0;
  return 0;
}

namespace {

Ns median(std::vector<Ns> v) {
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(m), v.end());
  return v[m];
}

// The collectives of the run matched across ranks: per group and index, the members (one record
// per rank, by rank) of the same type; the collectives of groups of which one rank was loaded.
struct CollMatching {
  std::vector<std::vector<const CollRecord*>> matched;
  std::vector<const CollRecord*> singles;
  std::set<int64_t> ranks;  // the readable ranks
};

CollMatching match_collectives(RunAnalysis& ra) {
  CollMatching cm;
  // group -> index -> members (one record per rank).
  std::map<std::string, std::map<int64_t, std::vector<const CollRecord*>>> groups;
  for (const RankAnalysis& r : ra.ranks) {
    if (!r.ok) continue;
    cm.ranks.insert(r.rank);
    for (const CollRecord& c : r.colls) groups[c.group][c.index].push_back(&c);
  }
  for (auto& [name, by_index] : groups) {
    std::set<int64_t> in_group;
    for (auto& [i, m] : by_index)
      for (const CollRecord* c : m) in_group.insert(c->rank);
    if (in_group.size() < 2) {
      // Only one rank of this group was loaded (a single-rank trace): each collective is listed
      // on its own, without the cross-rank numbers.
      for (auto& [i, m] : by_index) cm.singles.push_back(m.front());
      continue;
    }
    for (auto& [i, m] : by_index) {
      if (m.size() < 2) {
        ++ra.unmatched_collectives;
        continue;
      }
      const CollType t0 = m[0]->type;
      if (!std::all_of(m.begin(), m.end(), [&](const CollRecord* c) { return c->type == t0; })) {
        ++ra.mismatched_collectives;
        continue;
      }
      std::sort(m.begin(), m.end(),
                [](const CollRecord* a, const CollRecord* b) { return a->rank < b->rank; });
      cm.matched.push_back(m);
    }
  }
  return cm;
}

// Clock offsets: for each matched collective, every member's end minus the lowest member's
// end; per (rank, anchor) the median of those and its MAD; then offsets chained from the lowest
// rank of each connected set (breadth first).
void estimate_clock_offsets(const CollMatching& cm, const AnalysisOptions& o, RunAnalysis& ra) {
  std::map<std::pair<int64_t, int64_t>, std::vector<Ns>> diffs;
  for (const auto& m : cm.matched)
    for (size_t k = 1; k < m.size(); ++k)
      diffs[{m[k]->rank, m[0]->rank}].push_back(m[k]->end_ns - m[0]->end_ns);
  std::map<int64_t, std::vector<std::pair<int64_t, Ns>>> edges;  // rank -> (other, other − rank)
  std::map<std::pair<int64_t, int64_t>, std::pair<Ns, Ns>> est;  // median, MAD
  for (auto& [k, v] : diffs) {
    const Ns med = median(v);
    std::vector<Ns> dev;
    dev.reserve(v.size());
    for (Ns d : v) dev.push_back(d > med ? d - med : med - d);
    est[k] = {med, median(dev)};
    edges[k.second].push_back({k.first, med});
    edges[k.first].push_back({k.second, -med});
  }
  std::map<int64_t, Ns> off;
  std::map<int64_t, int64_t> ref;
  for (int64_t root : cm.ranks) {
    if (off.count(root)) continue;
    off[root] = 0;
    ref[root] = root;
    std::queue<int64_t> q;
    q.push(root);
    while (!q.empty()) {
      const int64_t a = q.front();
      q.pop();
      for (const auto& [b, d] : edges[a])
        if (!off.count(b)) {
          off[b] = off[a] + d;
          ref[b] = root;
          q.push(b);
        }
    }
  }
  for (int64_t r : cm.ranks) {
    ClockOffset co;
    co.rank = r;
    co.reference_rank = ref[r];
    co.offset_ns = off[r];
    for (const auto& m : cm.matched)
      for (const CollRecord* c : m) co.collectives += c->rank == r ? 1 : 0;
    for (const auto& [k, e] : est)
      if (k.first == r) co.spread_ns = std::max(co.spread_ns, e.second);
    // Applied only when the per-collective estimates agree better than the offset is large:
    // ranks on one host share a clock, and there the end differences are noise around 0.
    co.applied = o.align_clocks && co.collectives > 0 && r != co.reference_rank &&
                 (co.offset_ns > co.spread_ns || -co.offset_ns > co.spread_ns);
    ra.clock_offsets.push_back(co);
  }
}

// What a collective's row takes from its (first) member's record.
CollectiveRow collective_row_of(const CollRecord& a) {
  CollectiveRow row;
  row.group = a.group;
  row.index = a.index;
  row.type = a.type;
  row.called = a.called;
  row.key = a.key;
  row.group_size = a.group_size;
  row.bytes = a.bytes;
  row.dtype = a.dtype;
  row.algorithm = a.algorithm;
  return row;
}

// A matched collective on the aligned clock: latency, skews, bandwidths; and per (rank,
// iteration) the waits at it and who arrived last (ra.straggler_acc).
CollectiveRow matched_collective_row(const std::vector<const CollRecord*>& m, RunAnalysis& ra) {
  CollectiveRow row = collective_row_of(*m[0]);
  row.ranks = static_cast<int64_t>(m.size());
  Ns s_min = INT64_MAX, s_max = INT64_MIN, e_min = INT64_MAX, e_max = INT64_MIN;
  Ns lat = INT64_MAX, dmax = 0;
  double bsum = 0, bmax = 0;
  for (const CollRecord* c : m) {
    const Ns off = clock_offset(ra, c->rank);
    const Ns s = c->start_ns - off, e = c->end_ns - off;
    if (s < s_min) s_min = s, row.first_rank = c->rank;
    if (s > s_max) s_max = s, row.last_rank = c->rank;
    e_min = std::min(e_min, e);
    e_max = std::max(e_max, e);
    lat = std::min(lat, e - s);
    dmax = std::max(dmax, e - s);
    bsum += static_cast<double>(std::max<int64_t>(0, c->in_bytes));
    bmax = std::max(bmax, static_cast<double>(c->in_bytes));
  }
  row.start_ns = s_min;
  row.latency_ns = lat;
  row.max_dur_ns = dmax;
  row.arrival_skew_ns = s_max - s_min;
  row.end_skew_ns = e_max - e_min;
  const CollType kind = row.called != CollType::kUnknown ? row.called : row.type;
  const int64_t n = row.group_size > 0 ? row.group_size : row.ranks;
  if (row.bytes > 0 && lat > 0) {
    row.algbw_gbs = static_cast<double>(row.bytes) / static_cast<double>(lat);  // B/ns = GB/s
    row.busbw_gbs = row.algbw_gbs * busbw_factor(kind, n);
  }
  if (kind == CollType::kAllToAll && bsum > 0)
    row.imbalance = bmax / (bsum / static_cast<double>(m.size()));
  for (const CollRecord* c : m) {
    StragglerRow& sr = ra.straggler_acc[{c->rank, c->key.iteration}];
    ++sr.collectives;
    sr.coll_wait_ns += s_max - (c->start_ns - clock_offset(ra, c->rank));
    sr.arrived_last += c->rank == row.last_rank ? 1 : 0;
  }
  return row;
}

// One rank's collective: its duration is the latency (it includes any waiting for the ranks
// not loaded); skews unknown (-1, NULL in the tables); no clock offset (the rank's own clock).
CollectiveRow single_collective_row(const CollRecord& c) {
  CollectiveRow row = collective_row_of(c);
  row.ranks = 1;
  row.start_ns = c.start_ns;
  row.latency_ns = row.max_dur_ns = c.end_ns - c.start_ns;
  row.arrival_skew_ns = row.end_skew_ns = -1;
  row.first_rank = row.last_rank = c.rank;
  const CollType kind = row.called != CollType::kUnknown ? row.called : row.type;
  if (row.bytes > 0 && row.latency_ns > 0) {
    row.algbw_gbs = static_cast<double>(row.bytes) / static_cast<double>(row.latency_ns);
    if (row.group_size > 0) row.busbw_gbs = row.algbw_gbs * busbw_factor(kind, row.group_size);
  }
  return row;
}

}  // namespace

void finalize_collectives(RunAnalysis& ra, const AnalysisOptions& o) {
  const CollMatching cm = match_collectives(ra);
  estimate_clock_offsets(cm, o, ra);
  for (const auto& m : cm.matched) ra.collectives.push_back(matched_collective_row(m, ra));
  for (const CollRecord* c : cm.singles) ra.collectives.push_back(single_collective_row(*c));
  std::sort(ra.collectives.begin(), ra.collectives.end(),
            [](const CollectiveRow& x, const CollectiveRow& y) {
              return std::tie(x.start_ns, x.group, x.index) <
                     std::tie(y.start_ns, y.group, y.index);
            });
}

}  // namespace chopper
