// The merged all-rank timeline (timeline.hpp): the writer, and its Chrome trace JSON encoder.
#include "chopper/report/timeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <map>
#include <unordered_map>

#include "chopper/base/error.hpp"
#include "chopper/base/json_out.hpp"
#include "chopper/model/rank_trace.hpp"

namespace chopper {
namespace {

constexpr int64_t kHierarchyTid = 0;
constexpr int64_t kStreamTid0 = 10;       // GPU streams: 10, 11, ...
constexpr int64_t kHostTid0 = 1000000;    // host threads: 1000000 + thread index
constexpr size_t kFlushBytes = 4u << 20;  // per-rank text handed to the file in pieces

bool in_ranges(const std::vector<std::pair<int64_t, int64_t>>& r, int64_t v) {
  if (r.empty()) return true;
  for (const auto& [a, b] : r)
    if (v >= a && v <= b) return true;
  return false;
}

Ns offset_of(const RunAnalysis& ra, int64_t rank) {
  for (const ClockOffset& c : ra.clock_offsets)
    if (c.rank == rank) return c.applied ? c.offset_ns : 0;
  return 0;
}

// Event text, comma-separated, handed to the file when large.
class Events {
 public:
  explicit Events(OutputFile& f) : f_(f) {}
  std::string& next() {
    s_ += first_ ? "\n" : ",\n";
    first_ = false;
    return s_;
  }
  std::string& text() { return s_; }
  void maybe_flush() {
    if (s_.size() >= kFlushBytes) flush();
  }
  void flush() {
    f_.write(s_);
    s_.clear();
  }

 private:
  OutputFile& f_;
  std::string s_;
  bool first_ = true;
};

// µs with three decimals (exact ns), from a time relative to the base.
void put_us(std::string& s, Ns rel) {
  const bool neg = rel < 0;
  const uint64_t a = neg ? static_cast<uint64_t>(-(rel + 1)) + 1 : static_cast<uint64_t>(rel);
  fmt::format_to(std::back_inserter(s), "{}{}.{:03d}", neg ? "-" : "", a / 1000,
                 static_cast<int>(a % 1000));
}

void meta(Events& e, const char* what, int64_t pid, int64_t tid, std::string_view key,
          std::string_view value) {
  std::string& s = e.next();
  fmt::format_to(std::back_inserter(s), "{{\"ph\":\"M\",\"name\":\"{}\",\"pid\":{},\"tid\":{},",
                 what, pid, tid);
  s += "\"args\":{\"";
  s += key;
  s += "\":";
  s += value;
  s += "}}";
}

// The Chrome trace JSON encoder.
class JsonSink : public TimelineSink {
 public:
  explicit JsonSink(OutputFile& f) : f_(f), ev_(f) {}

