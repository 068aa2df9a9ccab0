#include "chopper/pipeline/load.hpp"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <new>

#include "chopper/base/error.hpp"
#include "chopper/base/thread_pool.hpp"
#include "chopper/ingest/et/et_files.hpp"
#include "chopper/ingest/et/et_reader.hpp"
#include "chopper/link/et_link.hpp"
#include "chopper/link/link.hpp"

namespace chopper {

RankTrace load_rank_file(const std::string& path, const KinetoReadOptions& opt) {
  RankTrace t = read_rank_file(path, opt);
  link_trace(t);
  classify_trace(t);
  trim_trace(t);
  if (t.meta.rank < 0) {
    const int64_t r = rank_from_file_name(path);
    if (r >= 0) {
      t.meta.rank = r;
      t.meta.rank_source = "file name";
    }
  }
  if (opt.host_et) attach_host_et(t, *opt.host_et);
  return t;
}

void attach_host_et(RankTrace& t, const HostEtFiles& ets) {
  const HostEtFile* f = match_host_et(ets, t);
  if (f == nullptr) return;
  try {
    link_exec_trace(t, read_host_et_file(f->path));
  } catch (const std::exception& e) {
    t.diagnostics.add("et_unreadable", std::string(e.what()));
  }
}

Run load_run(const std::vector<std::string>& paths, const LoadOptions& opt) {
  std::vector<TracePath> files = run_trace_files(paths, opt.max_files);
  KinetoReadOptions kineto = opt.kineto;
  if (!kineto.host_et) kineto.host_et = find_host_et_files(paths, opt.et_files);
  Run run;
  std::vector<RankSlot> slots(files.size());
  std::vector<std::string> not_trace(files.size());
  const unsigned threads = opt.threads == 0 ? default_threads() : opt.threads;
  // Fewer files than threads: a thread would idle, so a large file is read on two.
  kineto.split = kineto.split || files.size() < threads;
  std::mutex progress_mu;
  size_t done = 0;
  uint64_t done_bytes = 0;
  parallel_for(files.size(), threads, [&](size_t i) {
    struct Report {  // after the file, however it went
      const std::function<void()> fn;
      ~Report() { fn(); }
    } report{[&] {
      if (!opt.progress) return;
      std::error_code ec;
      const auto sz = std::filesystem::file_size(files[i].path, ec);
      std::lock_guard<std::mutex> lk(progress_mu);
      ++done;
      done_bytes += ec ? 0 : sz;
      opt.progress(done, files.size(), done_bytes);
    }};
    RankSlot& s = slots[i];
    s.file = files[i].path;
    if (files[i].missing) {
      s.error = files[i].path + ": no such file or directory";
      s.missing = true;
      s.rank = rank_from_file_name(files[i].path);
      return;
    }
    if (!files[i].skip.empty()) {
      not_trace[i] = files[i].skip;
      return;
    }
    try {
      s.trace = load_rank_file(files[i].path, kineto);
      s.rank = s.trace.meta.rank;
      s.ok = true;
    } catch (const NotATraceError& e) {
      // In a directory, a file that is JSON but no trace (an object without traceEvents) is
      // skipped; one whose content is not JSON at all, under a trace's name, is a broken trace.
      if (files[i].from_directory && !not_json_content(e)) {
        not_trace[i] = e.reason();
      } else {
        s.error = e.what();
        s.rank = rank_from_file_name(files[i].path);
      }
    } catch (const std::bad_alloc&) {
      // Out of memory in linking or classifying (reading converts its own): name the file.
      s.error = files[i].path + ": out of memory while reading this file";
      s.rank = rank_from_file_name(files[i].path);
    } catch (const std::exception& e) {
      s.error = e.what();
      s.rank = rank_from_file_name(files[i].path);
    }
  });
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!not_trace[i].empty()) {
      run.skipped.emplace_back(files[i].path, not_trace[i]);
    } else if (slots[i].ok && is_counter_pass(slots[i].trace)) {
      run.skipped.emplace_back(files[i].path,
                               "a CUPTI range-profiler pass (cuda_profiler_range events, no GPU "
                               "activities): read as hardware counters");
      run.counter_passes.push_back(files[i].path);
    } else {
      run.ranks.push_back(std::move(slots[i]));
    }
  }
  // Numeric rank order; unknown ranks last; ties by file name (already sorted).
  std::stable_sort(run.ranks.begin(), run.ranks.end(), [](const RankSlot& a, const RankSlot& b) {
    const int64_t ra = a.rank < 0 ? INT64_MAX : a.rank;
    const int64_t rb = b.rank < 0 ? INT64_MAX : b.rank;
    return ra < rb;
  });
  return run;
}

}  // namespace chopper
