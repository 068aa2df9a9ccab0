#!/usr/bin/env python3
"""Independent check of a Perfetto protobuf timeline against the JSON timeline of the same run.

`chopper timeline RUN -o X.json` and `chopper timeline RUN -o X.perfetto-trace` write the same
content in two formats (docs/formats.md, Timeline). Here the schema (proto/perfetto_trace.proto,
Perfetto's field numbers) is compiled by protoc --python_out and the protobuf file decoded with
Python's protobuf, its packets replayed as Perfetto's importer does (per sequence: interned
strings; per track: a SLICE_BEGIN opens a slice, a SLICE_END closes the innermost open one). The
JSON is read with the json module. Checked, nothing taken from chopper but the two files:
  - the same processes (rank names) and, per process, the same tracks (thread names; a protobuf
    track "<name> (overlap k)" counts as <name>);
  - per track, the same slices: count, and each one's name, category, start and duration (ns;
    the JSON's ts + base_ns) and arguments;
  - the same launch flows (JSON s/f pairs; protobuf flow ids below 2^62, each on two slices: a
    host call and a GPU activity starting where the JSON's ends are), and the same collective
    flows (JSON s/t/f chains, named by collective and sequence; protobuf ids from 2^62, each on as
    many GPU slices as the JSON chain has events, at the same times);
  - per process, the same counter tracks and samples (time, value);
  - the protobuf itself: each sequence's first packet clears its incremental state, every event
    says it needs that state, every iid used was interned before on its sequence, every event's
    track (its own or its sequence's default) was described before, every SLICE_END closes an open
    slice and none is left open. Times are read as Perfetto reads them: a packet's clock is its
    timestamp_clock_id, else its sequence's default (trace_packet_defaults), else BOOTTIME; an
    incremental clock of a sequence (ids 64-127, from its clock snapshot beside a BOOTTIME reading)
    gives each timestamp as the time since the sequence's previous one.
With --max-ratio R and --json-gz F: the protobuf file is at most R times F's size.
Prints "PASS: ..." or "FAIL: ..." (exit 1); exit 77 without protoc or python3-protobuf (skipped).
"""
import argparse
import collections
import gzip
import importlib
import json
import os
import re
import shutil
import subprocess
import sys

COLLECTIVE0 = 1 << 62


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def load_json(path):
    d = json.loads(read(path))
    base = d["otherData"]["base_ns"]
    procs, threads = {}, {}
    slices = collections.defaultdict(list)
    counters = collections.defaultdict(list)
    flows = collections.defaultdict(list)
    ns = lambda us: base + round(us * 1000)
    for e in d["traceEvents"]:
        ph = e["ph"]
        if ph == "M":
            if e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif ph == "X":
            slices[(e["pid"], e["tid"])].append(
                (ns(e["ts"]), round(e["dur"] * 1000), e["name"], e["cat"],
                 tuple(sorted(e.get("args", {}).items()))))
        elif ph == "C":
            (k, v), = e["args"].items()
            counters[(e["pid"], e["name"])].append((ns(e["ts"]), v))
        elif ph in "stf":
            flows[(e["cat"], e["id"])].append((e["pid"], e["tid"], ns(e["ts"]), e["name"]))
    out = collections.defaultdict(list)
    for (pid, tid), v in slices.items():
        out[(procs[pid], threads[(pid, tid)])].extend(v)
    cnt = {(procs[pid], name): sorted(v) for (pid, name), v in counters.items()}
    fl = {"launch": [], "collective": []}
    for (cat, _), ends in flows.items():
        fl[cat].append(sorted((procs[p], threads[(p, t)], ts, name) for p, t, ts, name in ends))
    tracks = {(procs[p], n) for (p, _), n in threads.items()}
    return set(procs.values()), tracks, out, cnt, fl


