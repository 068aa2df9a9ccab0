#include "chopper/ingest/nsys/nsys_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "chopper/base/error.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/ingest/nsys/nsys_db.hpp"

namespace chopper {

namespace {

using nsys::Db;

// globalTid / globalPid: the process id in bits 24..47, the thread id in bits 0..23.
constexpr const char* kPidSql = "((globalPid >> 24) & 16777215)";
constexpr const char* kTidPidSql = "((globalTid >> 24) & 16777215)";
int64_t pid_of(int64_t g) {
  return (g >> 24) & 0xFFFFFF;
}
int64_t tid_of(int64_t g) {
  return g & 0xFFFFFF;
}

// The GPU activity tables, their kind and the category Kineto gives the same activity.
struct GpuTable {
  const char* table;
  GpuKind kind;
  const char* category;
};
constexpr GpuTable kGpuTables[] = {
    {"CUPTI_ACTIVITY_KIND_KERNEL", GpuKind::kKernel, "kernel"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", GpuKind::kMemcpy, "gpu_memcpy"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", GpuKind::kMemset, "gpu_memset"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", GpuKind::kSync, "cuda_sync"},
};
constexpr const char* kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kNvtxTable = "NVTX_EVENTS";
constexpr int kNvtxPushPop = 59;
constexpr int kNvtxStartEnd = 60;

// copyKind (CUPTI_ActivityMemcpyKind, ENUM_CUDA_MEMCPY_OPER): the direction as Kineto names it.
std::string_view copy_kind_name(int64_t k) {
  static constexpr std::string_view kNames[] = {"",     "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return k >= 1 && k <= 10 ? kNames[k] : "other";
}
// memKind (CUPTI_ActivityMemoryKind, ENUM_CUDA_MEM_KIND).
std::string_view mem_kind_name(int64_t k) {
  static constexpr std::string_view kNames[] = {"Unknown", "Pageable", "Pinned", "Device",
                                                "Array",   "Managed",  "Device", "Managed"};
  return k >= 0 && k <= 7 ? kNames[k] : "Unknown";
}
// syncType (CUpti_ActivitySynchronizationType): Kineto's names.
std::string_view sync_name(int64_t k) {
  switch (k) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

// A runtime API name without its version suffix: cudaLaunchKernel_v7000 -> cudaLaunchKernel.
std::string_view strip_version(std::string_view s) {
  const size_t v = s.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= s.size()) return s;
  for (size_t i = v + 2; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return s;
  return s.substr(0, v);
}

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

class Reader {
 public:
  Reader(const std::string& file, RankTrace& t) : db_(file), t_(t) {}

  void check_kind() {
    if (db_.has_table("chopper_tables"))
      throw NotATraceError(db_.path(), 0,
                           std::string(kOwnOutput) + "a chopper.sqlite written by chopper analyze");
    if (!db_.has_table("CUPTI_ACTIVITY_KIND_KERNEL") && !db_.has_table("StringIds"))
      throw NotATraceError(db_.path(), 0,
                           "an SQLite database that is not an Nsight Systems export (no "
                           "CUPTI_ACTIVITY_KIND_KERNEL or StringIds table)");
  }

  std::vector<NsysPart> parts() {
    std::set<std::pair<int64_t, int32_t>> seen;
    for (const GpuTable& g : kGpuTables) {
      if (!db_.has_column(g.table, "deviceId") || !db_.has_column(g.table, "globalPid")) continue;
      db_.query(fmt::format("SELECT DISTINCT {}, deviceId FROM {}", kPidSql, g.table),
                [&](const Db::Row& r) { seen.emplace(r.i64(0), static_cast<int32_t>(r.i64(1))); });
    }
    std::vector<NsysPart> out;
    for (const auto& [pid, dev] : seen) out.push_back({pid, dev, -1});
    return out;
  }

  void read(const NsysPart& part, const std::vector<NsysPart>& all) {
    part_ = part;
    for (const NsysPart& p : all)
      if (p.pid == part.pid) process_devices_.push_back(p.device);
    first_part_ = !all.empty() && all.front().pid == part.pid && all.front().device == part.device;
    load_strings();
    read_clock();
    read_gpu();
    read_runtime();
    read_nvtx();
    read_names();
    read_devices();
    set_rank(all);
    count_events();
    if (first_part_) count_unread();
  }

 private:
  // Each query names only the columns the table has; a missing one reads as NULL.
  std::string col(const std::string& table, std::string_view c) {
    auto [it, fresh] = columns_.try_emplace(table);
    if (fresh) {
      for (std::string& name : db_.columns(table)) it->second.insert(std::move(name));
    }
    if (it->second.count(std::string(c)) == 0) return "NULL";
    read_columns_[table].insert(std::string(c));
    return fmt::format("\"{}\"", c);
  }

  void load_strings() {
    if (!db_.has_table("StringIds")) return;
    read_columns_["StringIds"] = {"id", "value"};
    db_.query("SELECT id, value FROM StringIds",
              [&](const Db::Row& r) { strings_.emplace(r.i64(0), std::string(r.text(1))); });
  }

  // The string of `id` interned (0: NULL); an id StringIds lacks is counted and named "".
  StrId str(const Db::Row& r, int c, const char* table, const char* column, int64_t rowid) {
    if (r.null(c)) return 0;
    const int64_t id = r.i64(c);
    if (auto it = interned_.find(id); it != interned_.end()) return it->second;
    auto s = strings_.find(id);
    if (s == strings_.end()) {
      t_.diagnostics.add("nsys_unknown_string", [&] {
        return fmt::format("{}: {} rowid {}: {} {} is not in StringIds; kept with an empty name",
                           db_.path(), table, rowid, column, id);
      });
      return t_.strings.intern("");
    }
    const StrId sid = t_.strings.intern(s->second);
    interned_.emplace(id, sid);
    return sid;
  }

  void read_clock() {
    const std::string tab = "TARGET_INFO_SESSION_START_TIME";
    if (db_.has_table(tab) && col(tab, "utcEpochNs") != "NULL") {
      db_.query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
                [&](const Db::Row& r) {
                  if (!r.null(0)) {
                    origin_ = r.i64(0);
                    utc_ = true;
                  }
                });
    }
    t_.meta.ts_format = utc_ ? "nsys_utc_epoch_ns" : "nsys_session_ns";
  }

  // end < start, or no time: counted and skipped.
  bool times(const Db::Row& r, int c, const char* table, int64_t rowid, Ns& start, Ns& dur) {
    if (r.null(c) || r.null(c + 1)) {
      t_.diagnostics.add("nsys_bad_row", [&] {
        return fmt::format("{}: {} rowid {}: no start or end; skipped", db_.path(), table, rowid);
      });
      return false;
    }
    const int64_t s = r.i64(c), e = r.i64(c + 1);
    if (e < s) {
      t_.diagnostics.add("nsys_bad_row", [&] {
        return fmt::format("{}: {} rowid {}: end {} before start {}; skipped", db_.path(), table,
                           rowid, e, s);
      });
      return false;
    }
    start = s + origin_;
    dur = e - s;
    return true;
  }

  void read_gpu() {
    GpuActivities& g = t_.gpu;
    for (const GpuTable& gt : kGpuTables) {
      const std::string tab = gt.table;
      if (!db_.has_table(tab) || col(tab, "deviceId") == "NULL" || col(tab, "globalPid") == "NULL")
        continue;
      const StrId cat = t_.strings.intern(gt.category);
      // 0 rowid, 1 start, 2 end, 3 streamId, 4 correlationId, then per kind.
      std::string sql =
          fmt::format("SELECT rowid, {}, {}, {}, {}", col(tab, "start"), col(tab, "end"),
                      col(tab, "streamId"), col(tab, "correlationId"));
      switch (gt.kind) {
        case GpuKind::kKernel:  // 5 demangled 6 short 7 mangled 8-13 grid, block 14 regs 15-16
                                // shared 17 graphId
          sql += fmt::format(
              ", {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}", col(tab, "demangledName"),
              col(tab, "shortName"), col(tab, "mangledName"), col(tab, "gridX"), col(tab, "gridY"),
              col(tab, "gridZ"), col(tab, "blockX"), col(tab, "blockY"), col(tab, "blockZ"),
              col(tab, "registersPerThread"), col(tab, "staticSharedMemory"),
              col(tab, "dynamicSharedMemory"), col(tab, "graphId"));
          break;
        case GpuKind::kMemcpy:  // 5 bytes 6 copyKind 7 graphId
          sql += fmt::format(", {}, {}, {}", col(tab, "bytes"), col(tab, "copyKind"),
                             col(tab, "graphId"));
          break;
        case GpuKind::kMemset:  // 5 bytes 6 memKind 7 graphId
          sql += fmt::format(", {}, {}, {}", col(tab, "bytes"), col(tab, "memKind"),
                             col(tab, "graphId"));
          break;
        case GpuKind::kSync:  // 5 syncType
          sql += fmt::format(", {}", col(tab, "syncType"));
          break;
      }
      sql += fmt::format(" FROM {} WHERE deviceId = {} AND {} = {} ORDER BY start, rowid", tab,
                         part_.device, kPidSql, part_.pid);
      db_.query(sql, [&](const Db::Row& r) {
        const int64_t rowid = r.i64(0);
        Ns start = 0, dur = 0;
        if (!times(r, 1, gt.table, rowid, start, dur)) return;
        std::array<int32_t, 3> grid{0, 0, 0}, block{0, 0, 0};
        int32_t regs = -1, shared = -1;
        int64_t bytes = -1, graph = kNoId;
        StrId name = 0;
        auto i32 = [&](int c, int32_t dflt) {
          return r.null(c) ? dflt
                           : static_cast<int32_t>(std::clamp<int64_t>(r.i64(c), -1, INT32_MAX));
        };
        switch (gt.kind) {
          case GpuKind::kKernel: {
            for (int c = 5; c <= 7 && name == 0; ++c) {
              static constexpr const char* kCols[] = {"demangledName", "shortName", "mangledName"};
              name = str(r, c, gt.table, kCols[c - 5], rowid);
            }
            if (name == 0) {
              t_.diagnostics.add("nsys_unknown_string", [&] {
                return fmt::format("{}: {} rowid {}: a kernel without a name; kept, unnamed",
                                   db_.path(), gt.table, rowid);
              });
            }
            for (int k = 0; k < 3; ++k) {
              grid[static_cast<size_t>(k)] = i32(8 + k, 0);
              block[static_cast<size_t>(k)] = i32(11 + k, 0);
            }
            regs = i32(14, -1);
            if (!r.null(15) || !r.null(16)) shared = i32(15, 0) + i32(16, 0);
            if (!r.null(17)) graph = r.i64(17);
            break;
          }
          case GpuKind::kMemcpy:
            bytes = r.null(5) ? -1 : r.i64(5);
            name = kind_name(r.i64(6),
                             [](int64_t k) { return fmt::format("Memcpy {}", copy_kind_name(k)); });
            if (!r.null(7)) graph = r.i64(7);
            break;
          case GpuKind::kMemset:
            bytes = r.null(5) ? -1 : r.i64(5);
            name = kind_name(1000 + r.i64(6), [](int64_t k) {
              return fmt::format("Memset ({})", mem_kind_name(k - 1000));
            });
            if (!r.null(7)) graph = r.i64(7);
            break;
          case GpuKind::kSync:
            name = kind_name(2000 + r.i64(5),
                             [](int64_t k) { return std::string(sync_name(k - 2000)); });
            break;
        }
        g.kind.push_back(gt.kind);
        g.device.push_back(part_.device);
        g.stream.push_back(r.null(3) ? -1 : r.i64(3));
        g.start_ns.push_back(start);
        g.dur_ns.push_back(dur);
        const int64_t corr = r.null(4) ? kNoId : r.i64(4);
        g.correlation.push_back(corr);
        if (corr != kNoId && process_devices_.size() > 1) my_correlations_.insert(corr);
        g.external_id.push_back(kNoId);
        g.name.push_back(name);
        g.category.push_back(cat);
        g.grid.push_back(grid);
        g.block.push_back(block);
        g.registers.push_back(regs);
        g.shared_mem_bytes.push_back(shared);
        g.bytes.push_back(bytes);
        g.graph_id.push_back(graph);
        g.comm_args.push_back(kNoRow);
        ++by_category_[static_cast<size_t>(gt.kind)];
      });
    }
  }

  // The correlation ids of the process's GPU work on its other devices: their runtime calls belong
  // to those devices' ranks.
  std::unordered_set<int64_t> other_device_correlations() {
    std::unordered_set<int64_t> out;
    if (process_devices_.size() < 2) return out;
    for (const GpuTable& gt : kGpuTables) {
      const std::string tab = gt.table;
      if (!db_.has_table(tab) || col(tab, "correlationId") == "NULL" ||
          col(tab, "deviceId") == "NULL" || col(tab, "globalPid") == "NULL")
        continue;
      db_.query(fmt::format("SELECT correlationId FROM {} WHERE deviceId <> {} AND {} = {}", tab,
                            part_.device, kPidSql, part_.pid),
                [&](const Db::Row& r) { out.insert(r.i64(0)); });
    }
    return out;
  }

  int32_t thread(int64_t global_tid) {
    const ThreadKey k{pid_of(global_tid), tid_of(global_tid)};
    auto [it, fresh] =
        thread_index_.try_emplace(global_tid, static_cast<int32_t>(t_.threads.size()));
    if (fresh) t_.threads.push_back(k);
    return it->second;
  }

  void read_runtime() {
    const std::string tab = kRuntimeTable;
    if (!db_.has_table(tab) || col(tab, "globalTid") == "NULL") return;
    const std::unordered_set<int64_t> others = other_device_correlations();
    // A call of a process on several devices goes to the device its GPU work ran on; one without
    // GPU work (cudaStreamSynchronize, cudaMalloc) to the process's first device.
    const bool first_device = process_devices_.empty() || process_devices_.front() == part_.device;
    RuntimeCalls& rt = t_.runtime;
    db_.query(fmt::format("SELECT rowid, {}, {}, globalTid, {}, {} FROM {} WHERE {} = {} ORDER BY "
                          "start, rowid",
                          col(tab, "start"), col(tab, "end"), col(tab, "correlationId"),
                          col(tab, "nameId"), tab, kTidPidSql, part_.pid),
              [&](const Db::Row& r) {
                const int64_t corr = r.null(4) ? kNoId : r.i64(4);
                if (!others.empty()) {
                  const bool mine = corr != kNoId && my_correlations_.count(corr) > 0;
                  if (!mine && (others.count(corr) > 0 || !first_device)) return;
                }
                const int64_t rowid = r.i64(0);
                Ns start = 0, dur = 0;
                if (!times(r, 1, kRuntimeTable, rowid, start, dur)) return;
                StrId name = 0;
                if (!r.null(5)) {
                  const StrId raw = str(r, 5, kRuntimeTable, "nameId", rowid);
                  auto [it, fresh] = stripped_.try_emplace(raw, raw);
                  if (fresh) {
                    const std::string_view s = t_.strings.str(raw);
                    const std::string_view bare = strip_version(s);
                    if (bare.size() != s.size()) it->second = t_.strings.intern(std::string(bare));
                  }
                  name = it->second;
                }
                const std::string_view n = t_.strings.str(name);
                rt.driver.push_back(starts_with(n, "cu") && !starts_with(n, "cuda"));
                rt.thread.push_back(thread(r.i64(3)));
                rt.start_ns.push_back(start);
                rt.dur_ns.push_back(dur);
                rt.name.push_back(name);
                rt.correlation.push_back(corr);
                rt.external_id.push_back(kNoId);
                ++by_category_[rt.driver.back() ? kDriverSlot : kRuntimeSlot];
              });
  }

  void read_nvtx() {
    const std::string tab = kNvtxTable;
    if (!db_.has_table(tab) || col(tab, "globalTid") == "NULL" || col(tab, "eventType") == "NULL")
      return;
    const StrId cat = t_.strings.intern("user_annotation");
    HostOps& h = t_.host;
    db_.query(
        fmt::format("SELECT rowid, {}, {}, globalTid, {}, {} FROM {} WHERE eventType IN ({}, {}) "
                    "AND {} = {} ORDER BY start, rowid",
                    col(tab, "start"), col(tab, "end"), col(tab, "text"), col(tab, "textId"), tab,
                    kNvtxPushPop, kNvtxStartEnd, kTidPidSql, part_.pid),
        [&](const Db::Row& r) {
          const int64_t rowid = r.i64(0);
          Ns start = 0, dur = 0;
          if (!times(r, 1, kNvtxTable, rowid, start, dur)) return;
          const StrId name =
              !r.null(4) ? t_.strings.intern(r.text(4)) : str(r, 5, kNvtxTable, "textId", rowid);
          h.kind.push_back(HostKind::kUserAnnotation);
          h.category.push_back(cat);
          h.thread.push_back(thread(r.i64(3)));
          h.start_ns.push_back(start);
          h.dur_ns.push_back(dur);
          h.name.push_back(name);
          h.external_id.push_back(kNoId);
          h.sequence_number.push_back(kNoId);
          h.fwd_thread_id.push_back(kNoId);
          h.record_function_id.push_back(kNoId);
          h.shapes.push_back(kNoRow);
          h.comm_args.push_back(kNoRow);
          ++by_category_[kNvtxSlot];
        });
  }

  void read_names() {
    if (db_.has_table("ThreadNames") && col("ThreadNames", "nameId") != "NULL" &&
        col("ThreadNames", "globalTid") != "NULL") {
      db_.query(fmt::format("SELECT rowid, globalTid, nameId FROM ThreadNames WHERE {} = {}",
                            kTidPidSql, part_.pid),
                [&](const Db::Row& r) {
                  const StrId s = str(r, 2, "ThreadNames", "nameId", r.i64(0));
                  const int64_t g = r.i64(1);
                  t_.meta.thread_names.push_back(
                      {{pid_of(g), tid_of(g)}, std::string(t_.strings.str(s))});
                });
    }
    if (db_.has_table("PROCESSES") && col("PROCESSES", "pid") != "NULL" &&
        col("PROCESSES", "name") != "NULL") {
      db_.query(fmt::format("SELECT pid, name FROM PROCESSES WHERE pid = {}", part_.pid),
                [&](const Db::Row& r) {
                  t_.meta.process_names.emplace_back(r.i64(0), std::string(r.text(1)));
                });
    }
  }

  // The part's GPU from TARGET_INFO_GPU, found through TARGET_INFO_CUDA_DEVICE (the process's
  // CUDA device id -> the GPU's id) where the export has it, else by id.
  void read_devices() {
    const std::string gpu = "TARGET_INFO_GPU";
    if (!db_.has_table(gpu)) return;
    int64_t gpu_id = part_.device;
    const std::string cd = "TARGET_INFO_CUDA_DEVICE";
    if (db_.has_table(cd) && col(cd, "gpuId") != "NULL" && col(cd, "cudaId") != "NULL") {
      const std::string pid = col(cd, "pid");
      db_.query(fmt::format("SELECT gpuId FROM {} WHERE cudaId = {}{} LIMIT 1", cd, part_.device,
                            pid == "NULL" ? "" : fmt::format(" AND pid = {}", part_.pid)),
                [&](const Db::Row& r) { gpu_id = r.i64(0); });
      col(cd, "numMultiprocessors");
    }
    db_.query(fmt::format("SELECT {}, {}, {}, {}, {}, {}, {} FROM {} WHERE id = {} LIMIT 1",
                          col(gpu, "name"), col(gpu, "totalMemory"), col(gpu, "smCount"),
                          col(gpu, "computeMajor"), col(gpu, "computeMinor"), col(gpu, "clockRate"),
                          col(gpu, "memoryBandwidth"), gpu, gpu_id),
              [&](const Db::Row& r) {
                DeviceProps d;
                d.id = part_.device;
                d.name = std::string(r.text(0));
                auto opt = [&](int c) { return r.null(c) ? int64_t{-1} : r.i64(c); };
                d.total_global_mem_bytes = opt(1);
                d.num_sms = opt(2);
                d.compute_major = opt(3);
                d.compute_minor = opt(4);
                t_.meta.devices.push_back(d);
                if (!r.null(5))
                  t_.meta.other.emplace_back("gpu_clock_rate_hz", std::to_string(r.i64(5)));
                if (!r.null(6))
                  t_.meta.other.emplace_back("gpu_memory_bandwidth_bytes_per_s",
                                             std::to_string(r.i64(6)));
              });
    col(gpu, "id");
  }

  void set_rank(const std::vector<NsysPart>& all) {
    if (part_.rank >= 0) {
      t_.meta.rank = part_.rank;
      t_.meta.rank_source = "nsys process order";
      t_.diagnostics.add("nsys_rank", [&] {
        return fmt::format(
            "{}: process {} on device {}: rank {}, numbered by process id then device over the "
            "run's exports (the export names no ranks)",
            db_.path(), part_.pid, part_.device, part_.rank);
      });
    } else {
      t_.diagnostics.add("nsys_rank", [&] {
        return fmt::format(
            "{}: the one process with GPU work ({} on device {}{}): its rank comes from the file "
            "name, else is assigned",
            db_.path(), part_.pid, part_.device, all.empty() ? ", none found" : "");
      });
    }
  }

  void count_events() {
    static constexpr const char* kNames[kSlots] = {"kernel",         "gpu_memcpy",   "gpu_memset",
                                                   "cuda_sync",      "cuda_runtime", "cuda_driver",
                                                   "user_annotation"};
    for (size_t i = 0; i < kSlots; ++i) {
      if (by_category_[i] == 0) continue;
      t_.x_events_by_category.emplace_back(t_.strings.intern(kNames[i]), by_category_[i]);
      t_.total_events += by_category_[i];
    }
    t_.events_by_ph.emplace_back('X', t_.total_events);
  }

  // Every table the reader does not read, and every column of a read table it does not, listed
  // once (in the export's first rank); rows of read tables that belong to no rank (processes
  // without GPU work, NVTX marks and domains) too.
  void count_unread() {
    std::vector<std::string> tables, columns;
    for (const std::string& tab : db_.tables()) {
      // GPU metrics are read as telemetry (nsys_gpu_metrics.hpp), which counts what it skips.
      if (tab == "GPU_METRICS" || tab == "TARGET_INFO_GPU_METRICS") continue;
      auto it = read_columns_.find(tab);
      if (it == read_columns_.end()) {
        tables.push_back(fmt::format("{} ({} rows)", tab, db_.row_count(tab)));
        continue;
      }
      for (const std::string& c : db_.columns(tab))
        if (it->second.count(c) == 0) columns.push_back(tab + "." + c);
    }
    if (!tables.empty()) {
      t_.diagnostics.add_count("nsys_unread", tables.size() - 1);
      t_.diagnostics.add("nsys_unread",
                         fmt::format("{}: tables not read: {}", db_.path(), join(tables)));
    }
    if (!columns.empty()) {
      t_.diagnostics.add_count("nsys_unread", columns.size() - 1);
      t_.diagnostics.add("nsys_unread",
                         fmt::format("{}: columns not read: {}", db_.path(), join(columns)));
    }
    std::vector<std::string> rows;
    if (db_.has_table(kNvtxTable) && read_columns_.count(kNvtxTable) > 0)
      db_.query(
          fmt::format("SELECT eventType, count(*) FROM {} WHERE eventType NOT IN ({}, {}) "
                      "GROUP BY eventType ORDER BY eventType",
                      kNvtxTable, kNvtxPushPop, kNvtxStartEnd),
          [&](const Db::Row& r) {
            rows.push_back(fmt::format("{} eventType {}: {} rows", kNvtxTable, r.i64(0), r.i64(1)));
          });
    if (db_.has_table(kRuntimeTable) && read_columns_.count(kRuntimeTable) > 0) {
      int64_t n = 0;
      std::string gpu_pids;
      for (const GpuTable& gt : kGpuTables)
        if (read_columns_.count(gt.table) > 0)
          gpu_pids += fmt::format("{}SELECT {} FROM {}", gpu_pids.empty() ? "" : " UNION ", kPidSql,
                                  gt.table);
      if (!gpu_pids.empty())
        db_.query(fmt::format("SELECT count(*) FROM {} WHERE {} NOT IN ({})", kRuntimeTable,
                              kTidPidSql, gpu_pids),
                  [&](const Db::Row& r) { n = r.i64(0); });
      if (n > 0)
        rows.push_back(fmt::format("{}: {} rows of processes without GPU work", kRuntimeTable, n));
    }
    if (!rows.empty()) {
      t_.diagnostics.add_count("nsys_unread", rows.size() - 1);
      t_.diagnostics.add("nsys_unread",
                         fmt::format("{}: rows not read: {}", db_.path(), join(rows)));
    }
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) {
      if (!out.empty()) out += ", ";
      out += s;
    }
    return out;
  }

  Db db_;
  RankTrace& t_;
  NsysPart part_;
  std::vector<int32_t> process_devices_;
  bool first_part_ = false;
  Ns origin_ = 0;
  bool utc_ = false;
  std::unordered_map<int64_t, std::string> strings_;
  std::unordered_map<int64_t, StrId> interned_;
  std::unordered_map<int64_t, int32_t> thread_index_;
  std::unordered_set<int64_t> my_correlations_;
  std::map<std::string, std::set<std::string>> columns_;       // of each table looked at
  std::map<std::string, std::set<std::string>> read_columns_;  // the ones read
  // Rows read per category: the GpuKinds, then runtime, driver and NVTX.
  static constexpr size_t kRuntimeSlot = 4, kDriverSlot = 5, kNvtxSlot = 6, kSlots = 7;
  std::array<uint64_t, kSlots> by_category_{};
  std::unordered_map<StrId, StrId> stripped_;      // runtime name -> without _vNNNN
  std::unordered_map<int64_t, StrId> kind_names_;  // memcpy/memset/sync kind -> its name
  template <class F>
  StrId kind_name(int64_t key, F&& make) {
    auto [it, fresh] = kind_names_.try_emplace(key, 0);
    if (fresh) it->second = t_.strings.intern(make(key));
    return it->second;
  }
};

}  // namespace

std::vector<NsysPart> nsys_parts(const std::string& file) {
  RankTrace scratch;
  Reader r(file, scratch);
  r.check_kind();
  return r.parts();
}

std::string nsys_part_path(const std::string& file, const NsysPart& p) {
  return fmt::format("{}#process={},device={},rank={}", file, p.pid, p.device, p.rank);
}

bool parse_nsys_part_path(const std::string& path, std::string& file, NsysPart& p) {
  const size_t hash = path.rfind("#process=");
  if (hash == std::string::npos) return false;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return false;
  NsysPart out;
  const char* s = path.data() + hash + 9;
  const char* end = path.data() + path.size();
  auto num = [&](int64_t& v, std::string_view next) {
    auto [q, e] = std::from_chars(s, end, v);
    if (e != std::errc()) return false;
    s = q;
    if (next.empty()) return s == end;
    if (static_cast<size_t>(end - s) < next.size() || std::string_view(s, next.size()) != next)
      return false;
    s += next.size();
    return true;
  };
  int64_t dev = -1;
  if (!num(out.pid, ",device=") || !num(dev, ",rank=") || !num(out.rank, "")) return false;
  out.device = static_cast<int32_t>(dev);
  file = path.substr(0, hash);
  p = out;
  return true;
}

std::vector<std::string> nsys_rank_paths(const std::string& file, int64_t* next_rank) {
  std::vector<NsysPart> parts = nsys_parts(file);
  if (parts.size() <= 1) return {file};
  std::vector<std::string> out;
  for (NsysPart& p : parts) {
    p.rank = (*next_rank)++;
    out.push_back(nsys_part_path(file, p));
  }
  return out;
}

RankTrace read_nsys_file(const std::string& path) {
  std::string file = path;
  NsysPart part;
  const bool is_part = parse_nsys_part_path(path, file, part);
  RankTrace t;
  t.file = path;
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  t.file_bytes = ec ? 0 : size;
  Reader r(file, t);
  r.check_kind();
  const std::vector<NsysPart> all = r.parts();
  if (!is_part) {
    if (all.size() > 1) {
      std::string names;
      for (const NsysPart& p : all)
        names += fmt::format("{}{}", names.empty() ? "" : ", ", nsys_part_path(file, p));
      throw InputError(file, 0,
                       fmt::format("an Nsight Systems export of {} (process, device) pairs with "
                                   "GPU work: each is a rank, read one by one as {}",
                                   all.size(), names));
    }
    if (!all.empty()) part = all.front();
  } else {
    const bool found = std::any_of(all.begin(), all.end(), [&](const NsysPart& p) {
      return p.pid == part.pid && p.device == part.device;
    });
    if (!found)
      throw InputError(file, 0,
                       fmt::format("no GPU work of process {} on device {} in this export",
                                   part.pid, part.device));
  }
  r.read(part, all);
  return t;
}

}  // namespace chopper
