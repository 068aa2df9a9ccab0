#include "chopper/pipeline/stream.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <numeric>

#include "chopper/base/bytes.hpp"
#include "chopper/base/error.hpp"
#include "chopper/base/memory.hpp"
#include "chopper/base/output_file.hpp"
#include "chopper/base/phase_log.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/ingest/hardware_files.hpp"
#include "chopper/pipeline/part_codec.hpp"
#include "chopper/pipeline/rank_stage.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/output_dir.hpp"

namespace chopper {
namespace {

namespace fs = std::filesystem;

constexpr int kTagParts = 101, kTagSpool = 102;

// Spool files, one per worker thread, handed out for the duration of one rank.
class SpoolPool {
 public:
  SpoolPool(std::string dir, std::string stem, std::vector<std::string>& scratch)
      : dir_(std::move(dir)), stem_(std::move(stem)), scratch_(scratch) {}
  std::pair<SpoolFile*, int> acquire() {
    std::lock_guard<std::mutex> lk(m_);
    if (!free_.empty()) {
      const int i = free_.back();
      free_.pop_back();
      return {files_[static_cast<size_t>(i)].get(), i};
    }
    const std::string path = (fs::path(dir_) / fmt::format("{}{}-{}-{}", OutputDir::kTempPrefix,
                                                           ::getpid(), stem_, files_.size()))
                                 .string();
    scratch_.push_back(path);
    track_temp_file(path);  // removed if a signal ends the process
    files_.push_back(std::make_unique<SpoolFile>(path));
    return {files_.back().get(), static_cast<int>(files_.size() - 1)};
  }
  void release(int i) {
    std::lock_guard<std::mutex> lk(m_);
    free_.push_back(i);
  }
  std::vector<std::string> paths() const {
    std::vector<std::string> p;
    for (const auto& f : files_) p.push_back(f->path());
    return p;
  }
  size_t size() const { return files_.size(); }
  SpoolFile& file(size_t i) { return *files_[i]; }

 private:
  std::string dir_, stem_;
  std::vector<std::string>& scratch_;
  std::mutex m_;
  std::vector<std::unique_ptr<SpoolFile>> files_;
  std::vector<int> free_;
};

// Runs fn(k) for each index in `items` on `threads` threads, reporting progress.
void for_files(const std::vector<size_t>& items, unsigned threads, const LoadOptions& lo,
               size_t total, const std::vector<uint64_t>& bytes,
               const std::function<void(size_t)>& fn) {
  std::mutex pm;
  size_t done = 0;
  uint64_t done_bytes = 0;
  parallel_for(items.size(), threads, [&](size_t k) {
    fn(items[k]);
    if (lo.progress) {
      std::lock_guard<std::mutex> lk(pm);
      ++done;
      done_bytes += bytes[items[k]];
      lo.progress(done, total, done_bytes);
    }
  });
}

// The run as load_run assembles it from its files (in path order): ranks (ordered by rank,
// unknown last), files skipped as not traces, counter passes.
Run assemble(const std::vector<const RankPart*>& parts) {
  Run run;
  for (const RankPart* p : parts) {
    if (!p->not_trace.empty()) {
      run.skipped.emplace_back(p->slot.file, p->not_trace);
      if (p->counter_pass) run.counter_passes.push_back(p->slot.file);
      continue;
    }
    run.ranks.push_back(slot_shell(p->slot));
  }
  std::stable_sort(run.ranks.begin(), run.ranks.end(), [](const RankSlot& a, const RankSlot& b) {
    const int64_t ra = a.rank < 0 ? INT64_MAX : a.rank;
    const int64_t rb = b.rank < 0 ? INT64_MAX : b.rank;
    return ra < rb;
  });
  return run;
}

// Whether the validated run can be analysed: something readable, and one run.
bool analysable(const Run& run) {
  return run.ranks.size() > run.failed() && !run_is_mixed(run);
}

// Sends a file's bytes to `to` in pieces (an empty piece ends it).
void send_file(Comm& comm, int to, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(path + ": cannot open spool file to send");
  std::string buf(4 << 20, '\0');
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f);
    comm.send(to, kTagSpool, std::string_view(buf.data(), n));
    if (n == 0) break;
  }
  std::fclose(f);
}

