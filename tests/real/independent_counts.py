#!/usr/bin/env python3
"""Independent ground truth for the real Kineto (PyTorch profiler) JSON traces.

Standard library only (gzip, json, re, collections, decimal, codecs, glob, os,
sys, heapq, math).  This script is deliberately written WITHOUT looking at chopper's C++
code so that its numbers can serve as an independent reference.

Usage:
    python3 independent_counts.py [TRACE_DIR]      (default /work/shared/traces/kineto)

It reads every TRACE_DIR/*.json.gz and TRACE_DIR/hta_sampled_2rank/*.json.gz
(read-only; nothing is copied) and prints ONE JSON list to stdout, one object
per file, sorted by the file name relative to TRACE_DIR.  Output is
deterministic (dict keys sorted, all lists sorted or in file order).

Parsing
-------
* Raw bytes are gunzipped, decoded as UTF-8 with a counting error handler
  (each invalid byte sequence -> U+FFFD, counted in "oddities.invalid_utf8"),
  then parsed with json.loads(parse_float=decimal.Decimal), i.e. the same
  parser as json.load.  Floats therefore keep their exact decimal text.
* Timestamps: integer ns = round_half_even(Decimal(ts) * 1000).  All
  containment / equality comparisons below use these exact integers.
* pid/tid NORMALISATION: a pid/tid that is a string of decimal digits (e.g.
  the 2021 legacy files write host tids as "25738" on X events but 25738 on
  flow events) is converted to int before comparing.  Other strings ("stream
  7", "Spans", "") are kept as strings.  Results WITHOUT normalisation are
  also reported ("link_alternatives.raw_pid_tid_*") to show the impact.

link_rate definition (the definition the C++ implements)
--------------------------------------------------------
Let ext(e) = e.args["External id"] if present, else e.args["external id"];
an External id equal to 0 is treated as ABSENT (Kineto writes 0 when there is
no enclosing op, e.g. a bare cudaDeviceSynchronize; see
"external_id_zero" in the output for the counts that justified this).

* GPU activities = ph "X" events with cat in
  {kernel, gpu_memcpy, gpu_memset, Kernel, Memcpy, Memset}.
* host ops       = ph "X" events with cat in {cpu_op, user_annotation, Operator}
  (NOT python_function, NOT gpu_user_annotation).
* runtime calls  = ph "X" events with cat in {cuda_runtime, cuda_driver, Runtime}.

Step 1 - find the runtime call R of GPU activity G:
  1. If G.args["correlation"] is present and equals the args["correlation"]
     of some runtime call, R = that runtime call (first in file order if
     several runtime calls share a correlation).
  2. Otherwise, via a flow: consider flow events (ph "s"/"f") with cat in
     {ac2g, async, async_cpu_to_gpu}.  Take the first (file order) "f" whose
     (pid, tid, ts_ns) equals G's (pid, tid, ts_ns); its (cat, id) selects the
     first "s" with the same cat and id; R = the runtime call on the s's
     (pid, tid) with R.ts <= s.ts <= R.ts + R.dur (if several: smallest dur,
     then first in file order).
  3. Otherwise G is "unlinked_no_runtime".

Step 2 - find the host op H of G (given R):
  (a) ext(R) is present and equals ext(H) of one or more host ops ->
      choose among them those on R's (pid, tid) that contain R
      (H.ts <= R.ts and R.ts+R.dur <= H.ts+H.dur); if any, the one with the
      smallest dur (tie: first in file order); if none contains R, the first
      candidate in file order.
  (b) else ext(G) is present and matches host op(s): same tie-break as (a).
  (c) else the innermost host op (smallest dur, tie: first in file order) on
      R's (pid, tid) with H.ts <= R.ts and R.ts+R.dur <= H.ts+H.dur.
  otherwise G is "unlinked_no_host_op".

link_rate = (linked GPU activities) / (GPU activities), null if there are none.

Caveat found while running this on the real corpus: in some 2023 traces
(hta_a100_alexnet_cuda_sync, hta_a100_cupti_counters, hta_sampled_2rank/*)
every runtime call's "External id" equals its own "correlation", i.e. it is
NOT a host-op id.  Rule (a) then matches host ops only by numeric
coincidence (17 wrong links in hta_a100_alexnet_cuda_sync; see
"links.diagnostics").  The variant "link_alternatives.a_b_require_enclosure"
(an id match counts only when the host op is on the runtime call's thread
and encloses it; otherwise fall through to (b)/(c)) avoids that.
"""

