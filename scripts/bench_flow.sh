#!/usr/bin/env bash
# bench_flow.sh - the flow part of `make bench`: time per frame pair and
# pairs/s of `leuktrack flow` with the accuracy defaults, per backend (CPU 1
# thread, CPU all cores, CUDA when usable), next to OpenCV's Farneback, DIS
# (medium preset) and TV-L1 (when cv2.optflow exists) on the CPU in the same
# run and on the same pairs. Accuracy (AEE px / AAE deg) of every method by
# one evaluator (tests/flow/flowcheck.py eval, numpy, = leuktrack's
# --ground-truth numbers, checked by tests/test_flow_cli.sh) on Yosemite
# 9->10 (316x252, non-sky mask) and the FlyingChairs pairs 0000000 and
# 0000001 (512x384); timing also on a 640x480 clip (a synthetic texture
# translating by (1.3, -0.7) px per frame, y4m: decoding costs a copy) and,
# for CUDA and OpenCV, a 1920x1080 one. Numbers, not pass/fail.
# "ms/pair" is the solver stage of --stats (for a clip: mean over its
# pairs; OpenCV: best of 3 after a warm-up, TV-L1 one run); "e2e pairs/s"
# is a clip end to end: pairs / wall time of the whole run (start-up,
# decode, solve, .flo writes).
# Env: LT (binary, default ./leuktrack), LT_DATA (default ../shared/data),
# PY (python with numpy + cv2, default /usr/bin/python3), CLIP_FRAMES (CPU
# 640x480 frames, default 3), GPU_FRAMES (CUDA clip frames, default 101),
# BACKENDS ("cpu:1 cpu:0 cuda:1" style; threads 0 = all cores), HD=0 skips 1920x1080.
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
CLIP_FRAMES=${CLIP_FRAMES:-3}
GPU_FRAMES=${GPU_FRAMES:-101}
HD=${HD:-1}
FC=tests/flow/flowcheck.py
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
Y=$DATA/flow/yosemite C=$DATA/flow/flyingchairs
[ -f "$Y/yos9.pgm" ] && [ -f "$C/0000000-img0.ppm" ] || { echo "bench: flow data not found under $DATA/flow (set LT_DATA)" >&2; exit 3; }
"$PY" -c 'import numpy' 2>/dev/null || { echo "bench: $PY lacks numpy (set PY)" >&2; exit 3; }
have_cv=1
"$PY" -c 'import cv2' 2>/dev/null || { have_cv=0; echo "bench: $PY lacks cv2: no OpenCV peers, no Yosemite mask (AEE/AAE over all pixels there)" >&2; }
ncpu=$(nproc)

configs=(cpu:1 cpu:0)
if [ -n "${BACKENDS:-}" ]; then read -r -a configs <<<"$BACKENDS"
elif "$LT" flow --backend cuda "$Y/yos9.pgm" "$Y/yos10.pgm" -o "$T/probe.flo" --iterations 1 --levels 1 --warps 1 2>/dev/null; then
  configs+=(cuda:1)
fi

echo "leuktrack flow benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $ncpu cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' || true
echo "defaults: $("$LT" flow --help | grep -oE -- '--(alpha|rho|sigma|levels|warps|iterations|eps-data|eps-smooth|omega) [A-Z] .*\(default [0-9.]+' | sed -E 's/^--([a-z-]+) .*\(default /\1 /' | tr '\n' ' ')"
printf '%-16s %-9s %-22s %7s %10s %10s %11s %8s %8s\n' data size method threads ms/pair pairs/s e2e_pairs/s AEE_px AAE_deg

