#!/usr/bin/env bash
# accuracy.sh - the appearance-family bench of issue 15 (docs/ACCURACY.md):
# for each family of data/lt_synth2.c and each seed, generate a clip, track it
# with ./leuktrack (default options plus LT_ACC_ARGS), score it with lt_eval,
# and print one row per family summed over the seeds:
#   family  cells tracked end to end / eligible (%), recall (matched truth
#   points), centre RMSE (px), false tracks, ID switches
# Usage: scripts/accuracy.sh [SEEDS] [FAMILIES]   (defaults: the held-out seeds
# 101 102 103 and every family). Run by `make accuracy`. Environment: BUILD
# (tools), LT_BIN (binary), LT_ACC_ARGS (extra leuktrack options), LT_ACC_W,
# LT_ACC_H, LT_ACC_FRAMES, LT_ACC_CELLS (clip size), LT_ACC_KEEP (a folder to
# keep the clips, tracks and per-run JSON in).
set -uo pipefail
BUILD=${BUILD:-build}
BIN=${LT_BIN:-./leuktrack}
SEEDS=${1:-"101 102 103"}
FAMS=${2:-"rim bright halo blur texture fluo clutter drift fast touching real"}
W=${LT_ACC_W:-320} H=${LT_ACC_H:-160} NF=${LT_ACC_FRAMES:-40} NC=${LT_ACC_CELLS:-6}
REAL=${LT_ACC_REAL:-../shared/data/leukocyte/rodinia_testfile_1frame.avi}
[[ -f $REAL ]] || REAL=/work/shared/data/leukocyte/rodinia_testfile_1frame.avi
T=${LT_ACC_KEEP:-$(mktemp -d)}
mkdir -p "$T"
[[ -n ${LT_ACC_KEEP:-} ]] || trap 'rm -rf "$T"' EXIT
jnum() { sed -nE "s/.*\"$2\": ([-0-9.e+na]+).*/\1/p" "$1"; }
printf '%-9s %16s %8s %8s %7s %9s\n' family "end-to-end" recall rmse_px false_tr switches
tot_t=0 tot_e=0
for fam in $FAMS; do
  t=0 e=0 m=0 g=0 se=0 ft=0 sw=0
  for s in $SEEDS; do
    b=$T/$fam-$s
    if ! "$BUILD/tools/lt_synth2" --family "$fam" --seed "$s" --width "$W" --height "$H" --frames "$NF" \
      --cells "$NC" --real "$REAL" --out "$b.y4m" --truth "$b.truth.csv" 2>"$b.err"; then
      echo "accuracy: lt_synth2 failed for $fam seed $s: $(head -c 200 "$b.err")" >&2
      exit 1
    fi
    # shellcheck disable=SC2086
    if ! "$BIN" "$b.y4m" -o "$b.tracks.csv" ${LT_ACC_ARGS:-} 2>"$b.err"; then
      echo "accuracy: leuktrack failed on $fam seed $s: $(head -c 300 "$b.err")" >&2
      exit 1
    fi
    "$BUILD/tools/lt_eval" "$b.tracks.csv" "$b.truth.csv" --size "${W}x${H}" --json >"$b.json" || exit 1
    mp=$(jnum "$b.json" matched_points) r=$(jnum "$b.json" rmse_px)
    t=$((t + $(jnum "$b.json" tracked_cells))) e=$((e + $(jnum "$b.json" eligible_cells)))
    m=$((m + mp)) g=$((g + $(jnum "$b.json" truth_points)))
    ft=$((ft + $(jnum "$b.json" false_tracks))) sw=$((sw + $(jnum "$b.json" id_switches)))
    [[ $r == null ]] || se=$(awk -v a="$se" -v r="$r" -v n="$mp" 'BEGIN { printf "%.6f", a + r * r * n }')
  done
  tot_t=$((tot_t + t)) tot_e=$((tot_e + e))
  awk -v f="$fam" -v t=$t -v e=$e -v m=$m -v g=$g -v se="$se" -v ft=$ft -v sw=$sw 'BEGIN {
    printf "%-9s %6d/%-3d %5.1f%% %7.1f%% %8.2f %7d %9d\n", f, t, e, e ? 100 * t / e : 0, g ? 100 * m / g : 0,
      m ? sqrt(se / m) : 0, ft, sw }'
done
awk -v t=$tot_t -v e=$tot_e 'BEGIN { printf "all       %6d/%-3d %5.1f%%\n", t, e, e ? 100 * t / e : 0 }'
