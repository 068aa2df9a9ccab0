#!/usr/bin/env python3
"""chopper.analyze from Python against the command line, and the DataFrames' memory.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py RUN [--chopper BIN]
           [--repeat N] [--threads J]

For RUN (trace files or a directory), N times each (median reported), alternating:
  cli       chopper analyze RUN -o TMP -j J (the SQLite database and CSV files written)
  cli-nocsv chopper analyze RUN -o TMP -j J --no-csv
  python    chopper.analyze(RUN, threads=J): the tables in memory (no file written), in a fresh
            python process each time, timed inside it around the call
  python+df the same, then every table made a DataFrame (Analysis.tables[name] for all)
(pandas imported before the clock starts, as in a notebook)
and the ratio python / cli (exit status 1 above 1.1, the target). Then, in one process: the traces' bytes, the gpu_activities
DataFrame's memory (pandas memory_usage(deep=True), text columns included), all DataFrames', and
the process's peak RSS against the CLI's (GNU time's maximum resident set).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, os, resource, sys, time
import pandas  # imported first, as in a notebook: its import (~0.35 s) is not chopper's time
import chopper
run, threads, frames = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
t0 = time.perf_counter()
a = chopper.analyze(run, threads=threads)
t1 = time.perf_counter()
out = {"analyze_s": t1 - t0}
if frames:
    for n in a.tables:
        a.tables[n]
    out["frames_s"] = time.perf_counter() - t1
    mem = {n: int(a.tables[n].memory_usage(deep=True).sum()) for n in a.tables}
    out["gpu_activities_bytes"] = mem["gpu_activities"]
    # What the frame holds: its arrays (8 bytes a cell) and each distinct str once (equal texts
    # of a column share one object; memory_usage(deep=True) counts them once per row).
    g = a.tables["gpu_activities"]
    seen = {}
    for c in g.columns:
        if g[c].dtype == object:
            for v in g[c].values:
                seen.setdefault(id(v), sys.getsizeof(v))
    out["gpu_activities_held_bytes"] = int(g.memory_usage(deep=False).sum()) + sum(seen.values())
    out["gpu_activities_rows"] = len(a.tables["gpu_activities"])
    out["all_frames_bytes"] = sum(mem.values())
out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""


def run_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if f.startswith("rank") and os.path.isfile(os.path.join(path, f)))


def cli_once(chopper, run, threads, csv):
    with tempfile.TemporaryDirectory() as d:
        cmd = ["/usr/bin/time", "-f", "%M", chopper, "analyze", run, "-o", d, "-j", str(threads)]
        if not csv:
            cmd.append("--no-csv")
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        if p.returncode not in (0, 1):
            sys.exit(f"chopper analyze failed: {p.stderr}")
        rss = int(p.stderr.strip().splitlines()[-1]) * 1024
        return secs, rss


def python_once(run, threads, frames):
    p = subprocess.run([sys.executable, "-c", CHILD, run, str(threads), "1" if frames else "0"],
                       capture_output=True, text=True, env=os.environ)
    if p.returncode != 0:
        sys.exit(f"python analyze failed: {p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--chopper", default="build/src/chopper")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    times = {"cli": [], "cli-nocsv": [], "python": [], "python+df": []}
    rss = {"cli": 0, "python": 0}
    last = {}
    for _ in range(a.repeat):
        s, r = cli_once(a.chopper, a.run, a.threads, True)
        times["cli"].append(s)
        rss["cli"] = max(rss["cli"], r)
        times["cli-nocsv"].append(cli_once(a.chopper, a.run, a.threads, False)[0])
        times["python"].append(python_once(a.run, a.threads, False)["analyze_s"])
        last = python_once(a.run, a.threads, True)
        times["python+df"].append(last["analyze_s"] + last["frames_s"])
        rss["python"] = max(rss["python"], last["peak_rss_bytes"])
    med = {k: statistics.median(v) for k, v in times.items()}
    size = run_bytes(a.run)
    print(f"run {a.run}: {size / 1e6:.1f} MB of traces, {last['gpu_activities_rows']} GPU "
          f"activities; -j {a.threads}; median of {a.repeat}")
    for k, v in med.items():
        print(f"  {k:10s} {v:7.3f} s  ({v / med['cli']:.2f} x cli, {v / med['cli-nocsv']:.2f} x "
              f"cli --no-csv)")
    held = last["gpu_activities_held_bytes"]
    print(f"  gpu_activities DataFrame: {held / 1e6:.1f} MB held ({held / size:.2f} x the traces' "
          f"bytes: arrays + each distinct str once); memory_usage(deep=True) "
          f"{last['gpu_activities_bytes'] / 1e6:.1f} MB ({last['gpu_activities_bytes'] / size:.2f}"
          f" x); all DataFrames (deep) {last['all_frames_bytes'] / 1e6:.1f} MB")
    print(f"  peak RSS: python (analyze + every DataFrame) {rss['python'] / 1e6:.0f} MB, "
          f"cli {rss['cli'] / 1e6:.0f} MB")
    # Target (issue 31): analyze from Python within 10% of the CLI's time.
    ratio = med["python"] / med["cli"]
    print(f"target python <= 1.1 x cli: {ratio:.2f} x, {'met' if ratio <= 1.1 else 'MISSED'}")
    sys.exit(0 if ratio <= 1.1 else 1)


if __name__ == "__main__":
    main()
