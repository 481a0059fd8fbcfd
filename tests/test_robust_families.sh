#!/usr/bin/env bash
# test_robust_families.sh - tracking on appearance families that leuktrack was
# not developed on (issue 15, docs/ACCURACY.md): one held-out seed (101) of
# each family of data/lt_synth2.c (320x160, 40 frames), tracked with the
# default options and scored by lt_eval through scripts/accuracy.sh. The
# bounds are the values measured on 2026-11-23 (branch leuk2: seed 101 has
# every eligible cell followed in 9 families, blur and fluo all but one, real
# 5 of 10 with 7 false tracks, 3 with --hold since leuk4, 2 since leukacc,
# bound 3; realref, added by leukacc: 6 of 11, no false track; blur and fluo
# all since leukacc5, 2026-11-24: 12 and 11 cells, CTC bounds raised to the
# new values minus 0.05) with a margin of one cell per family (not
# targets; the targets of issue 15 are not all met, see docs/ACCURACY.md).
# The same runs are scored by the Cell Tracking Challenge's DET, TRA and HOTA
# (py-ctcmetrics' ctc_evaluate in build/venv, made here when missing: no
# py-ctcmetrics = FAIL, and scripts/accuracy.sh must fail without it when
# asked for the CTC columns), bounds measured on 2026-11-24 minus 0.05;
# realref's lowered on 2026-11-25 to the appearance cue's (leukacc9,
# --appearance 0.7: 0.480 / 0.468 / 0.427 against 0.645 / 0.635 / 0.601 on
# main 6dd219e, one of its 6 cells lost end to end on seed 101;
# docs/ACCURACY.md, twelfth pass).
# The tests of --static-span, --hold, --recheck, --motion and
# --detect-early below measure each option against the tracking it was
# measured on, main's before the appearance cue: they run with
# --appearance 0 (with the cue, real seed 3 follows a slow faint cell that
# --hold 20 then hides as static, and the cue alone follows the cells that
# --recheck 0.5 gained: 15 cells on seeds 1-3 with and without it).
# Also: lt_synth2 is deterministic and rejects a bad family, and
# --static-span and --hold remove false tracks on the real family's tuning
# seeds, --hold only by leaving whole tracks out, and its rules of leukacc
# hold on seeds 4-6; --recheck 0.5 and --motion 4 (options) gain what was
# measured on the real tuning seeds (--motion 4: without adding false tracks);
# --hold hides exactly the tracks that an awk reference of its rule picks from
# --hold 0's rows (the medians of the ends of the tenth pass included);
# --detect-early 2 follows one cell more than 0 on six real tuning clips.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
S2=$BUILD/tools/lt_synth2
REAL=/work/shared/data/leukocyte/rodinia_testfile_1frame.avi
[[ -f ../shared/data/leukocyte/rodinia_testfile_1frame.avi ]] && REAL=../shared/data/leukocyte/rodinia_testfile_1frame.avi

"$S2" --family texture --seed 5 --out "$T/a.y4m" --truth "$T/a.csv" 2>/dev/null
"$S2" --family texture --seed 5 --out "$T/b.y4m" --truth "$T/b.csv" 2>/dev/null
check_eval "lt_synth2 is deterministic" "cmp -s '$T/a.y4m' '$T/b.y4m' && cmp -s '$T/a.csv' '$T/b.csv'" "two runs differ"
"$S2" --family nosuch --out "$T/c.y4m" --truth "$T/c.csv" 2>/dev/null
rc=$?
check_eval "lt_synth2 rejects an unknown family (exit 2)" "[ $rc -eq 2 ]" "rc=$rc"

if [[ ! -f $REAL ]]; then
  echo "SKIP family bench: Rodinia frame not found"
  exit $((failed > 0))
fi
need_readers || exit 1
LT_ACC_CTC=1 LT_ACC_PY=/nonexistent/python LT_ACC_REAL=$REAL BUILD=$BUILD bash scripts/accuracy.sh 101 rim \
  >"$T/noctc" 2>"$T/err"
