#!/usr/bin/env bash
# bench.sh - `make bench`: per-stage times and frames/s of the leukocyte mode,
# CPU backend with 1 and 2 threads and the CUDA backend when one is usable.
# Numbers, not pass/fail. The clip is the reference program's real frame,
# shifted 2 px per frame (scripts/make_bench_clips.py), tracked in the
# reference's 219x640 crop (--roi 0,110,640,219): about 44 cells per frame,
# the geometry of the published numbers. Reference points (issue 2): the
# published OpenMP program on this machine kind took 0.29 s for detection
# and 1.29 s per tracking frame for 36 cells on 1 thread (0.16 s / 0.72 s on 2).
# Env: LT (binary, default ./leuktrack), FRAMES (default 60), BACKENDS
# ("cpu:1 cpu:2 cuda:1" style), LT_DATA, PY (python with numpy).
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
FRAMES=${FRAMES:-60}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
REAL=$DATA/leukocyte/rodinia_testfile_1frame.avi
[ -f "$REAL" ] || { echo "bench: $REAL not found (set LT_DATA)" >&2; exit 3; }
"$PY" scripts/make_bench_clips.py "$REAL" "$T" "$FRAMES" 2 2
clip=$T/real640.y4m
ROI=0,110,640,219

stat() { awk -v s="$2" '$1==s {print $2}' "$1"; }
frames_of() { sed -nE 's/.* ([0-9]+) frames, .*/\1/p' "$1" | head -1; }

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
  n=$(frames_of "$T/s.txt")
  trk=$(awk -v a="$(stat "$T/s.txt" track)" -v n="$n" 'BEGIN{printf "%.3f", 1e3*a/(n-1)}')
  cells=$(awk -F, -v n="$n" 'NR>1 && $1>0 {k++} END {printf "%.1f", k/(n-1)}' "$T/t.csv")
  per=$(awk -v t="$trk" -v k="$cells" 'BEGIN{printf "%.3f", (k > 0) ? t / k : 0}')
  it=$(sed -nE 's/.*mean MGVF iterations ([0-9.]+).*/\1/p' "$T/s.txt")
  # end to end with the defaults (decode, detection every 10 frames, CSV)
  run --roi $ROI
  fps=$(sed -nE 's/.* s, ([0-9.]+) frames\/s/\1/p' "$T/s.txt")
  printf '%-6s %-7s %12s %12s %14s %7s %9s %12s %9s\n' "$be" "$th" "$crop" "$full" "$trk" "$cells" "$per" "$fps" "$it"
done
echo "det_crop: detection + refinement of the reference's 219x640 crop; det_full: the whole 640x480 frame"
echo "reference (published OpenMP program, this machine kind): det_crop 290 ms (1 thread) / 160 ms (2);"
echo "  tracking 1290 ms/frame (1) / 720 ms/frame (2) for 36 cells = 35.8 / 20.0 ms per cell"
echo "reference (published CUDA program, H100): detection 14 ms, tracking 7.6 ms/frame for 36 cells (0.21 ms/cell)"
