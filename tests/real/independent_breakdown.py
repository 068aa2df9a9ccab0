#!/usr/bin/env python3
"""Independent per-rank temporal breakdown and comm/compute overlap of real Kineto traces.

Standard library only (json, gzip, decimal, re, sys, os, time).  Written from the
definitions below and the peer tools' documented behaviour, WITHOUT reading or
porting chopper's C++ (src/), so that the C++ tests can pin chopper's numbers
against an independent computation.

Usage:
    python3 tests/real/independent_breakdown.py [TRACE ...]

With no argument it runs over every *.json.gz below /work/shared/traces/kineto
(recursively, so the two-rank directory hta_sampled_2rank/ is included).  The
traces are only read, never copied.  Output: one JSON object per line on
stdout, one per trace file (a file without GPU activities gets a short line
with "note" saying it was skipped).  The run time goes to stderr.

One trace file = one rank.  All numbers are over ALL GPU activities of the
file, regardless of device or stream.

Definitions (the source of each is given in the comment where it is computed)
------------------------------------------------------------------------------
Time: ts/dur are microseconds with up to 3 decimals (integers = whole us).  They
are parsed as decimal.Decimal (never float) and converted exactly to integer
nanoseconds: quantize to 0.001 (ROUND_HALF_EVEN), times 1000.  An activity is
the half-open interval [start, start + dur).  baseTimeNanoseconds is ignored:
every reported number is a difference of timestamps, so the base cancels.

GPU activity: ph "X" with cat in {kernel, Kernel, gpu_memcpy, Memcpy,
gpu_memset, Memset} (the 2021 format uses the capitalised names).  Events with
a missing/non-numeric ts or dur, or dur < 0, are skipped and counted.

Two classifications:
  chopper convention (TraceLens gpu_timeline, peers_hta_tracelens.md section 3):
    comm    = kernel whose name starts with nccl/rccl/msccl, or whose lower-cased
              first 160 chars contain a collective token (allreduce, all_gather, ...)
    memcpy  = cat gpu_memcpy/Memcpy;  memset = cat gpu_memset/Memset
    compute = every other kernel;  "computation" = compute + memset (as TraceLens)
  HTA-pure (HTA get_kernel_type, peers_hta_tracelens.md section 2), by NAME only:
    COMM = starts with nccl/hip/hccl or contains ncclKernel
    MEMORY = starts with (hip)?Memcpy / (hip)?Memset or dma
    COMP = everything else

Output keys (all ns unless the name says _us):
  total_ns            max(end) - min(start)                          [HTA, TraceLens]
  compute_ns          |U(compute + memset)|                          [TraceLens]
  idle_ns             total - |U(all)|                               [HTA, TraceLens]
  non_compute_ns      total - compute - idle                         [HTA's formula]
  exposed_comm_ns     |U(comm) minus U(compute+memset)|              [TraceLens]
  exposed_memcpy_ns   |U(memcpy) minus U(compute+memset) minus U(comm)| [TraceLens]
                      (compute + exposed_comm + exposed_memcpy + idle == total, asserted)
  comm_ns, overlapped_comm_ns, overlap_share = |U(comm) & U(compute+memset)| / |U(comm)|
  hta_compute_ns, hta_non_compute_ns, hta_comm_ns, hta_overlap_num_ns, hta_overlap
                      the same with HTA's name classes            [HTA]
  hta_us_*            HTA-pure numbers after HTA's us rounding: start rounded UP,
                      end rounded DOWN to whole us; empty/negative events dropped [HTA]
  idle_host_wait_ns, idle_kernel_wait_ns, idle_other_ns
                      HTA's idle_time_breakdown at ns precision, summed over streams;
                      idle_by_stream has it per (device, stream)        [HTA]
"""

import decimal
import gzip
import json
import os
import re
import sys
import time

DEFAULT_ROOT = "/work/shared/traces/kineto"

