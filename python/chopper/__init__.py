"""chopper from Python: where the time and energy of distributed LLM training on GPUs go.

chopper reads the PyTorch-profiler (Kineto) traces of every rank of a training run, with GPU
telemetry and hardware counters when there are any, and explains them. This package runs the
same C++ analysis as the command line (``chopper analyze``) inside Python and hands every result
table over as a pandas DataFrame:

    >>> import chopper
    >>> a = chopper.analyze("chopper-demo", tokens_per_step=65536)
    >>> print(a.findings[0])
    >>> a.tables["temporal_breakdown"].head()

- :func:`analyze` analyses a run and returns an :class:`Analysis` (its tables in memory);
- :func:`load` loads a run (linked and labelled, no analysis) and returns a :class:`Run`: its
  GPU activities, host operations and hierarchy as DataFrames;
- :func:`open` reads an analysis ``chopper analyze`` already wrote (its ``chopper.sqlite``);
- :func:`synth` writes a synthetic run with known inefficiencies (``chopper synth``);
- :func:`compare` compares runs (``chopper compare``) and returns the comparison's tables.

Errors raise :class:`TraceError` (no file of the run could be read: the message names each file
and the byte offset where reading failed), :class:`RunError` (the files are not one run: ranks
twice, world sizes that differ, ...) or :class:`ChopperError` (bad options, rules or manifest
files); the problems of a run analysed anyway (a file unreadable among others, hardware files
skipped) are issued as :class:`ChopperWarning` through Python's ``warnings``.

Column types follow ``pandas.read_sql`` on the SQLite tables: INTEGER columns are int64, or
float64 with NaN where a column has NULLs; REAL columns float64 (NaN where NULL); TEXT columns
objects (str, None where NULL). Numeric columns without NULLs are read-only views of chopper's own
column storage (no copy): ``df.copy()`` gives a writable frame. See docs/python.md.
"""
from __future__ import annotations

import html as _html
import os as _os
import warnings as _warnings
from collections.abc import Mapping as _Mapping
from typing import Iterable, Iterator, Optional, Sequence, Union

from . import _core
from ._core import ChopperError, RunError, TraceError

__all__ = [
    "analyze", "load", "open", "synth", "compare", "Analysis", "Run", "Finding", "Tables",
    "ChopperError", "TraceError", "RunError", "ChopperWarning",
]

PathLike = Union[str, "_os.PathLike[str]"]


class ChopperWarning(UserWarning):
    """A problem of a run that was analysed anyway: a file that could not be read among others,
    a hardware file skipped, a rank missing. ``chopper analyze`` prints these on stderr (and
    exits with status 1 for errors); the diagnostics table counts them."""


def _paths(paths: Union[PathLike, Iterable[PathLike]]) -> list:
    if isinstance(paths, (str, bytes, _os.PathLike)):
        paths = [paths]
    out = [_os.fspath(p) for p in paths]
    if not out:
        raise ValueError("no paths: name the run's trace files or directories")
    return out


def _progress(progress):
    """The progress option as a callable(files_done, files, bytes_done), or None: True shows a
    tqdm bar when tqdm is installed, else a line on stderr."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    try:
        from tqdm import tqdm
    except ImportError:
        import sys

        def line(done, total, nbytes):
            end = "\n" if done == total else ""
            sys.stderr.write(f"\rchopper: {done} of {total} files, {nbytes / 1e6:.1f} MB{end}")
            sys.stderr.flush()
        return line
    bar = {}

    def update(done, total, nbytes):
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, unit="file", desc="chopper")
        bar["bar"].update(done - bar["bar"].n)
        if done == total:
            bar["bar"].close()
    return update


def _frame(cols):
    """A DataFrame of [(name, type, array)] that keeps each array as its own block (no copy)."""
    import pandas as pd

    names = [c[0] for c in cols]
    arrays = [c[2] for c in cols]
    n = len(arrays[0]) if arrays else 0
    try:
        from pandas.core.internals import BlockManager, make_block

        blocks = [make_block(a.reshape(1, -1), placement=slice(i, i + 1), ndim=2)
                  for i, a in enumerate(arrays)]
        mgr = BlockManager(blocks, [pd.Index(names), pd.RangeIndex(n)])
        return pd.DataFrame(mgr)
    except Exception:  # another pandas: its own constructor (which may copy)
        return pd.DataFrame({k: a for k, a in zip(names, arrays)}, columns=names)


class Tables(_Mapping):
    """Every table of ``chopper.sqlite`` by name, as pandas DataFrames, in the database's order
    (``chopper_tables`` and ``chopper_columns``, which document the others, first). A frame is
    made when first asked for, then kept. ``doc(name)`` says what a table and its columns mean."""

    def __init__(self, result):
        self._result = result
        self._names = list(result.table_names())
        self._frames = {}

    def __getitem__(self, name: str):
        if name not in self._frames:
            if name not in self._names:
                raise KeyError(f"{name!r}: no such table (tables: {', '.join(self._names)})")
            self._frames[name] = _frame(_core.table_columns(self._result.table(name)))
        return self._frames[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name) -> bool:
        return name in self._names

    def doc(self, name: str):
        """What table ``name`` holds, and a DataFrame of its columns (column, type, doc, unit,
        null_when), as docs/schema.md and the database's chopper_columns say."""
        import pandas as pd

        if name not in self._names:
            raise KeyError(name)
        doc, cols = _core.table_schema(self._result.table(name))
        return doc, pd.DataFrame(cols, columns=["column", "type", "doc", "unit", "null_when"])

    def __repr__(self) -> str:
        return f"Tables({', '.join(self._names)})"