void recv_file(Comm& comm, int from, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw Error(path + ": cannot create spool file");
  for (;;) {
    const std::string piece = comm.recv(from, kTagSpool);
    if (piece.empty()) break;
    if (std::fwrite(piece.data(), 1, piece.size(), f) != piece.size()) {
      std::fclose(f);
      throw Error(path + ": cannot write spool file");
    }
  }
  if (std::fclose(f) != 0) throw Error(path + ": cannot write spool file");
}

// The telemetry window, given once: a return before it is known gives the hardware files still
// being read an empty one, so that they finish.
struct WindowPromise {
  std::promise<TelemetryWindow> promise;
  std::shared_future<TelemetryWindow> future = promise.get_future().share();
  bool given = false;
  void give(TelemetryWindow w) {
    if (given) return;
    given = true;
    promise.set_value(std::move(w));
  }
  ~WindowPromise() { give({}); }
};

// The machine's physical memory in bytes (0 when it cannot be told).
uint64_t physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace

bool keep_in_memory(RowStore store, const std::vector<uint64_t>& bytes, unsigned threads,
                    int processes, uint64_t memory_bytes) {
  if (processes > 1 || store == RowStore::kSpool) return false;
  if (store == RowStore::kMemory) return true;
  uint64_t total = 0, largest = 0;
  for (uint64_t b : bytes) {
    total += b;
    largest = std::max(largest, b);
  }
  return total <= static_cast<uint64_t>(std::max(threads, 1U)) * largest &&
         total <= memory_bytes / 4;
}

void finalize_streamed(StreamedRun& sr) {
  if (sr.partials.empty()) return;
  sr.ra = finalize(std::move(sr.partials), sr.analysis, &sr.hw);
  sr.partials.clear();
  phase_mark("finalized");
}

void KeptRows::rows(RankStream s, TableSink& sink) {
  for (size_t j = 0; j < ranks_.size(); ++j) {
    const KeptRank* k = ranks_[j].get();
    if (k == nullptr) continue;
    if (s == RankStream::kGpuActivities) {  // the trace alone: written while the run finalizes
      rank_rows(s, RankView{&k->slot}, o_, sink);
      continue;
    }
    if (j >= ra_.ranks.size()) continue;
    rank_rows(s, RankView{&k->slot, &ra_.ranks[j], k->has_hw ? &k->hw : nullptr, &k->prefixes}, o_,
              sink);
  }
}