def load_pb(pb2, path):
    trace = pb2.Trace()
    trace.ParseFromString(read(path))
    seqs = {}  # sequence id: interning tables
    desc = {}  # uuid: (name, parent uuid, is process, is counter)
    open_ = collections.defaultdict(list)
    slices = collections.defaultdict(list)
    counters = collections.defaultdict(list)
    flows = collections.defaultdict(list)
    overlap = re.compile(r" \(overlap \d+\)$")
    TE = pb2.TrackEvent

    def track_key(uuid):
        name, parent, _, _ = desc[uuid]
        return (desc[parent][0], overlap.sub("", name))

    for i, p in enumerate(trace.packet):
        sid = p.trusted_packet_sequence_id
        if sid == 0:
            fail(f"packet {i}: no trusted_packet_sequence_id")
        if sid not in seqs:
            if not p.sequence_flags & pb2.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
                fail(f"packet {i}: first packet of sequence {sid} does not clear its state")
            seqs[sid] = {"names": {}, "cats": {}, "anames": {}, "astrs": {}, "clock": None,
                         "track": None, "clocks": {}}
        t = seqs[sid]
        if p.HasField("trace_packet_defaults"):
            d = p.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                t["clock"] = d.timestamp_clock_id
            if d.track_event_defaults.HasField("track_uuid"):
                t["track"] = d.track_event_defaults.track_uuid
        if p.WhichOneof("data") == "clock_snapshot":
            # Sequence-scoped incremental clocks (ids 64-127): reading -> BOOTTIME at that reading.
            boot = [c.timestamp for c in p.clock_snapshot.clocks if c.clock_id == 6]
            if len(boot) != 1:
                fail(f"packet {i}: a clock snapshot without one BOOTTIME reading")
            for c in p.clock_snapshot.clocks:
                if 64 <= c.clock_id < 128:
                    if not c.is_incremental:
                        fail(f"packet {i}: clock {c.clock_id} is not incremental")
                    t["clocks"][c.clock_id] = [boot[0] - c.timestamp, c.timestamp]  # base, last
            continue
        if p.HasField("interned_data"):
            d = p.interned_data
            for field, table in (("event_names", "names"), ("event_categories", "cats"),
                                 ("debug_annotation_names", "anames")):
                for x in getattr(d, field):
                    t[table][x.iid] = x.name
            for x in d.debug_annotation_string_values:
                t["astrs"][x.iid] = x.str.decode()
        which = p.WhichOneof("data")
        if which == "track_descriptor":
            td = p.track_descriptor
            if td.uuid in desc:
                fail(f"packet {i}: track {td.uuid} described twice")
            if td.HasField("process"):
                desc[td.uuid] = (td.process.process_name, None, True, False)
            else:
                desc[td.uuid] = (td.name, td.parent_uuid, False, td.HasField("counter"))
        elif which == "track_event":
            e = p.track_event
            clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else t["clock"]
            if clock is None or clock == 6:
                ts = p.timestamp
            elif clock in t["clocks"]:  # incremental: a delta from the sequence's last time
                c = t["clocks"][clock]
                c[1] += p.timestamp
                ts = c[0] + c[1]
            else:
                fail(f"packet {i}: clock {clock} has no snapshot on sequence {sid}")
            if not p.sequence_flags & pb2.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
                fail(f"packet {i}: an event that needs its sequence's state does not say so")
            if not e.HasField("track_uuid"):
                if t["track"] is None:
                    fail(f"packet {i}: an event with no track and no default track")
                e.track_uuid = t["track"]

            def look(table, iid):
                if iid not in t[table]:
                    fail(f"packet {i}: {table} iid {iid} not interned on sequence {sid}")
                return t[table][iid]

            if e.track_uuid not in desc:
                fail(f"packet {i}: track {e.track_uuid} not described before its events")
            if e.type == TE.TYPE_SLICE_BEGIN:
                args = []
                for a in e.debug_annotations:
                    v = look("astrs", a.string_value_iid) if a.HasField(
                        "string_value_iid") else a.int_value
                    args.append((look("anames", a.name_iid), v))
                open_[e.track_uuid].append(
                    (ts, look("names", e.name_iid), look("cats", e.category_iids[0]),
                     tuple(sorted(args)), list(e.flow_ids)))
            elif e.type == TE.TYPE_SLICE_END:
                if not open_[e.track_uuid]:
                    fail(f"packet {i}: SLICE_END on track {e.track_uuid} with no open slice")
                b, name, cat, args, fids = open_[e.track_uuid].pop()
                if ts < b:
                    fail(f"packet {i}: slice {name} ends before it begins")
                key = track_key(e.track_uuid)
                slices[key].append((b, ts - b, name, cat, args))
                for f in fids:
                    flows[f].append((key[0], key[1], b, name))
            elif e.type == TE.TYPE_COUNTER:
                counters[(desc[desc[e.track_uuid][1]][0], desc[e.track_uuid][0])].append(
                    (ts, e.double_counter_value))
            elif e.type == TE.TYPE_INSTANT:
                key = track_key(e.track_uuid)
                for f in e.flow_ids:
                    flows[f].append((key[0], key[1], ts, look("names", e.name_iid)))
    left = sum(len(v) for v in open_.values())
    if left:
        fail(f"{left} slices left open at the end")
    procs = {v[0] for v in desc.values() if v[2]}
    tracks = {(desc[v[1]][0], re.sub(r" \(overlap \d+\)$", "", v[0]))
              for v in desc.values() if not v[2] and not v[3]}
    fl = {"launch": [], "collective": []}
    for fid, ends in flows.items():
        fl["collective" if fid >= COLLECTIVE0 else "launch"].append(sorted(ends))
    return procs, tracks, slices, {k: sorted(v) for k, v in counters.items()}, fl, len(
        [v for v in desc.values() if v[2]])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--pb", required=True)
    ap.add_argument("--json-gz")
    ap.add_argument("--max-ratio", type=float)
    a = ap.parse_args()
    try:
        importlib.import_module("google.protobuf")
    except ImportError:
        print("SKIP: Python's protobuf is not installed (apt-get install python3-protobuf)")
        sys.exit(77)
    if not (os.path.exists(a.protoc) or shutil.which(a.protoc)):
        print(f"SKIP: protoc not found ({a.protoc})")
        sys.exit(77)
    os.makedirs(a.work, exist_ok=True)
    proto_dir, proto_name = os.path.split(os.path.abspath(a.proto))
    r = subprocess.run([a.protoc, "-I", proto_dir, "--python_out", a.work, proto_name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        if "protobuf" in r.stderr.lower() and "version" in r.stderr.lower():
            print("SKIP: protoc and Python's protobuf disagree: " + r.stderr.strip())
            sys.exit(77)
        fail("protoc: " + r.stderr.strip())
    sys.path.insert(0, a.work)
    try:
        pb2 = importlib.import_module(proto_name[:-len(".proto")] + "_pb2")
    except Exception as e:  # a generated module the installed runtime cannot load
        print(f"SKIP: the generated module does not load with this protobuf: {e}")
        sys.exit(77)

    jprocs, jtracks, jslices, jcounters, jflows = load_json(a.json)
    pprocs, ptracks, pslices, pcounters, pflows, nseq = load_pb(pb2, a.pb)
    if jprocs != pprocs:
        fail(f"processes differ: JSON {sorted(jprocs)[:5]}, protobuf {sorted(pprocs)[:5]}")
    if jtracks != ptracks:
        fail(f"tracks differ: only in JSON {sorted(jtracks - ptracks)[:5]}, only in protobuf "
             f"{sorted(ptracks - jtracks)[:5]}")
    nslices = 0
    for key in sorted(set(jslices) | set(pslices)):
        js, ps = sorted(jslices.get(key, [])), sorted(pslices.get(key, []))
        if len(js) != len(ps):
            fail(f"{key}: {len(js)} slices in the JSON, {len(ps)} in the protobuf")
        for x, y in zip(js, ps):
            if x != y:
                fail(f"{key}: JSON slice {x} but protobuf slice {y}")
        nslices += len(js)
    if jcounters != pcounters:
        fail(f"counters differ: JSON {sorted(jcounters)[:4]}, protobuf {sorted(pcounters)[:4]}")
    # Flows: compared by their ends (process, track, time); names compared for collectives.
    for cat in ("launch", "collective"):
        je = sorted([(p, t, ts) for p, t, ts, _ in f] for f in jflows[cat])
        pe = sorted([(p, t, ts) for p, t, ts, _ in f] for f in pflows[cat])
        if je != pe:
            fail(f"{cat} flows differ: {len(je)} in the JSON, {len(pe)} in the protobuf; first "
                 f"difference {next((x, y) for x, y in zip(je, pe) if x != y) if len(je) == len(pe) else ''}")
    for f in jflows["collective"]:
        name = f[0][3]
        if not re.match(r"^[a-z_]+ #\d+( \(group .+\))?$", name):
            fail(f"collective flow named {name!r}: expected '<collective> #<sequence>'")
    nsamples = sum(len(v) for v in jcounters.values())
    ratio = ""
    if a.max_ratio is not None:
        pb_size, gz_size = os.path.getsize(a.pb), os.path.getsize(a.json_gz)
        if pb_size > a.max_ratio * gz_size:
            fail(f"the protobuf is {pb_size} bytes, more than {a.max_ratio} x the gzip'd JSON's "
                 f"{gz_size}")
        ratio = f"; {pb_size} bytes, {pb_size / gz_size:.3f} x the gzip'd JSON's {gz_size}"
    print(f"PASS: {len(jprocs)} ranks ({nseq} process tracks), {len(jtracks)} tracks, {nslices} slices, "
          f"{len(jflows['launch'])} launch flows, {len(jflows['collective'])} collective flows, "
          f"{nsamples} counter samples{ratio}")


if __name__ == "__main__":
    main()
