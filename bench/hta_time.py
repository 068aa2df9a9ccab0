#!/usr/bin/env python3
"""Time Holistic Trace Analysis (HTA) on one Kineto trace, in this process. Run by hand, by
bench/run_e2e_bench.sh (never a test); HTA itself is not part of chopper.

    PYTHONPATH=/path/to/hta python3 bench/hta_time.py TRACE_DIR FILE [-o OUT.json] [--core-only]

TRACE_DIR holds FILE (a .json or .json.gz) and nothing else; FILE is read as rank 0.
Times, each as wall and CPU seconds (user + system, this process and any children it waited for):
  import    importing hta.trace_analysis (pandas, numpy, plotly, ...)
  load      TraceAnalysis(trace_files={0: FILE}, trace_dir=TRACE_DIR): parse + build the frames
  temporal  get_temporal_breakdown(visualize=False)
  overlap   get_comm_comp_overlap(visualize=False)
and then, unless --core-only, the fuller set, in this order:
  idle      get_idle_time_breakdown(ranks=[0], visualize=False)
  kernels   get_gpu_kernel_breakdown(visualize=False)
  queue     get_queue_length_summary(ranks=[0])
  launch    get_cuda_kernel_launch_stats(ranks=[0], visualize=False)
An analysis that raises is reported under "failed" (exception type and message) and the others
still run. "core_wall_s"/"core_cpu_s" are load + temporal + overlap (null if one failed);
"full_wall_s"/"full_cpu_s" add the fuller set (null if one of it failed or it was not run).
Writes one JSON object to OUT.json, or to stdout (HTA logs to stdout as well) when -o is absent.
"""

import argparse
import json
import os
import resource
import sys
import time
import traceback


def cpu_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir")
    ap.add_argument("file")
    ap.add_argument("-o", "--out")
    ap.add_argument("--core-only", action="store_true")
    args = ap.parse_args()

    result = {
        "trace": args.file,
        "bytes": os.path.getsize(os.path.join(args.trace_dir, args.file)),
        "phases": {},
        "failed": {},
    }

    def timed(name, fn):
        w0, c0 = time.perf_counter(), cpu_s()
        try:
            value = fn()
        except Exception as e:  # any analysis may reject a trace: report it, go on
            where = traceback.extract_tb(e.__traceback__)[-1]
            at = f" at {os.path.basename(where.filename)}:{where.lineno}"
            result["failed"][name] = f"{type(e).__name__}{at}: {e}"[:300]
            return None
        result["phases"][name] = {
            "wall_s": time.perf_counter() - w0,
            "cpu_s": cpu_s() - c0,
        }
        return value

    mod = timed("import", lambda: __import__("hta.trace_analysis", fromlist=["TraceAnalysis"]))
    ta = None
    if mod is not None:
        ta = timed(
            "load",
            lambda: mod.TraceAnalysis(trace_files={0: args.file}, trace_dir=args.trace_dir),
        )

    core = ["load", "temporal", "overlap"]
    fuller = ["idle", "kernels", "queue", "launch"]
    if ta is not None:
        timed("temporal", lambda: ta.get_temporal_breakdown(visualize=False))
        timed("overlap", lambda: ta.get_comm_comp_overlap(visualize=False))
        if not args.core_only:
            timed("idle", lambda: ta.get_idle_time_breakdown(ranks=[0], visualize=False))
            timed("kernels", lambda: ta.get_gpu_kernel_breakdown(visualize=False))
            timed("queue", lambda: ta.get_queue_length_summary(ranks=[0]))
            timed("launch", lambda: ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=False))
    else:
        why = "not run: import failed" if mod is None else "not run: load failed"
        for name in core + ([] if args.core_only else fuller):
            result["failed"].setdefault(name, why)

    def total(names, key):
        if any(n not in result["phases"] for n in names):
            return None
        return sum(result["phases"][n][key] for n in names)

    full = core + fuller
    result["core_wall_s"] = total(core, "wall_s")
    result["core_cpu_s"] = total(core, "cpu_s")
    result["full_wall_s"] = None if args.core_only else total(full, "wall_s")
    result["full_cpu_s"] = None if args.core_only else total(full, "cpu_s")
    # ru_maxrss is in KiB on Linux
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 0 if "load" in result["phases"] else 1


if __name__ == "__main__":
    sys.exit(main())
