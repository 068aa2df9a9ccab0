// The timeline in Perfetto's protobuf trace format (timeline_perfetto.hpp).
#include "chopper/report/timeline_perfetto.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "chopper/base/error.hpp"
#include "perfetto_trace.pb.h"

namespace chopper {
namespace {

namespace pb = perfetto::protos;

constexpr int64_t kStreamTid0 = 10;                       // timeline.cpp: GPU streams 10, 11, ...
constexpr int64_t kHostTid0 = 1000000;                    // host threads
constexpr uint64_t kCollectiveFlow0 = uint64_t{1} << 62;  // collective flow ids (launch: 1, 2, ...)

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// One interning table of a sequence: iids from 1, in order of first use.
class Interned {
 public:
  uint64_t id(std::string_view s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    const uint64_t iid = ids_.size() + 1;
    ids_.emplace(std::string(s), iid);
    order_.push_back(s.empty() ? std::string() : std::string(s));
    return iid;
  }
  const std::vector<std::string>& strings() const { return order_; }  // iid k at k - 1
  void clear() {
    ids_.clear();
    order_.clear();
  }

 private:
  std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>> ids_;
  std::vector<std::string> order_;
};

struct Arg {
  uint64_t key = 0;  // interned annotation name
  bool text = false;
  int64_t i = 0;
  uint64_t s = 0;  // interned text value
};

struct Slice {
  int64_t tid = 0;
  Ns ts = 0, dur = 0;
  uint64_t name = 0, cat = 0;
  uint32_t arg0 = 0, nargs = 0;
};

// One event of a track, in time order: a slice's begin or end, a counter value, a lone flow end.
struct Ev {
  Ns ts = 0;
  enum Kind : uint8_t { kBegin, kEnd, kCounter, kInstant } kind = kBegin;
  uint32_t item = 0;  // slice, counter sample or lone flow end
};

// A track of a rank: a lane of a JSON thread (its slices nest), or a telemetry counter.
struct Lane {
  std::string name;
  bool counter = false;
  std::vector<std::pair<Ns, uint32_t>> open;  // slices open while placing: end, slice
  std::vector<Ev> evs;
};

constexpr uint32_t kIncrementalClock = 64;  // sequence-scoped clock ids: 64-127
constexpr uint32_t kBootTime = 6;           // ClockSnapshot.Clock.BuiltinClocks BOOTTIME

class PerfettoSink : public TimelineSink {
 public:
  PerfettoSink(OutputFile& f, bool gzip) : f_(f), gzip_(gzip) {}

