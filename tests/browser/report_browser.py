#!/usr/bin/env python3
"""Renders chopper's HTML report in headless Chromium and checks it against the SQLite tables.

usage: report_browser.py CHROMIUM REPORT.html CHOPPER.sqlite OUTDIR

1. Chromium (--headless --no-sandbox --disable-gpu ...) loads the file and dumps the DOM after
   its scripts ran (--dump-dom): every expected figure is there, the page's error recorder
   (#chopper-errors: script errors and Content-Security-Policy violations, i.e. blocked requests)
   is empty, and the network log has no request to anything but the file itself.
2. A screenshot of the page is saved in OUTDIR (report.png, report-full.png).
3. The numbers the figures carry (data attributes of their marks) are compared with the tables of
   CHOPPER.sqlite (written by `chopper analyze` on the same run): the same values, exactly where
   the table's value is drawn, to float rounding where the figure shows a sum or a quantile.
Exit status 0 = pass; 77 = skipped (printed why).
"""
import html
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]

EXPECTED = ["fig-findings", "fig-e2e", "fig-rank-e2e", "fig-split", "fig-idle", "fig-idle-streams",
            "fig-throughput", "fig-waterfall", "fig-waterfall-phase", "fig-waterfall-op", "fig-launch", "fig-dist-gemm",
            "fig-dist-vector", "fig-coll-latency", "fig-coll-busbw", "fig-coll-skew",
            "fig-coll-wait", "fig-straggler-lead", "fig-straggler-run", "fig-overlap-cdf",
            "fig-power", "fig-clock", "fig-temp", "fig-energy", "fig-coverage", "tbl-diagnostics",
            "fig-power-heatmap", "fig-clock-heatmap", "fig-temp-heatmap", "fig-memory",
            "fig-power-burst", "fig-links", "fig-top-kernels", "fig-roofline",
            "fig-kernel-violins"]
# Another run than the demo (other telemetry, more ranks) may lack some: CHOPPER_REPORT_EXPECT
# (comma-separated ids) replaces the list; every figure drawn is checked all the same.
if os.environ.get("CHOPPER_REPORT_EXPECT"):
    EXPECTED = os.environ["CHOPPER_REPORT_EXPECT"].split(",")

failures = []
checked = {}


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def count(fig, n=1):
    checked[fig] = checked.get(fig, 0) + n


def attrs(tag):
    return {k: html.unescape(v) for k, v in re.findall(r'([\w:-]+)="([^"]*)"', tag)}


def figures(dom):
    out = {}
    for m in re.finditer(r'<figure\b([^>]*)>(.*?)</figure>', dom, re.S):
        a = attrs(m.group(1))
        out[a.get("id")] = (a, m.group(2))
    return out


def groups(body, cls):
    """(attributes of <g class=cls ...>, inner text) for each such group (they do not nest)."""
    return [(attrs(m.group(1)), m.group(2))
            for m in re.finditer(r'<g class="' + cls + r'"([^>]*)>(.*?)</g>', body, re.S)]


def tags(body, name):
    return [attrs(m.group(1)) for m in re.finditer(r'<' + name + r'\b([^>]*)>', body)]


def close(a, b, rel=1e-9):
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-6)


def quantile(v, q):  # numpy's default (linear), as the report draws
    v = sorted(v)
    h = (len(v) - 1) * q
    lo = math.floor(h)
    hi = min(len(v) - 1, lo + 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])


def run_chromium(chromium, url, extra, timeout=120):
    t0 = time.time()
    p = subprocess.run([chromium] + FLAGS + extra + [url], capture_output=True, text=True,
                       timeout=timeout)
    return p, time.time() - t0


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    chromium, report, db, outdir = sys.argv[1:]
    browser = chromium != "--no-browser"
    if browser and (not chromium or chromium.endswith("NOTFOUND") or not os.path.exists(chromium)):
        print("SKIP: chromium not found (apt-get install chromium); the values are still checked "
              "on the file by the test report_values")
        return 77
    os.makedirs(outdir, exist_ok=True)
    report = os.path.abspath(report)
    if browser:
        figs = render(chromium, report, outdir)
    else:  # the file as written (the DOM before any script ran)
        figs = figures(open(report, encoding="utf-8").read())
    compare(figs, report, db, outdir)
    json.dump({"figures": sorted(figs), "checked": checked, "failures": failures},
              open(os.path.join(outdir, "result.json"), "w"), indent=1)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures[:50]))
        return 1
    print("PASS")
    return 0


