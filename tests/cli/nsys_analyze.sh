#!/bin/sh
# chopper analyze on a hand-made Nsight Systems SQLite export (tests/data/nsys/two_ranks.sql: two
# processes on two GPUs, three ProfilerStep#N NVTX ranges each): exit 0, two ranks, the three
# iterations found, a non-empty breakdown; chopper info describes it; a .nsys-rep is refused with
# the export command.
#   nsys_analyze.sh CHOPPER SQL_TO_SQLITE SQL_FILE WORKDIR
set -eu
bin=$1
mk=$2
sql=$3
w=$4
rm -rf "$w"
mkdir -p "$w/run"
fail=0
"$mk" "$sql" "$w/run/export.sqlite"
rc=0
"$bin" analyze "$w/run/export.sqlite" -o "$w/a" >"$w/analyze.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { echo "FAIL: analyze exit $rc: $(cat "$w/analyze.out")"; fail=1; }
grep -q '^2 ranks, 3 iterations (1\.\.3)' "$w/analyze.out" ||
  { echo "FAIL: analyze did not find 2 ranks and 3 iterations: $(head -3 "$w/analyze.out")"; fail=1; }
# iterations.csv: a header and the three iterations.
[ "$(wc -l <"$w/a/iterations.csv")" = 4 ] || { echo "FAIL: iterations.csv: $(cat "$w/a/iterations.csv")"; fail=1; }
# The breakdown: every kernel of the fixture by name (gemm_kernel and the elementwise kernel).
grep -q 'gemm_kernel' "$w/a/kernel_breakdown.csv" && grep -q 'vectorized_elementwise_kernel' "$w/a/kernel_breakdown.csv" ||
  { echo "FAIL: kernel_breakdown.csv: $(cat "$w/a/kernel_breakdown.csv")"; fail=1; }
[ "$(wc -l <"$w/a/findings.csv")" -ge 1 ] || { echo "FAIL: no findings.csv"; fail=1; }
# The unread tables are counted in the diagnostics table.
grep -q 'nsys_unread' "$w/a/diagnostics.csv" || { echo "FAIL: nsys_unread not in diagnostics.csv"; fail=1; }
# The directory holding the export: the same two ranks.
rc=0
"$bin" analyze "$w/run" -o "$w/b" >"$w/dir.out" 2>&1 || rc=$?
[ "$rc" = 0 ] && grep -q '^2 ranks, 3 iterations' "$w/dir.out" ||
  { echo "FAIL: analyze DIR: rc=$rc $(head -3 "$w/dir.out")"; fail=1; }
# info describes each rank: 19 events each (6 kernels, a memcpy, a memset, 8 runtime calls, 3 NVTX ranges).
rc=0
"$bin" info "$w/run/export.sqlite" >"$w/info.out" 2>&1 || rc=$?
[ "$rc" = 0 ] && grep -q 'process=200,device=1' "$w/info.out" && grep -q 'NVIDIA H100 80GB HBM3' "$w/info.out" &&
  grep -q 'an Nsight Systems SQLite export, 19 events; timestamps: nsys_utc_epoch_ns' "$w/info.out" ||
  { echo "FAIL: info: rc=$rc $(cat "$w/info.out")"; fail=1; }
# A report file: refused, with the command that exports it.
printf 'not sqlite' >"$w/run.nsys-rep"
rc=0
"$bin" analyze "$w/run.nsys-rep" -o "$w/c" >"$w/rep.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q "nsys export --type sqlite -o $w/run.sqlite $w/run.nsys-rep" "$w/rep.out" ||
  { echo "FAIL: .nsys-rep: rc=$rc $(cat "$w/rep.out")"; fail=1; }
[ $fail = 0 ] && echo PASS
exit $fail
