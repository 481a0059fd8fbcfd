#!/usr/bin/env bash
# bench_batch.sh - many videos on the GPUs of this machine (issue 18): 32
# clips of 640x480 x 300 frames (the real Rodinia frame rolled sideways by
# 1-3 px/frame from distinct offsets, grey y4m, made with python3+numpy like
# make_bench_clips.py), aggregate frames/s in two cases, each labelled:
#   vessel: --roi 0,110,640,219, the vessel lumen of the single-video bench:
#           ~40 cells per frame, the case issue 18 specifies;
#   heavy:  the whole frame as ROI, ~117 cells per frame (3x the issue's).
# Rows per case (frames/s = videos x frames / wall time, start-up included):
#   one at a time: one leuktrack process per video, one in flight
#                  (through scripts/leuktrack-batch --runner proc -j 1);
#   leuktrack --jobs K: one process, K videos in flight (GPU 0 only);
#   inproc --per-gpu K: leuktrack-batch, one leuktrack --jobs K per GPU;
#   proc --per-gpu K:   leuktrack-batch, K leuktrack processes per GPU.
# The GPU count comes from nvidia-smi -L (all GPUs of the machine are used
# by the runner rows). Not part of `make bench` (it needs a GPU and ~3 GB
# of scratch disk).
#
#   scripts/bench_batch.sh --leuktrack BIN --rodinia rodinia_testfile_1frame.avi [--work DIR]
#        [--videos 32] [--frames 300] [--cases "vessel heavy"] [--ks "8 16 32"]
#        [--direct-ks "16"] [--proc-ks "16"] [--no-single] [--merge PATH]
# (an empty list skips those rows; --no-single skips the one-at-a-time row)
set -u
here=$(cd "$(dirname "$0")" && pwd)
LT="" ROD="" WORK=${TMPDIR:-/tmp}/bench_batch NV=32 NF=300 KS="8 16 32" DKS="16" PKS="16" MERGE="" CASES="vessel heavy" SINGLE=1
while [ $# -gt 0 ]; do
  case $1 in
    --leuktrack) LT=$2; shift 2 ;; --rodinia) ROD=$2; shift 2 ;; --work) WORK=$2; shift 2 ;;
    --videos) NV=$2; shift 2 ;; --frames) NF=$2; shift 2 ;; --ks) KS=$2; shift 2 ;; --merge) MERGE=$2; shift 2 ;;
    --direct-ks) DKS=$2; shift 2 ;; --proc-ks) PKS=$2; shift 2 ;; --cases) CASES=$2; shift 2 ;;
    --no-single) SINGLE=0; shift ;;
    *) echo "bench_batch: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -x "$LT" ] && [ -r "$ROD" ] || { echo "usage: $0 --leuktrack BIN --rodinia RODINIA.avi [--work DIR]" >&2; exit 2; }
for c in $CASES; do
  case $c in vessel|heavy) ;; *) echo "bench_batch: unknown case '$c' (vessel, heavy)" >&2; exit 2 ;; esac
done
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "bench_batch: $(date -u '+%Y-%m-%d %H:%M UTC'), $GPUS GPU(s): $(nvidia-smi -L 2>/dev/null | head -1 | cut -c1-60), $(nproc) CPU cores"
mkdir -p "$WORK/clips/a" "$WORK/clips/b"
rm -f "$WORK"/fps.*
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
fin() { # fin LABEL START RC LOG: prints the row, keeps frames/s in $WORK/fps.CASE.LABEL
  local label=$1 s=$2 rc=$3 log=$4 e wall ok fps
  e=$(date +%s.%N)
  wall=$(awk -v a="$e" -v b="$s" 'BEGIN{printf "%.3f", a-b}')
  ok=$(ls "$WORK"/out/*.csv 2>/dev/null | grep -vc summary)
  fps=$(awk -v a="$total" -v b="$wall" 'BEGIN{printf "%d", a/b}')
  printf '| %-6s | %-30s | %7.2f | %8d | %2d/%d | %s\n' "$case" "$label" "$wall" "$fps" "$ok" "$NV" \
    "$([ "$rc" = 0 ] && echo ok || echo "exit $rc: $(tail -2 "$log" | tr '\n' ' ')")"
  # a failed or incomplete run is shown, never counted as the best
  [ "$rc" = 0 ] && [ "$ok" = "$NV" ] && echo "$fps" >"$WORK/fps.$case.${label// /_}"
}
row() { # row LABEL BATCH-OPTIONS...: one timed batch through the runner
  local label=$1; shift
  rm -rf "$WORK/out"
  local s rc
  s=$(date +%s.%N)
  "$here/leuktrack-batch" --leuktrack "$LT" -q --no-merge --base "$WORK/clips" -o "$WORK/out" "$@" "$WORK/clips" \
    -- ${lopt[@]+"${lopt[@]}"} >"$WORK/last.txt" 2>&1
  rc=$?
  fin "$label" "$s" $rc "$WORK/last.txt"
}
direct() { # direct K: one leuktrack --jobs K over all clips, on GPU 0
  rm -rf "$WORK/out"
  local s rc
  s=$(date +%s.%N)
  "$LT" --backend cuda -q --no-progress --jobs "$1" ${lopt[@]+"${lopt[@]}"} -o "$WORK/out/" \
    --summary "$WORK/out/{}.summary.csv" "$WORK"/clips/*/*.y4m >"$WORK/last.txt" 2>&1
  rc=$?
  fin "leuktrack --jobs $1 (GPU 0)" "$s" $rc "$WORK/last.txt"
}
for case in $CASES; do
  lopt=(); [ "$case" = vessel ] && lopt=(--roi 0,110,640,219)
  echo "| case   | runner (all $GPUS GPU(s))          |  wall s | frames/s | videos | status"
  [ $SINGLE = 1 ] && row "one at a time" --runner proc -j 1
  for k in $DKS; do direct "$k"; done
  for k in $KS; do row "inproc --per-gpu $k" --runner inproc --per-gpu "$k"; done
  for k in $PKS; do row "proc --per-gpu $k" --runner proc --per-gpu "$k"; done
  rows=$(( $(cat "$WORK"/out/*clip00.csv 2>/dev/null | wc -l) - 1 )) # the last row's clip00
  best=$(cat "$WORK"/fps.$case.* 2>/dev/null | sort -n | tail -1)
  one=$(cat "$WORK/fps.$case.one_at_a_time" 2>/dev/null)
  echo "bench_batch: $case: ${lopt[*]:-whole frame}, $(awk -v r="$rows" -v f="$NF" 'BEGIN{printf "%.1f", r/f}') track rows per frame in clip00; best ${best:-none} frames/s$( [ -n "$one" ] && [ -n "$best" ] && awk -v a="$best" -v b="$one" 'BEGIN{printf " = %.1fx one at a time", a/b}')"
done
# the merge of the last run, timed on its own
s=$(date +%s.%N)
"$here/leuktrack-batch" --leuktrack "$LT" -q ${mopt[@]+"${mopt[@]}"} --base "$WORK/clips" -o "$WORK/out" "$WORK/clips" >/dev/null 2>&1
echo "bench_batch: rerun (all skipped) + merge: $(awk -v a="$(date +%s.%N)" -v b="$s" 'BEGIN{printf "%.2f", a-b}') s; $(wc -l <"$WORK/out/results/all_tracks.csv") rows in all_tracks.csv; $(ls "$WORK"/out/*.csv | grep -v summary | xargs cat | wc -l) lines in the per-video CSVs (with headers)"