def render(chromium, report, outdir):
    url = "file://" + report
    netlog = os.path.join(outdir, "netlog.json")
    p, secs = run_chromium(chromium, url, ["--dump-dom", "--log-net-log=" + netlog,
                                           "--virtual-time-budget=3000"])
    dom = p.stdout
    check(p.returncode == 0, f"chromium --dump-dom exited {p.returncode}: {p.stderr[-2000:]}")
    check('data-report="chopper"' in dom, "the DOM dump is not the report")
    print(f"report: {os.path.getsize(report)} bytes; chromium --dump-dom took {secs:.2f} s "
          "(start-up included)")
    m = re.search(r'<pre id="chopper-errors"[^>]*>(.*?)</pre>', dom, re.S)
    check(m is not None, "no #chopper-errors element")
    if m:
        check(m.group(1).strip() == "", "script errors or blocked requests: " + m.group(1))
    m = re.search(r'<pre id="chopper-load-ms"[^>]*>(.*?)</pre>', dom, re.S)
    if check(m is not None and m.group(1).strip() != "", "the load event did not run"):
        print(f"load event after {m.group(1)} ms (performance.now() in the page)")
    # network: no request the page made (a request has the page's origin, "null" for file://,
    # as initiator); the browser's own background requests (initiator "not an origin": update
    # checks, the account list) are listed but are not the page's
    if check(os.path.exists(netlog), "no network log"):
        d = json.load(open(netlog, encoding="utf-8", errors="replace"))
        names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
        page, own = [], set()
        for e in d["events"]:
            pr = e.get("params", {})
            if names.get(e["type"]) != "URL_REQUEST_START_JOB" or "url" not in pr:
                continue
            u = pr["url"]
            if u.startswith("file://") or u.startswith("data:"):
                continue
            if pr.get("initiator") == "not an origin":
                own.add(u.split("?")[0])
            else:
                page.append(u)
        check(not page, f"network requests from the page: {page[:10]}")
        print(f"network log: no request from the page ({len(own)} of Chromium's own: "
              f"{', '.join(sorted(own))})")
    figs = figures(dom)
    for f in EXPECTED:
        check(f in figs, f"figure {f} missing")
    print(f"figures: {len(figs)} ({', '.join(sorted(figs))})")
    # screenshots (the top of the page, and a tall one with every figure)
    for name, size in (("report.png", "1400,1800"), ("report-full.png", "1400,16000")):
        shot = os.path.join(outdir, name)
        p, _ = run_chromium(chromium, url, ["--screenshot=" + shot, "--window-size=" + size,
                                            "--hide-scrollbars"])
        check(p.returncode == 0 and os.path.exists(shot), f"screenshot {name} failed")
    print(f"screenshots in {outdir}")
    return figs


