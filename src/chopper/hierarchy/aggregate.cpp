#include "chopper/hierarchy/aggregate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>

#include "chopper/base/error.hpp"
#include "chopper/base/flat_index.hpp"
#include "chopper/base/sort.hpp"

namespace chopper {

std::vector<Level> parse_levels(std::string_view csv) {
  std::vector<Level> out;
  size_t pos = 0;
  while (pos <= csv.size()) {
    size_t end = csv.find(',', pos);
    if (end == std::string_view::npos) end = csv.size();
    const std::string_view w = csv.substr(pos, end - pos);
    Level l{};
    if (!parse_enum(w, l))
      throw Error(
          fmt::format("unknown level '{}' (expected gpu, iteration, phase, layer, operation)", w));
    if (std::find(out.begin(), out.end(), l) != out.end())
      throw Error(fmt::format("level '{}' given twice", w));
    out.push_back(l);
    pos = end + 1;
  }
  return out;
}

namespace {

struct Key {
  int64_t rank;
  int64_t iteration;
  int32_t device;
  int32_t layer;
  StrId operation;
  Phase phase;
  bool operator==(const Key& o) const {
    return rank == o.rank && device == o.device && iteration == o.iteration && phase == o.phase &&
           layer == o.layer && operation == o.operation;
  }
  bool operator<(const Key& o) const {
    return std::tie(rank, device, iteration, phase, layer, operation) <
           std::tie(o.rank, o.device, o.iteration, o.phase, o.layer, o.operation);
  }
  size_t hash() const {
    uint64_t h = static_cast<uint64_t>(rank) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(device) + 0x7F4A7C15ull + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(iteration) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(phase) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(layer) + (h << 6) + (h >> 2);
    h ^= static_cast<uint64_t>(operation) + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};
struct KeyHash {
  size_t operator()(const Key& k) const { return k.hash(); }
};

constexpr size_t kClasses = static_cast<size_t>(OpClass::kSync) + 1;

struct Acc {
  uint64_t count = 0;
  Ns kernel_ns = 0, busy_ns = 0;
  Ns first = INT64_MAX, last = INT64_MIN;
  Ns cur_end = INT64_MIN;  // union sweep (activities arrive in start order, per GPU)
  // Kernel time by op class (operation groupings only): one class inline, the usual case; from
  // the second class on, every class's time in the row `more` of Groups::by_class_.
  Ns cls_ns = 0;
  int32_t more = -1;
  OpClass cls = OpClass::kNone;
  bool has_cls = false;
};

struct Grouping {
  bool by_gpu, by_iter, by_phase, by_layer, by_op;
  explicit Grouping(std::span<const Level> levels) {
    auto has = [&](Level l) { return std::find(levels.begin(), levels.end(), l) != levels.end(); };
    by_gpu = has(Level::kGpu);
    by_iter = has(Level::kIteration);
    by_phase = has(Level::kPhase);
    by_layer = has(Level::kLayer);
    by_op = has(Level::kOperation);
  }
};

// The groups of one grouping: their keys in a FlatIndex, their accumulators in an array by id.
class Groups {
 public:
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  // Room for n groups without growing.
  void reserve(size_t n) {
    index_.reserve(n);
    accs_.reserve(n);
  }

  Acc& at(const Key& k) {
    bool fresh = false;
    const uint32_t i = index_.id(k, &fresh);
    if (fresh) accs_.emplace_back();
    return accs_[i];
  }

  // Adds d ns of class c to a's time by class.
  void add_class(Acc& a, OpClass c, Ns d) {
    if (a.more < 0) {
      if (!a.has_cls || a.cls == c) {
        a.has_cls = true;
        a.cls = c;
        a.cls_ns += d;
        return;
      }
      a.more = static_cast<int32_t>(by_class_.size());
      by_class_.emplace_back();
      by_class_.back()[static_cast<size_t>(a.cls)] = a.cls_ns;
    }
    by_class_[static_cast<size_t>(a.more)][static_cast<size_t>(c)] += d;
  }
  // The class with the most kernel time (the lowest of a tie; kNone if no time at all).
  OpClass dominant(const Acc& a) const {
    if (a.more < 0) return a.cls_ns > 0 ? a.cls : OpClass::kNone;
    const auto& bc = by_class_[static_cast<size_t>(a.more)];
    size_t best = 0;
    for (size_t c = 1; c < kClasses; ++c)
      if (bc[c] > bc[best]) best = c;
    return static_cast<OpClass>(best);
  }