class Finding:
    """One row of the findings table: what costs the run time, with its cost per iteration, its
    significance, confidence and evidence. Each column of the table is an attribute (finding,
    title, rank, significant, cost_ns, cost_share, stderr_ns, threshold_ns, confidence, energy_j,
    iterations, material_iterations, evidence, suggestion, samples, test); NULL is None."""

    def __init__(self, fields: dict):
        self._fields = fields
        for k, v in fields.items():
            setattr(self, k, v)

    def as_dict(self) -> dict:
        """The finding's columns by name."""
        return dict(self._fields)

    def __repr__(self) -> str:
        f = self._fields
        cost = f.get("cost_ns")
        share = f.get("cost_share")
        parts = [f"{f.get('title') or f.get('finding')}"]
        if cost is not None:
            parts.append(f"{cost / 1e6:.2f} ms/iteration")
        if share is not None:
            parts.append(f"{share * 100:.1f}% of the iteration")
        if f.get("rank") is not None:
            parts.append(f"rank {f['rank']}")
        parts.append("significant" if f.get("significant") else "not significant")
        text = ", ".join(parts)
        if f.get("evidence"):
            text += f"\n  evidence: {f['evidence']}"
        if f.get("suggestion"):
            text += f"\n  try: {f['suggestion']}"
        return text

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{_html.escape(str(k))}</th>"
            f"<td style='text-align:left'>{_html.escape('' if v is None else str(v))}</td></tr>"
            for k, v in self._fields.items())
        return f"<table>{rows}</table>"


def _none(v):
    """A DataFrame cell as Python: NaN and None to None, numpy scalars to int/float."""
    if v is None:
        return None
    if isinstance(v, float) and v != v:
        return None
    return v.item() if hasattr(v, "item") else v


