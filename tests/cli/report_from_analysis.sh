#!/bin/sh
# chopper report DIR draws the analysis chopper analyze wrote into DIR (its chopper.sqlite)
# without reading the traces again, and analyze --html draws it in the same pass: both give the
# report `chopper report RUN` gives for the same run (the one line saying how it was made apart),
# and print the same findings. A run with telemetry and counters (NULL cells, several ranks).
# Options that would change the analysis are refused for a database; a database that is not
# chopper's is an error naming it.
#   report_from_analysis.sh CHOPPER WORKDIR
set -eu
bin=$1
w=$2
rm -rf "$w"
mkdir -p "$w"
fail=0
"$bin" synth --scenario demo --ranks 4 --layers 2 --iterations 3 -o "$w/run" >/dev/null
"$bin" analyze "$w/run" -o "$w/a" --html "$w/one_pass.html" >"$w/analyze.out" 2>&1
grep -q "^wrote $w/one_pass.html (" "$w/analyze.out" || { echo "FAIL: analyze --html: no 'wrote' line"; fail=1; }
"$bin" report "$w/a" -o "$w/from_db.html" >"$w/db.out" 2>&1
"$bin" report "$w/a/chopper.sqlite" -o "$w/from_file.html" >/dev/null 2>&1
"$bin" report "$w/run" -o "$w/from_run.html" >"$w/run.out" 2>&1
for f in one_pass from_db from_file from_run; do
  grep -v 'made by' "$w/$f.html" >"$w/$f.cmp"
done
for f in one_pass from_db from_file; do
  if ! cmp -s "$w/$f.cmp" "$w/from_run.cmp"; then
    echo "FAIL: $f.html differs from report RUN's (diff $w/$f.cmp $w/from_run.cmp)"
    fail=1
  fi
done
grep -q "made by.*chopper report $w/a<" "$w/from_db.html" || { echo "FAIL: made-by line of report DIR"; fail=1; }
# The findings the terminal shows: the same from the database as from the traces.
grep -v '^wrote' "$w/db.out" >"$w/db.findings"
grep -v '^wrote' "$w/run.out" | grep -v 'warning' >"$w/run.findings"
grep -q '^findings (significant' "$w/db.findings" || { echo "FAIL: report DIR printed no findings"; fail=1; }
cmp -s "$w/db.findings" "$w/run.findings" || { echo "FAIL: findings differ (diff $w/db.findings $w/run.findings)"; fail=1; }
# An analysis option with a database: refused, naming it.
rc=0
"$bin" report "$w/a" -o "$w/x.html" --iteration-regex foo >"$w/opt.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "is an analysis chopper analyze wrote.*--iteration-regex" "$w/opt.out" ||
  { echo "FAIL: option with a database: rc=$rc $(cat "$w/opt.out")"; fail=1; }
# A SQLite file that is not chopper's (read as a trace: an Nsight Systems export, here a corrupt
# one): an error naming it, no report.
printf 'SQLite format 3\000' >"$w/fake.sqlite"
head -c 4096 /dev/zero >>"$w/fake.sqlite"
rc=0
"$bin" report "$w/fake.sqlite" -o "$w/y.html" >"$w/fake.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "$w/fake.sqlite: " "$w/fake.out" ||
  { echo "FAIL: foreign database: rc=$rc $(cat "$w/fake.out")"; fail=1; }
[ -e "$w/y.html" ] && { echo "FAIL: a report was written from a foreign database"; fail=1; }
[ $fail = 0 ] && echo PASS
exit $fail