# --- event categories -------------------------------------------------------
# GPU activity categories: Kineto >= 2022 uses kernel/gpu_memcpy/gpu_memset,
# the 2021 format Kernel/Memcpy/Memset (peers_hta_tracelens.md section 4).
# cuda_sync, gpu_user_annotation etc. are deliberately NOT GPU activities.
KERNEL_CATS = {"kernel", "Kernel"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
GPU_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
# Host-side launch calls, joined to GPU activities on args.correlation
# (HTA joins on the correlation id; 2021 format writes cat "Runtime").
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}

# --- chopper convention: communication kernels -----------------------------
# TraceLens treats kernels matching nccl/rccl (and custom collective patterns
# such as vLLM's cross_device_reduce) as communication (peers doc section 3);
# the chopper convention widens that to msccl and to collective names.
COMM_PREFIXES = ("nccl", "rccl", "msccl")
COMM_TOKENS = ("allreduce", "all_reduce", "allgather", "all_gather",
               "reducescatter", "reduce_scatter", "alltoall", "all_to_all",
               "cross_device_reduce")
COMM_NAME_CHARS = 160  # only the first 160 characters are searched

# --- HTA-pure classification (peers doc section 2, HTA get_kernel_type) -----
# Tested in this order: COMM first, then MEMORY, else COMP.  Case-sensitive.
HTA_COMM_RE = re.compile(r"^(nccl|hip|hccl)|ncclKernel")
HTA_MEMORY_RE = re.compile(r"^((hip)?(Memcpy|Memset)|dma)")

# HTA idle_time_breakdown: a gap shorter than consecutive_kernel_delay (30,
# compared against us timestamps in HTA, i.e. 30 us) counts as "kernel wait".
CONSECUTIVE_KERNEL_DELAY_NS = 30_000

NS_QUANTUM = decimal.Decimal("0.001")


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
def load_trace(path):
    """Read a (possibly gzip-compressed) JSON trace; floats stay Decimal."""
    with open(path, "rb") as raw:
        magic = raw.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return json.load(f, parse_float=decimal.Decimal)


def to_ns(x):
    """Exact integer ns from a us value (int, Decimal or numeric string); None if invalid.

    Decimal is rounded to 3 fraction digits with ROUND_HALF_EVEN, then * 1000.
    """
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, int):
        return x * 1000
    try:
        d = x if isinstance(x, decimal.Decimal) else decimal.Decimal(str(x))
        if not d.is_finite():
            return None
        return int(d.quantize(NS_QUANTUM, rounding=decimal.ROUND_HALF_EVEN) * 1000)
    except (decimal.InvalidOperation, ValueError):
        return None


# ---------------------------------------------------------------------------
# Interval arithmetic on half-open integer intervals [s, e)
# ---------------------------------------------------------------------------
def union(intervals):
    """Sorted, disjoint list of [s, e) covering the given intervals (empty ones dropped)."""
    out = []
    for s, e in sorted(iv for iv in intervals if iv[1] > iv[0]):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return out


def length(u):
    """Total length of a disjoint interval list."""
    return sum(e - s for s, e in u)


def intersect(a, b):
    """Intersection of two disjoint sorted interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if s < e:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    """a minus b, for disjoint sorted interval lists."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append([cur, b[k][0]])
            cur = max(cur, b[k][1])
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append([cur, e])
    return out


# ---------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------
def chopper_class(cat, name):
    """chopper convention: 'comm', 'memcpy', 'memset' or 'compute' (see docstring)."""
    if cat in MEMCPY_CATS:
        return "memcpy"
    if cat in MEMSET_CATS:
        return "memset"
    if name.startswith(COMM_PREFIXES):
        return "comm"
    low = name[:COMM_NAME_CHARS].lower()
    if any(tok in low for tok in COMM_TOKENS):
        return "comm"
    return "compute"


def hta_class(name):
    """HTA-pure kernel type by name: 'COMM', 'MEMORY' or 'COMP' (HTA get_kernel_type)."""
    if HTA_COMM_RE.search(name):
        return "COMM"
    if HTA_MEMORY_RE.search(name):
        return "MEMORY"
    return "COMP"


