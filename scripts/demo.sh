#!/usr/bin/env bash
# demo.sh - end-to-end demonstration, run by `make demo` from the repository root
# after `make all`: generate a synthetic bright-field leukocyte video with ground
# truth (lt_synth, 640x480, 120 frames, seed 1), track it with ./leuktrack, and
# score the tracks against the truth (lt_eval). Any failing step stops the demo
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
echo "demo: [1/3] $step -> $OUT/sample.mkv, $OUT/truth.csv"
"$TOOLS/lt_synth" --width $W --height $H --frames 120 --seed 1 \
  --out "$OUT/sample.mkv" --truth "$OUT/truth.csv"

step="track with leuktrack"
echo "demo: [2/3] $step"
rm -rf "$OUT/overlay"
./leuktrack "$OUT/sample.mkv" -o "$OUT/tracks.csv" --summary "$OUT/summary.csv" \
  --overlay "$OUT/overlay" --stats

step="evaluate against the ground truth"
echo "demo: [3/3] $step"
[[ -s $OUT/tracks.csv ]] || { echo "demo: error: leuktrack wrote no $OUT/tracks.csv" >&2; exit 1; }
"$TOOLS/lt_eval" "$OUT/tracks.csv" "$OUT/truth.csv" --size ${W}x${H}

step="list outputs"
echo
echo "demo: outputs in $OUT/:"
echo "  sample.mkv   synthetic video (FFV1, lossless)"
echo "  truth.csv    ground truth: frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px"
echo "  tracks.csv   leuktrack tracks"
echo "  summary.csv  per-track summary (histogram PNG next to it)"
echo "  overlay/     frames with the tracked contours drawn"
ls -l "$OUT" | sed 's/^/  /'

# vcm: motion vectors of the same video (Vector Coherence Mapping), arrows
# drawn on 5 pairs, and a dense .flo field per pair
step="vcm motion vectors"
echo
echo "demo: [vcm] $step -> $OUT/vectors.csv, $OUT/vcm_overlay/, $OUT/vcm_flo/"
rm -rf "$OUT/vcm_overlay" "$OUT/vcm_flo"
./leuktrack vcm "$OUT/sample.mkv" --frames 0:6 -o "$OUT/vectors.csv" --overlay "$OUT/vcm_overlay" \
  --flo "$OUT/vcm_flo" --stats
[[ -s $OUT/vectors.csv ]] || { echo "demo: error: leuktrack vcm wrote no $OUT/vectors.csv" >&2; exit 1; }
awk -F, 'NR > 1 {n++; s += sqrt($6 * $6 + $7 * $7)} END {printf "demo: vcm: %d vectors over 5 pairs, mean |motion| %.2f px\n", n, n ? s / n : 0}' \
  "$OUT/vectors.csv"
echo "  vectors.csv   frame,t_s,point,x_px,y_px,dx_px,dy_px,score (frame = first frame of the pair)"
echo "  vcm_overlay/  arrows per pair;  vcm_flo/  dense field per pair (.flo)"
