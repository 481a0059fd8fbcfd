#!/usr/bin/env bash
# test_vcm_cli.sh - `leuktrack vcm` end to end: synthetic videos with known
# motion made here (tests/vcm/make_video.py, numpy: y4m, so that it runs
# where the ffmpeg CLI is absent; the same frames as a PNG sequence, as a
# list of images and, when the ffmpeg CLI exists, as FFV1 MKV must give the
# same vectors), Yosemite 9->10 against its ground truth at the points, the
# CSV, --overlay, --flo, --stats, --temporal, bad inputs with their exit
# status and message, --threads 1 = 2, and CUDA = CPU when a GPU is usable.
# Bounds (measured on this build: translation (1.25,-0.75) px/frame mean EPE
# 0.082 px; rotation 1 deg/frame about the centre, motion up to 3.4 px, 0.082
# px; Yosemite 9->10 non-sky 0.306 px as in vcm.c):
#   translation mean EPE <= 0.10 px, rotation <= 0.15 px, Yosemite <= 0.35 px.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LT=${LT_BIN:-./leuktrack}
DATA=${LT_DATA:-../shared/data}
# the first python with numpy: $PYTHON, Debian's /usr/bin/python3, python3
PY=
for p in ${PYTHON:-} /usr/bin/python3 python3; do "$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }; done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh

le() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a <= b)}'; }
oracle() { "$PY" tests/vcm/oracle.py "$@" 2>&1 | awk '/^RESULT/ {$1 = ""; print substr($0, 2); next} {print "ORACLE: " $0 > "/dev/stderr"}'; }
HDR='frame,t_s,point,x_px,y_px,dx_px,dy_px,score'

if [ -z "$PY" ]; then
  fail "vcm synthetic videos" "no python3 with numpy (scripts/install-deps.sh installs python3-numpy)"
  exit 1
fi
gen() { "$PY" tests/vcm/make_video.py "$@" || fail "make_video $*" "exit $?"; }
gen "$T/shift.y4m" 320 240 5 shift 1.25 -0.75
gen "$T/rot.y4m" 320 240 4 rot 1.0
gen "$T/one.y4m" 64 48 1 shift 1 0
gen "$T/tiny.y4m" 4 4 3 shift 1 0
gen "$T/small.y4m" 16 12 3 shift 1 0
gen "$T/mid.y4m" 48 40 3 shift 1.5 0.5
gen "$T/flat.y4m" 64 48 3 flat

# --- translation: CSV shape and accuracy ---
"$LT" vcm "$T/shift.y4m" -o "$T/shift.csv" 2>"$T/err"; rc=$?
if [ $rc -eq 0 ] && [ "$(head -1 "$T/shift.csv")" = "$HDR" ]; then pass "vcm csv header $HDR"
else fail "vcm csv header" "rc=$rc $(head -1 "$T/shift.csv" 2>/dev/null) $(cat "$T/err")"; fi
# frame = the pair's first frame: 0..3 for 5 frames; at most 32*32*2 rows per pair; point ascending
# within 0..2047 (the backend's index; --evidence may leave gaps)
awk -F, 'NR > 1 {if (($1 in last) && $3 <= last[$1]) bad = 1; last[$1] = $3; n[$1]++; if ($3 < 0 || $3 > 2047) bad = 1}
  END {for (f in n) {k++; if (f < 0 || f > 3 || n[f] < 500 || n[f] > 2048) bad = 1} exit bad || k != 4}' "$T/shift.csv" \
  && pass "vcm rows: pairs 0..3 (frame = first frame of the pair), 500..2048 points each, point ascending in 0..2047" \
  || fail "vcm rows" "$(cut -d, -f1 "$T/shift.csv" | sort | uniq -c | tr '\n' ' ')"