  void begin(Ns, const std::vector<std::pair<int64_t, Ns>>&,
             const std::vector<TimelineCollective>& colls) override {
    // Each collective's flow id on its members' activities (ids of their own: launch flows are
    // numbered from 1 by the writer).
    for (size_t k = 0; k < colls.size(); ++k)
      for (const TimelineFlowEnd& m : colls[k].members)
        coll_at_[m.rank][{m.tid, m.ts}].push_back(kCollectiveFlow0 + k + 1);
  }
  void process(int64_t rank, std::string_view name) override {
    rank_ = rank;
    process_name_ = std::string(name);
    auto c = coll_at_.find(rank);
    colls_ = c != coll_at_.end() ? &c->second : nullptr;
  }
  void thread(int64_t, int64_t tid, std::string_view name) override {
    thread_names_[tid] = std::string(name);
  }
  void slice(int64_t, int64_t tid, Ns ts, Ns dur, std::string_view name, std::string_view cat,
             std::span<const TimelineArg> args) override {
    Slice s;
    s.tid = tid;
    s.ts = ts;
    s.dur = dur;
    s.name = strings_.id(name);
    s.cat = strings_.id(cat);
    s.arg0 = static_cast<uint32_t>(args_.size());
    s.nargs = static_cast<uint32_t>(args.size());
    for (const TimelineArg& a : args) {
      Arg x;
      x.key = strings_.id(a.key);
      x.text = a.text;
      if (a.text)
        x.s = strings_.id(a.s);
      else
        x.i = a.i;
      args_.push_back(x);
    }
    const auto at = static_cast<uint32_t>(slices_.size());
    slices_.push_back(s);
    if (colls_ != nullptr && tid >= kStreamTid0 && tid < kHostTid0) {
      auto c = colls_->find({tid, ts});
      if (c != colls_->end()) {
        for (uint64_t id : c->second) flows_[at].push_back(id);
        colls_->erase(c);
      }
    }
  }
  void launch(int64_t, uint64_t id, int64_t host_tid, Ns host_ts, int64_t, Ns) override {
    flows_[static_cast<uint32_t>(slices_.size() - 1)].push_back(id);  // the GPU activity
    launches_.push_back({host_tid, host_ts, id});
  }
  void counter(int64_t, std::string_view name, Ns ts, double value) override {
    auto it = counters_.find(name);
    if (it == counters_.end()) it = counters_.emplace(std::string(name), Samples{}).first;
    it->second.push_back({ts, value});
  }
  void end_rank(int64_t) override {
    flush_rank();
    clear_rank();
  }
  void collective(uint64_t, const TimelineCollective&) override {}  // given on begin
  // Every rank's header packets first, then every rank's events: the ranks' string tables
  // (mostly the same names) lie within deflate's 32 KiB window of each other, so a gzip'd file
  // holds them about once, not once per rank.
  void end() override {
    if (!gzip_) {
      f_.write(head_);
      f_.write(events_);
      return;
    }
    // zlib's deflate at level 6: its lazy matching finds the repeated tables that a fast level
    // mostly misses (a third smaller than ISA-L's level 1 here).
    z_stream z{};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw Error("gzip: deflateInit2 failed");
    std::string out(1u << 20, '\0');
    auto pump = [&](std::string& in, int flush) {
      z.next_in = reinterpret_cast<Bytef*>(in.data());
      z.avail_in = static_cast<uInt>(in.size());
      int rc = Z_OK;
      do {
        z.next_out = reinterpret_cast<Bytef*>(out.data());
        z.avail_out = static_cast<uInt>(out.size());
        rc = deflate(&z, flush);
        if (rc == Z_STREAM_ERROR) {
          deflateEnd(&z);
          throw Error("gzip: deflate failed");
        }
        f_.write(std::string_view(out.data(), out.size() - z.avail_out));
      } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
      in.clear();
      in.shrink_to_fit();
    };
    try {
      pump(head_, Z_NO_FLUSH);
      pump(events_, Z_FINISH);
    } catch (...) {
      deflateEnd(&z);
      throw;
    }
    deflateEnd(&z);
  }

 private:
  struct Launch {
    int64_t tid;
    Ns ts;
    uint64_t id;
  };
  using Samples = std::vector<std::pair<Ns, double>>;

  // Appends `p` to `to` as a packet of the Trace (field 1, length-delimited).
  void put(const pb::TracePacket& p, std::string& to) {
    buf_.clear();
    p.SerializeToString(&buf_);
    to += '\x0a';
    for (uint64_t n = buf_.size();; n >>= 7) {
      if (n < 0x80) {
        to += static_cast<char>(n);
        break;
      }
      to += static_cast<char>((n & 0x7f) | 0x80);
    }
    to += buf_;
  }

  uint64_t stamp(Ns ts) const {
    if (ts < 0)
      throw Error(fmt::format(
          "rank {}: an event at {} ns on the aligned clock, before its 0: the protobuf timeline "
          "holds times from 0 (the JSON timeline holds them)",
          rank_, ts));
    return static_cast<uint64_t>(ts);
  }

