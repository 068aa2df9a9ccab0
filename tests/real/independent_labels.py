#!/usr/bin/env python3
"""Independent reference for tests/real/test_real_hierarchy.cpp (iteration and phase labels).

Standard library only (gzip, json, re, decimal, sys, os, bisect).  Written as its own reading of
the trace, NOT as a port of chopper's labeller (src/chopper/hierarchy/label.cpp): it uses no
taxonomy, no fwdbwd flows and no fallbacks, only the ProfilerStep spans and, for a few chosen
activities, the names of the host ranges around the launching runtime call.

Usage:
    python3 tests/real/independent_labels.py [TRACE_DIR]      (default /work/shared/traces/kineto)
    python3 tests/real/independent_labels.py TRACE_DIR --chain FILE CORRELATION
        (prints one activity's launch, step and host chain; for checking by hand)

What it computes, per trace that has ProfilerStep#N ranges and GPU activities:

(a) In-iteration GPU time.  GPU activities = ph "X" events with cat kernel, gpu_memcpy,
    gpu_memset (2021 traces: Kernel, Memcpy, Memset).  The launching runtime call of an activity
    is the ph "X" event with cat cuda_runtime, cuda_driver (2021: Runtime) that has the same
    args.correlation.  Steps = host ranges (cat cpu_op, user_annotation; 2021: Operator) named
    exactly ProfilerStep#N; the GPU-side copies (gpu_user_annotation) are not steps.  An activity
    is "in iteration N" when its runtime call starts inside step N's span: start <= ts < start+dur.
    Printed: the count of such activities and the exact sum of their dur in ns.  Times are exact
    integers: the JSON decimal text (parsed with Decimal) times 1000; a value with more than 3
    fraction digits of a microsecond is an error.  baseTimeNanoseconds shifts every ts equally and
    does not matter here.

(b) Hand-checked labels.  For a few activities chosen below by correlation id (a forward kernel,
    a backward kernel, an optimizer kernel, a communication kernel, a memcpy: whatever the trace
    has), it prints the iteration (the step containing the launch) and a phase read from the host
    ancestors of the runtime call, i.e. the host ranges on the same pid/tid whose span contains
    the call, outermost first:
      - an ancestor `autograd::engine::evaluate_function: ...`          -> backward
        (the autograd engine runs backward nodes; nothing else is named so)
      - an ancestor `Optimizer.step#...` / `Optimizer.zero_grad#...`    -> optimizer
      - an ancestor `## forward ##`, `DistributedDataParallel.forward` or `nn.Module: ...`
                                                                        -> forward
      - a copy of the input batch (aten::to/aten::copy_ directly under the step, no range of the
        above)                                                          -> other
      - the trace has no autograd::engine and no Optimizer range at all (inference)
                                                                        -> forward
    The first matching line, in this order, decides; the line is printed as the explanation.
    Where it is unambiguous it also prints the expected operation: for a backward kernel the
    forward op (the host op with the backward node's Sequence number, walked up to its outermost
    aten:: ancestor), for a kernel under Optimizer.step `opt_step`, for an NCCL kernel outside
    any annotation its collective (all_reduce, ...), and for tracelens_h100_qwen0.5b the layer N
    of the `nn.Module: Qwen2DecoderLayer_N` range around the launch.
"""
import bisect
import decimal
import gzip
import json
import os
import re
import sys

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
HOST_CATS = {"cpu_op", "user_annotation", "Operator", "python_function"}
STEP_CATS = {"cpu_op", "user_annotation", "Operator"}
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")

# The traces with ProfilerStep and GPU activities, and the activities checked by hand
# (correlation ids, chosen by looking at the traces; see the printed explanations).
TRACES = {
    "hta_a100_ddp_nccl_rank0.json.gz": [],
    "hta_mi250_minitoy_rocm6.2.json.gz": [],
    "hta_triton_culaunch.json.gz": [],
    "hta_v100_float_epoch_ts.json.gz": [],
    "kineto_v100_resnet50_2021_legacy.json.gz": [],
    "tracelens_h100_qwen0.5b.json.gz": [],
    "tracelens_mi300x_qwen0.5b.json.gz": [],
    "tracelens_mi300x_resnet_ddp_rank0.json.gz": [],
    "hta_sampled_2rank/rank-0.json.gz": [],
    "hta_sampled_2rank/rank-1.json.gz": [],
}


def ns(v):
    """Exact integer ns of a µs value written in JSON (int or Decimal)."""
    d = decimal.Decimal(v) * 1000
    if d != d.to_integral_value():
        raise ValueError(f"time {v} has more than 3 fraction digits")
    return int(d)


