#!/bin/sh
# chopper record's own cost: CPU time of the sampler per second of run at 10 ms with 8 GPUs (the
# stand-in NVML of the tests, tests/record/standin_nvml.cpp), over `sleep 10`, CPU files on.
# The CPU time is getrusage(RUSAGE_SELF) of chopper record at its end (the child excluded), which
# it writes into record.json as recorder_cpu_ns. Target: below 1% of one core.
# Usage: bench/record_overhead.sh [BUILD_DIR]   (needs the targets chopper and record_tests built)
set -eu
B=${1:-build}
CHOPPER=$B/src/chopper
STANDIN=$B/tests/standin/nvml
[ -x "$CHOPPER" ] && [ -e "$STANDIN/libnvidia-ml.so.1" ] || {
  echo "build chopper and record_tests first (ninja -C $B chopper record_tests)" >&2
  exit 2
}
RUN=$(mktemp -d /tmp/chopper_record_bench.XXXXXX)
trap 'rm -rf "$RUN"' EXIT
LD_LIBRARY_PATH=$STANDIN STANDIN_GPUS=8 "$CHOPPER" record -o "$RUN" --interval-ms 10 -- sleep 10
JSON=$(ls "$RUN"/telemetry/*.record.json)
num() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$JSON"; }
START=$(num start_realtime_ns)
END=$(num end_realtime_ns)
CPU=$(num recorder_cpu_ns)
ROWS=$(($(cat "$RUN"/telemetry/*.gpu.csv | wc -l) - 1))
CPU_ROWS=$(($(cat "$RUN"/telemetry/*.cpu.csv | wc -l) - 1))
awk -v s="$START" -v e="$END" -v c="$CPU" -v r="$ROWS" -v cr="$CPU_ROWS" 'BEGIN {
  secs = (e - s) / 1e9; per = c / secs
  printf "run %.2f s, %d GPU rows (8 GPUs, %.1f ticks/s), %d CPU rows\n", secs, r, r / 8 / secs, cr
  printf "sampler CPU time: %.2f ms per second of run = %.3f%% of one core (target < 1%%)\n",
    per / 1e6, per / 1e7
  exit (per / 1e7 < 1.0) ? 0 : 1
}'
