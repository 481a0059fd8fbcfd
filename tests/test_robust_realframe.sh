#!/usr/bin/env bash
# test_robust_realframe.sh - the reference program's real frame (Rodinia's
# rodinia_testfile_1frame.avi, issue 15): leuktrack's frame-0 detections with
# the default options in the reference's crop (--roi 0,110,640,219) against
# the reference's 38 candidates (its GICOV maxima above 1.8 inside the window
# where it evaluated GICOV: crop rows 30..196, x 22..617; the positions below
# are the ones test_leuk_stages.c computes with the reference's geometry and
# checks against the reference's counts 171/155/38), and every other
# detection listed with why it is there.
#  (a) each candidate has a detection within 4 px, except the SHIFTED ones,
#      whose detection is listed (a circle of another radius wins now that
#      the radii go in steps of 1; within 8.5 px, and the candidate inside
#      the detection's circle: the same cell, centred elsewhere; the
#      reference's maximum is suppressed by ours within the dilation disc
#      before any host-side step sees it, docs/ACCURACY.md, leukacc);
#  (b) every detection is within 4 px of a candidate or listed in EXTRA
#      (within 2 px) with its reason;
#  (c) every listed detection is there.
# The lists describe the defaults of 2026-11-23 (branch leuk2): a change of
# the detection that moves them shows here, to be explained again.
set -u
cd "$(dirname "$0")/.."
LT=${LT_BIN:-./leuktrack}
. tests/lib.sh
failed=0
REAL=../shared/data/leukocyte/rodinia_testfile_1frame.avi
[[ -f $REAL ]] || REAL=/work/shared/data/leukocyte/rodinia_testfile_1frame.avi
if [[ ! -f $REAL ]]; then
  skip realframe "Rodinia frame not found"
  exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! "$LT" "$REAL" --roi 0,110,640,219 --frames 0:1 -o "$T/d.csv" 2>"$T/err"; then
  fail realframe_run "$(head -c 300 "$T/err")"
  exit 1
fi

# the reference's 38 candidates (frame coordinates)
REF="522,142 201,145 96,166 253,167 355,168 318,171 407,172 226,178 292,178 103,186 461,187 488,192
323,205 617,206 486,209 560,210 211,215 136,216 281,216 499,221 389,222 103,224 191,225 340,228
617,230 169,236 558,240 370,245 579,247 336,252 220,255 549,260 81,262 482,263 115,265 235,291
193,300 246,301"
# candidate -> our detection of it, further than 4 px
SHIFTED="617,206>620,203 389,222>385,222 103,224>108,218 169,236>172,240 81,262>89,262"
# detection | why it is there (cell, or what it is and how to remove it)
EXTRA="240,124|above the upper vessel wall (crop row 14, outside the reference's window): background texture; --roi to the lumen removes it
463,124|above the upper vessel wall, outside the window: background; --roi to the lumen
527,128|above the upper vessel wall, outside the window: background; --roi to the lumen
557,128|above the upper vessel wall, outside the window: background; --roi to the lumen
433,131|above the upper vessel wall, outside the window: background; --roi to the lumen
491,135|above the upper vessel wall, outside the window: a bright round cell-like object (a cell outside the lumen); --roi to the lumen
624,180|at the right border (x >= 618, outside the window): faint background, no cell; --roi 0,110,620,219 removes it
557,189|inside the window, faint texture of the lumen, no distinct cell: a false detection (|GICOV| 1.88, just over 1.8); --gicov-threshold 1.9 removes it
511,306|on the lower vessel wall's edge (crop row 196): a dark line, no cell; --roi to the lumen
408,305|by the lower vessel wall: a small bright spot (radius under 8 px: debris or a platelet), no leukocyte; --roi to the lumen
227,312|below the lower vessel wall, outside the window: background; --roi to the lumen
402,314|below the lower vessel wall, outside the window: background; --roi to the lumen
184,320|below the lower vessel wall, outside the window: background; --roi to the lumen"

# (a)-(c) in one awk pass over the frame-0 rows
out=$(awk -F, -v ref="$REF" -v shifted="$SHIFTED" -v extra="$EXTRA" '
  function d(ax, ay, bx, by) { return sqrt((ax - bx) ^ 2 + (ay - by) ^ 2) }
  BEGIN {
    nr = split(ref, R, /[ \n]+/)
    ns = split(shifted, S, " ")
    ne = split(extra, E, "\n")
    for (i = 1; i <= ns; i++) { split(S[i], p, ">"); split(p[1], a, ","); split(p[2], b, ","); sx[i] = a[1]; sy[i] = a[2]; tx[i] = b[1]; ty[i] = b[2] }
    for (i = 1; i <= ne; i++) { split(E[i], p, "|"); split(p[1], a, ","); ex[i] = a[1]; ey[i] = a[2]; why[i] = p[2] }
  }
  NR > 1 && $1 == 0 { n++; x[n] = $4; y[n] = $5; r[n] = $6 }
  END {
    bad = 0
    for (i = 1; i <= nr; i++) {
      split(R[i], a, ","); best = 1e9
      for (j = 1; j <= n; j++) if (d(a[1], a[2], x[j], y[j]) < best) best = d(a[1], a[2], x[j], y[j])
      if (best <= 4) { found++; continue }
      ok = 0
      for (k = 1; k <= ns; k++) if (sx[k] == a[1] && sy[k] == a[2])
        for (j = 1; j <= n; j++) if (d(tx[k], ty[k], x[j], y[j]) <= 2 && d(a[1], a[2], x[j], y[j]) <= 8.5 && d(a[1], a[2], x[j], y[j]) < r[j]) ok = 1
      if (ok) shift++; else { bad++; print "candidate " R[i] " has no detection within 4 px (nearest " best ") and is not listed as shifted" }
    }
    for (j = 1; j <= n; j++) {
      near = 0
      for (i = 1; i <= nr; i++) { split(R[i], a, ","); if (d(a[1], a[2], x[j], y[j]) <= 4) near = 1 }
      if (near) continue
      listed = 0
      for (k = 1; k <= ns; k++) if (d(tx[k], ty[k], x[j], y[j]) <= 2) listed = 1
      for (k = 1; k <= ne; k++) if (d(ex[k], ey[k], x[j], y[j]) <= 2) listed = 1
      if (listed) other++; else { bad++; printf "detection %.1f,%.1f is neither near a candidate nor listed\n", x[j], y[j] }
    }
    for (k = 1; k <= ne; k++) {
      seen = 0
      for (j = 1; j <= n; j++) if (d(ex[k], ey[k], x[j], y[j]) <= 2) seen = 1
      if (!seen) { bad++; print "listed detection " ex[k] "," ey[k] " (" why[k] ") is not there" }
    }
    printf "SUMMARY %d detections; %d of %d candidates within 4 px, %d shifted (listed); %d other detections listed; %d problems\n", n, found, nr, shift, other, bad
  }' "$T/d.csv")
echo "$out" | grep -v '^SUMMARY' | sed 's/^/  /'
sum=$(echo "$out" | grep '^SUMMARY' | sed 's/^SUMMARY //')
case "$sum" in
*" 0 problems") pass "real frame: every reference candidate found and every other detection explained ($sum)" ;;
*) fail "realframe" "$sum" ;;
esac
exit $((failed > 0))
