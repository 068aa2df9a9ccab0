#!/usr/bin/env bash
# Ingest benchmark, run by hand (never in CI). Builds nothing.
#
#   bench/run_ingest_bench.sh [BUILD_DIR]        # BUILD_DIR defaults to ./build
#
# 1. generates $LARGE (default /tmp/chopper_large.json, ~$TARGET_MB MB) with
#    chopper-make-large-trace if it is missing, and $LARGE.gz (gzip -1) next to it;
# 2. runs chopper-bench-ingest on the plain and the gzip file (targets: >= 1000 MB/s per core,
#    peak RSS <= 0.5 x uncompressed JSON; --expect-x-events from the generator);
# 3. times Python's json.load on the plain file for comparison, and simdjson's own parse
#    (chopper-bench-simdjson: DOM, and On-Demand visiting every member) as this machine's
#    reference for how fast JSON can be parsed here at all;
# 4. prints a summary table. Exits 1 if either bench run missed a target.
#
# Environment: LARGE, TARGET_MB (600), SOURCE (the real trace to repeat), REPEAT (3); CHOPPER_ISA
# (baseline, v2, v3) runs chopper's parser copy for that x86-64 level instead of the fastest.
# Keep the large files in /tmp: never in the repository.
set -u -o pipefail

BUILD=${1:-build}
LARGE=${LARGE:-/tmp/chopper_large.json}
TARGET_MB=${TARGET_MB:-600}
SOURCE=${SOURCE:-$(cd "$(dirname "$0")/../.." && pwd)/shared/traces/kineto/hta_a100_ddp_nccl_rank0.json.gz}
REPEAT=${REPEAT:-3}
META="$LARGE.meta"  # expected_x_events=..., uncompressed_bytes=... from the generator

MAKE="$BUILD/bench/chopper-make-large-trace"
BENCH="$BUILD/bench/chopper-bench-ingest"
SIMDJSON="$BUILD/bench/chopper-bench-simdjson"
for exe in "$MAKE" "$BENCH" "$SIMDJSON"; do
  if [[ ! -x "$exe" ]]; then
    echo "missing $exe: build first (ninja -C $BUILD chopper-make-large-trace chopper-bench-ingest chopper-bench-simdjson)" >&2
    exit 2
  fi
done

# --- 1. the large trace -----------------------------------------------------------------------
size_of() { stat -c %s "$1" 2>/dev/null || echo -1; }
meta_get() { sed -n "s/^$1=//p" "$META" 2>/dev/null | tail -1; }

if [[ ! -f "$LARGE" || ! -f "$META" || "$(size_of "$LARGE")" != "$(meta_get uncompressed_bytes)" ]]; then
  echo "== generating $LARGE (~$TARGET_MB MB) from $SOURCE"
  rm -f "$LARGE.gz"
  "$MAKE" "$SOURCE" "$LARGE" --target-mb "$TARGET_MB" | tee "$META.tmp" || exit 1
  grep -E '^(expected_x_events|uncompressed_bytes)=' "$META.tmp" > "$META" && rm -f "$META.tmp"
else
  echo "== reusing $LARGE ($(meta_get uncompressed_bytes) bytes)"
fi
EXPECT_X=$(meta_get expected_x_events)
if [[ ! -f "$LARGE.gz" || "$LARGE.gz" -ot "$LARGE" ]]; then
  echo "== compressing $LARGE.gz (gzip -1)"
  gzip -1 -c "$LARGE" > "$LARGE.gz.tmp" && mv "$LARGE.gz.tmp" "$LARGE.gz" || exit 1
fi

# --- 2. chopper --------------------------------------------------------------------------------
declare -A RES RC
for f in "$LARGE" "$LARGE.gz"; do
  echo
  echo "== $BENCH $f --expect-x-events $EXPECT_X --repeat $REPEAT"
  out=$("$BENCH" "$f" --expect-x-events "$EXPECT_X" --repeat "$REPEAT")
  RC[$f]=$?
  echo "$out"
  RES[$f]=$(grep '^bench_result ' <<<"$out")
done

