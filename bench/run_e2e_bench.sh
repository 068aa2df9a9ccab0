#!/usr/bin/env bash
# `chopper analyze` end to end, as a user runs it, against the previous release and against HTA.
# Run by hand (never in CI); builds nothing.
#
#   bench/run_e2e_bench.sh [BUILD_DIR]                           # BUILD_DIR defaults to ./build
#   BASELINE=/tmp/chopper-prev/build/src/chopper bench/run_e2e_bench.sh build
#
# 1. Inputs, each a single-rank Kineto trace alone in its own directory (no telemetry or counter
#    files beside it, so chopper and HTA read the same bytes):
#    - every real trace $TRACES_DIR/*.json.gz (../shared/traces/kineto), decompressed once into a
#      temporary directory, since users analyse the JSON; GZ=1 adds each .json.gz as it is;
#    - synthetic traces of ~$SIZES MB (50 150 300): `chopper synth --scenario demo --ranks 1
#      --gpus-per-node 8 --layers 32 --iterations MB/2` (~2 MB of JSON an iteration), rank-0.json
#      only, cached under $SYNTH_DIR with a stamp file.
# 2. `chopper analyze FILE -o OUT` (the defaults: SQLite + CSV, every table, all cores), $REPEAT
#    times after $WARMUP untimed runs; with BASELINE, the baseline binary runs paired with it,
#    alternating which goes first each round. Per run: wall, user + system CPU (bash's `time`, ms),
#    peak RSS (/usr/bin/time). Reported: median wall, median CPU, CPU/wall (cores used), median
#    RSS, and the speed-up vs the baseline (median over the pairs of baseline wall / chopper wall).
# 3. HTA (Holistic Trace Analysis, $HTA_DIR = ../shared/peers/hta, with Debian's python3-pandas,
#    -numpy, -plotly, -ijson, -networkx, -psutil, -yaml): bench/hta_time.py in a fresh python
#    process per run, $REPEAT_HTA runs per trace, median: "HTA" = TraceAnalysis load +
#    get_temporal_breakdown + get_comm_comp_overlap timed in process (python start-up and imports
#    not counted: the comparison favours HTA); "HTA full" adds the idle time breakdown, kernel
#    breakdown, queue length summary and CUDA kernel launch stats; "HTA proc" is the whole python
#    process. An analysis that raises is named in the last column. Inputs over $HTA_MAX_MB (400)
#    are not given to HTA (its peak RSS was 6-7x the JSON on 35-50 MB traces; 10 s on 50 MB).
# 4. Prints the table, the geometric mean of the speed-up vs HTA over the real traces of 30-60 MB
#    and over the real traces >= $HTA_MIN_MB MB (with how many traces each), and checks the targets.
#    Exits 1 if the geometric mean speed-up vs HTA over the real traces >= $HTA_MIN_MB MB is below
#    $MIN_HTA_SPEEDUP (50), if BASELINE is given and a synthetic trace of a size in SIZES >=
#    $BASELINE_MIN_MB (50; synth_50mb is 49.4 MB of JSON) is less than $MIN_BASELINE_SPEEDUP (2) times faster than the baseline, or if chopper
#    failed on an input; 2 if something it needs is missing.
#
# Environment:
#   BASELINE              another build's chopper binary (the previous release); unset: no baseline
#   TRACES                names of real traces without .json.gz, e.g. "hta_a100_ddp_nccl_rank0
#                         tracelens_h100_qwen0.5b"; unset: all of them; empty: none
#   SIZES                 synthetic sizes in MB (default "50 150 300"; empty: none)
#   GZ                    1: also time each real .json.gz as it is (default 0)
#   REPEAT (5), WARMUP (1), REPEAT_HTA (3), THREADS (unset: chopper's default, all cores)
#   HTA (1; 0 skips HTA and its target), HTA_FULL (1; 0 times only load + temporal + overlap),
#   HTA_MAX_MB (400), PYTHON (/usr/bin/python3), HTA_DIR, TRACES_DIR, SYNTH_DIR
#   (/tmp/chopper_e2e_synth), CHOPPER_SHARED_DIR (../shared)
#   MIN_HTA_SPEEDUP (50), HTA_MIN_MB (8), MIN_BASELINE_SPEEDUP (2), BASELINE_MIN_MB (50)
#
# The previous release, built beside the working tree (the one of this change: ded2944):
#   git worktree add /tmp/chopper-prev ded2944
#   cmake -S /tmp/chopper-prev -B /tmp/chopper-prev/build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#     -DCHOPPER_BENCH=OFF && cmake --build /tmp/chopper-prev/build --target chopper
#   BASELINE=/tmp/chopper-prev/build/src/chopper bench/run_e2e_bench.sh build
# (build both with the same CMAKE_BUILD_TYPE). Keep every run and input in /tmp, never in the
# repository. The machine should be quiet: the numbers are whole-process times.
set -u -o pipefail