read -r mean max n <<<"$(oracle shift "$T/shift.csv" 1.25 -0.75)"
if [ -n "${mean:-}" ] && le "$mean" 0.10; then pass "translation (1.25,-0.75) px: mean EPE $mean px <= 0.10 over $n vectors (max $max)"
else fail "translation accuracy" "mean EPE ${mean:-?} > 0.10"; fi

# --- rotation ---
"$LT" vcm "$T/rot.y4m" -o "$T/rot.csv" 2>"$T/err" || fail "vcm rotation run" "$(cat "$T/err")"
read -r mean max n vmax <<<"$(oracle rot "$T/rot.csv" 320 240 1.0)"
if [ -n "${mean:-}" ] && le "$mean" 0.15; then pass "rotation 1 deg/frame (motion up to $vmax px): mean EPE $mean px <= 0.15 over $n vectors"
else fail "rotation accuracy" "mean EPE ${mean:-?} > 0.15"; fi

# --- the same frames through other inputs: PNG sequence (image2), image list, FFV1 ---
oracle topng "$T/shift.y4m" "$T/f" >/dev/null
"$LT" vcm "$T/f_%03d.png" -o "$T/seq.csv" 2>"$T/err"
cmp -s <(cut -d, -f1,3- "$T/seq.csv") <(cut -d, -f1,3- "$T/shift.csv") \
  && pass "PNG sequence (f_%03d.png) gives the y4m's vectors" || fail "PNG sequence" "$(diff <(cut -d, -f1,3- "$T/seq.csv") <(cut -d, -f1,3- "$T/shift.csv") | head -3) $(head -3 "$T/err")"
"$LT" vcm "$T/f_000.png" "$T/f_001.png" "$T/f_002.png" -o "$T/list.csv" 2>"$T/err"
cmp -s <(cut -d, -f1,3- "$T/list.csv") <(awk -F, '$1 == "frame" || $1 < 2' "$T/shift.csv" | cut -d, -f1,3-) \
  && pass "three images given as a list: pairs 0 and 1 of the video" || fail "image list" "$(head -3 "$T/err")"
if command -v ffmpeg >/dev/null; then
  ffmpeg -loglevel error -y -i "$T/shift.y4m" -c:v ffv1 "$T/shift.mkv" && "$LT" vcm "$T/shift.mkv" -o "$T/mkv.csv" 2>/dev/null
  cmp -s "$T/mkv.csv" "$T/shift.csv" && pass "FFV1 MKV of the same frames: identical CSV" || fail "FFV1 MKV" "CSV differs"
else
  skip "FFV1 MKV input" "no ffmpeg CLI"
fi

# --- Yosemite 9 -> 10, an image pair, against the ground truth at the points ---
Y=$DATA/flow/yosemite
if [ -r "$Y/yos9.pgm" ] && [ -r "$Y/yos9_to_yos10_gt.flo" ] && "$PY" -c 'import cv2' 2>/dev/null; then
  "$LT" vcm "$Y/yos9.pgm" "$Y/yos10.pgm" -o "$T/y.csv" 2>"$T/err" || fail "yosemite run" "$(cat "$T/err")"
  read -r mean max n <<<"$(oracle gt "$T/y.csv" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png")"
  if [ -n "${mean:-}" ] && le "$mean" 0.35; then pass "Yosemite 9->10 non-sky: mean EPE $mean px <= 0.35 over $n vectors"
  else fail "Yosemite accuracy" "mean EPE ${mean:-?} > 0.35"; fi
  if [ -x "$BUILD/tools/lt_vcm_dump" ]; then # the core has no --evidence filter
    "$BUILD/tools/lt_vcm_dump" "$Y/yos9.pgm" "$Y/yos10.pgm" >"$T/dump.csv"
    "$LT" vcm --evidence 0 "$Y/yos9.pgm" "$Y/yos10.pgm" -o "$T/y0.csv" 2>/dev/null
    cmp -s <(cut -d, -f4- "$T/y0.csv" | tail -n +2) <(tail -n +2 "$T/dump.csv") \
      && pass "the mode's vectors = the core's (lt_vcm_dump) on Yosemite" || fail "mode vs core" "vectors differ"
  else
    skip "mode vs core" "$BUILD/tools/lt_vcm_dump not built"
  fi
  # temporal coherence: 8 -> 9 -> 10 with --temporal 0.5; the 9->10 pair improves (vcm.c: 0.223 vs 0.306)
  "$LT" vcm "$Y/yos8.pgm" "$Y/yos9.pgm" "$Y/yos10.pgm" --temporal 0.5 -o "$T/yt.csv" 2>"$T/err"
  awk -F, 'NR == 1 || $1 == 1' "$T/yt.csv" >"$T/yt1.csv"
  read -r tmean tmax tn <<<"$(oracle gt "$T/yt1.csv" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png")"
  if [ -n "${tmean:-}" ] && le "$tmean" "$(awk -v m="$mean" 'BEGIN {print m - 0.03}')"; then
    pass "--temporal 0.5 (8->9->10): 9->10 mean EPE $tmean px, better than $mean without"
  else fail "--temporal" "mean EPE ${tmean:-?} not below ${mean:-?} - 0.03"; fi