def compare(figs, report, db, outdir):
    for f in EXPECTED:
        check(f in figs, f"figure {f} missing")
    # each figure: its table, a caption naming the definition, its data as CSV, axis titles
    for fid, (a, body) in figs.items():
        check(a.get("data-table"), f"{fid}: no data-table")
        check('download="' + fid + '.csv"' in body, f"{fid}: no CSV download")
        check("<figcaption>" in body and "docs/metrics.md" in body, f"{fid}: no caption/definition")
        if "<svg" in body:
            check('class="axis-title"' in body, f"{fid}: no axis titles")
    # the file references nothing outside itself (the SVG namespace is a name, not a request)
    raw = open(report, encoding="utf-8").read().replace("http://www.w3.org/2000/svg", "")
    check("default-src 'none'" in raw, "no Content-Security-Policy")
    check(not re.search(r'\ssrc=|https?://|<link\b|@import|url\(', raw),
          "an external reference in the file")
    con = sqlite3.connect(db)
    q = lambda sql, *a: con.execute(sql, a).fetchall()  # noqa: E731

    # end_to_end: each drawn part is the table's time_ns of that iteration and component
    if "fig-e2e" in figs:
        want = {(i, c): t for i, c, t in q("SELECT iteration, component, time_ns FROM end_to_end")}
        got = {}
        for g, inner in groups(figs["fig-e2e"][1], "bar"):
            for r in tags(inner, "rect"):
                got[(int(g["data-iteration"]), r["data-series"])] = int(r["data-value"])
        check(got == {k: v for k, v in want.items() if v != 0}, "fig-e2e differs from end_to_end")
        count("fig-e2e", len(got))
    # findings: cost_ns of each finding
    if "fig-findings" in figs:
        want = {(f, r if r is not None else ""): c
                for f, r, c in q("SELECT finding, rank, cost_ns FROM findings")}
        n = 0
        for g, inner in groups(figs["fig-findings"][1], "bar"):
            key = (g["data-finding"], int(g["data-rank"]) if g["data-rank"] else "")
            for r in tags(inner, "rect"):
                check(float(r["data-value"]) == want.get(key), f"finding {key}: {r['data-value']}")
                n += 1
        check(n == sum(1 for v in want.values() if v != 0), "fig-findings: not every finding")
        count("fig-findings", n)
    # temporal breakdown per rank and iteration
    if "fig-rank-e2e" in figs:
        want = {(rk, it, k): v for rk, it, k, v in
                q("SELECT rank, iteration, component, time_ns FROM rank_components") if v}
        got = {}
        for g, inner in groups(figs["fig-rank-e2e"][1], "bar"):
            for r in tags(inner, "rect"):
                got[(int(g["data-rank"]), int(g["data-iteration"]), r["data-series"])] = \
                    float(r["data-value"])
        check(set(got) == set(want), "fig-rank-e2e: marks != rank_components rows")
        for k, v in want.items():
            check(k in got and close(got[k], v), f"fig-rank-e2e {k}")
        count("fig-rank-e2e", len(got))
    if "fig-split" in figs:
        rows = q("SELECT rank, iteration, compute_ns, exposed_comm_ns, exposed_memcpy_ns, "
                 "non_compute_ns, idle_ns FROM temporal_breakdown WHERE iteration IS NOT NULL")
        want = {}
        for rk, it, c, ec, em, nc, idle in rows:
            for k, v in (("compute", c), ("exposed_comm", ec), ("exposed_memcpy", em),
                         ("other non-compute", nc - ec - em), ("idle", idle)):
                if v:
                    want[(rk, it, k)] = v
        got = {}
        for g, inner in groups(figs["fig-split"][1], "bar"):
            for r in tags(inner, "rect"):
                got[(int(g["data-rank"]), int(g["data-iteration"]), r["data-series"])] = \
                    int(r["data-value"])
        check(got == want, "fig-split differs from temporal_breakdown")
        count("fig-split", len(got))
    # the rank's idle as the iteration split defines it: each bar's causes are rank_components'
    # host, launch and idle components and add up to temporal_breakdown.idle_ns
    causes = ["data_loading", "host_sync", "host_optimizer", "host_stall", "host_late",
              "launch_overhead", "graph_gap", "idle"]
    if "fig-idle" in figs and 'class="bar"' in figs["fig-idle"][1]:
        idle = {(rk, it): v for rk, it, v in q("SELECT rank, iteration, idle_ns FROM "
                                               "temporal_breakdown WHERE iteration IS NOT NULL")}
        want = {(rk, it, k): v for rk, it, k, v in
                q("SELECT rank, iteration, component, time_ns FROM rank_components") if v and
                k in causes}
        got, bars = {}, {}
        for g, inner in groups(figs["fig-idle"][1], "bar"):
            key = (int(g["data-rank"]), int(g["data-iteration"]))
            check(int(g["data-idle"]) == idle.get(key), f"fig-idle {key}: data-idle")
            bars[key] = 0
            for r in tags(inner, "rect"):
                got[key + (r["data-series"],)] = int(r["data-value"])
                bars[key] += int(r["data-value"])
        check(set(bars) == set(idle), "fig-idle: bars != temporal_breakdown iteration rows")
        check(got == want, "fig-idle causes differ from rank_components")
        for k, v in bars.items():
            check(v == idle.get(k), f"fig-idle {k}: causes sum to {v}, idle_ns {idle.get(k)}")
        count("fig-idle", len(bars))
    elif "fig-idle" in figs:  # many ranks: a rank x iteration heatmap of idle_ns
        want = {(rk, it): v for rk, it, v in q("SELECT rank, iteration, idle_ns FROM "
                                               "temporal_breakdown WHERE iteration IS NOT NULL")}
        got = {(int(r["data-rank"]), int(r["data-iteration"])): int(r["data-value"])
               for r in tags(figs["fig-idle"][1], "rect") if "data-rank" in r and r["data-value"]}
        check(got == want, "fig-idle (heatmap) differs from temporal_breakdown.idle_ns")
        count("fig-idle", len(got))
    # secondary view: idle by cause summed over streams
    if "fig-idle-streams" in figs and 'class="bar"' not in figs["fig-idle-streams"][1]:
        want = {(rk, it): v for rk, it, v in
                q("SELECT rank, iteration, SUM(host_wait_ns) FROM idle_breakdown WHERE "
                  "iteration IS NOT NULL GROUP BY rank, iteration")}
        got = {(int(r["data-rank"]), int(r["data-iteration"])): float(r["data-value"])
               for r in tags(figs["fig-idle-streams"][1], "rect")
               if "data-rank" in r and r["data-value"]}
        check(got == want, "fig-idle-streams (heatmap) differs from idle_breakdown host wait")
        check("Secondary view" in figs["fig-idle-streams"][1], "fig-idle-streams: not labelled")
        count("fig-idle-streams", len(got))
    elif "fig-idle-streams" in figs:
        want = {}
        for rk, it, hw, kw, ot in q("SELECT rank, iteration, SUM(host_wait_ns), "
                                    "SUM(kernel_wait_ns), SUM(other_ns) FROM idle_breakdown "
                                    "WHERE iteration IS NOT NULL GROUP BY rank, iteration"):
            for k, v in (("host_wait", hw), ("kernel_wait", kw), ("other", ot)):
                if v:
                    want[(rk, it, k)] = v
        got = {}
        for g, inner in groups(figs["fig-idle-streams"][1], "bar"):
            for r in tags(inner, "rect"):
                got[(int(g["data-rank"]), int(g["data-iteration"]), r["data-series"])] = \
                    int(r["data-value"])
        check(got == want, "fig-idle-streams differs from idle_breakdown")
        check("Secondary view" in figs["fig-idle-streams"][1], "fig-idle-streams: not labelled")
        count("fig-idle-streams", len(got))
    # throughput
    if "fig-throughput" in figs:
        # tokens per second, or the iteration time where the tokens are unknown (no
        # --tokens-per-step: the real traces); the bar's data-series names the column
        want = {c: dict(q(f"SELECT iteration, {c} FROM iterations"))
                for c in ("tokens_per_s", "time_ns")}
        n = 0
        for g, inner in groups(figs["fig-throughput"][1], "bar"):
            for r in tags(inner, "rect"):
                col = r["data-series"]
                check(col in want and
                      float(r["data-value"]) == want[col][int(g["data-iteration"])], col)
                n += 1
        want = want["time_ns"]
        check(n == len(want), "fig-throughput: not every iteration")
        count("fig-throughput", n)
    # heatmaps: rank x iteration
    for fid, table, col in (("fig-straggler-lead", "stragglers", "total_lead_ns"),
                            ("fig-coll-wait", "stragglers", "coll_wait_ns")):
        if fid not in figs:
            continue
        want = {(r, i): v for r, i, v in
                q(f"SELECT rank, iteration, {col} FROM {table} WHERE iteration IS NOT NULL")}
        got = {(int(r["data-rank"]), int(r["data-iteration"])): int(r["data-value"])
               for r in tags(figs[fid][1], "rect") if "data-rank" in r and r["data-value"]}
        check(got == want, f"{fid} differs from {table}.{col}")
        count(fid, len(got))
    # the iteration's cascade: per part, the mean, min and max over iterations of the shown
    # rank's waterfall iteration row, end_to_end's groups and the observed time; the means add up
    # to the mean observed iteration
    if "fig-waterfall" in figs:
        wparts = ["theoretical_ns", "instruction_ns", "utilization_ns", "overlap_ns",
                  "frequency_ns", "residual_ns"]
        host = ("data_loading", "host_sync", "host_optimizer", "host_stall", "host_late",
                "launch_overhead", "graph_gap")
        per = {}
        for it, rk, t in q("SELECT iteration, shown_rank, time_ns FROM iterations"):
            e = q("SELECT component, time_ns FROM end_to_end WHERE iteration = ?", it)
            if not e:
                continue
            w = q("SELECT observed_ns, " + ", ".join(wparts) + " FROM waterfall WHERE rank = ? "
                  "AND iteration = ? AND phase IS NULL AND operation IS NULL", rk, it)
            obs, *wv = w[0] if w else [0] * 7
            p = dict(zip(wparts, wv))
            e = dict(e)
            p["other_compute_ns"] = sum(v for k, v in e.items() if "." in k) - obs
            p["launch_host_ns"] = sum(e.get(k, 0) for k in host)
            for k in ("idle", "exposed_memcpy", "exposed_comm", "straggler_wait"):
                p[k + "_ns"] = e.get(k, 0)
            check(close(sum(p.values()), t, 1e-9), f"fig-waterfall: parts of iteration {it}")
            p["time_ns"] = t
            per[it] = p
        steps = [g for g, _ in groups(figs["fig-waterfall"][1], "step")]
        check(steps and steps[-1]["data-part"] == "time_ns", "fig-waterfall: no observed bar")
        check(len(steps) == 13, f"fig-waterfall: {len(steps)} bars, want 13")
        total = 0.0
        for g in steps:
            vals = [p[g["data-part"]] for p in per.values()]
            check(close(g["data-value"], sum(vals) / len(vals)), f"fig-waterfall {g['data-part']}")
            check(close(g["data-min"], min(vals)) and close(g["data-max"], max(vals)),
                  f"fig-waterfall {g['data-part']} spread")
            if g["data-part"] != "time_ns":
                check(close(g["data-start"], total, 1e-9), f"fig-waterfall {g['data-part']} start")
                total += float(g["data-value"])
        check(close(total, steps[-1]["data-value"], 1e-9),
              f"fig-waterfall: bars sum to {total}, observed {steps[-1]['data-value']}")
        count("fig-waterfall", len(steps))
    # waterfall per phase: every part of the slowest rank's phase rows
    parts = ["theoretical_ns", "instruction_ns", "utilization_ns", "overlap_ns", "frequency_ns",
             "residual_ns"]
    if "fig-waterfall-phase" in figs:
        n = 0
        for g, inner in groups(figs["fig-waterfall-phase"][1], "bar"):
            row = q("SELECT observed_ns, " + ", ".join(parts) + " FROM waterfall WHERE rank = ? "
                    "AND iteration = ? AND phase = ? AND operation IS NULL",
                    int(g["data-rank"]), int(g["data-iteration"]), g["data-phase"])
            check(len(row) == 1, f"waterfall row {g}")
            if not row:
                continue
            check(int(g["data-observed"]) == row[0][0], "waterfall observed_ns")
            vals = dict(zip(parts, row[0][1:]))
            for r in tags(inner, "rect"):
                check(float(r["data-value"]) == vals[r["data-series"]],
                      f"waterfall {g['data-phase']} {r['data-series']}")
                n += 1
        count("fig-waterfall-phase", n)
    # launch overhead per operation: the sums over ranks, iterations, phases and layers
    if "fig-launch" in figs:
        want = {(o if o is not None else "(none)"): s for o, s in
                q("SELECT operation, SUM(launch_overhead_ns) FROM launch_overhead "
                  "GROUP BY operation")}
        n = 0
        for g, _ in groups(figs["fig-launch"][1], "bar"):
            check(float(g["data-sum-launch-overhead-ns"]) == want[g["data-operation"]],
                  f"launch overhead of {g['data-operation']}")
            n += 1
        count("fig-launch", n)
    # distributions: quantiles of kernel_ns per (operation, phase), over the instances of the
    # figure's classes (an operation's instances may differ in class: on a real ResNet trace 24 of
    # aten::relu_'s 27 backward instances are conv, drawn in neither figure)
    for fid, classes in (("fig-dist-gemm", ("gemm",)),
                         ("fig-dist-vector", ("norm", "elementwise", "attention", "embedding",
                                              "loss"))):
        if fid not in figs:
            continue
        n = 0
        for g, _ in groups(figs[fid][1], "boxplot"):
            v = [x for (x,) in q("SELECT kernel_ns FROM operation_instances WHERE operation = ? "
                                 "AND phase = ? AND op_class IN (%s)" % ",".join("?" * len(classes)),
                                 g["data-operation"], g["data-phase"], *classes)]
            check(int(g["data-n"]) == len(v), f"{fid} {g['data-group']}: n")
            for k, qq in (("data-min", 0), ("data-q1", .25), ("data-median", .5), ("data-q3", .75),
                          ("data-max", 1)):
                check(close(g[k], quantile(v, qq)), f"{fid} {g['data-group']}: {k}")
            n += 1
        count(fid, n)
    # collectives per type
    for fid, col in (("fig-coll-latency", "latency_ns"), ("fig-coll-busbw", "busbw_gbs"),
                     ("fig-coll-skew", "arrival_skew_ns")):
        if fid not in figs:
            continue
        n = 0
        for g, _ in groups(figs[fid][1], "boxplot"):
            v = [x for (x,) in q(f"SELECT {col} FROM collectives WHERE COALESCE(called, type) = ? "
                                 f"AND {col} IS NOT NULL", g["data-type"])]
            check(int(g["data-n"]) == len(v), f"{fid} {g['data-type']}: n")
            check(close(g["data-median"], quantile(v, .5)), f"{fid} {g['data-type']}: median")
            check(close(g["data-max"], max(v)), f"{fid} {g['data-type']}: max")
            n += 1
        count(fid, n)
    # overlap CDF: each drawn point is an order statistic of the phase's overlap ratios
    if "fig-overlap-cdf" in figs:
        n = 0
        for line in tags(figs["fig-overlap-cdf"][1], "polyline"):
            if "data-phase" not in line:
                continue
            v = sorted(x for (x,) in q("SELECT overlap_ratio FROM operation_instances WHERE "
                                       "phase = ? AND overlap_ratio IS NOT NULL",
                                       line["data-phase"]))
            check(int(line["data-n"]) == len(v), "overlap CDF n")
            xs = [float(x) for x in line["data-x"].split(",")]
            ys = [float(y) for y in line["data-y"].split(",")]
            for x, y in zip(xs, ys):
                check(x == v[round(y * len(v)) - 1], f"overlap CDF point {x},{y}")
                n += 1
        count("fig-overlap-cdf", n)
    # telemetry: every sample of every rank, in table order
    for fid in ("fig-power", "fig-clock", "fig-temp"):
        if fid not in figs:
            continue
        n = 0
        for line in tags(figs[fid][1], "polyline"):
            if "data-rank" not in line:
                continue
            rows = q("SELECT t_ns, value FROM telemetry WHERE rank = ? AND metric = ? "
                     "ORDER BY rowid", int(line["data-rank"]), line["data-metric"])
            xs = [int(x) for x in line["data-x"].split(",")]
            ys = [float(y) for y in line["data-y"].split(",")]
            check(xs == [t for t, _ in rows] and ys == [v for _, v in rows],
                  f"{fid} rank {line['data-rank']} differs from telemetry")
            n += len(xs)
        marks = [int(m["data-x"]) for m in tags(figs[fid][1], "line") if "data-iteration" in m
                 and m["data-iteration"] != "end"]
        starts = [s for (s,) in q("SELECT start_ns FROM temporal_breakdown WHERE iteration IS NOT "
                                  "NULL AND rank = (SELECT MIN(rank) FROM temporal_breakdown) "
                                  "ORDER BY start_ns")]
        check(marks == starts, f"{fid}: iteration boundaries {marks} != {starts}")
        count(fid, n)
    check_telemetry_extra(figs, q)
    # energy per iteration: whole-window and phase rows
    if "fig-energy" in figs:
        n = 0
        for g, inner in groups(figs["fig-energy"][1], "bar"):
            rk, it = int(g["data-rank"]), int(g["data-iteration"])
            (e,), = q("SELECT energy_j FROM power_energy WHERE rank = ? AND iteration = ? AND "
                      "phase IS NULL", rk, it)
            check(float(g["data-energy-j"]) == e, f"energy r{rk} i{it}")
            for r in tags(inner, "rect"):
                (pe,), = q("SELECT energy_j FROM power_energy WHERE rank = ? AND iteration = ? "
                           "AND phase = ?", rk, it, r["data-series"])
                check(float(r["data-value"]) == pe, f"energy r{rk} i{it} {r['data-series']}")
                n += 1
        count("fig-energy", n)

    work_figures(figs, q)
    for f in presentation(figs, open(report, encoding="utf-8").read()):
        check(False, f)

    print("values compared with " + os.path.basename(db) + ": " +
          ", ".join(f"{k} {v}" for k, v in sorted(checked.items())))
    for f in ("fig-e2e", "fig-findings", "fig-split", "fig-straggler-lead", "fig-power",
              "fig-energy", "fig-waterfall-phase", "fig-waterfall", "fig-idle",
              "fig-top-kernels", "fig-roofline", "fig-kernel-violins"):
        if f in EXPECTED:
            check(checked.get(f, 0) > 0, f"{f}: no value compared")
    for f in TELEMETRY_FIGS:
        if f in figs:
            check(checked.get(f, 0) > 0, f"{f}: no value compared")


