#!/usr/bin/env python3
"""Independent reference for tests/real/test_real_hierarchy.cpp (iteration and phase labels).

Standard library only (gzip, json, re, decimal, bisect, os, sys).  Written as its own reading of
the traces, NOT as a port of chopper's labeller (src/chopper/hierarchy/label.cpp): no taxonomy,
no fwdbwd flows, no External-id linking, no fallbacks; only the ProfilerStep spans and, for a few
activities picked by hand, the names of the host ranges around the launching runtime call.

Usage:
    python3 tests/real/independent_labels.py [TRACE_DIR]      (default /work/shared/traces/kineto)
    python3 tests/real/independent_labels.py [TRACE_DIR] --chain FILE CORRELATION
        prints one activity's launch, step, host chain and reading (for picking by hand)
Runs in about 5 s; reads the traces in place, writes nothing.

What it prints, per trace that has ProfilerStep#N ranges and GPU activities:

(a) In-iteration GPU time.  GPU activities = ph "X" events with cat kernel, gpu_memcpy,
    gpu_memset (2021 traces: Kernel, Memcpy, Memset).  An activity's launching runtime call is the
    ph "X" event with cat cuda_runtime or cuda_driver (2021: Runtime) with the same
    args.correlation.  Steps = host ranges (cat cpu_op, user_annotation; 2021: Operator) named
    exactly ProfilerStep#N; their GPU-side copies (gpu_user_annotation) are not steps.  An
    activity is in iteration N when its runtime call starts inside step N: start <= ts < end.
    Printed: how many activities are in an iteration and the exact sum of their dur in ns.
    Times are exact integers: the JSON number's decimal text (Decimal) times 1000; a time with
    more than 3 fraction digits of a microsecond is an error.  baseTimeNanoseconds shifts every
    ts alike and does not matter here.

(a') In-step GPU time (RealStepCoverage in test_real_hierarchy.cpp): an activity is in-step when
    it is in an iteration as in (a), or when its GPU interval [ts, ts + dur] lies within the
    GPU-side span of a step on its device (args.device, else pid): the earliest ts to the latest
    end of the activities of that device launched in the step.  The GPU-side copies of the steps
    (gpu_user_annotation) are not used: ROCm writes them as short markers.  Printed: the in-step
    ns, of it the ns not launched in a step, and the ns before the first step's GPU span.

(b) Hand-checked labels of the activities in PICKS (correlation ids, chosen by looking at the
    traces to cover a forward, a backward and an optimizer kernel, a collective and a copy).
    The host chain of an activity = the host ranges (cpu_op, user_annotation, python_function;
    2021: Operator) on the runtime call's pid/tid whose span contains the call, outermost first.
    Its iteration is the step containing the launch; its phase is the first of these readings
    that applies, printed as the explanation:
      1. a chain range `autograd::engine::evaluate_function: ...`, an autograd node's range
         (`...Backward`, `...Backward0`), or `torch.distributed.ddp.reducer::...`  -> backward
      2. a chain range `Optimizer.step#...` or `Optimizer.zero_grad#...`          -> optimizer
      3. a chain range `## forward ##`, `DistributedDataParallel.forward` or
         `nn.Module: ...`                                                         -> forward
      4. the outermost op under the step is `aten::to` (the input batch upload)   -> other
      5. launched on the step's own thread, before the step's first backward node starts, by an
         op with a Sequence number (autograd recorded it in the forward pass)     -> forward
      6. the trace has no backward node and no Optimizer range at all (inference) -> forward
    Expected operation, only where unambiguous:
      - an NCCL/RCCL kernel outside the optimizer: the collective of the `nccl:<collective>`
        range around the launch (nccl:all_reduce -> all_reduce);
      - under Optimizer.step#...: `opt_step` (chopper's documented name for torch.optim's step);
      - a backward kernel: the forward op, i.e. the op with the backward node's Sequence number
        that is not itself a backward range, walked up to its outermost cpu_op (below the step,
        `## ... ##` and DDP ranges); a forward kernel: its own outermost cpu_op.  Printed only when
        that op is an aten:: op (a TorchScript `forward` op, say, is left out as ambiguous).
    Expected layer (Qwen traces): N of the `nn.Module: Qwen2DecoderLayer_N` range around the
    launch.  For the Qwen traces it also prints the share of in-iteration GPU time launched
    inside such a range.
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
OP_CATS = {"cpu_op", "Operator"}
HOST_CATS = {"cpu_op", "user_annotation", "Operator", "python_function"}
STEP_CATS = {"cpu_op", "user_annotation", "Operator"}
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
BWD_NODE_RE = re.compile(r"^autograd::engine::evaluate_function: |Backward\d*$")
DECODER_RE = re.compile(r"^nn\.Module: Qwen2DecoderLayer_(\d+)$")

# Activities checked by hand: correlation id and what it was picked as.
PICKS = {
    "hta_a100_ddp_nccl_rank0.json.gz": [
        (35969, "forward conv kernel"), (41131, "backward conv kernel (dgrad)"),
        (49810, "optimizer kernel"), (40984, "DDP all-reduce kernel"),
        (34915, "DDP buffer broadcast kernel"), (48982, "DDP bucket-to-grad memcpy")],
    "hta_mi250_minitoy_rocm6.2.json.gz": [
        (121, "forward GEMM kernel"), (132, "backward GEMM kernel"), (136, "optimizer kernel"),
        (117, "input batch memcpy")],
    "hta_triton_culaunch.json.gz": [(35, "the only kernel (Triton)")],
    "hta_v100_float_epoch_ts.json.gz": [
        (166156, "forward conv kernel"), (171742, "backward conv kernel"),
        (180454, "optimizer kernel"), (179634, "DDP bucket-to-grad memcpy"),
        (170153, "forward memset")],
    "kineto_v100_resnet50_2021_legacy.json.gz": [
        (57380, "forward conv kernel"), (61397, "backward conv kernel"),
        (67441, "optimizer kernel"), (57355, "input batch memcpy")],
    "tracelens_h100_qwen0.5b.json.gz": [
        (690754, "flash-attention kernel, layer 11"), (690942, "GEMM kernel, layer 11"),
        (683055, "memset, layer 0"), (682810, "DtoH memcpy (is_nonzero)")],
    "tracelens_mi300x_qwen0.5b.json.gz": [
        (49514, "GEMM kernel, layer 0"), (49490, "DtoD memcpy (is_nonzero)")],
    "tracelens_mi300x_resnet_ddp_rank0.json.gz": [
        (6290, "forward conv kernel"), (6623, "backward conv kernel"),
        (7244, "optimizer kernel"), (7178, "DDP all-reduce kernel"),
        (6221, "DDP buffer broadcast kernel"), (7181, "DDP bucket-to-grad memcpy")],
    "hta_sampled_2rank/rank-0.json.gz": [
        (7069205, "forward kernel"), (7118172, "backward GEMM kernel"),
        (7171899, "optimizer GEMM kernel"), (7170295, "DDP all-reduce kernel"),
        (7172110, "optimizer all-gather kernel"), (7171936, "optimizer memcpy")],
    "hta_sampled_2rank/rank-1.json.gz": [
        (6907251, "forward embedding kernel"), (6949721, "backward GEMM kernel"),
        (7009092, "optimizer GEMM kernel"), (6949779, "DDP all-reduce kernel"),
        (6907311, "forward all-to-all kernel"), (7009129, "optimizer memcpy")],
}


def ns(v):
    """Exact integer ns of a µs value written in JSON (int or Decimal)."""
    d = decimal.Decimal(v) * 1000
    if d != d.to_integral_value():
        raise ValueError(f"time {v} has more than 3 fraction digits")
    return int(d)


def norm_id(v):
    # The 2021 traces write host tids as "25738" on some events and 25738 on others.
    return int(v) if isinstance(v, str) and v.isdigit() else v


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
            rec = {"name": e.get("name", ""), "cat": cat, "ts": ns(e.get("ts", 0)),
                   "dur": ns(e.get("dur", 0)), "args": args,
                   "pid": norm_id(e.get("pid")), "tid": norm_id(e.get("tid"))}
            rec["end"] = rec["ts"] + rec["dur"]
            if cat in GPU_CATS:
                self.gpu.append(rec)
            elif cat in RUNTIME_CATS:
                self.runtime_by_corr.setdefault(args.get("correlation"), rec)
            if cat in HOST_CATS:
                self.host.append(rec)
            m = STEP_RE.match(rec["name"])
            if cat in STEP_CATS and m:
                self.steps.append((rec["ts"], rec["end"], int(m.group(1)), rec))
        self.steps.sort(key=lambda s: s[0])
        self.step_starts = [s[0] for s in self.steps]
        self.gpu_by_corr = {}
        for g in self.gpu:
            self.gpu_by_corr.setdefault(g["args"].get("correlation"), g)
        self.bwd_nodes = sorted(h["ts"] for h in self.host if BWD_NODE_RE.search(h["name"]))
        self.training = bool(self.bwd_nodes) or any(
            h["name"].startswith("Optimizer.") for h in self.host)

    def launch(self, g):
        return self.runtime_by_corr.get(g["args"].get("correlation"))

    def step_at(self, ts):
        i = bisect.bisect_right(self.step_starts, ts) - 1
        for k in range(i, max(i - 4, -1), -1):  # steps do not overlap; look back a little anyway
            if self.steps[k][0] <= ts < self.steps[k][1]:
                return self.steps[k]
        return None

    def ancestors(self, r):
        """Host ranges on r's pid/tid that contain r, outermost first."""
        out = [h for h in self.host if h["pid"] == r["pid"] and h["tid"] == r["tid"]
               and h["ts"] <= r["ts"] and r["end"] <= h["end"] and h is not r]
        out.sort(key=lambda h: (h["ts"], -h["dur"]))
        return out


