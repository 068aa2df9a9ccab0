#!/usr/bin/env python3
"""The comparison page (`chopper compare --html`) against the tables compare wrote.

  compare_values.py PAGE.html DIR/chopper.sqlite

Every bar of the sweep and split figures carries its value (data-value); they must equal the
sweep and compare_components rows exactly, the difference figure must hold the largest |diff_ns|
first, in red when positive and blue when negative, and every run must have a row in the runs
table; the page's legends, numbers and units as report_browser.presentation checks them. Prints PASS or the failures (exit 1).
"""
import html as htmllib
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_browser import close, figures, groups, presentation, tags  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def main():
    page, db = sys.argv[1:3]
    text = open(page, encoding="utf-8").read()
    figs = figures(text)
    con = sqlite3.connect(db)
    sweep = {r[0]: r[1:] for r in con.execute(
        "SELECT run, iteration_ns, tokens_per_s, time_per_token_ns FROM sweep")}
    check("fig-sweep-iteration" in figs, "fig-sweep-iteration missing")
    n = 0
    for g, body in groups(figs["fig-sweep-iteration"][1], "bar"):
        run = htmllib.unescape(g["data-run"])
        rect = tags(body, "rect")
        check(len(rect) == 1 and close(rect[0]["data-value"], sweep[run][0]),
              f"sweep bar of {run}")
        n += 1
    check(n == len(sweep), f"{n} sweep bars for {len(sweep)} runs")
    # The split per run: a_ns of the baseline, b_ns of each run, per component.
    want = {}
    diffs = []
    for a, b, k, a_ns, b_ns, d in con.execute(
            "SELECT baseline, run, component, a_ns, b_ns, diff_ns FROM compare_components"):
        want[(a, k)] = a_ns
        want[(b, k)] = b_ns
        diffs.append((abs(d), b, k, d))
    m = 0
    for g, body in groups(figs["fig-compare-split"][1], "bar"):
        run = htmllib.unescape(g["data-run"])
        for r in tags(body, "rect"):
            k = htmllib.unescape(r["data-series"])
            check(close(r["data-value"], want[(run, k)]), f"split {run} {k}")
            m += 1
    check(m == sum(1 for v in want.values() if v != 0), f"{m} split marks")
    diffs.sort(reverse=True)
    bars = groups(figs["fig-compare-diff"][1], "bar")
    check(bars and htmllib.unescape(bars[0][0]["data-component"]) == diffs[0][2],
          "largest difference first")
    check(close(tags(bars[0][1], "rect")[0]["data-value"], diffs[0][3]), "largest difference value")
    # signed differences on a diverging pair: every positive one in one colour, every negative one
    # in another
    fills = {}
    for _, body in bars:
        for r in tags(body, "rect"):
            fills.setdefault(float(r["data-value"]) > 0, set()).add(r["fill"])
    check(all(len(f) == 1 for f in fills.values()), f"difference colours {fills}")
    if len(fills) == 2:
        check(fills[True] != fills[False], f"faster and slower in one colour {fills}")
    signs = "both signs" if len(fills) == 2 else "one sign"
    # legends in words, no -0.000, tooltips in the axis's unit (report_browser.presentation)
    for f in presentation(figs, text):
        check(False, f)
    if failures:
        print("\n".join(failures))
        return 1
    print(f"PASS: {n} sweep bars, {m} split marks, largest difference {diffs[0][2]} "
          f"{diffs[0][3] / 1e6:+.3f} ms, differences of {signs} in their colours")
    return 0


if __name__ == "__main__":
    sys.exit(main())
