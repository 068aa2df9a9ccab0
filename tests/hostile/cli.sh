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
  *)
    fail "unknown case"
    ;;
esac
echo "ok ($case_name)"
