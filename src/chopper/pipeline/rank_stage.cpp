#include "chopper/pipeline/rank_stage.hpp"

#include <future>
#include <new>

#include "chopper/base/error.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/rocprof/counter_reader.hpp"

namespace chopper {
namespace {

// The reader's NotATraceError for content that does not start like JSON, as opposed to a JSON
// document that is not a trace (as load_run tells them apart).
bool not_json(const NotATraceError& e) {
  return e.reason().rfind("not a JSON trace", 0) == 0;
}

// Loads the file as load_run does for one slot: a trace, a skipped file or a failed slot.
// Returns whether a trace was loaded into part.slot.trace.
bool load_into(RankPart& part, const TracePath& path, const KinetoReadOptions& kineto) {
  RankSlot& s = part.slot;
  s.file = path.path;
  if (path.missing) {
    s.error = path.path + ": no such file or directory";
    s.missing = true;
    s.rank = rank_from_file_name(path.path);
    return false;
  }
  if (!path.skip.empty()) {
    part.not_trace = path.skip;
    return false;
  }
  try {
    s.trace = load_rank_file(path.path, kineto);
    s.rank = s.trace.meta.rank;
    s.ok = true;
  } catch (const NotATraceError& e) {
    if (path.from_directory && !not_json(e)) {
      part.not_trace = e.reason();
    } else {
      s.error = e.what();
      s.rank = rank_from_file_name(path.path);
    }
    return false;
  } catch (const std::bad_alloc&) {
    s.error = path.path + ": out of memory while reading this file";
    s.rank = rank_from_file_name(path.path);
    return false;
  } catch (const std::exception& e) {
    s.error = e.what();
    s.rank = rank_from_file_name(path.path);
    return false;
  }
  if (is_counter_pass(s.trace)) {
    part.counter_pass = true;
    part.not_trace =
        "a CUPTI range-profiler pass (cuda_profiler_range events, no GPU activities): read as "
        "hardware counters";
    s.trace = RankTrace();
    s.ok = false;
    return false;
  }
  return true;
}

// The slot reduced to its shell (its span kept first).
void keep_shell(RankSlot& s) {
  if (s.ok) {
    s.first_ns = s.span_first_ns();
    s.last_ns = s.span_last_ns();
  }
  s = slot_shell(s);
}

// The rows a streamed analyze wrote to the spool, gone from the partial.
template <class T>
void drop(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

// A rank's hardware for its stage: its GPU's aligned telemetry and its counter file, joined to
// its trace (how, in part.joins).
RankHardware rank_hardware(RankSlot& s, size_t file, const StageSetup& setup, RankPart& part) {
  RankHardware rh;
  if (setup.rank_hw != nullptr && file < setup.rank_hw->size()) {
    rh = (*setup.rank_hw)[file];
    const size_t c = setup.counter_of_file != nullptr && file < setup.counter_of_file->size()
                         ? (*setup.counter_of_file)[file]
                         : SIZE_MAX;
    if (c != SIZE_MAX && setup.counters != nullptr) {
      CounterJoin j = setup.counters->counters[c];
      const CounterTable& listed = setup.counters->counter_data[c];
      const CounterTable* ct = &listed;
      CounterTable reread;  // its counter file's rows, when they were not kept
      if (listed.size() == 0 && listed.dropped_rows > 0) {
        // Its rows were given up once read (load_hardware): read again, for this rank only.
        try {
          reread = read_counters_file(listed.file);
          ct = &reread;
        } catch (const std::exception& e) {
          ct = nullptr;
          j.method = std::string("none: the file could not be read again: ") + e.what();
        }
      }
      if (ct != nullptr) join_counters(s.trace, *ct, j, rh);
      part.joins.emplace_back(c, std::move(j));
    }
  } else {
    rh.device = main_device(s.trace.gpu);
  }
  rh.rank = s.rank;
  return rh;
}

// The slot moved into part.kept (its shell left in its place), with what its rows are made from.
void keep_rank(RankPart& part, RankHardware* hw, std::vector<Aggregation> prefixes) {
  RankSlot& s = part.slot;
  auto kept = std::make_shared<KeptRank>();
  if (hw != nullptr) kept->hw = std::move(*hw);
  kept->has_hw = hw != nullptr;
  kept->prefixes = std::move(prefixes);
  RankSlot shell = slot_shell(s);
  shell.first_ns = s.span_first_ns();
  shell.last_ns = s.span_last_ns();
  kept->slot = std::move(s);
  s = std::move(shell);
  part.kept = std::move(kept);
}

}  // namespace

RankSlot slot_shell(const RankSlot& s) {
  RankSlot out;
  out.file = s.file;
  out.rank = s.rank;
  out.ok = s.ok;
  out.error = s.error;
  out.missing = s.missing;
  out.first_ns = s.first_ns;
  out.last_ns = s.last_ns;
  out.trace.file = s.trace.file;
  out.trace.meta.rank = s.trace.meta.rank;
  out.trace.meta.world_size = s.trace.meta.world_size;
  out.trace.meta.backend = s.trace.meta.backend;
  out.trace.meta.rank_source = s.trace.meta.rank_source;
  return out;
}

RankPart shell_stage(size_t file, const TracePath& path, const KinetoReadOptions& kineto,
                     bool want_activity, const RankSlot* preloaded, RankSlot* loaded) {
  RankPart part;
  part.file = file;
  if (preloaded != nullptr) {
    if (preloaded->ok && want_activity)
      part.activity = rank_activity(preloaded->trace, preloaded->rank);
    part.slot = slot_shell(*preloaded);
    part.slot.first_ns = preloaded->span_first_ns();
    part.slot.last_ns = preloaded->span_last_ns();
    return part;
  }
  const bool read = load_into(part, path, kineto);
  if (read && want_activity) part.activity = rank_activity(part.slot.trace, part.slot.rank);
  if (read && loaded != nullptr) {
    RankSlot shell = slot_shell(part.slot);
    shell.first_ns = part.slot.span_first_ns();
    shell.last_ns = part.slot.span_last_ns();
    *loaded = std::move(part.slot);
    part.slot = std::move(shell);
    return part;
  }
  keep_shell(part.slot);
  return part;
}

RankPart full_stage(size_t file, const TracePath& path, const StageSetup& setup, int64_t rank,
                    SpoolFile* spool, int spool_index, RankSlot* preloaded) {
  RankPart part;
  part.file = file;
  RankSlot& s = part.slot;
  if (preloaded != nullptr) {
    s = slot_shell(*preloaded);
    s.trace = std::move(preloaded->trace);
    preloaded->trace = RankTrace();
    if (!s.ok) {
      keep_shell(s);
      return part;
    }
  } else if (!load_into(part, path, setup.kineto)) {
    keep_shell(s);
    return part;
  }
  if (rank >= 0) {
    s.rank = rank;
  } else if (s.rank < 0) {
    part.needs_rank = true;  // validation gives it one; then the stage runs again
    if (spool == nullptr) {
      // Kept: the trace is held for that second run (as its `preloaded`), not read again.
      keep_rank(part, nullptr, {});
      return part;
    }
    keep_shell(s);
    return part;
  }
  try {
    label_trace(*setup.taxonomy, s.trace);
    // The rank's hardware: its GPU's aligned telemetry and its counter file, joined here.
    RankHardware rh;
    const RankHardware* hwp = nullptr;
    if (setup.hardware) {
      rh = rank_hardware(s, file, setup, part);
      hwp = &rh;
    }
    const std::span<const RankSlot> one(&s, 1);
    auto prefixes_of = [one] {
      const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase,
                                         Level::kLayer, Level::kOperation};
      return aggregate_prefixes(one, levels);
    };
    // With threads to spare, the hierarchy's prefixes are made beside the analyses.
    std::future<std::vector<Aggregation>> prefixes_made;
    if (setup.rank_threads > 1) prefixes_made = std::async(std::launch::async, prefixes_of);
    RankAnalysis a;
    try {
      a = analyze_rank(s.trace, s.rank, setup.analysis, hwp, setup.rank_threads);
    } catch (...) {
      if (prefixes_made.valid()) prefixes_made.wait();
      throw;
    }
    std::vector<Aggregation> prefixes = prefixes_made.valid() ? prefixes_made.get() : prefixes_of();
    if (!prefixes.empty()) part.gpu_rows = prefixes.front().rows;
    part.coverage = label_coverage(one);
    part.coverage.shrink_to_fit();
    part.diagnostics = rank_diagnostics(s);
    if (spool == nullptr) {
      // Kept: the rows are made from the rank when the tables are written.
      keep_rank(part, hwp != nullptr ? &rh : nullptr, std::move(prefixes));
      part.analysis = std::move(a);
      part.analysed = true;
      return part;
    }
    const RankView view{&s, &a, hwp, &prefixes};
    part.spool = spool_index;
    for (RankStream st : all_rank_streams()) {
      spool->begin_chunk();
      rank_rows(st, view, setup.analysis, *spool);
      part.chunks[static_cast<size_t>(st)] = spool->end_chunk();
    }
    drop(a.idle);
    drop(a.launch);
    drop(a.queues);
    drop(a.kernel_hw);
    drop(a.hw_levels);
    // What is kept is held until the run's end: no room to spare.
    a.breakdown.shrink_to_fit();
    a.exposed.shrink_to_fit();
    a.ops.shrink_to_fit();
    a.kernels.shrink_to_fit();
    a.operations.shrink_to_fit();
    a.classes.shrink_to_fit();
    a.colls.shrink_to_fit();
    a.units.shrink_to_fit();
    a.power.shrink_to_fit();
    part.analysis = std::move(a);
    part.analysed = true;
  } catch (const std::bad_alloc&) {
    if (spool != nullptr) spool->abort_chunk();
    s.ok = false;
    s.error = s.file + ": out of memory while analysing this file";
    part.analysed = false;
  }
  keep_shell(s);
  return part;
}

}  // namespace chopper
