#!/bin/sh
# The layout check (report_layout.py) on the reports of real traces made by others: their long
# operation names (fbgemm, TorchScript contexts), bus bandwidth over message sizes from 4 KiB to
# 1 GiB and two ranks of different lengths found overlaps that the synthetic runs do not have.
# usage: report_layout_real.sh CHOPPER PYTHON CHROMIUM SHARED_DIR OUTDIR
# Exit 77 (skipped) without ../shared/traces or without Chromium.
set -u
chopper=$1 python=$2 chromium=$3 shared=$4 out=$5
k=$shared/traces/kineto
if [ ! -d "$k" ]; then echo "SKIP: $k not found (the public traces beside the project)"; exit 77; fi
rm -rf "$out" && mkdir -p "$out"
fail=0
for t in hta_a100_ddp_nccl_rank0.json.gz hta_sampled_2rank tracelens_b200_eager_rank0.json.gz \
         tracelens_mi300x_qwen0.5b.json.gz kineto_v100_resnet50_2021_legacy.json.gz; do
  n=${t%.json.gz}
  if [ ! -e "$k/$t" ]; then echo "SKIP: $k/$t not found"; exit 77; fi
  "$chopper" analyze "$k/$t" -o "$out/$n" --html "$out/$n.html" -j 2 >/dev/null 2>"$out/$n.err" ||
    { echo "FAIL: chopper analyze $t"; cat "$out/$n.err"; fail=1; continue; }
  "$python" "$(dirname "$0")/report_layout.py" "$chromium" "$out/$n.html" "$out/$n.check" \
    >"$out/$n.log" 2>&1
  r=$?
  [ $r = 77 ] && { cat "$out/$n.log"; exit 77; }
  echo "$n: $(grep -E '^(PASS|FAIL)' "$out/$n.log")"
  [ $r = 0 ] || { cat "$out/$n.log"; fail=1; }
done
[ $fail = 0 ] && echo "PASS: every real trace's report laid out"
exit $fail
