#!/usr/bin/env bash
# What reading and aligning an hour of GPU telemetry adds to `chopper analyze` of the demo run, run
# by hand (never in CI). Builds nothing.
#
#   bench/run_telemetry_bench.sh [BUILD_DIR]        # BUILD_DIR defaults to ./build
#
# 1. synthesizes $RUN/run: the demo run (`chopper demo`'s configuration: llama3-8b, 8 layers,
#    8 ranks of H100 on one node, 2 iterations, the demo scenario), with the generator's own
#    nvidia-smi telemetry (10 ms, ~0.3 s around the traced steps);
# 2. writes beside it, with chopper-make-hour-telemetry, 1 hour of 8-GPU telemetry at 10 ms
#    (2.88 M rows) in the generator's nvidia-smi format, the traced span $MINUTE minutes in (the
#    generator's rows there, realistic busy values around): plain, gzip -1, and as amd-smi CSV;
# 3. runs chopper-bench-telemetry: `chopper analyze` timed on each variant (none, the short file,
#    each hour file), $REPEAT rounds alternating; load_hardware, align_hardware and the hardware
#    analyses timed in process; each hour file read whole as well and compared with the windowed
#    read (offsets, periods, correlation, every aligned sample must be identical).
#    Exits 1 if a plain hour file's read + align costs more than 10% of analyze without telemetry,
#    or if a windowed read aligns differently from a whole one.
#
# Environment: RUN (/tmp/chopper_tel_bench), REPEAT (10), MINUTE (37), THREADS (2),
# BASELINE (another build's chopper binary, timed on the same variants: the code before a change).
# Keep the run in /tmp: never in the repository.
set -u -o pipefail

BUILD=${1:-build}
RUN=${RUN:-/tmp/chopper_tel_bench}
REPEAT=${REPEAT:-10}
MINUTE=${MINUTE:-37}
THREADS=${THREADS:-2}
BASELINE=${BASELINE:-}
CHOPPER="$BUILD/src/chopper"
MAKE="$BUILD/bench/chopper-make-hour-telemetry"
BENCH="$BUILD/bench/chopper-bench-telemetry"
for x in "$CHOPPER" "$MAKE" "$BENCH"; do
  [[ -x "$x" ]] || { echo "missing $x: build first (ninja -C $BUILD chopper chopper-make-hour-telemetry chopper-bench-telemetry)" >&2; exit 2; }
done

stamp="demo, hour at minute $MINUTE"
if [[ ! -f "$RUN/.stamp" || "$(cat "$RUN/.stamp")" != "$stamp" ]]; then
  echo "== synthesizing $RUN/run (the demo run) and an hour of telemetry around it"
  rm -rf "$RUN"
  mkdir -p "$RUN/hour"
  "$CHOPPER" synth --scenario demo --ranks 8 --gpus-per-node 8 --device h100 --iterations 2 \
    --layers 8 -o "$RUN/run" | tail -1 || exit 1
  "$MAKE" "$RUN/run/telemetry/node0.nvidia-smi.csv" "$RUN/hour/node0.nvidia-smi.csv" \
    --at-minute "$MINUTE" || exit 1
  "$MAKE" "$RUN/run/telemetry/node0.nvidia-smi.csv" "$RUN/hour/node0.amd-smi.csv" \
    --at-minute "$MINUTE" --amd || exit 1
  gzip -1 -k -c "$RUN/hour/node0.nvidia-smi.csv" >"$RUN/hour/node0.nvidia-smi.csv.gz" || exit 1
  echo "$stamp" >"$RUN/.stamp"
fi
ls -l "$RUN/hour"

args=("$RUN/run" --repeat "$REPEAT" --threads "$THREADS" --chopper "$CHOPPER"
  --telemetry "$RUN/hour/node0.nvidia-smi.csv" --telemetry "$RUN/hour/node0.nvidia-smi.csv.gz"
  --telemetry "$RUN/hour/node0.amd-smi.csv")
[[ -n "$BASELINE" ]] && args+=(--baseline "$BASELINE")
"$BENCH" "${args[@]}"
