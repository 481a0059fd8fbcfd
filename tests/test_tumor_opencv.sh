#!/usr/bin/env bash
# test_tumor_opencv.sh - an independent oracle for the tumour-mode scores:
# OpenCV's cv2.matchTemplate(TM_CCOEFF_NORMED) (Debian python3-opencv) on
# the same template and search region as lt_tumor_dump (our exact reference
# and the CPU backend). Real frames (data/fluoro, 8-bit), the six template
# sizes and shift ranges of the paper plus a 1-pixel-high and a large one.
# Agreement required: max |ours - OpenCV| <= 1e-4 (OpenCV works in float;
# its sums over up to 18k pixels carry ~1e-6 relative error). OpenCV missing
# is a FAIL, not a skip: without it this test proves nothing.
# LT_TUMOR_BACKEND=cuda checks the CUDA backend's maps instead of the CPU
# backend's (on the GPU machine; the exact reference is checked either way).
# Prints "PASS name" / "FAIL name: why"; exit 1 on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LT_DATA=${LT_DATA:-../shared/data}
DUMP=$BUILD/tools/lt_tumor_dump
BE=${LT_TUMOR_BACKEND:-cpu}
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }

PY=
for p in ${LT_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import cv2, numpy' 2>/dev/null; then PY=$p; break; fi
done
if [[ -z $PY ]]; then
  fail tumor_opencv_available "no python3 with cv2 and numpy (apt-get install python3-opencv)"
  exit 1
fi
[[ -x $DUMP ]] || { fail tumor_opencv_dump_built "$DUMP not built (make tools)"; exit 1; }
ANGIO=$LT_DATA/fluoro/angio_clinical_Vukicevic/proj0_37x512x512_u8.raw
PHANTOM=$LT_DATA/fluoro/angio_phantom_Vukicevic/IM1_14x512x512_u8.raw
for f in "$ANGIO" "$PHANTOM"; do
  [[ -r $f ]] || { fail tumor_opencv_data "cannot read $f"; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/lt_tumor_cv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# name raw tframe x y tw th mframe V H   (tw x th = columns x rows)
cases=(
  "p1_53x54_18_9 $ANGIO 0 200 180 54 53 5 18 9"
  "p2_23x21_11_5 $ANGIO 3 300 260 21 23 4 11 5"
  "p3_76x45_9_4 $ANGIO 10 120 300 45 76 12 9 4"
  "p4_156x116_9_3 $ANGIO 20 180 150 116 156 21 9 3"
  "p5_86x78_11_6 $PHANTOM 1 220 200 78 86 7 11 6"
  "p6_141x107_9_2 $PHANTOM 1 150 120 107 141 13 9 2"
  "row_1x40_6_6 $ANGIO 0 250 250 40 1 1 6 6"
  "big_200x180_20_20 $ANGIO 0 150 150 180 200 2 20 20"
)
for c in "${cases[@]}"; do
  read -r name raw tf x y tw th mf V H <<<"$c"
  if ! "$DUMP" "$raw" 512 512 "$tf" "$x" "$y" "$tw" "$th" "$mf" "$V" "$H" "$tmp/$name.bin" "$BE" 2>"$tmp/err"; then
    fail "tumor_opencv_${BE}_$name" "lt_tumor_dump failed: $(head -c 300 "$tmp/err")"
    continue
  fi
  if msg=$("$PY" - "$raw" "$tf" "$x" "$y" "$tw" "$th" "$mf" "$V" "$H" "$tmp/$name.bin" "$BE" 2>&1 <<'PYEOF'
import sys, numpy as np, cv2
raw, tf, x, y, tw, th, mf, V, H, out, be = sys.argv[1], *map(int, sys.argv[2:10]), sys.argv[10], sys.argv[11]
stack = np.memmap(raw, dtype=np.uint8, mode="r").reshape(-1, 512, 512)
t = stack[tf, y:y + th, x:x + tw].astype(np.float32)
roi = stack[mf, y - V:y + V + th, x - H:x + H + tw].astype(np.float32)
cv = cv2.matchTemplate(roi, t, cv2.TM_CCOEFF_NORMED).astype(np.float64)
n = (2 * V + 1) * (2 * H + 1)
ours = np.fromfile(out, dtype="<f8")
exact, fast = ours[:n].reshape(2 * V + 1, 2 * H + 1), ours[n:].reshape(2 * V + 1, 2 * H + 1)
if cv.shape != exact.shape:
    print("shape %s vs %s" % (cv.shape, exact.shape)); sys.exit(1)
de, df = np.abs(exact - cv).max(), np.abs(fast - cv).max()
pe, pc = (tuple(int(v) for v in np.unravel_index(m.argmax(), m.shape)) for m in (exact, cv))
pb = tuple(int(v) for v in np.unravel_index(fast.argmax(), fast.shape))
print("max|exact-cv| %.2e max|%s-cv| %.2e peak ours %s (%s %s) opencv %s, r %.4f" % (de, be, df, pe, be, pb, pc, exact.max()))
same = all(p == pc or cv[p] >= cv.max() - 1e-4 for p in (pe, pb))  # a near-tie may pick either
sys.exit(0 if de <= 1e-4 and df <= 1e-4 and same else 1)
PYEOF
  ); then
    pass "tumor_opencv_${BE}_$name"
    echo "# $name: $msg"
  else
    fail "tumor_opencv_${BE}_$name" "$msg"
  fi
done
[ "$failed" -eq 0 ]