  void begin(Ns base_ns, const std::vector<std::pair<int64_t, Ns>>& offsets,
             const std::vector<TimelineCollective>&) override {
    base_ = base_ns;
    std::string head = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"chopper timeline\",";
    head +=
        "\"clock\":\"aligned: each rank's clock offset (clock_offsets) subtracted; ts 0 = "
        "base_ns\"";
    fmt::format_to(std::back_inserter(head), ",\"base_ns\":{},\"offsets_ns\":{{", base_ns);
    for (size_t k = 0; k < offsets.size(); ++k)
      fmt::format_to(std::back_inserter(head), "{}\"{}\":{}", k ? "," : "", offsets[k].first,
                     offsets[k].second);
    head += "}},\"traceEvents\":[";
    f_.write(head);
  }
  void process(int64_t rank, std::string_view name) override {
    meta(ev_, "process_name", rank, 0, "name", json_string(name));
    meta(ev_, "process_sort_index", rank, 0, "sort_index", std::to_string(rank));
  }
  void thread(int64_t rank, int64_t tid, std::string_view name) override {
    meta(ev_, "thread_name", rank, tid, "name", json_string(name));
    meta(ev_, "thread_sort_index", rank, tid, "sort_index", std::to_string(tid));
  }
  void slice(int64_t rank, int64_t tid, Ns ts, Ns dur, std::string_view name, std::string_view cat,
             std::span<const TimelineArg> args) override {
    std::string& s = ev_.next();
    fmt::format_to(std::back_inserter(s), "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":", rank,
                   tid);
    put_us(s, ts - base_);
    s += ",\"dur\":";
    put_us(s, dur);
    s += ",\"name\":";
    append_json_string(s, name);
    s += ",\"cat\":";
    append_json_string(s, cat);
    if (!args.empty()) {
      s += ",\"args\":{";
      for (size_t k = 0; k < args.size(); ++k) {
        fmt::format_to(std::back_inserter(s), "{}\"{}\":", k ? "," : "", args[k].key);
        if (args[k].text)
          append_json_string(s, args[k].s);
        else
          fmt::format_to(std::back_inserter(s), "{}", args[k].i);
      }
      s += "}";
    }
    s += "}";
    ev_.maybe_flush();
  }
  void launch(int64_t rank, uint64_t id, int64_t host_tid, Ns host_ts, int64_t gpu_tid,
              Ns gpu_ts) override {
    std::string& a = ev_.next();
    fmt::format_to(std::back_inserter(a),
                   "{{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":{},\"pid\":{},"
                   "\"tid\":{},\"ts\":",
                   id, rank, host_tid);
    put_us(a, host_ts - base_);
    a += "}";
    std::string& b = ev_.next();
    fmt::format_to(std::back_inserter(b),
                   "{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":{},"
                   "\"pid\":{},\"tid\":{},\"ts\":",
                   id, rank, gpu_tid);
    put_us(b, gpu_ts - base_);
    b += "}";
    ev_.maybe_flush();
  }
  void counter(int64_t rank, std::string_view name, Ns ts, double value) override {
    std::string& s = ev_.next();
    fmt::format_to(std::back_inserter(s), "{{\"ph\":\"C\",\"pid\":{},\"name\":\"{}\",\"ts\":", rank,
                   name);
    put_us(s, ts - base_);
    fmt::format_to(std::back_inserter(s), ",\"args\":{{\"{}\":{}}}}}", name, value);
    ev_.maybe_flush();
  }
  void end_rank(int64_t) override { ev_.flush(); }
  void collective(uint64_t id, const TimelineCollective& c) override {
    for (size_t k = 0; k < c.members.size(); ++k) {
      const TimelineFlowEnd& m = c.members[k];
      const char* ph = k == 0 ? "s" : k + 1 == c.members.size() ? "f" : "t";
      std::string& s = ev_.next();
      fmt::format_to(std::back_inserter(s), "{{\"ph\":\"{}\",\"cat\":\"collective\",\"name\":", ph);
      append_json_string(s, c.name);
      fmt::format_to(std::back_inserter(s),
                     ",\"id\":{},\"pid\":{},\"tid\":{},\"bp\":\"e\",\"ts\":", id, m.rank, m.tid);
      put_us(s, m.ts - base_);
      s += "}";
      ev_.maybe_flush();
    }
  }
  void end() override {
    ev_.flush();
    f_.write("\n]}\n");
  }

 private:
  OutputFile& f_;
  Events ev_;
  Ns base_ = 0;
};

struct RankSel {
  const TimelineRank* in = nullptr;
  int64_t rank = -1;
  Ns off = 0;
  std::vector<int32_t> rows;  // selected GPU activities, by start
  Ns lo = 0, hi = 0;          // rank clock: the span written
  std::map<std::pair<int32_t, int64_t>, int64_t> stream_tid;
};

struct LevelKey {
  int64_t iteration;
  Phase phase;
  int32_t layer;
  StrId operation;
};

class Writer {
 public:
  Writer(const TimelineOptions& o, TimelineSink& sink, TimelineStats& st)
      : o_(o), sink_(sink), st_(st) {}

