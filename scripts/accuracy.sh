#!/usr/bin/env bash
# accuracy.sh - the appearance-family bench of issue 15 (docs/ACCURACY.md):
# for each family of data/lt_synth2.c and each seed, generate a clip, track it
# with ./leuktrack (default options plus LT_ACC_ARGS), score it with lt_eval,
# and print one row per family summed over the seeds:
#   family  cells tracked end to end / eligible (%), recall (matched truth
#   points), centre RMSE (px), the RMSE less each cell's mean offset (px;
#   lt_eval's rmse_less_cell_offset_px: what is left when the truth's centre
#   is off the cell's edge by a constant, as in the real family's cut
#   patches), false tracks, ID switches, and the Cell
#   Tracking Challenge scores DET, TRA, HOTA (py-ctcmetrics' ctc_evaluate of a
#   second run with --format ctc against the truth as CTC GT, discs of the true
#   radius, scripts/truth2ctc.py; mean over the seeds)
# Usage: scripts/accuracy.sh [SEEDS] [FAMILIES]   (defaults: the held-out seeds
# 101 102 103 and every family). Run by `make accuracy`. Environment: BUILD
# (tools), LT_BIN (binary), LT_ACC_ARGS (extra leuktrack options), LT_ACC_W,
# LT_ACC_H, LT_ACC_FRAMES, LT_ACC_CELLS (clip size), LT_ACC_KEEP (a folder to
# keep the clips, tracks and per-run JSON in), LT_ACC_CTC (1: the CTC
# columns, an error without py-ctcmetrics; 0: without them; default: with them
# when build/venv has py-ctcmetrics, `scripts/install-deps.sh` makes it).
set -uo pipefail
BUILD=${BUILD:-build}
BIN=${LT_BIN:-./leuktrack}
SEEDS=${1:-"101 102 103"}
FAMS=${2:-"rim bright halo blur texture fluo clutter drift fast touching real realref"}
W=${LT_ACC_W:-320} H=${LT_ACC_H:-160} NF=${LT_ACC_FRAMES:-40} NC=${LT_ACC_CELLS:-6}
REAL=${LT_ACC_REAL:-../shared/data/leukocyte/rodinia_testfile_1frame.avi}
[[ -f $REAL ]] || REAL=/work/shared/data/leukocyte/rodinia_testfile_1frame.avi
T=${LT_ACC_KEEP:-$(mktemp -d)}
mkdir -p "$T"
[[ -n ${LT_ACC_KEEP:-} ]] || trap 'rm -rf "$T"' EXIT
PY=${LT_ACC_PY:-build/venv/bin/python}
CTC=${LT_ACC_CTC:-auto}
if [[ $CTC != 0 ]] && ! "$PY" -c 'import ctc_metrics, tifffile' 2>/dev/null; then
  if [[ $CTC == 1 ]]; then
    echo "accuracy: LT_ACC_CTC=1 but $PY has no py-ctcmetrics (scripts/install-deps.sh makes build/venv)" >&2
    exit 1
  fi
  echo "accuracy: no py-ctcmetrics in $PY: the DET, TRA, HOTA columns are left out (scripts/install-deps.sh)" >&2
  CTC=0
fi
[[ $CTC == 0 ]] || CTC=1
jnum() { sed -nE "s/.*\"$2\": ([-0-9.e+na]+).*/\1/p" "$1"; }
# ctc B: track B.y4m again with --format ctc, make B.truth.csv CTC GT, append
# "DET TRA HOTA" to B.ctc (ctc_evaluate prints "DET: x" lines)
ctc() {
  local b=$1
  # shellcheck disable=SC2086
  if ! "$BIN" "$b.y4m" --format ctc -o "$b.res/" ${LT_ACC_ARGS:-} 2>"$b.err"; then
    echo "accuracy: leuktrack --format ctc failed on $b: $(head -c 300 "$b.err")" >&2
    return 1
  fi
  "$PY" scripts/truth2ctc.py "$b.truth.csv" "$W" "$H" "$NF" "$b.gt" || return 1
  "$(dirname "$PY")/ctc_evaluate" --res "$b.res" --gt "$b.gt" --det --tra --hota >"$b.ctc.log" 2>&1
  awk '/^DET:/ { d = $2 } /^TRA:/ { t = $2 } /^HOTA:/ { h = $2 } END { if (d == "" || t == "" || h == "") exit 1
    print d, t, h }' "$b.ctc.log" >"$b.ctc" || { echo "accuracy: ctc_evaluate failed on $b: $(tail -3 "$b.ctc.log")" >&2; return 1; }
}
# ctc_mean "D T H D T H ...": the means of the DET, TRA, HOTA columns and a newline
ctc_mean() {
  [[ $CTC == 1 ]] || { echo; return; }
  awk -v l="$1" 'BEGIN { n = split(l, v, " "); for (i = 1; i <= n; i++) s[(i - 1) % 3] += v[i]
    k = n / 3; printf " %6.3f %6.3f %6.3f\n", s[0] / k, s[1] / k, s[2] / k }'
}
printf '%-9s %16s %8s %8s %8s %7s %9s' family "end-to-end" recall rmse_px rmse_cell false_tr switches
[[ $CTC == 0 ]] && echo || printf ' %6s %6s %6s\n' DET TRA HOTA
tot_t=0 tot_e=0 all_ctc=""
for fam in $FAMS; do
  t=0 e=0 m=0 g=0 se=0 sc=0 ft=0 sw=0 fam_ctc=""
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
    mp=$(jnum "$b.json" matched_points) r=$(jnum "$b.json" rmse_px) rc=$(jnum "$b.json" rmse_less_cell_offset_px)
    t=$((t + $(jnum "$b.json" tracked_cells))) e=$((e + $(jnum "$b.json" eligible_cells)))
    m=$((m + mp)) g=$((g + $(jnum "$b.json" truth_points)))
    ft=$((ft + $(jnum "$b.json" false_tracks))) sw=$((sw + $(jnum "$b.json" id_switches)))
    [[ $r == null ]] || se=$(awk -v a="$se" -v r="$r" -v n="$mp" 'BEGIN { printf "%.6f", a + r * r * n }')
    [[ $rc == null ]] || sc=$(awk -v a="$sc" -v r="$rc" -v n="$mp" 'BEGIN { printf "%.6f", a + r * r * n }')
    if [[ $CTC == 1 ]]; then
      ctc "$b" || exit 1
      fam_ctc="$fam_ctc $(cat "$b.ctc")"
    fi
  done
  tot_t=$((tot_t + t)) tot_e=$((tot_e + e)) all_ctc="$all_ctc$fam_ctc"
  awk -v f="$fam" -v t=$t -v e=$e -v m=$m -v g=$g -v se="$se" -v sc="$sc" -v ft=$ft -v sw=$sw 'BEGIN {
    printf "%-9s %6d/%-3d %5.1f%% %7.1f%% %8.2f %9.2f %7d %9d", f, t, e, e ? 100 * t / e : 0, g ? 100 * m / g : 0,
      m ? sqrt(se / m) : 0, m ? sqrt(sc / m) : 0, ft, sw }'
  ctc_mean "$fam_ctc"
done
awk -v t=$tot_t -v e=$tot_e 'BEGIN { printf "all       %6d/%-3d %5.1f%%", t, e, e ? 100 * t / e : 0 }'
[[ $CTC == 0 ]] || printf '%47s' ''
ctc_mean "$all_ctc"