  // Adds every group of `from` (classes included), under its key with rank and device cleared
  // when `drop_gpu`.
  void merge(const Groups& from, bool drop_gpu) {
    for (size_t i = 0; i < from.size(); ++i) {
      Key k = from.index_.key(i);
      if (drop_gpu) {
        k.rank = -1;
        k.device = -1;
      }
      const Acc& src = from.accs_[i];
      Acc& dst = at(k);
      dst.count += src.count;
      dst.kernel_ns += src.kernel_ns;
      dst.busy_ns += src.busy_ns;
      dst.first = std::min(dst.first, src.first);
      dst.last = std::max(dst.last, src.last);
      if (src.more >= 0) {
        const auto& bc = from.by_class_[static_cast<size_t>(src.more)];
        for (size_t c = 0; c < kClasses; ++c)
          if (bc[c] != 0) add_class(dst, static_cast<OpClass>(c), bc[c]);
      } else if (src.has_cls) {
        add_class(dst, src.cls, src.cls_ns);
      }
    }
  }

  // The groups' rows in key order.
  std::vector<AggRow> sorted_rows(bool by_op) const {
    std::vector<std::pair<Key, uint32_t>> sorted;
    sorted.reserve(size());
    for (size_t i = 0; i < size(); ++i) sorted.emplace_back(index_.key(i), i);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<AggRow> rows;
    rows.reserve(sorted.size());
    for (const auto& [k, i] : sorted) {
      const Acc& acc = accs_[i];
      AggRow& r = rows.emplace_back();
      r.rank = k.rank;
      r.device = k.device;
      r.iteration = k.iteration;
      r.phase = k.phase;
      r.layer = k.layer;
      r.operation = k.operation;
      r.count = acc.count;
      r.kernel_ns = acc.kernel_ns;
      r.busy_ns = acc.busy_ns;
      r.first_start_ns = acc.first;
      r.last_end_ns = acc.last;
      if (by_op) r.op_class = dominant(acc);
    }
    return rows;
  }

