#!/usr/bin/env bash
# Checks that a refactor changed no output: runs two chopper binaries over the same inputs and
# compares everything they write, byte for byte.
#
#   scripts/compare_outputs.sh BEFORE_BIN AFTER_BIN OUTDIR
#
# Inputs: every trace file (*.json, *.json.gz, *.json.zst) and every directory in
# $CHOPPER_SHARED_DIR/traces/kineto (default: ../shared next to the repository), each analysed on
# its own; the repository's trace fixtures (tests/data/*.json, named fixture_*); the synthetic runs
# listed in SYNTH_RUNS below, generated once by BEFORE_BIN into OUTDIR/inputs/ so that both
# binaries read the same files; and the runs in OPTION_RUNS: inputs together (several runs, a rank
# twice, a missing file: what validation reports) or with options (--iteration-regex,
# --split-runs).
# For each input and binary, under OUTDIR/before/<input>/ and OUTDIR/after/<input>/:
#   analyze/     `chopper analyze INPUT -o ...`: every CSV and chopper.sqlite (per run with
#                --split-runs)
#   analyze.out  its stdout and stderr, then its exit status (the output path reads OUT)
#   report.html  `chopper report`, and report.out as above
#   tree.out     `chopper tree`, and its exit status
# Compared: every file with cmp, each chopper.sqlite by its `sqlite3 .dump` (by its bytes when
# sqlite3 is not installed), and the file lists. Exit 0 when all are identical; else 1, naming
# every file that differs (`diff OUTDIR/before/X OUTDIR/after/X` shows how).
#
# AFTER_BIN "-" only writes BEFORE_BIN's outputs. An input whose directory holds outputs of the
# same binary and this same script (their sha256 in .bin) is not rerun: write the old binary's
# outputs once, then compare each new build against them with the same OUTDIR. Self-check: the
# same binary as BEFORE_BIN and AFTER_BIN must give exit 0 (the outputs are deterministic).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
BEFORE_BIN=$(realpath "$1")
AFTER_BIN=$2
[[ "$AFTER_BIN" == - ]] || AFTER_BIN=$(realpath "$AFTER_BIN")
OUTDIR=$(realpath -m "$3")
SELF=$(realpath "$0")
ROOT=$(cd "$(dirname "$SELF")/.." && pwd)
SHARED=$(realpath -m "${CHOPPER_SHARED_DIR:-$ROOT/../shared}")
TRACE_DIR=$SHARED/traces/kineto

# name|synth arguments (a DDP run too, for the labelling of DDP bucket collectives)
SYNTH_RUNS=(
  "synth_demo_4r|--scenario demo --ranks 4 --layers 4 --iterations 2"
  "synth_demo_2r_2gpn|--scenario demo --ranks 2 --layers 2 --iterations 3 --gpus-per-node 2"
  "synth_ddp_straggler|--scenario straggler --parallel ddp --ranks 2 --layers 2 --iterations 2"
  "synth_healthy_4r_seed2|--scenario healthy --ranks 4 --layers 2 --iterations 2 --seed 2"
)

# name|inputs (names above, or absolute paths; a run whose named input is absent is left out)|
# options given to analyze, report and tree (both lists split at spaces)
OPTION_RUNS=(
  "fixture_mini_train_regex_numbered|fixture_mini_train|--iteration-regex ProfilerStep#(\\d+)"
  "fixture_mini_train_regex_occurrence|fixture_mini_train|--iteration-regex ^ProfilerStep"
  "qwen_regex_occurrence|tracelens_h100_qwen0.5b|--iteration-regex ^ProfilerStep"
  "two_runs|hta_a100_ddp_nccl_rank0 tracelens_mi300x_resnet_ddp_rank0|"
  "two_runs_split|hta_a100_ddp_nccl_rank0 tracelens_mi300x_resnet_ddp_rank0|--split-runs"
  "duplicate_ranks|synth_demo_4r synth_healthy_4r_seed2|"
  "duplicate_ranks_split|synth_demo_4r synth_healthy_4r_seed2|--split-runs"
  "mixed|synth_demo_4r synth_ddp_straggler hta_sampled_2rank hta_no_distributed_info tracelens_mi210_gpu_only /nonexistent/rank-3.json|"
  "mixed_split|synth_demo_4r synth_ddp_straggler hta_sampled_2rank hta_no_distributed_info tracelens_mi210_gpu_only /nonexistent/rank-3.json|--split-runs"
)

for b in "$BEFORE_BIN" "$AFTER_BIN"; do
  [[ "$b" == - || -x "$b" ]] || { echo "compare_outputs: $b is not an executable" >&2; exit 2; }
done
mkdir -p "$OUTDIR/inputs"
OUTDIR=$(cd "$OUTDIR" && pwd)
# Where the inputs were when the outputs in OUTDIR were written: outputs name their input files, so
# an OUTDIR copied elsewhere (to compare several builds against one "before") reads the old path
# as the new one.
[[ -f "$OUTDIR/.inputs_dir" ]] || echo "$OUTDIR/inputs" >"$OUTDIR/.inputs_dir"
recorded_inputs=$(cat "$OUTDIR/.inputs_dir")

