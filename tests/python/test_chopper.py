"""The Python module against the command line: the same tables, findings and text; errors as
exceptions; chopper.open; the zero-copy columns; the GIL released while C++ works."""
import os
import re
import shutil
import sqlite3
import threading
import warnings

import numpy as np
import pytest

import chopper
from conftest import assert_frames_equal, cli, real_trace, sqlite_tables


def test_every_table_equals_the_cli_database(synth_analysis, synth_cli):
    # The CLI's chopper.sqlite on the same run with the same options is the reference: every
    # table it holds (chopper_tables and chopper_columns included) is in Analysis.tables, in the
    # same order, with identical values row for row.
    out, _ = synth_cli
    ref = sqlite_tables(os.path.join(out, "chopper.sqlite"))
    assert list(synth_analysis.tables) == list(ref)
    assert len(ref) > 30  # every analysis and hardware table of a run with telemetry
    for name, df in ref.items():
        assert_frames_equal(synth_analysis.tables[name], df, name)


def test_gpu_activities_rows_are_the_generated_activities(synth_analysis, synth_run):
    # truth.json lists every GPU activity the generator wrote (kernels, memcpys, memsets), rank
    # by rank: each is one gpu_activities row.
    _, truth = synth_run
    df = synth_analysis.tables["gpu_activities"]
    for r in truth["ranks"]:
        assert (df["rank"] == r["rank"]).sum() == len(r["kernels"]["rows"])
    assert set(df["rank"]) == {0, 1, 2, 3}


def test_findings_are_the_table_and_name_the_straggler(synth_analysis, synth_run):
    _, truth = synth_run
    f = synth_analysis.findings
    table = synth_analysis.tables["findings"]
    assert len(f) == len(table)
    assert [x.finding for x in f] == list(table["finding"])
    # The scenario slows the last rank down (truth.json's straggler_rank): a finding names it.
    stragglers = [x for x in f if x.finding == "straggler"]
    assert truth["config"]["straggler_rank"] == 3
    assert stragglers and stragglers[0].rank == 3 and stragglers[0].significant == 1
    assert "<table>" in stragglers[0]._repr_html_()
    assert isinstance(stragglers[0].cost_ns, float) and stragglers[0].cost_ns > 0


def test_summary_is_what_analyze_prints(synth_analysis, synth_cli):
    # analyze prints the summary, the notes, then "wrote DIR/chopper.sqlite ..." (a line the
    # module has no directory for).
    _, stdout = synth_cli
    printed = re.sub(r"\nwrote [^\n]*\n$", "", stdout)
    assert synth_analysis.summary() == printed
    assert "straggler" in synth_analysis.summary().lower()


def test_open_reads_back_the_same_tables(synth_analysis, synth_cli):
    out, _ = synth_cli
    opened = chopper.open(out)
    assert list(opened.tables) == list(synth_analysis.tables)
    for name in opened.tables:
        assert_frames_equal(opened.tables[name], synth_analysis.tables[name], name)
    assert [x.as_dict() for x in opened.findings] == [x.as_dict() for x in synth_analysis.findings]
    assert "not stored" in opened.summary()


def test_write_gives_the_cli_database(synth_analysis, synth_cli, scratch):
    out, _ = synth_cli
    d = os.path.join(scratch, "written")
    shutil.rmtree(d, ignore_errors=True)
    synth_analysis.write(d)
    ours, ref = sqlite_tables(os.path.join(d, "chopper.sqlite")), sqlite_tables(
        os.path.join(out, "chopper.sqlite"))
    assert list(ours) == list(ref)
    for name in ref:
        assert_frames_equal(ours[name], ref[name], name)
    # The same CSV files, byte for byte.
    for name in ref:
        if name.startswith("chopper_"):
            continue
        with open(os.path.join(d, name + ".csv"), "rb") as a, \
                open(os.path.join(out, name + ".csv"), "rb") as b:
            assert a.read() == b.read(), name


