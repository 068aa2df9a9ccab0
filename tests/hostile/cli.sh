#!/bin/sh
# Hostile input on the command line: one case per run (ctest: hostile_cli_<case>).
#   sh cli.sh CASE CHOPPER DATA_DIR SCRATCH_DIR
# Each case states what the input is and what chopper must do; it prints what it saw and exits
# non-zero when chopper did something else, or 77 (ctest: skipped, SKIP_RETURN_CODE) when a tool
# the case needs is not installed (scripts/install-deps.sh installs them).
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
# The case needs these programs: skipped (exit 77), naming the missing one, without any.
needs() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null ||
      { echo "SKIP ($case_name): $tool is not installed (scripts/install-deps.sh)"; exit 77; }
  done
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
    # naming it; a FIFO named explicitly is read as a stream (a pipe), and one with no writer
    # reads as empty (exit 2: no readable trace).
    mkfifo "$dir/rank0.json" || fail "mkfifo"
    out=$(timeout 20 "$chopper" info "$dir/rank0.json" 2>&1)
    rc=$?
    echo "rc=$rc: $out"
    [ "$rc" = 2 ] || fail "exit status $rc (124: it hung)"
    printf '%s' "$out" | grep -q "$dir/rank0.json: byte 0: empty file: no JSON trace in it" ||
      fail "no error naming the FIFO"
    # In a run directory: skipped (never opened), listed, the other rank read.
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
    needs sqlite3
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
    got=$(sqlite3 "$dir/out/chopper.sqlite" "SELECT severity, kind FROM diagnostics WHERE file = '$dir/c/rank1.json'")
    [ "$got" = "error|unreadable_file" ] || fail "diagnostics table: '$got'"
    ;;
  pzstd)
    # pzstd's output (a skippable frame before each zstd frame) was skipped as "not a trace".
    # Wanted: read like the plain file (info --json: link rate 0.875); so are frames written one
    # after another (cat a.zst b.zst).
    needs zstd pzstd  # Debian's zstd package has both
    mkdir -p "$dir/z"
    head -c 3000 "$data/mini_train.json" | zstd -q -c >"$dir/z/cat.json.zst"
    tail -c +3001 "$data/mini_train.json" | zstd -q -c >>"$dir/z/cat.json.zst"
    cp "$data/mini_train.json" "$dir/z/p.json"
    pzstd -q -p 2 "$dir/z/p.json" -o "$dir/z/pzstd.json.zst" && rm "$dir/z/p.json" ||
      fail "pzstd could not compress the fixture"
    for f in "$dir/z/cat.json.zst" "$dir/z/pzstd.json.zst"; do
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
  full_disk)
    # A full disk during analyze of a 16-rank run: an uncaught chopper::Error in a worker thread
    # ("cannot write spool file"), exit 134, the spool files left. A file-size limit (ulimit -f)
    # makes every write past it fail with EFBIG, as a full disk fails with ENOSPC (chopper ignores
    # SIGXFSZ, so the write error is what it sees). Wanted: exit 2, the error naming the file, no
    # temporary file left.
    "$chopper" synth -o "$dir/run" --ranks 16 >/dev/null 2>&1 || fail "synth"
    ls "$dir/run" | grep -q 'rank.*15' || fail "synth wrote no rank 15: $(ls "$dir/run")"
    mkdir -p "$dir/out"
    out=$( (ulimit -f 1024 && exec "$chopper" analyze "$dir/run" -o "$dir/out" -j 2) 2>&1)
    rc=$?
    echo "rc=$rc: $(printf '%s' "$out" | grep -v '^chopper: warning' | tail -n 3)"
    [ "$rc" = 2 ] || fail "exit status $rc, not 2"
    printf '%s' "$out" | grep -q "chopper analyze: $dir/out/.*: .*File too large" ||
      fail "no error naming the file that could not be written"
    printf '%s' "$out" | grep -q -e terminate -e Aborted && fail "it crashed: $out"
    left=$(ls -A "$dir/out" | grep -v '^\.chopper\.lock$' | tr '\n' ' ')
    [ -z "$left" ] || fail "left behind: $left"
    ;;
  signal_cleanup)
    # SIGTERM (or SIGINT) during analyze left its temporary files (hundreds of MB) in the output
    # directory until the next run. Wanted: removed by the signal handler; the process ends by
    # the signal (exit 143 for SIGTERM). (A background job of a script ignores SIGINT, so SIGINT
    # is checked by the unit test Hostile.SignalRemovesTrackedTemporaryFiles.)
    "$chopper" synth -o "$dir/run" --ranks 16 >/dev/null 2>&1 || fail "synth"
    for sig in TERM; do
      rm -rf "$dir/out"
      mkdir -p "$dir/out"
      "$chopper" analyze "$dir/run" -o "$dir/out" -j 1 >/dev/null 2>&1 &
      pid=$!
      seen=0
      for _ in $(seq 1 400); do
        if ls -A "$dir/out" | grep -q '^\.chopper-tmp-'; then
          seen=1
          break
        fi
        sleep 0.02
      done
      kill -"$sig" "$pid" 2>/dev/null
      wait "$pid"
      rc=$?
      left=$(ls -A "$dir/out" | grep '^\.chopper-tmp-' | tr '\n' ' ')
      echo "SIG$sig: temporary file seen: $seen, rc=$rc, left: '$left'"
      [ "$seen" = 1 ] || { echo "analyze ended before a temporary file appeared: not checked"; continue; }
      [ -z "$left" ] || fail "SIG$sig left: $left"
      [ "$rc" = 143 ] || fail "exit status $rc, not 143"
    done
    ;;
  rules_not_regular | manifest_not_regular)
    # --rules FIFO and --manifest FIFO blocked forever; --rules /dev/zero, /dev/urandom and
    # --manifest /dev/zero exited 0 with no rules and no word. Wanted: exit 2 at once, naming the
    # file.
    mkfifo "$dir/fifo.toml" || fail "mkfifo"
    for f in "$dir/fifo.toml" /dev/zero /dev/urandom; do
      if [ "$case_name" = rules_not_regular ]; then
        out=$(timeout 20 "$chopper" tree "$fixture" --rules "$f" 2>&1)
      else
        out=$(timeout 20 "$chopper" analyze "$fixture" -o "$dir/out" --manifest "$f" 2>&1)
      fi
      rc=$?
      echo "$f: rc=$rc: $out"
      [ "$rc" = 2 ] || fail "$f: exit status $rc, not 2 (124: it hung)"
      printf '%s' "$out" | grep -q "$f: byte 0: not a regular file (a" || fail "$f: not named"
    done
    [ ! -e "$dir/out/chopper.sqlite" ] || fail "analyze wrote its tables"
    # Above the 1 MiB limit: refused by its size.
    head -c 1048577 /dev/zero | tr '\0' '#' >"$dir/big.toml"
    if [ "$case_name" = rules_not_regular ]; then
      run tree "$fixture" --rules "$dir/big.toml"
    else
      run analyze "$fixture" -o "$dir/out" --manifest "$dir/big.toml"
    fi
    [ "$rc" = 2 ] || fail "big file: exit status $rc"
    printf '%s' "$out" | grep -q "big.toml: byte 0: 1048577 bytes, above the limit of 1 MiB" ||
      fail "big file: $out"
    ;;
  tree_escapes)
    # chopper tree wrote the ESC sequences and NUL bytes of operation names raw (a name could
    # recolour or retitle the terminal). Wanted: shown as \xHH.
    sed 's/"aten::mm"/"aten::mm\\u001b[31mRED\\u001b]0;pwned\\u0007\\u0000x"/' \
      "$data/mini_train.json" >"$dir/rank1.json"
    run tree "$dir/rank1.json"
    echo "rc=$rc"
    [ "$rc" = 0 ] || fail "exit status $rc: $out"
    "$chopper" tree "$dir/rank1.json" >"$dir/tree.txt" 2>&1
    grep -q "$(printf '\033')" "$dir/tree.txt" && fail "a raw ESC byte in the tree"
    [ "$(tr -d '\000' <"$dir/tree.txt" | wc -c)" = "$(wc -c <"$dir/tree.txt")" ] ||
      fail "a NUL byte in the tree"
    grep -q 'aten::mm\\x1b\[31mRED\\x1b]0;pwned\\x07\\x00x' "$dir/tree.txt" ||
      fail "the name is not shown escaped: $(grep aten "$dir/tree.txt")"
    ;;
  info_escapes)
    # chopper info printed a file name holding ESC raw; it also exited 1 when no file could be
    # read, where analyze and tree exit 2. Wanted: the name escaped (text; JSON escapes its own),
    # and exit 2 with nothing readable.
    esc=$(printf '\033')
    cp "$data/mini_train.json" "$dir/rank1-${esc}[2J.json"
    "$chopper" info "$dir" >"$dir/info.txt" 2>&1
    rc=$?
    [ "$rc" = 0 ] || fail "exit status $rc: $(cat "$dir/info.txt")"
    grep -q "$esc" "$dir/info.txt" && fail "a raw ESC byte in info's output"
    grep -q 'rank1-\\x1b\[2J.json' "$dir/info.txt" || fail "the file name is not shown escaped"
    printf 'not json' >"$dir/bad.json"
    run info "$dir/bad.json"
    echo "nothing readable: rc=$rc: $out"
    [ "$rc" = 2 ] || fail "nothing readable: exit status $rc, not 2"
    printf '%s' "$out" | grep -q "chopper info: no readable trace files" || fail "no message: $out"
    # An error naming such a file is escaped too.
    cp "$dir/bad.json" "$dir/bad-${esc}[2J.json"
    run info "$dir/bad-${esc}[2J.json"
    printf '%s' "$out" | grep -q "$esc" && fail "a raw ESC byte in an error"
    printf '%s' "$out" | grep -q 'bad-\\x1b\[2J.json: byte 0' || fail "error not escaped: $out"
    ;;
  split_runs_again)
    # --split-runs into a directory holding an earlier split left the old run-2/ beside the new
    # run-1/. Wanted: the run-<k> directories an earlier split wrote removed; a run-<k> that holds
    # a file analyze does not write is left, and said so.
    mkdir -p "$dir/u"
    cp "$data/mini_train.json" "$dir/u/a.json"
    sed 's/"baseTimeNanoseconds": 1700000000000000000/"baseTimeNanoseconds": 1700086400000000000/' \
      "$data/mini_train.json" >"$dir/u/b.json"
    run analyze "$dir/u" -o "$dir/out" --split-runs
    [ "$rc" = 0 ] || fail "first split: exit status $rc: $out"
    [ -d "$dir/out/run-2" ] || fail "the first split wrote no run-2"
    mkdir -p "$dir/out/run-3"
    echo mine >"$dir/out/run-3/notes.txt"
    rm "$dir/u/b.json"
    run analyze "$dir/u" -o "$dir/out" --split-runs
    echo "rc=$rc: $(printf '%s' "$out" | grep -e removed -e left)"
    [ "$rc" = 0 ] || fail "second split: exit status $rc: $out"
    [ -f "$dir/out/run-1/chopper.sqlite" ] || fail "no run-1"
    [ ! -e "$dir/out/run-2" ] || fail "the earlier split's run-2 is still there"
    [ -f "$dir/out/run-3/notes.txt" ] || fail "a directory holding the user's file was removed"
    printf '%s' "$out" | grep -q "removed $dir/out/run-2 (an earlier split's run)" ||
      fail "the removal is not said"
    printf '%s' "$out" | grep -q "left $dir/out/run-3" || fail "run-3 is not named"
    ;;
  max_files_traces_only)
    # --max-files counted entries that are not opened as traces (a FIFO, a directory named
    # x.json). Wanted: only the files read as traces count.
    mkdir -p "$dir/m/sub.json"
    for r in 0 1; do
      sed "s/\"rank\": 1, \"world_size\": 2/\"rank\": $r, \"world_size\": 2/" \
        "$data/mini_train.json" >"$dir/m/rank$r.json"
    done
    mkfifo "$dir/m/rank9.json" || fail "mkfifo"
    out=$(timeout 20 "$chopper" info "$dir/m" --max-files 2 2>&1)
    rc=$?
    echo "rc=$rc"
    [ "$rc" = 0 ] || fail "exit status $rc, not 0: $out"
    run info "$dir/m" --max-files 1
    [ "$rc" = 2 ] || fail "--max-files 1: exit status $rc, not 2"
    printf '%s' "$out" | grep -q "2 trace files found, more than the limit of 1 per run" ||
      fail "--max-files 1: $out"
    ;;
  output_is_directory)
    # report/timeline/compare --html with -o naming a directory said "cannot rename into place:
    # Success". Wanted: "is a directory", exit 2.
    mkdir -p "$dir/d"
    for args in "report $fixture -o $dir/d" "timeline $fixture -o $dir/d"; do
      # shellcheck disable=SC2086
      run $args
      echo "$args: rc=$rc: $out"
      [ "$rc" = 2 ] || fail "$args: exit status $rc, not 2"
      printf '%s' "$out" | grep -q "$dir/d: is a directory; name the file to write (-o FILE)" ||
        fail "$args: $out"
      printf '%s' "$out" | grep -q Success && fail "$args: says Success"
    done
    [ -z "$(ls -A "$dir/d")" ] || fail "wrote into the directory: $(ls -A "$dir/d")"
    ;;
  stdin_trace)
    # `-` (standard input) and <(zcat ...) could not be given as a trace. Wanted: read as a
    # stream, named "-" (link rate 0.875 as the file's own).
    for how in redirect pipe gzip; do
      case $how in
        redirect) out=$("$chopper" info --json - <"$data/mini_train.json" 2>&1) ;;
        pipe) out=$(cat "$data/mini_train.json" | "$chopper" info --json - 2>&1) ;;
        gzip) out=$(gzip -c "$data/mini_train.json" | "$chopper" info --json - 2>&1) ;;
      esac
      rc=$?
      echo "$how: rc=$rc"
      [ "$rc" = 0 ] || fail "$how: exit status $rc: $out"
      printf '%s' "$out" | grep -q '"link_rate": 0.875000' || fail "$how: not read: $out"
      printf '%s' "$out" | grep -q '"file": "-"' || fail "$how: not named -: $out"
    done
    # A FIFO named explicitly (what <(zcat ...) gives): read as it comes.
    mkfifo "$dir/trace.fifo" || fail "mkfifo"
    gzip -c "$data/mini_train.json" >"$dir/trace.fifo" &
    out=$(timeout 20 "$chopper" info --json "$dir/trace.fifo" 2>&1)
    rc=$?
    wait
    [ "$rc" = 0 ] || fail "FIFO: exit status $rc: $out"
    printf '%s' "$out" | grep -q '"link_rate": 0.875000' || fail "FIFO: not read: $out"
    # analyze reads standard input once (the run is loaded whole first).
    out=$(cat "$data/mini_train.json" | "$chopper" analyze - -o "$dir/out" 2>&1)
    rc=$?
    echo "analyze -: rc=$rc"
    [ "$rc" = 0 ] || fail "analyze -: exit status $rc: $out"
    [ -f "$dir/out/chopper.sqlite" ] || fail "analyze -: no database"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "ok ($case_name)"