import codecs
import collections
import decimal
import glob
import gzip
import heapq
import json
import math
import os
import re
import sys

D = decimal.Decimal

# ---------------------------------------------------------------------------
# Category sets (exact spellings as they appear in files)
# ---------------------------------------------------------------------------
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
HOST_OP_CATS = ("cpu_op", "user_annotation", "Operator")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
LINK_FLOW_CATS = ("ac2g", "async", "async_cpu_to_gpu")
KERNEL_CATS = ("kernel", "Kernel")
MEMCPY_CATS = ("gpu_memcpy", "Memcpy")
# Categories considered "usual" (formats.md section 2 + legacy + flows + Trace)
USUAL_CATS = {
    "cpu_op", "user_annotation", "gpu_user_annotation", "gpu_memcpy",
    "gpu_memset", "kernel", "cuda_runtime", "cuda_driver",
    "cpu_instant_event", "python_function", "overhead", "cuda_sync",
    "cuda_event", "cuda_profiler_range", "collective_comm",
    "hardware_counters", "Trace", "ac2g", "fwdbwd", "async",
    "async_cpu_to_gpu", "Operator", "Runtime", "Kernel", "Memcpy", "Memset",
}

INT64_MAX = 2 ** 63 - 1
INT64_MIN = -(2 ** 63)
DOUBLE_EXACT = 2 ** 53          # integers above this are not exact in a double

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
NCCL_FAMILY_RE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([^_(]+)")

# ---------------------------------------------------------------------------
# Parsing helpers
# ---------------------------------------------------------------------------
_utf8_errors = [0]


def _count_utf8_errors(exc):
    """codecs error handler: count each invalid sequence, replace by U+FFFD."""
    _utf8_errors[0] += 1
    return ("\ufffd", exc.end)


codecs.register_error("count_replace", _count_utf8_errors)


class ParseStats:
    """Counters filled by the json hooks while parsing one file."""

    def __init__(self):
        self.float_exponent = 0        # numbers written like 1e-05
        self.constants = collections.Counter()  # NaN / Infinity literals
        self.duplicate_keys = collections.Counter()


def load_trace(path):
    """Return (document, parse stats, utf8 error count, uncompressed size)."""
    with gzip.open(path, "rb") as fh:
        raw = fh.read()
    _utf8_errors[0] = 0
    text = raw.decode("utf-8", errors="count_replace")
    utf8_errors = _utf8_errors[0]
    st = ParseStats()

    def parse_float(s):
        if "e" in s or "E" in s:
            st.float_exponent += 1
        return D(s)

    def parse_constant(s):
        st.constants[s] += 1
        return D(s)

    def pairs_hook(pairs):
        d = {}
        for k, v in pairs:
            if k in d:
                st.duplicate_keys[k] += 1
            d[k] = v
        return d

    doc = json.loads(text, parse_float=parse_float,
                     parse_constant=parse_constant, object_pairs_hook=pairs_hook)
    return doc, st, utf8_errors, len(raw)


def is_num(v):
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, D)


