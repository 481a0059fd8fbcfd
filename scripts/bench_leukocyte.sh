#!/usr/bin/env bash
# bench_leukocyte.sh - the leukocyte part of `make bench`: per-stage times and frames/s of the leukocyte mode,
# CPU backend with 1 and 2 threads and the CUDA backend when one is usable.
# Numbers, not pass/fail. The clip is the reference program's real frame,
# shifted 2 px per frame (scripts/make_bench_clips.py), tracked in the
# reference's 219x640 crop (--roi 0,110,640,219): about 44 cells per frame,
# the geometry of the published numbers. Reference points (issue 2): the
# published OpenMP program on this machine kind took 0.29 s for detection
# and 1.29 s per tracking frame for 36 cells on 1 thread (0.16 s / 0.72 s on 2).
# Then the same for a 1024x1024 clip (the frame tiled, ~213 cells in rows
# 0..559), and the scaling of the tracking time with the number of cells
# (that clip cut to 1024 x H) for the last backend listed.
# Then end to end on the same frames as .y4m and as the reference program's
# AVI rawvideo pal8, with the decode cost of each format.
# Env: LT (binary, default ./leuktrack), BUILD (lt_decode), FRAMES (default 60), BIG_FRAMES
# (1024x1024 frames, default 30), BACKENDS ("cpu:1 cpu:2 cuda:1" style),
# LT_DATA, PY (python with numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
BUILD=${BUILD:-build}
FRAMES=${FRAMES:-60}
BIG_FRAMES=${BIG_FRAMES:-30}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
REAL=$DATA/leukocyte/rodinia_testfile_1frame.avi
[ -f "$REAL" ] || { echo "bench: $REAL not found (set LT_DATA)" >&2; exit 3; }
"$PY" scripts/make_bench_clips.py "$REAL" "$T" "$FRAMES" "$BIG_FRAMES" 2
clip=$T/real640.y4m
ROI=0,110,640,219
big=$T/real1024.y4m
BIGROI=0,0,1024,560

stat() { awk -v s="$2" '$1==s {print $2}' "$1"; }
frames_of() { sed -nE 's/.* ([0-9]+) frames, .*/\1/p' "$1" | head -1; }
# ms per tracking frame of the last run (detection on frame 0 only), and its cells per frame
track_ms() { awk -v a="$(stat "$T/s.txt" track)" -v n="$(frames_of "$T/s.txt")" 'BEGIN{printf "%.3f", 1e3*a/(n-1)}'; }
track_cells() { awk -F, -v n="$(frames_of "$T/s.txt")" 'NR>1 && $1>0 {k++} END {printf "%.1f", k/(n-1)}' "$T/t.csv"; }
end2end() { sed -nE 's/.* s, ([0-9.]+) frames\/s/\1/p' "$T/s.txt"; }

configs=(cpu:1 cpu:2)
if [ -n "${BACKENDS:-}" ]; then read -r -a configs <<<"$BACKENDS"
elif "$LT" --backend cuda --frames 0:1 "$clip" -o /dev/null 2>/dev/null; then configs+=(cuda:1); fi