def test_report_and_timeline(synth_analysis, scratch):
    html = synth_analysis.report(os.path.join(scratch, "report.html"))
    with open(html, encoding="utf-8") as f:
        doc = f.read()
    assert doc.startswith("<!DOCTYPE html>") and doc.count("<svg") >= 5
    # chopper report on the same run (analysing it again) writes the same document, but for the
    # "made by" line (the command).
    ref = os.path.join(scratch, "report_cli.html")
    cli("report", synth_analysis._paths[0], "-o", ref, "-j", "2", "--tokens-per-step", "8192")
    with open(ref, encoding="utf-8") as f:
        cli_doc = f.read()
    made_by = re.compile(r"<th>made by</th><td><code>[^<]*</code>")
    assert made_by.search(doc) and made_by.sub("", doc) == made_by.sub("", cli_doc)
    tl = synth_analysis.timeline(os.path.join(scratch, "timeline.json"))
    import json

    with open(tl) as f:
        events = json.load(f)["traceEvents"]
    # Every kernel of gpu_activities is a slice on the timeline's GPU tracks (tid 10 and above).
    kernels = (synth_analysis.tables["gpu_activities"]["kind"] == "kernel").sum()
    gpu = [e for e in events if e.get("ph") == "X" and 10 <= e.get("tid", 0) < 1000000]
    assert len(gpu) >= kernels


def test_cpu_utilization_is_a_table_empty_without_recorded_cpu_files(synth_analysis):
    # Declared as every table is (report/cpu_report.hpp), so the module has it; the synthetic run
    # has no `chopper record` CPU files, so it has no row.
    df = synth_analysis.tables["cpu_utilization"]
    assert len(df) == 0
    assert {"host_util_pct", "process_cores", "host_wait_idle_cores"} <= set(df.columns)


def test_numeric_columns_are_views_without_copy(synth_analysis):
    df = synth_analysis.tables["gpu_activities"]
    col = df["start_ns"].to_numpy()
    assert col.dtype == np.int64
    # A view of chopper's storage: not owning its data, read-only.
    assert not col.flags.owndata and not col.flags.writeable
    assert df.memory_usage(deep=False)["start_ns"] == 8 * len(df)


