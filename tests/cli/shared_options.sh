#!/bin/sh
# analyze, report and compare take the shared analysis options (cli/common.hpp,
# add_analysis_options) with the same names, texts, defaults and checks: each option's --help
# entry is the same in the three commands (compare takes its own --tokens-per-step, one value per
# run, and no --telemetry or --counters). synth lists the same devices as they do (the device
# table's; tests/unit/test_cli_options.cpp checks that list against the table).
#   shared_options.sh CHOPPER
set -eu
bin=$1
shared="--tokens-per-step --device --device-spec --dtype --manifest --telemetry --counters --et
--no-hardware --telemetry-utc-offset --top --no-align --launch-delay-cutoff-ns --kernel-wait-ns"
fail=0

# The --help entry of option $2 in command $1: its line and the description lines below it.
entry() {
  "$bin" "$1" --help | awk -v opt="$2" '
    /^  -/ { n = split($1, names, ","); hit = 0
             for (i = 1; i <= n; ++i) if (names[i] == opt) hit = 1
             if (hit) print; next }
    /^    / { if (hit) print; next }
    { hit = 0 }'
}

for opt in $shared; do
  a=$(entry analyze "$opt")
  r=$(entry report "$opt")
  c=$(entry compare "$opt")
  if [ -z "$a" ]; then
    echo "FAIL: analyze has no $opt"; fail=1; continue
  fi
  if [ "$a" != "$r" ]; then
    printf 'FAIL: %s differs between analyze and report:\n%s\n%s\n' "$opt" "$a" "$r"; fail=1
  fi
  case $opt in
    --tokens-per-step) [ -n "$c" ] || { echo "FAIL: compare has no $opt"; fail=1; } ;;
    --telemetry | --counters | --et)
      [ -z "$c" ] || { echo "FAIL: compare has $opt (files named once belong to no one run)"; fail=1; } ;;
    *)
      if [ "$a" != "$c" ]; then
        printf 'FAIL: %s differs between analyze and compare:\n%s\n%s\n' "$opt" "$a" "$c"; fail=1
      fi ;;
  esac
done

# The device list in analyze's --device help ("... (h100, ..., mi250); ...") is synth's.
list=$(entry analyze --device | sed -n 's/.*(\([a-z0-9, ]*\)).*/\1/p')
slist=$(entry synth --device | sed -n 's/.*=h100 *//p')
if [ -z "$list" ] || [ "$list" != "$slist" ]; then
  printf 'FAIL: device lists differ: analyze "%s", synth "%s"\n' "$list" "$slist"; fail=1
fi
[ $fail -eq 0 ] && echo "the three commands share $(echo $shared | wc -w) analysis options; devices: $list"
exit $fail
