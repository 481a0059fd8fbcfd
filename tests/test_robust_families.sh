#!/usr/bin/env bash
# test_robust_families.sh - tracking on appearance families that leuktrack was
# not developed on (issue 15, docs/ACCURACY.md): one held-out seed (101) of
# each family of data/lt_synth2.c (320x160, 40 frames), tracked with the
# default options and scored by lt_eval through scripts/accuracy.sh. The
# bounds are the values measured on 2026-11-23 (branch leuk2: seed 101 has
# every eligible cell followed in 9 families, blur and fluo all but one, real
# 5 of 10 with 7 false tracks) with a margin of one cell per family (not
# targets; the targets of issue 15 are not all met, see docs/ACCURACY.md). Also: lt_synth2 is deterministic and rejects a bad family.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1: $3"; fails=$((fails + 1)); fi; }
S2=$BUILD/tools/lt_synth2
REAL=/work/shared/data/leukocyte/rodinia_testfile_1frame.avi
[[ -f ../shared/data/leukocyte/rodinia_testfile_1frame.avi ]] && REAL=../shared/data/leukocyte/rodinia_testfile_1frame.avi

"$S2" --family texture --seed 5 --out "$T/a.y4m" --truth "$T/a.csv" 2>/dev/null
"$S2" --family texture --seed 5 --out "$T/b.y4m" --truth "$T/b.csv" 2>/dev/null
check "lt_synth2 is deterministic" "cmp -s '$T/a.y4m' '$T/b.y4m' && cmp -s '$T/a.csv' '$T/b.csv'" "two runs differ"
"$S2" --family nosuch --out "$T/c.y4m" --truth "$T/c.csv" 2>/dev/null
rc=$?
check "lt_synth2 rejects an unknown family (exit 2)" "[ $rc -eq 2 ]" "rc=$rc"

if [[ ! -f $REAL ]]; then
  echo "SKIP family bench: Rodinia frame not found"
  exit $((fails > 0))
fi
LT_ACC_REAL=$REAL BUILD=$BUILD OMP_NUM_THREADS=1 bash scripts/accuracy.sh 101 >"$T/table" 2>"$T/err"
rc=$?
check "accuracy bench runs" "[ $rc -eq 0 ]" "rc=$rc $(head -c 300 "$T/err")"
# family: minimum cells tracked end to end (measured - 1), max false tracks, max RMSE (px)
while read -r fam tmin fmax rmax; do
  row=$(awk -v f="$fam" '$1 == f' "$T/table")
  t=$(awk '{ split($2, a, "/"); print a[1] + 0 }' <<<"$row")
  ft=$(awk '{ print $6 + 0 }' <<<"$row")
  rm=$(awk '{ print $5 + 0 }' <<<"$row")
  check "$fam: >= $tmin cells end to end, <= $fmax false tracks, RMSE <= $rmax px" \
    "[ -n '$row' ] && [ $t -ge $tmin ] && [ $ft -le $fmax ] && awk 'BEGIN { exit !($rm <= $rmax) }'" "got: $row"
done <<'BOUNDS'
rim 8 1 0.50
bright 9 1 0.51
halo 9 1 0.50
blur 10 1 0.81
texture 10 1 0.50
fluo 9 1 0.85
clutter 12 1 0.50
drift 10 1 0.50
fast 11 1 0.50
touching 15 1 0.50
real 4 10 2.77
BOUNDS
exit $((fails > 0))