else
  skip "Yosemite ground truth" "data or $PY's cv2 missing"
fi

# --- --evidence on leukocyte-like clips with known motion (cells rolling on a
# noisy static background): without it most sub-windows give a chance vector
# from background noise. lt_synth2's "texture" family was used to pick the
# 9x9 window and A = 0.7 (with rim, clutter, fluo, drift); lt_synth (the demo's
# generator) was held out. Measured (320x240, 8 frames): lt_synth2 texture
# seed 2: cell vectors 1848 -> 1785 kept, their mean EPE 0.337 -> 0.149 px,
# background vectors 11597 -> 474, vectors > 7 px 51.6% -> 2.4%; lt_synth
# seed 4: cells 2308 -> 2145, 0.146 -> 0.099 px, background 11440 -> 1497,
# > 7 px 8.4% -> 0.05%. Bounds: with the default, >= 90% of the cell vectors
# kept, background vectors <= 15% of those without, > 7 px <= 5%; without
# (--evidence 0), the texture clip's > 7 px fraction >= 30% (the problem).
if [ -x "$BUILD/tools/lt_synth2" ] && [ -x "$BUILD/tools/lt_synth" ]; then
  "$BUILD/tools/lt_synth2" --family texture --out "$T/l2.y4m" --truth "$T/l2.csv" --width 320 --height 240 --frames 8 \
    --seed 2 --cells 12 >/dev/null 2>&1
  "$BUILD/tools/lt_synth" --width 320 --height 240 --frames 8 --seed 4 --cells 12 --out "$T/l1.y4m" --truth "$T/l1.csv" \
    >/dev/null 2>&1
  for clip in l2 l1; do
    "$LT" vcm --evidence 0 "$T/$clip.y4m" -o "$T/${clip}_off.csv" 2>/dev/null
    "$LT" vcm "$T/$clip.y4m" -o "$T/${clip}_on.csv" 2>/dev/null
    read -r cn0 ce0 bn0 bw0 lf0 <<<"$(oracle cells "$T/${clip}_off.csv" "$T/$clip.csv")"
    read -r cn1 ce1 bn1 bw1 lf1 <<<"$(oracle cells "$T/${clip}_on.csv" "$T/$clip.csv")"
    msg="$clip: cell vectors ${cn0:-?} -> ${cn1:-?} (mean EPE ${ce0:-?} -> ${ce1:-?} px), background ${bn0:-?} -> ${bn1:-?}, > 7 px ${lf0:-?} -> ${lf1:-?}"
    if [ -n "${lf1:-}" ] && le "$(awk -v a="$cn0" 'BEGIN {print 0.9 * a}')" "$cn1" && le "$bn1" "$(awk -v a="$bn0" 'BEGIN {print 0.15 * a}')" &&
      le "$lf1" 0.05 && { [ $clip = l1 ] || le 0.30 "$lf0"; }; then
      pass "--evidence 0.7 (default) on $msg"
    else fail "--evidence" "$msg"; fi
  done
