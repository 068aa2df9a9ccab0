#!/bin/sh
# Hostile input on the command line: one case per run (ctest: hostile_cli_<case>).
#   sh cli.sh CASE CHOPPER DATA_DIR SCRATCH_DIR
# Each case states what the input is and what chopper must do; it prints what it saw and exits
# non-zero when chopper did something else.
set -u
case_name=$1
chopper=$2
data=$3
dir=$4
fixture=$data/labels_fixture.json
rm -rf "$dir"
mkdir -p "$dir"
fail() {
  echo "FAIL ($case_name): $*"
  exit 1
}
# Runs chopper with the given arguments; sets $rc and $out (stdout and stderr together).
run() {
  out=$("$chopper" "$@" 2>&1)
  rc=$?
}
# chopper must refuse the arguments as a usage error (exit 2) with a message matching $1.
refuses() {
  want=$1
  shift
  run "$@"
  echo "chopper $* -> rc=$rc: $(printf '%s' "$out" | head -n 2)"
  [ "$rc" = 2 ] || fail "exit status $rc, not 2, for: $*"
  printf '%s' "$out" | grep -q -e "$want" || fail "no '$want' in: $out"
}

case $case_name in
  rules_is_a_directory)
    # A directory given as the rules file was read as an empty rules file.
    refuses "--rules: File is actually a directory: /tmp" tree "$fixture" --rules /tmp
    ;;
  negative_tokens)
    # A negative token count was taken (tokens/s < 0).
    refuses "--tokens-per-step: -5 is not an integer of at least 1" \
      analyze "$fixture" -o "$dir/out" --tokens-per-step -5
    ;;
  option_values)
    # Every option value of every subcommand is checked, with a message naming the option.
    refuses "--depth" tree "$fixture" --depth -1
    refuses "--top" tree "$fixture" --top -3
    refuses "--threads" info "$fixture" -j 100000
    refuses "--max-event-mib" info "$fixture" --max-event-mib 0
    refuses "--max-decompressed-gib" info "$fixture" --max-decompressed-gib 0
    refuses "--telemetry: File does not exist" info "$fixture" --telemetry "$dir/none.csv"
    refuses "--kernel-wait-ns" analyze "$fixture" -o "$dir/o" --kernel-wait-ns -1
    refuses "--manifest: File does not exist" analyze "$fixture" -o "$dir/o" --manifest "$dir/x"
    refuses "--dtype: fp64 not in" analyze "$fixture" -o "$dir/o" --dtype fp64
    refuses "--counters: File does not exist" analyze "$fixture" -o "$dir/o" --counters "$dir/c"
    refuses "exists and is not a directory" analyze "$fixture" -o "$fixture"
    refuses "--ranks" synth -o "$dir/s" --ranks 0
    refuses "--mfu-loss: 0.95 is not a number at least 0 and below 0.95" \
      synth -o "$dir/s" --mfu-loss 0.95
    refuses "unknown preset 'gpt5'" synth -o "$dir/s" --preset gpt5
    refuses "--scenario: nope not in" synth -o "$dir/s" --scenario nope
    refuses "--straggler-rank 8 is not a rank (0 to 7)" synth -o "$dir/s" --straggler-rank 8
    refuses "--noise" synth -o "$dir/s" --noise -0.1
    refuses "--straggler-clock" synth -o "$dir/s" --straggler-clock 0
    refuses "unknown device 'h900'" synth -o "$dir/s" --device h900
    refuses "exists and is not a directory" demo -o "$fixture"
    [ ! -e "$dir/s" ] || fail "synth wrote $dir/s although its options were refused"
    ;;
  dtype_flag_beats_manifest | manifest_dtype_applies)
    # README: "flags win" over the manifest; the manifest's dtype applies when no flag is given.
    printf 'dtype = "fp32"\n' >"$dir/run.toml"
    if [ "$case_name" = dtype_flag_beats_manifest ]; then
      want=fp8
      run analyze "$fixture" -o "$dir/out" --device h100 --dtype fp8 --manifest "$dir/run.toml"
    else
      want=fp32
      run analyze "$fixture" -o "$dir/out" --device h100 --manifest "$dir/run.toml"
    fi
    printf '%s\n' "$out" | head -n 1
    [ "$rc" = 0 ] || fail "exit status $rc: $out"
    printf '%s' "$out" | grep -q "TFLOP/s $want peak" || fail "MFU not measured against $want"
    ;;
  fifo)
    # A FIFO with no writer named as a trace blocked open(2) forever. Wanted: at once, an error
    # naming it (exit 1: the file could not be read).
    mkfifo "$dir/rank0.json" || fail "mkfifo"
    out=$(timeout 20 "$chopper" info "$dir/rank0.json" 2>&1)
    rc=$?
    echo "rc=$rc: $out"
    [ "$rc" = 1 ] || fail "exit status $rc (124: it hung)"
    printf '%s' "$out" | grep -q "$dir/rank0.json: byte 0: not a regular file (a FIFO)" ||
      fail "no error naming the FIFO"
    # In a run directory: skipped, listed, the other rank read.
    cp "$data/mini_train.json" "$dir/rank1.json"
    out=$(timeout 20 "$chopper" info "$dir" 2>&1)
    rc=$?
    [ "$rc" = 0 ] || fail "directory: exit status $rc: $out"
    printf '%s' "$out" | grep -q "skipped $dir/rank0.json.*not a regular file (a FIFO)" ||
      fail "the FIFO in the directory is not listed: $out"
    ;;
  no_stale_csv)
    # analyze --no-csv after a run with CSVs left the earlier run's CSVs beside the new database.
    run analyze "$fixture" -o "$dir/out"
    [ "$rc" = 0 ] || fail "first run: $out"
    ls "$dir/out"/*.csv >/dev/null 2>&1 || fail "the first run wrote no CSV"
    run analyze "$fixture" -o "$dir/out" --no-csv
    [ "$rc" = 0 ] || fail "second run: $out"
    left=$(ls -A "$dir/out" | tr '\n' ' ')
    echo "left: $left"
    [ "$left" = ".chopper.lock chopper.sqlite " ] || fail "left behind: $left"
    ;;
  unrelated_runs)
    # Unrelated traces in one directory were merged into one run ("lead 5113729016.5%"). Wanted:
    # refused (exit 2: nothing analysed) with different_runs naming the files; with --split-runs,
    # each run analysed into OUT/run-<k> (exit 0).
    mkdir -p "$dir/u"
    cp "$data/mini_train.json" "$dir/u/a.json"
    sed 's/"baseTimeNanoseconds": 1700000000000000000/"baseTimeNanoseconds": 1700086400000000000/' \
      "$data/mini_train.json" >"$dir/u/b.json"
    run analyze "$dir/u" -o "$dir/out"
    echo "rc=$rc: $out"
    [ "$rc" = 2 ] || fail "exit status $rc, not 2"
    printf '%s' "$out" | grep -q "error (different_runs): the files come from 2 different runs: run 1: $dir/u/a.json.*run 2: $dir/u/b.json" ||
      fail "no different_runs error naming the files"
    [ ! -e "$dir/out/chopper.sqlite" ] || fail "a database was written for a mixed run"
    run analyze "$dir/u" -o "$dir/out" --split-runs
    echo "split rc=$rc"
    [ "$rc" = 0 ] || fail "--split-runs: exit status $rc: $out"
    [ -f "$dir/out/run-1/chopper.sqlite" ] && [ -f "$dir/out/run-2/chopper.sqlite" ] ||
      fail "--split-runs did not write run-1 and run-2: $(ls -R "$dir/out")"
    ;;
  duplicate_rank)
    # Two copies of one rank gave "2 ranks". Wanted: refused, duplicate_rank naming both files.
    mkdir -p "$dir/d"
    cp "$data/mini_train.json" "$dir/d/a.json"
    cp "$data/mini_train.json" "$dir/d/b.json"
    run analyze "$dir/d" -o "$dir/out"
    echo "rc=$rc: $out"
    [ "$rc" = 2 ] || fail "exit status $rc, not 2"
    printf '%s' "$out" | grep -q "error (duplicate_rank): rank 1 is claimed by 2 files (distributedInfo): $dir/d/a.json, $dir/d/b.json" ||
      fail "no duplicate_rank error naming both files"
    ;;
  missing_path)
    # One missing path dropped every rank (exit 2). Wanted: an error naming it, the rest
    # analysed, exit 1.
    run analyze "$data/mini_train.json" "$dir/rank9.json" -o "$dir/out"
    echo "rc=$rc: $(printf '%s' "$out" | grep -e missing -e wrote)"
    [ "$rc" = 1 ] || fail "exit status $rc, not 1"
    printf '%s' "$out" | grep -q "error (missing_path): $dir/rank9.json: no such file or directory" ||
      fail "the missing path is not named"
    [ -f "$dir/out/chopper.sqlite" ] || fail "the readable file was not analysed"
    # Nothing readable at all: exit 2.
    run analyze "$dir/rank9.json" -o "$dir/out2"
    [ "$rc" = 2 ] || fail "nothing readable: exit status $rc, not 2"
    ;;
  corrupt_first_byte)
    # A rank file in a directory whose first byte is corrupt was "skipped (not a trace)", exit 0.
    # Wanted: an error naming the file and byte 0, the other rank analysed, exit 1; the error in
    # the diagnostics table.
    mkdir -p "$dir/c"
    sed 's/"rank": 1, "world_size": 2/"rank": 0, "world_size": 2/' "$data/mini_train.json" >"$dir/c/rank0.json"
    { printf 'z'; tail -c +2 "$data/mini_train.json"; } >"$dir/c/rank1.json"
    run analyze "$dir/c" -o "$dir/out"
    echo "rc=$rc: $(printf '%s' "$out" | grep -e rank1 -e wrote)"
    [ "$rc" = 1 ] || fail "exit status $rc, not 1"
    printf '%s' "$out" | grep -q "error (unreadable_file): $dir/c/rank1.json: byte 0: not a JSON trace" ||
      fail "the corrupt file is not named with its offset"
    printf '%s' "$out" | grep -q "skipped.*rank1.json" && fail "the corrupt file was skipped"
    [ -f "$dir/out/chopper.sqlite" ] || fail "the other rank was not analysed"
    if command -v sqlite3 >/dev/null; then
      got=$(sqlite3 "$dir/out/chopper.sqlite" "SELECT severity, kind FROM diagnostics WHERE file = '$dir/c/rank1.json'")
      [ "$got" = "error|unreadable_file" ] || fail "diagnostics table: '$got'"
    fi
    ;;
  pzstd)
    # pzstd's output (a skippable frame before each zstd frame) was skipped as "not a trace".
    # Wanted: read like the plain file (info --json: link rate 0.875); so are frames written one
    # after another (cat a.zst b.zst).
    command -v zstd >/dev/null || { echo "zstd not installed: skipped"; exit 0; }
    mkdir -p "$dir/z"
    head -c 3000 "$data/mini_train.json" | zstd -q -c >"$dir/z/cat.json.zst"
    tail -c +3001 "$data/mini_train.json" | zstd -q -c >>"$dir/z/cat.json.zst"
    files="$dir/z/cat.json.zst"
    if command -v pzstd >/dev/null; then
      cp "$data/mini_train.json" "$dir/z/p.json"
      pzstd -q -p 2 "$dir/z/p.json" -o "$dir/z/pzstd.json.zst" && rm "$dir/z/p.json"
      files="$files $dir/z/pzstd.json.zst"
    fi
    for f in $files; do
      run info --json "$f"
      echo "$f: rc=$rc"
      [ "$rc" = 0 ] || fail "$f: exit status $rc: $out"
      printf '%s' "$out" | grep -q '"link_rate": 0.875000' || fail "$f not read like the plain file: $out"
    done
    run info "$dir/z"
    [ "$rc" = 0 ] || fail "directory: exit status $rc: $out"
    printf '%s' "$out" | grep -q skipped && fail "a zstd file was skipped: $out"
    ;;
  max_files)
    # 5,000 small rank files took 1.7 GB. Wanted: a limit on files per run (--max-files), an
    # error before any file is read (exit 2).
    mkdir -p "$dir/m"
    for r in 0 1 2; do cp "$data/mini_train.json" "$dir/m/rank$r.json"; done
    run info "$dir/m" --max-files 2
    echo "rc=$rc: $out"
    [ "$rc" = 2 ] || fail "exit status $rc, not 2"
    printf '%s' "$out" | grep -q "3 trace files found, more than the limit of 2 per run.*--max-files" ||
      fail "no error naming the limit"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "ok ($case_name)"