  void flush_rank() {
    // The launch flows' host ends: the innermost slice starting at the call's start on its thread
    // (the JSON's flow binds to the enclosing slice), else a lone instant event.
    std::map<std::pair<int64_t, Ns>, uint32_t> host_at;
    for (uint32_t k = 0; k < slices_.size(); ++k) {
      const Slice& s = slices_[k];
      if (s.tid < kHostTid0) continue;
      auto [it, fresh] = host_at.emplace(std::pair{s.tid, s.ts}, k);
      if (!fresh && s.dur < slices_[it->second].dur) it->second = k;
    }
    std::vector<Launch> lone;
    for (const Launch& l : launches_) {
      auto it = host_at.find({l.tid, l.ts});
      if (it != host_at.end())
        flows_[it->second].push_back(l.id);
      else
        lone.push_back(l);
    }

    // Per JSON thread, slices by start (longer first), each on the first lane of the thread where
    // it nests; each lane's events in time order (ends before begins at the same time, inner ends
    // first).
    std::map<int64_t, std::vector<uint32_t>> by_tid;
    for (uint32_t k = 0; k < slices_.size(); ++k) by_tid[slices_[k].tid].push_back(k);
    for (const auto& [tid, name] : thread_names_) by_tid[tid];  // a named thread without slices
    for (const Launch& l : lone) by_tid[l.tid];
    std::vector<Lane> lanes;
    for (auto& [tid, ks] : by_tid) {
      std::stable_sort(ks.begin(), ks.end(), [&](uint32_t a, uint32_t b) {
        const Slice &x = slices_[a], &y = slices_[b];
        return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
      });
      auto tn = thread_names_.find(tid);
      const std::string base = tn != thread_names_.end() ? tn->second : fmt::format("tid {}", tid);
      const size_t first = lanes.size();
      lanes.push_back({base, false, {}, {}});
      auto close = [](Lane& ln, Ns upto) {
        while (!ln.open.empty() && ln.open.back().first <= upto) {
          ln.evs.push_back({ln.open.back().first, Ev::kEnd, ln.open.back().second});
          ln.open.pop_back();
        }
      };
      for (uint32_t k : ks) {
        const Slice& s = slices_[k];
        const Ns end = s.ts + s.dur;
        size_t l = first;
        for (; l < lanes.size(); ++l) {
          close(lanes[l], s.ts);
          if (lanes[l].open.empty() || lanes[l].open.back().first >= end) break;
        }
        if (l == lanes.size())
          lanes.push_back({fmt::format("{} (overlap {})", base, l - first), false, {}, {}});
        lanes[l].evs.push_back({s.ts, Ev::kBegin, k});
        lanes[l].open.push_back({end, k});
      }
      for (size_t l = first; l < lanes.size(); ++l) close(lanes[l], INT64_MAX);
      bool any = false;
      for (uint32_t k = 0; k < lone.size(); ++k)
        if (lone[k].tid == tid)
          lanes[first].evs.push_back({lone[k].ts, Ev::kInstant, k}), any = true;
      if (any)
        std::stable_sort(lanes[first].evs.begin(), lanes[first].evs.end(),
                         [](const Ev& x, const Ev& y) { return x.ts < y.ts; });
    }
    for (const auto& [name, samples] : counters_) {
      Lane ln{name, true, {}, {}};
      for (uint32_t k = 0; k < samples.size(); ++k)
        ln.evs.push_back({samples[k].first, Ev::kCounter, k});
      std::stable_sort(ln.evs.begin(), ln.evs.end(),
                       [](const Ev& x, const Ev& y) { return x.ts < y.ts; });
      lanes.push_back(std::move(ln));
    }

    write_sequence(lanes, lone);
  }

