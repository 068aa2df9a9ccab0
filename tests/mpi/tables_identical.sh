#!/usr/bin/env bash
# `mpirun -n 2`, `-n 3 --mpi-shared-files` and `-n 4 chopper analyze` write the tables one process
# writes, byte for byte: every CSV file compared with cmp, and the SQLite database's content
# dumped (python3's sqlite3). Runs: synthetic H100 (nvidia-smi telemetry, CUPTI passes) and MI300X
# (amd-smi, rocprofv3; a straggler, node clock offsets) runs, one without hardware files and with a
# file whose rank validation assigns; with CHOPPER_TABLES_RUNS=real instead, the real traces beside
# the project (exit 77, ctest's skip, saying so, when ../shared is absent).
#
#   [CHOPPER_TABLES_RUNS=real] tables_identical.sh CHOPPER WORKDIR SHARED_TRACES MPIEXEC NUMPROC_FLAG [MPIEXEC_FLAGS...]
set -euo pipefail
CHOPPER=$1 WORK=$2 SHARED=$3 MPIEXEC=$4 NP=$5
shift 5
FLAGS=("$@")
rm -rf "$WORK"
mkdir -p "$WORK"
fail=0

dump() {  # the database's content, table by table, rows in rowid order
  python3 - "$1" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (t,) in db.execute("select name from sqlite_master where type='table' order by name"):
    print("==", t)
    for row in db.execute('select * from "%s" order by rowid' % t.replace('"', '""')):
        print(repr(row))
EOF
}

same() {  # same ONE OTHER LABEL
  local a=$1 b=$2 what=$3 f n=0
  for f in "$a"/*.csv; do
    n=$((n + 1))
    if ! cmp -s "$f" "$b/$(basename "$f")"; then
      echo "FAIL $what: $(basename "$f") differs"
      diff <(head -c 2000 "$f") <(head -c 2000 "$b/$(basename "$f")") | head -5 || true
      return 1
    fi
  done
  if ! cmp -s <(dump "$a/chopper.sqlite") <(dump "$b/chopper.sqlite"); then
    echo "FAIL $what: chopper.sqlite differs"
    return 1
  fi
  echo "ok   $what: $n tables and the database identical"
}

check() {  # check LABEL RUN [analyze options...]
  local label=$1 run=$2
  shift 2
  local out="$WORK/out-$label"
  "$CHOPPER" analyze "$run" -o "$out-1" "$@" >"$out-1.txt" 2>&1 || [[ $? == 1 ]]
  for spec in "2" "3 --mpi-shared-files" "4"; do
    read -r n extra <<<"$spec"
    # shellcheck disable=SC2086
    if ! "$MPIEXEC" "$NP" "$n" "${FLAGS[@]}" "$CHOPPER" analyze "$run" -o "$out-$n" $extra "$@" \
      >"$out-$n.txt" 2>&1; then
      [[ $? == 1 ]] || { echo "FAIL $label: mpirun -n $n exited with an error"; cat "$out-$n.txt"; fail=1; continue; }
    fi
    same "$out-1" "$out-$n" "$label, -n $n $extra" || fail=1
    # The summary too (the same words; only the output directory's name differs).
    if ! diff -q <(sed "s|$out-1|OUT|g" "$out-1.txt") <(sed "s|$out-$n|OUT|g" "$out-$n.txt") >/dev/null; then
      echo "FAIL $label, -n $n: the terminal summary differs"
      diff <(sed "s|$out-1|OUT|g" "$out-1.txt") <(sed "s|$out-$n|OUT|g" "$out-$n.txt") | head -10 || true
      fail=1
    fi
  done
}

if [[ ${CHOPPER_TABLES_RUNS:-synthetic} == real ]]; then
  if [[ ! -d $SHARED/kineto/hta_sampled_2rank ]]; then
    echo "SKIP: $SHARED/kineto/hta_sampled_2rank is absent (the public traces beside the project)"
    exit 77
  fi
  check real-2rank "$SHARED/kineto/hta_sampled_2rank"
  check real-mi300x "$SHARED/kineto/tracelens_mi300x_resnet_ddp_rank0.json.gz"
  exit $fail
fi

"$CHOPPER" synth --preset llama3-8b --layers 2 --ranks 8 --gpus-per-node 4 --device h100 \
  --iterations 2 --scenario demo -o "$WORK/h100" >/dev/null
"$CHOPPER" synth --preset llama3-8b --layers 2 --ranks 8 --gpus-per-node 4 --device mi300x \
  --iterations 2 --scenario straggler --node-clock-offset-ns 30000 -o "$WORK/mi300x" >/dev/null
mkdir -p "$WORK/nohw"
cp "$WORK"/h100/rank-*.json "$WORK/nohw/"
# A file that says its rank neither in distributedInfo nor in its name.
sed -E 's/"distributedInfo": \{.*"nccl_version": "[^"]*"\},?//' "$WORK/nohw/rank-5.json" >"$WORK/nohw/worker-e.json"
rm "$WORK/nohw/rank-5.json"

check h100 "$WORK/h100"
# The work was divided: process 1 ran the per-rank stage on its share of the files (CHOPPER_PHASES
# prints each process's phases), and process 0 alone wrote the tables.
CHOPPER_PHASES=1 "$MPIEXEC" "$NP" 2 "${FLAGS[@]}" "$CHOPPER" analyze "$WORK/h100" -o "$WORK/phases" \
  >/dev/null 2>"$WORK/phases.txt"
if grep -q "phase p1 pass 2" "$WORK/phases.txt" && ! grep -q "phase p1 .*written" "$WORK/phases.txt"; then
  echo "ok   h100, -n 2: process 1 analysed ranks, process 0 wrote the tables"
else
  echo "FAIL h100, -n 2: the work was not divided"
  cat "$WORK/phases.txt"
  fail=1
fi
check mi300x "$WORK/mi300x"
check nohw "$WORK/nohw"
check nohw-no-hardware "$WORK/h100" --no-hardware
exit $fail
