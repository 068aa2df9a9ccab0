"""Fixtures of the Python module's tests (ctest runs them: tests/CMakeLists.txt, python_module).

Environment (ctest sets it): PYTHONPATH has build/python (the package), CHOPPER_BIN is the chopper
executable, CHOPPER_SHARED_DIR the folder holding traces/ (real traces; tests using them skip
when it is absent), CHOPPER_PY_TMP a scratch directory in the build tree.
"""
import json
import os
import sqlite3
import subprocess

import pandas as pd
import pytest

import chopper

CHOPPER_BIN = os.environ.get("CHOPPER_BIN", "")
SHARED = os.environ.get("CHOPPER_SHARED_DIR", "")


def cli(*args, check=True):
    """Runs the chopper executable; its CompletedProcess (text)."""
    if not CHOPPER_BIN:
        pytest.skip("CHOPPER_BIN is not set (run through ctest)")
    return subprocess.run([CHOPPER_BIN, *args], capture_output=True, text=True, check=check)


def sqlite_tables(path):
    """Every table of a chopper.sqlite, as pandas.read_sql reads it, in creation order; but
    chopper_run (what the tables are the analysis of: Analysis.device, the title), which is no
    table of the analysis."""
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'chopper_run' "
            "ORDER BY rowid")]
        return {n: pd.read_sql(f'SELECT * FROM "{n}" ORDER BY rowid', db) for n in names}


def assert_frames_equal(ours, theirs, name):
    """Row for row, column for column, exactly (NaN equals NaN). read_sql cannot type a column
    that is all NULL (or a table without rows): it gives objects (None); ours keeps the declared
    type (float64 NaN for numbers, None for text), which must then be all-NULL too."""
    assert list(ours.columns) == list(theirs.columns), name
    assert len(ours) == len(theirs), name
    for c in ours.columns:
        a, b = ours[c], theirs[c]
        if b.dtype == object and a.dtype != object:
            assert b.isna().all() and a.isna().all(), f"{name}.{c}: read_sql untyped but not NULL"
            continue
        assert a.dtype == b.dtype, f"{name}.{c}: {a.dtype} != {b.dtype}"
        # (read_sql gives an empty table an object index: the rows' order is what counts)
        pd.testing.assert_series_equal(a, b, check_exact=True, check_names=False,
                                       check_index=False, obj=f"{name}.{c}")


@pytest.fixture(scope="session")
def scratch():
    d = os.environ.get("CHOPPER_PY_TMP") or "/tmp/chopper_pytest"
    os.makedirs(d, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def synth_run(scratch):
    """A small synthetic run with a straggler (the last rank, 3, at a lower clock): 4 ranks,
    1 layer, 3 iterations; its directory and truth.json."""
    d = os.path.join(scratch, "run")
    chopper.synth(d, ranks=4, layers=1, iterations=3, scenario="straggler")
    with open(os.path.join(d, "truth.json")) as f:
        truth = json.load(f)
    return d, truth


@pytest.fixture(scope="session")
def synth_cli(synth_run, scratch):
    """chopper analyze on the synthetic run: its output directory and stdout."""
    run, _ = synth_run
    out = os.path.join(scratch, "cli_out")
    p = cli("analyze", run, "-o", out, "-j", "2", "--tokens-per-step", "8192")
    return out, p.stdout


@pytest.fixture(scope="session")
def synth_analysis(synth_run):
    run, _ = synth_run
    return chopper.analyze(run, threads=2, tokens_per_step=8192)


def real_trace(rel):
    """A real trace under CHOPPER_SHARED_DIR/traces, or a skip saying it is absent."""
    p = os.path.join(SHARED, "traces", rel) if SHARED else ""
    if not p or not os.path.exists(p):
        pytest.skip(f"../shared/traces/{rel} is absent (real traces are not in the repository)")
    return p