TELEMETRY_FIGS = ("fig-power", "fig-clock", "fig-temp", "fig-power-heatmap", "fig-clock-heatmap",
                  "fig-temp-heatmap", "fig-memory", "fig-power-burst", "fig-links")


def panels(body):
    """(attributes of <div class="panel" ...>, inner) for each panel of a figure."""
    return [(attrs(m.group(1)), m.group(2))
            for m in re.finditer(r'<div class="panel"([^>]*)>(.*?)</div>', body, re.S)]


def samples(q, rank, metric):
    return q("SELECT t_ns, value FROM telemetry WHERE rank = ? AND metric = ? ORDER BY rowid",
             rank, metric)


def rates(rows):
    """bytes/s between consecutive samples of a cumulative counter, as the report computes them"""
    out = []
    for (t0, v0), (t1, v1) in zip(rows, rows[1:]):
        if t1 > t0 and v1 >= v0:
            out.append((t1, (v1 - v0) / ((t1 - t0) * 1e-9)))
    return out


def check_lines(fid, body, q, series):
    """every per-rank polyline (data-rank, data-metric) is series(rank, metric), in order"""
    n = 0
    for line in tags(body, "polyline"):
        if "data-rank" not in line:
            continue
        want = series(int(line["data-rank"]), line["data-metric"])
        xs = [int(x) for x in line["data-x"].split(",")]
        ys = [float(y) for y in line["data-y"].split(",")]
        check(xs == [t for t, _ in want] and all(close(a, b) for a, b in zip(ys, [v for _, v in want]))
              and len(ys) == len(want), f"{fid} rank {line['data-rank']} {line['data-metric']}")
        n += len(xs)
    return n


