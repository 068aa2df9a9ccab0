// chopper._core: the C++ side of the Python package `chopper` (python/chopper/, docs/python.md).
// analyze runs `chopper analyze`'s own code (cli::analyze_into) with its tables kept in memory
// (TableList) instead of written; open reads a chopper.sqlite back into the same tables; the
// columns reach numpy without a copy where the layout allows. The GIL is released while C++
// works. Everything the user sees (signatures, docstrings, DataFrames, findings) is in the
// Python package; this file holds what needs C++.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "chopper/base/diagnostics.hpp"
#include "chopper/base/error.hpp"
#include "chopper/cli/commands.hpp"
#include "chopper/devices/device_db.hpp"
#include "chopper/hierarchy/aggregate.hpp"
#include "chopper/hierarchy/label.hpp"
#include "chopper/ingest/load.hpp"
#include "chopper/link/validate.hpp"
#include "chopper/pipeline/load.hpp"
#include "chopper/report/diagnostics_report.hpp"
#include "chopper/report/hierarchy_report.hpp"
#include "chopper/report/sqlite_source.hpp"
#include "run_tables.hpp"
#include "tables.hpp"

namespace py = pybind11;

namespace chopper::python {
namespace {

// The run could not be read at all (every file unreadable, missing or not a trace).
struct TraceFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The files were read but are not one run (link/validate.hpp): nothing analysed.
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The tables of one analysis (or of a chopper.sqlite) and what analyze prints.
struct Result {
  std::vector<std::shared_ptr<Table>> tables;  // in analyze's order
  std::string summary, notes, findings_json;   // "" when read back from a database
  std::string device;                          // the GPU's name; "" when unknown
  std::vector<std::string> warnings;           // what analyze prints on stderr
};

// A read-only numpy array over `n` values at `p`, owned by `owner` (no copy).
template <class T>
py::array view(const T* p, size_t n, const py::object& owner) {
  if (n == 0) return py::array_t<T>(0);
  py::array a(py::dtype::of<T>(), {static_cast<py::ssize_t>(n)},
              {static_cast<py::ssize_t>(sizeof(T))}, p, owner);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

// A numeric column: int64 (no NULL) or float64 (a REAL column, or an INTEGER one with NULLs: NaN
// where NULL, as pandas.read_sql gives), a view of the table's storage when it has no NULL.
py::array numeric_column(const std::shared_ptr<Table>& t, size_t c, const py::object& owner) {
  const std::span<const uint8_t> nulls = t->null_flags(c);
  const bool any_null = std::find(nulls.begin(), nulls.end(), 1) != nulls.end();
  const bool is_int = t->schema().columns[c].type == ColType::kInt;
  if (!any_null) {
    if (is_int) return view(t->int_values(c).data(), t->rows(), owner);
    return view(t->real_values(c).data(), t->rows(), owner);
  }
  py::array_t<double> a(static_cast<py::ssize_t>(t->rows()));
  double* out = a.mutable_data();
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  for (size_t r = 0; r < t->rows(); ++r) {
    const double v = is_int ? static_cast<double>(t->int_values(c)[r]) : t->real_values(c)[r];
    out[r] = nulls[r] ? kNaN : v;
  }
  return a;
}

// A TEXT column as an object array of str (None where NULL): one str per distinct text of the
// column's dictionary, shared by every row that holds it.
py::array text_column(const Table& t, size_t c) {
  const std::string_view bytes = t.text_bytes(c);
  const std::span<const uint64_t> ends = t.text_ends(c);
  const std::span<const uint32_t> codes = t.text_codes(c);
  std::vector<py::object> strs(ends.size());
  uint64_t begin = 0;
  for (size_t k = 0; k < ends.size(); ++k) {
    PyObject* u = PyUnicode_DecodeUTF8(bytes.data() + begin,
                                       static_cast<Py_ssize_t>(ends[k] - begin), "surrogateescape");
    if (u == nullptr) throw py::error_already_set();
    strs[k] = py::reinterpret_steal<py::object>(u);
    begin = ends[k];
  }
  py::array a(py::dtype("O"), {static_cast<py::ssize_t>(t.rows())},
              {static_cast<py::ssize_t>(sizeof(PyObject*))});
  auto** out = static_cast<PyObject**>(a.mutable_data());
  for (size_t r = 0; r < t.rows(); ++r) {
    PyObject* v = codes[r] == Table::kNoText ? Py_None : strs[codes[r]].ptr();
    Py_INCREF(v);
    Py_XDECREF(out[r]);
    out[r] = v;
  }
  return a;
}

// A table's columns: [(name, sql type, array)], in order.
py::list table_columns(const std::shared_ptr<Table>& t) {
  py::object owner = py::cast(t);
  py::list cols;
  for (size_t c = 0; c < t->cols(); ++c) {
    const ColumnSpec& spec = t->schema().columns[c];
    py::array a = spec.type == ColType::kText ? text_column(*t, c) : numeric_column(t, c, owner);
    cols.append(py::make_tuple(spec.name, std::string(col_type_name(spec.type)), a));
  }
  return cols;
}

// A table's documentation: (doc, [(column, sql type, doc, unit, null_when)]).
py::tuple table_schema(const Table& t) {
  py::list cols;
  for (const ColumnSpec& c : t.schema().columns)
    cols.append(
        py::make_tuple(c.name, std::string(col_type_name(c.type)), c.doc, c.unit, c.null_when));
  return py::make_tuple(t.schema().doc, cols);
}

// The value of option `key`, or `fallback` when it is absent or None.
template <class T>
T opt(const py::dict& o, const char* key, T fallback) {
  if (!o.contains(key) || o[key].is_none()) return fallback;
  return o[key].cast<T>();
}

// Option `key`, an integer, unless it is outside [lo, hi] (ValueError naming it, as the command
// line's checks do); `fallback` when absent or None.
int64_t int_opt(const py::dict& o, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  const int64_t v = opt<int64_t>(o, key, fallback);
  if (v < lo || v > hi)
    throw py::value_error(fmt::format("{}: {} is not in [{}, {}]", key, v, lo, hi));
  return v;
}

// analyze's options (cli/commands.hpp AnalyzeOptions) from the keyword arguments of
// chopper.analyze (python/chopper/__init__.py names and documents them).
cli::AnalyzeOptions analyze_options(const std::vector<std::string>& paths, const py::dict& o) {
  cli::AnalyzeOptions a;
  a.run.paths = paths;
  a.run.progress = false;
  a.run.rules = opt<std::string>(o, "rules", "");
  a.run.iteration_regex = opt<std::string>(o, "iteration_regex", "");
  a.run.keep_python = opt<bool>(o, "keep_python", false);
  constexpr int64_t kMax = INT64_MAX;
  // The ranges of the command line's checks (cli/common.cpp).
  a.run.threads = static_cast<unsigned>(int_opt(o, "threads", 0, 0, 1024));
  a.run.max_files = static_cast<size_t>(
      int_opt(o, "max_files", static_cast<int64_t>(kDefaultMaxFiles), 1, int64_t{1} << 30));
  a.run.max_decompressed_gib =
      static_cast<uint64_t>(int_opt(o, "max_decompressed_gib", 64, 1, int64_t{1} << 24));
  a.run.max_event_mib = static_cast<uint64_t>(int_opt(o, "max_event_mib", 16, 1, 4096));
  a.analysis.tokens_per_step = o.contains("tokens_per_step") && !o["tokens_per_step"].is_none()
                                   ? int_opt(o, "tokens_per_step", 0, 1, kMax)
                                   : 0;
  a.analysis.device = opt<std::string>(o, "device", "");
  a.analysis.top_n =
      static_cast<size_t>(int_opt(o, "top", static_cast<int64_t>(a.analysis.top_n), 0, 1000000));
  a.analysis.align_clocks = opt<bool>(o, "align", true);
  a.analysis.launch_delay_cutoff_ns =
      int_opt(o, "launch_delay_cutoff_ns", a.analysis.launch_delay_cutoff_ns, 0, kMax);
  a.analysis.kernel_wait_ns = int_opt(o, "kernel_wait_ns", a.analysis.kernel_wait_ns, 0, kMax);
  a.dtype_given = o.contains("dtype") && !o["dtype"].is_none();
  a.dtype = opt<std::string>(o, "dtype", "bf16");
  a.device_spec = opt<std::string>(o, "device_spec", "");
  a.manifest = opt<std::string>(o, "manifest", "");
  a.telemetry = opt<std::vector<std::string>>(o, "telemetry", {});
  a.counters = opt<std::vector<std::string>>(o, "counters", {});
  a.no_hardware = !opt<bool>(o, "hardware", true);
  if (o.contains("telemetry_utc_offset") && !o["telemetry_utc_offset"].is_none()) {
    a.align.utc_offset_h = o["telemetry_utc_offset"].cast<double>();
    if (std::abs(a.align.utc_offset_h) > 14)
      throw py::value_error("telemetry_utc_offset: hours east of UTC, -14 to 14");
    a.align.utc_offset_known = true;
  }
  const std::string rows = opt<std::string>(o, "rows", "auto");
  if (rows != "auto" && rows != "spool" && rows != "memory")
    throw py::value_error("rows: 'auto', 'spool' or 'memory', not '" + rows + "'");
  a.rows = rows == "spool"    ? RowStore::kSpool
           : rows == "memory" ? RowStore::kMemory
                              : RowStore::kAuto;
  const std::optional<DType> d = parse_dtype(a.dtype);
  if (!d)
    throw py::value_error("dtype: unknown dtype '" + a.dtype + "' (known: " + known_dtype_names() +
                          ")");
  a.analysis.dtype = *d;
  return a;
}

// The device spec file added and the device checked (cli's device_options, raising instead of
// printing).
void check_device(cli::AnalyzeOptions& a) {
  if (!a.device_spec.empty()) {
    const DeviceSpec* d = add_device(read_device_spec(a.device_spec));  // Error names the file
    if (a.analysis.device.empty()) a.analysis.device = d->name;
  }
  if (!a.analysis.device.empty() && find_device(a.analysis.device) == nullptr)
    throw py::value_error("device: unknown device '" + a.analysis.device + "' (known: " +
                          known_device_names() + "; for another device give device_spec=FILE)");
}

// The run's problems, one line each, as analyze prints them: errors (unreadable files, missing
// paths, files that are not one run) when `errors`, else warnings.
std::vector<std::string> problem_lines(const Run& run, bool errors) {
  std::vector<std::string> out;
  for (const RunProblem& p : run.problems) {
    const Severity s = run_diag_severity(p.kind);
    if ((s == Severity::kError) != errors || p.kind == RunDiag::kNotATrace) continue;
    out.push_back(fmt::format("{} ({}): {}", severity_name(s), run_diag_name(p.kind), p.message));
  }
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += (s.empty() ? "" : "\n") + l;
  return s;
}

// The `progress` option (a callable(files_done, files, bytes_done) or None) as the loader's
// progress callback: called from the loading threads, each call under the GIL. An exception it
// raises is reported as unraisable (the analysis goes on). The Python object is held by
// `holder`, which the caller keeps (and drops with the GIL held), so that copies of the
// callback never touch its reference count.
std::function<void(size_t, size_t, uint64_t)> progress_callback(
    const py::dict& options, std::shared_ptr<py::object>& holder) {
  if (!options.contains("progress") || options["progress"].is_none()) return {};
  holder = std::make_shared<py::object>(options["progress"]);
  py::object* f = holder.get();
  return [f](size_t done, size_t total, uint64_t bytes) {
    py::gil_scoped_acquire gil;
    try {
      (*f)(done, total, bytes);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("chopper progress callback");
    }
  };
}

// A scratch directory for spool files, removed with this.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string t = (std::filesystem::temp_directory_path() / "chopper-py-XXXXXX").string();
    if (mkdtemp(t.data()) == nullptr) throw Error("cannot make a temporary directory in " + t);
    dir = t;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// The unreadable run's error (TraceFailure: no file read; RunFailure: not one run), or nothing.
void check_readable(const Run& run, bool analysed) {
  if (analysed) return;
  std::vector<std::string> errors = problem_lines(run, true);
  if (run.ranks.size() == run.failed()) {
    errors.insert(errors.begin(), "no readable trace files" + cli::own_outputs_note(run));
    throw TraceFailure(join_lines(errors));
  }
  errors.insert(errors.begin(), "the files are not one run: nothing analysed");
  throw RunFailure(join_lines(errors));
}

// What a run analysed anyway printed on stderr: skipped files and its problems, one line each.
std::vector<std::string> run_warnings(const Run& run) {
  std::vector<std::string> w;
  for (const auto& [file, why] : run.skipped)
    if (!is_own_output(why)) w.push_back(fmt::format("skipped {} ({})", file, why));
  for (std::string& l : problem_lines(run, true)) w.push_back(std::move(l));
  for (std::string& l : problem_lines(run, false)) w.push_back(std::move(l));
  return w;
}

// The linked, labelled run (read, link, classify, validate, label, as chopper tree loads it),
// without the analyses: gpu_activities, host_ops, hierarchy, label_coverage, diagnostics and
// ranks, in memory. Raises as analyze does.
std::shared_ptr<Result> load(const std::vector<std::string>& paths, const py::dict& options) {
  const cli::AnalyzeOptions o = analyze_options(paths, options);
  auto res = std::make_shared<Result>();
  std::shared_ptr<py::object> callback;
  LoadOptions lo = cli::load_options(o.run);
  lo.progress = progress_callback(options, callback);
  py::gil_scoped_release release;
  const Taxonomy taxonomy = cli::run_taxonomy(o.run);
  Run run = load_run(o.run.paths, lo);
  validate_run(run);
  check_readable(run, run.ranks.size() != run.failed() && !run_is_mixed(run));
  res->warnings = run_warnings(run);
  label_run(taxonomy, run, o.run.threads);
  TableList list;
  write_gpu_activities(run, list);
  list.add(host_ops_table(run));
  const std::vector<Level> levels = {Level::kGpu, Level::kIteration, Level::kPhase, Level::kLayer,
                                     Level::kOperation};
  write_hierarchy(aggregate_prefixes(run, levels), list);
  write_coverage(label_coverage(run), list);
  write_diagnostics(run_diagnostics(run), list);
  list.add(ranks_table(run));
  res->tables = list.tables();
  return res;
}

// chopper analyze's analysis of `paths`, its tables in memory. Raises TraceFailure when no file
// could be read, RunFailure when the files are not one run; the problems of a run analysed anyway
// (some files unreadable, hardware files skipped) are in Result::warnings.
std::shared_ptr<Result> analyze(const std::vector<std::string>& paths, const py::dict& options) {
  cli::AnalyzeOptions o = analyze_options(paths, options);
  auto res = std::make_shared<Result>();
  TableList list;
  cli::AnalysisText text;
  std::unique_ptr<StreamedRun> sr;
  std::shared_ptr<py::object> callback;
  const auto progress = progress_callback(options, callback);
  {
    py::gil_scoped_release release;
    check_device(o);
    Scratch scratch;
    sr = cli::analyze_into(o, scratch.dir, list, text, progress);
  }
  check_readable(sr->run, sr->analysed);
  res->warnings = run_warnings(sr->run);
  for (const auto& [f, why] : sr->hw_skipped)
    res->warnings.push_back(fmt::format("skipped {} ({})", f, why));
  for (const std::string& e : sr->hw_errors) res->warnings.push_back(e);
  if (sr->ra.device != nullptr) res->device = std::string(sr->ra.device->marketing_name);
  {
    py::gil_scoped_release release;
    sr.reset();
  }
  res->tables = list.tables();
  res->summary = std::move(text.summary);
  res->notes = std::move(text.notes);
  res->findings_json = std::move(text.findings_json);
  return res;
}

std::shared_ptr<Result> open_database(const std::string& path) {
  auto res = std::make_shared<Result>();
  py::gil_scoped_release release;
  res->tables = read_sqlite_tables(path);
  const std::map<std::string, std::string> run = read_run_info(path);
  if (auto it = run.find("device"); it != run.end()) res->device = it->second;
  return res;
}

// Every table of chopper.sqlite in its order: chopper_tables and chopper_columns (made first),
// then the tables of `r`.
std::vector<std::shared_ptr<Table>> all_tables(const Result& r) {
  std::vector<std::shared_ptr<Table>> all = self_description(r.tables);
  all.insert(all.end(), r.tables.begin(), r.tables.end());
  return all;
}

// A subcommand of the chopper executable, run with `args` (after "chopper"): synth and compare
// from Python run the command itself. Returns its exit status; raises ValueError for a usage error.
int run_command(const std::vector<std::string>& args) {
  CLI::App root{"chopper"};
  root.require_subcommand(1);
  std::vector<cli::Command> cmds;
  cmds.push_back(cli::add_synth(root));
  cmds.push_back(cli::add_compare(root));
  cmds.push_back(cli::add_timeline(root));
  std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    root.parse(rev);
  } catch (const CLI::ParseError& e) {
    throw py::value_error(std::string(e.what()));
  }
  py::gil_scoped_release release;
  for (auto& c : cmds)
    if (c.app->parsed()) return c.run();
  return 2;
}

}  // namespace
}  // namespace chopper::python

