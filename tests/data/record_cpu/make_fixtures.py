#!/usr/bin/env python3
"""Writes the record_cpu fixtures (run once; the files are committed beside this script).

Three runs of one rank (pid 4242, main thread tid 4242) on host "testhost" with 4 logical CPUs,
3 iterations of 100 ms from S = 1_700_000_000 s (CLOCK_REALTIME ns, the trace's
baseTimeNanoseconds), each a directory with rank0.json and telemetry/testhost.{cpu,threads}.csv
and testhost.record.json (docs/telemetry_formats.md, "chopper record"):

serial/  per iteration: kernel A [20 us, 20 ms), the host in aten::index (framework, 60 ms) with
         the GPU idle, kernel B [80 ms, 100 ms). The GPU waits for the host 60.02 ms per
         iteration (the 20 us before A too). CPU ticks every 10 ms: in ticks 1 and 3..8 of each
         iteration (covering the host wait) one core busy (cpu0 100%), the other ticks 3 busy
         cores. Main thread 90 ms of CPU per iteration.
loader/  per iteration: the host in enumerate(DataLoader)...__next__ for 60 ms with the GPU idle,
         then kernel A [60.02 ms, 100 ms). Two worker processes (pt_data_worker) busy 96 and
         94 ms per iteration; the main thread 30 ms.
plain/   kernels back to back (A [20 us, 50 ms), B [50 ms, 100 ms)), the CPU files of serial/.
"""
import json
import os

S_NS = 1_700_000_000_000_000_000
HERE = os.path.dirname(os.path.abspath(__file__))
PID = 4242
IT_US = 100_000  # 100 ms


def trace(kernels, host_ops):
    """kernels: (iteration, launch_ts_us, start_us, dur_us) relative to the iteration start;
    host_ops: (iteration, cat, name, ts_us, dur_us)."""
    ev = []
    corr = 1000
    ext = 1
    for i in range(3):
        s = i * IT_US
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}",
                   "pid": PID, "tid": PID, "ts": s, "dur": IT_US, "args": {"External id": ext}})
        ext += 1
        for (it, cat, name, ts, dur) in host_ops:
            if it == i:
                ev.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": PID,
                           "ts": s + ts, "dur": dur, "args": {"External id": ext}})
                ext += 1
        for k, (it, launch, start, dur) in enumerate(kernels):
            if it != i:
                continue
            corr += 1
            ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": PID, "tid": PID,
                       "ts": s + launch - 1, "dur": 12, "args": {"External id": ext}})
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID,
                       "tid": PID, "ts": s + launch, "dur": 10,
                       "args": {"External id": ext, "cbid": 211, "correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"gemm_kernel_{k % 2}", "pid": 0,
                       "tid": 7, "ts": s + start, "dur": dur,
                       "args": {"External id": ext, "device": 0, "stream": 7,
                                "correlation": corr}})
            ext += 1
    return {"schemaVersion": 1, "baseTimeNanoseconds": S_NS,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
            "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
            "traceEvents": ev}


def cpu_csv(tick_values):
    """tick_values(k) -> [(util, user, system, iowait)] per CPU for tick k (1..30, at S + 10k ms)."""
    lines = ["time_ns,cpu,util_pct,user_pct,system_pct,iowait_pct"]
    for k in range(1, 31):
        for c, (u, us, sy, io) in enumerate(tick_values(k)):
            lines.append(f"{S_NS + k * 10_000_000},{c},{u:.1f},{us:.1f},{sy:.1f},{io:.1f}")
    return "\n".join(lines) + "\n"


def serial_ticks(k):
    if k % 10 in (1, 3, 4, 5, 6, 7, 8):  # quiet: 1 busy core, 3 idle (cpu3 10% iowait)
        return [(100, 80, 20, 0), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 10)]
    return [(100, 80, 20, 0), (100, 100, 0, 0), (50, 50, 0, 0), (50, 50, 0, 0)]


def loader_ticks(k):
    return [(30, 20, 10, 0), (96, 96, 0, 0), (94, 94, 0, 0), (0, 0, 0, 0)]