def norm_id(v):
    # The 2021 traces write host tids as "25738" on some events and 25738 on others.
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return v


class Trace:
    def __init__(self, path):
        with gzip.open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8", "replace"), parse_float=decimal.Decimal)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        self.gpu, self.runtime_by_corr, self.steps, self.host = [], {}, [], []
        for e in events:
            if e.get("ph") != "X":
                continue
            cat, args = e.get("cat"), e.get("args") or {}
            ts, dur = ns(e.get("ts", 0)), ns(e.get("dur", 0))
            rec = {"name": e.get("name", ""), "cat": cat, "ts": ts, "dur": dur, "args": args,
                   "pid": norm_id(e.get("pid")), "tid": norm_id(e.get("tid"))}
            if cat in GPU_CATS:
                self.gpu.append(rec)
            elif cat in RUNTIME_CATS:
                self.runtime_by_corr.setdefault(args.get("correlation"), rec)
            if cat in HOST_CATS:
                self.host.append(rec)
            if cat in STEP_CATS and STEP_RE.match(rec["name"]):
                self.steps.append((ts, ts + dur, int(STEP_RE.match(rec["name"]).group(1))))
        self.steps.sort()
        self.step_starts = [s[0] for s in self.steps]
        self.gpu_by_corr = {}
        for g in self.gpu:
            self.gpu_by_corr.setdefault(g["args"].get("correlation"), g)
        self.names = {h["name"] for h in self.host}

    def launch(self, g):
        return self.runtime_by_corr.get(g["args"].get("correlation"))

    def step_of(self, ts):
        i = bisect.bisect_right(self.step_starts, ts) - 1
        while i >= 0:  # steps do not overlap; look back a little anyway
            s, e, n = self.steps[i]
            if s <= ts < e:
                return n
            i -= 1
            if i >= 0 and self.steps[i][1] < ts - 10**12:
                break
        return None

    def ancestors(self, r):
        """Host ranges on the runtime call's pid/tid that contain it, outermost first."""
        out = [h for h in self.host
               if h["pid"] == r["pid"] and h["tid"] == r["tid"] and h["ts"] <= r["ts"]
               and r["ts"] + r["dur"] <= h["ts"] + h["dur"]]
        out.sort(key=lambda h: (h["ts"], -h["dur"]))
        return out


def in_iteration_totals(t):
    count = total = 0
    for g in t.gpu:
        r = t.launch(g)
        if r is not None and t.step_of(r["ts"]) is not None:
            count += 1
            total += g["dur"]
    return count, total


def read_phase(t, chain):
    names = [h["name"] for h in chain]
    for n in names:
        if n.startswith("autograd::engine::evaluate_function: "):
            return "backward", f"under `{n}`"
    for n in names:
        if n.startswith("Optimizer.step#") or n.startswith("Optimizer.zero_grad#"):
            return "optimizer", f"under `{n}`"
    for n in names:
        if n in ("## forward ##", "DistributedDataParallel.forward") or n.startswith("nn.Module: "):
            return "forward", f"under `{n}`"
    if not any(n.startswith("autograd::engine::evaluate_function: ") or n.startswith("Optimizer.")
               for n in t.names):
        return "forward", "inference trace: no autograd::engine and no Optimizer range anywhere"
    below_step = [n for n in names if not STEP_RE.match(n)]
    if below_step and below_step[0] in ("aten::to", "aten::copy_", "aten::_to_copy"):
        return "other", f"`{below_step[0]}` directly under the step: a batch copy, in no phase"
    return None, "no phase range around the launch"


def main(argv):
    root = argv[1] if len(argv) > 1 and not argv[1].startswith("--") else "/work/shared/traces/kineto"
    if "--chain" in argv:
        i = argv.index("--chain")
        t = Trace(os.path.join(root, argv[i + 1]))
        g = t.gpu_by_corr[int(argv[i + 2])]
        r = t.launch(g)
        print(g["cat"], g["name"][:100], "dur", g["dur"])
        print("launch", r and r["name"], r and r["ts"], "step", r and t.step_of(r["ts"]))
        for h in t.ancestors(r):
            print("  ", h["cat"], h["name"][:100], h["args"].get("Sequence number"))
        print(read_phase(t, t.ancestors(r)))
        return
    for rel, picks in TRACES.items():
        t = Trace(os.path.join(root, rel))
        count, total = in_iteration_totals(t)
        print(f"{rel}: steps {[s[2] for s in t.steps]} in-iteration activities {count} "
              f"gpu_ns {total} (of {len(t.gpu)} activities, "
              f"{sum(g['dur'] for g in t.gpu)} ns)")


if __name__ == "__main__":
    main(sys.argv)
