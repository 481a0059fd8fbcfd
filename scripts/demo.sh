#!/usr/bin/env bash
# demo.sh - end-to-end demonstration, run by `make demo` from the repository root
# after `make all`: generate a synthetic bright-field leukocyte video with ground
# truth (lt_synth, 640x480, 120 frames, seed 1), track it with ./leuktrack, and
# score the tracks against the truth (lt_eval). Then one part per further
# mode: vcm motion vectors on the same video; the tumour mode on a 320x240
# fluoroscopy-like clip with known motion (scripts/make_tumor_clip.py, python3
# with numpy), templates cut from frame 0, error against the known shifts;
# optical flow on the Yosemite pair from LT_DATA (default ../shared/data)
# against its ground truth, with the colour-coded PNG. Any failing step stops
# the demo with a message and a non-zero exit status.
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

step="tumour tracking"
echo
PY=${PY:-python3}
"$PY" -c 'import numpy' 2>/dev/null || PY=/usr/bin/python3
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "demo: tumour part skipped: no python3 with numpy for the clip generator"
  exit 0
fi
TOUT=$OUT/tumor
mkdir -p "$TOUT"
echo "demo: [tumor 1/2] generate $TOUT/clip.y4m (320x240, 48 frames, motion up to 10 rows / 6 columns) and $TOUT/truth.csv"
"$PY" scripts/make_tumor_clip.py "$TOUT/clip.y4m" "$TOUT/truth.csv" 320 240 48 10 6
echo "demo: [tumor 2/2] track two templates cut from frame 0"
rm -rf "$TOUT/overlay"
./leuktrack tumor "$TOUT/clip.y4m" --template-from 0:100,80,54,53 --template-from 0:200,150,45,40 \
  --shift 11,7 -o "$TOUT/track.csv" --plot "$TOUT/score.png" --overlay "$TOUT/overlay" --stats
head -6 "$TOUT/track.csv" | sed 's/^/  /'
awk -F, 'NR == FNR { if (FNR > 1) { ty[$1] = $2; tx[$1] = $3 } next }
  FNR > 1 { n++; e = sqrt(($9 - ty[$1]) ^ 2 + ($10 - tx[$1]) ^ 2); s += e; if (e > m) m = e
    if ($4 == (ty[$1] >= 0 ? int(ty[$1] + 0.5) : -int(-ty[$1] + 0.5)) && $5 == (tx[$1] >= 0 ? int(tx[$1] + 0.5) : -int(-tx[$1] + 0.5))) ok++ }
  END { printf "demo: tumour: %d frames, integer shift right in %d, sub-pixel position error mean %.3f px, max %.3f px\n", n, ok, s / n, m }' \
  "$TOUT/truth.csv" "$TOUT/track.csv"
echo "demo: tumour outputs in $TOUT/: clip.y4m, truth.csv (frame,dy,dx), track.csv, score.png + score_shift.png, overlay/"