std::vector<int> assign_files(const std::vector<uint64_t>& bytes, int processes) {
  std::vector<int> owner(bytes.size(), 0);
  if (processes <= 1) return owner;
  std::vector<size_t> order(bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<uint64_t> load(static_cast<size_t>(processes), 0);
  for (size_t i : order) {
    const size_t p = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = static_cast<int>(p);
    load[p] += std::max<uint64_t>(bytes[i], 1);
  }
  return owner;
}

SpooledRows::SpooledRows(std::vector<std::string> files, std::vector<Rank> ranks)
    : files_(std::move(files)), readers_(files_.size()), ranks_(std::move(ranks)) {}

void SpooledRows::rows(RankStream s, TableSink& sink) {
  for (const Rank& r : ranks_) {
    if (r.file < 0) continue;
    const SpoolChunk& c = r.chunks[static_cast<size_t>(s)];
    if (c.bytes == 0) continue;
    auto& reader = readers_[static_cast<size_t>(r.file)];
    if (!reader) reader = std::make_unique<SpoolReader>(files_[static_cast<size_t>(r.file)]);
    reader->replay(c, sink);
  }
}

StreamedRun::~StreamedRun() {
  rows.reset();
  for (const std::string& f : scratch) {
    std::error_code ec;
    fs::remove(f, ec);
    untrack_temp_file(f);
  }
}

std::unique_ptr<StreamedRun> stream_run(const StreamOptions& o, const Taxonomy& taxonomy,
                                        const std::string& dir, Comm& comm) {
  auto out = std::make_unique<StreamedRun>();
  const int me = comm.rank(), np = comm.size();
  const unsigned threads = o.load.threads == 0 ? default_threads() : o.load.threads;

  // The files, and who reads which.
  std::vector<TracePath> files;
  std::vector<RankSlot>* pre = o.preloaded ? &o.preloaded->ranks : nullptr;
  if (pre != nullptr) {
    for (const RankSlot& s : *pre) files.push_back({s.file, false, "", s.missing});
  } else {
    files = run_trace_files(o.paths, o.load.max_files);
  }
  const size_t n = files.size();
  std::vector<uint64_t> bytes(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::error_code ec;
    const auto sz = fs::file_size(files[i].path, ec);
    bytes[i] = ec ? 0 : sz;
  }
  const std::vector<int> owner = assign_files(bytes, np);
  std::vector<size_t> mine;
  for (size_t i = 0; i < n; ++i)
    if (owner[i] == me) mine.push_back(i);
  // Ranks kept in memory (keep_in_memory): pass 1 keeps the traces it reads for the stage.
  const bool kept_mode = keep_in_memory(o.rows, bytes, threads, np, physical_memory());
  std::vector<RankSlot> loaded;
  auto preloaded_slot = [&](size_t i) -> RankSlot* {
    if (pre != nullptr) return &(*pre)[i];
    return i < loaded.size() && loaded[i].ok ? &loaded[i] : nullptr;
  };
  std::map<std::string, size_t> file_index;
  for (size_t i = 0; i < n; ++i) file_index[files[i].path] = i;
  // The run as load_run and validate_run leave it, from every file's part (a run that came loaded
  // and validated keeps its skipped files, counter passes and problems).
  auto settle = [&](const std::vector<RankPart>& from) {
    std::vector<const RankPart*> all;
    for (const RankPart& p : from) all.push_back(&p);
    Run shells = assemble(all);
    if (pre != nullptr) {
      shells.problems = o.preloaded->problems;
      shells.skipped = o.preloaded->skipped;
      shells.counter_passes = o.preloaded->counter_passes;
    } else {
      validate_run(shells);
    }
    return shells;
  };

  // Hardware files decide whether the traces are read twice: aligning telemetry needs every
  // rank's busy time before any rank's hardware analysis.
  bool need_m = o.hardware && (has_hardware_files(o.paths, o.telemetry, o.counters) ||
                               (pre != nullptr && !o.preloaded->counter_passes.empty()));
  phase_mark("files listed", me);

  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<RankPart> parts(n);      // by file: this process's files (process 0: every file)
    std::vector<int64_t> forced(n, -1);  // the rank to analyse a file as (-1: its own)
    Run shells;
    HardwareRun hw;
    std::vector<size_t> counter_of_file(n, SIZE_MAX);
    std::vector<RankHardware> hw_of_file;
    std::vector<int> stage_owner;  // after the first pass: who runs the stage on each file

    // Pass 1: each file's shell and activity; validation; the hardware aligned.
    if (need_m) {
      // One process: the hardware files are read while the traces are (the telemetry files wait
      // for the window the traces give). The counter passes found among the traces are known
      // only after them: those runs read the hardware files once pass 1 is done, as MPI runs do.
      std::future<HardwareFiles> early;
      WindowPromise window;  // declared after `early`: fulfilled before `early` is waited for
      if (np == 1) {
        std::vector<std::string> listed = o.counters;
        if (pre != nullptr)
          listed.insert(listed.end(), o.preloaded->counter_passes.begin(),
                        o.preloaded->counter_passes.end());
        early = std::async(std::launch::async, [&o, listed = std::move(listed), &window] {
          return load_hardware(o.paths, o.telemetry, listed, o.load.threads, window.future);
        });
      }
      std::vector<RankPart> m(n);
      if (kept_mode && pre == nullptr) {
        loaded.clear();
        loaded.resize(n);
      }
      for_files(mine, threads, o.load, mine.size(), bytes, [&](size_t i) {
        RankSlot* into = i < loaded.size() ? &loaded[i] : nullptr;
        m[i] = shell_stage(i, files[i], o.load.kineto, true, preloaded_slot(i), into);
      });
      phase_mark("pass 1 (shells)", me);
      if (np > 1) {
        std::vector<RankPart> sent;
        for (size_t i : mine) sent.push_back(std::move(m[i]));
        for (const std::string& b : comm.allgather(encode_parts(sent)))
          for (RankPart& p : decode_parts(b)) m[p.file] = std::move(p);
      }
      shells = settle(m);
      if (!analysable(shells)) {
        if (me == 0) out->run = std::move(shells);
        return out;
      }
      // Alignment inputs in the run's order (as the in-memory analyze aligns them), with the
      // ranks validation settled.
      std::vector<RankActivity> acts(shells.ranks.size());
      std::vector<size_t> file_of_slot(shells.ranks.size());
      for (size_t j = 0; j < shells.ranks.size(); ++j) {
        const RankSlot& s = shells.ranks[j];
        const size_t i = file_index.at(s.file);
        file_of_slot[j] = i;
        if (s.ok) {
          acts[j] = std::move(m[i].activity);
          forced[i] = s.rank;
        }
        acts[j].rank = s.rank;
      }
      std::vector<RankPart>().swap(m);
      std::vector<std::string> counter_files = o.counters;
      counter_files.insert(counter_files.end(), shells.counter_passes.begin(),
                           shells.counter_passes.end());
      // Who runs the stage on each rank: the ranks dealt again by their bytes (a truth.json or a
      // file that could not be read is no work now).
      std::vector<uint64_t> rank_bytes(n, 0);
      for (size_t i = 0; i < n; ++i) rank_bytes[i] = forced[i] >= 0 ? bytes[i] : 0;
      stage_owner = assign_files(rank_bytes, np);
      // This process keeps the rows of its own ranks' counter files only (and of files whose rank
      // cannot be told: they are given up once assigned); each is freed when its rank is done.
      // (Reading each again in its rank's stage instead was tried: it holds less before the
      // stage, but a large counter pass then sits beside its trace, and the peak, 8 ranks of
      // 294 MB with their 89 MB passes, rose from 0.44 to 0.51 x the traces.)
      const CounterFilter keep = [&](const CounterTable& t) {
        const size_t j = counter_file_slot(acts, t);
        return np == 1 || j == SIZE_MAX || stage_owner[file_of_slot[j]] == me;
      };
      HardwareFiles hf;
      if (early.valid()) {
        window.give(telemetry_window(acts, o.align));
        hf = early.get();
        if (pre == nullptr && !shells.counter_passes.empty())  // read again, with the passes
          hf = load_hardware(o.paths, o.telemetry, counter_files, o.load.threads,
                             telemetry_window(acts, o.align), keep);
      } else {
        hf = load_hardware(o.paths, o.telemetry, counter_files, o.load.threads,
                           telemetry_window(acts, o.align), keep);
      }
      out->hw_skipped = std::move(hf.skipped);
      hw = align_telemetry(acts, std::move(hf.telemetry), o.align);
      note_unreadable(hw, hf.errors, hf.error_files);
      out->hw_errors = std::move(hf.errors);
      out->hw_errors.insert(out->hw_errors.end(), hw.errors.begin(), hw.errors.end());
      hw.counter_data = std::move(hf.counters);
      const std::vector<size_t> slot_of_counter =
          assign_counter_files(acts, hw.counter_data, hw.counters);
      for (size_t c = 0; c < slot_of_counter.size(); ++c)
        if (slot_of_counter[c] != SIZE_MAX) counter_of_file[file_of_slot[slot_of_counter[c]]] = c;
      // The ranks' series are copied out: the files' own samples are no longer needed (their
      // alignment rows are), nor the counter files other processes join.
      for (TelemetryData& d : hw.telemetry_data)
        for (Series& se : d.series) {
          std::vector<Ns>().swap(se.t_ns);
          std::vector<double>().swap(se.value);
        }
      for (size_t c = 0; c < slot_of_counter.size(); ++c)
        if (slot_of_counter[c] == SIZE_MAX || stage_owner[file_of_slot[slot_of_counter[c]]] != me)
          hw.counter_data[c].drop_rows();
      phase_mark("hardware aligned", me);
      hw_of_file.resize(n);
      for (size_t j = 0; j < shells.ranks.size(); ++j)
        if (stage_owner[file_of_slot[j]] == me)  // the others' series are theirs to use
          hw_of_file[file_of_slot[j]] = std::move(hw.ranks[j]);
      hw.ranks.assign(shells.ranks.size(), RankHardware());
    } else if (o.hardware && me == 0) {
      // No hardware file: what the run's directories hold that is not one, listed as skipped.
      HardwareFiles hf = load_hardware(o.paths, o.telemetry, o.counters, o.load.threads);
      out->hw_skipped = std::move(hf.skipped);
      note_unreadable(hw, hf.errors, hf.error_files);
      out->hw_errors = std::move(hf.errors);
    }

    // Pass 2: the per-rank stage, on this process's files (the ranks, when pass 1 ran).
    StageSetup setup;
    setup.taxonomy = &taxonomy;
    setup.kineto = o.load.kineto;
    setup.analysis = o.analysis;
    setup.hardware = o.hardware;
    if (need_m) {
      setup.rank_hw = &hw_of_file;
      setup.counters = &hw;
      setup.counter_of_file = &counter_of_file;
    }
    SpoolPool pool(dir, fmt::format("spool{}", me), out->scratch);
    std::vector<size_t> todo;
    if (need_m) {
      for (size_t i = 0; i < n; ++i)
        if (forced[i] >= 0 && stage_owner[i] == me) todo.push_back(i);
    } else {
      todo = mine;
    }
    std::atomic<bool> found_passes{false};
    for_files(todo, threads, o.load, todo.size(), bytes, [&](size_t i) {
      if (kept_mode) {
        parts[i] = full_stage(i, files[i], setup, forced[i], nullptr, -1, preloaded_slot(i));
      } else {
        auto [spool, k] = pool.acquire();
        parts[i] = full_stage(i, files[i], setup, forced[i], spool, k, preloaded_slot(i));
        pool.release(k);
      }
      parts[i].process = me;
      if (parts[i].counter_pass) found_passes = true;
      if (i < hw_of_file.size()) hw_of_file[i] = RankHardware();  // its telemetry is used
      if (need_m && counter_of_file[i] != SIZE_MAX) hw.counter_data[counter_of_file[i]].drop_rows();
    });
    std::vector<RankHardware>().swap(hw_of_file);
    std::vector<RankSlot>().swap(loaded);
    // The traces are gone: what they freed goes back, and from here on (the finalize, the tables)
    // large blocks are mapped and returned when freed (base/memory.hpp). Kept ranks stay: their
    // run's memory is held to the end, and the heap keeps what it frees for the tables to reuse.
    if (!kept_mode) {
      release_free_memory();
      return_freed_memory();
    }
    phase_mark("pass 2 (per-rank stage)", me);
    // A CUPTI counter pass among the traces when no hardware file was seen: its rank must be
    // analysed with it (rare: passes are usually in counters/), so everything is read again with
    // the passes known.
    if (!need_m && o.hardware && comm.allreduce_max(found_passes ? 1 : 0) > 0 && attempt == 0) {
      need_m = true;
      for (const std::string& f : out->scratch) {
        std::error_code ec;
        fs::remove(f, ec);
        untrack_temp_file(f);
      }
      out->scratch.clear();
      continue;
    }
    for (size_t k = 0; k < pool.size(); ++k) pool.file(k).flush();

    // Process 0 gathers every part: encoded, with the spool files' bytes (or their names).
    std::vector<std::string> spool_files = pool.paths();
    std::vector<int> spool_base(static_cast<size_t>(np), 0);
    if (np > 1 && me != 0) {
      // The parts in batches (an empty one ends them), so that neither end holds them all
      // encoded at once; then the spool files' names, then (unless process 0 reads them in
      // place) their bytes.
      constexpr size_t kBatch = 64;
      uint64_t sent_bytes = 0;
      for (size_t k = 0; k < todo.size(); k += kBatch) {
        std::vector<RankPart> batch;
        for (size_t q = k; q < std::min(todo.size(), k + kBatch); ++q)
          batch.push_back(std::move(parts[todo[q]]));
        const std::string b = encode_parts(batch);
        sent_bytes += b.size();
        comm.send(0, kTagParts, b);
      }
      comm.send(0, kTagParts, "");
      if (phase_log_on()) {
        uint64_t spooled = 0;
        for (size_t k = 0; k < pool.size(); ++k) spooled += pool.file(k).size();
        phase_mark(
            fmt::format("parts sent: {} ranks, {:.1f} MB encoded, {:.1f} MB spooled", todo.size(),
                        static_cast<double>(sent_bytes) / 1e6, static_cast<double>(spooled) / 1e6),
            me);
      }
      ByteWriter w;
      w.put<uint64_t>(spool_files.size());
      for (const std::string& f : spool_files) w.put_str(fs::absolute(f).string());
      comm.send(0, kTagParts, w.bytes());
      if (!o.mpi_shared_files)
        for (const std::string& f : spool_files) send_file(comm, 0, f);
      return out;  // a worker: process 0 has it all
    }
    for (int p = 1; p < np; ++p) {
      for (;;) {
        const std::string batch = comm.recv(p, kTagParts);
        if (batch.empty()) break;
        for (RankPart& q : decode_parts(batch)) {
          q.process = p;
          const size_t i = q.file;
          parts[i] = std::move(q);
        }
      }
      const std::string msg = comm.recv(p, kTagParts);
      ByteReader r(msg);
      const auto nf = r.get<uint64_t>();
      spool_base[static_cast<size_t>(p)] = static_cast<int>(spool_files.size());
      std::vector<std::string> mine_of_p;
      for (uint64_t k = 0; k < nf; ++k) {
        std::string theirs = r.get_str();
        if (o.mpi_shared_files) {
          spool_files.push_back(std::move(theirs));
        } else {
          const std::string path =
              (fs::path(dir) /
               fmt::format("{}{}-recv{}-{}", OutputDir::kTempPrefix, ::getpid(), p, k))
                  .string();
          out->scratch.push_back(path);
          track_temp_file(path);
          spool_files.push_back(path);
          mine_of_p.push_back(path);
        }
      }
      for (const std::string& path : mine_of_p) recv_file(comm, p, path);
    }

    // Process 0: validation (when pass 1 did not run), and the files whose rank it assigned.
    if (!need_m) {
      shells = settle(parts);
      if (!analysable(shells)) {
        out->run = std::move(shells);
        return out;
      }
      std::vector<size_t> redo;
      for (const RankSlot& s : shells.ranks) {
        const size_t i = file_index.at(s.file);
        if (s.ok && parts[i].needs_rank) forced[i] = s.rank, redo.push_back(i);
      }
      for_files(redo, threads, LoadOptions{}, redo.size(), bytes, [&](size_t i) {
        if (kept_mode) {
          // The trace read before its rank was known (kept by the stage), else read again.
          const std::shared_ptr<KeptRank> read = std::move(parts[i].kept);
          RankSlot* slot = read != nullptr ? &read->slot : preloaded_slot(i);
          parts[i] = full_stage(i, files[i], setup, forced[i], nullptr, -1, slot);
        } else {
          auto [spool, k] = pool.acquire();
          parts[i] = full_stage(i, files[i], setup, forced[i], spool, k, preloaded_slot(i));
          pool.release(k);
        }
        parts[i].process = 0;
      });
      // Spool files the redone ranks opened come after the gathered ones.
      for (size_t k = 0; k < pool.size(); ++k) {
        pool.file(k).flush();
        const std::string& path = pool.file(k).path();
        if (std::find(spool_files.begin(), spool_files.end(), path) == spool_files.end())
          spool_files.push_back(path);
      }
    } else {
      for (size_t i = 0; i < n; ++i)
        for (auto& [c, j] : parts[i].joins) hw.counters[c] = j;
    }

    // The parts in the run's order: the partials, the run-wide tables' rows, the spooled rows.
    std::map<std::string, int> spool_index;
    for (size_t k = 0; k < spool_files.size(); ++k)
      spool_index[spool_files[k]] = static_cast<int>(k);
    const std::vector<std::string> local = pool.paths();
    std::vector<RankAnalysis> partials;
    std::vector<SpooledRows::Rank> spooled;
    std::vector<std::shared_ptr<KeptRank>> kept;
    std::vector<DiagnosticRow> rank_diags;
    for (RankSlot& s : shells.ranks) {
      RankPart& p = parts[file_index.at(s.file)];
      RankAnalysis a;
      SpooledRows::Rank rr;
      if (s.ok && p.analysed) {
        a = std::move(p.analysis);
        for (CoverageRow& c : p.coverage) out->coverage.push_back(std::move(c));
        for (DiagnosticRow& d : p.diagnostics) rank_diags.push_back(std::move(d));
        out->gpu_level.rows.insert(out->gpu_level.rows.end(), p.gpu_rows.begin(), p.gpu_rows.end());
        if (p.spool >= 0) {
          rr.file = p.process == 0 ? spool_index.at(local[static_cast<size_t>(p.spool)])
                                   : spool_base[static_cast<size_t>(p.process)] + p.spool;
          rr.chunks = p.chunks;
        }
      } else {
        if (s.ok) {
          // Read in pass 1, but its stage failed (out of memory): no rows.
          s.ok = false;
          s.error = p.slot.error.empty() ? s.file + ": could not be analysed" : p.slot.error;
        }
        a.rank = s.rank;
      }
      partials.push_back(std::move(a));
      spooled.push_back(rr);
      kept.push_back(s.ok && p.analysed ? std::move(p.kept) : nullptr);
      p = RankPart();  // its memory back before the finalize
    }
    out->diagnostics = run_level_diagnostics(shells);
    for (DiagnosticRow& d : rank_diags) out->diagnostics.push_back(std::move(d));
    for (DiagnosticRow& d : hardware_diagnostics(hw.telemetry_data, hw.counter_data))
      out->diagnostics.push_back(std::move(d));
    for (DiagnosticRow& d : hardware_use_diagnostics(hw)) out->diagnostics.push_back(std::move(d));
    out->gpu_level.levels = {Level::kGpu};
    if (kept_mode)
      out->rows = std::make_unique<KeptRows>(std::move(kept), out->ra, o.analysis);
    else
      out->rows = std::make_unique<SpooledRows>(spool_files, std::move(spooled));
    out->hw = std::move(hw);
    if (!need_m && o.hardware) {
      // As align_hardware leaves a run without hardware files: every rank, no data.
      out->hw.ranks.resize(shells.ranks.size());
      for (size_t j = 0; j < shells.ranks.size(); ++j) out->hw.ranks[j].rank = shells.ranks[j].rank;
    }
    out->run = std::move(shells);
    if (!kept_mode) release_free_memory();  // the parts, moved out and freed
    phase_mark("parts ordered", me);
    if (phase_log_on() && np == 1) {
      uint64_t bytes_spooled = 0;
      for (size_t k = 0; k < pool.size(); ++k) bytes_spooled += pool.file(k).size();
      phase_mark(kept_mode ? fmt::format("{} ranks kept in memory", partials.size())
                           : fmt::format("spooled {:.1f} MB for {} ranks",
                                         static_cast<double>(bytes_spooled) / 1e6, partials.size()),
                 me);
    }
    out->analysed = true;
    out->kept = kept_mode;
    out->partials = std::move(partials);
    out->analysis = o.analysis;
    if (!o.defer_finalize) finalize_streamed(*out);
    return out;
  }
  return out;
}

}  // namespace chopper
