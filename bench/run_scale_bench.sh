#!/usr/bin/env bash
# Scale benchmark, run by hand (never in CI): `chopper analyze` on synthetic runs of many ranks
# (llama3-8b, 2 layers, 2 iterations, FSDP, H100, 8 GPUs per node: nvidia-smi telemetry per node
# and a CUPTI counter pass per rank beside the traces, as `chopper synth` writes them), in one
# process and under `mpirun -n 2` / `-n 4` when Open MPI is there. Reports wall time, CPU time (user
# + system, every process), peak RSS (the largest process, and all processes summed) and peak RSS ÷
# the traces' bytes (rank-*.json), and checks that every process count writes the same tables.
#
# Targets (exit 1 when one is missed):
#   - one process: peak RSS <= 0.5 x the traces' bytes at 512 ranks and above;
#   - time linear in ranks: CPU seconds per rank at the largest size <= 1.5 x those at the smallest;
#   - mpirun -n N: every table byte-identical to one process's (CSV files compared with cmp, the
#     SQLite databases dumped).
#
#   bench/run_scale_bench.sh [BUILD_DIR]
# Environment: SIZES ("64 256 512 1024"), PROCS ("2 4"), REPEAT (1: runs per size, best kept),
# OUT (/tmp/chopper_scale_bench), KEEP_RUNS (1 keeps the synthetic runs between invocations).
set -euo pipefail
BUILD=${1:-build}
SIZES=${SIZES:-"64 256 512 1024"}
PROCS=${PROCS:-"2 4"}
REPEAT=${REPEAT:-1}
OUT=${OUT:-/tmp/chopper_scale_bench}
CHOPPER="$(cd "$(dirname "$BUILD/src/chopper")" && pwd)/chopper"
[[ -x "$CHOPPER" ]] || { echo "missing $CHOPPER: build first" >&2; exit 2; }
MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
# As the tests start MPI on one machine (CHOPPER_MPIEXEC_FLAGS in CMakeLists.txt): as root, more
# processes than cores, threads not pinned to one core, shared memory only.
MPIFLAGS=(--allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl self,vader
  --mca btl_vader_single_copy_mechanism none)
export OMPI_MCA_plm_rsh_agent=
fail=0
mkdir -p "$OUT"

# cpu_wall_rss LOG...: from /usr/bin/time -f "%e %U %S %M" logs, the max wall, summed CPU,
# max RSS (KiB) and summed RSS (KiB).
sum_times() {
  awk '{ if ($1 > w) w = $1; c += $2 + $3; if ($4 > m) m = $4; s += $4 } END { printf "%s %.2f %d %d\n", w, c, m, s }' "$@"
}

same_tables() {  # same_tables DIR_A DIR_B: every CSV and the database's content
  local a=$1 b=$2 f
  for f in "$a"/*.csv; do
    cmp -s "$f" "$b/$(basename "$f")" || { echo "  DIFFER: $(basename "$f")"; return 1; }
  done
  cmp -s <(sqlite3 "$a/chopper.sqlite" .dump) <(sqlite3 "$b/chopper.sqlite" .dump) ||
    { echo "  DIFFER: chopper.sqlite"; return 1; }
}

declare -A cpu_per_rank
printf "%-6s %-9s %9s %9s %10s %10s %9s %8s\n" ranks procs wall_s cpu_s rss_MiB rss_sum_MiB traces_MB rss/tr
for n in $SIZES; do
  run="$OUT/run-$n"
  if [[ ! -d $run || ${KEEP_RUNS:-1} != 1 ]]; then
    rm -rf "$run"
    "$CHOPPER" synth --preset llama3-8b --layers 2 --ranks "$n" --gpus-per-node 8 --device h100 \
      --iterations 2 --seed 1 -o "$run" >/dev/null
  fi
  traces=$(du -cb "$run"/rank-*.json | tail -1 | cut -f1)
  best=""
  for ((k = 0; k < REPEAT; ++k)); do
    rm -rf "$OUT/a1-$n"
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/t1.log" "$CHOPPER" analyze "$run" -o "$OUT/a1-$n" >/dev/null 2>&1
    line=$(sum_times "$OUT/t1.log")
    if [[ -z $best || $(echo "$line" | awk '{print $2}') < $(echo "$best" | awk '{print $2}') ]]; then best=$line; fi
  done
  read -r wall cpu rss rss_sum <<<"$best"
  ratio=$(echo "scale=3; $rss * 1024 / $traces" | bc)
  printf "%-6s %-9s %9s %9s %10d %10d %9d %8s\n" "$n" 1 "$wall" "$cpu" $((rss / 1024)) $((rss_sum / 1024)) $((traces / 1000000)) "$ratio"
  cpu_per_rank[$n]=$(echo "scale=6; $cpu / $n" | bc)
  if ((n >= 512)) && [[ $(echo "$ratio > 0.5" | bc) == 1 ]]; then
    echo "  MISSED: peak RSS ${ratio} x the traces (target 0.5)"
    fail=1
  fi
  [[ -n $MPIRUN ]] || continue
  for p in $PROCS; do
    rm -rf "$OUT/ap-$n" "$OUT"/tp.*.log
    "$MPIRUN" "${MPIFLAGS[@]}" -n "$p" sh -c \
      "/usr/bin/time -f '%e %U %S %M' -o '$OUT/tp.'\$OMPI_COMM_WORLD_RANK'.log' '$CHOPPER' analyze '$run' -o '$OUT/ap-$n'" \
      >/dev/null 2>&1 || { echo "  mpirun -n $p failed"; fail=1; continue; }
    read -r wall cpu rss rss_sum <<<"$(sum_times "$OUT"/tp.*.log)"
    ratio=$(echo "scale=3; $rss * 1024 / $traces" | bc)
    printf "%-6s %-9s %9s %9s %10d %10d %9d %8s\n" "$n" "mpi-$p" "$wall" "$cpu" $((rss / 1024)) $((rss_sum / 1024)) $((traces / 1000000)) "$ratio"
    same_tables "$OUT/a1-$n" "$OUT/ap-$n" || { echo "  MISSED: mpirun -n $p tables differ"; fail=1; }
  done
done
set -- $SIZES
first=$1
last=${!#}
if [[ $first != "$last" ]]; then
  growth=$(echo "scale=3; ${cpu_per_rank[$last]} / ${cpu_per_rank[$first]}" | bc)
  echo "CPU per rank: ${cpu_per_rank[$first]} s at $first ranks, ${cpu_per_rank[$last]} s at $last ranks (x$growth)"
  if [[ $(echo "$growth > 1.5" | bc) == 1 ]]; then
    echo "  MISSED: time grows faster than the ranks"
    fail=1
  fi
fi
exit $fail