else
  skip "--evidence on leukocyte-like clips" "$BUILD/tools/lt_synth2 or lt_synth not built"
fi

# --- --overlay, --flo, --stats ---
"$LT" vcm "$T/shift.y4m" -o "$T/o.csv" --overlay "$T/ov" --flo "$T/flo" --stats 2>"$T/stats"; rc=$?
n=$(ls "$T/ov" 2>/dev/null | grep -c '^frame_00000[0-3]\.png$')
if [ $rc -eq 0 ] && [ "$n" -eq 4 ] && [ "$(ls "$T/ov" | wc -l)" -eq 4 ] && [ "$(oracle png "$T/ov/frame_000002.png" 320 240)" = ok ]; then
  pass "--overlay: one 320x240 RGB/palette PNG per pair, frame_000000..3.png"
else fail "--overlay" "rc=$rc $n PNGs: $(ls "$T/ov" 2>/dev/null | head -5 | tr '\n' ' ')"; fi
n=$(ls "$T/flo" 2>/dev/null | grep -c '^frame_00000[0-3]\.flo$')
read -r fmean fmax fn known <<<"$(oracle flo "$T/flo/frame_000001.flo" 320 240 1.25 -0.75)"
if [ "$n" -eq 4 ] && [ -n "${fmean:-}" ] && le "$fmean" 0.15 && le 0.9 "$known"; then
  pass "--flo: 4 readable .flo (320x240); dense field mean EPE $fmean px <= 0.15, $known of pixels known"
else fail "--flo" "$n files, mean EPE ${fmean:-?}, known ${known:-?}"; fi
cmp -s "$T/o.csv" "$T/shift.csv" && pass "--overlay/--flo/--stats leave the CSV unchanged" || fail "csv with outputs" "differs"
miss=""
for st in points correlation accumulation output; do grep -qE "^$st +[0-9]" "$T/stats" || miss="$miss $st"; done
[ -z "$miss" ] && grep -q 'ms/pair' "$T/stats" && pass "--stats: points, correlation, accumulation, output (ms/pair)" \
  || fail "--stats" "missing:$miss $(head -12 "$T/stats")"
"$LT" vcm "$T/shift.y4m" -o - 2>/dev/null | cmp -s - "$T/shift.csv" && pass "-o - writes the same CSV to stdout" || fail "-o -" "differs"

# --- determinism ---
"$LT" vcm --threads 1 "$T/rot.y4m" -o "$T/t1.csv" 2>/dev/null
"$LT" vcm --threads 2 "$T/rot.y4m" -o "$T/t2.csv" 2>/dev/null
[ -s "$T/t1.csv" ] && cmp -s "$T/t1.csv" "$T/t2.csv" && pass "identical CSV for --threads 1 and --threads 2" || fail "thread determinism" "differs"

# --- bad inputs and options ---
expect "single-frame video -> 3" 3 "only one frame" -- "$LT" vcm "$T/one.y4m" -o "$T/bad.csv"
expect "4x4 frames, 5x5 patch -> 3" 3 "smaller than the 5x5 correlation patch" -- "$LT" vcm "$T/tiny.y4m" -o "$T/bad.csv"
expect "grid finer than the frame -> 2" 2 "is finer than the 16x12 frames" -- "$LT" vcm "$T/small.y4m" --grid 20x4 -o "$T/bad.csv"
[ ! -e "$T/bad.csv" ] && pass "failed runs leave no output file" || fail "failed runs" "bad.csv exists"
# frames smaller than the search area: the search is clamped to the frame (vcm.h)
"$LT" vcm "$T/mid.y4m" --grid 4 -o "$T/mid.csv" 2>"$T/err"; rc=$?
read -r mean max n <<<"$(oracle shift "$T/mid.csv" 1.5 0.5 2>/dev/null)"
[ $rc -eq 0 ] && [ -n "${mean:-}" ] && le "$mean" 0.5 && pass "48x40 frames < 64x64 search: clamped, $n vectors, mean EPE $mean px" \
  || fail "frames smaller than the search" "rc=$rc mean=${mean:-?} $(cat "$T/err")"