def test_gil_released_while_analyzing(synth_run):
    # A Python thread counts while analyze runs: with the GIL held by analyze it could not.
    run, _ = synth_run
    stop = threading.Event()
    count = [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count[0]
        chopper.analyze(run, threads=1, hardware=False)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 1000


def test_options_change_the_results(synth_run, synth_analysis):
    run, _ = synth_run
    a = chopper.analyze(run, threads=2, top=3, hardware=False)
    # top=3: 3 named kernels per rank (and over all ranks), then one 'others' row; the default
    # (20) names more.
    kb = a.tables["kernel_breakdown"]
    named = kb[kb["name"] != "others"]
    assert named.groupby(named["rank"].fillna(-1)).size().max() == 3
    default = synth_analysis.tables["kernel_breakdown"]
    assert (default["name"] != "others").sum() > (kb["name"] != "others").sum()
    # hardware=False: the telemetry the run has is not read.
    assert len(synth_analysis.tables["telemetry"]) > 0
    assert len(a.tables["telemetry"]) == 0


# Hostile inputs: errors as exceptions carrying chopper's message.

def test_truncated_trace_raises_trace_error_with_file_and_offset(synth_run, scratch):
    run, _ = synth_run
    src = os.path.join(run, sorted(f for f in os.listdir(run) if f.startswith("rank"))[0])
    bad = os.path.join(scratch, "truncated.json")
    data = open(src, "rb").read()
    if src.endswith(".gz"):
        import gzip

        data = gzip.decompress(data)
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(chopper.TraceError) as e:
        chopper.analyze(bad)
    assert "truncated.json" in str(e.value)
    assert re.search(r"(byte|offset) \d+", str(e.value)), str(e.value)


def test_missing_path_raises_trace_error(scratch):
    with pytest.raises(chopper.TraceError, match="no-such-run"):
        chopper.analyze(os.path.join(scratch, "no-such-run"))


def test_not_json_raises_trace_error(scratch):
    p = os.path.join(scratch, "not_a_trace.json")
    with open(p, "w") as f:
        f.write("this is not JSON\n")
    with pytest.raises(chopper.TraceError, match="not_a_trace.json"):
        chopper.analyze(p)


def test_one_bad_file_among_good_ones_warns(synth_run, scratch):
    run, _ = synth_run
    d = os.path.join(scratch, "partly_bad")
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(run, d)
    bad = os.path.join(d, sorted(f for f in os.listdir(d) if f.startswith("rank"))[-1])
    with open(bad, "wb") as f:
        f.write(b'{"traceEvents": [')
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a = chopper.analyze(d, hardware=False)
    msgs = [str(x.message) for x in w if issubclass(x.category, chopper.ChopperWarning)]
    assert any(os.path.basename(bad) in m for m in msgs), msgs
    assert set(a.tables["gpu_activities"]["rank"]) == {0, 1, 2}


def test_duplicate_rank_raises_run_error(synth_run, scratch):
    run, _ = synth_run
    d = os.path.join(scratch, "dup")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    first = sorted(f for f in os.listdir(run) if f.startswith("rank"))[0]
    shutil.copy(os.path.join(run, first), os.path.join(d, "a_" + first))
    shutil.copy(os.path.join(run, first), os.path.join(d, "b_" + first))
    with pytest.raises(chopper.RunError, match="duplicate_rank"):
        chopper.analyze(d, hardware=False)


def test_bad_options_raise(synth_run):
    run, _ = synth_run
    with pytest.raises(ValueError, match="dtype"):
        chopper.analyze(run, dtype="fp64")
    with pytest.raises(ValueError, match="unknown device 'z9000'"):
        chopper.analyze(run, device="z9000")
    # The command line's ranges: --tokens-per-step at least 1, -j at most 1024.
    with pytest.raises(ValueError, match="tokens_per_step: -5 is not in"):
        chopper.analyze(run, tokens_per_step=-5)
    with pytest.raises(ValueError, match="threads: 100000 is not in"):
        chopper.analyze(run, threads=100000)
    with pytest.raises(chopper.ChopperError, match="nothing.toml"):
        chopper.analyze(run, rules="/nonexistent/nothing.toml")
    with pytest.raises(chopper.ChopperError):
        chopper.open("/nonexistent/dir")


# Real traces (skip when ../shared/traces is absent).

@pytest.mark.parametrize("rel", ["kineto/hta_sampled_2rank", "kineto/tracelens_h100_qwen0.5b.json.gz"])
def test_real_trace_tables_equal_the_cli_database(rel, scratch):
    path = real_trace(rel)
    out = os.path.join(scratch, "real_" + re.sub(r"\W", "_", rel))
    p = cli("analyze", path, "-o", out, "-j", "2", "--no-csv", check=False)
    assert p.returncode in (0, 1), p.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", chopper.ChopperWarning)
        a = chopper.analyze(path, threads=2)
    ref = sqlite_tables(os.path.join(out, "chopper.sqlite"))
    assert list(a.tables) == list(ref)
    assert len(a.tables["gpu_activities"]) > 100
    for name, df in ref.items():
        assert_frames_equal(a.tables[name], df, name)
    assert a.summary() == re.sub(r"\nwrote [^\n]*\n$", "", p.stdout)


def test_compare_and_synth_run_the_commands(scratch):
    # Two runs differing only by a 3 ms data-loader stall per iteration (same seed otherwise):
    # chopper.compare's largest component difference is the data loading, about +3 ms (the
    # stall, less what the GPU still had queued: the CLI's test cli_compare_html expects
    # +2..3 ms too).
    base = os.path.join(scratch, "cmp")
    shutil.rmtree(base, ignore_errors=True)
    a = chopper.synth(os.path.join(base, "a"), layers=1, ranks=2, iterations=2)
    b = chopper.synth(os.path.join(base, "b"), layers=1, ranks=2, iterations=2,
                      data_loader_stall_ns=3_000_000)
    c = chopper.compare(a, b, out=os.path.join(base, "out"), no_csv=True, j=2)
    sweep = c.tables["sweep"]
    assert list(sweep["run"]) == ["a", "b"]
    top = c.tables["compare_components"].sort_values("order").iloc[0]
    assert top["component"] == "data_loading"
    assert 2e6 <= top["diff_ns"] <= 3.1e6
    with pytest.raises(ValueError):
        chopper.synth(os.path.join(base, "c"), no_such_option=1)


def test_load_gives_the_labelled_run(synth_run, synth_analysis):
    # The same gpu_activities, hierarchy and label_coverage as analyze (the same labels, without
    # the analyses); host_ops: every host op, each parent an earlier-opened op on its thread that
    # encloses it.
    run, truth = synth_run
    r = chopper.load(run, threads=2)
    for name in ("gpu_activities", "hierarchy", "label_coverage"):
        assert_frames_equal(r.tables[name], synth_analysis.tables[name], name)
    assert list(r.ranks["rank"]) == [0, 1, 2, 3] and r.ranks["ok"].all()
    h = r.host_ops
    assert len(h) > 0 and set(h["rank"]) == {0, 1, 2, 3}
    child = h[h["parent"].notna()]
    assert len(child) > 0
    parents = h.set_index(["rank", "row"]).loc[
        list(zip(child["rank"], child["parent"].astype("int64")))]
    assert (parents["tid"].to_numpy() == child["tid"].to_numpy()).all()
    assert (parents["start_ns"].to_numpy() <= child["start_ns"].to_numpy()).all()
    assert ((parents["start_ns"] + parents["dur_ns"]).to_numpy()
            >= (child["start_ns"] + child["dur_ns"]).to_numpy()).all()
    with pytest.raises(chopper.TraceError):
        chopper.load("/nonexistent/run")


def test_progress_is_called_once_per_file(synth_run):
    # The directory's 5 JSON files (4 ranks and truth.json, read before it is found not to be a
    # trace): the callback sees files_done 1..5 of 5, the bytes growing to the files' sum.
    run, _ = synth_run
    files = sorted(f for f in os.listdir(run) if f.endswith(".json"))
    assert len(files) == 5
    calls = []
    chopper.analyze(run, threads=2, hardware=False,
                    progress=lambda d, n, b: calls.append((d, n, b)))
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5] and {c[1] for c in calls} == {5}
    assert calls[-1][2] == sum(os.path.getsize(os.path.join(run, f)) for f in files)
    calls.clear()
    chopper.load(run, progress=lambda d, n, b: calls.append(d))
    assert calls == [1, 2, 3, 4, 5]