def check_bands(fid, body, q, series):
    """each band (data-metric): each rank's mean in 200 bins, then min/quartiles/max over ranks"""
    n = 0
    for g, _ in groups(body, "band"):
        if "data-metric" not in g:
            continue
        metric, origin = g["data-metric"], int(g["data-origin-ns"])
        ranks = [r for (r,) in q("SELECT DISTINCT rank FROM telemetry WHERE metric = ? ORDER BY "
                                 "rank", metric)]
        per = {r: series(r, metric) for r in ranks}
        per = {r: v for r, v in per.items() if v}
        check(int(g["data-ranks"]) == len(per), f"{fid} {metric}: band over {len(per)} ranks")
        rel = [float(t - origin) for v in per.values() for t, _ in v]
        lo, hi = min(rel), max(rel)
        width = max(1.0, (hi - lo) / 200)
        acc = []
        for v in per.values():
            b = [[0.0, 0] for _ in range(200)]
            for t, x in v:
                k = min(199, int((float(t - origin) - lo) / width))
                b[k][0] += x
                b[k][1] += 1
            acc.append(b)
        want = {k: sorted(a[k][0] / a[k][1] for a in acc if a[k][1])
                for k in range(200) if any(a[k][1] for a in acc)}
        xs = [float(x) for x in g["data-x"].split(",")]
        check(len(xs) == len(want), f"{fid} {metric}: {len(xs)} band points, want {len(want)}")
        for x, k, mn, q1, md, q3, mx in zip(xs, sorted(want), *(
                [float(v) for v in g[a].split(",")]
                for a in ("data-min", "data-q1", "data-median", "data-q3", "data-max"))):
            v = want[k]
            ok = close(x, lo + width * (k + 0.5)) and close(mn, v[0]) and close(mx, v[-1]) and \
                close(q1, quantile(v, .25)) and close(md, quantile(v, .5)) and \
                close(q3, quantile(v, .75))
            check(ok, f"{fid} {metric}: band bin {k}")
            n += 1
    return n


