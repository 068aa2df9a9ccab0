#!/usr/bin/env python3
"""Independent check of the Chakra ET files `chopper chakra` wrote for a synthetic run.

The schema (proto/chakra_et.proto) is compiled here by protoc --python_out and the files decoded
with Python's protobuf; the varint32 length-delimited framing is decoded by this script itself.
Each rank's file is checked against the run: truth.json (the generator's GPU activities: duration,
class) and the rank's Kineto trace (host ops, streams), counted here, not by chopper:
  - node counts by type: COMP = cpu_op + user_annotation events + GPU activities that are not
    collectives; COMM_COLL = the NCCL kernels (all-gathers and reduce-scatters); one METADATA node
    with the trace's process groups as ASTRA-sim reads them ([{pg_name, ranks}] JSON);
  - every GPU activity of truth.json is one node (by correlation) whose duration_micros is its
    duration rounded to the nearest µs, COMM_COLL with comm_type ALL_GATHER / REDUCE_SCATTER for
    the all-gathers / reduce-scatters, COMP otherwise;
  - dependencies: every dep names an existing, earlier node (ids ascend); each GPU node depends on
    the previous activity of its stream (in the trace's start order) and on a host op (its launch);
  - the COMM_COLL nodes of the ranks agree in order, comm_type, comm_size and pg_name.
Prints "PASS: 2 ranks, ..." or exits 1 naming the first difference; exit 77 without protoc or
python3-protobuf (skipped).
"""
import argparse
import collections
import gzip
import importlib
import json
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def records(data, name):
    """The varint32-length-delimited records of a file: (offset, bytes)."""
    pos, out = 0, []
    while pos < len(data):
        at, length, shift = pos, 0, 0
        while True:
            if pos >= len(data):
                fail(f"{name}: byte {at}: truncated varint")
            b = data[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 28:
                fail(f"{name}: byte {at}: varint longer than 5 bytes")
        if pos + length > len(data):
            fail(f"{name}: byte {at}: record of {length} bytes runs past the end")
        out.append((at, data[pos:pos + length]))
        pos += length
    return out


def attrs(node):
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        out[a.name] = getattr(a, which) if which else None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--protoc", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--et", required=True)
    a = ap.parse_args()
    try:
        importlib.import_module("google.protobuf")
    except ImportError:
        print("SKIP: Python's protobuf is not installed (apt-get install python3-protobuf)")
        sys.exit(77)
    if not (os.path.exists(a.protoc) or shutil.which(a.protoc)):
        print("SKIP: protoc not found (apt-get install protobuf-compiler)")
        sys.exit(77)
    os.makedirs(a.work, exist_ok=True)
    subprocess.run([a.protoc, "--python_out=" + a.work, "-I", os.path.dirname(a.proto), a.proto],
                   check=True)
    sys.path.insert(0, a.work)
    pb = importlib.import_module("chakra_et_pb2")

    truth = json.load(open(os.path.join(a.run, "truth.json")))
    colls = []
    summary = []
    for tr in truth["ranks"]:
        r = tr["rank"]
        name = os.path.join(a.et, f"chakra.{r}.et")
        data = open(name, "rb").read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        recs = records(data, name)
        meta = pb.GlobalMetadata()
        meta.ParseFromString(recs[0][1])
        nodes = []
        for at, b in recs[1:]:
            n = pb.Node()
            n.ParseFromString(b)
            nodes.append(n)
        by_id = {n.id: n for n in nodes}
        if len(by_id) != len(nodes):
            fail(f"{name}: duplicate node ids")
        ids = [n.id for n in nodes]
        if ids != sorted(ids):
            fail(f"{name}: nodes not in ascending id order")

        # The rank's trace, counted here.
        trace = json.load(open(os.path.join(a.run, f"rank-{r}.json")))
        events = trace["traceEvents"]
        host_ops = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"))
        gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        kcols = truth["ranks"][r]["kernels"]["columns"]
        krows = [dict(zip(kcols, row)) for row in truth["ranks"][r]["kernels"]["rows"]]
        if len(krows) != len(gpu):
            fail(f"rank {r}: truth.json has {len(krows)} GPU activities, the trace {len(gpu)}")
        comm_classes = {"all_gather": pb.ALL_GATHER, "reduce_scatter": pb.REDUCE_SCATTER,
                        "all_reduce": pb.ALL_REDUCE}
        n_comm = sum(1 for k in krows if k["op_class"] in comm_classes)

        types = collections.Counter(n.type for n in nodes)
        want = {pb.COMP_NODE: host_ops + len(krows) - n_comm, pb.COMM_COLL_NODE: n_comm,
                pb.METADATA_NODE: 1}
        if dict(types) != want:
            fail(f"{name}: node types {dict(types)}, expected {want}")
        md = [n for n in nodes if n.type == pb.METADATA_NODE][0]
        groups = json.loads(md.inputs.values)
        want_groups = [{"pg_name": g["pg_name"], "ranks": g["ranks"]}
                       for g in trace["distributedInfo"]["pg_config"]]
        if groups != want_groups:
            fail(f"{name}: process groups {groups}, expected {want_groups}")

        # Dependencies: existing, earlier.
        for n in nodes:
            for d in list(n.ctrl_deps) + list(n.data_deps):
                if d not in by_id:
                    fail(f"{name}: node {n.id} depends on {d}, no such node")
                if d >= n.id:
                    fail(f"{name}: node {n.id} depends on {d}, not an earlier node")

        # GPU nodes against truth.json, by correlation.
        gpu_nodes = {}
        for n in nodes:
            at = attrs(n)
            if at.get("is_cpu_op") is False:
                gpu_nodes[at["correlation"]] = (n, at)
        if len(gpu_nodes) != len(krows):
            fail(f"{name}: {len(gpu_nodes)} GPU nodes, truth.json has {len(krows)} activities")
        for k in krows:
            n, at = gpu_nodes[k["correlation"]]
            if n.duration_micros != (k["dur_ns"] + 500) // 1000:
                fail(f"{name}: correlation {k['correlation']}: duration_micros {n.duration_micros}, "
                     f"truth {k['dur_ns']} ns")
            if k["op_class"] in comm_classes:
                if n.type != pb.COMM_COLL_NODE or at.get("comm_type") != comm_classes[k["op_class"]]:
                    fail(f"{name}: correlation {k['correlation']} ({k['op_class']}): type {n.type}, "
                         f"comm_type {at.get('comm_type')}")
                colls.append((r, n.id, at.get("comm_type"), at.get("comm_size"), at.get("pg_name")))
            elif n.type != pb.COMP_NODE:
                fail(f"{name}: correlation {k['correlation']}: type {n.type}, expected COMP")
            if not any(attrs(by_id[d]).get("is_cpu_op") is True for d in n.ctrl_deps):
                fail(f"{name}: correlation {k['correlation']}: no launching host op among its ctrl deps")
        # Stream order, from the trace: each activity after the previous one of its stream.
        by_stream = collections.defaultdict(list)
        for e in gpu:
            by_stream[(e["args"].get("device"), e["args"].get("stream"))].append(
                (e["ts"], e["args"]["correlation"]))
        stream_edges = 0
        for evs in by_stream.values():
            evs.sort()
            for (_, prev), (_, cur) in zip(evs, evs[1:]):
                if gpu_nodes[prev][0].id not in gpu_nodes[cur][0].ctrl_deps:
                    fail(f"{name}: correlation {cur} does not depend on {prev}, the previous "
                         "activity of its stream")
                stream_edges += 1
        summary.append(f"rank {r}: {len(nodes)} nodes, {host_ops} host ops, {len(krows)} GPU "
                       f"activities ({n_comm} collectives), {stream_edges} stream edges")

    per_rank = collections.defaultdict(list)
    for r, nid, ct, cs, pg in colls:
        per_rank[r].append((nid, ct, cs, pg))
    for r in per_rank:  # in node (start) order, without the ids
        per_rank[r] = [c[1:] for c in sorted(per_rank[r])]
    ranks = sorted(per_rank)
    for r in ranks[1:]:
        if per_rank[r] != per_rank[ranks[0]]:
            fail(f"collectives of rank {r} differ from rank {ranks[0]}'s")
    print(f"PASS: {len(truth['ranks'])} ranks; " + "; ".join(summary))


if __name__ == "__main__":
    main()