# ---------------------------------------------------------------------------
# Per-rank analysis
# ---------------------------------------------------------------------------
def collect(events):
    """GPU activities as dicts, the skipped count, and correlation -> runtime start."""
    acts, skipped = [], 0
    runtime_start = {}          # correlation id -> start ns of first runtime call (file order)
    duplicate_corr = 0          # runtime calls whose correlation was already seen
    for idx, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = ev.get("cat")
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        if cat in RUNTIME_CATS:
            corr = args.get("correlation")
            ts = to_ns(ev.get("ts"))
            if corr is not None and ts is not None:
                if corr in runtime_start:
                    duplicate_corr += 1
                else:
                    runtime_start[corr] = ts
            continue
        if cat not in GPU_CATS:
            continue
        ts, dur = to_ns(ev.get("ts")), to_ns(ev.get("dur"))
        if ts is None or dur is None or dur < 0:
            skipped += 1
            continue
        name = ev.get("name") if isinstance(ev.get("name"), str) else ""
        # Stream key for the idle breakdown: (args.device, args.stream); if
        # absent, fall back to the event's (pid, tid) lane.
        if "stream" in args:
            skey = (args.get("device"), args.get("stream"))
        else:
            skey = (ev.get("pid"), ev.get("tid"))
        acts.append({
            "idx": idx, "start": ts, "end": ts + dur, "cat": cat, "name": name,
            "cls": chopper_class(cat, name), "hta": hta_class(name),
            "corr": args.get("correlation"), "stream": skey,
        })
    return acts, skipped, runtime_start, duplicate_corr


def idle_breakdown(acts, runtime_start):
    """HTA idle_time_breakdown at ns precision, per (device, stream) and summed.

    Per stream, activities sorted by start (ties: file order); for each one after
    the first, gap = start - END of the previous one in that order.  gap <= 0 is
    no idle (HTA itself would sum negative gaps too; they are counted apart
    here as negative_gaps / negative_gap_ns).  Cause of a positive gap (HTA):
      host_wait   - the launching runtime call (same correlation) started after
                    the previous activity's end: the CPU was late;
      kernel_wait - otherwise, gap < 30 us (consecutive_kernel_delay);
      other       - otherwise.
    An activity with no matching runtime call cannot be host_wait.
    """
    by_stream = {}
    for a in acts:
        by_stream.setdefault(a["stream"], []).append(a)
    totals = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    diag = {"negative_gaps": 0, "negative_gap_ns": 0, "zero_gaps": 0,
            "positive_gaps_without_runtime": 0}
    rows = []
    for key in sorted(by_stream, key=lambda k: tuple(str(x) for x in k)):
        lst = sorted(by_stream[key], key=lambda a: (a["start"], a["idx"]))
        row = {"device": key[0], "stream": key[1], "activities": len(lst),
               "host_wait_ns": 0, "kernel_wait_ns": 0, "other_ns": 0,
               "negative_gaps": 0, "negative_gap_ns": 0}
        for prev, cur in zip(lst, lst[1:]):
            gap = cur["start"] - prev["end"]
            if gap < 0:
                row["negative_gaps"] += 1
                row["negative_gap_ns"] += gap
                continue
            if gap == 0:
                diag["zero_gaps"] += 1
                continue
            rt = runtime_start.get(cur["corr"]) if cur["corr"] is not None else None
            if rt is None:
                diag["positive_gaps_without_runtime"] += 1
            if rt is not None and rt > prev["end"]:
                cause = "host_wait"
            elif gap < CONSECUTIVE_KERNEL_DELAY_NS:
                cause = "kernel_wait"
            else:
                cause = "other"
            row[cause + "_ns"] += gap
            totals[cause] += gap
        diag["negative_gaps"] += row["negative_gaps"]
        diag["negative_gap_ns"] += row["negative_gap_ns"]
        rows.append(row)
    return totals, rows, diag