rc=$?
check_eval "accuracy.sh with LT_ACC_CTC=1 and no py-ctcmetrics fails (no silent pass)" \
  "[ $rc -ne 0 ] && grep -q 'no py-ctcmetrics' '$T/err'" "rc=$rc $(head -c 300 "$T/err")"
LT_ACC_CTC=1 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 bash scripts/accuracy.sh 101 >"$T/table" 2>"$T/err"
rc=$?
check_eval "accuracy bench runs" "[ $rc -eq 0 ]" "rc=$rc $(head -c 300 "$T/err")"
# family: minimum cells tracked end to end (measured - 1), max false tracks,
# max RMSE (px), minimum DET, TRA, HOTA (measured - 0.05)
while read -r fam tmin fmax rmax dmin tmin2 hmin; do
  row=$(awk -v f="$fam" '$1 == f' "$T/table")
  t=$(awk '{ split($2, a, "/"); print a[1] + 0 }' <<<"$row")
  ft=$(awk '{ print $7 + 0 }' <<<"$row")
  rm=$(awk '{ print $5 + 0 }' <<<"$row")
  check_eval "$fam: >= $tmin cells end to end, <= $fmax false tracks, RMSE <= $rmax px" \
    "[ -n '$row' ] && [ $t -ge $tmin ] && [ $ft -le $fmax ] && awk 'BEGIN { exit !($rm <= $rmax) }'" "got: $row"
  check_eval "$fam: CTC DET >= $dmin, TRA >= $tmin2, HOTA >= $hmin" \
    "awk -v d=$dmin -v t=$tmin2 -v h=$hmin '{ exit !(NF == 11 && \$9 >= d && \$10 >= t && \$11 >= h) }' <<<'$row'" "got: $row"
done <<'BOUNDS'
rim 8 1 0.50 0.81 0.81 0.84
bright 9 1 0.51 0.78 0.78 0.82
halo 9 1 0.50 0.81 0.81 0.84
blur 11 1 0.81 0.78 0.77 0.78
texture 10 1 0.50 0.87 0.87 0.88
fluo 10 1 0.85 0.87 0.87 0.88
clutter 12 1 0.50 0.87 0.87 0.89
drift 10 1 0.50 0.86 0.86 0.88
fast 11 1 0.50 0.87 0.87 0.87
touching 15 1 0.50 0.88 0.88 0.88
real 4 3 2.77 0.65 0.63 0.53
realref 5 1 2.62 0.43 0.41 0.37
BOUNDS
# --static-span (a new cell must have changed since an earlier frame): on the
# real family's tuning seeds 1-3 it removes static background structures that
# crossed the threshold after the first frame (measured 2026-11-23: 23 false
# tracks with the default, 30 with --static-span 0, same cells end to end)
A0="--appearance 0"
ft_of() { awk '$1 == "real" { print $7 + 0 }' "$1"; }
e2e_of() { awk '$1 == "real" { print $2 }' "$1"; }
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 LT_ACC_ARGS="--hold 0 $A0" bash scripts/accuracy.sh "1 2 3" real \
  >"$T/s10" 2>"$T/err"
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 LT_ACC_ARGS="--static-span 0 --hold 0 $A0" bash scripts/accuracy.sh \
  "1 2 3" real >"$T/s0" 2>>"$T/err"
a=$(ft_of "$T/s10") b=$(ft_of "$T/s0")
check_eval "real, seeds 1-3: --static-span 10 leaves at least 5 fewer false tracks than 0" \
  "[ -n '$a' ] && [ -n '$b' ] && [ $a -le $((b - 5)) ]" "got $a vs $b $(head -c 300 "$T/err")"
# --hold 20 (default) against --hold 0: measured 2026-11-24, 23 -> 5 false
# tracks (4 since leukacc), the same cells followed end to end
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 LT_ACC_ARGS="$A0" LT_ACC_KEEP=$T/h bash scripts/accuracy.sh "1 2 3" real \
  >"$T/h20" 2>>"$T/err"