def to_ns(v):
    """Microseconds (int / Decimal / numeric string) -> integer ns, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, D):
        if not v.is_finite():
            return None
        return int((v * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    if isinstance(v, str):
        try:
            d = D(v)
        except decimal.InvalidOperation:
            return None
        return to_ns(d) if d.is_finite() else None
    return None


def frac_digits(v):
    """Number of fraction digits as written in the JSON text (Decimal only)."""
    if isinstance(v, D) and v.is_finite():
        e = v.as_tuple().exponent
        return -e if e < 0 else 0
    return 0


_DIGITS = re.compile(r"^-?\d+$")


def norm_id(v, normalise=True):
    """pid/tid key.  Digit strings -> int when normalise is True."""
    if normalise and isinstance(v, str) and _DIGITS.match(v):
        return int(v)
    if isinstance(v, D) and v == v.to_integral_value():
        return int(v)
    return v


def hashable(v):
    """Make a JSON value usable as a dict key (lists/dicts -> canonical text)."""
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, default=str)
    return v


def ext_id(args, zero_absent=True):
    """External id of an event (args['External id'] or args['external id'])."""
    if not isinstance(args, dict):
        return None
    v = args.get("External id", args.get("external id"))
    if v is None:
        return None
    if zero_absent and is_num(v) and v == 0:
        return None
    return hashable(v)


def jsonable(v):
    """Convert Decimal (and nested) values to JSON-serialisable values."""
    if isinstance(v, D):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return v


def walk_big_ints(obj, path, big63, big53):
    """Record JSON key paths holding integers outside int64 / above 2^53."""
    stack = [(obj, path)]
    while stack:
        o, p = stack.pop()
        if isinstance(o, dict):
            for k, v in o.items():
                stack.append((v, p + "." + k if p else k))
        elif isinstance(o, list):
            for v in o:
                stack.append((v, p + "[]"))
        elif isinstance(o, int) and not isinstance(o, bool):
            if o > INT64_MAX or o < INT64_MIN:
                big63[p] += 1
            elif abs(o) > DOUBLE_EXACT:
                big53[p] += 1


def sorted_counter(c):
    return {str(k): c[k] for k in sorted(c, key=lambda x: str(x))}


# ---------------------------------------------------------------------------
# Linking
# ---------------------------------------------------------------------------
class Ev:
    """Light record of one X / flow event with exact-ns times."""
    __slots__ = ("idx", "e", "cat", "pid", "tid", "ts", "dur", "rawpid", "rawtid")

    def __init__(self, idx, e, normalise):
        self.idx = idx
        self.e = e
        self.cat = e.get("cat")
        self.rawpid = e.get("pid")
        self.rawtid = e.get("tid")
        self.pid = hashable(norm_id(self.rawpid, normalise))
        self.tid = hashable(norm_id(self.rawtid, normalise))
        self.ts = to_ns(e.get("ts"))
        d = to_ns(e.get("dur"))
        self.dur = d if d is not None else 0

    @property
    def end(self):
        return self.ts + self.dur


def contains(h, r):
    """host op h contains runtime call r (closed intervals, exact ns)."""
    return h.ts <= r.ts and r.ts + r.dur <= h.ts + h.dur


def compute_links(events, zero_absent=True, normalise=True, require_enclosure=False,
                  use_correlation=True):
    """Apply the link_rate definition (see module docstring).

    use_correlation=False skips step 1.1 so that the flow fallback (1.2) is
    exercised for every GPU activity (a test of that path only).
    """
    hosts, runtimes, gpus, flows = [], [], [], []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        ph, cat = e.get("ph"), e.get("cat")
        if ph == "X":
            if cat in HOST_OP_CATS or cat in RUNTIME_CATS or cat in GPU_CATS:
                ev = Ev(i, e, normalise)
                if ev.ts is None:
                    continue          # cannot place it in time; ignored
                if cat in HOST_OP_CATS:
                    hosts.append(ev)
                elif cat in RUNTIME_CATS:
                    runtimes.append(ev)
                else:
                    gpus.append(ev)
        elif ph in ("s", "f") and cat in LINK_FLOW_CATS:
            ev = Ev(i, e, normalise)
            if ev.ts is not None:
                flows.append(ev)

    # host ops by external id (file order) and by thread
    host_by_ext = collections.defaultdict(list)
    host_by_thread = collections.defaultdict(list)
    for h in hosts:
        x = ext_id(h.e.get("args"), zero_absent)
        if x is not None:
            host_by_ext[x].append(h)
        host_by_thread[(h.pid, h.tid)].append(h)
    for lst in host_by_thread.values():
        lst.sort(key=lambda h: (h.ts, h.idx))

    # runtime calls by correlation (first in file order) and by thread
    rt_by_corr = {}
    rt_corr_dups = 0
    rt_by_thread = collections.defaultdict(list)
    for r in runtimes:
        args = r.e.get("args") or {}
        if "correlation" in args:
            c = hashable(args["correlation"])
            if c in rt_by_corr:
                rt_corr_dups += 1
            else:
                rt_by_corr[c] = r
        rt_by_thread[(r.pid, r.tid)].append(r)
    for lst in rt_by_thread.values():
        lst.sort(key=lambda r: (r.ts, r.idx))

    # flows: f by (pid,tid,ts) and s by (cat,id), first in file order
    f_by_pos, s_by_id = {}, {}
    f_pos_dups = s_id_dups = 0
    for fl in flows:
        ph = fl.e.get("ph")
        if ph == "f":
            k = (fl.pid, fl.tid, fl.ts)
            if k in f_by_pos:
                f_pos_dups += 1
            else:
                f_by_pos[k] = fl
        else:
            k = (fl.cat, hashable(fl.e.get("id")))
            if k in s_by_id:
                s_id_dups += 1
            else:
                s_by_id[k] = fl

    def runtime_at(pid, tid, ts):
        """Runtime call on (pid,tid) containing ts: smallest dur, then file order."""
        best = None
        for r in rt_by_thread.get((pid, tid), ()):
            if r.ts > ts:
                break
            if ts <= r.ts + r.dur:
                if best is None or (r.dur, r.idx) < (best.dur, best.idx):
                    best = r
        return best

    def pick(cands, r):
        """Tie-break among host ops sharing an external id (rule (a)/(b))."""
        inside = [h for h in cands
                  if (h.pid, h.tid) == (r.pid, r.tid) and contains(h, r)]
        if inside:
            return min(inside, key=lambda h: (h.dur, h.idx))
        return min(cands, key=lambda h: h.idx)

    # Rule (c) for every runtime call, precomputed with a sweep per thread:
    # host ops sorted by start are pushed into a heap keyed by (dur, file
    # index) once they have started; ops that ended before the query start
    # can never contain this or any later query and are dropped.  The answer
    # is the smallest (dur, index) op in the heap whose end >= query end.
    innermost_of = {}
    for key, rts in rt_by_thread.items():
        ops = host_by_thread.get(key, [])
        heap, p = [], 0
        for r in rts:                       # sorted by (ts, idx)
            while p < len(ops) and ops[p].ts <= r.ts:
                h = ops[p]
                heapq.heappush(heap, (h.dur, h.idx, h.end, h))
                p += 1
            while heap and heap[0][2] < r.ts:
                heapq.heappop(heap)
            best = None
            r_end = r.ts + r.dur
            if heap and heap[0][2] >= r_end:
                best = heap[0][3]
            elif heap:
                for item in sorted(heap, key=lambda t: (t[0], t[1])):
                    if item[2] >= r_end:
                        best = item[3]
                        break
            innermost_of[r.idx] = best

    def innermost(r):
        """Rule (c): innermost host op on r's thread containing r."""
        return innermost_of.get(r.idx)

    paths = collections.Counter()
    rt_how = collections.Counter()
    per_cat = collections.defaultdict(collections.Counter)
    ambiguous_ext = 0
    diag = collections.Counter()
    min_rt_corr = min((c for c in rt_by_corr if is_num(c)), default=None)
    b_possible_without_runtime = 0
    for g in gpus:
        gargs = g.e.get("args") or {}
        r = None
        if use_correlation and "correlation" in gargs:
            r = rt_by_corr.get(hashable(gargs["correlation"]))
            if r is not None:
                rt_how["correlation"] += 1
        if r is None:
            f = f_by_pos.get((g.pid, g.tid, g.ts))
            if f is not None:
                s = s_by_id.get((f.cat, hashable(f.e.get("id"))))
                if s is not None:
                    r = runtime_at(s.pid, s.tid, s.ts)
                    if r is not None:
                        rt_how["flow"] += 1
        per_cat[g.cat]["total"] += 1
        if r is None:
            paths["unlinked_no_runtime"] += 1
            per_cat[g.cat]["unlinked_no_runtime"] += 1
            gx = ext_id(gargs, zero_absent)
            if gx is not None and gx in host_by_ext:
                b_possible_without_runtime += 1
            gc = gargs.get("correlation")
            if is_num(gc) and min_rt_corr is not None and gc < min_rt_corr:
                # launched before the first recorded runtime call (i.e. before
                # the profiler window opened): legitimately unlinkable
                diag["unlinked_no_runtime_corr_below_min_runtime_corr"] += 1
            continue
        h, path = None, None
        rx = ext_id(r.e.get("args"), zero_absent)
        if require_enclosure:
            # variant: an id match only counts if the matched host op is on
            # the runtime call's thread and encloses it
            def ok(x):
                return x is not None and x in host_by_ext and any(
                    (h2.pid, h2.tid) == (r.pid, r.tid) and contains(h2, r)
                    for h2 in host_by_ext[x])
        else:
            def ok(x):
                return x is not None and x in host_by_ext
        if ok(rx):
            cands = host_by_ext[rx]
            ambiguous_ext += len(cands) > 1
            h, path = pick(cands, r), "a"
        else:
            gx = ext_id(gargs, zero_absent)
            if ok(gx):
                cands = host_by_ext[gx]
                ambiguous_ext += len(cands) > 1
                h, path = pick(cands, r), "b"
            else:
                h = innermost(r)
                path = "c" if h is not None else None
        if path in ("a", "b"):
            # Sanity diagnostics (do not change the definition): does the
            # id-matched host op actually enclose the runtime call, and does
            # it agree with what rule (c) alone would give?
            if not ((h.pid, h.tid) == (r.pid, r.tid) and contains(h, r)):
                diag[path + "_host_not_enclosing_runtime"] += 1
            if innermost(r) is not h:
                diag[path + "_differs_from_rule_c"] += 1
        if h is None:
            paths["unlinked_no_host_op"] += 1
            per_cat[g.cat]["unlinked_no_host_op"] += 1
        else:
            paths[path] += 1
            per_cat[g.cat]["linked"] += 1

    n = len(gpus)
    linked = paths["a"] + paths["b"] + paths["c"]
    return {
        "gpu_activities": n,
        "linked": linked,
        "link_rate": (linked / n) if n else None,
        "paths": {k: paths[k] for k in
                  ("a", "b", "c", "unlinked_no_runtime", "unlinked_no_host_op")},
        "runtime_found_via": {k: rt_how[k] for k in ("correlation", "flow")},
        "per_cat": {k: dict(sorted(v.items())) for k, v in sorted(per_cat.items())},
        "host_ops": len(hosts),
        "runtime_calls": len(runtimes),
        "runtime_duplicate_correlations": rt_corr_dups,
        "host_ext_ids_shared_by_several_ops":
            sum(1 for v in host_by_ext.values() if len(v) > 1),
        "gpu_links_with_ambiguous_ext_id": ambiguous_ext,
        "flow_f_same_position_duplicates": f_pos_dups,
        "flow_s_same_id_duplicates": s_id_dups,
        "unlinked_no_runtime_but_own_ext_id_matches_host_op":
            b_possible_without_runtime,
        "runtime_ext_id_equals_own_correlation": sum(
            1 for r in runtimes
            if isinstance(r.e.get("args"), dict)
            and ext_id(r.e["args"], zero_absent) is not None
            and ext_id(r.e["args"], zero_absent) == hashable(r.e["args"].get("correlation"))),
        "diagnostics": {k: diag[k] for k in (
            "a_host_not_enclosing_runtime", "a_differs_from_rule_c",
            "b_host_not_enclosing_runtime", "b_differs_from_rule_c",
            "unlinked_no_runtime_corr_below_min_runtime_corr")},
    }


