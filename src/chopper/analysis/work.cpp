// The work of the GPU time: GPU time by kernel name, operation and shape class with the FLOPs and
// bytes of compute kernels (the top kernels and operations, the roofline), kernel durations per
// rank and class in log-spaced bins (the violins), hardware counters per operation. Formulas:
// docs/metrics.md, "Top kernels, roofline and kernel durations".
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "chopper/analysis/flops.hpp"
#include "chopper/analysis/parts.hpp"

namespace chopper {

namespace {

// The recorded shapes on one line (some traces pretty-print them over many).
std::string one_line(std::string_view v) {
  std::string flat;
  for (char ch : v)
    if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') flat += ch;
  return flat;
}

bool matrix_cost(CostFamily f) {
  return f == CostFamily::kGemm || f == CostFamily::kAttentionFwd ||
         f == CostFamily::kAttentionBwd || f == CostFamily::kConv;
}

// The rows of one level, by key, in first-seen order.
template <class K>
struct Rows {
  std::unordered_map<K, size_t> index;
  std::vector<WorkRow> rows;
  WorkRow& at(const K& k, bool& fresh) {
    auto [it, added] = index.try_emplace(k, rows.size());
    fresh = added;
    if (added) rows.emplace_back();
    return rows[it->second];
  }
};

void add_time(WorkRow& r, Ns d) {
  ++r.count;
  r.total_ns += d;
}

void add_work(WorkRow& r, Ns d, double flops, double bytes) {
  r.known_ns += d;
  r.flops += flops;
  r.bytes += bytes;
}

// The duration bin of `d` (docs/metrics.md): floor(log10(d) × bins per decade), 0 below 1 ns.
int32_t duration_bin(Ns d) {
  if (d < 1) return 0;
  return static_cast<int32_t>(
      std::floor(std::log10(static_cast<double>(d)) * kDurationBinsPerDecade));
}

}  // namespace

std::string shape_class_name(const RankTrace& t, int32_t op, const OpCost& oc) {
  const InputShapes& sh = t.shapes_of(static_cast<size_t>(op));
  return fmt::format("{} {} {} {}", cost_family_name(oc.family), t.strings.str(t.host.name[op]),
                     one_line(t.strings.str(sh.input_dims)),
                     one_line(t.strings.str(sh.input_types)));
}

void work_partial(const RankContext& c, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  const HostOps& h = c.t.host;
  const bool labelled = g.iteration.size() == g.size();
  // Per host op: its compute kernels' time (a kernel's share of the op's cost is its share of it).
  std::unordered_map<int32_t, Ns> op_dur;
  for (int32_t i : c.order)
    if (g.cls[i] == GpuClass::kCompute && g.host_op_idx[i] >= 0)
      op_dur[g.host_op_idx[i]] += g.dur_ns[i];
  struct Work {
    OpCost cost;
    size_t shape_row = SIZE_MAX;
  };
  std::map<std::array<StrId, 4>, Work> memo;
  Rows<StrId> kernels, ops;
  Rows<std::string> shapes;
  std::map<std::pair<std::string_view, int32_t>, DurationBin> bins;
  for (int32_t i : c.order) {
    const Ns d = g.dur_ns[i];
    bool fresh = false;
    WorkRow& k = kernels.at(g.name[i], fresh);
    if (fresh) k.group = std::string(gpu_class_name(g.cls[i]));
    add_time(k, d);
    WorkRow* o = nullptr;
    if (labelled && g.operation[i] != 0) {
      o = &ops.at(g.operation[i], fresh);
      if (fresh) o->group = std::string(op_class_name(g.op_class[i]));
      add_time(*o, d);
    }
    const OpClass oc = c.op_class(i);
    const std::string_view cls =
        oc != OpClass::kNone ? op_class_name(oc) : gpu_class_name(g.cls[i]);
    DurationBin& b = bins[{cls, duration_bin(d)}];
    ++b.kernels;
    b.total_ns += d;
    const int32_t op = g.host_op_idx[i];
    if (g.cls[i] != GpuClass::kCompute || d <= 0 || op < 0 || static_cast<size_t>(op) >= h.size())
      continue;
    const InputShapes& sh = c.t.shapes_of(static_cast<size_t>(op));
    auto [it, added] =
        memo.try_emplace({h.name[op], sh.input_dims, sh.input_types, sh.concrete_inputs});
    Work& w = it->second;
    if (added)
      w.cost = op_cost(c.t.strings.str(h.name[op]), c.t.strings.str(sh.input_dims),
                       c.t.strings.str(sh.input_types), c.t.strings.str(sh.concrete_inputs));
    if (!w.cost.known() || (w.cost.flops <= 0 && w.cost.bytes <= 0)) continue;
    const double share = static_cast<double>(d) / static_cast<double>(op_dur[op]);
    const double fl = w.cost.flops * share, by = w.cost.bytes * share;
    add_work(k, d, fl, by);
    if (o != nullptr) add_work(*o, d, fl, by);
    if (w.shape_row == SIZE_MAX) {
      const std::string name = shape_class_name(c.t, op, w.cost);
      WorkRow& s = shapes.at(name, fresh);
      if (fresh) s.group = std::string(cost_family_name(w.cost.family));
      w.shape_row = shapes.index[name];
    }
    WorkRow& s = shapes.rows[w.shape_row];
    add_time(s, d);
    add_work(s, d, fl, by);
  }
  auto take = [&out](auto& rows, const char* level, auto&& name_of) {
    for (auto& [key, at] : rows.index) {
      WorkRow& r = rows.rows[at];
      r.level = level;
      r.name = name_of(key);
    }
    for (WorkRow& r : rows.rows) out.work.push_back(std::move(r));
  };
  take(kernels, "kernel", [&c](StrId id) { return std::string(c.t.strings.str(id)); });
  take(ops, "operation", [&c](StrId id) { return std::string(c.t.strings.str(id)); });
  take(shapes, "shape_class", [](const std::string& s) { return s; });
  for (auto& [key, b] : bins) {
    b.rank = c.rank;
    b.kernel_class = std::string(key.first);
    b.bin = key.second;
    out.durations.push_back(std::move(b));
  }
}

void counter_partial(const RankContext& c, double matrix_units, RankAnalysis& out) {
  const GpuActivities& g = c.t.gpu;
  const bool labelled = g.iteration.size() == g.size();
  std::map<std::string_view, CounterOpRow> by_op;
  for (const KernelHw& k : out.kernel_hw) {
    const bool busy =
        matrix_units > 0 && !std::isnan(k.matrix_busy_cycles) && !std::isnan(k.active_cycles);
    const bool mat = !std::isnan(k.matrix_flops), vec = !std::isnan(k.vector_flops);
    const bool clk = !std::isnan(k.counter_clock_mhz);
    if (std::isnan(k.active_cycles) && std::isnan(k.matrix_busy_cycles) && !mat && !vec) continue;
    const size_t i = static_cast<size_t>(k.row);
    const std::string_view op =
        labelled && g.operation[i] != 0 ? c.t.strings.str(g.operation[i]) : std::string_view();
    CounterOpRow& r = by_op[op];
    if (r.kernels == 0) r.op_class = std::string(op_class_name(c.op_class(i)));
    const Ns d = g.dur_ns[i];
    ++r.kernels;
    r.dur_ns += d;
    if (busy)
      r.matrix_busy_cycles += k.matrix_busy_cycles,
          r.busy_active_cycles += k.active_cycles * matrix_units;
    if (mat) r.matrix_flops += k.matrix_flops, r.matrix_dur_ns += d;
    if (vec) r.vector_flops += k.vector_flops, r.vector_dur_ns += d;
    if (clk) r.clock_cycles += k.active_cycles, r.clock_dur_ns += d;
  }
  for (auto& [op, r] : by_op) {
    r.operation = std::string(op);
    out.counter_ops.push_back(std::move(r));
  }
}

void finalize_work(RunAnalysis& ra, const AnalysisOptions& o) {
  std::map<std::pair<std::string, std::string>, WorkRow> all;  // (level, name)
  std::map<std::string, CounterOpRow> counters;
  Ns gpu_time = 0;
  for (RankAnalysis& r : ra.ranks) {
    if (!r.ok) continue;
    gpu_time += r.gpu_time_ns;
    for (WorkRow& w : r.work) {
      WorkRow& a = all[{w.level, w.name}];
      if (a.count == 0 && a.level.empty()) {
        a = std::move(w);
        continue;
      }
      a.count += w.count;
      a.total_ns += w.total_ns;
      add_work(a, w.known_ns, w.flops, w.bytes);
    }
    r.work.clear();
    r.work.shrink_to_fit();
    for (DurationBin& b : r.durations) ra.durations.push_back(std::move(b));
    r.durations.clear();
    r.durations.shrink_to_fit();
    for (CounterOpRow& x : r.counter_ops) {
      CounterOpRow& a = counters[x.operation];
      if (a.kernels == 0) a.operation = x.operation, a.op_class = x.op_class;
      a.kernels += x.kernels;
      a.dur_ns += x.dur_ns;
      a.matrix_busy_cycles += x.matrix_busy_cycles;
      a.busy_active_cycles += x.busy_active_cycles;
      a.matrix_flops += x.matrix_flops;
      a.matrix_dur_ns += x.matrix_dur_ns;
      a.vector_flops += x.vector_flops;
      a.vector_dur_ns += x.vector_dur_ns;
      a.clock_cycles += x.clock_cycles;
      a.clock_dur_ns += x.clock_dur_ns;
    }
    r.counter_ops.clear();
  }
  std::map<std::string, std::vector<WorkRow>> levels;
  for (auto& [key, w] : all) {
    w.share = gpu_time > 0 ? static_cast<double>(w.total_ns) / static_cast<double>(gpu_time) : 0;
    if (w.level == "shape_class" && ra.device != nullptr) {
      CostFamily f = CostFamily::kNone;
      const bool matrix = parse_enum(w.group, f) && matrix_cost(f);
      w.peak_tflops = matrix ? ra.device->matrix_tflops(o.dtype) : ra.device->vector_tflops_fp32;
      w.peak_tbs = ra.device->mem_bw_gbs * 1e-3;
    }
    levels[w.level].push_back(std::move(w));
  }
  for (const char* level : {"kernel", "operation", "shape_class"}) {
    std::vector<WorkRow>& v = levels[level];
    std::sort(v.begin(), v.end(), [](const WorkRow& a, const WorkRow& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (std::string_view(level) != "shape_class" && v.size() > o.top_n) v.resize(o.top_n);
    for (WorkRow& w : v) ra.work.push_back(std::move(w));
  }
  std::sort(
      ra.durations.begin(), ra.durations.end(), [](const DurationBin& a, const DurationBin& b) {
        return std::tie(a.rank, a.kernel_class, a.bin) < std::tie(b.rank, b.kernel_class, b.bin);
      });
  for (auto& [op, x] : counters) ra.counter_ops.push_back(std::move(x));
  std::sort(ra.counter_ops.begin(), ra.counter_ops.end(),
            [](const CounterOpRow& a, const CounterOpRow& b) {
              return a.dur_ns != b.dur_ns ? a.dur_ns > b.dur_ns : a.operation < b.operation;
            });
}

}  // namespace chopper