def in_iteration_totals(t):
    count = total = 0
    for g in t.gpu:
        r = t.launch(g)
        if r is not None and t.step_at(r["ts"]) is not None:
            count += 1
            total += g["dur"]
    return count, total


def in_step_totals(t):
    """(in-step ns, of it not launched in a step, ns before the first step's GPU span)."""
    def device(g):
        return g["args"].get("device", g["pid"])
    spans = {}
    launched = set()
    for i, g in enumerate(t.gpu):
        r = t.launch(g)
        step = t.step_at(r["ts"]) if r is not None else None
        if step is None:
            continue
        launched.add(i)
        k = (step[2], device(g))
        lo, hi = spans.get(k, (g["ts"], g["end"]))
        spans[k] = (min(lo, g["ts"]), max(hi, g["end"]))
    first = min((lo for lo, _ in spans.values()), default=None)
    in_step = unlaunched = before = 0
    for i, g in enumerate(t.gpu):
        inside = any(d == device(g) and lo <= g["ts"] and g["end"] <= hi
                     for (_, d), (lo, hi) in spans.items())
        if i in launched or inside:
            in_step += g["dur"]
            unlaunched += 0 if i in launched else g["dur"]
        elif first is not None and g["ts"] < first:
            before += g["dur"]
    return in_step, unlaunched, before


