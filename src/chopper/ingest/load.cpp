#include "chopper/ingest/load.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "chopper/base/error.hpp"
#include "chopper/base/input.hpp"
#include "chopper/ingest/et/et_files.hpp"
#include "chopper/ingest/nsys/nsys_detect.hpp"
#include "chopper/ingest/nsys/nsys_reader.hpp"

namespace chopper {

namespace fs = std::filesystem;

static bool looks_like_trace_name(const std::string& name) {
  // Nsight Systems: SQLite exports (read if their content is one) and reports (skipped, saying how
  // to export them).
  for (std::string_view ext :
       {".json", ".json.gz", ".json.zst", ".sqlite", ".nsys-rep", ".qdrep"}) {
    if (name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
      return true;
  }
  return false;
}

std::vector<TracePath> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<TracePath> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (p == "-") {  // standard input, read as a stream
      out.push_back({p, false, ""});
    } else if (fs::is_directory(p, ec)) {
      std::vector<TracePath> found;
      fs::directory_iterator it(p, ec), end;
      if (ec) throw Error(p + ": cannot list directory: " + ec.message());
      for (; it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!looks_like_trace_name(name)) continue;
        // The entry's own error (a dangling link, a file removed meanwhile) is about that entry
        // alone: it is listed, and the others are read.
        TracePath tp{it->path().string(), true, ""};
        std::error_code fe;
        const fs::file_status st = fs::status(it->path(), fe);
        if (st.type() == fs::file_type::not_found) {
          std::error_code le;
          tp.skip = fs::is_symlink(it->path(), le) ? "a dangling symbolic link"
                                                   : "removed while the directory was listed";
        } else if (fe) {
          tp.skip = "cannot examine: " + fe.message();
        } else if (st.type() != fs::file_type::regular) {
          struct stat sb {};
          tp.skip = ::stat(tp.path.c_str(), &sb) == 0
                        ? "not a regular file (" + std::string(file_type_name(sb.st_mode)) + ")"
                        : "not a regular file";
        }
        found.push_back(std::move(tp));
      }
      if (ec) throw Error(p + ": cannot list directory: " + ec.message());
      std::sort(found.begin(), found.end(),
                [](const TracePath& a, const TracePath& b) { return a.path < b.path; });
      for (auto& f : found) out.push_back(std::move(f));
    } else if (fs::exists(p, ec)) {
      out.push_back({p, false, ""});
    } else {
      out.push_back({p, false, "", true});
    }
  }
  return out;
}

// The reader's NotATraceError for content that does not start like JSON ('{' or '['), as opposed to
// a JSON document that is not a trace (kineto_reader.cpp: KinetoReader::run).
bool not_json_content(const NotATraceError& e) {
  return e.reason().rfind("not a JSON trace", 0) == 0;
}

// Gives back the capacity a column reserved and did not fill. The reader grows a table to at
// least 1024 rows and to its estimate of the whole file, and linking's temporaries leave that
// room in touched heap pages: on small files the slack was most of the memory kept (5,000 files
// of 8 KB: 1.5 GB resident). A column is copied only when its slack is above 256 bytes and a
// quarter of what it holds, so the copy never costs more than the memory it returns. (At 4 KiB,
// the 1,024-row first reserve of every 1- to 4-byte column of a small trace stayed.)
template <class T>
static void trim(std::vector<T>& v) {
  const size_t slack = (v.capacity() - v.size()) * sizeof(T);
  if (slack > 256 && slack > v.size() * sizeof(T) / 4) v.shrink_to_fit();
}
void trim_trace(RankTrace& t) {
  t.gpu.for_each_column([](auto& c) { trim(c); });
  t.host.for_each_column([](auto& c) { trim(c); });
  t.runtime.for_each_column([](auto& c) { trim(c); });
  t.flows.for_each_column([](auto& c) { trim(c); });
  t.instants.for_each_column([](auto& c) { trim(c); });
  trim(t.threads);
  trim(t.shapes);
  trim(t.comm_args);
  trim(t.collectives);
}

bool is_own_output(std::string_view why) {
  return why.rfind(kOwnOutput, 0) == 0;
}