c=$(ft_of "$T/h20")
check_eval "real, seeds 1-3: --hold 20 leaves at least 12 fewer false tracks than --hold 0, same cells end to end" \
  "[ -n '$c' ] && [ $c -le $((a - 12)) ] && [ '$(e2e_of "$T/h20")' = '$(e2e_of "$T/s10")' ]" \
  "got $c vs $a, $(e2e_of "$T/h20") vs $(e2e_of "$T/s10") $(head -c 300 "$T/err")"
# --hold's rules of leukacc on the real family's seeds 4-6 (tuning seeds,
# measured 2026-11-24): static background below 1.6 x the threshold (9 false
# tracks with 1.4), and a cell that passes over a hidden track's structure
# gets its own track (without that rule seed 5 loses a cell): 15 cells end to
# end, 5 false tracks; 7 since leukacc5 (2026-11-24: a detection counts when
# its circle is in the frame, whatever its contour does at the border; seed 5's
# two new ones start on a static dark disc cut by the left border of the real
# background (near x 5-30, y 100-125) when a passing cell changes it, docs/ACCURACY.md);
# 16 cells and 8 false tracks since the square tracking window (2026-11-24, 2R
# on each side instead of 4R along x: seeds 4-15 as many false tracks as before,
# 21, and the same cells; docs/ACCURACY.md)
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 bash scripts/accuracy.sh "4 5 6" real >"$T/r456" 2>>"$T/err"
r456=$(awk '$1 == "real"' "$T/r456")
check_eval "real, seeds 4-6: >= 15 cells end to end, <= 8 false tracks (--hold's rules of leukacc)" \
  "[ -n '$r456' ] && [ \$(awk '{ split(\$2, a, \"/\"); print a[1] }' <<<'$r456') -ge 15 ] && [ \$(ft_of '$T/r456') -le 8 ]" "got: $r456"
# --recheck 0.5 (off by default since 2026-11-24: it costs ~40 % of the H100
# frame on the real clip and gained no cell on the held-out seeds; leukacc2):
# a track that jumped off its prediction is checked there. Real family,
# tuning seeds 1-3, measured 2026-11-24: 14 cells end to end with it, 11
# without (the tracks jumped sideways onto texture beside a faint cell, lost
# it and a new track started at the next full detection), false tracks 3
# against 4
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 LT_ACC_ARGS="--recheck 0.5 $A0" bash scripts/accuracy.sh "1 2 3" real \
  >"$T/rc5" 2>>"$T/err"
n_of() { awk '$1 == "real" { split($2, a, "/"); print a[1] }' "$1"; }
a=$(n_of "$T/rc5") b=$(n_of "$T/h20")
check_eval "real, seeds 1-3: --recheck 0.5 follows at least 2 more cells end to end than the default (off), no more false tracks" \
  "[ -n '$a' ] && [ -n '$b' ] && [ $a -ge $((b + 2)) ] && [ $(ft_of "$T/rc5") -le $(ft_of "$T/h20") ]" \
  "got $a vs $b cells, $(ft_of "$T/rc5") vs $(ft_of "$T/h20") false tracks $(head -c 300 "$T/err")"
# --motion 4 (off by default; leukacc3, leukacc4): new cells are also
# detected on the frame less a background made of earlier frames (a copy
# every 4 frames, the median of the last 5, tracked cells left out), and a
# track so found must go on showing there. Real family, tuning seeds 1-3,
# measured 2026-11-24 (leukacc4): recall 53.2 % with the default, 70.3 % with
# it (the faint cells that GICOV cannot tell from the texture of the frame),
# 11 -> 14 cells end to end, false tracks 4 -> 3 (8 before leukacc4's rules;
# why it is not the default: docs/ACCURACY.md)
LT_ACC_CTC=0 LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 LT_ACC_ARGS="--motion 4 $A0" bash scripts/accuracy.sh "1 2 3" real \
  >"$T/mo4" 2>>"$T/err"
