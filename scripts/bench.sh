#!/usr/bin/env bash
# bench.sh - `make bench`: per-stage times and frames/s of the leukocyte mode
# on a synthetic 640x480 clip with ~36 cells (the real frame's geometry),
# CPU backend with 1 and 2 threads, and the CUDA backend when one is usable.
# Prints a table; numbers, not pass/fail. Reference points (issue 2): the
# published algorithm's OpenMP program on this machine kind took 0.29 s for
# detection (219x640 crop) and 1.29 s per tracking frame on 1 thread
# (0.16 s / 0.72 s on 2 threads).
# Env: BUILD, LT (binary, default ./leuktrack), FRAMES (default 60),
# BENCH_CLIP (use this clip instead of generating one), BACKENDS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LT=${LT:-./leuktrack}
FRAMES=${FRAMES:-60}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
clip=${BENCH_CLIP:-}
if [ -z "$clip" ]; then
  clip=$T/bench.mkv
  "$BUILD/tools/lt_synth" --width 640 --height 480 --frames "$FRAMES" --cells 36 --seed 11 \
    --out "$clip" --truth "$T/truth.csv" >/dev/null
fi
# field of a stats line: stage total_s
stat() { awk -v s="$2" '$1==s {print $2}' "$1"; }
frames_of() { sed -nE 's/.* ([0-9]+) frames, .*/\1/p' "$1" | head -1; }

configs=("cpu 1" "cpu 2")
if [ -n "${BACKENDS:-}" ]; then configs=(); for b in $BACKENDS; do configs+=("$b"); done
elif "$LT" --backend cuda --frames 0:1 "$clip" -o /dev/null 2>/dev/null; then configs+=("cuda 1"); fi

echo "leuktrack benchmark: $(basename "$clip"), $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
REAL=${LT_DATA:-../shared/data}/leukocyte/rodinia_testfile_1frame.avi
printf '%-7s %-7s %12s %12s %14s %8s %12s %12s %10s\n' backend threads "det_crop_ms" "det_full_ms" "track_ms/frm" "cells" "ms/cell" "end2end_fps" "mgvf_iter"
for c in "${configs[@]}"; do
  set -- $c
  be=$1 th=$2
  # detection alone: the first frame of the clip
  "$LT" "$clip" --backend "$be" --threads "$th" --frames 0:1 -o /dev/null --stats="$T/d.txt" 2>/dev/null
  det=$(awk -v a="$(stat "$T/d.txt" detect)" -v b="$(stat "$T/d.txt" refine)" 'BEGIN{printf "%.2f", 1e3*(a+b)}')
  crop=-
  if [ -f "$REAL" ]; then
    "$LT" "$REAL" --backend "$be" --threads "$th" --roi 0,110,640,219 -o /dev/null --stats="$T/c.txt" 2>/dev/null
    crop=$(awk -v a="$(stat "$T/c.txt" detect)" -v b="$(stat "$T/c.txt" refine)" 'BEGIN{printf "%.2f", 1e3*(a+b)}')
  fi
  # tracking alone: no re-detection after frame 0
  "$LT" "$clip" --backend "$be" --threads "$th" --detect-every 1000000 -o "$T/t.csv" --stats="$T/t.txt" 2>/dev/null
  n=$(frames_of "$T/t.txt")
  trk=$(awk -v a="$(stat "$T/t.txt" track)" -v n="$n" 'BEGIN{printf "%.2f", 1e3*a/(n-1)}')
  cells=$(awk -F, 'NR>1 && $1>0 {c++} END {printf "%.1f", c/('"$n"'-1)}' "$T/t.csv")
  iters=$(sed -nE 's/.*mean MGVF iterations ([0-9.]+).*/\1/p' "$T/t.txt")
  # end to end with the defaults (decode, detection every 10 frames, CSV)
  "$LT" "$clip" --backend "$be" --threads "$th" -o /dev/null --stats="$T/e.txt" 2>/dev/null
  fps=$(sed -nE 's/.* s, ([0-9.]+) frames\/s/\1/p' "$T/e.txt")
  per=$(awk -v t="$trk" -v c="$cells" 'BEGIN{printf "%.3f", c > 0 ? t/c : 0}')
  printf '%-7s %-7s %12s %12s %14s %8s %12s %12s %10s\n' "$be" "$th" "$crop" "$det" "$trk" "$cells" "$per" "$fps" "$iters"
done
echo "det_crop: the real frame in the reference's 219x640 crop; det_full: a 640x480 synthetic frame"
echo "reference (published OpenMP program, same machine kind): det_crop 290 ms (1 thread) / 160 ms (2);"
echo "  track 1290 ms/frame (1) / 720 ms/frame (2) for 36 cells = 35.8 / 20.0 ms per cell"