  // The sequence's first packet: it clears the sequence's state and makes its default clock an
  // incremental clock that reads as BOOTTIME (the trace's clock), the aligned ns, from t0.
  void write_clock(uint32_t seq, Ns t0) {
    pb::TracePacket p;
    p.set_trusted_packet_sequence_id(seq);
    p.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    p.mutable_trace_packet_defaults()->set_timestamp_clock_id(kIncrementalClock);
    pb::ClockSnapshot* c = p.mutable_clock_snapshot();
    pb::ClockSnapshot::Clock* inc = c->add_clocks();
    inc->set_clock_id(kIncrementalClock);
    inc->set_timestamp(stamp(t0));
    inc->set_is_incremental(true);
    pb::ClockSnapshot::Clock* boot = c->add_clocks();
    boot->set_clock_id(kBootTime);
    boot->set_timestamp(stamp(t0));
    put(p, head_);
  }

  // The interning tables as InternedData entries, iids from 1.
  static void fill_interned(pb::InternedData& in, const Interned& names, const Interned& cats,
                            const Interned& arg_names, const Interned& arg_strings) {
    const auto& n = names.strings();
    for (size_t k = 0; k < n.size(); ++k) {
      pb::EventName* x = in.add_event_names();
      x->set_iid(k + 1);
      x->set_name(n[k]);
    }
    const auto& c = cats.strings();
    for (size_t k = 0; k < c.size(); ++k) {
      pb::EventCategory* x = in.add_event_categories();
      x->set_iid(k + 1);
      x->set_name(c[k]);
    }
    const auto& an = arg_names.strings();
    for (size_t k = 0; k < an.size(); ++k) {
      pb::DebugAnnotationName* x = in.add_debug_annotation_names();
      x->set_iid(k + 1);
      x->set_name(an[k]);
    }
    const auto& v = arg_strings.strings();
    for (size_t k = 0; k < v.size(); ++k) {
      pb::InternedString* x = in.add_debug_annotation_string_values();
      x->set_iid(k + 1);
      x->set_str(v[k]);
    }
  }