def check_telemetry_extra(figs, q):
    raw = lambda r, m: samples(q, r, m)  # noqa: E731
    # per-rank lines or bands of the samples (fig-power, fig-clock, fig-temp, fig-memory)
    for fid in ("fig-power", "fig-clock", "fig-temp", "fig-memory"):
        if fid in figs:
            n = check_bands(fid, figs[fid][1], q, raw)
            if fid == "fig-memory":
                n += check_lines(fid, figs[fid][1], q, raw)
            count(fid, n)
    # GPU x time heatmaps: each cell the mean of the rank's samples in its bin; throttle marks
    # the OR of the non-idle throttle reasons in the bin
    for fid in ("fig-power-heatmap", "fig-clock-heatmap", "fig-temp-heatmap"):
        if fid not in figs:
            continue
        body = figs[fid][1]
        (grid, _), = groups(body, "time-grid")
        metric, t0, bw, nb = (grid["data-metric"], int(grid["data-t0-ns"]),
                              int(grid["data-bin-ns"]), int(grid["data-bins"]))
        n, seen, nodes = 0, [], []
        for g, inner in groups(body, "hrow"):
            rk = int(g["data-rank"])
            seen.append(rk)
            nodes.append(int(g["data-node"]))
            acc = {}
            for t, v in raw(rk, metric):
                k = (t - t0) // bw
                check(0 <= k < nb, f"{fid}: sample at {t} outside the bins")
                a = acc.setdefault(k, [0.0, 0])
                a[0] += v
                a[1] += 1
            thr = {}
            for t, v in raw(rk, "throttle_reasons"):
                k = (t - t0) // bw
                thr[k] = thr.get(k, 0) | (int(v) & ~1)
            cells = {int(r["data-bin"]): float(r["data-value"]) for r in tags(inner, "rect")
                     if "data-value" in r}
            check(set(cells) == set(acc), f"{fid} rank {rk}: bins drawn != bins with samples")
            for k, v in cells.items():
                check(k in acc and close(v, acc[k][0] / acc[k][1]), f"{fid} rank {rk} bin {k}")
            flags = {int(r["data-bin"]): int(r["data-mask"]) for r in tags(inner, "rect")
                     if r.get("class") == "flag"}
            check(flags == {k: m for k, m in thr.items() if m},
                  f"{fid} rank {rk}: throttle marks differ from throttle_reasons")
            n += len(cells) + len(flags)
            count("throttle-marks", len(flags))
        want = [r for (r,) in q("SELECT DISTINCT rank FROM telemetry WHERE metric = ?", metric)]
        check(sorted(seen) == sorted(want), f"{fid}: rows {sorted(seen)} != ranks {want}")
        key = [(nd if nd >= 0 else 1 << 62) for nd in nodes]
        check(key == sorted(key), f"{fid}: rows not grouped by node")
        marks = [int(m["data-x"]) for m in tags(body, "line") if "data-iteration" in m
                 and m["data-iteration"] != "end"]
        starts = [s for (s,) in q("SELECT start_ns FROM temporal_breakdown WHERE iteration IS NOT "
                                  "NULL AND rank = (SELECT MIN(rank) FROM temporal_breakdown) "
                                  "ORDER BY start_ns")]
        check(marks == starts, f"{fid}: iteration boundaries {marks} != {starts}")
        count(fid, n)
    # power bursts: each panel one power_energy column, per rank and iteration (whole window)
    if "fig-power-burst" in figs:
        n = 0
        cols = set()
        for p, inner in panels(figs["fig-power-burst"][1]):
            col = p["data-col"]
            cols.add(col)
            want = {(r, i): v for r, i, v in q(f"SELECT rank, iteration, {col} FROM power_energy "
                                               "WHERE phase IS NULL AND iteration IS NOT NULL")
                    if v is not None}
            got = {(int(r["data-rank"]), int(r["data-iteration"])): float(r["data-value"])
                   for r in tags(inner, "rect") if "data-rank" in r and r["data-value"]}
            check(got == want, f"fig-power-burst {col} differs from power_energy")
            n += len(got)
        check(cols == {"peak_power_w", "mean_power_w", "peak_to_mean", "max_dp_dt_w_per_s"},
              f"fig-power-burst panels {cols}")
        count("fig-power-burst", n)
    # links: byte rates of the cumulative counters; bus bandwidth per type against size
    if "fig-links" in figs:
        n = 0
        for p, inner in panels(figs["fig-links"][1]):
            if p.get("data-kind") == "rate":
                n += check_lines("fig-links", inner, q, lambda r, m: rates(raw(r, m)))
                n += check_bands("fig-links", inner, q, lambda r, m: rates(raw(r, m)))
            if p.get("data-kind") == "busbw":
                for line in tags(inner, "polyline"):
                    if "data-type" not in line:
                        continue
                    want = sorted((s, b) for s, b in q(
                        "SELECT size_bytes, busbw_mean_gbs FROM collective_summary WHERE type = ? "
                        "AND size_bytes > 0 AND busbw_mean_gbs IS NOT NULL", line["data-type"]))
                    xs = [float(x) for x in line["data-x"].split(",")]
                    ys = [float(y) for y in line["data-y"].split(",")]
                    check(list(zip(xs, ys)) == [(float(s), b) for s, b in want],
                          f"fig-links busbw {line['data-type']}")
                    n += len(xs)
        count("fig-links", n)


