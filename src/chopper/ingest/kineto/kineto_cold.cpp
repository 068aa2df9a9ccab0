// The Kineto parser's ISA-independent parts (kineto_cold.hpp), compiled once.
#include "chopper/ingest/kineto/kineto_cold.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace chopper::kineto_parser {

bool is_metadata_key(std::string_view key) {
  return key == "baseTimeNanoseconds" || key == "schemaVersion" || key == "traceName" ||
         key == "displayTimeUnit" || key == "deviceProperties" || key == "distributedInfo" ||
         key.find("version") != std::string_view::npos || key == "trace_id";
}

namespace {

// A value as text: a string's content, anything else as minified JSON.
std::string as_text(simdjson::dom::element e) {
  std::string_view s;
  if (!e.get_string().get(s)) return std::string(s);
  return simdjson::minify(e);
}

// A value as an integer (a number, or a string holding one), else def.
int64_t as_int(simdjson::dom::element e, int64_t def) {
  int64_t x;
  if (!e.get_int64().get(x)) return x;
  uint64_t u;
  if (!e.get_uint64().get(u)) return static_cast<int64_t>(std::min<uint64_t>(u, INT64_MAX));
  double d;
  // A fraction is truncated; a value outside int64 (1e300, a fuzzer's 6.55e38) is not an int.
  if (!e.get_double().get(d)) return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : def;
  std::string_view s;
  if (!e.get_string().get(s) && parse_int64(s, x) == DecimalStatus::kExact) return x;
  return def;
}

// "deviceProperties": an array of one object per GPU.
void read_device_properties(simdjson::dom::element e, TraceMetadata& m) {
  simdjson::dom::array arr;
  if (e.get_array().get(arr)) return;
  for (simdjson::dom::element d : arr) {
    DeviceProps p;
    simdjson::dom::object o;
    if (d.get_object().get(o)) continue;
    for (auto [k, val] : o) {
      if (k == "id")
        p.id = as_int(val, -1);
      else if (k == "name")
        p.name = as_text(val);
      else if (k == "totalGlobalMem")
        p.total_global_mem_bytes = as_int(val, -1);
      else if (k == "computeMajor")
        p.compute_major = as_int(val, -1);
      else if (k == "computeMinor")
        p.compute_minor = as_int(val, -1);
      else if (k == "numSms")
        p.num_sms = as_int(val, -1);
      else if (k == "warpSize")
        p.warp_size = as_int(val, -1);
      else if (k == "maxThreadsPerBlock")
        p.max_threads_per_block = as_int(val, -1);
      else if (k == "sharedMemPerBlock")
        p.shared_mem_per_block_bytes = as_int(val, -1);
      else if (k == "regsPerBlock")
        p.regs_per_block = as_int(val, -1);
    }
    m.devices.push_back(std::move(p));
  }
}

// One process group of distributedInfo's pg_config (an object; named fallback_name unless it
// has a pg_name).
void add_process_group(simdjson::dom::element pe, std::string_view fallback_name,
                       TraceMetadata& m) {
  simdjson::dom::object po;
  if (pe.get_object().get(po)) return;
  ProcessGroup pg;
  pg.name = std::string(fallback_name);
  for (auto [pk, pv] : po) {
    if (pk == "pg_name")
      pg.name = as_text(pv);
    else if (pk == "pg_desc")
      pg.desc = as_text(pv);
    else if (pk == "backend_config")
      pg.backend_config = as_text(pv);
    else if (pk == "pg_size")
      pg.size = as_int(pv, -1);
    else if (pk == "ranks") {
      simdjson::dom::array ra;
      if (!pv.get_array().get(ra)) {
        for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
      } else {
        // Some builds write the ranks as a string "[0, 1]".
        std::string s = as_text(pv);
        simdjson::dom::parser p2;
        simdjson::dom::element re;
        if (!p2.parse(s).get(re) && !re.get_array().get(ra))
          for (auto r : ra) pg.ranks.push_back(as_int(r, -1));
      }
    }
  }
  if (pg.size < 0 && !pg.ranks.empty()) pg.size = static_cast<int64_t>(pg.ranks.size());
  m.process_groups.push_back(std::move(pg));
}

// "distributedInfo": the rank, world size, backend and process groups (pg_config: an array, or
// an object keyed by group name).
void read_distributed_info(simdjson::dom::element e, TraceMetadata& m) {
  simdjson::dom::object o;
  if (e.get_object().get(o)) return;
  for (auto [k, val] : o) {
    if (k == "rank")
      m.rank = as_int(val, -1);
    else if (k == "world_size")
      m.world_size = as_int(val, -1);
    else if (k == "backend")
      m.backend = as_text(val);
    else if (k == "nccl_version")
      m.nccl_version = as_text(val);
    else if (k == "pg_count")
      m.pg_count = as_int(val, -1);
    else if (k == "pg_config") {
      simdjson::dom::array pa;
      simdjson::dom::object pobj;
      if (!val.get_array().get(pa)) {
        for (auto pe : pa) add_process_group(pe, "", m);
      } else if (!val.get_object().get(pobj)) {
        for (auto [pk, pv] : pobj) add_process_group(pv, pk, m);
      }
    }
  }
  if (m.rank >= 0) m.rank_source = "distributedInfo";
}

// Drops the rows whose flag is set from every column of a table (columns not yet filled, such as
// labels, are left alone).
template <class Table>
void drop_rows(Table& tb, size_t n, const std::vector<uint8_t>& drop) {
  tb.for_each_column([&](auto& col) {
    if (col.size() != n) return;
    size_t j = 0;
    for (size_t i = 0; i < n; ++i)
      if (!drop[i]) col[j++] = col[i];
    col.resize(j);
  });
}

// A category chopper does not read whose name says it holds device work (a new accelerator's
// events): "..._events", or "kernel" in any case.
bool device_like_category(std::string_view c) {
  constexpr std::string_view kEvents = "_events";
  if (c.size() > kEvents.size() && c.substr(c.size() - kEvents.size()) == kEvents) return true;
  for (size_t i = 0; i + 6 <= c.size(); ++i) {
    bool same = true;
    for (size_t j = 0; j < 6 && same; ++j)
      same = (c[i + j] | 0x20) == "kernel"[j];  // ASCII letters folded
    if (same) return true;
  }
  return false;
}

}  // namespace

