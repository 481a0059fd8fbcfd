#!/usr/bin/env bash
# bench_gicov_fma.sh - the CPU's GICOV on each fused multiply-add path
# (gicov.c's lt_gicov_fma): the CPU's own (x86-64-v3: inline FMA),
# LT_GICOV_FMA=libm (libm's fmaf, a call per operation) and =soft (the exact
# emulation of fmaexact.h, what an x86 CPU without FMA runs), and libm's fmaf
# with glibc's FMA/AVX2 use switched off (GLIBC_TUNABLES, its software fmaf:
# what main's default clone ran on such a CPU). One thread. Per path: one
# 640x219 map of the Rodinia frame's ROI (lt_gicov_bench, min/median of
# REPEATS, and its hash: the same on every path), then --with-tracking the
# CPU tracking of 60 frames of lt_synth's seed-1 clip (seconds, md5 of the
# tracks: the same on every path). Numbers, not pass/fail.
#   scripts/bench_gicov_fma.sh [--build DIR] [--repeats 5] [--with-tracking] [--no-glibc-soft]
# Env: LT_DATA (default ../shared/data).
set -u
cd "$(dirname "$0")/.." || exit 2
BUILD=build REPS=5 TRACK=0 GSOFT=1
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;; --repeats) REPS=$2; shift 2 ;; --with-tracking) TRACK=1; shift ;;
    --no-glibc-soft) GSOFT=0; shift ;;
    *) echo "bench_gicov_fma: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
DATA=${LT_DATA:-../shared/data}
BENCH=$BUILD/tools/lt_gicov_bench
for f in "$BENCH" "$BUILD/tools/lt_synth" ./leuktrack; do
  [ -x "$f" ] || { echo "bench_gicov_fma: $f missing; run make all (BUILD=$BUILD)" >&2; exit 2; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
paths=("own:" "libm:LT_GICOV_FMA=libm" "soft:LT_GICOV_FMA=soft")
[ "$GSOFT" = 1 ] && paths+=("glibc-soft:LT_GICOV_FMA=libm GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-AVX2")
echo "bench_gicov_fma: $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
for p in "${paths[@]}"; do
  reps=$REPS
  [ "${p%%:*}" = glibc-soft ] && reps=1
  printf '%-11s ' "${p%%:*}"
  env ${p#*:} OMP_NUM_THREADS=1 "$BENCH" "$DATA/leukocyte/rodinia_testfile_1frame.avi" 0 110 640 219 "$reps"
done
[ "$TRACK" = 1 ] || exit 0
"$BUILD/tools/lt_synth" --width 640 --height 480 --frames 60 --seed 1 --out "$WORK/s.mkv" --truth "$WORK/t.csv" >/dev/null
for p in "${paths[@]}"; do
  t0=$(date +%s.%N)
  env ${p#*:} ./leuktrack "$WORK/s.mkv" --backend cpu -j 1 -o "$WORK/tracks.csv" 2>/dev/null
  rc=$?
  printf '%-11s tracking 60 frames: %.1f s, exit %d, tracks md5 %s\n' "${p%%:*}" \
    "$(echo "$(date +%s.%N) - $t0" | bc)" $rc "$(md5sum <"$WORK/tracks.csv" | cut -c1-12)"
done