def threads_csv(threads):
    """threads: (pid, ppid, tid, comm, [cpu_time_ns at S + 100 j ms, j = 0..3] or None = no row)."""
    lines = ["time_ns,pid,ppid,tid,comm,processor,cpu_time_ns"]
    for j in range(4):
        for (pid, ppid, tid, comm, times) in threads:
            if times[j] is None:
                continue
            q = '"' + comm.replace('"', '""') + '"' if ("," in comm or '"' in comm) else comm
            lines.append(f"{S_NS + j * 100_000_000},{pid},{ppid},{tid},{q},{tid % 4},{times[j]}")
    return "\n".join(lines) + "\n"


MS = 1_000_000
SERIAL_THREADS = [
    (PID, 4000, PID, "pt_main_thread", [10_000 * MS + j * 90 * MS for j in range(4)]),
    (PID, 4000, 4250, "pt_autograd_0", [j * 5 * MS for j in range(4)]),
    # changes only between 100 and 200 ms: no row at 100 and 300 ms (unchanged)
    (PID, 4000, 4251, 'my,"odd" thread', [0, None, 10 * MS, None]),
    (4300, PID, 4300, "pt_data_worker", [j * 20 * MS for j in range(4)]),
    (4400, PID, 4400, "python3", [j * 50 * MS for j in range(4)]),  # a compile worker
]
LOADER_THREADS = [
    (PID, 4000, PID, "pt_main_thread", [j * 30 * MS for j in range(4)]),
    (4301, PID, 4301, "pt_data_worker", [j * 96 * MS for j in range(4)]),
    (4302, PID, 4302, "pt_data_worker", [j * 94 * MS for j in range(4)]),
]


def record_json(pids):
    return {"format": "chopper-record", "version": 1, "host": "testhost",
            "command": ["python3", "train.py"], "interval_ms": 10, "thread_interval_ms": 100,
            "gpu_backend": "none", "gpu_note": "fixture", "gpus": [], "logical_cpus": 4,
            "start_realtime_ns": S_NS, "end_realtime_ns": S_NS + 300 * MS, "exit_status": 0,
            "pids": pids}


def write(name, tr, cpu, threads, pids):
    d = os.path.join(HERE, name)
    os.makedirs(os.path.join(d, "telemetry"), exist_ok=True)
    with open(os.path.join(d, "rank0.json"), "w") as f:
        f.write('{"schemaVersion": 1, "baseTimeNanoseconds": %d,\n' % S_NS)
        f.write(' "deviceProperties": %s,\n' % json.dumps(tr["deviceProperties"]))
        f.write(' "distributedInfo": %s,\n' % json.dumps(tr["distributedInfo"]))
        f.write(' "traceEvents": [\n')
        f.write(",\n".join("  " + json.dumps(e) for e in tr["traceEvents"]))
        f.write("\n]}\n")
    with open(os.path.join(d, "telemetry", "testhost.cpu.csv"), "w") as f:
        f.write(cpu)
    with open(os.path.join(d, "telemetry", "testhost.threads.csv"), "w") as f:
        f.write(threads)
    with open(os.path.join(d, "telemetry", "testhost.record.json"), "w") as f:
        json.dump(record_json(pids), f, indent=1)
        f.write("\n")


serial = trace([(i, 5, 20, 19_980) for i in range(3)] + [(i, 79_970, 80_000, 20_000) for i in range(3)],
               [(i, "cpu_op", "aten::index", 20_000, 59_960) for i in range(3)])
write("serial", serial, cpu_csv(serial_ticks), threads_csv(SERIAL_THREADS), [PID, 4300, 4400])
loader = trace([(i, 60_005, 60_020, 39_980) for i in range(3)],
               [(i, "user_annotation",
                 "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 60_000)
                for i in range(3)])
write("loader", loader, cpu_csv(loader_ticks), threads_csv(LOADER_THREADS), [PID, 4301, 4302])
plain = trace([(i, 5, 20, 49_980) for i in range(3)] + [(i, 30, 50_000, 50_000) for i in range(3)],
              [])
write("plain", plain, cpu_csv(serial_ticks), threads_csv(SERIAL_THREADS), [PID, 4300, 4400])