  // The rank's sequence: its clock (an incremental clock from the rank's first time), its
  // process track with every string its events intern, its tracks, its events in time order.
  void write_sequence(const std::vector<Lane>& lanes, const std::vector<Launch>& lone) {
    struct At {
      Ns ts;
      uint32_t lane, k;
    };
    std::vector<At> order;
    for (uint32_t l = 0; l < lanes.size(); ++l)
      for (uint32_t k = 0; k < lanes[l].evs.size(); ++k)
        order.push_back({lanes[l].evs[k].ts, l, k});
    // Time order; a lane's own order is kept at equal times (stable).
    std::stable_sort(order.begin(), order.end(),
                     [](const At& x, const At& y) { return x.ts < y.ts; });
    const uint32_t seq = ++seq_;
    const Ns t0 = order.empty() ? 0 : order.front().ts;
    write_clock(seq, t0);
    // The strings of the rank's events, interned in order of first use.
    Interned names, cats, arg_names, arg_strings;
    std::vector<uint64_t> name_iid(slices_.size()), cat_iid(slices_.size());
    std::vector<uint64_t> arg_key(args_.size()), arg_value(args_.size());
    const auto& str = strings_.strings();
    uint64_t launch_iid = 0;
    for (const At& o : order) {
      const Ev& e = lanes[o.lane].evs[o.k];
      if (e.kind == Ev::kBegin) {
        const Slice& s = slices_[e.item];
        name_iid[e.item] = names.id(str[s.name - 1]);
        cat_iid[e.item] = cats.id(str[s.cat - 1]);
        for (uint32_t a = s.arg0; a < s.arg0 + s.nargs; ++a) {
          arg_key[a] = arg_names.id(str[args_[a].key - 1]);
          if (args_[a].text) arg_value[a] = arg_strings.id(str[args_[a].s - 1]);
        }
      } else if (e.kind == Ev::kInstant) {
        launch_iid = names.id("launch");
      }
    }
    const uint64_t process_uuid = ++next_uuid_;
    pb::TracePacket p;
    p.set_trusted_packet_sequence_id(seq);
    {
      pb::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(process_uuid);
      d->set_name(process_name_);
      d->mutable_process()->set_pid(static_cast<int32_t>(rank_ + 1));
      d->mutable_process()->set_process_name(process_name_);
      fill_interned(*p.mutable_interned_data(), names, cats, arg_names, arg_strings);
    }
    put(p, head_);
    std::vector<uint64_t> lane_uuid(lanes.size());
    for (size_t l = 0; l < lanes.size(); ++l) {
      lane_uuid[l] = ++next_uuid_;
      p.Clear();
      p.set_trusted_packet_sequence_id(seq);
      pb::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(lane_uuid[l]);
      d->set_parent_uuid(process_uuid);
      d->set_name(lanes[l].name);
      if (lanes[l].counter) d->mutable_counter();
      put(p, head_);
    }
    Ns last = t0;
    for (const At& o : order) {
      const Ev& e = lanes[o.lane].evs[o.k];
      p.Clear();
      p.set_timestamp(static_cast<uint64_t>(e.ts - last));  // the incremental clock: a delta
      last = e.ts;
      p.set_trusted_packet_sequence_id(seq);
      p.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
      pb::TrackEvent* t = p.mutable_track_event();
      t->set_track_uuid(lane_uuid[o.lane]);
      switch (e.kind) {
        case Ev::kBegin: {
          const Slice& s = slices_[e.item];
          t->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
          t->set_name_iid(name_iid[e.item]);
          t->add_category_iids(cat_iid[e.item]);
          for (uint32_t a = s.arg0; a < s.arg0 + s.nargs; ++a) {
            pb::DebugAnnotation* d = t->add_debug_annotations();
            d->set_name_iid(arg_key[a]);
            if (args_[a].text)
              d->set_string_value_iid(arg_value[a]);
            else
              d->set_int_value(args_[a].i);
          }
          auto f = flows_.find(e.item);
          if (f != flows_.end())
            for (uint64_t id : f->second) t->add_flow_ids(id);
          break;
        }
        case Ev::kEnd:
          t->set_type(pb::TrackEvent::TYPE_SLICE_END);
          break;
        case Ev::kCounter:
          t->set_type(pb::TrackEvent::TYPE_COUNTER);
          t->set_double_counter_value(counters_.find(lanes[o.lane].name)->second[e.item].second);
          break;
        case Ev::kInstant:
          t->set_type(pb::TrackEvent::TYPE_INSTANT);
          t->set_name_iid(launch_iid);
          t->add_flow_ids(lone[e.item].id);
          break;
      }
      put(p, events_);
    }
  }

  void clear_rank() {
    strings_.clear();
    slices_.clear();
    args_.clear();
    flows_.clear();
    launches_.clear();
    counters_.clear();
    thread_names_.clear();
    colls_ = nullptr;
  }

  OutputFile& f_;
  bool gzip_ = false;  // the file gzip'd here (f_ writes the bytes as they are)
  std::string buf_;
  std::string head_, events_;  // every rank's: clock, process and tracks; events
  uint32_t seq_ = 0;           // the last sequence id given (one per rank)
  uint64_t next_uuid_ = 0;     // the last track uuid given
  int64_t rank_ = -1;
  std::string process_name_;
  Interned strings_;  // the rank's strings: names, categories, argument names and text values
  std::vector<Slice> slices_;
  std::vector<Arg> args_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> flows_;  // slice: flow ids
  std::vector<Launch> launches_;
  std::map<std::string, Samples, std::less<>> counters_;  // by metric name
  std::map<int64_t, std::string> thread_names_;
  std::map<int64_t, std::map<std::pair<int64_t, Ns>, std::vector<uint64_t>>> coll_at_;
  std::map<std::pair<int64_t, Ns>, std::vector<uint64_t>>* colls_ = nullptr;
};

}  // namespace

std::unique_ptr<TimelineSink> perfetto_timeline_sink(OutputFile& out, bool gzip) {
  return std::make_unique<PerfettoSink>(out, gzip);
}

}  // namespace chopper
