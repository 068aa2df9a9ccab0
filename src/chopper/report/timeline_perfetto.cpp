// The timeline in Perfetto's protobuf trace format (timeline_perfetto.hpp).
#include "chopper/report/timeline_perfetto.hpp"

#include <fmt/format.h>

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

// One packet to write, in time order: a slice's begin or end, a counter value, a lone flow end.
struct Ev {
  Ns ts = 0;
  enum Kind : uint8_t { kBegin, kEnd, kCounter, kInstant } kind = kBegin;
  uint32_t item = 0;  // slice, counter sample or lone flow end
  uint64_t track = 0;
};

class PerfettoSink : public TimelineSink {
 public:
  explicit PerfettoSink(OutputFile& f) : f_(f) {}

  void begin(Ns, const std::vector<std::pair<int64_t, Ns>>&,
             const std::vector<TimelineCollective>& colls) override {
    // Each collective's flow id on its members' activities (ids of their own: launch flows are
    // numbered from 1 by the writer).
    for (size_t k = 0; k < colls.size(); ++k)
      for (const TimelineFlowEnd& m : colls[k].members)
        coll_at_[m.rank][{m.tid, m.ts}].push_back(kCollectiveFlow0 + k + 1);
  }
  void process(int64_t rank, std::string_view name) override {
    ++seq_;
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
    s.name = names_.id(name);
    s.cat = cats_.id(cat);
    s.arg0 = static_cast<uint32_t>(args_.size());
    s.nargs = static_cast<uint32_t>(args.size());
    for (const TimelineArg& a : args) {
      Arg x;
      x.key = arg_names_.id(a.key);
      x.text = a.text;
      if (a.text)
        x.s = arg_strings_.id(a.s);
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
    auto it = counter_tracks_.find(name);
    if (it == counter_tracks_.end())
      it = counter_tracks_.emplace(std::string(name), uuid(next_track_++)).first;
    counters_.push_back({it->second, ts, value});
  }
  void end_rank(int64_t) override {
    flush_rank();
    clear_rank();
  }
  void collective(uint64_t, const TimelineCollective&) override {}  // given on begin
  void end() override {}

 private:
  struct Launch {
    int64_t tid;
    Ns ts;
    uint64_t id;
  };
  struct Counter {
    uint64_t track;
    Ns ts;
    double value;
  };

  uint64_t uuid(uint64_t local) const { return (static_cast<uint64_t>(seq_) << 32) | local; }

  void put(const pb::TracePacket& p) {
    buf_.clear();
    p.SerializeToString(&buf_);
    std::string head(1, '\x0a');  // Trace.packet, length-delimited
    for (uint64_t n = buf_.size();; n >>= 7) {
      if (n < 0x80) {
        head += static_cast<char>(n);
        break;
      }
      head += static_cast<char>((n & 0x7f) | 0x80);
    }
    f_.write(head);
    f_.write(buf_);
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

    // Per track, slices by start (longer first), on the first lane of the track where they nest.
    std::map<int64_t, std::vector<uint32_t>> by_track;
    for (uint32_t k = 0; k < slices_.size(); ++k) by_track[slices_[k].tid].push_back(k);
    struct Track {
      uint64_t uuid;
      std::string name;
    };
    std::vector<Track> tracks;
    std::map<int64_t, uint64_t> track_of_tid;  // lane 0
    std::vector<Ev> evs;
    const uint64_t process_uuid = uuid(0);
    for (auto& [tid, ks] : by_track) {
      std::stable_sort(ks.begin(), ks.end(), [&](uint32_t a, uint32_t b) {
        const Slice &x = slices_[a], &y = slices_[b];
        return x.ts != y.ts ? x.ts < y.ts : x.dur > y.dur;
      });
      auto tn = thread_names_.find(tid);
      const std::string base = tn != thread_names_.end() ? tn->second : fmt::format("tid {}", tid);
      struct Lane {
        uint64_t uuid;
        std::vector<std::pair<Ns, uint32_t>> open;  // end, slice
      };
      std::vector<Lane> lanes;
      auto close = [&](Lane& ln, Ns upto) {
        while (!ln.open.empty() && ln.open.back().first <= upto) {
          evs.push_back({ln.open.back().first, Ev::kEnd, ln.open.back().second, ln.uuid});
          ln.open.pop_back();
        }
      };
      for (uint32_t k : ks) {
        const Slice& s = slices_[k];
        const Ns end = s.ts + s.dur;
        size_t l = 0;
        for (; l < lanes.size(); ++l) {
          close(lanes[l], s.ts);
          if (lanes[l].open.empty() || lanes[l].open.back().first >= end) break;
        }
        if (l == lanes.size()) {
          const uint64_t u = uuid(next_track_++);
          lanes.push_back({u, {}});
          tracks.push_back({u, l == 0 ? base : fmt::format("{} (overlap {})", base, l)});
          if (l == 0) track_of_tid[tid] = u;
        }
        evs.push_back({s.ts, Ev::kBegin, k, lanes[l].uuid});
        lanes[l].open.push_back({end, k});
      }
      for (Lane& ln : lanes) close(ln, INT64_MAX);
    }
    for (const auto& [tid, name] : thread_names_)  // a named thread without slices: its track
      if (track_of_tid.find(tid) == track_of_tid.end()) {
        track_of_tid[tid] = uuid(next_track_++);
        tracks.push_back({track_of_tid[tid], name});
      }
    for (uint32_t k = 0; k < counters_.size(); ++k)
      evs.push_back({counters_[k].ts, Ev::kCounter, k, counters_[k].track});
    for (uint32_t k = 0; k < lone.size(); ++k) {
      auto t = track_of_tid.find(lone[k].tid);
      uint64_t u = 0;
      if (t != track_of_tid.end()) {
        u = t->second;
      } else {
        u = uuid(next_track_++);
        auto tn = thread_names_.find(lone[k].tid);
        tracks.push_back(
            {u, tn != thread_names_.end() ? tn->second : fmt::format("tid {}", lone[k].tid)});
        track_of_tid[lone[k].tid] = u;
      }
      evs.push_back({lone[k].ts, Ev::kInstant, k, u});
    }
    // Time order within the sequence; a track's own order (ends before the begins at the same
    // time, inner ends first) is kept.
    std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });

    const uint64_t launch_iid = lone.empty() ? 0 : names_.id("launch");  // before the table
    const uint32_t seq = seq_;
    pb::TracePacket p;
    // The process track, with every interned string of the sequence.
    p.set_trusted_packet_sequence_id(seq);
    p.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
    {
      pb::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(process_uuid);
      d->set_name(process_name_);
      d->mutable_process()->set_pid(static_cast<int32_t>(rank_ + 1));
      d->mutable_process()->set_process_name(process_name_);
      pb::InternedData* in = p.mutable_interned_data();
      const auto& n = names_.strings();
      for (size_t k = 0; k < n.size(); ++k) {
        pb::EventName* e = in->add_event_names();
        e->set_iid(k + 1);
        e->set_name(n[k]);
      }
      const auto& c = cats_.strings();
      for (size_t k = 0; k < c.size(); ++k) {
        pb::EventCategory* e = in->add_event_categories();
        e->set_iid(k + 1);
        e->set_name(c[k]);
      }
      const auto& a = arg_names_.strings();
      for (size_t k = 0; k < a.size(); ++k) {
        pb::DebugAnnotationName* e = in->add_debug_annotation_names();
        e->set_iid(k + 1);
        e->set_name(a[k]);
      }
      const auto& v = arg_strings_.strings();
      for (size_t k = 0; k < v.size(); ++k) {
        pb::InternedString* e = in->add_debug_annotation_string_values();
        e->set_iid(k + 1);
        e->set_str(v[k]);
      }
    }
    put(p);
    for (const Track& t : tracks) {
      p.Clear();
      p.set_trusted_packet_sequence_id(seq);
      pb::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(t.uuid);
      d->set_parent_uuid(process_uuid);
      d->set_name(t.name);
      put(p);
    }
    for (const auto& [name, u] : counter_tracks_) {
      p.Clear();
      p.set_trusted_packet_sequence_id(seq);
      pb::TrackDescriptor* d = p.mutable_track_descriptor();
      d->set_uuid(u);
      d->set_parent_uuid(process_uuid);
      d->set_name(name);
      d->mutable_counter();
      put(p);
    }
    for (const Ev& e : evs) {
      p.Clear();
      p.set_timestamp(stamp(e.ts));
      p.set_trusted_packet_sequence_id(seq);
      pb::TrackEvent* t = p.mutable_track_event();
      t->set_track_uuid(e.track);
      switch (e.kind) {
        case Ev::kBegin: {
          const Slice& s = slices_[e.item];
          p.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
          t->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
          t->set_name_iid(s.name);
          t->add_category_iids(s.cat);
          for (uint32_t k = s.arg0; k < s.arg0 + s.nargs; ++k) {
            pb::DebugAnnotation* d = t->add_debug_annotations();
            d->set_name_iid(args_[k].key);
            if (args_[k].text)
              d->set_string_value_iid(args_[k].s);
            else
              d->set_int_value(args_[k].i);
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
          t->set_double_counter_value(counters_[e.item].value);
          break;
        case Ev::kInstant:
          p.set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
          t->set_type(pb::TrackEvent::TYPE_INSTANT);
          t->set_name_iid(launch_iid);
          t->add_flow_ids(lone[e.item].id);
          break;
      }
      put(p);
    }
  }

  void clear_rank() {
    names_.clear();
    cats_.clear();
    arg_names_.clear();
    arg_strings_.clear();
    slices_.clear();
    args_.clear();
    flows_.clear();
    launches_.clear();
    counters_.clear();
    counter_tracks_.clear();
    thread_names_.clear();
    colls_ = nullptr;
    next_track_ = 1;
  }

  OutputFile& f_;
  std::string buf_;
  uint32_t seq_ = 0;
  int64_t rank_ = -1;
  std::string process_name_;
  uint64_t next_track_ = 1;  // 0: the process track
  Interned names_, cats_, arg_names_, arg_strings_;
  std::vector<Slice> slices_;
  std::vector<Arg> args_;
  std::unordered_map<uint32_t, std::vector<uint64_t>> flows_;  // slice: flow ids
  std::vector<Launch> launches_;
  std::vector<Counter> counters_;
  std::map<std::string, uint64_t, std::less<>> counter_tracks_;
  std::map<int64_t, std::string> thread_names_;
  std::map<int64_t, std::map<std::pair<int64_t, Ns>, std::vector<uint64_t>>> coll_at_;
  std::map<std::pair<int64_t, Ns>, std::vector<uint64_t>>* colls_ = nullptr;
};

}  // namespace

std::unique_ptr<TimelineSink> perfetto_timeline_sink(OutputFile& out) {
  return std::make_unique<PerfettoSink>(out);
}

}  // namespace chopper
