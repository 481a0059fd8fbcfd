#!/usr/bin/env bash
# bench_leuk_split.sh - issue 15's frame budget: what the entry band
# (--entry-band) and the static test (--static-span) cost per frame. The clip
# is the reference program's real frame shifted 2 px/frame
# (scripts/make_bench_clips.py), tracked in its 219x640 crop; each setting is
# run RUNS times, the settings alternating, and frames/s after start-up
# (--stats) is printed per run, then the mean frame time per setting and the
# shares of the default frame: band = defaults - --entry-band 0, static test
# = defaults - --static-span 0; and what the option --motion 4 adds (on
# this clip the whole background moves: its worst case). On CUDA also LT_CUDA_AHEAD=0 (the band's
# refinement after the tracking), LT_CUDA_PRIO=0 (equal stream priorities),
# LT_CUDA_DILMAP=1 (every detection writes the full dilated map, as before) and
# LT_CUDA_SPEC=0 (the band's detection beside its own frame's tracking, not
# made ahead on the next frame after the tracking).
# Numbers, not pass/fail; the run-to-run spread on the H100 is up to ~100 us
# per frame, so use several runs.
#   scripts/bench_leuk_split.sh [--leuktrack BIN] [--backend cuda|cpu] [--frames 960] [--runs 3] [--work DIR]
# Env: LT_DATA (default ../shared/data), PY (python with numpy).
set -u
cd "$(dirname "$0")/.." || exit 2
LT=./leuktrack BE=cuda NF=960 RUNS=3 WORK=${TMPDIR:-/tmp}/bench_leuk_split
while [ $# -gt 0 ]; do
  case $1 in
    --leuktrack) LT=$2; shift 2 ;; --backend) BE=$2; shift 2 ;; --frames) NF=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;; --work) WORK=$2; shift 2 ;;
    *) echo "bench_leuk_split: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
REAL=$DATA/leukocyte/rodinia_testfile_1frame.avi
if [ ! -x "$LT" ] || [ ! -r "$REAL" ]; then
  echo "usage: $0 [--leuktrack BIN] ... (needs $LT and $REAL: set LT_DATA)" >&2
  exit 2
fi
mkdir -p "$WORK"
clip=$WORK/real640.y4m
"$PY" scripts/make_bench_clips.py "$REAL" "$WORK" "$NF" 1 2 >/dev/null || exit 1
rm -f "$WORK/real640_pal8.avi" "$WORK/real1024.y4m"
names=(defaults static-span0 entry-band0 motion4)
envs=(X=1 X=1 X=1 X=1)
opts=("" "--static-span 0" "--entry-band 0" "--motion 4")
if [ "$BE" = cuda ]; then
  names+=(AHEAD=0 PRIO=0 DILMAP=1 SPEC=0)
  envs+=(LT_CUDA_AHEAD=0 LT_CUDA_PRIO=0 LT_CUDA_DILMAP=1 LT_CUDA_SPEC=0)
  opts+=("" "" "" "")
fi
echo "bench_leuk_split: $(date -u '+%Y-%m-%d %H:%M UTC'), $BE, $(nvidia-smi -L 2>/dev/null | head -1 | cut -c1-40), $(nproc) CPU cores"
echo "clip: the real frame shifted 2 px/frame, 640x480, $NF frames, ROI 0,110,640,219"
: >"$WORK/runs.txt"
for _ in $(seq "$RUNS"); do
  for k in "${!names[@]}"; do
    # shellcheck disable=SC2086 # opts[k] is a list of options
    env ${envs[$k]} "$LT" "$clip" --roi 0,110,640,219 --backend "$BE" -q --no-progress -o "$WORK/t.csv" \
      --stats="$WORK/s.txt" ${opts[$k]} 2>/dev/null || { echo "bench_leuk_split: ${names[$k]} failed" >&2; exit 1; }
    fps=$(sed -nE 's/^after the first frame.*: ([0-9.]+) frames\/s/\1/p' "$WORK/s.txt")
    echo "${names[$k]} $fps" | tee -a "$WORK/runs.txt"
  done
done
awk '{ n[$1]++; us[$1] += 1e6 / $2; if (!($1 in o)) o[$1] = ++m; lab[o[$1]] = $1 }
  END {
    for (i = 1; i <= m; i++) { k = lab[i]; t[k] = us[k] / n[k]; printf "%-13s %4d runs, mean frame %7.1f us (%.0f frames/s)\n", k, n[k], t[k], 1e6 / t[k] }
    d = t["defaults"]
    printf "entry band: %.1f us of %.1f (%.1f %%); static test: %.1f us (%.1f %%)\n", d - t["entry-band0"], d,
           100 * (d - t["entry-band0"]) / d, d - t["static-span0"], 100 * (d - t["static-span0"]) / d
    printf "--motion 4 (off by default) adds %.1f us (%.1f %%)\n", t["motion4"] - d, 100 * (t["motion4"] - d) / d
  }' "$WORK/runs.txt"
