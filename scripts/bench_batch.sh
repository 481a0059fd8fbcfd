#!/usr/bin/env bash
# bench_batch.sh - many videos on the GPUs of this machine (issue 18): 32
# clips of 640x480 x 300 frames (~40 cells, the real Rodinia frame shifted,
# grey y4m, made with python3+numpy like make_bench_clips.py), aggregate
# frames/s through scripts/leuktrack-batch:
#   one video at a time (one process per video, 1 in flight),
#   inproc: one leuktrack per GPU with --jobs K (K = 2, 4, 8, 16 per GPU),
#   proc:   K leuktrack processes per GPU.
# The GPU count comes from nvidia-smi -L (all GPUs of the machine are used).
# Not part of `make bench` (it needs a GPU and ~3 GB of scratch disk).
#
#   scripts/bench_batch.sh --leuktrack BIN --rodinia rodinia_testfile_1frame.avi [--work DIR]
#        [--videos 32] [--frames 300] [--ks "2 4 8 16"] [--merge PATH]
set -u
here=$(cd "$(dirname "$0")" && pwd)
LT="" ROD="" WORK=${TMPDIR:-/tmp}/bench_batch NV=32 NF=300 KS="2 4 8 16" MERGE=""
while [ $# -gt 0 ]; do
  case $1 in
    --leuktrack) LT=$2; shift 2 ;; --rodinia) ROD=$2; shift 2 ;; --work) WORK=$2; shift 2 ;;
    --videos) NV=$2; shift 2 ;; --frames) NF=$2; shift 2 ;; --ks) KS=$2; shift 2 ;; --merge) MERGE=$2; shift 2 ;;
    *) echo "bench_batch: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$LT" ] && [ -r "$ROD" ] || { echo "usage: $0 --leuktrack BIN --rodinia RODINIA.avi [--work DIR]" >&2; exit 2; }
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "bench_batch: $(date -u '+%Y-%m-%d %H:%M UTC'), $GPUS GPU(s): $(nvidia-smi -L 2>/dev/null | head -1 | cut -c1-60), $(nproc) CPU cores"
mkdir -p "$WORK/clips/a" "$WORK/clips/b"
t0=$(date +%s.%N)
python3 - "$here" "$ROD" "$WORK/clips" "$NV" "$NF" <<'PY' || exit 1
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
from make_bench_clips import rodinia_frame
rod, out, nv, nf = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
fr = rodinia_frame(rod)
for v in range(nv):
    cond = 'a' if v % 2 == 0 else 'b'
    speed, off = 1 + v % 3, 17 * v  # distinct clips: other start and speed
    with open('%s/%s/clip%02d.y4m' % (out, cond, v), 'wb') as f:
        f.write(b'YUV4MPEG2 W640 H480 F30:1 Ip A1:1 Cmono\n')
        for k in range(nf):
            f.write(b'FRAME\n')
            f.write(np.roll(fr, off + speed * k, axis=1).tobytes())
PY
echo "bench_batch: $NV clips of 640x480x$NF made in $(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}') s"
total=$((NV * NF))
mopt=(); [ -n "$MERGE" ] && mopt=(--merge "$MERGE")
row() { # row LABEL BATCH-OPTIONS...: one timed batch, prints frames/s
  local label=$1; shift
  rm -rf "$WORK/out"
  local s e rc
  s=$(date +%s.%N)
  "$here/leuktrack-batch" --leuktrack "$LT" -q --no-merge --base "$WORK/clips" -o "$WORK/out" "$@" "$WORK/clips" >"$WORK/last.txt" 2>&1
  rc=$?
  e=$(date +%s.%N)
  local wall ok fps
  wall=$(awk -v a="$e" -v b="$s" 'BEGIN{printf "%.3f", a-b}')
  ok=$(ls "$WORK"/out/*.csv 2>/dev/null | grep -vc summary)
  fps=$(awk -v a="$total" -v b="$wall" 'BEGIN{printf "%d", a/b}')
  printf '| %-34s | %7.2f | %7d | %2d/%d | %s\n' "$label" "$wall" "$fps" "$ok" "$NV" "$([ $rc = 0 ] && echo ok || echo "exit $rc: $(tail -2 "$WORK/last.txt" | tr '\n' ' ')")"
  echo "$fps" >"$WORK/fps.$label"
}
echo "| runner (all $GPUS GPU(s))              |  wall s | frames/s | videos | status"
row one-at-a-time --runner proc -j 1
for k in $KS; do row "inproc --per-gpu $k" --runner inproc --per-gpu "$k"; done
for k in $KS; do row "proc --per-gpu $k" --runner proc --per-gpu "$k"; done
# the merge of the last run, timed on its own
s=$(date +%s.%N)
"$here/leuktrack-batch" --leuktrack "$LT" -q ${mopt[@]+"${mopt[@]}"} --base "$WORK/clips" -o "$WORK/out" "$WORK/clips" >/dev/null 2>&1
echo "bench_batch: rerun (all skipped) + merge: $(awk -v a="$(date +%s.%N)" -v b="$s" 'BEGIN{printf "%.2f", a-b}') s; $(wc -l <"$WORK/out/results/all_tracks.csv") rows in all_tracks.csv; $(ls "$WORK"/out/*.csv | grep -v summary | xargs cat | wc -l) lines in the per-video CSVs (with headers)"