# ---------------------------------------------------------------------------
# Per-file analysis
# ---------------------------------------------------------------------------
def analyse(path, rel):
    doc, pst, utf8_errors, nbytes = load_trace(path)
    out = {"file": rel, "uncompressed_bytes": nbytes}

    # 1. form and top-level keys
    if isinstance(doc, dict):
        out["form"] = "object"
        out["top_keys"] = list(doc.keys())
        events = doc.get("traceEvents", [])
    else:
        out["form"] = "array"
        out["top_keys"] = None
        events = doc
    if not isinstance(events, list):
        events = []
    out["trace_events_len"] = len(events)

    x_by_cat = collections.Counter()
    by_ph = collections.Counter()
    non_object = no_ph = 0
    steps, step_cats = [], collections.Counter()
    gpu_by_cat = collections.Counter()
    ts_kinds = collections.Counter()       # X events: int / decimal / string / missing
    ts_frac_gt3 = dur_frac_gt3 = 0
    ts_frac_max = dur_frac_max = 0
    ts_double_mismatch = 0
    ts_double_mismatch_away = 0
    min_ts = max_end = None
    string_pid = string_tid = 0
    missing = collections.defaultdict(collections.Counter)
    neg_dur = 0
    cats_unusual = collections.Counter()
    missing_cat_by_ph = collections.Counter()
    cuda_sync_names = collections.Counter()
    cuda_sync_threads = collections.Counter()
    gpu_user_ann = 0
    graph_launch = collections.Counter()
    memcpy_names = collections.Counter()
    m_names = collections.Counter()
    nccl_family = collections.Counter()
    nccl_name_count = 0
    coll_names = collections.defaultdict(collections.Counter)
    flows_s = collections.defaultdict(int)
    flows_f = collections.defaultdict(int)
    flow_keys_s = collections.defaultdict(set)
    flow_keys_f = collections.defaultdict(set)
    ext_zero = collections.Counter()
    corr_zero = collections.Counter()
    gpu_positions = set()   # (pid,tid,ts) of GPU activities, normalised
    f_events = []

    for e in events:
        if not isinstance(e, dict):
            non_object += 1
            continue
        ph = e.get("ph")
        if ph is None:
            no_ph += 1
            by_ph["<missing>"] += 1
        else:
            by_ph[str(ph)] += 1
        cat = e.get("cat")
        name = e.get("name")
        args = e.get("args") if isinstance(e.get("args"), dict) else {}

        # generic per-event oddities
        if isinstance(e.get("pid"), str):
            string_pid += 1
        if isinstance(e.get("tid"), str):
            string_tid += 1
        for k in ("name", "ts", "pid", "tid"):
            if k not in e:
                missing[str(ph)][k] += 1
        if cat is None:
            missing_cat_by_ph[str(ph)] += 1
        elif cat not in USUAL_CATS:
            cats_unusual[str(cat)] += 1
        if "Collective name" in args:
            coll_names[str(args["Collective name"])][str(cat)] += 1
        if ph == "M":
            m_names[str(name)] += 1

        if ph == "X":
            c = "" if cat is None else str(cat)
            x_by_cat[c] += 1
            ts = e.get("ts")
            if "dur" not in e:
                missing["X"]["dur"] += 1
            if isinstance(ts, bool) or ts is None:
                ts_kinds["missing_or_bool"] += 1
            elif isinstance(ts, int):
                ts_kinds["int"] += 1
            elif isinstance(ts, D):
                ts_kinds["decimal"] += 1
            elif isinstance(ts, str):
                ts_kinds["string"] += 1
            else:
                ts_kinds["other"] += 1
            fd = frac_digits(ts)
            ts_frac_max = max(ts_frac_max, fd)
            ts_frac_gt3 += fd > 3
            dfd = frac_digits(e.get("dur"))
            dur_frac_max = max(dur_frac_max, dfd)
            dur_frac_gt3 += dfd > 3
            tns, dns = to_ns(ts), to_ns(e.get("dur"))
            # What a reader that parses ts as an IEEE double and then does
            # llround(ts * 1000.0) would get, compared to the exact value.
            # Python round() is half-even; C/C++ llround() is half-away-from-
            # zero (math.floor(x + 0.5) for the positive values here).
            if isinstance(ts, D) and tns is not None:
                prod = float(ts) * 1000.0
                if round(prod) != tns:
                    ts_double_mismatch += 1
                if math.floor(prod + 0.5) != tns:
                    ts_double_mismatch_away += 1
            if dns is not None and dns < 0:
                neg_dur += 1
            if tns is not None:
                min_ts = tns if min_ts is None else min(min_ts, tns)
                end = tns + (dns or 0)
                max_end = end if max_end is None else max(max_end, end)

            if isinstance(name, str):
                m = STEP_RE.match(name)
                if m:
                    steps.append(int(m.group(1)))
                    step_cats[c] += 1
            if cat in GPU_CATS:
                gpu_by_cat[cat] += 1
                gpu_positions.add((norm_id(e.get("pid")), norm_id(e.get("tid")), tns))
                x = args.get("External id", args.get("external id"))
                if is_num(x) and x == 0:
                    ext_zero["gpu_activity"] += 1
                if is_num(args.get("correlation")) and args["correlation"] == 0:
                    corr_zero["gpu_activity"] += 1
            if cat in RUNTIME_CATS:
                x = args.get("External id", args.get("external id"))
                if is_num(x) and x == 0:
                    ext_zero["runtime_call"] += 1
                if is_num(args.get("correlation")) and args["correlation"] == 0:
                    corr_zero["runtime_call"] += 1
                if isinstance(name, str) and (name.startswith("cudaGraphLaunch")
                                              or name.startswith("hipGraphLaunch")):
                    graph_launch[name] += 1
            if cat in HOST_OP_CATS:
                x = args.get("External id", args.get("external id"))
                if is_num(x) and x == 0:
                    ext_zero["host_op"] += 1
            if cat in KERNEL_CATS and isinstance(name, str) and \
                    (name.startswith("nccl") or name.startswith("rccl")):
                nccl_name_count += 1
                m = NCCL_FAMILY_RE.match(name)
                nccl_family[m.group(1) if m else "other:" + name.split("(")[0]] += 1
            if cat in MEMCPY_CATS:
                memcpy_names[str(name)] += 1
            if cat == "cuda_sync":
                cuda_sync_names[str(name)] += 1
                cuda_sync_threads[str((e.get("pid"), e.get("tid")))] += 1
            if cat == "gpu_user_annotation":
                gpu_user_ann += 1

        if ph in ("s", "f", "t"):
            key = (str(cat), str(hashable(e.get("id"))))
            if ph == "s":
                flows_s[key] += 1
                flow_keys_s[str(cat)].add(",".join(sorted(e.keys())))
            else:
                flows_f[key] += 1
                flow_keys_f[str(cat)].add(",".join(sorted(e.keys())))
                if ph == "f":
                    f_events.append((str(cat),
                                     (norm_id(e.get("pid")), norm_id(e.get("tid")),
                                      to_ns(e.get("ts")))))

    out["events_x_by_cat"] = sorted_counter(x_by_cat)
    out["events_x_total"] = sum(x_by_cat.values())
    out["events_by_ph"] = sorted_counter(by_ph)
    out["entries_not_object"] = non_object
    out["entries_without_ph"] = no_ph

    # 4. rank / world size
    di = doc.get("distributedInfo") if isinstance(doc, dict) else None
    out["rank"] = jsonable(di.get("rank")) if isinstance(di, dict) else None
    out["world_size"] = jsonable(di.get("world_size")) if isinstance(di, dict) else None

    # 5. profiler steps
    out["profiler_steps"] = sorted(set(steps))
    out["profiler_step_events"] = len(steps)
    out["profiler_step_cats"] = sorted_counter(step_cats)

    # 6. GPU activities
    out["gpu_activities"] = sum(gpu_by_cat.values())
    out["gpu_activities_by_cat"] = sorted_counter(gpu_by_cat)
    # Exact times of GPU activities (ns, from the decimal text, absolute when a base is present):
    # the earliest start and the summed durations, to check the C++ time conversion.
    base_ns = int(doc.get("baseTimeNanoseconds", 0)) if isinstance(doc, dict) else 0
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
    gx = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in gpu_cats]
    out["gpu_min_start_ns"] = (min(to_ns(e["ts"]) for e in gx) + base_ns) if gx else None
    out["gpu_dur_sum_ns"] = sum(to_ns(e.get("dur", 0)) for e in gx)

    # 7. links.  Primary: External id 0 treated as absent, pid/tid normalised.
    out["external_id_zero"] = {
        "counts": {k: ext_zero[k] for k in ("runtime_call", "gpu_activity", "host_op")},
        "correlation_zero": {k: corr_zero[k] for k in ("runtime_call", "gpu_activity")},
        "decision": "External id 0 treated as absent (sentinel: Kineto default "
                    "when no enclosing op; never a real host-op id in these files)",
    }
    links = compute_links(events, zero_absent=True, normalise=True)
    out["link_rate"] = links["link_rate"]
    out["links"] = links
    alt = {}
    for za, nm, label in ((False, True, "zero_as_value"),
                          (True, False, "raw_pid_tid"),
                          (False, False, "zero_as_value_raw_pid_tid"),
                          (True, True, "a_b_require_enclosure"),
                          (True, True, "flow_only"),
                          (True, False, "flow_only_raw_pid_tid")):
        r = compute_links(events, zero_absent=za, normalise=nm,
                          require_enclosure=(label == "a_b_require_enclosure"),
                          use_correlation=not label.startswith("flow_only"))
        alt[label] = {"link_rate": r["link_rate"], "paths": r["paths"],
                      "runtime_found_via": r["runtime_found_via"]}
    out["link_alternatives"] = alt

    # 8. timestamp generation
    base = doc.get("baseTimeNanoseconds") if isinstance(doc, dict) else None
    if base is not None:
        gen = "relative_to_baseTimeNanoseconds"
    elif ts_kinds["decimal"] or ts_kinds["string"]:
        gen = "float_epoch_us"
    else:
        gen = "int_epoch_us"
    # baseTimeNanoseconds is already in ns: absolute ns = base + ts_ns
    add = int(base) if is_num(base) else 0
    out["ts_generation"] = gen
    out["baseTimeNanoseconds"] = jsonable(base)
    out["ts_kinds_x"] = sorted_counter(ts_kinds)
    out["ts_max_fraction_digits"] = ts_frac_max
    out["ts_with_more_than_3_fraction_digits"] = ts_frac_gt3
    out["ts_double_mismatch_x"] = {
        "round_half_even(float(ts)*1000)": ts_double_mismatch,
        "llround(float(ts)*1000) (half away)": ts_double_mismatch_away,
    }
    out["dur_max_fraction_digits"] = dur_frac_max
    out["dur_with_more_than_3_fraction_digits"] = dur_frac_gt3
    out["min_ts_ns"] = None if min_ts is None else min_ts + add
    out["max_end_ns"] = None if max_end is None else max_end + add
    out["span_ns"] = None if min_ts is None else max_end - min_ts
    # min/max include every X event (also the cat "Trace" span event)
    out["min_ts_ns_as_written"] = min_ts
    # sanity: relative timestamps should be < ~3 months (7.9e15 ns)
    out["base_present_but_ts_looks_epoch"] = bool(
        base is not None and min_ts is not None and min_ts > 10 ** 17)

    # 9. collectives
    out["collective_kernels"] = {
        "nccl_rccl_kernel_count": nccl_name_count,
        "by_family": sorted_counter(nccl_family),
        "collective_name_args": {k: dict(sorted(v.items()))
                                 for k, v in sorted(coll_names.items())},
    }

    # 10. oddities
    big63, big53 = collections.Counter(), collections.Counter()
    walk_big_ints(doc, "", big63, big53)
    orphan_f = collections.Counter()
    orphan_f_on_gpu = collections.Counter()
    orphan_s = collections.Counter()
    s_keys = set(flows_s)
    f_keys = set(flows_f)
    for k in flows_f:
        if k not in s_keys:
            orphan_f[k[0]] += flows_f[k]
    for k in flows_s:
        if k not in f_keys:
            orphan_s[k[0]] += flows_s[k]
    f_at_gpu = collections.Counter()
    for cat, pos in f_events:
        if pos in gpu_positions:
            f_at_gpu[cat] += 1
    out["oddities"] = {
        "string_pid_events": string_pid,
        "string_tid_events": string_tid,
        "ints_above_int64_paths": sorted_counter(big63),
        "ints_above_2^53_paths": sorted_counter(big53),
        "invalid_utf8_sequences": utf8_errors,
        "float_exponent_numbers": pst.float_exponent,
        "nan_inf_literals": sorted_counter(pst.constants),
        "duplicate_object_keys": sorted_counter(pst.duplicate_keys),
        "events_missing_field_by_ph": {k: dict(sorted(v.items()))
                                       for k, v in sorted(missing.items())},
        "x_negative_dur": neg_dur,
        "missing_cat_by_ph": sorted_counter(missing_cat_by_ph),
        "unusual_cats": sorted_counter(cats_unusual),
        "flow_s_by_cat": sorted_counter(collections.Counter(
            {c: sum(v for (cc, _), v in flows_s.items() if cc == c)
             for c in {k[0] for k in flows_s}})),
        "flow_f_by_cat": sorted_counter(collections.Counter(
            {c: sum(v for (cc, _), v in flows_f.items() if cc == c)
             for c in {k[0] for k in flows_f}})),
        "flow_f_without_s_by_cat": sorted_counter(orphan_f),
        "flow_s_without_f_by_cat": sorted_counter(orphan_s),
        "flow_f_at_gpu_activity_start_by_cat": sorted_counter(f_at_gpu),
        "flow_key_sets": {"s": {k: sorted(v) for k, v in sorted(flow_keys_s.items())},
                          "f": {k: sorted(v) for k, v in sorted(flow_keys_f.items())}},
        "cuda_sync": {"count": sum(cuda_sync_names.values()),
                      "names": sorted_counter(cuda_sync_names),
                      "pid_tid": sorted_counter(cuda_sync_threads)},
        "gpu_user_annotation": gpu_user_ann,
        "graph_launches": sorted_counter(graph_launch),
        "memcpy_names_distinct": len(memcpy_names),
        "memcpy_names_first10": sorted(memcpy_names)[:10],
        "m_event_names": sorted_counter(m_names),
    }
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/traces/kineto"
    files = glob.glob(os.path.join(root, "*.json.gz")) + \
        glob.glob(os.path.join(root, "hta_sampled_2rank", "*.json.gz"))
    rels = sorted(os.path.relpath(f, root) for f in files)
    results = [analyse(os.path.join(root, r), r) for r in rels]
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