// What chopper wrote itself, told by the file's first bytes (whatever its name): the synthetic
// generator's truth.json ("generator": "chopper synth") and chopper timeline's Perfetto file
// (otherData.tool "chopper timeline", which is Kineto-shaped and would read as a rank). Returns
// why it is skipped, or "" for any other file (or one that cannot be read: the reader says why).
// Standard input and pipes are not looked at: what is read of them is gone.
static std::string own_output(const std::string& path) {
  try {
    std::error_code ec;
    if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return "";
    std::unique_ptr<ByteSource> src = ByteSource::open_file(path);
    char buf[256];
    size_t n = 0;
    while (n < sizeof buf) {
      const size_t k = src->read(buf + n, sizeof buf - n);
      if (k == 0) break;
      n += k;
    }
    const std::string_view head(buf, n);
    if (head.find("\"generator\": \"chopper synth\"") != std::string_view::npos)
      return std::string(kOwnOutput) + "the ground truth of a synthetic run (chopper synth)";
    if (head.find("\"tool\":\"chopper timeline\"") != std::string_view::npos)
      return std::string(kOwnOutput) + "a timeline written by chopper timeline";
  } catch (const std::exception&) {
  }
  return "";
}

RankTrace read_rank_file(const std::string& path, const KinetoReadOptions& opt) {
  if (nsys::is_nsys_report_name(path))
    throw NotATraceError(path, 0, nsys::nsys_report_message(path));
  std::string file;
  NsysPart part;
  if (parse_nsys_part_path(path, file, part) || nsys::has_sqlite_header(path))
    return read_nsys_file(path);
  if (std::string why = own_output(path); !why.empty()) throw NotATraceError(path, 0, why);
  return read_kineto_file(path, opt);
}

bool is_counter_pass(const RankTrace& t) {
  if (t.gpu.size() > 0) return false;
  for (const auto& [cat, n] : t.x_events_by_category)
    if (n > 0 && t.strings.str(cat) == "cuda_profiler_range") return true;
  return false;
}

std::vector<TracePath> run_trace_files(const std::vector<std::string>& paths, size_t max_files) {
  std::vector<TracePath> files = expand_trace_paths(paths);
  std::sort(files.begin(), files.end(), [](const TracePath& a, const TracePath& b) {
    return a.path != b.path ? a.path < b.path : a.from_directory < b.from_directory;
  });
  // A file named both explicitly and through its directory counts once, as named.
  files.erase(std::unique(files.begin(), files.end(),
                          [](const TracePath& a, const TracePath& b) { return a.path == b.path; }),
              files.end());
  // Host execution traces are not rank traces (find_host_et_files, ingest/et/et_files.hpp).
  files.erase(std::remove_if(files.begin(), files.end(), is_host_et_path), files.end());
  // An Nsight Systems export of several processes or GPUs is one rank each (nsys_reader.hpp),
  // ranked over the run's exports in path order. One that cannot be read stays whole: reading it
  // says why.
  int64_t nsys_rank = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].skip.empty() || files[i].missing || !nsys::has_sqlite_header(files[i].path))
      continue;
    std::vector<std::string> parts;
    try {
      if (nsys::sqlite_kind(files[i].path) == nsys::SqliteKind::kNsysExport)
        parts = nsys_rank_paths(files[i].path, &nsys_rank);
    } catch (const std::exception&) {
    }
    if (parts.size() < 2) continue;
    const TracePath base = files[i];
    files.erase(files.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t k = 0; k < parts.size(); ++k) {
      TracePath tp = base;
      tp.path = parts[k];
      files.insert(files.begin() + static_cast<std::ptrdiff_t>(i + k), std::move(tp));
    }
    i += parts.size() - 1;
  }
  // Only what will be opened counts: entries skipped unopened (a FIFO, a subdirectory) do not.
  const auto traces = static_cast<size_t>(
      std::count_if(files.begin(), files.end(), [](const TracePath& f) { return f.skip.empty(); }));
  if (traces > max_files)
    throw Error(fmt::format(
        "{} trace files found, more than the limit of {} per run: name the run's files or "
        "directory, or raise the limit with --max-files",
        traces, max_files));
  return files;
}

}  // namespace chopper