rec_of() { awk '$1 == "real" { sub("%", "", $4); print $4 + 0 }' "$1"; }
a=$(rec_of "$T/mo4") b=$(rec_of "$T/h20")
check_eval "real, seeds 1-3: --motion 4 raises recall by at least 10 points over the default (off), at least 2 more cells end to end, no more false tracks" \
  "[ -n '$a' ] && [ -n '$b' ] && awk 'BEGIN { exit !($a >= $b + 10) }' && [ $(n_of "$T/mo4") -ge $(($(n_of "$T/h20") + 2)) ] &&
    [ $(ft_of "$T/mo4") -le $(ft_of "$T/h20") ]" \
  "got recall $a vs $b, $(n_of "$T/mo4") vs $(n_of "$T/h20") cells, $(ft_of "$T/mo4") vs $(ft_of "$T/h20") false tracks $(head -c 300 "$T/err")"
# leukacc5's rules on tuning clips of seeds 7-30 (2026-11-24), each clip
# with every eligible cell followed end to end and no false track; before,
# one cell each was not: rim 14 and blur 17 (an entering cell dropped in its
# first fully visible frame: its refined contour crossed the frame's border,
# its circle did not), drift 25 and fluo 7 (a faint cell of the first frame
# under the adaptive threshold, found at frame 10 / never; now followed from
# the first frame by a held track that scores above the threshold later)
for c in rim:14 blur:17 drift:25 fluo:7; do
  fam=${c%:*} s=${c#*:} b=$T/l5-$fam-$s
  "$S2" --family "$fam" --seed "$s" --width 320 --height 160 --frames 40 --cells 6 --real "$REAL" --out "$b.y4m" \
    --truth "$b.truth.csv" 2>"$b.err" && ${LT_BIN:-./leuktrack} "$b.y4m" -o "$b.csv" 2>>"$b.err" &&
    "$BUILD/tools/lt_eval" "$b.csv" "$b.truth.csv" --size 320x160 --json >"$b.json" 2>>"$b.err"
  tc=$(sed -nE 's/.*"tracked_cells": ([0-9]+).*/\1/p' "$b.json") ec=$(sed -nE 's/.*"eligible_cells": ([0-9]+).*/\1/p' "$b.json")
  fc=$(sed -nE 's/.*"false_tracks": ([0-9]+).*/\1/p' "$b.json")
  check_eval "$fam seed $s: every cell end to end, no false track (leukacc5)" \
    "[ -n '$tc' ] && [ '$tc' = '$ec' ] && [ '$fc' = 0 ]" "got $tc/$ec cells, $fc false tracks $(head -c 300 "$b.err")"
done
# --detect-early 2 (the default since leukacc7, 2026-11-24): the entry region
# is detected again on frames 1 and 2, for new tracks only, each written only
# if it scores above its start while held. Real and realref tuning clips of
# seeds 7-30 where a cell of the first frame scored under the threshold there
# and over it at frame 1 or 2, and waited for frame 10 before (or was never
# followed): measured one cell more end to end than with --detect-early 0
# (main's behaviour), the same false tracks
for c in real:8:5 real:15:6 real:21:5 real:26:4 realref:15:7 realref:21:4; do
  IFS=: read -r fam s want <<<"$c"
  b=$T/de-$fam-$s
  "$S2" --family "$fam" --seed "$s" --width 320 --height 160 --frames 40 --cells 6 --real "$REAL" --out "$b.y4m" \
    --truth "$b.truth.csv" 2>"$b.err"
  for a in 2 0; do
    ${LT_BIN:-./leuktrack} "$b.y4m" -o "$b.$a.csv" --detect-early $a $A0 2>>"$b.err" &&
      "$BUILD/tools/lt_eval" "$b.$a.csv" "$b.truth.csv" --size 320x160 --json >"$b.$a.json" 2>>"$b.err"
  done
  t2=$(sed -nE 's/.*"tracked_cells": ([0-9]+).*/\1/p' "$b.2.json") t0=$(sed -nE 's/.*"tracked_cells": ([0-9]+).*/\1/p' "$b.0.json")
  f2=$(sed -nE 's/.*"false_tracks": ([0-9]+).*/\1/p' "$b.2.json") f0=$(sed -nE 's/.*"false_tracks": ([0-9]+).*/\1/p' "$b.0.json")
  check_eval "$fam seed $s: --detect-early 2 follows $want cells end to end, one more than 0, no more false tracks (leukacc7)" \
    "[ -n '$t2' ] && [ -n '$t0' ] && [ '$t2' -ge $want ] && [ '$t2' -ge \$(( ${t0:-0} + 1 )) ] && [ '${f2:-99}' -le '${f0:-0}' ]" \
    "got $t2 vs $t0 cells, $f2 vs $f0 false tracks $(head -c 300 "$b.err")"
done
# --appearance 0.7 (the default since leukacc9, 2026-11-25): the
# re-localisation adds 0.7 x the correlation of the disc at each position
# with the cell's template. Real and realref tuning clips of seeds 7-60 where
# it removed false tracks (picked from the per-clip results of the tuning
# run, docs/ACCURACY.md twelfth pass; over all 108 clips it moves cells both
# ways): measured 17 false tracks with --appearance 0 (main's tracks), 2
# with the default, 29 -> 30 cells end to end
fa=0 f0=0 ca=0 c0=0 why=""
for c in real:32 real:35 real:53 realref:7 realref:48 realref:57; do
  IFS=: read -r fam s <<<"$c"
  b=$T/ap-$fam-$s
  "$S2" --family "$fam" --seed "$s" --width 320 --height 160 --frames 40 --cells 6 --real "$REAL" --out "$b.y4m" \
    --truth "$b.truth.csv" 2>"$b.err"
  for a in d 0; do
    opt=""; [[ $a == 0 ]] && opt="--appearance 0"
    # shellcheck disable=SC2086
    ${LT_BIN:-./leuktrack} "$b.y4m" -o "$b.$a.csv" $opt 2>>"$b.err" &&
      "$BUILD/tools/lt_eval" "$b.$a.csv" "$b.truth.csv" --size 320x160 --json >"$b.$a.json" 2>>"$b.err"
  done
  # js JSON KEY DEFAULT: the count, or DEFAULT (one that fails the check) when missing
  js() { local v; v=$(sed -nE "s/.*\"$2\": ([0-9]+).*/\1/p" "$1" 2>/dev/null); echo "${v:-$3}"; }
  fa=$((fa + $(js "$b.d.json" false_tracks 99))) f0=$((f0 + $(js "$b.0.json" false_tracks 0)))
  ca=$((ca + $(js "$b.d.json" tracked_cells 0))) c0=$((c0 + $(js "$b.0.json" tracked_cells 99)))
  why="$why $fam-$s: $(js "$b.d.json" tracked_cells ?)/$(js "$b.d.json" false_tracks ?) vs $(js "$b.0.json" tracked_cells ?)/$(js "$b.0.json" false_tracks ?);"
done
check_eval "six real/realref tuning clips: the appearance cue (default) leaves at most half the false tracks of --appearance 0 (>= 10 there), no fewer cells end to end (leukacc9)" \
  "[ $f0 -ge 10 ] && [ $((2 * fa)) -le $f0 ] && [ $ca -ge $c0 ]" "got $fa vs $f0 false tracks, $ca vs $c0 cells:$why $(cat "$T"/ap-*.err | head -c 300)"
# the rows written with --hold are those of --hold 0 less whole tracks
# (delayed, not changed), and it left some out (on this clip; elsewhere a
# cell that passes over a hidden track's structure is written under a new
# id, where with --hold 0 the structure's track takes it)
LT=${LT_BIN:-./leuktrack}
"$LT" "$T/h/real-1.y4m" -o "$T/h0.csv" --hold 0 $A0 2>>"$T/err"
hidden=$(awk -F, 'NR == FNR { if (FNR > 1) keep[$3] = 1; next } FNR > 1 && !($3 in keep) { h[$3] = 1 }
  END { n = 0; for (i in h) n++; print n }' "$T/h/real-1.tracks.csv" "$T/h0.csv")
check_eval "--hold writes --hold 0's rows less $hidden whole tracks (real seed 1)" \
  "[ $hidden -ge 1 ] && cmp -s '$T/h/real-1.tracks.csv' <(awk -F, 'NR == FNR { if (FNR > 1) keep[\$3] = 1; next }
    FNR == 1 || (\$3 in keep)' '$T/h/real-1.tracks.csv' '$T/h0.csv')" "differs or nothing hidden"
# --hold's judgement recomputed here from --hold 0's rows (a reference of
# pipeline.c's judge() in awk, ends = 0 gives the endpoints alone, the rule
# before the tenth pass): a track whose first 20 frames keep it within 4 px
# of its start, by its endpoints or by the medians of its first and last k
# positions (k = 3, or half its frames when fewer; that distance times
# (n - 1) / (n - k)), and which never scores |GICOV| 2.88, is hidden; one
# that the video's end cut short after K < 20 frames needs K/20 of the 4 px.
# Real tuning seed 8 (2026-11-24): the tracks hidden are exactly those, and
# the medians hide one more than the endpoints would (with --detect-early 0:
# the early detections' tracks have a rule of their own, tested above, that
# this reference does not model).
HOLD_REF='function med(a, b, c, k) {
    if (k == 1) return a
    if (k == 2) return (a + b) / 2
    return a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b))
  }
  BEGIN { FS = "," }
  FNR == 1 { next }
  { f = $1 + 0; id = $3
    if (!(id in n)) { f0[id] = f; n[id] = 0; g[id] = 0 }
    if (f > end) end = f
    if (f < f0[id] + 20) {
      m = ++n[id]; x[id, m] = $4; y[id, m] = $5; last[id] = f
      a = $7 < 0 ? -$7 : $7; if (a > g[id]) g[id] = a
    }
    lastall[id] = f }
  END { for (id in n) {
      m = n[id]; moved = sqrt((x[id, m] - x[id, 1]) ^ 2 + (y[id, m] - y[id, 1]) ^ 2)
      k = int(m / 2); if (k > ends) k = ends
      if (k >= 1) {
        dx = med(x[id, m], x[id, m - 1], x[id, m - 2], k) - med(x[id, 1], x[id, 2], x[id, 3], k)
        dy = med(y[id, m], y[id, m - 1], y[id, m - 2], k) - med(y[id, 1], y[id, 2], y[id, 3], k)
        d = sqrt(dx ^ 2 + dy ^ 2) * (m - 1) / (m - k); if (d < moved) moved = d
      }
      need = 4; span = last[id] - f0[id] + 1
      if (lastall[id] == end && span < 20) need *= span / 20
      if (moved < need && g[id] < 2.88) print id } }'
