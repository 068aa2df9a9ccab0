#!/usr/bin/env bash
# Screenshots of the HTML report's figures for the documentation (docs/img/*.png, linked from
# docs/report.md): a synthetic run of 64 GPUs on 8 nodes with telemetry, counters and a
# clock-capped straggler (rank 5), analysed with --html, each figure rendered alone by headless
# Chromium and cropped to its box (tests/browser/report_layout.py --screenshots, which also checks
# the layout), then rewritten as palette PNGs (scripts/png_palette.py, standard library only).
#
#   scripts/report_screenshots.sh [CHOPPER [OUTDIR [FIGURE-ID ...]]]
#
# CHOPPER defaults to build/src/chopper, OUTDIR to docs/img, the figures to the report's newer
# ones (below). Needs chromium (apt-get install chromium) and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
chopper=${1:-$here/build/src/chopper}
out=${2:-$here/docs/img}
shift $(( $# > 2 ? 2 : $# ))
figs=("$@")
if [ ${#figs[@]} -eq 0 ]; then
  figs=(fig-top-kernels fig-roofline fig-kernel-violins fig-power-heatmap fig-memory
        fig-power-burst fig-links fig-waterfall fig-counters)
fi
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "report_screenshots: chromium not found (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$chopper" synth -o "$tmp/run" --ranks 64 --layers 1 --iterations 2 --straggler-rank 5 \
  --straggler-clock 0.7 >/dev/null
"$chopper" analyze "$tmp/run" -o "$tmp/out" --html "$tmp/report.html" -j 2 >/dev/null
python3 "$here/tests/browser/report_layout.py" "$chromium" "$tmp/report.html" "$tmp/check" \
  --screenshots "$out" "${figs[@]}"
for f in "${figs[@]}"; do [ -f "$out/$f.png" ] && python3 "$here/scripts/png_palette.py" "$out/$f.png"; done
total=0
for f in "${figs[@]}"; do [ -f "$out/$f.png" ] && total=$((total + $(stat -c %s "$out/$f.png"))); done
echo "report_screenshots: ${#figs[@]} figures, $((total / 1024)) KiB in all, in $out"
