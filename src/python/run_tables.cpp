#include "run_tables.hpp"

#include <span>
#include <string_view>

#include "chopper/model/table_def.hpp"

namespace chopper::python {

namespace {

Cell id_or_null(int64_t v) {
  return v == kNoId ? Cell::null() : Cell::of(v);
}

// One host op of a rank, as a row of host_ops.
struct HostOpView {
  const RankSlot& slot;
  size_t i;
  const RankTrace& t() const { return slot.trace; }
  const ThreadKey& thread() const { return t().threads[static_cast<size_t>(t().host.thread[i])]; }
  int32_t parent() const { return t().host.parent.empty() ? -1 : t().host.parent[i]; }
};

inline constexpr auto kHostOpsTable = table<HostOpView>(
    "host_ops", "Host operations of every readable rank, as linked (the per-thread host-op tree)",
    column<HostOpView>("rank", ColType::kInt, "rank", kNever,
                       [](const HostOpView& v) { return Cell::of(v.slot.rank); }),
    column<HostOpView>("row", ColType::kInt,
                       "index of the host op in its rank (what parent refers to)", kNever,
                       [](const HostOpView& v) { return Cell::of(v.i); }),
    column<HostOpView>("pid", ColType::kInt, "process id in the trace", kNever,
                       [](const HostOpView& v) { return Cell::of(v.thread().pid); }),
    column<HostOpView>("tid", ColType::kInt, "thread id in the trace", kNever,
                       [](const HostOpView& v) { return Cell::of(v.thread().tid); }),
    column<HostOpView>("kind", ColType::kText, "cpu_op, user_annotation or python_function", kNever,
                       [](const HostOpView& v) {
                         switch (v.t().host.kind[v.i]) {
                           case HostKind::kCpuOp:
                             return Cell::of("cpu_op");
                           case HostKind::kUserAnnotation:
                             return Cell::of("user_annotation");
                           case HostKind::kPythonFunction:
                             return Cell::of("python_function");
                         }
                         return Cell::of("?");
                       }),
    column<HostOpView>(
        "category", ColType::kText, "category as the file names it", kNever,
        [](const HostOpView& v) { return Cell::of(v.t().strings.str(v.t().host.category[v.i])); }),
    column<HostOpView>(
        "name", ColType::kText, "name", kNever,
        [](const HostOpView& v) { return Cell::of(v.t().strings.str(v.t().host.name[v.i])); }),
    column<HostOpView>("start_ns", ColType::kInt, "start, trace clock", kNever,
                       [](const HostOpView& v) { return Cell::of(v.t().host.start_ns[v.i]); }),
    column<HostOpView>("dur_ns", ColType::kInt, "duration", kNever,
                       [](const HostOpView& v) { return Cell::of(v.t().host.dur_ns[v.i]); }),
    column<HostOpView>(
        "parent", ColType::kInt, "row of the enclosing host op on the same thread",
        "a top-level host op",
        [](const HostOpView& v) { return v.parent() < 0 ? Cell::null() : Cell::of(v.parent()); }),
    column<HostOpView>("external_id", ColType::kInt,
                       "External id (links to runtime calls and kernels)", "the trace gives none",
                       [](const HostOpView& v) { return id_or_null(v.t().host.external_id[v.i]); }),
    column<HostOpView>(
        "sequence_number", ColType::kInt, "autograd sequence number", "the trace gives none",
        [](const HostOpView& v) { return id_or_null(v.t().host.sequence_number[v.i]); }));

inline constexpr auto kRanksTable = table<RankSlot>(
    "ranks", "Every file of the run, in rank order",
    column<RankSlot>("file", ColType::kText, "the trace file", kNever,
                     [](const RankSlot& s) { return Cell::of(s.file); }),
    column<RankSlot>(
        "rank", ColType::kInt, "rank (distributedInfo, else the file name)", "neither says",
        [](const RankSlot& s) { return s.rank < 0 ? Cell::null() : Cell::of(s.rank); }),
    column<RankSlot>("ok", ColType::kInt, "1 = read", kNever,
                     [](const RankSlot& s) { return Cell::of(s.ok ? 1 : 0); }),
    column<RankSlot>("error", ColType::kText, "why it could not be read (file, byte offset)",
                     "never ('' when read)", [](const RankSlot& s) { return Cell::of(s.error); }),
    column<RankSlot>("missing", ColType::kInt, "1 = the path does not exist", kNever,
                     [](const RankSlot& s) { return Cell::of(s.missing ? 1 : 0); }));

// Keeps the one table it is given.
struct Keep : TableSink {
  std::shared_ptr<Table> t;
  void begin(const TableSchema& s) override { t = std::make_shared<Table>(s); }
  void row(std::span<const Cell> c) override { t->add_row(c); }
  void end() override {}
};

}  // namespace

std::shared_ptr<Table> host_ops_table(const Run& run) {
  Keep k;
  k.begin(kHostOpsTable.schema());
  for (const RankSlot& slot : run.ranks) {
    if (!slot.ok) continue;
    for (size_t i = 0; i < slot.trace.host.size(); ++i) kHostOpsTable.put(k, HostOpView{slot, i});
  }
  return k.t;
}

std::shared_ptr<Table> ranks_table(const Run& run) {
  Keep k;
  k.begin(kRanksTable.schema());
  for (const RankSlot& s : run.ranks) kRanksTable.put(k, s);
  return k.t;
}

}  // namespace chopper::python