# A result column's name (docs/schema.md: its unit in its name), which a legend must not show.
RAW_COLUMN = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_(?:ns|us|ms|j|w|s|share|bytes|gbs|"
                        r"tflops|tbs|mhz|points|ratio)\b")
# The unit of the values the marks of a figure carry (data-value), where the figure has one.
VALUE_UNIT = {f: "ns" for f in (
    "fig-e2e", "fig-rank-e2e", "fig-split", "fig-idle", "fig-idle-streams", "fig-findings",
    "fig-waterfall-phase", "fig-waterfall-op", "fig-coll-wait", "fig-straggler-lead",
    "fig-compare-split", "fig-compare-diff", "fig-sweep-iteration", "fig-sweep-time-per-token",
    "fig-launch", "fig-coverage")}
VALUE_UNIT.update({"fig-energy": "j", "fig-sweep-energy-per-token": "j"})
# displayed = value / factor, by (the values' unit, the axis's unit)
FACTOR = {("ns", "ms"): 1e6, ("ns", "µs"): 1e3, ("ns", "s"): 1e9, ("j", "J"): 1,
          ("j", "mJ"): 1e-3, ("j", "kJ"): 1e3}


def presentation(figs, page):
    """What the figures show besides their values (issue 33's misleading figures), as a list of
    failures: legends name series in words, not result columns; no number prints as -0.000 or
    +0.000; each mark's tooltip number is its value in the unit its axis (or colour scale) names;
    a rank x iteration or window heatmap's colour scale starts at an anchor (0, or 1 for a
    ratio to the mean), not at the data's least value."""
    bad = []
    for fid, (_, body) in figs.items():
        for _, inner in groups(body, "legend"):
            for t in re.findall(r">([^<>]+)<", inner):
                if RAW_COLUMN.search(html.unescape(t)):
                    bad.append(f"{fid}: legend shows a column name: {t!r}")
        unit = VALUE_UNIT.get(fid)
        if unit:
            texts = [html.unescape(t) for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", body)]
            shown = next((m.group(1) for t in texts
                          for m in [re.search(r"\((ms|µs|s|mJ|J|kJ)\b", t)] if m), None)
            factor = FACTOR.get((unit, shown))
            if factor is None:
                bad.append(f"{fid}: no axis or scale in a unit of {unit} ({shown})")
            else:
                n = 0
                for a, tip in re.findall(r'<rect\b([^>]*\bdata-value="[^"]+"[^>]*)><title>'
                                         r'([^<]*)</title>', body):
                    v = float(attrs(a)["data-value"]) / factor
                    t = html.unescape(tip).rsplit(": ", 1)[-1]
                    if not math.isclose(float(t), v, rel_tol=6e-3, abs_tol=1e-12):
                        bad.append(f"{fid}: {tip!r} is not {v} {shown} (data-value / {factor})")
                    n += 1
                count(fid + " (unit)", n)
        for g, inner in groups(body, "colour-scale"):
            lo = float(g["data-lo"])
            cells = [float(r["data-value"]) for r in tags(body, "rect")
                     if r.get("data-value") not in (None, "")]
            if lo not in (0.0, 1.0) or (cells and lo > min(cells) + 1e-9):
                bad.append(f"{fid}: colour scale from {lo}, not anchored (cells from "
                           f"{min(cells) if cells else None})")
            count(fid + " (scale)")
    text = re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)
    for t in re.findall(r">([^<>]+)<", text):
        for m in re.finditer(r"(?<![\w.])[-+−]0(?:\.0+)?(?![\d.])", html.unescape(t)):
            bad.append(f"a number that rounds to zero printed signed: {t.strip()[:80]!r}")
    return bad