class Analysis:
    """The results of one analysis: what ``chopper analyze`` writes and prints.

    - ``tables``: every table of chopper.sqlite as a DataFrame (:class:`Tables`);
    - ``findings``: the findings table as :class:`Finding` objects, most important first;
    - ``summary()``: the text ``chopper analyze`` prints;
    - ``write(dir)``, ``report(path)``, ``timeline(path)``: what ``chopper analyze``, ``chopper
      report`` and ``chopper timeline`` write, from these results.
    """

    def __init__(self, result, title: str, paths: Optional[list] = None,
                 timeline_args: Optional[list] = None, source: Optional[str] = None):
        self._result = result
        self._title = title
        self._paths = paths
        self._timeline_args = timeline_args or []
        self._source = source
        self.tables = Tables(result)
        self._findings = None

    @property
    def findings(self) -> list:
        """The findings table's rows as :class:`Finding` objects, in the table's order
        (significant findings first, then by cost)."""
        if self._findings is None:
            df = self.tables["findings"]
            cols = list(df.columns)
            self._findings = [Finding({c: _none(v) for c, v in zip(cols, row)})
                              for row in df.itertuples(index=False, name=None)]
        return self._findings

    def summary(self) -> str:
        """The text ``chopper analyze`` prints: the summary, the iteration windows, the label
        coverage and the diagnostics (without its last line, "wrote DIR/chopper.sqlite").

        An analysis read back with :func:`open` has no stored summary (chopper analyze prints it
        and does not store it): its summary is the findings, one per line, saying so."""
        if self._source is None:
            return self._result.summary + self._result.notes
        lines = [f"(the summary chopper analyze printed is not stored in {self._source}; "
                 "its findings:)"]
        lines += [repr(f).split("\n")[0] for f in self.findings]
        return "\n".join(lines) + "\n"

    def write(self, dir: PathLike, csv: bool = True) -> str:
        """Writes DIR/chopper.sqlite and (with ``csv``) DIR/<table>.csv from these results, as
        ``chopper analyze -o DIR`` does (staged under the directory's lock, renamed when whole);
        analyses nothing again. Returns DIR."""
        d = _os.fspath(dir)
        self._result.write(d, csv, self._title)
        return d

    def report(self, path: PathLike) -> str:
        """Writes the self-contained HTML report ``chopper report`` writes (inline SVG figures),
        drawn from these tables; analyses nothing again. Returns the path."""
        p = _os.fspath(path)
        self._result.report(p, self._title)
        return p

    def timeline(self, path: PathLike) -> str:
        """Writes every rank in one Chrome-trace JSON file for Perfetto (``chopper timeline``;
        gzip when ``path`` ends in .gz). A timeline needs every event of every rank, which the
        analysis does not keep (it holds only its tables): the traces are read again, with the
        analysis's rules and hardware files. Only for an analysis made by :func:`analyze` (one
        read back with :func:`open` does not know its traces). Returns the path."""
        if not self._paths:
            raise ChopperError("timeline: this analysis was read back from a database and does "
                               "not know its traces: chopper.analyze(paths).timeline(path)")
        p = _os.fspath(path)
        rc = _core.run_command(["timeline", *self._paths, "-o", p, *self._timeline_args])
        if rc == 2:
            raise ChopperError(f"timeline: chopper timeline failed (status {rc}; see stderr)")
        return p

    def __repr__(self) -> str:
        n = len(self.tables)
        return f"<chopper.Analysis of {self._title}: {n} tables, {len(self.findings)} findings>"

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{f._repr_html_()}</li>" for f in self.findings[:5])
        return (f"<p>chopper analysis of {_html.escape(self._title)}: {len(self.tables)} "
                f"tables, {len(self.findings)} findings</p><ol>{items}</ol>")