def test_options_are_the_command_lines(synth_run, scratch):
    # Each keyword is the option of that name: with the same options, the same tables and text as
    # chopper analyze (every table compared).
    run, _ = synth_run
    manifest = os.path.join(scratch, "manifest.toml")
    with open(manifest, "w") as f:
        f.write("tokens_per_step = 4096\n")
    out = os.path.join(scratch, "cli_options")
    p = cli("analyze", run, "-o", out, "--no-csv", "-j", "2", "--manifest", manifest,
            "--top", "5", "--kernel-wait-ns", "1000", "--launch-delay-cutoff-ns", "50000",
            "--no-align", "--dtype", "fp8", "--device", "h200", "--no-hardware",
            "--iteration-regex", r"ProfilerStep#\d+")
    a = chopper.analyze(run, threads=2, manifest=manifest, top=5, kernel_wait_ns=1000,
                        launch_delay_cutoff_ns=50000, align=False, dtype="fp8", device="h200",
                        hardware=False, iteration_regex=r"ProfilerStep#\d+")
    ref = sqlite_tables(os.path.join(out, "chopper.sqlite"))
    assert list(a.tables) == list(ref)
    for name, df in ref.items():
        assert_frames_equal(a.tables[name], df, name)
    assert a.summary() == re.sub(r"\nwrote [^\n]*\n$", "", p.stdout)
    assert "H200" in a.summary() and "fp8" in a.summary()
