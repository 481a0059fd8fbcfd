#!/usr/bin/env bash
# test_vcm_vs_lk.sh - VCM (build/tools/lt_vcm_dump, CPU reference, defaults)
# against OpenCV's pyramidal Lucas-Kanade (cv2.calcOpticalFlowPyrLK, 21x21
# window, 3 pyramid levels, OpenCV's defaults) at the SAME points, both
# compared with the ground truth: Yosemite 9->10 (non-sky points, as is
# standard), Yosemite 8->9->10 with VCM's temporal prior, and the two
# FlyingChairs pairs. Prints both mean endpoint errors per case, over all
# points (a point LK loses, status 0, counts as zero motion) and over LK's
# tracked points only, and the medians. Asserted: VCM's mean below LK's over
# all points in every case, and over LK's tracked points where it is (all but
# Yosemite 9->10 without the temporal prior, where LK's 0.26 px beats VCM's
# 0.30). Not asserted, stated: LK's MEDIAN error is lower in every case (LK
# is more precise where it converges; VCM's coherence smoothing costs
# precision and buys robustness), and FlyingChairs motions up to 78 px exceed
# VCM's +-32 px search, which LK's pyramid reaches. Since VCM works on the
# frames rounded to 0..255 (issue 13), the colour FlyingChairs pairs (luma not
# an integer) give slightly different points: mean EPE VCM 14.574 -> 14.598
# px (LK 15.700 -> 15.644 at the new points) on 0000000, 2.992 -> 2.993 (LK
# 4.132 -> 4.094) on 0000001; Yosemite (8-bit) is unchanged.
# Needs Debian's python3-opencv (python3-numpy comes with it); without cv2 the
# test FAILS. PYTHON overrides the interpreter (default /usr/bin/python3,
# Debian's, which is where python3-opencv installs).
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
DATA=${LT_DATA:-../shared/data}
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3
DUMP=$BUILD/tools/lt_vcm_dump
. tests/lib.sh

if ! "$PY" -c 'import cv2, numpy' 2>/dev/null; then
  fail "vcm vs lk" "$PY cannot import cv2 (apt-get install python3-opencv)"
  exit 1
fi
[ -x "$DUMP" ] || { fail "vcm vs lk" "$DUMP not built (make tools)"; exit 1; }
Y=$DATA/flow/yosemite
C=$DATA/flow/flyingchairs
for f in "$Y/yos8.pgm" "$Y/yos9.pgm" "$Y/yos10.pgm" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png" \
  "$C/0000000-img0.ppm" "$C/0000001-gt.flo"; do
  [ -r "$f" ] || { fail "vcm vs lk data" "$f missing (set LT_DATA)"; exit 1; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

compare() { # name frame0 frame1 gt.flo mask|- vcm.csv mode
  "$PY" - "$@" <<'PYEOF'
import sys, numpy as np, cv2
name, f0, f1, gt, mask, csv, mode = sys.argv[1:8]
def flo(p):
    with open(p, 'rb') as f:
        assert f.read(4) == b'PIEH'
        w, h = np.frombuffer(f.read(8), '<i4')
        return np.frombuffer(f.read(), '<f4').reshape(h, w, 2)
I0 = cv2.imread(f0, cv2.IMREAD_GRAYSCALE); I1 = cv2.imread(f1, cv2.IMREAD_GRAYSCALE)
uv = flo(gt)
v = np.loadtxt(csv, delimiter=',', skiprows=1, ndmin=2)
x, y = v[:, 0].astype(int), v[:, 1].astype(int)
if mask != '-':
    m = cv2.imread(mask, cv2.IMREAD_GRAYSCALE)[y, x] > 0
    v, x, y = v[m], x[m], y[m]
pts = v[:, :2].astype(np.float32).reshape(-1, 1, 2)
crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01)
nxt, st, _ = cv2.calcOpticalFlowPyrLK(I0, I1, pts, None, winSize=(21, 21), maxLevel=3, criteria=crit)
lk = nxt.reshape(-1, 2) - v[:, :2]
ok = st.reshape(-1) == 1
g = uv[y, x]
e_vcm = np.hypot(*(v[:, 2:4] - g).T); e_lk = np.hypot(*(lk - g).T)
# LK's lost points (status 0) are scored at zero motion, so both methods are
# judged on the same points
e_lk0 = np.where(ok, e_lk, np.hypot(*g.T))
print("%s: %d points (LK lost %d); mean EPE VCM %.3f px, LK %.3f px; on LK's tracked points VCM %.3f, LK %.3f; "
      "median VCM %.3f, LK %.3f; |gt| mean %.2f max %.1f" % (name, len(v), (~ok).sum(), e_vcm.mean(),
      e_lk0.mean(), e_vcm[ok].mean(), e_lk[ok].mean(), np.median(e_vcm), np.median(e_lk0),
      np.hypot(*g.T).mean(), np.hypot(*g.T).max()))
print("RESULT %.6f %.6f %d %.6f %.6f" % (e_vcm.mean(), e_lk0.mean(), len(v), e_vcm[ok].mean(), e_lk[ok].mean()))
PYEOF
}

lt() { awk -v a="$1" -v b="$2" 'BEGIN {exit !(a < b)}'; }

check_case() { # name out tracked_too(1/0)
  local name=$1 out=$2 tracked=$3
  echo "$out" | grep -v '^RESULT'
  read -r ev el np evt elt <<<"$(echo "$out" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}')"
  if [ -z "${ev:-}" ]; then fail "$name" "comparison did not run: $out"; return; fi
  if lt "$ev" "$el"; then pass "$name: VCM mean EPE $ev < LK $el at the same $np points"
  else fail "$name" "VCM mean EPE $ev is not below LK's $el"; fi
  if [ "$tracked" = 1 ]; then
    if lt "$evt" "$elt"; then pass "$name: on LK's tracked points VCM $evt < LK $elt"
    else fail "$name (LK-tracked points)" "VCM $evt is not below LK's $elt"; fi
  else
    echo "NOTE $name: on LK's tracked points LK is better: VCM $evt vs LK $elt (not asserted)"
  fi
}

"$DUMP" "$Y/yos9.pgm" "$Y/yos10.pgm" >"$T/y.csv" || fail "lt_vcm_dump yosemite" "exit $?"
check_case "vcm vs lk yosemite 9->10 (non-sky)" \
  "$(compare yosemite "$Y/yos9.pgm" "$Y/yos10.pgm" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png" "$T/y.csv" 2 2>&1)" 0
"$DUMP" "$Y/yos9.pgm" "$Y/yos10.pgm" "$Y/yos8.pgm" >"$T/yt.csv" || fail "lt_vcm_dump yosemite temporal" "exit $?"
check_case "vcm vs lk yosemite 8->9->10 temporal prior (non-sky)" \
  "$(compare yosemite-temporal "$Y/yos9.pgm" "$Y/yos10.pgm" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png" "$T/yt.csv" 2 2>&1)" 1
for k in 0000000 0000001; do
  "$DUMP" "$C/$k-img0.ppm" "$C/$k-img1.ppm" >"$T/c$k.csv" || fail "lt_vcm_dump chairs $k" "exit $?"
  check_case "vcm vs lk flyingchairs $k" \
    "$(compare "chairs-$k" "$C/$k-img0.ppm" "$C/$k-img1.ppm" "$C/$k-gt.flo" - "$T/c$k.csv" 2 2>&1)" 1
done
[ "$failed" -eq 0 ]