 private:
  FlatIndex<Key, KeyHash> index_;
  std::vector<Acc> accs_;
  std::vector<std::array<Ns, kClasses>> by_class_;
};

// Aggregates one grouping per entry of `groupings` over every readable rank, in run.ranks order
// (which also orders operation ids: first seen, first interned). A grouping by GPU has keys of one
// rank only, so its groups become rows as soon as the slots of that rank are done, and only one
// rank's groups are held at a time (unless a rank's slots are not adjacent: then at the end). The
// other groupings merge every rank's groups into one table of groups.
std::vector<Aggregation> aggregate_groupings(std::span<const RankSlot> ranks,
                                             const std::vector<std::vector<Level>>& groupings,
                                             std::shared_ptr<StringTable> strings) {
  if (!strings) strings = std::make_shared<StringTable>();
  const size_t n_groupings = groupings.size();
  std::vector<Grouping> gr;
  for (const auto& g : groupings) gr.emplace_back(g);
  // Per grouping: the groups of the rank being read (by GPU) or of every rank (otherwise).
  std::vector<Groups> total(n_groupings);
  // Per grouping by GPU: the finished rows, one chunk per rank, in run.ranks order.
  std::vector<std::vector<std::vector<AggRow>>> chunks(n_groupings);
  auto flush = [&] {
    for (size_t q = 0; q < n_groupings; ++q) {
      if (!gr[q].by_gpu || total[q].empty()) continue;
      chunks[q].push_back(total[q].sorted_rows(gr[q].by_op));
      total[q] = Groups();
    }
  };
  std::vector<const RankSlot*> slots;
  for (const RankSlot& slot : ranks)
    if (slot.ok && slot.trace.labelled()) slots.push_back(&slot);
  bool adjacent = true;  // every rank's slots in one run
  {
    std::vector<int64_t> starts;
    for (size_t i = 0; i < slots.size(); ++i)
      if (i == 0 || slots[i]->rank != slots[i - 1]->rank) starts.push_back(slots[i]->rank);
    std::sort(starts.begin(), starts.end());
    adjacent = std::adjacent_find(starts.begin(), starts.end()) == starts.end();
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    const RankSlot& slot = *slots[i];
    if (adjacent && i > 0 && slot.rank != slots[i - 1]->rank) flush();
    const RankTrace& t = slot.trace;
    const GpuActivities& g = t.gpu;
    std::vector<StrId> op_map(t.strings.size(), UINT32_MAX);
    // Busy time is a union on one GPU: per GPU of this rank, in start order.
    std::vector<uint32_t> order;
    order.reserve(g.size());
    for (size_t a = 0; a < g.size(); ++a)
      if (g.kind[a] != GpuKind::kSync) order.push_back(static_cast<uint32_t>(a));  // waits
    sort_by_runs(order, [&](uint32_t a, uint32_t b) {  // nearly in order already
      if (g.device[a] != g.device[b]) return g.device[a] < g.device[b];
      if (g.start_ns[a] != g.start_ns[b]) return g.start_ns[a] < g.start_ns[b];
      return a < b;
    });
    for (size_t q = 0; q < n_groupings; ++q) {
      const Grouping& G = gr[q];
      Groups local;
      // By operation, nearly every activity is a group of its own (1.2 per group on a
      // synthetic Llama rank).
      if (G.by_op) local.reserve(order.size());
      for (uint32_t a : order) {
        StrId op = 0;
        if (G.by_op && g.operation[a] != 0) {
          StrId& m = op_map[g.operation[a]];
          if (m == UINT32_MAX) m = strings->intern(t.strings.str(g.operation[a]));
          op = m;
        }
        Key k;
        k.rank = slot.rank;
        k.device = g.device[a];
        k.iteration = G.by_iter ? g.iteration[a] : kNoId;
        k.phase = G.by_phase ? g.phase[a] : Phase::kNone;
        k.layer = G.by_layer ? g.layer[a] : -1;
        k.operation = op;
        Acc& acc = local.at(k);
        const Ns s = g.start_ns[a], e = s + g.dur_ns[a];
        ++acc.count;
        acc.kernel_ns += g.dur_ns[a];
        acc.first = std::min(acc.first, s);
        acc.last = std::max(acc.last, e);
        if (s >= acc.cur_end) {
          acc.busy_ns += e - s;
          acc.cur_end = e;
        } else if (e > acc.cur_end) {
          acc.busy_ns += e - acc.cur_end;
          acc.cur_end = e;
        }
        if (G.by_op) local.add_class(acc, g.op_class[a], g.dur_ns[a]);
      }
      if (G.by_gpu && total[q].empty()) {  // the rank's first slot: its groups as they are
        total[q] = std::move(local);
        continue;
      }
      total[q].merge(local, !G.by_gpu);
    }
  }
  flush();
  std::vector<Aggregation> out(n_groupings);
  for (size_t q = 0; q < n_groupings; ++q) {
    Aggregation& ag = out[q];
    ag.levels = groupings[q];
    ag.strings = strings;
    if (!gr[q].by_gpu) {
      ag.rows = total[q].sorted_rows(gr[q].by_op);
      continue;
    }
    // Chunks in rank order (unknown ranks, -1, come last in run.ranks but first by key).
    auto& ch = chunks[q];
    std::stable_sort(ch.begin(), ch.end(),
                     [](const auto& a, const auto& b) { return a.front().rank < b.front().rank; });
    size_t n = 0;
    for (const auto& c : ch) n += c.size();
    ag.rows.reserve(n);
    for (auto& c : ch) {
      ag.rows.insert(ag.rows.end(), c.begin(), c.end());
      std::vector<AggRow>().swap(c);
    }
  }
  return out;
}

}  // namespace

Aggregation aggregate(const Run& run, std::span<const Level> levels,
                      std::shared_ptr<StringTable> strings) {
  return std::move(aggregate_groupings(
      run.ranks, {std::vector<Level>(levels.begin(), levels.end())}, std::move(strings))[0]);
}

std::vector<Aggregation> aggregate_prefixes(const Run& run, std::span<const Level> levels,
                                            std::shared_ptr<StringTable> strings) {
  return aggregate_prefixes(std::span<const RankSlot>(run.ranks), levels, std::move(strings));
}

std::vector<Aggregation> aggregate_prefixes(std::span<const RankSlot> ranks,
                                            std::span<const Level> levels,
                                            std::shared_ptr<StringTable> strings) {
  std::vector<std::vector<Level>> g;
  for (size_t k = 1; k <= levels.size(); ++k) g.emplace_back(levels.begin(), levels.begin() + k);
  return aggregate_groupings(ranks, g, std::move(strings));
}

AggKey key_upto(const AggRow& r, const std::vector<Level>& levels, size_t k) {
  AggKey p{-1, -1, kNoId, Phase::kNone, -1, 0};
  for (size_t i = 0; i < k && i < levels.size(); ++i) switch (levels[i]) {
      case Level::kGpu:
        std::get<0>(p) = r.rank;
        std::get<1>(p) = r.device;
        break;
      case Level::kIteration:
        std::get<2>(p) = r.iteration;
        break;
      case Level::kPhase:
        std::get<3>(p) = r.phase;
        break;
      case Level::kLayer:
        std::get<4>(p) = r.layer;
        break;
      case Level::kOperation:
        std::get<5>(p) = r.operation;
        break;
    }
  return p;
}

std::vector<CoverageRow> label_coverage(const Run& run) {
  return label_coverage(std::span<const RankSlot>(run.ranks));
}

std::vector<CoverageRow> label_coverage(std::span<const RankSlot> ranks) {
  std::vector<CoverageRow> out;
  for (const RankSlot& slot : ranks) {
    if (!slot.ok || !slot.trace.labelled()) continue;
    const RankTrace& t = slot.trace;
    const GpuActivities& g = t.gpu;
    const size_t none = t.label_rules.size();  // the "no label" slot
    struct Level_ {
      const char* name;
      const std::vector<uint16_t>* rule;
    };
    const Level_ lv[] = {{"iteration", &g.iteration_rule},
                         {"phase", &g.phase_rule},
                         {"layer", &g.layer_rule},
                         {"operation", &g.operation_rule},
                         {"op_class", &g.op_class_rule}};
    // Whether activity a has a label at level l (a rule may be set with no label: a rule that
    // clears the layer).
    auto labelled = [&](size_t l, size_t a) {
      switch (l) {
        case 0:
          return g.iteration[a] != kNoId;
        case 1:
          return g.phase[a] != Phase::kNone;
        case 2:
          return g.layer[a] >= 0;
        case 3:
          return g.operation[a] != 0;
        default:
          return g.op_class[a] != OpClass::kNone;
      }
    };
    for (const char* scope : {"all", "in_iterations"}) {
      const bool in_it = std::string_view(scope) == "in_iterations";
      Ns scope_ns = 0;
      for (size_t a = 0; a < g.size(); ++a)
        if (g.kind[a] != GpuKind::kSync && (!in_it || g.iteration[a] != kNoId))
          scope_ns += g.dur_ns[a];
      for (size_t l = in_it ? 1 : 0; l < std::size(lv); ++l) {
        std::vector<std::pair<uint64_t, Ns>> by_rule(none + 1);
        for (size_t a = 0; a < g.size(); ++a) {
          if (g.kind[a] == GpuKind::kSync || (in_it && g.iteration[a] == kNoId)) continue;
          const uint16_t r = (*lv[l].rule)[a];
          auto& e = by_rule[labelled(l, a) && r < none ? r : none];
          ++e.first;
          e.second += g.dur_ns[a];
        }
        // Rows in rule-name order, "" (no label) first.
        std::vector<std::pair<std::string_view, size_t>> rows;
        for (size_t r = 0; r <= none; ++r)
          if (by_rule[r].first > 0)
            rows.emplace_back(r == none ? std::string_view() : t.label_rules[r], r);
        std::sort(rows.begin(), rows.end());
        for (const auto& [rule, r] : rows)
          out.push_back({slot.rank, lv[l].name, scope, std::string(rule), by_rule[r].first,
                         by_rule[r].second, scope_ns});
      }
    }
  }
  return out;
}

double coverage_share(const std::vector<CoverageRow>& rows, std::string_view level,
                      std::string_view scope, int64_t rank) {
  Ns labelled = 0, total = 0;
  std::map<int64_t, Ns> scope_total;
  for (const CoverageRow& r : rows) {
    if (r.level != level || r.scope != scope || (rank != -1 && r.rank != rank)) continue;
    if (!r.rule.empty()) labelled += r.kernel_ns;
    scope_total[r.rank] = r.scope_kernel_ns;
  }
  for (const auto& [rk, v] : scope_total) total += v;
  return total == 0 ? 1.0 : static_cast<double>(labelled) / static_cast<double>(total);
}

}  // namespace chopper