def opt(v):
    return float(v) if v != "" else None


def work_figures(figs, q):
    """fig-top-kernels, fig-roofline, fig-kernel-violins, fig-counters against their tables."""
    # top kernels and operations: one row per top_kernels row, its values exactly
    if "fig-top-kernels" in figs:
        want = {(lv, n): (c, t, s, tf, tb) for lv, n, c, t, s, tf, tb in
                q("SELECT level, name, count, total_ns, share, achieved_tflops, achieved_tbs "
                  "FROM top_kernels")}
        got = {}
        for r in tags(figs["fig-top-kernels"][1], "tr"):
            if "data-level" in r:
                got[(r["data-level"], r["data-name"])] = (
                    int(r["data-count"]), int(r["data-total-ns"]), float(r["data-share"]),
                    opt(r["data-tflops"]), opt(r["data-tbs"]))
        check(got == want, "fig-top-kernels differs from top_kernels")
        count("fig-top-kernels", len(got))
    # roofline: each point a shape class's intensity, rate and time; ceilings the device's peaks
    if "fig-roofline" in figs:
        body = figs["fig-roofline"][1]
        rows = q("SELECT shape_class, intensity_flop_per_byte, achieved_tflops, time_ns, "
                 "peak_tflops, peak_tbs FROM roofline WHERE intensity_flop_per_byte IS NOT NULL "
                 "AND achieved_tflops > 0 ORDER BY rowid")[:80]
        want = {sc: (i, t, ns) for sc, i, t, ns, _, _ in rows}
        got = {p["data-shape-class"]: (float(p["data-intensity"]), float(p["data-tflops"]),
                                       int(p["data-time-ns"]))
               for p in tags(body, "circle") if "data-shape-class" in p}
        check(got == want, "fig-roofline points differ from roofline")
        peaks = {p for *_, p, _ in rows if p is not None}
        bws = {b for *_, b in rows if b is not None}
        ceil = [g for g, _ in groups(body, "ceiling")]
        check({float(g["data-peak-tflops"]) for g in ceil} == peaks,
              f"fig-roofline ceilings {ceil} != peaks {peaks}")
        check(all(float(g["data-bandwidth-tbs"]) in bws for g in ceil), "roofline bandwidth")
        count("fig-roofline", len(got) + len(ceil))
    # violins: per class and rank group, the bins and their counts summed over the group's ranks
    if "fig-kernel-violins" in figs:
        heavy = [c for c, in q("SELECT kernel_class FROM kernel_durations GROUP BY kernel_class "
                               "ORDER BY SUM(total_ns) DESC, kernel_class LIMIT 4")]
        n, classes = 0, set()
        for g, _ in groups(figs["fig-kernel-violins"][1], "violin"):
            classes.add(g["data-class"])
            want = q("SELECT bin, SUM(kernels) FROM kernel_durations WHERE kernel_class = ? AND "
                     "rank BETWEEN ? AND ? GROUP BY bin ORDER BY bin", g["data-class"],
                     int(g["data-first-rank"]), int(g["data-last-rank"]))
            bins = [int(b) for b in g["data-bins"].split()]
            counts = [float(c) for c in g["data-counts"].split()]
            check(list(zip(bins, counts)) == [(b, float(c)) for b, c in want],
                  f"violin {g['data-class']} {g['data-first-rank']}: bins differ")
            check(float(g["data-kernels"]) == sum(c for _, c in want), "violin kernels")
            n += 1
        check(classes == set(heavy), f"violin classes {classes} != heaviest {heavy}")
        ranks = q("SELECT COUNT(DISTINCT rank) FROM kernel_durations")[0][0]
        per = -(-ranks // 8)  # above 8 ranks a violin pools `per` consecutive ranks
        check(n == len(heavy) * -(-ranks // per), f"violins: {n} drawn for {ranks} ranks")
        count("fig-kernel-violins", n)
    # counters per operation: present exactly when counter_operations has rows
    has = q("SELECT COUNT(*) FROM counter_operations")[0][0] > 0
    check(("fig-counters" in figs) == has, "fig-counters present without counters, or missing")
    if "fig-counters" in figs:
        want = q("SELECT COALESCE(operation, ''), kernels, dur_ns, matrix_busy_share, "
                 "matrix_tflops, vector_tflops, counter_clock_mhz FROM counter_operations "
                 "ORDER BY rowid")[:25]
        got = [(r["data-operation"], int(r["data-kernels"]), int(r["data-dur-ns"]),
                opt(r["data-matrix-busy-share"]), opt(r["data-matrix-tflops"]),
                opt(r["data-vector-tflops"]), opt(r["data-counter-clock-mhz"]))
               for r in tags(figs["fig-counters"][1], "tr") if "data-kernels" in r]
        check(got == [tuple(w) for w in want], "fig-counters differs from counter_operations")
        count("fig-counters", len(got))


if __name__ == "__main__":
    sys.exit(main())