void parse_metadata(const std::vector<std::pair<std::string, std::string>>& top_values,
                    RankTrace& t) {
  simdjson::dom::parser dp;
  TraceMetadata& m = t.meta;
  for (auto& [key, text] : top_values) {
    simdjson::dom::element e;
    if (dp.parse(text).get(e)) {
      t.diagnostics.add("malformed_metadata",
                        fmt::format("top-level \"{}\" is not valid JSON; ignored", key));
      continue;
    }
    if (key == "baseTimeNanoseconds") {
      // Exact from the text: an epoch in ns has 19 digits.
      int64_t b;
      if (parse_int64(text, b) == DecimalStatus::kExact ||
          parse_scaled(text, 0, b) == DecimalStatus::kExact) {
        m.base_time_ns = b;
        m.has_base_time = true;
      } else {
        t.diagnostics.add("malformed_metadata",
                          fmt::format("baseTimeNanoseconds {} unusable", text));
      }
    } else if (key == "schemaVersion") {
      m.schema_version = as_int(e, -1);
    } else if (key == "traceName") {
      m.trace_name = as_text(e);
    } else if (key == "displayTimeUnit") {
      m.display_time_unit = as_text(e);
    } else if (key == "deviceProperties") {
      read_device_properties(e, m);
    } else if (key == "distributedInfo") {
      read_distributed_info(e, m);
    } else if (key.find("version") != std::string::npos || key == "trace_id") {
      m.versions.emplace_back(key, as_text(e));
      if (key.rfind("roctracer", 0) == 0 || key.rfind("hip_", 0) == 0) m.rocm = true;
    } else {
      std::string v = as_text(e);
      if (v.size() > 200) v = v.substr(0, 200) + "...";
      m.other.emplace_back(key, std::move(v));
    }
  }
}

void report_unread_category(RankTrace& t, StrId cat, uint64_t events, uint64_t with_device) {
  const std::string_view cname = t.strings.str(cat);
  if (with_device == 0 && !device_like_category(cname)) return;
  t.diagnostics.add("unread_device_category", [&] {
    return fmt::format(
        "category '{}': {} complete events{} not read as GPU activities (read: kernel, "
        "gpu_memcpy, gpu_memset, cuda_sync, mtia_ccp_events)",
        cname, events, with_device > 0 ? fmt::format(", {} with a device arg,", with_device) : "");
  });
  if (events > 1) t.diagnostics.add_count("unread_device_category", events - 1);
}