def structural(name):
    return (STEP_RE.match(name) or (name.startswith("## ") and name.endswith(" ##"))
            or name.startswith("DistributedDataParallel"))


def outermost_op(chain):
    for h in chain:
        if h["cat"] in OP_CATS and not structural(h["name"]):
            return h
    return None


def read_phase(t, r, chain):
    names = [h["name"] for h in chain]
    for n in names:
        if BWD_NODE_RE.search(n) or n.startswith("torch.distributed.ddp.reducer::"):
            return "backward", f"under `{n}`"
    for n in names:
        if n.startswith("Optimizer.step#") or n.startswith("Optimizer.zero_grad#"):
            return "optimizer", f"under `{n}`"
    for n in names:
        if n in ("## forward ##", "DistributedDataParallel.forward") or n.startswith("nn.Module: "):
            return "forward", f"under `{n}`"
    top = outermost_op(chain)
    if top is not None and top["name"] == "aten::to":
        return "other", "`aten::to` is the outermost op under the step: the input batch upload"
    step = t.step_at(r["ts"])
    if step is not None and (step[3]["pid"], step[3]["tid"]) == (r["pid"], r["tid"]):
        i = bisect.bisect_left(t.bwd_nodes, step[0])
        first_bwd = t.bwd_nodes[i] if i < len(t.bwd_nodes) and t.bwd_nodes[i] < step[1] else None
        seq = [h["name"] for h in chain if h["args"].get("Sequence number") is not None]
        if first_bwd is not None and r["ts"] < first_bwd and seq:
            return "forward", (f"on the step's thread before its first backward node, by "
                               f"`{seq[0]}` (has a Sequence number)")
    if not t.training:
        return "forward", "inference trace: no backward node and no Optimizer range anywhere"
    return None, "no reading applies"