# The inputs: name -> paths (one a line), and the options of each.
declare -A INPUT=() OPTIONS=()
NAMES=()
if [[ -d "$TRACE_DIR" ]]; then
  for p in "$TRACE_DIR"/*; do
    n=$(basename "$p")
    case "$n" in
      *.json.gz | *.json.zst | *.json)
        n=${n%.gz}
        n=${n%.zst}
        n=${n%.json}
        ;;
      *) [[ -d "$p" ]] || continue ;;
    esac
    INPUT[$n]=$p
    NAMES+=("$n")
  done
else
  echo "compare_outputs: no real traces ($TRACE_DIR is missing): synthetic runs only" >&2
fi
for p in "$ROOT"/tests/data/*.json; do
  n=fixture_$(basename "$p" .json)
  INPUT[$n]=$p
  NAMES+=("$n")
done
for s in "${SYNTH_RUNS[@]}"; do
  n=${s%%|*}
  args=${s#*|}
  dir=$OUTDIR/inputs/$n
  if [[ ! -f "$dir/.args" || "$(cat "$dir/.args")" != "$args" ]]; then
    rm -rf "$dir"
    # shellcheck disable=SC2086  # the arguments are words
    "$BEFORE_BIN" synth $args -o "$dir" >/dev/null
    echo "$args" >"$dir/.args"
  fi
  INPUT[$n]=$dir
  NAMES+=("$n")
done

for s in "${OPTION_RUNS[@]}"; do
  IFS='|' read -r n from opts <<<"$s"
  read -r -a words <<<"$from"
  paths=()
  for w in "${words[@]}"; do
    if [[ "$w" == /* ]]; then
      paths+=("$w")
    elif [[ -n "${INPUT[$w]:-}" ]]; then
      paths+=("${INPUT[$w]}")
    else
      continue 2
    fi
  done
  INPUT[$n]=$(printf '%s\n' "${paths[@]}")
  OPTIONS[$n]=$opts
  NAMES+=("$n")
done

# run_side SIDE BIN: every input's outputs under OUTDIR/SIDE/.
run_side() {
  local side=$1 bin=$2 sum n out rc opts paths db
  sum=$(sha256sum "$bin" "$SELF" | cut -d' ' -f1 | tr '\n' ' ')
  for n in "${NAMES[@]}"; do
    out=$OUTDIR/$side/$n
    [[ -f "$out/.bin" && "$(cat "$out/.bin")" == "$sum" ]] && continue
    rm -rf "$out"
    mkdir -p "$out"
    read -r -a opts <<<"${OPTIONS[$n]:-}"
    mapfile -t paths <<<"${INPUT[$n]}"
    rc=0
    "$bin" analyze "${opts[@]}" "${paths[@]}" -o "$out/analyze" >"$out/analyze.out" 2>&1 || rc=$?
    echo "exit status $rc" >>"$out/analyze.out"
    rc=0
    "$bin" report "${opts[@]}" "${paths[@]}" -o "$out/report.html" >"$out/report.out" 2>&1 || rc=$?
    echo "exit status $rc" >>"$out/report.out"
    rc=0
    "$bin" tree "${opts[@]}" "${paths[@]}" >"$out/tree.out" 2>&1 || rc=$?
    echo "exit status $rc" >>"$out/tree.out"
    # The output path is the one thing that differs by design.
    sed -i "s|$out|OUT|g" "$out/analyze.out" "$out/report.out"
    if command -v sqlite3 >/dev/null; then
      while IFS= read -r db; do
        sqlite3 "$db" .dump >"$db.dump"
      done < <(find "$out" -name '*.sqlite')
    fi
    echo "$sum" >"$out/.bin"
  done
}

echo "compare_outputs: ${#NAMES[@]} inputs; before: $BEFORE_BIN" >&2
run_side before "$BEFORE_BIN"
[[ "$AFTER_BIN" == - ]] && exit 0
echo "compare_outputs: after: $AFTER_BIN" >&2
run_side after "$AFTER_BIN"

# COMPARE_NO_SELF_DOC=1: the databases' self-description (chopper_tables, chopper_columns: the
# tables' and columns' docs; chopper_run: what they are the analysis of) is left out of the
# comparison, for a change of docs only.
self_doc='^INSERT INTO chopper_\(tables\|columns\|run\) \|^CREATE TABLE chopper_\(tables\|columns\|run\) '
moved() {
  if [[ "$recorded_inputs" == "$OUTDIR/inputs" ]]; then cat; else sed "s|$recorded_inputs|$OUTDIR/inputs|g"; fi
}
have_dump=0
command -v sqlite3 >/dev/null && have_dump=1
differ=0 files=0
for n in "${NAMES[@]}"; do
  b=$OUTDIR/before/$n a=$OUTDIR/after/$n
  # Both sides' file lists (a file only one side wrote is a difference).
  while IFS= read -r f; do
    [[ "$f" == .bin ]] && continue
    [[ $have_dump == 1 && "$f" == *.sqlite ]] && continue  # compared by its dump
    files=$((files + 1))
    if [[ ! -f "$b/$f" || ! -f "$a/$f" ]]; then
      echo "DIFFERS: $n/$f (only in $([[ -f "$b/$f" ]] && echo before || echo after))"
      differ=$((differ + 1))
    elif [[ "${COMPARE_NO_SELF_DOC:-0}" == 1 && "$f" == *.sqlite.dump ]]; then
      if ! cmp -s <(grep -v "$self_doc" "$b/$f" | moved) <(grep -v "$self_doc" "$a/$f"); then
        echo "DIFFERS: $n/$f (result tables)"
        differ=$((differ + 1))
      fi
    elif ! cmp -s <(moved <"$b/$f") "$a/$f"; then
      echo "DIFFERS: $n/$f"
      differ=$((differ + 1))
    fi
  done < <({ (cd "$b" && find . -type f) && (cd "$a" && find . -type f); } | sed 's|^\./||' | sort -u)
done

if [[ $differ -gt 0 ]]; then
  echo "compare_outputs: $differ of $files files differ (diff $OUTDIR/before/X $OUTDIR/after/X)"
  exit 1
fi
echo "compare_outputs: all $files files identical over ${#NAMES[@]} inputs$([[ $have_dump == 1 ]] || echo ' (no sqlite3: databases compared by their bytes)')"