def hta_breakdown(items):
    """HTA temporal breakdown + overlap on (start, end, hta_class) triples (HTA, section 2).

    kernel_time = last end - first start; idle = kernel_time - |U(all)|;
    compute = |U(COMP)|; non_compute = kernel_time - compute - idle;
    overlap = |U(COMP) & U(COMM)| / |U(COMM)|.
    """
    total = max(e for _, e, _ in items) - min(s for s, _, _ in items)
    busy = length(union([s, e] for s, e, _ in items))
    comp = union([s, e] for s, e, c in items if c == "COMP")
    comm = union([s, e] for s, e, c in items if c == "COMM")
    idle = total - busy
    compute = length(comp)
    return {"total": total, "idle": idle, "compute": compute,
            "non_compute": total - compute - idle,
            "comm": length(comm), "overlap_num": length(intersect(comp, comm))}


def analyze(acts, runtime_start):
    """All per-rank numbers for one file's GPU activities."""
    r = {}
    starts = [a["start"] for a in acts]
    ends = [a["end"] for a in acts]
    # total: end of the last activity minus start of the first (HTA kernel_time,
    # TraceLens gpu_timeline "total").  Zero-length activities count here.
    total = max(ends) - min(starts)

    def u(pred):
        return union([a["start"], a["end"]] for a in acts if pred(a))

    # --- chopper convention (TraceLens gpu_timeline) ---
    all_u = u(lambda a: True)
    computation = u(lambda a: a["cls"] in ("compute", "memset"))   # TraceLens counts memsets as computation
    comm = u(lambda a: a["cls"] == "comm")
    memcpy = u(lambda a: a["cls"] == "memcpy")
    busy = length(all_u)
    compute_ns = length(computation)
    idle_ns = total - busy
    exposed_comm = subtract(comm, computation)
    exposed_memcpy = subtract(subtract(memcpy, computation), comm)
    exposed_comm_ns, exposed_memcpy_ns = length(exposed_comm), length(exposed_memcpy)
    # TraceLens asserts this identity; it holds because the four parts partition [first start, last end).
    assert compute_ns + exposed_comm_ns + exposed_memcpy_ns + idle_ns == total, "breakdown identity"
    comm_ns = length(comm)
    overlapped = length(intersect(comm, computation))
    assert overlapped + exposed_comm_ns == comm_ns
    r.update(total_ns=total, compute_ns=compute_ns,
             non_compute_ns=total - compute_ns - idle_ns, idle_ns=idle_ns,
             exposed_comm_ns=exposed_comm_ns, exposed_memcpy_ns=exposed_memcpy_ns,
             comm_ns=comm_ns, overlapped_comm_ns=overlapped,
             overlap_share=(overlapped / comm_ns) if comm_ns else None)

    # --- HTA-pure, exact ns ---
    h = hta_breakdown([(a["start"], a["end"], a["hta"]) for a in acts])
    assert h["total"] == total and h["idle"] == idle_ns
    r.update(hta_compute_ns=h["compute"], hta_non_compute_ns=h["non_compute"],
             hta_comm_ns=h["comm"], hta_overlap_num_ns=h["overlap_num"],
             hta_overlap=(h["overlap_num"] / h["comm"]) if h["comm"] else None)

    # --- HTA-pure after HTA's us rounding (start ceil, end floor; HTA parser) ---
    rounded = []
    for a in acts:
        s_us = -((-a["start"]) // 1000)   # ceil to whole us
        e_us = a["end"] // 1000           # floor to whole us
        if e_us > s_us:                   # empty or negative after rounding: dropped
            rounded.append((s_us, e_us, a["hta"]))
    r["hta_us_dropped"] = len(acts) - len(rounded)
    if rounded:
        hu = hta_breakdown(rounded)
        r.update(hta_us_total_us=hu["total"], hta_us_idle_us=hu["idle"],
                 hta_us_compute_us=hu["compute"], hta_us_non_compute_us=hu["non_compute"],
                 hta_us_comm_us=hu["comm"], hta_us_overlap_num_us=hu["overlap_num"])
    else:
        r.update(hta_us_total_us=None, hta_us_idle_us=None, hta_us_compute_us=None,
                 hta_us_non_compute_us=None, hta_us_comm_us=None, hta_us_overlap_num_us=None)

    # --- idle split by cause (HTA idle_time_breakdown) ---
    totals, rows, diag = idle_breakdown(acts, runtime_start)
    r.update(idle_host_wait_ns=totals["host_wait"], idle_kernel_wait_ns=totals["kernel_wait"],
             idle_other_ns=totals["other"])

    # --- counts and diagnostics ---
    count = lambda pred: sum(1 for a in acts if pred(a))
    r.update(comm_kernels=count(lambda a: a["cls"] == "comm"),
             memsets=count(lambda a: a["cls"] == "memset"),
             memcpys=count(lambda a: a["cls"] == "memcpy"),
             compute_kernels=count(lambda a: a["cls"] == "compute"),
             hta_comm_kernels=count(lambda a: a["hta"] == "COMM"),
             hta_memory_kernels=count(lambda a: a["hta"] == "MEMORY"),
             hta_comp_kernels=count(lambda a: a["hta"] == "COMP"),
             zero_dur_activities=count(lambda a: a["end"] == a["start"]))
    pairs = {}
    for a in acts:
        k = a["cls"] + "/" + a["hta"]
        pairs[k] = pairs.get(k, 0) + 1
    r["class_pairs"] = dict(sorted(pairs.items()))
    r["streams"] = len(rows)
    r["activities_without_runtime"] = count(
        lambda a: a["corr"] is None or a["corr"] not in runtime_start)
    r.update(diag)
    r["idle_by_stream"] = rows
    return r


def rank_index(path, doc):
    """0 for a single-file trace; distributedInfo.rank for a file in a multi-rank run directory.

    A run directory = a directory other than the corpus root holding >= 2 traces.
    """
    d = os.path.dirname(os.path.abspath(path))
    if d == os.path.abspath(DEFAULT_ROOT):
        return 0
    siblings = [n for n in os.listdir(d) if n.endswith((".json.gz", ".json"))]
    if len(siblings) < 2:
        return 0
    info = doc.get("distributedInfo") if isinstance(doc, dict) else None
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"]
    return 0


def display_name(path):
    """Path relative to the corpus root when inside it, else as given."""
    ap, root = os.path.abspath(path), os.path.abspath(DEFAULT_ROOT)
    if ap.startswith(root + os.sep):
        return os.path.relpath(ap, root)
    return path


def process(path):
    doc = load_trace(path)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    acts, skipped, runtime_start, dup = collect(events if isinstance(events, list) else [])
    name = display_name(path)
    if not acts:
        return {"file": name, "gpu_activities": 0, "skipped": skipped,
                "note": "no GPU activities; file skipped"}
    out = {"file": name, "rank_index": rank_index(path, doc),
           "gpu_activities": len(acts), "skipped": skipped,
           "runtime_calls_duplicate_correlation": dup}
    out.update(analyze(acts, runtime_start))
    return out


def default_files():
    found = []
    for dirpath, _, names in os.walk(DEFAULT_ROOT):
        found += [os.path.join(dirpath, n) for n in names if n.endswith(".json.gz")]
    return sorted(found, key=lambda p: os.path.relpath(p, DEFAULT_ROOT))


def main(argv):
    t0 = time.perf_counter()
    files = argv[1:] or default_files()
    if not files:
        print("no traces found under " + DEFAULT_ROOT, file=sys.stderr)
        return 1
    for p in files:
        print(json.dumps(process(p)), flush=True)
    print("independent_breakdown: %d file(s) in %.2f s" % (len(files), time.perf_counter() - t0),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
