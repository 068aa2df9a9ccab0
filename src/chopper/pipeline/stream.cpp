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

// Closes a FILE on every path out of a scope.
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

// Sends a file's bytes to `to`: its size, then pieces, then an empty piece. A read that ends
// short (an error) still ends the pieces, so that the receiver stops and sees the shortfall; the
// sender throws. recv_file is its other half.
void send_file(Comm& comm, int to, const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "rb"));
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (f == nullptr || ec) throw Error(path + ": cannot open spool file to send");
  ByteWriter head;
  head.put<uint64_t>(size);
  comm.send(to, kTagSpool, head.bytes());
  std::string buf(4 << 20, '\0');
  uint64_t sent = 0;
  for (;;) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    comm.send(to, kTagSpool, std::string_view(buf.data(), n));
    sent += n;
    if (n == 0) break;
  }
  if (std::ferror(f.get()) != 0 || sent != size)
    throw Error(
        fmt::format("{}: read error after {} of {} bytes of the spool file", path, sent, size));
}

// Receives a file send_file sends into `path`. Throws Error naming it when it cannot be written
// or arrives cut short.
void recv_file(Comm& comm, int from, const std::string& path) {
  FilePtr f(std::fopen(path.c_str(), "wb"));
  const std::string head = comm.recv(from, kTagSpool);
  ByteReader r(head);
  const auto size = r.get<uint64_t>();
  uint64_t got = 0;
  bool written = f != nullptr;
  for (;;) {
    const std::string piece = comm.recv(from, kTagSpool);  // every piece, even after a failure
    if (piece.empty()) break;
    got += piece.size();
    written = written && std::fwrite(piece.data(), 1, piece.size(), f.get()) == piece.size();
  }
  if (f != nullptr && std::fclose(f.release()) != 0) written = false;
  if (!written) throw Error(path + ": cannot write spool file");
  if (got != size)
    throw Error(fmt::format("{}: spool file from process {} arrived cut short ({} of {} bytes)",
                            path, from, got, size));
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

namespace {

// One streamed analysis (stream_run), pass by pass. The plan (files, who reads which) is made
// once; an attempt runs the passes on it; a run read without its hardware pass that turns out to
// hold a CUPTI counter pass among its traces is read once more, with it (read_again).
class Streamer {
 public:
  Streamer(const StreamOptions& o, const Taxonomy& taxonomy, const std::string& dir, Comm& comm)
      : o_(o),
        taxonomy_(taxonomy),
        dir_(dir),
        comm_(comm),
        me_(comm.rank()),
        np_(comm.size()),
        threads_(o.load.threads == 0 ? default_threads() : o.load.threads),
        out_(std::make_unique<StreamedRun>()) {}

  std::unique_ptr<StreamedRun> run() {
    plan_files();
    phase_mark("files listed", me_);
    if (attempt() == Outcome::kReadAgain) {
      discard_spools();
      hardware_pass_ = true;
      attempt();
    }
    return std::move(out_);
  }

 private:
  enum class Outcome { kDone, kReadAgain };
  // What one attempt builds, file by file (process 0 ends with every file's part).
  struct Attempt {
    std::vector<RankPart> parts;  // by file
    std::vector<int64_t> forced;  // the rank to analyse a file as (-1: its own)
    Run shells;                   // the run as validated, its ranks' shells
    HardwareRun hw;               // aligned telemetry, counter files and how they were joined
    std::vector<size_t> counter_of_file;   // SIZE_MAX: none
    std::vector<RankHardware> hw_of_file;  // each file's aligned telemetry (this process's)
    std::vector<int> stage_owner;  // after the hardware pass: who runs the stage on each file
    std::vector<size_t> todo;      // the files this process runs the stage on
    std::vector<std::string> spool_files;  // every process's, in the order of SpooledRows
    std::vector<int> spool_base;           // each process's first index in spool_files
  };

  void plan_files();
  Run settle(const std::vector<RankPart>& from) const;
  RankSlot* preloaded_slot(size_t i);
  Outcome attempt();
  bool hardware_pass(Attempt& a);
  void list_other_files(Attempt& a);
  StageSetup stage_setup(Attempt& a) const;
  RankPart run_stage(size_t i, Attempt& a, const StageSetup& setup, SpoolPool& pool,
                     RankSlot* slot);
  bool stage_pass(Attempt& a, const StageSetup& setup, SpoolPool& pool);
  void send_parts(Attempt& a, SpoolPool& pool);
  void recv_parts(Attempt& a);
  bool validate_and_redo(Attempt& a, const StageSetup& setup, SpoolPool& pool);
  void assemble_run(Attempt& a, SpoolPool& pool);
  void discard_spools();

  const StreamOptions& o_;
  const Taxonomy& taxonomy_;
  const std::string& dir_;
  Comm& comm_;
  const int me_, np_;
  const unsigned threads_;
  std::unique_ptr<StreamedRun> out_;
  // The plan.
  std::vector<TracePath> files_;
  std::vector<RankSlot>* pre_ = nullptr;  // a run already loaded and validated (--split-runs)
  std::vector<uint64_t> bytes_;
  std::vector<size_t> mine_;  // the files this process reads first
  // The reader's options; fewer files than threads: a thread would idle, so a large file is read
  // on two (KinetoReadOptions::split).
  KinetoReadOptions split_kineto() const {
    KinetoReadOptions k = o_.load.kineto;
    k.split = k.split || mine_.size() < threads_;
    return k;
  }
  std::map<std::string, size_t> file_index_;
  bool kept_ = false;             // ranks kept in memory (keep_in_memory)
  bool hardware_pass_ = false;    // hardware files: the traces are read for alignment first
  std::vector<RankSlot> loaded_;  // kept: the traces the hardware pass read, for the stage
};

void Streamer::plan_files() {
  pre_ = o_.preloaded ? &o_.preloaded->ranks : nullptr;
  if (pre_ != nullptr) {
    for (const RankSlot& s : *pre_) files_.push_back({s.file, false, "", s.missing});
  } else {
    files_ = run_trace_files(o_.paths, o_.load.max_files);
  }
  const size_t n = files_.size();
  bytes_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::error_code ec;
    const auto sz = fs::file_size(files_[i].path, ec);
    bytes_[i] = ec ? 0 : sz;
  }
  const std::vector<int> owner = assign_files(bytes_, np_);
  for (size_t i = 0; i < n; ++i)
    if (owner[i] == me_) mine_.push_back(i);
  for (size_t i = 0; i < n; ++i) file_index_[files_[i].path] = i;
  kept_ = keep_in_memory(o_.rows, bytes_, threads_, np_, physical_memory());
  // Hardware files decide whether the traces are read twice: aligning telemetry needs every
  // rank's busy time before any rank's hardware analysis.
  hardware_pass_ = o_.hardware && (has_hardware_files(o_.paths, o_.telemetry, o_.counters) ||
                                   (pre_ != nullptr && !o_.preloaded->counter_passes.empty()));
}

// The run as load_run and validate_run leave it, from every file's part (a run that came loaded
// and validated keeps its skipped files, counter passes and problems).
Run Streamer::settle(const std::vector<RankPart>& from) const {
  std::vector<const RankPart*> all;
  for (const RankPart& p : from) all.push_back(&p);
  Run shells = assemble(all);
  if (pre_ != nullptr) {
    shells.problems = o_.preloaded->problems;
    shells.skipped = o_.preloaded->skipped;
    shells.counter_passes = o_.preloaded->counter_passes;
  } else {
    validate_run(shells);
  }
  return shells;
}

RankSlot* Streamer::preloaded_slot(size_t i) {
  if (pre_ != nullptr) return &(*pre_)[i];
  return i < loaded_.size() && loaded_[i].ok ? &loaded_[i] : nullptr;
}

Streamer::Outcome Streamer::attempt() {
  const size_t n = files_.size();
  Attempt a;
  a.parts.resize(n);
  a.forced.assign(n, -1);
  a.counter_of_file.assign(n, SIZE_MAX);
  if (hardware_pass_) {
    if (!hardware_pass(a)) return Outcome::kDone;
  } else if (o_.hardware && me_ == 0) {
    list_other_files(a);
  }
  const StageSetup setup = stage_setup(a);
  SpoolPool pool(dir_, fmt::format("spool{}", me_), out_->scratch);
  const bool found_passes = stage_pass(a, setup, pool);
  // A CUPTI counter pass among the traces when no hardware file was seen: its rank must be
  // analysed with it (rare: passes are usually in counters/), so everything is read again with
  // the passes known.
  if (!hardware_pass_ && o_.hardware && comm_.allreduce_max(found_passes ? 1 : 0) > 0)
    return Outcome::kReadAgain;
  for (size_t k = 0; k < pool.size(); ++k) pool.file(k).flush();
  a.spool_files = pool.paths();
  a.spool_base.assign(static_cast<size_t>(np_), 0);
  if (np_ > 1 && me_ != 0) {
    send_parts(a, pool);
    return Outcome::kDone;  // a worker: process 0 has it all
  }
  recv_parts(a);
  if (!hardware_pass_) {
    if (!validate_and_redo(a, setup, pool)) return Outcome::kDone;
  } else {
    for (size_t i = 0; i < n; ++i)
      for (auto& [c, j] : a.parts[i].joins) a.hw.counters[c] = j;
  }
  assemble_run(a, pool);
  return Outcome::kDone;
}

// Pass 1: each file's shell and activity; validation; the hardware files read and aligned.
// False when the run cannot be analysed (process 0's out_->run says why).
bool Streamer::hardware_pass(Attempt& a) {
  const size_t n = files_.size();
  // A run kept in memory: the hardware files are read while the traces are (the telemetry files
  // wait for the window the traces give). A streamed run reads them after the traces, so that its
  // counter files are not held beside the traces being read (8 ranks of 294 MB with their 89 MB
  // counter passes: peak RSS 0.57 x the traces read together, 0.47 x apart). The counter passes
  // found among the traces are known only after them: those runs read the hardware files once
  // pass 1 is done, as MPI runs do.
  std::future<HardwareFiles> early;
  WindowPromise window;  // declared after `early`: fulfilled before `early` is waited for
  if (np_ == 1 && kept_) {
    std::vector<std::string> listed = o_.counters;
    if (pre_ != nullptr)
      listed.insert(listed.end(), o_.preloaded->counter_passes.begin(),
                    o_.preloaded->counter_passes.end());
    early = std::async(std::launch::async, [this, listed = std::move(listed), &window] {
      return load_hardware(o_.paths, o_.telemetry, listed, o_.load.threads, window.future);
    });
  }
  std::vector<RankPart> m(n);
  if (kept_ && pre_ == nullptr) {
    loaded_.clear();
    loaded_.resize(n);
  }
  const KinetoReadOptions kineto = split_kineto();
  for_files(mine_, threads_, o_.load, mine_.size(), bytes_, [&](size_t i) {
    RankSlot* into = i < loaded_.size() ? &loaded_[i] : nullptr;
    m[i] = shell_stage(i, files_[i], kineto, true, preloaded_slot(i), into);
  });
  phase_mark("pass 1 (shells)", me_);
  if (np_ > 1) {
    std::vector<RankPart> sent;
    for (size_t i : mine_) sent.push_back(std::move(m[i]));
    for (const std::string& b : comm_.allgather(encode_parts(sent)))
      for (RankPart& p : decode_parts(b)) m[p.file] = std::move(p);
  }
  a.shells = settle(m);
  if (!analysable(a.shells)) {
    if (me_ == 0) out_->run = std::move(a.shells);
    return false;
  }
  // Alignment inputs in the run's order (as the in-memory analyze aligns them), with the ranks
  // validation settled.
  std::vector<RankActivity> acts(a.shells.ranks.size());
  std::vector<size_t> file_of_slot(a.shells.ranks.size());
  for (size_t j = 0; j < a.shells.ranks.size(); ++j) {
    const RankSlot& s = a.shells.ranks[j];
    const size_t i = file_index_.at(s.file);
    file_of_slot[j] = i;
    if (s.ok) {
      acts[j] = std::move(m[i].activity);
      a.forced[i] = s.rank;
    }
    acts[j].rank = s.rank;
  }
  std::vector<RankPart>().swap(m);
  std::vector<std::string> counter_files = o_.counters;
  counter_files.insert(counter_files.end(), a.shells.counter_passes.begin(),
                       a.shells.counter_passes.end());
  // Who runs the stage on each rank: the ranks dealt again by their bytes (a truth.json or a file
  // that could not be read is no work now).
  std::vector<uint64_t> rank_bytes(n, 0);
  for (size_t i = 0; i < n; ++i) rank_bytes[i] = a.forced[i] >= 0 ? bytes_[i] : 0;
  a.stage_owner = assign_files(rank_bytes, np_);
  // This process keeps the rows of its own ranks' counter files only (and of files whose rank
  // cannot be told: they are given up once assigned); each is freed when its rank is done.
  // (Reading each again in its rank's stage instead holds less before the stage, but a large
  // counter pass then sits beside its trace, and the peak rises: 8 ranks of 294 MB with their
  // 89 MB passes went from 0.44 to 0.51 x the traces.)
  const CounterFilter keep = [&](const CounterTable& t) {
    const size_t j = counter_file_slot(acts, t);
    return np_ == 1 || j == SIZE_MAX || a.stage_owner[file_of_slot[j]] == me_;
  };
  HardwareFiles hf;
  if (early.valid()) {
    window.give(telemetry_window(acts, o_.align));
    hf = early.get();
    if (pre_ == nullptr && !a.shells.counter_passes.empty())  // read again, with the passes
      hf = load_hardware(o_.paths, o_.telemetry, counter_files, o_.load.threads,
                         telemetry_window(acts, o_.align), keep);
  } else {
    hf = load_hardware(o_.paths, o_.telemetry, counter_files, o_.load.threads,
                       telemetry_window(acts, o_.align), keep);
  }
  out_->hw_skipped = std::move(hf.skipped);
  HardwareRun& hw = a.hw;
  hw = align_telemetry(acts, std::move(hf.telemetry), o_.align);
  note_unreadable(hw, hf.errors, hf.error_files);
  out_->hw_errors = std::move(hf.errors);
  out_->hw_errors.insert(out_->hw_errors.end(), hw.errors.begin(), hw.errors.end());
  hw.counter_data = std::move(hf.counters);
  const std::vector<size_t> slot_of_counter =
      assign_counter_files(acts, hw.counter_data, hw.counters);
  for (size_t c = 0; c < slot_of_counter.size(); ++c)
    if (slot_of_counter[c] != SIZE_MAX) a.counter_of_file[file_of_slot[slot_of_counter[c]]] = c;
  // The ranks' series are copied out: the files' own samples are no longer needed (their
  // alignment rows are), nor the counter files other processes join.
  for (TelemetryData& d : hw.telemetry_data)
    for (Series& se : d.series) {
      std::vector<Ns>().swap(se.t_ns);
      std::vector<double>().swap(se.value);
    }
  for (size_t c = 0; c < slot_of_counter.size(); ++c)
    if (slot_of_counter[c] == SIZE_MAX || a.stage_owner[file_of_slot[slot_of_counter[c]]] != me_)
      hw.counter_data[c].drop_rows();
  phase_mark("hardware aligned", me_);
  a.hw_of_file.resize(n);
  for (size_t j = 0; j < a.shells.ranks.size(); ++j)
    if (a.stage_owner[file_of_slot[j]] == me_)  // the others' series are theirs to use
      a.hw_of_file[file_of_slot[j]] = std::move(hw.ranks[j]);
  hw.ranks.assign(a.shells.ranks.size(), RankHardware());
  return true;
}

// No hardware file: what the run's directories hold that is not one, listed as skipped.
void Streamer::list_other_files(Attempt& a) {
  HardwareFiles hf = load_hardware(o_.paths, o_.telemetry, o_.counters, o_.load.threads);
  out_->hw_skipped = std::move(hf.skipped);
  note_unreadable(a.hw, hf.errors, hf.error_files);
  out_->hw_errors = std::move(hf.errors);
}

StageSetup Streamer::stage_setup(Attempt& a) const {
  StageSetup setup;
  setup.taxonomy = &taxonomy_;
  setup.kineto = split_kineto();
  setup.analysis = o_.analysis;
  setup.hardware = o_.hardware;
  if (hardware_pass_) {
    setup.rank_hw = &a.hw_of_file;
    setup.counters = &a.hw;
    setup.counter_of_file = &a.counter_of_file;
  }
  return setup;
}

// The stage on file i: its rows spooled, or the rank kept.
RankPart Streamer::run_stage(size_t i, Attempt& a, const StageSetup& setup, SpoolPool& pool,
                             RankSlot* slot) {
  if (kept_) return full_stage(i, files_[i], setup, a.forced[i], nullptr, -1, slot);
  auto [spool, k] = pool.acquire();
  RankPart p = full_stage(i, files_[i], setup, a.forced[i], spool, k, slot);
  pool.release(k);
  return p;
}

// Pass 2: the per-rank stage, on this process's files (the ranks, when pass 1 ran). Returns
// whether a trace turned out to be a CUPTI counter pass.
bool Streamer::stage_pass(Attempt& a, const StageSetup& setup, SpoolPool& pool) {
  const size_t n = files_.size();
  if (hardware_pass_) {
    for (size_t i = 0; i < n; ++i)
      if (a.forced[i] >= 0 && a.stage_owner[i] == me_) a.todo.push_back(i);
  } else {
    a.todo = mine_;
  }
  std::atomic<bool> found_passes{false};
  const StageSetup wide = setup.widened(threads_, a.todo.size());
  for_files(a.todo, threads_, o_.load, a.todo.size(), bytes_, [&](size_t i) {
    a.parts[i] = run_stage(i, a, wide, pool, preloaded_slot(i));
    a.parts[i].process = me_;
    if (a.parts[i].counter_pass) found_passes = true;
    if (i < a.hw_of_file.size()) a.hw_of_file[i] = RankHardware();  // its telemetry is used
    if (hardware_pass_ && a.counter_of_file[i] != SIZE_MAX)
      a.hw.counter_data[a.counter_of_file[i]].drop_rows();
  });
  std::vector<RankHardware>().swap(a.hw_of_file);
  std::vector<RankSlot>().swap(loaded_);
  // The traces are gone: what they freed goes back, and from here on (the finalize, the tables)
  // large blocks are mapped and returned when freed (base/memory.hpp). Kept ranks stay: their
  // run's memory is held to the end, and the heap keeps what it frees for the tables to reuse.
  if (!kept_) {
    release_free_memory();
    return_freed_memory();
  }
  phase_mark("pass 2 (per-rank stage)", me_);
  return found_passes;
}

// A worker's parts to process 0, in batches (an empty one ends them), so that neither end holds
// them all encoded at once; then its spool files' names, then (unless process 0 reads them in
// place) their bytes. recv_parts is its other half.
void Streamer::send_parts(Attempt& a, SpoolPool& pool) {
  constexpr size_t kBatch = 64;
  uint64_t sent_bytes = 0;
  for (size_t k = 0; k < a.todo.size(); k += kBatch) {
    std::vector<RankPart> batch;
    for (size_t q = k; q < std::min(a.todo.size(), k + kBatch); ++q)
      batch.push_back(std::move(a.parts[a.todo[q]]));
    const std::string b = encode_parts(batch);
    sent_bytes += b.size();
    comm_.send(0, kTagParts, b);
  }
  comm_.send(0, kTagParts, "");
  if (phase_log_on()) {
    uint64_t spooled = 0;
    for (size_t k = 0; k < pool.size(); ++k) spooled += pool.file(k).size();
    phase_mark(
        fmt::format("parts sent: {} ranks, {:.1f} MB encoded, {:.1f} MB spooled", a.todo.size(),
                    static_cast<double>(sent_bytes) / 1e6, static_cast<double>(spooled) / 1e6),
        me_);
  }
  ByteWriter w;
  w.put<uint64_t>(a.spool_files.size());
  for (const std::string& f : a.spool_files) w.put_str(fs::absolute(f).string());
  comm_.send(0, kTagParts, w.bytes());
  if (!o_.mpi_shared_files)
    for (const std::string& f : a.spool_files) send_file(comm_, 0, f);
}

// Process 0: every other process's parts and spool files (their bytes into files of its own, or
// their names when they are read in place).
void Streamer::recv_parts(Attempt& a) {
  for (int p = 1; p < np_; ++p) {
    for (;;) {
      const std::string batch = comm_.recv(p, kTagParts);
      if (batch.empty()) break;
      for (RankPart& q : decode_parts(batch)) {
        q.process = p;
        const size_t i = q.file;
        a.parts[i] = std::move(q);
      }
    }
    const std::string msg = comm_.recv(p, kTagParts);
    ByteReader r(msg);
    const auto nf = r.get<uint64_t>();
    a.spool_base[static_cast<size_t>(p)] = static_cast<int>(a.spool_files.size());
    std::vector<std::string> mine_of_p;
    for (uint64_t k = 0; k < nf; ++k) {
      std::string theirs = r.get_str();
      if (o_.mpi_shared_files) {
        a.spool_files.push_back(std::move(theirs));
      } else {
        const std::string path =
            (fs::path(dir_) /
             fmt::format("{}{}-recv{}-{}", OutputDir::kTempPrefix, ::getpid(), p, k))
                .string();
        out_->scratch.push_back(path);
        track_temp_file(path);
        a.spool_files.push_back(path);
        mine_of_p.push_back(path);
      }
    }
    for (const std::string& path : mine_of_p) recv_file(comm_, p, path);
  }
}

// Process 0, when pass 1 did not run: validation from the parts, and the files whose rank it
// assigned analysed again with it. False when the run cannot be analysed.
bool Streamer::validate_and_redo(Attempt& a, const StageSetup& setup, SpoolPool& pool) {
  a.shells = settle(a.parts);
  if (!analysable(a.shells)) {
    out_->run = std::move(a.shells);
    return false;
  }
  std::vector<size_t> redo;
  for (const RankSlot& s : a.shells.ranks) {
    const size_t i = file_index_.at(s.file);
    if (s.ok && a.parts[i].needs_rank) a.forced[i] = s.rank, redo.push_back(i);
  }
  const StageSetup wide = setup.widened(threads_, redo.size());
  for_files(redo, threads_, LoadOptions{}, redo.size(), bytes_, [&](size_t i) {
    // Kept: the trace read before its rank was known (held by the stage), not read again.
    const std::shared_ptr<KeptRank> read = std::move(a.parts[i].kept);
    a.parts[i] = run_stage(i, a, wide, pool, read != nullptr ? &read->slot : preloaded_slot(i));
    a.parts[i].process = 0;
  });
  // Spool files the redone ranks opened come after the gathered ones.
  for (size_t k = 0; k < pool.size(); ++k) {
    pool.file(k).flush();
    const std::string& path = pool.file(k).path();
    if (std::find(a.spool_files.begin(), a.spool_files.end(), path) == a.spool_files.end())
      a.spool_files.push_back(path);
  }
  return true;
}

// Process 0: the parts in the run's order (the partials, the run-wide tables' rows, where each
// rank's rows are), and the finalize unless the caller defers it.
void Streamer::assemble_run(Attempt& a, SpoolPool& pool) {
  std::map<std::string, int> spool_index;
  for (size_t k = 0; k < a.spool_files.size(); ++k)
    spool_index[a.spool_files[k]] = static_cast<int>(k);
  const std::vector<std::string> local = pool.paths();
  std::vector<RankAnalysis> partials;
  std::vector<SpooledRows::Rank> spooled;
  std::vector<std::shared_ptr<KeptRank>> kept;
  std::vector<DiagnosticRow> rank_diags;
  for (RankSlot& s : a.shells.ranks) {
    RankPart& p = a.parts[file_index_.at(s.file)];
    RankAnalysis r;
    SpooledRows::Rank rr;
    if (s.ok && p.analysed) {
      r = std::move(p.analysis);
      for (CoverageRow& c : p.coverage) out_->coverage.push_back(std::move(c));
      for (DiagnosticRow& d : p.diagnostics) rank_diags.push_back(std::move(d));
      out_->gpu_level.rows.insert(out_->gpu_level.rows.end(), p.gpu_rows.begin(), p.gpu_rows.end());
      if (p.spool >= 0) {
        rr.file = p.process == 0 ? spool_index.at(local[static_cast<size_t>(p.spool)])
                                 : a.spool_base[static_cast<size_t>(p.process)] + p.spool;
        rr.chunks = p.chunks;
      }
    } else {
      if (s.ok) {
        // Read in pass 1, but its stage failed (out of memory): no rows.
        s.ok = false;
        s.error = p.slot.error.empty() ? s.file + ": could not be analysed" : p.slot.error;
      }
      r.rank = s.rank;
    }
    partials.push_back(std::move(r));
    spooled.push_back(rr);
    kept.push_back(s.ok && p.analysed ? std::move(p.kept) : nullptr);
    p = RankPart();  // its memory back before the finalize
  }
  out_->diagnostics = run_level_diagnostics(a.shells);
  for (DiagnosticRow& d : rank_diags) out_->diagnostics.push_back(std::move(d));
  for (DiagnosticRow& d : hardware_diagnostics(a.hw.telemetry_data, a.hw.counter_data))
    out_->diagnostics.push_back(std::move(d));
  for (DiagnosticRow& d : hardware_use_diagnostics(a.hw)) out_->diagnostics.push_back(std::move(d));
  out_->gpu_level.levels = {Level::kGpu};
  if (kept_)
    out_->rows = std::make_unique<KeptRows>(std::move(kept), out_->ra, o_.analysis);
  else
    out_->rows = std::make_unique<SpooledRows>(a.spool_files, std::move(spooled));
  out_->hw = std::move(a.hw);
  if (!hardware_pass_ && o_.hardware) {
    // As align_hardware leaves a run without hardware files: every rank, no data.
    out_->hw.ranks.resize(a.shells.ranks.size());
    for (size_t j = 0; j < a.shells.ranks.size(); ++j)
      out_->hw.ranks[j].rank = a.shells.ranks[j].rank;
  }
  out_->run = std::move(a.shells);
  if (!kept_) release_free_memory();  // the parts, moved out and freed
  phase_mark("parts ordered", me_);
  if (phase_log_on() && np_ == 1) {
    uint64_t bytes_spooled = 0;
    for (size_t k = 0; k < pool.size(); ++k) bytes_spooled += pool.file(k).size();
    phase_mark(kept_ ? fmt::format("{} ranks kept in memory", partials.size())
                     : fmt::format("spooled {:.1f} MB for {} ranks",
                                   static_cast<double>(bytes_spooled) / 1e6, partials.size()),
               me_);
  }
  out_->analysed = true;
  out_->kept = kept_;
  out_->partials = std::move(partials);
  out_->analysis = o_.analysis;
  if (!o_.defer_finalize) finalize_streamed(*out_);
}

// The first attempt's spool files, before the run is read again.
void Streamer::discard_spools() {
  for (const std::string& f : out_->scratch) {
    std::error_code ec;
    fs::remove(f, ec);
    untrack_temp_file(f);
  }
  out_->scratch.clear();
}

}  // namespace

std::unique_ptr<StreamedRun> stream_run(const StreamOptions& o, const Taxonomy& taxonomy,
                                        const std::string& dir, Comm& comm) {
  return Streamer(o, taxonomy, dir, comm).run();
}

}  // namespace chopper
