// append_trace: one trace file's two parts, read apart, joined (trace_merge.hpp).
#include "chopper/ingest/kineto/trace_merge.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <unordered_map>

#include "chopper/base/members.hpp"

namespace chopper {
namespace {

// The columns the Kineto reader fills, by table: a column added to a table is appended by
// append_columns without an edit, but if it holds a StrId, a thread or a row of another vector it
// needs remapping below: these counts make the addition fail to compile until it is looked at.
static_assert(member_count<GpuActivities> == 32, "new GPU column: remap it in append_trace?");
static_assert(member_count<HostOps> == 13, "new host column: remap it in append_trace?");
static_assert(member_count<RuntimeCalls> == 9, "new runtime column: remap it in append_trace?");
static_assert(member_count<Flows> == 7, "new flow column: remap it in append_trace?");
static_assert(member_count<Instants> == 8, "new instant column: remap it in append_trace?");
static_assert(member_count<CounterSamples> == 4, "new counter column: remap it in append_trace?");
static_assert(member_count<InputShapes> == 3 && member_count<CommArgs> == 11,
              "new shape or comm field: remap it in append_trace?");

// Appends every column of b to the same column of a (members in declaration order).
template <class Table>
void append_columns(Table& a, Table& b) {
  size_t i = 0;
  for_each_member(a, [&](auto& col_a) {
    size_t j = 0;
    for_each_member(b, [&](auto& col_b) {
      if constexpr (std::is_same_v<decltype(col_a), decltype(col_b)>) {
        if (j == i) col_a.insert(col_a.end(), col_b.begin(), col_b.end());
      }
      ++j;
    });
    ++i;
  });
}

// Maps the rows [from, end) of a column through `map`.
template <class T, class Map>
void remap_rows(std::vector<T>& col, size_t from, const Map& map) {
  for (size_t r = from; r < col.size(); ++r) col[r] = map(col[r]);
}

}  // namespace

std::vector<StrId> append_trace(RankTrace& a, RankTrace& b, const TailTextIds& ids) {
  std::vector<StrId> str(b.strings.size());
  for (StrId id = 0; id < str.size(); ++id) str[id] = a.strings.intern(b.strings.str(id));
  auto s = [&](StrId id) { return str[id]; };
  // A pid or tid: below -1 and within b's strings, a text's id (-StrId - 2); else a number.
  auto pid = [&](int64_t v) {
    if (v >= -1 || static_cast<uint64_t>(-(v + 2)) >= str.size()) return v;
    return -static_cast<int64_t>(str[static_cast<StrId>(-(v + 2))]) - 2;
  };
  for (ThreadKey& k : b.threads) k = ThreadKey{pid(k.pid), pid(k.tid)};

  struct KeyHash {
    size_t operator()(const ThreadKey& k) const {
      return std::hash<int64_t>()(k.pid) * 31 + std::hash<int64_t>()(k.tid);
    }
  };
  std::unordered_map<ThreadKey, int32_t, KeyHash> index;
  for (size_t i = 0; i < a.threads.size(); ++i)
    index.emplace(a.threads[i], static_cast<int32_t>(i));
  std::vector<int32_t> thread(b.threads.size());
  for (size_t i = 0; i < b.threads.size(); ++i) {
    const auto [it, fresh] = index.emplace(b.threads[i], static_cast<int32_t>(a.threads.size()));
    if (fresh) a.threads.push_back(b.threads[i]);
    thread[i] = it->second;
  }
  auto th = [&](int32_t t) { return t < 0 ? t : thread[static_cast<size_t>(t)]; };
  const auto shapes0 = static_cast<int32_t>(a.shapes.size());
  const auto comm0 = static_cast<int32_t>(a.comm_args.size());
  auto shape_row = [&](int32_t r) { return r < 0 ? r : r + shapes0; };
  auto comm_row = [&](int32_t r) { return r < 0 ? r : r + comm0; };

  const size_t g0 = a.gpu.size(), h0 = a.host.size(), r0 = a.runtime.size(), f0 = a.flows.size(),
               i0 = a.instants.size(), c0 = a.counters.size();
  append_columns(a.gpu, b.gpu);
  append_columns(a.host, b.host);
  append_columns(a.runtime, b.runtime);
  append_columns(a.flows, b.flows);
  append_columns(a.instants, b.instants);
  append_columns(a.counters, b.counters);
  remap_rows(a.gpu.name, g0, s);
  remap_rows(a.gpu.category, g0, s);
  remap_rows(a.gpu.operation, g0, s);
  remap_rows(a.gpu.comm_args, g0, comm_row);
  remap_rows(a.host.category, h0, s);
  remap_rows(a.host.name, h0, s);
  remap_rows(a.host.thread, h0, th);
  remap_rows(a.host.shapes, h0, shape_row);
  remap_rows(a.host.comm_args, h0, comm_row);
  remap_rows(a.runtime.name, r0, s);
  remap_rows(a.runtime.thread, r0, th);
  remap_rows(a.flows.category, f0, s);
  remap_rows(a.flows.thread, f0, th);
  for (const size_t r : ids.device) {
    int32_t& d = a.gpu.device[g0 + r];
    d = static_cast<int32_t>(std::clamp<int64_t>(pid(d), INT32_MIN, INT32_MAX));
  }
  for (const size_t r : ids.stream) a.gpu.stream[g0 + r] = pid(a.gpu.stream[g0 + r]);
  for (const size_t r : ids.flows) {
    uint64_t& id = a.flows.id[f0 + r];
    id = 0x8000000000000000ULL | str[static_cast<StrId>(id & 0xffffffffULL)];
  }
  remap_rows(a.instants.name, i0, s);
  remap_rows(a.instants.category, i0, s);
  remap_rows(a.instants.thread, i0, th);
  remap_rows(a.counters.name, c0, s);
  remap_rows(a.counters.pid, c0, pid);
  for (InputShapes x : b.shapes) {
    x.input_dims = str[x.input_dims];
    x.input_types = str[x.input_types];
    x.concrete_inputs = str[x.concrete_inputs];
    a.shapes.push_back(x);
  }
  for (CommArgs x : b.comm_args) {
    for (StrId* f : {&x.collective_name, &x.dtype, &x.pg_name, &x.pg_desc, &x.pg_ranks, &x.in_split,
                     &x.out_split})
      *f = str[*f];
    a.comm_args.push_back(x);
  }

  TraceMetadata& m = a.meta;
  for (auto& [p, name] : b.meta.process_names)
    m.process_names.emplace_back(pid(p), std::move(name));
  for (auto& [pt, name] : b.meta.thread_names)
    m.thread_names.emplace_back(std::make_pair(pid(pt.first), pid(pt.second)), std::move(name));
  m.legacy_2021 = m.legacy_2021 || b.meta.legacy_2021;
  m.rocm = m.rocm || b.meta.rocm;
  a.strings.add_repaired_utf8_bytes(b.strings.repaired_utf8_bytes());
  a.uncompressed_bytes += b.uncompressed_bytes;
  a.total_events += b.total_events;
  a.diagnostics.merge(b.diagnostics);
  return str;
}

}  // namespace chopper
