#!/usr/bin/env bash
# chopper analyze on a multi-rank run, run by hand (never in CI). Builds nothing.
#
#   bench/run_analyze_bench.sh [BUILD_DIR]        # BUILD_DIR defaults to ./build
#
# 1. synthesizes $RUN (default /tmp/chopper_bench_run): $RANKS ranks (8) of Llama-3-8B FSDP with
#    every effect of the demo scenario, $ITERATIONS iterations (150: ~290 MB of JSON per rank);
# 2. runs `chopper analyze` on it (every table, SQLite + CSV) under /usr/bin/time, $REPEAT times;
# 3. prints wall time, CPU time, peak RSS, and peak RSS as a share of the JSON read. Exits 1 if
#    peak RSS is above 0.5 x the JSON size (the architecture's memory budget).
#
# Environment: RUN, RANKS, ITERATIONS, REPEAT (2), THREADS (0 = all cores).
# Keep the run in /tmp: never in the repository.
set -u -o pipefail

BUILD=${1:-build}
RUN=${RUN:-/tmp/chopper_bench_run}
RANKS=${RANKS:-8}
ITERATIONS=${ITERATIONS:-150}
REPEAT=${REPEAT:-2}
THREADS=${THREADS:-0}
CHOPPER="$BUILD/src/chopper"
[[ -x "$CHOPPER" ]] || { echo "missing $CHOPPER: build first" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }

stamp="$RANKS ranks, $ITERATIONS iterations"
if [[ ! -f "$RUN/.stamp" || "$(cat "$RUN/.stamp")" != "$stamp" ]]; then
  echo "== synthesizing $RUN ($stamp)"
  rm -rf "$RUN"
  "$CHOPPER" synth --scenario demo --ranks "$RANKS" --gpus-per-node 8 --iterations "$ITERATIONS" \
    --layers 32 --node-clock-offset-ns 250000 -o "$RUN" | tail -1 || exit 1
  echo "$stamp" >"$RUN/.stamp"
fi
json_bytes=$(cat "$RUN"/rank-*.json | wc -c)
echo "== $RUN: $RANKS rank files, $(awk -v b="$json_bytes" 'BEGIN{printf "%.1f", b/1e6}') MB of JSON"

fail=0
for i in $(seq 1 "$REPEAT"); do
  out=$(mktemp -d)
  /usr/bin/time -v "$CHOPPER" analyze "$RUN" -o "$out/analysis" -j "$THREADS" \
    --tokens-per-step $((RANKS * 4096)) >"$out/stdout" 2>"$out/time" || { cat "$out/time"; exit 1; }
  wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$out/time")
  user=$(sed -n 's/.*User time (seconds): //p' "$out/time")
  sys=$(sed -n 's/.*System time (seconds): //p' "$out/time")
  rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/time")
  ratio=$(awk -v r="$rss_kb" -v b="$json_bytes" 'BEGIN{printf "%.3f", r*1024/b}')
  echo "run $i: wall $wall, user ${user}s, sys ${sys}s, peak RSS $((rss_kb / 1024)) MiB = ${ratio} x JSON"
  awk -v x="$ratio" 'BEGIN{exit !(x > 0.5)}' && fail=1
  [[ $i == 1 ]] && head -12 "$out/stdout"
  rm -rf "$out"
done
[[ $fail == 0 ]] && echo "PASS: peak RSS <= 0.5 x JSON" || echo "FAIL: peak RSS above 0.5 x JSON"
exit $fail