  void rank(const RankSel& r) {
    const RankTrace& t = r.in->slot->trace;
    r_ = &r;
    t_ = &t;
    std::string name = fmt::format("rank {}", r.rank);
    if (!t.meta.devices.empty()) name += " (" + t.meta.devices.front().name + ")";
    sink_.process(r.rank, name);
    sink_.thread(r.rank, kHierarchyTid, "hierarchy: iteration > phase > layer > operation");
    for (const auto& [k, tid] : r.stream_tid)
      sink_.thread(r.rank, tid, fmt::format("GPU {} stream {}", k.first, k.second));
    hierarchy();
    gpu();
    if (o_.host) host();
    counters();
    sink_.end_rank(r.rank);
  }

  // Every matched collective's flow through the selected ranks' activities, by (group, index).
  static std::vector<TimelineCollective> collectives(const RunAnalysis& ra,
                                                     const std::vector<RankSel>& sel) {
    // Each selected rank's communication activities by their start on its own clock.
    std::map<int64_t, const RankSel*> by_rank;
    for (const RankSel& r : sel) by_rank[r.rank] = &r;
    std::map<int64_t, std::unordered_map<Ns, int32_t>> at;
    for (const RankSel& r : sel) {
      const GpuActivities& g = r.in->slot->trace.gpu;
      auto& m = at[r.rank];
      for (int32_t i : r.rows)
        if (g.cls[i] == GpuClass::kCommunication) m.emplace(g.start_ns[i], i);
    }
    struct Group {
      CollType type = CollType::kUnknown;
      std::vector<std::pair<int64_t, int32_t>> members;
    };
    std::map<std::pair<std::string, int64_t>, Group> groups;
    for (const RankAnalysis& a : ra.ranks) {
      auto m = at.find(a.rank);
      if (m == at.end()) continue;
      for (const CollRecord& c : a.colls) {
        auto f = m->second.find(c.start_ns);
        if (f == m->second.end()) continue;
        Group& gr = groups[{c.group, c.index}];
        if (gr.members.empty()) gr.type = c.type;
        gr.members.push_back({a.rank, f->second});
      }
    }
    std::vector<TimelineCollective> out;
    for (auto& [key, gr] : groups) {
      if (gr.members.size() < 2) continue;
      std::sort(gr.members.begin(), gr.members.end());
      TimelineCollective c;
      // Named by what it is and its place in its group's sequence: "all_gather #3 (group 0)".
      c.name = fmt::format("{} #{}", coll_type_name(gr.type), key.second);
      if (!key.first.empty()) c.name += fmt::format(" (group {})", key.first);
      for (const auto& [rank, i] : gr.members) {
        const RankSel& r = *by_rank.at(rank);
        const GpuActivities& g = r.in->slot->trace.gpu;
        c.members.push_back(
            {rank, r.stream_tid.at({g.device[i], g.stream[i]}), g.start_ns[i] - r.off});
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  void collective_flows(const std::vector<TimelineCollective>& colls) {
    for (const TimelineCollective& c : colls) {
      sink_.collective(++flow_id_, c);
      ++st_.collective_flows;
    }
  }

 private:
  void slice(int64_t tid, Ns start, Ns dur, std::string_view name, std::string_view cat,
             std::span<const TimelineArg> args = {}) {
    sink_.slice(r_->rank, tid, start - r_->off, dur, name, cat, args);
  }

  LevelKey key(int32_t i) const {
    const GpuActivities& g = t_->gpu;
    return {g.iteration[i], g.phase[i], g.layer[i], g.operation[i]};
  }
  static bool none(const LevelKey& k, int level) {
    switch (level) {
      case 0:
        return k.iteration == kNoId;
      case 1:
        return k.phase == Phase::kNone;
      case 2:
        return k.layer < 0;
      default:
        return k.operation == 0;
    }
  }
  static bool same(const LevelKey& a, const LevelKey& b, int level) {
    switch (level) {
      case 0:
        return a.iteration == b.iteration;
      case 1:
        return a.phase == b.phase;
      case 2:
        return a.layer == b.layer;
      default:
        return a.operation == b.operation;
    }
  }

  // Runs of equal keys at `level` among rows[b, e) (by start), each a slice within [lo, hi),
  // cut at the next run's start; then the next level inside each.
  void nest(const std::vector<int32_t>& rows, size_t b, size_t e, int level, Ns lo, Ns hi) {
    if (level > 3) return;
    const GpuActivities& g = t_->gpu;
    size_t k = b;
    while (k < e) {
      const LevelKey kk = key(rows[k]);
      size_t j = k;
      Ns end = INT64_MIN;
      while (j < e && same(key(rows[j]), kk, level)) {
        end = std::max(end, g.start_ns[rows[j]] + g.dur_ns[rows[j]]);
        ++j;
      }
      Ns s = std::max(lo, g.start_ns[rows[k]]);
      Ns f = std::min(end, hi);
      if (j < e) f = std::min(f, g.start_ns[rows[j]]);
      if (f > s) {
        if (!none(kk, level)) {
          std::string name;
          const char* lv = "operation";
          switch (level) {
            case 0:
              name = fmt::format("iteration {}", kk.iteration), lv = "iteration";
              break;
            case 1:
              name = std::string(phase_name(kk.phase)), lv = "phase";
              break;
            case 2:
              name = fmt::format("layer {}", kk.layer), lv = "layer";
              break;
            default:
              name = std::string(t_->strings.str(kk.operation));
          }
          slice(kHierarchyTid, s, f - s, name, lv);
          ++st_.hierarchy_slices;
        }
        nest(rows, k, j, level + 1, s, f);
      }
      k = j;
    }
  }

  void hierarchy() { nest(r_->rows, 0, r_->rows.size(), 0, INT64_MIN, INT64_MAX); }

  void gpu() {
    const GpuActivities& g = t_->gpu;
    std::vector<TimelineArg> args;
    for (int32_t i : r_->rows) {
      const int64_t tid = r_->stream_tid.at({g.device[i], g.stream[i]});
      args.clear();
      args.push_back(TimelineArg::number("correlation", g.correlation[i]));
      if (g.iteration[i] != kNoId) args.push_back(TimelineArg::number("iteration", g.iteration[i]));
      if (g.phase[i] != Phase::kNone)
        args.push_back(TimelineArg::string("phase", phase_name(g.phase[i])));
      if (g.layer[i] >= 0) args.push_back(TimelineArg::number("layer", g.layer[i]));
      if (g.operation[i] != 0)
        args.push_back(TimelineArg::string("operation", t_->strings.str(g.operation[i])));
      if (g.op_class[i] != OpClass::kNone)
        args.push_back(TimelineArg::string("op_class", op_class_name(g.op_class[i])));
      slice(tid, g.start_ns[i], g.dur_ns[i], t_->strings.str(g.name[i]), gpu_class_name(g.cls[i]),
            args);
      ++st_.gpu_slices;
      if (o_.host && g.runtime_idx[i] >= 0) {
        // The launch flow: from the runtime call (host) to the activity.
        const RuntimeCalls& rt = t_->runtime;
        const int32_t c = g.runtime_idx[i];
        sink_.launch(r_->rank, ++flow_id_, kHostTid0 + rt.thread[c], rt.start_ns[c] - r_->off, tid,
                     g.start_ns[i] - r_->off);
        ++st_.launch_flows;
        used_threads_.push_back(rt.thread[c]);
      }
    }
  }

  bool in_window(Ns s, Ns d) const { return s <= r_->hi && s + d >= r_->lo; }

  void host() {
    const HostOps& h = t_->host;
    for (size_t i = 0; i < h.size(); ++i) {
      if (!in_window(h.start_ns[i], h.dur_ns[i])) continue;
      slice(kHostTid0 + h.thread[i], h.start_ns[i], h.dur_ns[i], t_->strings.str(h.name[i]),
            t_->strings.str(h.category[i]));
      used_threads_.push_back(h.thread[i]);
      ++st_.host_slices;
    }
    const RuntimeCalls& rt = t_->runtime;
    for (size_t i = 0; i < rt.size(); ++i) {
      if (!in_window(rt.start_ns[i], rt.dur_ns[i])) continue;
      const TimelineArg corr[] = {TimelineArg::number("correlation", rt.correlation[i])};
      slice(kHostTid0 + rt.thread[i], rt.start_ns[i], rt.dur_ns[i], t_->strings.str(rt.name[i]),
            rt.driver[i] ? "cuda_driver" : "runtime", corr);
      used_threads_.push_back(rt.thread[i]);
      ++st_.host_slices;
    }
    std::sort(used_threads_.begin(), used_threads_.end());
    used_threads_.erase(std::unique(used_threads_.begin(), used_threads_.end()),
                        used_threads_.end());
    for (int32_t th : used_threads_) {
      const ThreadKey& k = t_->threads.at(static_cast<size_t>(th));
      sink_.thread(r_->rank, kHostTid0 + th, fmt::format("host pid {} tid {}", k.pid, k.tid));
    }
    used_threads_.clear();
  }

  void counters() {
    if (r_->in->hw == nullptr) return;
    const RankHardware& h = *r_->in->hw;
    for (Metric m : {Metric::kPowerW, Metric::kSmClockMhz, Metric::kTempGpuC, Metric::kTempHotspotC,
                     Metric::kTempMemC, Metric::kUtilGpuPct}) {
      if (!h.has(m)) continue;
      const Series& x = h.at(m);
      const std::string_view name = metric_name(m);
      for (size_t k = 0; k < x.size(); ++k) {
        if (x.t_ns[k] < r_->lo || x.t_ns[k] > r_->hi) continue;
        sink_.counter(r_->rank, name, x.t_ns[k] - r_->off, x.value[k]);
        ++st_.counter_samples;
      }
    }
  }

  const TimelineOptions& o_;
  TimelineSink& sink_;
  TimelineStats& st_;
  const RankSel* r_ = nullptr;
  const RankTrace* t_ = nullptr;
  uint64_t flow_id_ = 0;
  std::vector<int32_t> used_threads_;
};

}  // namespace

std::vector<std::pair<int64_t, int64_t>> parse_ranges(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t p = 0;
  auto bad = [&]() {
    return Error(fmt::format("'{}': expected numbers and ranges such as 0-3,7", text));
  };
  auto num = [&](int64_t& v) {
    const char* b = text.data() + p;
    const char* e = text.data() + text.size();
    auto [q, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || q == b || v < 0) throw bad();
    p += static_cast<size_t>(q - b);
  };
  if (text.empty()) throw bad();
  while (p < text.size()) {
    int64_t a = 0, b = 0;
    num(a);
    b = a;
    if (p < text.size() && text[p] == '-') {
      ++p;
      num(b);
      if (b < a) throw bad();
    }
    out.push_back({a, b});
    if (p < text.size()) {
      if (text[p] != ',') throw bad();
      ++p;
      if (p == text.size()) throw bad();
    }
  }
  return out;
}

std::string json_timeline_size_note(uint64_t bytes) {
  if (bytes <= kJsonTimelineLimitBytes) return "";
  return fmt::format(
      "note: {:.0f} MiB of JSON is past the {} MiB at which Perfetto's JSON import struggles (the "
      "browser runs out of memory); write Perfetto's protobuf format instead (--format perfetto, "
      "or a name ending in .perfetto-trace), or fewer ranks (--ranks) or iterations "
      "(--iterations)\n",
      static_cast<double>(bytes) / (1 << 20), kJsonTimelineLimitBytes >> 20);
}

std::unique_ptr<TimelineSink> json_timeline_sink(OutputFile& out) {
  return std::make_unique<JsonSink>(out);
}

std::vector<TimelineRank> timeline_ranks(const Run& run, const HardwareRun* hw) {
  std::vector<TimelineRank> out;
  for (size_t i = 0; i < run.ranks.size(); ++i)
    out.push_back({&run.ranks[i], hw != nullptr && i < hw->ranks.size() ? &hw->ranks[i] : nullptr});
  return out;
}

TimelineStats write_timeline(const std::vector<TimelineRank>& ranks, const RunAnalysis& ra,
                             const TimelineOptions& o, TimelineSink& sink) {
  TimelineStats st;
  std::vector<RankSel> sel;
  for (const TimelineRank& in : ranks) {
    const RankSlot& slot = *in.slot;
    if (!slot.ok || !in_ranges(o.ranks, slot.rank)) continue;
    const GpuActivities& g = slot.trace.gpu;
    RankSel r;
    r.in = &in;
    r.rank = slot.rank;
    r.off = offset_of(ra, slot.rank);
    for (size_t k = 0; k < g.size(); ++k)
      if (o.iterations.empty() ||
          (g.iteration[k] != kNoId && in_ranges(o.iterations, g.iteration[k])))
        r.rows.push_back(static_cast<int32_t>(k));
    std::stable_sort(r.rows.begin(), r.rows.end(),
                     [&](int32_t a, int32_t b) { return g.start_ns[a] < g.start_ns[b]; });
    r.lo = INT64_MAX;
    r.hi = INT64_MIN;
    for (int32_t k : r.rows) {
      r.lo = std::min(r.lo, g.start_ns[k]);
      r.hi = std::max(r.hi, g.start_ns[k] + g.dur_ns[k]);
      const int32_t c = g.runtime_idx[k];
      if (c >= 0) r.lo = std::min(r.lo, slot.trace.runtime.start_ns[c]);
      r.stream_tid.emplace(std::pair{g.device[k], g.stream[k]}, 0);
    }
    if (o.iterations.empty()) {
      // The whole trace: every host op and runtime call too.
      const HostOps& h = slot.trace.host;
      for (size_t k = 0; k < h.size(); ++k)
        r.lo = std::min(r.lo, h.start_ns[k]), r.hi = std::max(r.hi, h.start_ns[k] + h.dur_ns[k]);
      const RuntimeCalls& rt = slot.trace.runtime;
      for (size_t k = 0; k < rt.size(); ++k)
        r.lo = std::min(r.lo, rt.start_ns[k]), r.hi = std::max(r.hi, rt.start_ns[k] + rt.dur_ns[k]);
    }
    if (r.lo > r.hi) continue;  // nothing selected on this rank
    int64_t tid = kStreamTid0;
    for (auto& [k, v] : r.stream_tid) v = tid++;
    sel.push_back(std::move(r));
  }
  Ns base = INT64_MAX;
  for (const RankSel& r : sel) base = std::min(base, r.lo - r.off);
  if (sel.empty()) base = 0;
  st.base_ns = base;
  st.ranks = sel.size();

  std::vector<std::pair<int64_t, Ns>> offsets;
  for (const RankSel& r : sel) offsets.push_back({r.rank, r.off});
  const std::vector<TimelineCollective> colls = Writer::collectives(ra, sel);
  sink.begin(base, offsets, colls);
  Writer w(o, sink, st);
  for (const RankSel& r : sel) w.rank(r);
  w.collective_flows(colls);
  sink.end();
  return st;
}

TimelineStats write_timeline(const Run& run, const RunAnalysis& ra, const HardwareRun* hw,
                             const TimelineOptions& o, OutputFile& out) {
  const std::unique_ptr<TimelineSink> sink = json_timeline_sink(out);
  return write_timeline(timeline_ranks(run, hw), ra, o, *sink);
}

}  // namespace chopper