flow_ms() { awk '$1=="flow" {print $3}' "$1"; }
# end to end: pairs / wall time of the whole run (open, allocate, decode, solve, write)
e2e() { sed -nE 's/^leuktrack stats: .*, ([0-9]+) frames, ([0-9.]+) s,.*/\1 \2/p' "$1" | awk '{printf "%.2f", ($1 - 1) / $2}'; }
row() { printf '%-16s %-9s %-22s %7s %10.1f %10.2f %11s %8s %8s\n' "$@"; }
acc() { # FLO GT [MASK] -> "aee aae"
  if [ $have_cv -eq 0 ] && [ $# -gt 2 ]; then echo "- -"; else "$PY" $FC eval "$@" | awk '{printf "%.3f %.2f\n", $1, $2}'; fi
}

# pairs with ground truth
pairs=("yosemite|316x252|$Y/yos9.pgm|$Y/yos10.pgm|$Y/yos9_to_yos10_gt.flo|$Y/yos9_nonsky_mask.png"
       "chairs-0000000|512x384|$C/0000000-img0.ppm|$C/0000000-img1.ppm|$C/0000000-gt.flo|"
       "chairs-0000001|512x384|$C/0000001-img0.ppm|$C/0000001-img1.ppm|$C/0000001-gt.flo|")
for p in "${pairs[@]}"; do
  IFS='|' read -r name size a b gt mask <<<"$p"
  for c in "${configs[@]}"; do
    be=${c%:*} th=${c#*:}
    thr=(); [ "$th" != 0 ] && thr=(--threads "$th")
    "$LT" flow --backend "$be" "${thr[@]}" "$a" "$b" -o "$T/o.flo" --stats="$T/s.txt" >/dev/null
    ms=$(flow_ms "$T/s.txt")
    read -r e g < <(acc "$T/o.flo" "$gt" ${mask:+"$mask"})
    row "$name" "$size" "leuktrack $be" "$([ "$th" = 0 ] && echo "$ncpu" || echo "$th")" "$ms" \
      "$(awk -v m="$ms" 'BEGIN{printf "%.2f", 1e3/m}')" - "$e" "$g"
  done
  if [ $have_cv -eq 1 ]; then
    for th in 1 "$ncpu"; do
      "$PY" $FC opencv "$a" "$b" "$T/cv" "$th" >"$T/cv.txt"
      while read -r m ms; do
        read -r e g < <(acc "$T/cv_$m.flo" "$gt" ${mask:+"$mask"})
        row "$name" "$size" "opencv $m" "$th" "$ms" "$(awk -v m="$ms" 'BEGIN{printf "%.2f", 1e3/m}')" - "$e" "$g"
      done <"$T/cv.txt"
    done
  fi
done

# clips: timing (and the known translation's AEE, 8 px border excluded)
clip() { # W H FRAMES CONFIGS...
  local w=$1 h=$2 n=$3
  shift 3
  "$PY" $FC texture "$T/clip" "$w" "$h" "$n" 1.3 -0.7
  for c in "$@"; do
    be=${c%:*} th=${c#*:}
    thr=(); [ "$th" != 0 ] && thr=(--threads "$th")
    rm -rf "$T/od"
    "$LT" flow --backend "$be" "${thr[@]}" "$T/clip.y4m" -o "$T/od" --stats="$T/s.txt" >/dev/null
    ms=$(flow_ms "$T/s.txt")
    e=$("$PY" $FC trans "$T/od/flow_000000.flo" 1.3 -0.7 8 2>/dev/null | awk '{printf "%.3f", $1}' || echo -)
    row "clip-$((n - 1))pairs" "${w}x$h" "leuktrack $be" "$([ "$th" = 0 ] && echo "$ncpu" || echo "$th")" "$ms" \
      "$(awk -v m="$ms" 'BEGIN{printf "%.2f", 1e3/m}')" "$(e2e "$T/s.txt")" "$e" -
  done
  if [ $have_cv -eq 1 ]; then
    for th in 1 "$ncpu"; do
      "$PY" $FC opencv "$T/clip_0.pgm" "$T/clip_1.pgm" "$T/cv" "$th" >"$T/cv.txt"
      while read -r m ms; do
        e=$("$PY" $FC trans "$T/cv_$m.flo" 1.3 -0.7 8 | awk '{printf "%.3f", $1}')
        row "clip-pair0" "${w}x$h" "opencv $m" "$th" "$ms" "$(awk -v m="$ms" 'BEGIN{printf "%.2f", 1e3/m}')" - "$e" -
      done <"$T/cv.txt"
    done
  fi
}
cpu_configs=() gpu_configs=()
for c in "${configs[@]}"; do if [ "${c%:*}" = cuda ]; then gpu_configs+=("$c"); else cpu_configs+=("$c"); fi; done
clip 640 480 "$CLIP_FRAMES" "${cpu_configs[@]}"
[ ${#gpu_configs[@]} -gt 0 ] && clip 640 480 "$GPU_FRAMES" "${gpu_configs[@]}"
if [ "$HD" = 1 ] && [ ${#gpu_configs[@]} -gt 0 ]; then clip 1920 1080 "$(( GPU_FRAMES < 31 ? GPU_FRAMES : 31 ))" "${gpu_configs[@]}"; fi
echo "AEE of the clips: against the known (1.3, -0.7) px, 8 px border excluded, first pair"

# 3D (flow --3d): 128^3 by default (FLOW3D_SIZES="128 256" for both), CPU and CUDA
echo
SIZES=${FLOW3D_SIZES:-128} LT=$LT bash scripts/bench_flow3d.sh