PYBIND11_MODULE(_core, m) {
  using namespace chopper::python;
  m.doc() = "chopper's C++ core for the Python package `chopper` (use the package, not this).";
  py::object base = py::module_::import("builtins").attr("Exception");
  static py::exception<chopper::Error> error(m, "ChopperError", base);
  static py::exception<TraceFailure> trace_error(m, "TraceError", error);
  static py::exception<RunFailure> run_error(m, "RunError", error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chopper::InputError& e) {
      trace_error(e.what());
    } catch (const chopper::Error& e) {
      error(e.what());
    } catch (const TraceFailure& e) {
      trace_error(e.what());
    } catch (const RunFailure& e) {
      run_error(e.what());
    }
  });
  py::class_<chopper::Table, std::shared_ptr<chopper::Table>>(
      m, "Table", "One result table in chopper's column-wise storage (owns the numpy views).")
      .def_property_readonly("name", &chopper::Table::name, "The table's name.")
      .def_property_readonly("rows", &chopper::Table::rows, "Its number of rows.");
  py::class_<Result, std::shared_ptr<Result>>(m, "Result", "The tables of one analysis.")
      .def_readonly("summary", &Result::summary, "The summary chopper analyze prints.")
      .def_readonly("notes", &Result::notes, "Iteration windows, coverage and diagnostics text.")
      .def_readonly("findings_json", &Result::findings_json, "The findings as analyze --json.")
      .def_readonly("device", &Result::device, "The GPU's name (\"\" when unknown).")
      .def_readonly("warnings", &Result::warnings, "The run's problems, one line each.")
      .def(
          "table_names",
          [](const Result& r) {
            std::vector<std::string> names;
            for (const auto& t : all_tables(r)) names.push_back(t->name());
            return names;
          },
          "Every table's name, in chopper.sqlite's order.")
      .def(
          "table",
          [](const Result& r, const std::string& name) {
            for (const auto& t : all_tables(r))
              if (t->name() == name) return t;
            throw py::key_error(name);
          },
          py::arg("name"), "The table called `name`.")
      .def(
          "write",
          [](const Result& r, const std::string& dir, bool csv, const std::string& title) {
            py::gil_scoped_release release;
            write_tables(r.tables, dir, csv, title, r.device);
          },
          py::arg("dir"), py::arg("csv") = true, py::arg("title") = "",
          "DIR/chopper.sqlite (and CSV files); chopper_run says the run is `title`.")
      .def(
          "report",
          [](const Result& r, const std::string& path, const std::string& title) {
            py::gil_scoped_release release;
            return write_report(r.tables, path, title, r.device);
          },
          py::arg("path"), py::arg("title"), "The HTML report; returns the number of figures.");
  m.def("table_columns", &table_columns, py::arg("table"),
        "[(column, sql type, numpy array)]: int64 or float64 views without a copy where a "
        "column has no NULL; float64 with NaN where NULL; object arrays of str/None for TEXT.");
  m.def("table_schema", &table_schema, py::arg("table"),
        "(doc, [(column, sql type, doc, unit, null_when)]).");
  m.def("analyze", &analyze, py::arg("paths"), py::arg("options"),
        "chopper analyze's analysis of `paths`, its tables in memory (GIL released).");
  m.def("load", &load, py::arg("paths"), py::arg("options"),
        "The linked, labelled run without the analyses, as tables (GIL released).");
  m.def("open_database", &open_database, py::arg("path"),
        "The tables of a chopper.sqlite that chopper analyze wrote.");
  m.def("run_command", &run_command, py::arg("args"),
        "Runs `chopper ARGS...` (synth, compare, timeline) in this process; its exit status.");
}