echo "leuktrack benchmark, $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "clip: the real frame shifted 2 px/frame, 640x480, $FRAMES frames, ROI $ROI"
printf '%-6s %-7s %12s %12s %14s %7s %9s %12s %9s\n' backend threads det_crop_ms det_full_ms track_ms/frm cells ms/cell end2end_fps mgvf_it
for c in "${configs[@]}"; do
  be=${c%:*} th=${c#*:}
  run() { "$LT" "$clip" --backend "$be" --threads "$th" -o "$T/t.csv" --stats="$T/s.txt" "$@" 2>/dev/null; }
  run --frames 0:1 --roi $ROI
  crop=$(awk -v a="$(stat "$T/s.txt" detect)" -v b="$(stat "$T/s.txt" refine)" 'BEGIN{printf "%.2f", 1e3*(a+b)}')
  run --frames 0:1
  full=$(awk -v a="$(stat "$T/s.txt" detect)" -v b="$(stat "$T/s.txt" refine)" 'BEGIN{printf "%.2f", 1e3*(a+b)}')
  # tracking alone: detection on frame 0 only
  run --roi $ROI --detect-every 1000000
  trk=$(track_ms) cells=$(track_cells)
  per=$(awk -v t="$trk" -v k="$cells" 'BEGIN{printf "%.3f", (k > 0) ? t / k : 0}')
  it=$(sed -nE 's/.*mean MGVF iterations ([0-9.]+).*/\1/p' "$T/s.txt")
  # end to end with the defaults (decode, detection every 10 frames, CSV)
  run --roi $ROI
  fps=$(end2end)
  printf '%-6s %-7s %12s %12s %14s %7s %9s %12s %9s\n' "$be" "$th" "$crop" "$full" "$trk" "$cells" "$per" "$fps" "$it"
done
echo "det_crop: detection + refinement of the reference's 219x640 crop; det_full: the whole 640x480 frame"
echo "reference (published OpenMP program, this machine kind): det_crop 290 ms (1 thread) / 160 ms (2);"
echo "  tracking 1290 ms/frame (1) / 720 ms/frame (2) for 36 cells = 35.8 / 20.0 ms per cell"
echo "reference (published CUDA program, H100): detection 14 ms, tracking 7.6 ms/frame for 36 cells (0.21 ms/cell)"

# The same frames in two input formats: grey .y4m and the reference program's
# own AVI rawvideo pal8 (bottom-up, grey palette). Three runs each, min-max.
echo
echo "end to end by input format: the same $FRAMES frames, defaults, ROI $ROI; 5 runs each (min-max)"
printf '%-10s %-7s %-7s %16s %18s %24s\n' input backend threads decode_ms/frm end2end_fps end2end_fps_after_start
steady() { sed -nE 's/.*start-up excluded\): ([0-9.]+) frames.*/\1/p' "$T/s.txt"; }
mm() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }
for c in "${configs[@]}"; do
  be=${c%:*} th=${c#*:}
  for input in "y4m:$T/real640.y4m" "avi-pal8:$T/real640_pal8.avi"; do
    name=${input%%:*} file=${input#*:}
    bo=$([ "$be" = cuda ] && echo --bytes-only)
    dec=$(for k in 1 2 3; do "$BUILD/tools/lt_decode" "$file" --quiet $bo 2>&1 >/dev/null | sed -nE 's/.*, ([0-9.]+) ms\/frame/\1/p'; done | mm)
    e2e="" st=""
    for k in 1 2 3 4 5; do
      "$LT" "$file" --backend "$be" --threads "$th" -o "$T/t.csv" --stats="$T/s.txt" --roi $ROI 2>/dev/null
      e2e="$e2e $(end2end)" st="$st $(steady)"
    done
    printf '%-10s %-7s %-7s %16s %18s %24s\n' "$name" "$be" "$th" "$dec" "$(tr ' ' '\n' <<<"$e2e" | grep . | mm)" \
      "$(tr ' ' '\n' <<<"$st" | grep . | mm)"
  done
done
echo "decode_ms/frm: the video layer alone (decode thread and conversion; lt_decode): floats and bytes for cpu,"
echo "  bytes only for cuda (what the CUDA backend reads); end2end_fps_after_start: frames/s after the first frame"

echo
echo "clip: the real frame tiled, 1024x1024, $BIG_FRAMES frames, ROI $BIGROI"
printf '%-6s %-7s %12s %14s %7s %9s %12s\n' backend threads det_ms track_ms/frm cells ms/cell end2end_fps
for c in "${configs[@]}"; do
  be=${c%:*} th=${c#*:}
  run() { "$LT" "$big" --backend "$be" --threads "$th" -o "$T/t.csv" --stats="$T/s.txt" "$@" 2>/dev/null; }
  run --frames 0:1 --roi $BIGROI
  det=$(awk -v a="$(stat "$T/s.txt" detect)" -v b="$(stat "$T/s.txt" refine)" 'BEGIN{printf "%.2f", 1e3*(a+b)}')
  run --roi $BIGROI --detect-every 1000000
  trk=$(track_ms) cells=$(track_cells)
  per=$(awk -v t="$trk" -v k="$cells" 'BEGIN{printf "%.4f", (k > 0) ? t / k : 0}')
  run --roi $BIGROI
  printf '%-6s %-7s %12s %14s %7s %9s %12s\n' "$be" "$th" "$det" "$trk" "$cells" "$per" "$(end2end)"
done

c=${configs[${#configs[@]}-1]}
be=${c%:*} th=${c#*:}
echo
echo "scaling with the number of cells ($be, $th threads): the 1024x1024 clip cut to 1024 x H, detection on frame 0 only"
printf '%-6s %7s %14s %9s\n' H cells track_ms/frm ms/cell
for H in 70 140 280 560 1024; do
  "$LT" "$big" --backend "$be" --threads "$th" --roi 0,0,1024,$H --detect-every 1000000 -o "$T/t.csv" --stats="$T/s.txt" 2>/dev/null
  trk=$(track_ms) cells=$(track_cells)
  printf '%-6s %7s %14s %9s\n' "$H" "$cells" "$trk" "$(awk -v t="$trk" -v k="$cells" 'BEGIN{printf "%.4f", (k > 0) ? t / k : 0}')"
done