BUILD=${1:-build}
SHARED=${CHOPPER_SHARED_DIR:-../shared}
TRACES_DIR=${TRACES_DIR:-$SHARED/traces/kineto}
HTA_DIR=${HTA_DIR:-$SHARED/peers/hta}
SYNTH_DIR=${SYNTH_DIR:-/tmp/chopper_e2e_synth}
SIZES=${SIZES-50 150 300}
GZ=${GZ:-0}
REPEAT=${REPEAT:-5}
WARMUP=${WARMUP:-1}
REPEAT_HTA=${REPEAT_HTA:-3}
THREADS=${THREADS:-}
BASELINE=${BASELINE:-}
HTA=${HTA:-1}
HTA_FULL=${HTA_FULL:-1}
HTA_MAX_MB=${HTA_MAX_MB:-400}
PYTHON=${PYTHON:-/usr/bin/python3}
MIN_HTA_SPEEDUP=${MIN_HTA_SPEEDUP:-50}
HTA_MIN_MB=${HTA_MIN_MB:-8}
MIN_BASELINE_SPEEDUP=${MIN_BASELINE_SPEEDUP:-2}
BASELINE_MIN_MB=${BASELINE_MIN_MB:-50}
CHOPPER="$BUILD/src/chopper"
HTA_TIME="$(dirname "$0")/hta_time.py"