# --- 3. Python json.load -------------------------------------------------------------------------
echo
echo "== python3 json.load $LARGE"
PY=$(python3 - "$LARGE" <<'EOF'
import json, os, resource, sys, time
p = sys.argv[1]
n = os.path.getsize(p)
c0, w0 = time.process_time(), time.perf_counter()
with open(p, "rb") as f:
    d = json.load(f)
c, w = time.process_time() - c0, time.perf_counter() - w0
x = sum(1 for e in d["traceEvents"] if e.get("ph") == "X")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(f"python {sys.version.split()[0]}: {n/1e6:.1f} MB, {x} X events, wall {w:.2f} s, CPU {c:.2f} s, "
      f"{n/1e6/c:.1f} MB/s per core, peak RSS {rss/1e6:.1f} MB ({rss/n:.2f} x)")
print(f"py_result mbps_per_core={n/1e6/c:.1f} cpu_s={c:.3f} wall_s={w:.3f} peak_rss_mb={rss/1e6:.1f} "
      f"rss_ratio={rss/n:.3f} x_events={x}")
EOF
)
echo "$PY"

echo
echo "== $SIMDJSON $LARGE --expect-x-events $EXPECT_X --repeat $REPEAT"
SJ=$("$SIMDJSON" "$LARGE" --expect-x-events "$EXPECT_X" --repeat "$REPEAT")
SJ_RC=$?
echo "$SJ"

# --- 4. summary ----------------------------------------------------------------------------------
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
echo
echo "== summary ($(nproc) cores, $(uname -m); MB = 10^6 bytes; targets >= 1000 MB/s/core, RSS <= 0.5 x)"
printf '%-30s %10s %9s %9s %12s %11s %9s %15s %7s\n' \
  input "JSON MB" "wall s" "CPU s" "MB/s/core" "peak RSS MB" "RSS/JSON" "link+classify s" result
for f in "$LARGE" "$LARGE.gz"; do
  r=${RES[$f]}
  printf '%-30s %10s %9s %9s %12s %11s %9s %15s %7s\n' \
    "chopper $(basename "$f")" "$(field uncompressed_mb "$r")" "$(field wall_s "$r")" \
    "$(field cpu_s "$r")" "$(field mbps_per_core "$r")" "$(field peak_rss_mb "$r")" \
    "$(field rss_ratio "$r")" "$(field link_classify_s "$r")" "$(field result "$r")"
  printf '%-30s %10s %9s %9s %12s\n' "  median of $REPEAT runs" "" "" \
    "$(field median_cpu_s "$r")" "$(field median_mbps_per_core "$r")"
done
p=$(grep '^py_result ' <<<"$PY")
printf '%-30s %10s %9s %9s %12s %11s %9s %15s %7s\n' \
  "python json.load" "$(field uncompressed_mb "${RES[$LARGE]}")" "$(field wall_s "$p")" \
  "$(field cpu_s "$p")" "$(field mbps_per_core "$p")" "$(field peak_rss_mb "$p")" \
  "$(field rss_ratio "$p")" "-" "-"
for parser in dom on-demand; do
  r=$(grep "^simdjson_result parser=$parser " <<<"$SJ")
  printf '%-30s %10s %9s %9s %12s %11s %9s %15s %7s\n' \
    "simdjson $parser (reference)" "$(field mb "$r")" "-" "$(field cpu_s "$r")" \
    "$(field mbps_per_core "$r")" "-" "-" "-" "-"
done
isa=$(field isa "${RES[$LARGE]}")
[[ -n "$isa" ]] && echo "chopper's parser: the $isa copy (x86-64 level, chosen at run time; CHOPPER_ISA=baseline|v2|v3 forces one)"
ours=$(field mbps_per_core "${RES[$LARGE]}")
dom=$(field mbps_per_core "$(grep '^simdjson_result parser=dom ' <<<"$SJ")")
if [[ -n "$ours" && -n "$dom" ]]; then
  echo "chopper ingest / simdjson DOM parse on this machine: $(awk -v a="$ours" -v b="$dom" 'BEGIN { printf "%.2f", a / b }') x"
fi

status=0
[[ $SJ_RC -eq 0 ]] || echo "chopper-bench-simdjson failed (exit $SJ_RC): the reference is missing" >&2
for f in "$LARGE" "$LARGE.gz"; do [[ ${RC[$f]} -eq 0 ]] || status=1; done
exit $status
