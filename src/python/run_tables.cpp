#include "run_tables.hpp"

#include <string_view>

namespace chopper::python {

namespace {

std::string_view host_kind_name(HostKind k) {
  switch (k) {
    case HostKind::kCpuOp:
      return "cpu_op";
    case HostKind::kUserAnnotation:
      return "user_annotation";
    case HostKind::kPythonFunction:
      return "python_function";
  }
  return "?";
}

Cell id_or_null(int64_t v) {
  return v == kNoId ? Cell::null() : Cell::of(v);
}

}  // namespace

std::shared_ptr<Table> host_ops_table(const Run& run) {
  auto t = std::make_shared<Table>(TableSchema{
      "host_ops",
      "Host operations of every readable rank, as linked (the per-thread host-op tree)",
      {{"rank", ColType::kInt, "rank", "", "never"},
       {"row", ColType::kInt, "index of the host op in its rank (what parent refers to)", "",
        "never"},
       {"pid", ColType::kInt, "process id in the trace", "", "never"},
       {"tid", ColType::kInt, "thread id in the trace", "", "never"},
       {"kind", ColType::kText, "cpu_op, user_annotation or python_function", "", "never"},
       {"category", ColType::kText, "category as the file names it", "", "never"},
       {"name", ColType::kText, "name", "", "never"},
       {"start_ns", ColType::kInt, "start, trace clock", "ns", "never"},
       {"dur_ns", ColType::kInt, "duration", "ns", "never"},
       {"parent", ColType::kInt, "row of the enclosing host op on the same thread", "",
        "a top-level host op"},
       {"external_id", ColType::kInt, "External id (links to runtime calls and kernels)", "",
        "the trace gives none"},
       {"sequence_number", ColType::kInt, "autograd sequence number", "",
        "the trace gives none"}}});
  for (const RankSlot& slot : run.ranks) {
    if (!slot.ok) continue;
    const RankTrace& tr = slot.trace;
    const HostOps& h = tr.host;
    for (size_t i = 0; i < h.size(); ++i) {
      const ThreadKey& th = tr.threads[static_cast<size_t>(h.thread[i])];
      const int32_t parent = h.parent.empty() ? -1 : h.parent[i];
      t->add_row({Cell::of(slot.rank), Cell::of(i), Cell::of(th.pid), Cell::of(th.tid),
                  Cell::of(host_kind_name(h.kind[i])), Cell::of(tr.strings.str(h.category[i])),
                  Cell::of(tr.strings.str(h.name[i])), Cell::of(h.start_ns[i]),
                  Cell::of(h.dur_ns[i]), parent < 0 ? Cell::null() : Cell::of(parent),
                  id_or_null(h.external_id[i]), id_or_null(h.sequence_number[i])});
    }
  }
  return t;
}

std::shared_ptr<Table> ranks_table(const Run& run) {
  auto t = std::make_shared<Table>(TableSchema{
      "ranks",
      "Every file of the run, in rank order",
      {{"file", ColType::kText, "the trace file", "", "never"},
       {"rank", ColType::kInt, "rank (distributedInfo, else the file name)", "", "neither says"},
       {"ok", ColType::kInt, "1 = read", "", "never"},
       {"error", ColType::kText, "why it could not be read (file, byte offset)", "",
        "never ('' when read)"},
       {"missing", ColType::kInt, "1 = the path does not exist", "", "never"}}});
  for (const RankSlot& s : run.ranks)
    t->add_row({Cell::of(s.file), s.rank < 0 ? Cell::null() : Cell::of(s.rank),
                Cell::of(s.ok ? 1 : 0), Cell::of(s.error), Cell::of(s.missing ? 1 : 0)});
  return t;
}

}  // namespace chopper::python