[[ -x "$CHOPPER" ]] || { echo "missing $CHOPPER: build first (cmake --build $BUILD --target chopper)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }
if [[ -n "$BASELINE" ]]; then
  [[ -x "$BASELINE" ]] || { echo "BASELINE=$BASELINE is not an executable" >&2; exit 2; }
fi
if [[ $HTA == 1 ]]; then
  if ! PYTHONPATH="$HTA_DIR" "$PYTHON" -c 'import pandas, hta.trace_analysis' >/dev/null 2>&1; then
    echo "HTA cannot run: PYTHONPATH=$HTA_DIR $PYTHON -c 'import pandas, hta.trace_analysis' fails." >&2
    echo "  apt-get install -y python3-pandas python3-numpy python3-plotly python3-ijson python3-networkx python3-psutil python3-yaml" >&2
    echo "  (or HTA=0 to time chopper alone)" >&2
    exit 2
  fi
fi

WORK=$(mktemp -d /tmp/chopper_e2e.XXXXXX) || exit 2
trap 'rm -rf "$WORK"' EXIT

# ---- inputs: name, file, kind (real, real.gz, synth), JSON MB ----
names=() files=() kinds=() mbs=() nominal=()
add_input() { # NAME FILE KIND JSON_BYTES [NOMINAL_MB]
  names+=("$1") files+=("$2") kinds+=("$3") nominal+=("${5:-0}")
  mbs+=("$(awk -v b="$4" 'BEGIN{printf "%.2f", b/1e6}')")
}

if [[ -n "${TRACES+set}" ]]; then
  read -r -a trace_names <<<"$TRACES"
else
  trace_names=()
  for f in "$TRACES_DIR"/*.json.gz; do
    [[ -e "$f" ]] && trace_names+=("$(basename "$f" .json.gz)")
  done
  [[ ${#trace_names[@]} -gt 0 ]] || echo "== no real traces in $TRACES_DIR (set CHOPPER_SHARED_DIR or TRACES_DIR)"
fi
for t in "${trace_names[@]}"; do
  src="$TRACES_DIR/$t.json.gz"
  [[ -f "$src" ]] || { echo "missing $src" >&2; exit 2; }
  mkdir -p "$WORK/in/$t"
  gzip -dc "$src" >"$WORK/in/$t/$t.json" || { echo "cannot decompress $src" >&2; exit 2; }
  bytes=$(stat -c %s "$WORK/in/$t/$t.json")
  add_input "$t" "$WORK/in/$t/$t.json" real "$bytes"
  if [[ $GZ == 1 ]]; then
    mkdir -p "$WORK/in/$t.gz"
    ln -s "$(realpath "$src")" "$WORK/in/$t.gz/$t.json.gz"
    add_input "$t.gz" "$WORK/in/$t.gz/$t.json.gz" real.gz "$bytes"
  fi
done

read -r -a sizes <<<"$SIZES"
for mb in "${sizes[@]}"; do
  iterations=$(((mb + 1) / 2))
  dir="$SYNTH_DIR/${mb}mb"
  stamp="demo, 1 rank, 32 layers, $iterations iterations"
  if [[ ! -f "$dir/.stamp" || "$(cat "$dir/.stamp")" != "$stamp" ]]; then
    echo "== synthesizing $dir ($stamp)"
    rm -rf "$dir"
    "$CHOPPER" synth --scenario demo --ranks 1 --gpus-per-node 8 --layers 32 \
      --iterations "$iterations" -o "$dir" | tail -1 || exit 2
    echo "$stamp" >"$dir/.stamp"
  fi
  name="synth_${mb}mb"
  mkdir -p "$WORK/in/$name"
  ln "$dir/rank-0.json" "$WORK/in/$name/$name.json" 2>/dev/null ||
    cp "$dir/rank-0.json" "$WORK/in/$name/$name.json" || exit 2
  add_input "$name" "$WORK/in/$name/$name.json" synth "$(stat -c %s "$dir/rank-0.json")" "$mb"
done
[[ ${#names[@]} -gt 0 ]] || { echo "no inputs (TRACES and SIZES both empty)" >&2; exit 2; }

# ---- helpers ----
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END{if(NR==0){print "-"; exit}
  if(NR%2) print v[(NR+1)/2]; else printf "%.4f\n", (v[NR/2]+v[NR/2+1])/2}'; }
jobs_args=()
[[ -n "$THREADS" ]] && jobs_args=(-j "$THREADS")

# One `analyze` of FILE by BIN: sets t_wall, t_cpu (s), t_rss (MiB); returns its exit status.
TIMEFORMAT='%3R %3U %3S'
time_analyze() { # BIN FILE
  local out="$WORK/out" rc
  rm -rf "$out"
  { time /usr/bin/time -f '%M' -o "$WORK/rss" "$1" analyze "$2" -o "$out" "${jobs_args[@]}" \
    >"$WORK/stdout" 2>"$WORK/stderr"; } 2>"$WORK/times"
  rc=$?
  read -r t_wall u s <"$WORK/times"
  t_cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.3f", u+s}')
  t_rss=$(awk '/^[0-9]+$/{printf "%.0f", $1/1024}' "$WORK/rss")
  return $rc
}

echo "== chopper: $CHOPPER ($("$CHOPPER" --version 2>/dev/null | head -1))"
if [[ -n "$BASELINE" ]]; then
  echo "== baseline: $BASELINE ($("$BASELINE" --version 2>/dev/null | head -1)), paired runs"
else
  echo "== no baseline (BASELINE unset): the baseline columns are left empty"
fi
echo "== $REPEAT runs per input after $WARMUP warm-up; HTA: $([[ $HTA == 1 ]] && echo "$REPEAT_HTA runs, $HTA_DIR" || echo "skipped (HTA=0)")"
echo "== $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"

# ---- measure ----
r_wall=() r_cpu=() r_cores=() r_rss=() r_bwall=() r_vsb=() r_hta=() r_htafull=() r_htaproc=()
r_vsh=() r_failed=()
chopper_failed=0
for i in "${!names[@]}"; do
  name=${names[$i]} file=${files[$i]}
  echo "-- ${name} (${mbs[$i]} MB)"
  walls=() cpus=() rsss=() bwalls=() ratios=() ok=1
  for ((w = 0; w < WARMUP; w++)); do
    time_analyze "$CHOPPER" "$file" || ok=0
    [[ -n "$BASELINE" ]] && { time_analyze "$BASELINE" "$file" || true; }
  done
  for ((r = 1; r <= REPEAT && ok; r++)); do
    order=(a)
    if [[ -n "$BASELINE" ]]; then
      if ((r % 2)); then order=(a b); else order=(b a); fi
    fi
    cw='' bw=''
    for who in "${order[@]}"; do
      if [[ $who == a ]]; then
        time_analyze "$CHOPPER" "$file" || { ok=0; break; }
        cw=$t_wall walls+=("$t_wall") cpus+=("$t_cpu") rsss+=("$t_rss")
      else
        if time_analyze "$BASELINE" "$file"; then bw=$t_wall bwalls+=("$t_wall"); else bw=''; fi
      fi
    done
    [[ -n "$cw" && -n "$bw" ]] && ratios+=("$(awk -v b="$bw" -v a="$cw" 'BEGIN{printf "%.4f", b/a}')")
  done
  if [[ $ok == 0 ]] && grep -q "no readable trace files" "$WORK/stderr" &&
    grep -q "^chopper: not a rank: " "$WORK/stderr"; then
    # Not a trace (a CUPTI counter pass is a hardware file): chopper says so, as it should.
    echo "   not a trace, as chopper says: $(grep -m1 '^chopper: not a rank: ' "$WORK/stderr")"
    r_wall+=(-) r_cpu+=(-) r_cores+=(-) r_rss+=(-)
  elif [[ $ok == 0 ]]; then
    echo "   chopper analyze FAILED on $file:" && tail -5 "$WORK/stderr"
    chopper_failed=1
    r_wall+=(-) r_cpu+=(-) r_cores+=(-) r_rss+=(-)
  else
    mw=$(median "${walls[@]}") mc=$(median "${cpus[@]}")
    r_wall+=("$mw") r_cpu+=("$mc") r_rss+=("$(median "${rsss[@]}")")
    r_cores+=("$(awk -v c="$mc" -v w="$mw" 'BEGIN{printf "%.2f", (w > 0 ? c/w : 0)}')")
    echo "   chopper wall s: ${walls[*]}"
  fi
  if [[ -n "$BASELINE" && ${#bwalls[@]} -gt 0 ]]; then
    echo "   baseline wall s: ${bwalls[*]}"
    r_bwall+=("$(median "${bwalls[@]}")")
    if [[ ${#ratios[@]} -gt 0 ]]; then r_vsb+=("$(median "${ratios[@]}")"); else r_vsb+=(-); fi
  else
    [[ -n "$BASELINE" ]] && echo "   baseline failed on $file: $(tail -1 "$WORK/stderr")"
    r_bwall+=(-) r_vsb+=(-)
  fi

  hta='-' htafull='-' htaproc='-' failed=''
  if [[ $HTA == 1 ]] && awk -v m="${mbs[$i]}" -v x="$HTA_MAX_MB" 'BEGIN{exit !(m <= x)}'; then
    cores=() fulls=() procs=() hrsss=()
    hta_args=("$(dirname "$file")" "$(basename "$file")" -o "$WORK/hta.json")
    [[ $HTA_FULL == 1 ]] || hta_args+=(--core-only)
    for ((r = 1; r <= REPEAT_HTA; r++)); do
      rm -f "$WORK/hta.json"
      { time PYTHONPATH="$HTA_DIR" "$PYTHON" "$HTA_TIME" "${hta_args[@]}" >"$WORK/hta.log" 2>&1; } 2>"$WORK/times"
      [[ -s "$WORK/hta.json" ]] || { failed="hta_time.py: $(tail -1 "$WORK/hta.log")"; break; }
      read -r pw _ <"$WORK/times"
      read -r hw fw fl hrss < <("$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = lambda v: "-" if v is None else "%.4f" % v
print(f(d["core_wall_s"]), f(d["full_wall_s"]), ",".join(d["failed"]) or "none", "%.0f" % d["peak_rss_mib"])' "$WORK/hta.json")
      procs+=("$pw") hrsss+=("$hrss")
      [[ $hw != - ]] && cores+=("$hw")
      [[ $fw != - ]] && fulls+=("$fw")
      [[ $fl != none ]] && failed=$fl
      if [[ $r == 1 && $fl != none ]]; then
        "$PYTHON" -c '
import json, sys
for k, v in json.load(open(sys.argv[1]))["failed"].items(): print("   HTA %s failed: %s" % (k, v))' "$WORK/hta.json"
      fi
    done
    [[ ${#cores[@]} -gt 0 ]] && hta=$(median "${cores[@]}")
    [[ ${#fulls[@]} -gt 0 ]] && htafull=$(median "${fulls[@]}")
    [[ ${#procs[@]} -gt 0 ]] && htaproc=$(median "${procs[@]}")
    echo "   HTA load+temporal+overlap s: ${cores[*]:-failed}; full: ${fulls[*]:--}; process: ${procs[*]:--}; peak RSS MiB: ${hrsss[*]:--}"
  elif [[ $HTA == 1 ]]; then
    failed="not run: over HTA_MAX_MB=$HTA_MAX_MB"
  fi
  r_hta+=("$hta") r_htafull+=("$htafull") r_htaproc+=("$htaproc") r_failed+=("${failed:--}")
  if [[ $hta != - && ${r_wall[$i]} != - ]]; then
    r_vsh+=("$(awk -v h="$hta" -v c="${r_wall[$i]}" 'BEGIN{printf "%.2f", h/c}')")
  else
    r_vsh+=(-)
  fi
done

# ---- report ----
echo
echo "Medians; wall and CPU in s (CPU = user + system), cores = CPU / wall; vs base = baseline"
echo "wall / chopper wall (median over the pairs); HTA = load + temporal + overlap in process;"
echo "vs HTA = HTA / chopper wall; HTA full adds idle, kernels, queue, launch; HTA proc = whole process."
fmt='%-36s %7s %8s %8s %6s %8s %8s %8s %9s %8s %9s %9s  %s\n'
# shellcheck disable=SC2059
printf "$fmt" trace "MB" "wall" "CPU" cores "RSS_MiB" "base" "vs_base" "HTA" "vs_HTA" "HTA_full" "HTA_proc" "HTA_failed"
num() { # FMT VALUE: VALUE printed with FMT, "-" as it is
  if [[ $2 == - ]]; then echo -; else awk -v f="$1" -v v="$2" 'BEGIN{printf f, v}'; fi
}
for i in "${!names[@]}"; do
  # shellcheck disable=SC2059
  printf "$fmt" "${names[$i]}" "${mbs[$i]}" "$(num %.3f "${r_wall[$i]}")" "$(num %.3f "${r_cpu[$i]}")" \
    "${r_cores[$i]}" "$(num %.0f "${r_rss[$i]}")" "$(num %.3f "${r_bwall[$i]}")" \
    "$(num %.2f "${r_vsb[$i]}")" "$(num %.2f "${r_hta[$i]}")" "${r_vsh[$i]}" \
    "$(num %.2f "${r_htafull[$i]}")" "$(num %.2f "${r_htaproc[$i]}")" "${r_failed[$i]}"
done
echo

# geomean LO HI: g = geometric mean of vs_HTA over the real (.json) traces with LO <= MB < HI,
# g_n traces (g_names); g_left: those in the range without an HTA time (HTA failed, or chopper)
geomean_hta() {
  local i list=()
  g_left=''
  for i in "${!names[@]}"; do
    [[ ${kinds[$i]} == real ]] || continue
    awk -v m="${mbs[$i]}" -v lo="$1" -v hi="$2" 'BEGIN{exit !(m >= lo && m < hi)}' || continue
    if [[ ${r_vsh[$i]} == - ]]; then g_left+=" ${names[$i]}"; else list+=("${r_vsh[$i]}:${names[$i]}"); fi
  done
  g_n=${#list[@]} g_names='' g=-
  [[ -n "$g_left" ]] && g_left=" (left out, no HTA time:$g_left)"
  [[ $g_n -gt 0 ]] || return
  g=$(printf '%s\n' "${list[@]}" | awk -F: '{s += log($1)} END{printf "%.1f", exp(s/NR)}')
  g_names=$(printf '%s\n' "${list[@]}" | cut -d: -f2 | paste -sd' ')
}
fail=0
if [[ $HTA == 1 ]]; then
  geomean_hta 30 60
  if [[ $g_n -gt 0 ]]; then
    echo "speed-up vs HTA, real traces of 30-60 MB: geometric mean ${g}x over $g_n trace(s): $g_names$g_left"
  else
    echo "speed-up vs HTA, real traces of 30-60 MB: none measured$g_left"
  fi
  geomean_hta "$HTA_MIN_MB" 1e18
  if [[ $g_n -gt 0 ]]; then
    echo "speed-up vs HTA, real traces >= $HTA_MIN_MB MB: geometric mean ${g}x over $g_n trace(s): $g_names$g_left"
    if awk -v g="$g" -v t="$MIN_HTA_SPEEDUP" 'BEGIN{exit !(g >= t)}'; then
      echo "PASS: >= ${MIN_HTA_SPEEDUP}x HTA (load + temporal breakdown + overlap) on real traces >= $HTA_MIN_MB MB"
    else
      echo "FAIL: ${g}x < ${MIN_HTA_SPEEDUP}x HTA (load + temporal breakdown + overlap) on real traces >= $HTA_MIN_MB MB"
      fail=1
    fi
  else
    echo "not checked: no real trace >= $HTA_MIN_MB MB with an HTA time (target ${MIN_HTA_SPEEDUP}x)$g_left"
  fi
else
  echo "not checked: speed-up vs HTA (HTA=0)"
fi

if [[ -n "$BASELINE" ]]; then
  checked=0
  for i in "${!names[@]}"; do
    [[ ${kinds[$i]} == synth ]] || continue
    awk -v m="${nominal[$i]}" -v t="$BASELINE_MIN_MB" 'BEGIN{exit !(m >= t)}' || continue
    checked=$((checked + 1))
    if [[ ${r_vsb[$i]} != - ]] &&
      awk -v x="${r_vsb[$i]}" -v t="$MIN_BASELINE_SPEEDUP" 'BEGIN{exit !(x >= t)}'; then
      echo "PASS: ${names[$i]}: $(num %.2f "${r_vsb[$i]}")x the baseline (target ${MIN_BASELINE_SPEEDUP}x)"
    else
      echo "FAIL: ${names[$i]}: $(num %.2f "${r_vsb[$i]}")x the baseline (target ${MIN_BASELINE_SPEEDUP}x)"
      fail=1
    fi
  done
  [[ $checked -gt 0 ]] || echo "not checked: no synthetic size >= $BASELINE_MIN_MB MB in SIZES (target ${MIN_BASELINE_SPEEDUP}x the baseline)"
else
  echo "not checked: speed-up vs the baseline (no baseline)"
fi
if [[ $chopper_failed == 1 ]]; then
  echo "FAIL: chopper analyze failed on an input (above)"
  fail=1
fi
exit $fail
