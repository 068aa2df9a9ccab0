"""docs/python.md's examples run as written: its ```python blocks, in order, in one namespace, in
a scratch directory (the test python_docs)."""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "python.md")


def blocks():
    with open(DOC, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def test_docs_examples_run(scratch, monkeypatch, capsys):
    code = blocks()
    assert len(code) >= 3
    d = os.path.join(scratch, "docs")
    os.makedirs(d, exist_ok=True)
    monkeypatch.chdir(d)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns = {}
    for block in code:
        exec(compile(block, DOC, "exec"), ns)
    out = capsys.readouterr().out
    a = ns["a"]
    # The demo's run: 8 ranks; its first finding printed; the figure and the files written.
    assert sorted(set(a.tables["gpu_activities"]["rank"])) == list(range(8))
    assert str(a.findings[0]).split("\n")[0] in out
    assert os.path.getsize("chopper-demo/gpu_time.png") > 10000
    for f in ("analysis/chopper.sqlite", "report.html", "timeline.json.gz"):
        assert os.path.getsize(os.path.join("chopper-demo", f)) > 1000, f
    # The demo's straggler (truth.json: straggler_rank 7) is among the findings.
    assert any(x.finding == "straggler" and x.rank == 7 for x in a.findings)