void add_base_time(RankTrace& t, Ns b) {
  // Whether x + b is outside (-kTimeLimit, kTimeLimit). Complete events' ends are below
  // kTimeLimit (checked when read), so end + b is computed like a start.
  auto out = [b](Ns x) {
    Ns y;
    return __builtin_add_overflow(x, b, &y) || y < -kTimeLimit || y >= kTimeLimit;
  };
  // Checked first (rare: only hostile or corrupt input), so that the usual case stays one pass
  // of additions.
  bool any = false;
  auto scan = [&](const std::vector<Ns>& ts, const std::vector<Ns>* dur) {
    for (size_t i = 0; i < ts.size() && !any; ++i)
      any = out(ts[i]) || (dur != nullptr && out(ts[i] + (*dur)[i]));
  };
  scan(t.gpu.start_ns, &t.gpu.dur_ns);
  scan(t.host.start_ns, &t.host.dur_ns);
  scan(t.runtime.start_ns, &t.runtime.dur_ns);
  scan(t.flows.ts_ns, nullptr);
  scan(t.instants.ts_ns, nullptr);
  scan(t.counters.ts_ns, nullptr);
  if (any) [[unlikely]] {
    uint64_t dropped = 0;
    std::vector<uint8_t> drop;
    auto mark = [&](const std::vector<Ns>& ts, const std::vector<Ns>* dur) {
      drop.assign(ts.size(), 0);
      for (size_t i = 0; i < ts.size(); ++i) {
        drop[i] = out(ts[i]) || (dur != nullptr && out(ts[i] + (*dur)[i]));
        dropped += drop[i];
      }
      return ts.size();
    };
    drop_rows(t.gpu, mark(t.gpu.start_ns, &t.gpu.dur_ns), drop);
    drop_rows(t.host, mark(t.host.start_ns, &t.host.dur_ns), drop);
    drop_rows(t.runtime, mark(t.runtime.start_ns, &t.runtime.dur_ns), drop);
    drop_rows(t.flows, mark(t.flows.ts_ns, nullptr), drop);
    drop_rows(t.instants, mark(t.instants.ts_ns, nullptr), drop);
    {
      CounterSamples& c = t.counters;
      const size_t n = mark(c.ts_ns, nullptr);
      size_t j = 0;
      for (size_t i = 0; i < n; ++i)
        if (!drop[i]) {
          c.name[j] = c.name[i];
          c.pid[j] = c.pid[i];
          c.ts_ns[j] = c.ts_ns[i];
          c.value[j] = c.value[i];
          ++j;
        }
      c.name.resize(j);
      c.pid.resize(j);
      c.ts_ns.resize(j);
      c.value.resize(j);
    }
    t.diagnostics.add("time_overflow", [&] {
      return fmt::format(
          "{} event(s) whose time (plus baseTimeNanoseconds {}) is outside the times chopper "
          "keeps (within 2^62 ns of 1970) skipped",
          dropped, b);
    });
    if (dropped > 1) t.diagnostics.add_count("time_overflow", dropped - 1);
  }
  if (b != 0)
    for (auto* col : {&t.gpu.start_ns, &t.host.start_ns, &t.runtime.start_ns, &t.flows.ts_ns,
                      &t.instants.ts_ns, &t.counters.ts_ns})
      for (Ns& x : *col) x += b;
}

void drop_gpu_activities_outside_trace(RankTrace& t) {
  const size_t n = t.gpu.start_ns.size();
  if (n == 0) return;
  const Ns margin = Ns{600} * 1'000'000'000;  // 10 minutes
  // ts 0 (the base once added) is "not stamped" when the trace's GPU times are far from it.
  const Ns zero = t.meta.has_base_time ? t.meta.base_time_ns : 0;
  std::vector<Ns> starts = t.gpu.start_ns;
  std::nth_element(starts.begin(), starts.begin() + static_cast<std::ptrdiff_t>(n / 2),
                   starts.end());
  const Ns median = starts[n / 2];
  const bool zero_unset = median - zero > margin || zero - median > margin;
  Ns lo = std::numeric_limits<Ns>::max();
  Ns hi = std::numeric_limits<Ns>::min();
  auto span = [&](const std::vector<Ns>& start, const std::vector<Ns>& dur) {
    for (size_t i = 0; i < start.size(); ++i) {
      if (zero_unset && start[i] == zero) continue;  // Kineto's own overhead rows at ts 0
      lo = std::min(lo, start[i]);
      hi = std::max(hi, start[i] + dur[i]);
    }
  };
  span(t.host.start_ns, t.host.dur_ns);
  span(t.runtime.start_ns, t.runtime.dur_ns);
  const bool host = lo <= hi;  // without host events only the unstamped rows can be told
  // Times are within kTimeLimit (2^62), so these sums do not overflow.
  auto outside = [&](size_t i) {
    const Ns s = t.gpu.start_ns[i];
    return (zero_unset && s == zero) ||
           (host && (s < lo - margin || s + t.gpu.dur_ns[i] > hi + margin));
  };
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += outside(i) ? 1 : 0;
  if (bad == 0) [[likely]]
    return;
  std::vector<uint8_t> drop(n);
  size_t first = n;
  for (size_t i = 0; i < n; ++i) {
    drop[i] = outside(i) ? 1 : 0;
    if (drop[i] != 0 && first == n) first = i;
  }
  const Ns first_start = t.gpu.start_ns[first];
  const Ns first_dur = t.gpu.dur_ns[first];
  drop_rows(t.gpu, n, drop);
  t.diagnostics.add("gpu_activity_outside_trace", [&] {
    return fmt::format(
        "{} GPU activit{} with ts 0 in a trace whose GPU times are far from it, or more than 10 "
        "minutes outside its host events, skipped, e.g. one at {} ns lasting {} ns: CUPTI lost "
        "their times (in its per-kernel counter mode it writes ts 0 for the activities launched "
        "before the profiled steps)",
        bad, bad == 1 ? "y" : "ies", first_start, first_dur);
  });
  if (bad > 1) t.diagnostics.add_count("gpu_activity_outside_trace", bad - 1);
}

}  // namespace chopper::kineto_parser