def analyze(paths: Union[PathLike, Sequence[PathLike]], *,
            telemetry: Optional[Sequence[PathLike]] = None,
            counters: Optional[Sequence[PathLike]] = None,
            rules: Optional[PathLike] = None,
            device: Optional[str] = None,
            tokens_per_step: Optional[int] = None,
            threads: Optional[int] = None,
            dtype: Optional[str] = None,
            device_spec: Optional[PathLike] = None,
            manifest: Optional[PathLike] = None,
            hardware: bool = True,
            telemetry_utc_offset: Optional[float] = None,
            top: int = 20,
            align: bool = True,
            launch_delay_cutoff_ns: int = 100000,
            kernel_wait_ns: int = 30000,
            iteration_regex: Optional[str] = None,
            keep_python: bool = False,
            max_files: int = 16384,
            max_decompressed_gib: int = 64,
            max_event_mib: int = 16,
            rows: str = "auto",
            progress=None) -> Analysis:
    """Analyses a run as ``chopper analyze`` does and returns its results in memory.

    The same C++ code, the same tables: ``chopper analyze PATHS -o DIR`` with these options
    writes exactly these tables to DIR/chopper.sqlite. The GIL is released while it runs.

    paths: the run's trace files and directories (every rank's Kineto JSON, .gz or .zst;
        hardware files in the same directories and their telemetry/ and counters/ folders are
        found). Files or directories, not pipes.
    telemetry: GPU telemetry files besides those found (nvidia-smi, amd-smi, rocm-smi, dcgmi,
        Zeus CSV, chopper samples) (--telemetry).
    counters: hardware-counter files besides those found (rocprof, CUPTI range profiler)
        (--counters).
    rules: a TOML file of labelling rules added to the built-in taxonomy (--rules).
    device: the GPU model, a device-database key ("h100", "mi300x", ...); default: from the
        trace (--device).
    tokens_per_step: global tokens per iteration, for tokens/s and MFU (--tokens-per-step).
    threads: worker threads; None or 0: all cores (-j).
    dtype: the matrix dtype MFU is measured against (bf16, fp16, fp8, tf32, fp32); default bf16
        (--dtype).
    device_spec: a TOML file describing a device not in the database (--device-spec).
    manifest: a TOML run manifest (tokens_per_step, device, dtype); an option given here wins
        (--manifest).
    hardware: False ignores telemetry and counter files (--no-hardware).
    telemetry_utc_offset: hours east of UTC of telemetry stamped in local time
        (--telemetry-utc-offset); default: the zone that puts the trace inside the recording.
    top: rows per rank in the name breakdowns before "others" (--top).
    align: False keeps each rank's own clock instead of the offsets estimated from collectives
        (--no-align).
    launch_delay_cutoff_ns: launch-delay outlier cutoff of the launch statistics
        (--launch-delay-cutoff-ns).
    kernel_wait_ns: the gap between consecutive kernels counted as waiting (--kernel-wait-ns).
    iteration_regex: host ops whose names match are the iterations (--iteration-regex).
    keep_python: keep Python-function events (--keep-python).
    max_files, max_decompressed_gib, max_event_mib: the input limits (--max-files,
        --max-decompressed-gib, --max-event-mib).
    rows: where per-rank rows wait for the tables: "auto", "spool" (temporary files) or
        "memory" (--rows).
    progress: a callable(files_done, files, bytes_done) called after each trace file is read
        (from the loading threads, holding the GIL), or True: a tqdm bar when tqdm is installed,
        else a line on stderr.

    Raises TraceError when no file could be read (the message names each file and the byte
    offset), RunError when the files are not one run, ChopperError or ValueError for bad
    options. Problems of a run analysed anyway are issued as ChopperWarning.
    """
    p = _paths(paths)
    opts = dict(
        telemetry=[_os.fspath(x) for x in telemetry or []],
        counters=[_os.fspath(x) for x in counters or []],
        rules=_os.fspath(rules) if rules is not None else None,
        device=device, tokens_per_step=tokens_per_step, threads=threads, dtype=dtype,
        device_spec=_os.fspath(device_spec) if device_spec is not None else None,
        manifest=_os.fspath(manifest) if manifest is not None else None,
        hardware=hardware, telemetry_utc_offset=telemetry_utc_offset, top=top, align=align,
        launch_delay_cutoff_ns=launch_delay_cutoff_ns, kernel_wait_ns=kernel_wait_ns,
        iteration_regex=iteration_regex, keep_python=keep_python, max_files=max_files,
        max_decompressed_gib=max_decompressed_gib, max_event_mib=max_event_mib, rows=rows,
        progress=_progress(progress))
    result = _core.analyze(p, opts)
    for w in result.warnings:
        _warnings.warn(w, ChopperWarning, stacklevel=2)
    timeline_args = []
    if rules is not None:
        timeline_args += ["--rules", opts["rules"]]
    if iteration_regex is not None:
        timeline_args += ["--iteration-regex", iteration_regex]
    for t in opts["telemetry"]:
        timeline_args += ["--telemetry", t]
    if not hardware:
        timeline_args.append("--no-hardware")
    if not align:
        timeline_args.append("--no-align")
    if keep_python:
        timeline_args.append("--keep-python")
    if threads:
        timeline_args += ["-j", str(threads)]
    return Analysis(result, " ".join(p), paths=p, timeline_args=timeline_args)


class Run:
    """A run loaded, linked and labelled (what ``chopper tree`` and ``chopper timeline`` load),
    without the analyses: each table a DataFrame, made when first asked for.

    - ``gpu_activities``: every GPU activity with its labels (the table ``chopper analyze``
      writes, identical values);
    - ``host_ops``: every host operation (rank, row, pid, tid, kind, category, name, start_ns,
      dur_ns, parent: the row of the enclosing host op on its thread, external_id,
      sequence_number), on the trace clock;
    - ``hierarchy``: GPU time per rank over the levels gpu, iteration, phase, layer, operation
      (analyze's hierarchy table);
    - ``ranks``: every file (file, rank, ok, error, missing);
    - ``diagnostics``: what reading and validating found (analyze's diagnostics table, without
      the hardware files' rows: load reads no hardware file);
    - ``tables``: all of them (and label_coverage) by name.
    """

    def __init__(self, result, title: str):
        self._title = title
        self.tables = Tables(result)

    @property
    def gpu_activities(self):
        """Every GPU activity of every readable rank, labelled (one row each)."""
        return self.tables["gpu_activities"]

    @property
    def host_ops(self):
        """Every host operation of every readable rank, with its parent on its thread."""
        return self.tables["host_ops"]

    @property
    def hierarchy(self):
        """GPU time per rank and level (gpu, iteration, phase, layer, operation)."""
        return self.tables["hierarchy"]

    @property
    def ranks(self):
        """Every file of the run: file, rank, ok, error, missing."""
        return self.tables["ranks"]

    @property
    def diagnostics(self):
        """What reading and validation found, counted (kind, severity, rank, file, count, ...)."""
        return self.tables["diagnostics"]

    def __repr__(self) -> str:
        return (f"<chopper.Run of {self._title}: {len(self.ranks)} files, "
                f"{len(self.gpu_activities)} GPU activities>")