def expected_operation(t, g, phase, chain):
    names = [h["name"] for h in chain]
    if "nccl" in g["name"].lower():
        if any(n.startswith("Optimizer.") for n in names):
            return None  # a collective inside the optimizer: opt_step or the collective
        for n in reversed(names):
            if n.startswith("nccl:"):
                return n[len("nccl:"):]
        return None
    if any(n.startswith("Optimizer.step#") for n in names):
        return "opt_step"
    if phase == "backward":
        node = next((h for h in reversed(chain) if BWD_NODE_RE.search(h["name"])
                     and h["args"].get("Sequence number") is not None), None)
        if node is None:
            return None
        fwd = [h for h in t.host if h["args"].get("Sequence number") ==
               node["args"]["Sequence number"] and not BWD_NODE_RE.search(h["name"])
               and h["cat"] in OP_CATS]
        if not fwd:
            return None
        f = min(fwd, key=lambda h: (h["ts"], -h["dur"]))
        top = outermost_op(t.ancestors(f) + [f])
    else:
        top = outermost_op(chain)
    return top["name"] if top is not None and top["name"].startswith("aten::") else None


def decoder_layer(chain):
    for h in reversed(chain):
        m = DECODER_RE.match(h["name"])
        if m:
            return int(m.group(1))
    return None


def decoder_layer_share(t):
    layers = {}
    for h in t.host:
        if DECODER_RE.match(h["name"]):
            layers.setdefault((h["pid"], h["tid"]), []).append((h["ts"], h["end"]))
    inside = total = 0
    for g in t.gpu:
        r = t.launch(g)
        if r is None or t.step_at(r["ts"]) is None:
            continue
        total += g["dur"]
        if any(s <= r["ts"] and r["end"] <= e for s, e in layers.get((r["pid"], r["tid"]), [])):
            inside += g["dur"]
    return inside, total


def show_chain(chain):
    return " > ".join(h["name"][:60] for h in chain if h["cat"] != "python_function"
                      or h["name"].startswith("nn.Module: "))


def report_pick(t, corr, what):
    g = t.gpu_by_corr[corr]
    r = t.launch(g)
    chain = t.ancestors(r)
    step = t.step_at(r["ts"])
    phase, why = read_phase(t, r, chain)
    op = expected_operation(t, g, phase, chain)
    layer = decoder_layer(chain)
    print(f"  corr {corr} ({what}): iteration {step[2] if step else None} phase {phase}"
          f" operation {op or '-'}" + (f" layer {layer}" if layer is not None else ""))
    print(f"      why: {why}")
    print(f"      {g['cat']} {g['name'][:90]}")
    print(f"      chain: {show_chain(chain)}")


def main(argv):
    args = [a for a in argv[1:]]
    root = "/work/shared/traces/kineto"
    if args and not args[0].startswith("--"):
        root = args.pop(0)
    if args and args[0] == "--chain":
        t = Trace(os.path.join(root, args[1]))
        report_pick(t, int(args[2]), "asked")
        return
    for rel, picks in PICKS.items():
        t = Trace(os.path.join(root, rel))
        count, total = in_iteration_totals(t)
        print(f"== {rel}: steps {[s[2] for s in t.steps]}")
        print(f"  in iterations: {count} activities, {total} ns "
              f"(all: {len(t.gpu)} activities, {sum(g['dur'] for g in t.gpu)} ns)")
        in_step, unlaunched, before = in_step_totals(t)
        print(f"  in steps: {in_step} ns ({unlaunched} ns of it not launched in a step); "
              f"before the first step's GPU span: {before} ns")
        if "qwen" in rel:
            inside, tot = decoder_layer_share(t)
            print(f"  launched inside nn.Module: Qwen2DecoderLayer_N: {inside} of {tot} ns "
                  f"({inside / tot:.4f})")
        for corr, what in picks:
            report_pick(t, corr, what)


if __name__ == "__main__":
    main(sys.argv)