b8=$T/hold-real-8
"$S2" --family real --seed 8 --width 320 --height 160 --frames 40 --cells 6 --real "$REAL" --out "$b8.y4m" \
  --truth "$b8.truth.csv" 2>"$b8.err" && "$LT" "$b8.y4m" -o "$b8.csv" --detect-early 0 $A0 2>>"$b8.err" &&
  "$LT" "$b8.y4m" -o "$b8.h0.csv" --hold 0 --detect-early 0 $A0 2>>"$b8.err"
got=$(awk -F, 'NR == FNR { if (FNR > 1) keep[$3] = 1; next } FNR > 1 && !($3 in keep) { h[$3] = 1 }
  END { for (i in h) print i }' "$b8.csv" "$b8.h0.csv" | sort -n | tr '\n' ' ')
want=$(awk -v ends=3 "$HOLD_REF" "$b8.h0.csv" | sort -n | tr '\n' ' ')
ends=$(awk -v ends=0 "$HOLD_REF" "$b8.h0.csv" | sort -n | tr '\n' ' ')
check_eval "--hold hides the tracks its rule picks from --hold 0's rows, the medians of the ends one more (real seed 8)" \
  "[ -n '$want' ] && [ '$got' = '$want' ] && [ \$(wc -w <<<'$want') -gt \$(wc -w <<<'$ends') ]" \
  "hidden [$got], the rule [$want], endpoints alone [$ends] $(head -c 300 "$b8.err")"
exit $((failed > 0))
