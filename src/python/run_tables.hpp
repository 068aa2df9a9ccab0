#pragma once
// The tables of a loaded run for chopper.load (src/python/module.cpp): the linked, labelled run
// as `chopper tree` and `chopper timeline` load it (read, link, classify, validate, label), without
// the analyses, as in-memory tables.
#include <memory>
#include <vector>

#include "chopper/model/run.hpp"
#include "chopper/model/table.hpp"

namespace chopper::python {

// One row per host operation of every readable rank: rank, row (its index in the rank, which
// parent refers to), pid, tid, kind (cpu_op, user_annotation, python_function), category, name,
// start_ns, dur_ns, parent (the enclosing host op on its thread; NULL at the top),
// external_id and sequence_number (NULL when the trace has none). Trace clock, ns.
std::shared_ptr<Table> host_ops_table(const Run& run);

// One row per file of the run: file, rank (NULL when not known), ok (1/0), error ("" when ok),
// missing (1 when the path does not exist).
std::shared_ptr<Table> ranks_table(const Run& run);

}  // namespace chopper::python
