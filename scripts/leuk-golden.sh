#!/usr/bin/env bash
# leuk-golden.sh - writes the leukocyte mode's outputs for a fixed set of
# inputs into DIR (CSV, summary + histogram, overlays, TrackMate, CTC, um
# columns), one md5 per file in DIR/SUMS, so that two builds (before and after
# a refactor, CPU and CUDA) can be compared byte for byte:
#   scripts/leuk-golden.sh DIR [leuktrack options...]   then   diff A/SUMS B/SUMS
# Env: LT (binary, default ./leuktrack), BUILD (for lt_synth), LT_DATA, PY.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
LT=${LT:-./leuktrack}
BUILD=${BUILD:-build}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
mkdir -p "$out"
clips=${CLIPS:-$out/clips}
mkdir -p "$clips"
[ -f "$clips/synth.mkv" ] || "$BUILD/tools/lt_synth" --width 640 --height 480 --frames 40 --seed 1 \
  --out "$clips/synth.mkv" --truth "$clips/truth.csv" >/dev/null
[ -f "$clips/real640.y4m" ] || "$PY" scripts/make_bench_clips.py "$DATA/leukocyte/rodinia_testfile_1frame.avi" "$clips" 20 4 2 >/dev/null
run() { local name=$1; shift; "$LT" "$@" -o "$out/$name.out" 2>"$out/$name.err" || echo "exit $?" >>"$out/$name.err"; }
run synth_csv "$clips/synth.mkv" --summary "$out/synth_sum.csv" --overlay "$out/ov_synth" "$@"
run synth_um "$clips/synth.mkv" --um-per-px 0.5 --fps 30 --summary "$out/synth_um_sum.csv" "$@"
run synth_tm "$clips/synth.mkv" --format trackmate --um-per-px 0.5 "$@"
run synth_ctc "$clips/synth.mkv" --format ctc --detect-every 3 --frames 2:30 "$@"
run real_crop "$DATA/leukocyte/rodinia_testfile_1frame.avi" --roi 0,110,640,219 "$@"
run real640 "$clips/real640.y4m" --roi 0,110,640,219 --summary "$out/real640_sum.csv" "$@"
run real1024 "$clips/real1024.y4m" --roi 0,0,1024,560 "$@"
run mes_g --channel g "$DATA/leukocyte/mesentery_flowcatchR/MeseData_frame_%03d.png" "$@"
run mes_avi "$DATA/leukocyte/mesentery_green_gray8_rawvideo.avi" --overlay "$out/ov_mes" "$@"
(cd "$out" && find . -path ./clips -prune -o -type f ! -name SUMS ! -name '*.err' -print | sort | xargs md5sum >SUMS)
echo "leuk-golden: $(wc -l <"$out/SUMS") files in $out/SUMS"
