#!/usr/bin/env bash
# Generation benchmark, run by hand (never in CI): chopper synth for 1024 ranks of a few
# iterations, timed, then a sample of the ranks read back to check they load with a 100% link
# rate. Target: minutes, not hours. Exits 1 if generation fails or a sampled rank is not clean.
#
#   bench/run_synth_bench.sh [BUILD_DIR] [OUT_DIR]
# Environment: RANKS (1024), LAYERS (8), ITERATIONS (3), PRESET (llama3-8b), DEVICE (h100).
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-/tmp/chopper_synth_1024}
RANKS=${RANKS:-1024}
LAYERS=${LAYERS:-8}
ITERATIONS=${ITERATIONS:-3}
PRESET=${PRESET:-llama3-8b}
DEVICE=${DEVICE:-h100}
CHOPPER="$BUILD/src/chopper"
[[ -x "$CHOPPER" ]] || { echo "missing $CHOPPER: build first" >&2; exit 2; }
rm -rf "$OUT"
echo "== chopper synth: $RANKS ranks x $ITERATIONS iterations, $PRESET ($LAYERS layers), $DEVICE, FSDP, 8 GPUs per node"
start=$(date +%s.%N)
/usr/bin/time -f "peak RSS %M KiB, %e s wall, %U s user, %S s sys" \
  "$CHOPPER" synth --preset "$PRESET" --layers "$LAYERS" --ranks "$RANKS" --gpus-per-node 8 \
  --device "$DEVICE" --iterations "$ITERATIONS" --scenario demo --node-clock-offset-ns 20000 -o "$OUT"
end=$(date +%s.%N)
bytes=$(du -sb "$OUT" | cut -f1)
secs=$(echo "$end - $start" | bc)
echo "generated $(ls "$OUT"/rank-*.json | wc -l) traces, $((bytes / 1000000)) MB in ${secs} s ($(echo "$bytes / $secs / 1000000" | bc) MB/s)"
echo "== reading back ranks 0, 511 and $((RANKS - 1))"
"$CHOPPER" info --json "$OUT/rank-0.json" "$OUT/rank-511.json" "$OUT/rank-$((RANKS - 1)).json" > "$OUT.info.json"
python3 - "$OUT.info.json" <<'PY'
import json, sys
bad = 0
for r in json.load(open(sys.argv[1])):
    ok = r.get("link_rate") == 1.0 and not r.get("diagnostics")
    bad += 0 if ok else 1
    print(f"  rank {r.get('rank')}: {r.get('total_events')} events, link rate {r.get('link_rate')}, diagnostics {len(r.get('diagnostics', []))} -> {'ok' if ok else 'NOT CLEAN'}")
sys.exit(1 if bad else 0)
PY
