#!/usr/bin/env bash
# demo.sh - end-to-end demonstration, run by `make demo` from the repository root
# after `make all`: generate a synthetic bright-field leukocyte video with ground
# truth (lt_synth, 640x480, 120 frames, seed 1), track it with ./leuktrack, and
# score the tracks against the truth (lt_eval); then optical flow (flow mode) on
# the Yosemite pair 9->10 from LT_DATA (default ../shared/data) against its ground
# truth, with the colour-coded PNG. Any failing step stops the demo
# with a message and a non-zero exit status.
set -euo pipefail

BUILD=${BUILD:-build}
TOOLS=$BUILD/tools
OUT=data/sample
W=640
H=480

step="setup"
trap 'rc=$?; echo "demo: error: step \"$step\" failed (exit status $rc)" >&2; exit $rc' ERR

for bin in ./leuktrack "$TOOLS/lt_synth" "$TOOLS/lt_eval"; do
  if [[ ! -x $bin ]]; then
    echo "demo: error: $bin not found or not executable; run 'make all' first" >&2
    exit 1
  fi
done
mkdir -p "$OUT"

step="generate synthetic video"
echo "demo: [1/4] $step -> $OUT/sample.mkv, $OUT/truth.csv"
"$TOOLS/lt_synth" --width $W --height $H --frames 120 --seed 1 \
  --out "$OUT/sample.mkv" --truth "$OUT/truth.csv"

step="track with leuktrack"
echo "demo: [2/4] $step"
rm -rf "$OUT/overlay"
./leuktrack "$OUT/sample.mkv" -o "$OUT/tracks.csv" --summary "$OUT/summary.csv" \
  --overlay "$OUT/overlay" --stats

step="evaluate against the ground truth"
echo "demo: [3/4] $step"
[[ -s $OUT/tracks.csv ]] || { echo "demo: error: leuktrack wrote no $OUT/tracks.csv" >&2; exit 1; }
"$TOOLS/lt_eval" "$OUT/tracks.csv" "$OUT/truth.csv" --size ${W}x${H}

step="optical flow of the Yosemite pair"
YOS=${LT_DATA:-../shared/data}/flow/yosemite
if [[ -f $YOS/yos9.pgm ]]; then
  echo "demo: [4/4] $step (CLG, CPU or CUDA) against its ground truth, non-sky pixels"
  ./leuktrack flow "$YOS/yos9.pgm" "$YOS/yos10.pgm" -o "$OUT/flow.flo" --color \
    --ground-truth "$YOS/yos9_to_yos10_gt.flo" --mask "$YOS/yos9_nonsky_mask.png" >"$OUT/flow_eval.csv"
  awk -F, 'NR == 2 { printf "demo: flow AEE %.3f px, AAE %.2f deg over %d pixels (OpenCV TV-L1: 0.127 px / 2.39 deg)\n", $2, $3, $4 }' \
    "$OUT/flow_eval.csv"
else
  echo "demo: [4/4] $step: skipped, $YOS not found (set LT_DATA)"
fi

step="list outputs"
echo
echo "demo: outputs in $OUT/:"
echo "  sample.mkv   synthetic video (FFV1, lossless)"
echo "  truth.csv    ground truth: frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px"
echo "  tracks.csv   leuktrack tracks"
echo "  summary.csv  per-track summary (histogram PNG next to it)"
echo "  overlay/     frames with the tracked contours drawn"
echo "  flow.flo     Yosemite 9->10 optical flow (Middlebury .flo), flow.png its colour code"
ls -l "$OUT" | sed 's/^/  /'
