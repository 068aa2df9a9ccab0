#!/usr/bin/env bash
# Timeline benchmark, run by hand (never in CI): `chopper timeline` on synthetic runs of 8 and
# 1,024 ranks (llama3-8b, 2 layers, 2 iterations, FSDP, the demo's effects, two clocks per node
# pair), plain and gzip. Reports wall time, peak RSS, file size and bytes per event, and the same
# run's `chopper analyze` time for scale. Targets (exit 1 when missed): writing the timeline takes
# at most 1.5x the analyze of the same run (it loads, labels and analyzes the run too), the plain
# file is no larger than the traces it comes from, the gzip file at most 0.15x.
#
#   bench/run_timeline_bench.sh [BUILD_DIR]
# Environment: SIZES ("8 1024"), OUT (/tmp/chopper_timeline_bench).
set -euo pipefail
BUILD=${1:-build}
SIZES=${SIZES:-"8 1024"}
OUT=${OUT:-/tmp/chopper_timeline_bench}
CHOPPER="$BUILD/src/chopper"
[[ -x "$CHOPPER" ]] || { echo "missing $CHOPPER: build first" >&2; exit 2; }
fail=0
timed() {  # timed LOG CMD...: runs CMD, leaves "wall_s rss_kib" in LOG
  local log=$1
  shift
  /usr/bin/time -f "%e %M" -o "$log" "$@" >/dev/null
}
for n in $SIZES; do
  run="$OUT/run-$n"
  rm -rf "$run"
  mkdir -p "$OUT"
  "$CHOPPER" synth --preset llama3-8b --layers 2 --ranks "$n" --gpus-per-node 8 --device h100 \
    --iterations 2 --scenario demo --node-clock-offset-ns 20000 -o "$run" >/dev/null
  input=$(du -cb "$run"/rank-*.json | tail -1 | cut -f1)
  timed "$OUT/analyze.time" "$CHOPPER" analyze "$run" -o "$OUT/analysis-$n" --no-csv 2>/dev/null
  read -r a_wall a_rss <"$OUT/analyze.time"
  for kind in plain gzip; do
    file="$OUT/timeline-$n.json"
    [[ $kind == gzip ]] && file="$file.gz"
    timed "$OUT/timeline.time" "$CHOPPER" timeline "$run" -o "$file" 2>/dev/null
    read -r t_wall t_rss <"$OUT/timeline.time"
    size=$(stat -c %s "$file")
    acts=$(sqlite3 "$OUT/analysis-$n/chopper.sqlite" 'SELECT COUNT(*) FROM gpu_activities')
    per=$(echo "scale=1; $size / $acts" | bc)
    echo "$n ranks, $kind: $((size / 1000)) kB ($per B per GPU activity, $acts activities), ${t_wall} s wall, peak RSS $((t_rss / 1024)) MiB; analyze ${a_wall} s, $((a_rss / 1024)) MiB; traces $((input / 1000000)) MB"
    if [[ $(echo "$t_wall > 1.5 * $a_wall + 0.05" | bc) == 1 ]]; then
      echo "  MISSED: timeline ${t_wall} s > 1.5 x analyze ${a_wall} s"
      fail=1
    fi
    limit=$input
    [[ $kind == gzip ]] && limit=$((input * 15 / 100))
    if ((size > limit)); then
      echo "  MISSED: $size B > $limit B (traces $input B)"
      fail=1
    fi
  done
done
exit $fail