def load(paths: Union[PathLike, Sequence[PathLike]], *,
         rules: Optional[PathLike] = None,
         iteration_regex: Optional[str] = None,
         threads: Optional[int] = None,
         keep_python: bool = False,
         max_files: int = 16384,
         max_decompressed_gib: int = 64,
         max_event_mib: int = 16,
         progress=None) -> Run:
    """Loads a run as ``chopper tree`` does: every trace read, linked (kernel -> runtime call ->
    host op), classified, validated as one run and labelled (iteration, phase, layer, operation),
    without the analyses and without hardware files. Returns a :class:`Run`.

    paths, rules, iteration_regex, threads, keep_python, the input limits and progress are
    :func:`analyze`'s. Raises TraceError when no file could be read, RunError when the files are
    not one run; the problems of a run loaded anyway are issued as ChopperWarning. The GIL is
    released while it runs.
    """
    p = _paths(paths)
    opts = dict(rules=_os.fspath(rules) if rules is not None else None,
                iteration_regex=iteration_regex, threads=threads, keep_python=keep_python,
                max_files=max_files, max_decompressed_gib=max_decompressed_gib,
                max_event_mib=max_event_mib, progress=_progress(progress))
    result = _core.load(p, opts)
    for w in result.warnings:
        _warnings.warn(w, ChopperWarning, stacklevel=2)
    return Run(result, " ".join(p))


def open(dir: PathLike) -> Analysis:  # noqa: A001 (chopper.open, as the issue names it)
    """An analysis ``chopper analyze -o DIR`` already wrote, read from DIR/chopper.sqlite (or
    from the database file itself), with the same interface as :func:`analyze`'s: the same
    tables (identical values), the findings, write() and report(). Its summary() lists the
    findings (the printed summary is not stored), and timeline() needs the traces (use
    analyze). Raises ChopperError when there is no chopper database there."""
    d = _os.fspath(dir)
    path = _os.path.join(d, "chopper.sqlite") if _os.path.isdir(d) else d
    if not _os.path.isfile(path):
        raise ChopperError(f"{path}: no such file (chopper analyze -o DIR writes "
                           "DIR/chopper.sqlite)")
    return Analysis(_core.open_database(path), d, source=path)


def _flags(options: dict) -> list:
    """keyword arguments as command-line flags: data_loader_stall_ns=3 -> --data-loader-stall-ns 3,
    j=2 -> -j 2, True -> the flag alone, False and None -> left out, a list -> the flag once per
    value."""
    args = []
    for k, v in options.items():
        flag = ("-" if len(k) == 1 else "--") + k.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            args.append(flag)
        elif isinstance(v, (list, tuple)):
            for x in v:
                args += [flag, str(x)]
        else:
            args += [flag, str(v)]
    return args


def synth(dir: PathLike, **options) -> str:
    """Writes a synthetic multi-rank training run with known inefficiencies to DIR, as
    ``chopper synth -o DIR`` does: one Kineto trace per rank, telemetry, counters and truth.json
    (the ground truth). Each keyword is the command's option of that name (``ranks=4``,
    ``iterations=2``, ``scenario="straggler"``, ``data_loader_stall_ns=3_000_000``,
    ``prefetch=False`` -> leave it out; ``no_prefetch=True`` -> --no-prefetch); ``chopper synth
    --help`` lists them. Returns DIR. Raises ValueError for an unknown option and ChopperError when
    the command fails."""
    d = _os.fspath(dir)
    rc = _core.run_command(["synth", "-o", d, *_flags(options)])
    if rc != 0:
        raise ChopperError(f"synth: chopper synth failed (status {rc}; see stderr)")
    return d


def compare(*runs: PathLike, out: PathLike, **options) -> Analysis:
    """Compares runs as ``chopper compare RUN... -o OUT`` does (each run analysed, then the sweep
    and the differences) and returns the comparison's tables (OUT/chopper.sqlite: sweep,
    compare_components, compare_operations, ...) as an :class:`Analysis`. Each keyword is a
    command option (``tokens_per_step=[...]``, ``html="compare.html"``, ``no_csv=True``);
    ``chopper compare --help`` lists them. Raises ChopperError when the command fails."""
    if len(runs) < 2:
        raise ValueError("compare: name at least two runs")
    o = _os.fspath(out)
    rc = _core.run_command(["compare", *[_os.fspath(r) for r in runs], "-o", o,
                            *_flags(options)])
    if rc == 2:
        raise ChopperError(f"compare: chopper compare failed (status {rc}; see stderr)")
    return open(o)