# uniform frames: no points, no rows, one warning, success
"$LT" vcm "$T/flat.y4m" -o "$T/flat.csv" 2>"$T/err"; rc=$?
[ $rc -eq 0 ] && [ "$(cat "$T/flat.csv")" = "$HDR" ] && [ "$(grep -c 'no interest points' "$T/err")" -eq 1 ] && ! grep -q 'error:' "$T/err" \
  && pass "uniform frames: exit 0, header only, one warning" || fail "uniform frames" "rc=$rc $(cat "$T/err") $(wc -l <"$T/flat.csv")"
for bad in "--grid 0:'0' for --grid" "--grid 3x:'3x' for --grid" "--grid 5000:'5000' for --grid" "--grid 4x-2:'4x-2' for --grid" \
  "--points-per-cell 0:'0' for --points-per-cell" "--points-per-cell 17:'17' for --points-per-cell" \
  "--patch 4:'4' for --patch" "--patch 33:'33' for --patch" "--search 63:'63' for --search" "--search 130:'130' for --search" \
  "--coherence-radius -1:'-1' for --coherence-radius" "--coherence-radius 5000:'5000' for --coherence-radius" \
  "--temporal -0.5:'-0.5' for --temporal" "--temporal nan:'nan' for --temporal" \
  "--evidence 1.5:'1.5' for --evidence" "--evidence -0.1:'-0.1' for --evidence" "--arrow-scale -2:'-2' for --arrow-scale"; do
  opt=${bad%%:*}
  expect "vcm $opt -> 2" 2 "invalid value ${bad#*:}" -- "$LT" vcm $opt "$T/shift.y4m" -o "$T/bad.csv"
done
expect "vcm without input -> 2" 2 "no input video given" -- "$LT" vcm
expect "vcm --roi (a leukocyte option) -> 2" 2 "belongs to mode 'leukocyte'" -- "$LT" vcm --roi 0,0,5,5 "$T/shift.y4m"

# --- CUDA = CPU ---
if "$LT" vcm --backend cuda "$T/shift.y4m" -o "$T/cuda.csv" 2>"$T/err"; then
  cmp -s "$T/cuda.csv" "$T/shift.csv" && pass "CUDA = CPU: identical CSV (translation)" || fail "CUDA vs CPU" "$(diff "$T/cuda.csv" "$T/shift.csv" | head -3)"
  "$LT" vcm --backend cuda "$T/rot.y4m" -o "$T/cuda_rot.csv" 2>/dev/null
  cmp -s "$T/cuda_rot.csv" "$T/t1.csv" && pass "CUDA = CPU: identical CSV (rotation)" || fail "CUDA vs CPU rotation" "differs"
  if [ -r "$Y/yos8.pgm" ]; then
    "$LT" vcm --backend cuda "$Y/yos8.pgm" "$Y/yos9.pgm" "$Y/yos10.pgm" --temporal 0.5 -o "$T/cyt.csv" 2>/dev/null
    "$LT" vcm --backend cpu "$Y/yos8.pgm" "$Y/yos9.pgm" "$Y/yos10.pgm" --temporal 0.5 -o "$T/pyt.csv" 2>/dev/null
    cmp -s "$T/cyt.csv" "$T/pyt.csv" && pass "CUDA = CPU: identical CSV (Yosemite 8-9-10, --temporal 0.5)" || fail "CUDA vs CPU temporal" "differs"
  fi
else
  skip "vcm CUDA = CPU" "--backend cuda unusable: $(grep -o 'error:.*' "$T/err" | head -1)"
fi
[ "$failed" -eq 0 ]
