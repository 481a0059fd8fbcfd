#!/usr/bin/env bash
# bench_vcm.sh - the vcm part of `make bench`: pairs/s and ms per pair of
# `leuktrack vcm` per backend (CPU 1 thread, CPU all cores, CUDA when usable)
# with the default 32x32 grid, K = 2 (2048 points at most) and with --grid
# 64x64 (8192 points at most, rows ...8k):
#  - a 640x480 clip and a 1920x1080 one (hd), a smooth random texture
#    translating (1.25, -0.75) px per frame, made here as grey .y4m
#    (tests/vcm/make_video.py, numpy only);
#  - Yosemite yos2..yos16 (316x252, 14 pairs) as an image list;
# each with --stats' per-phase ms/pair (points, correlation, accumulation,
# output) and the steady pairs/s (decode included, start-up excluded), and
# the mean endpoint error (clip: against the known translation; Yosemite:
# pair 9->10, non-sky points, against its ground truth).
# Next to it, OpenCV's pyramidal Lucas-Kanade (cv2.calcOpticalFlowPyrLK,
# 21x21 window, 3 levels, 30 iterations / 0.01, as tests/test_vcm_vs_lk.sh)
# at the SAME points in the same run: ms per pair (median of REPS calls,
# pyramids included, 1 thread and all threads) and its error (points LK
# loses count at zero motion). Reference: the paper's CUDA VCM, 125 ms per
# frame for 2048 points on a GeForce 8800 GTS-512 (seeds/002 section 6.5).
# Repeats: every row (each backend of each binary on each input, and LK at
# each thread count on each input) is measured R times, interleaved: round
# r runs every row once, in the same order, before round r + 1 starts, so
# that a disturbance of the machine (a ~2 ms measurement on a shared host
# varies up to 2x between runs) hits one repeat of several rows, not all
# repeats of one row. Each row reports the MEDIAN over its R repeats, and
# the min and max beside it for the main column (vcm_ms: the three phases;
# LK: ms per pair, itself the median of REPS calls within one repeat); the
# other columns are medians too. Compare rows by their medians.
# Numbers, not pass/fail. Env: LT (./leuktrack), BINS (binaries to compare
# row by row, "label=path ...", e.g. "main=/tmp/a new=./leuktrack"; default
# LT alone), R (repeats, 5), FRAMES (clip frames, 60), HD_FRAMES (1920x1080
# frames, 16), REPS (LK calls per repeat, 20), LT_DATA, PY (python3 with
# numpy; cv2 for the LK columns), BACKENDS (the rows' backends, e.g.
# "cuda:16"; default: CPU 1 thread, CPU all cores, CUDA when usable), LK=0
# (no LK rows).
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
FRAMES=${FRAMES:-60}
HD_FRAMES=${HD_FRAMES:-16}
REPS=${REPS:-20}
R=${R:-5}
BINS=${BINS:-leuktrack=$LT}
LT=${BINS%% *}
LT=${LT#*=} # the first binary: the CUDA probe and the rows' points for LK
DATA=${LT_DATA:-../shared/data}
# the first python with numpy: $PY, Debian's /usr/bin/python3, python3
for p in ${PY:-} /usr/bin/python3 python3; do "$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }; done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NCPU=$(nproc)
Y=$DATA/flow/yosemite

echo "vcm benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $NCPU cores"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' | head -1 || true
echo "paper's reference: CUDA VCM 125 ms per frame for 2048 points on a GeForce 8800 GTS-512 (8 fps)"
echo

"$PY" tests/vcm/make_video.py "$T/clip.y4m" 640 480 "$FRAMES" shift 1.25 -0.75
"$PY" tests/vcm/make_video.py "$T/hd.y4m" 1920 1080 "$HD_FRAMES" shift 1.25 -0.75
yos=()
for i in $(seq 2 16); do yos+=("$Y/yos$i.pgm"); done
have_yos=1
[ -r "$Y/yos16.pgm" ] && [ -r "$Y/yos9_to_yos10_gt.flo" ] || have_yos=0
have_cv=1
"$PY" -c 'import cv2' 2>/dev/null || have_cv=0

backends="cpu:1 cpu:$NCPU"
if "$LT" vcm --backend cuda -q "$T/clip.y4m" --frames 0:2 -o /dev/null 2>/dev/null; then backends="$backends cuda:$NCPU"
else echo "(CUDA: not usable here, skipped)"; fi
backends=${BACKENDS:-$backends}
[ "${LK:-1}" = 0 ] && have_cv=0

stat() { awk -v s="$2" '$1==s {print $3}' "$1"; }
rate() { sed -nE 's/.*start-up excluded\): ([0-9.]+) pairs\/s.*/\1/p' "$1"; }
epe_shift() { "$PY" -c "
import numpy as np, sys
v = np.loadtxt(sys.argv[1], delimiter=',', skiprows=1, ndmin=2)
print('%.3f %.0f' % (np.hypot(v[:, 5] - 1.25, v[:, 6] + 0.75).mean(), len(v) / len(set(v[:, 0]))))" "$1"; }
epe_yos() { "$PY" -c "
import numpy as np, sys, cv2
v = np.loadtxt(sys.argv[1], delimiter=',', skiprows=1, ndmin=2); v = v[v[:, 0] == 7]
b = open(sys.argv[2], 'rb').read(); w, h = np.frombuffer(b[4:12], '<i4'); g = np.frombuffer(b[12:], '<f4').reshape(h, w, 2)
x, y = v[:, 3].astype(int), v[:, 4].astype(int); m = cv2.imread(sys.argv[3], 0)[y, x] > 0
print('%.3f %d' % (np.hypot(v[m, 5] - g[y[m], x[m], 0], v[m, 6] - g[y[m], x[m], 1]).mean(), m.sum()))" "$1" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png"; }

row() { # label binlabel binary backend:threads input... : one repeat of a row into $T/res.txt
  local label=$1 bl=$2 bin=$3 be=${4%%:*} th=${4##*:}
  shift 4
  "$bin" vcm -q --backend "$be" --threads "$th" "$@" -o "$T/v.csv" --stats="$T/s.txt"
  local acc
  if [ "$label" != yosemite ]; then acc=$(epe_shift "$T/v.csv")
  elif [ $have_cv = 1 ]; then acc=$(epe_yos "$T/v.csv")
  else acc="- -"; fi
  read -r e n <<<"$acc"
  local tot
  tot=$(awk -v a="$(stat "$T/s.txt" points)" -v b="$(stat "$T/s.txt" correlation)" -v c="$(stat "$T/s.txt" accumulation)" 'BEGIN {printf "%.3f", a + b + c}')
  echo "vcm $label $be:x$th $bl $(rate "$T/s.txt") $(awk -v r="$(rate "$T/s.txt")" 'BEGIN {printf "%.3f", (r > 0 ? 1e3 / r : 0)}') $tot" \
    "$(stat "$T/s.txt" points) $(stat "$T/s.txt" correlation) $(stat "$T/s.txt" accumulation) $(stat "$T/s.txt" output) $n $e" >> "$T/res.txt"
  [ "$bl" = "${BINS%%=*}" ] && cp "$T/v.csv" "$T/last_$label.csv" # LK's points: the first binary's
  return 0
}
G64="--grid 64x64" # 2 points per sub-window: 8192 points at most

if [ $have_cv = 1 ]; then
  lk() { # label frame0 frame1 vcm.csv pair gt|shift threads
    "$PY" - "$@" <<'PYEOF'
import sys, time, numpy as np, cv2
label, f0, f1, csv, pair, gt, threads = sys.argv[1:8]
cv2.setNumThreads(int(threads))
def load(p):
    if p.endswith('.y4m'):
        b = open(p, 'rb').read(); hdr, rest = b.split(b'\n', 1)
        W = int([t for t in hdr.split() if t.startswith(b'W')][0][1:]); H = int([t for t in hdr.split() if t.startswith(b'H')][0][1:])
        k = int(f1); o = k * (6 + W * H)
        return [np.frombuffer(rest[o - (6 + W * H) + 6:o - (6 + W * H) + 6 + W * H], np.uint8).reshape(H, W), np.frombuffer(rest[o + 6:o + 6 + W * H], np.uint8).reshape(H, W)]
    return [cv2.imread(f0, 0), cv2.imread(f1, 0)]
I0, I1 = load(f0)
v = np.loadtxt(csv, delimiter=',', skiprows=1, ndmin=2); v = v[v[:, 0] == int(pair)]
pts = v[:, 3:5].astype(np.float32).reshape(-1, 1, 2)
crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 30, 0.01)
ts = []
for r in range(int(sys.argv[8])):
    t0 = time.perf_counter()
    nxt, st, _ = cv2.calcOpticalFlowPyrLK(I0, I1, pts, None, winSize=(21, 21), maxLevel=3, criteria=crit)
    ts.append(time.perf_counter() - t0)
d = nxt.reshape(-1, 2) - v[:, 3:5]; ok = st.reshape(-1) == 1
if gt == 'shift':
    g = np.tile([1.25, -0.75], (len(v), 1)); m = np.ones(len(v), bool)
else:
    b = open(gt, 'rb').read(); w, h = np.frombuffer(b[4:12], '<i4'); G = np.frombuffer(b[12:], '<f4').reshape(h, w, 2)
    x, y = v[:, 3].astype(int), v[:, 4].astype(int); g = G[y, x]
    m = cv2.imread(sys.argv[9], 0)[y, x] > 0
e = np.where(ok, np.hypot(*(d - g).T), np.hypot(*g.T))[m]
ev = np.hypot(*(v[:, 5:7] - g).T)[m]
print("lk %s %s %.4f %d %.4f %d %.4f" % (label, threads, 1e3 * np.median(ts), m.sum(), e.mean(), (~ok[m]).sum(), ev.mean()))
PYEOF
  }
fi

# R rounds, each row once per round (see the top: interleaved repeats)
for r in $(seq 1 "$R"); do
  for bl in $BINS; do
    for b in $backends; do
      row clip "${bl%%=*}" "${bl#*=}" "$b" "$T/clip.y4m"
      row clip8k "${bl%%=*}" "${bl#*=}" "$b" "$T/clip.y4m" $G64
      row hd "${bl%%=*}" "${bl#*=}" "$b" "$T/hd.y4m"
      row hd8k "${bl%%=*}" "${bl#*=}" "$b" "$T/hd.y4m" $G64
      [ $have_yos = 1 ] && row yosemite "${bl%%=*}" "${bl#*=}" "$b" "${yos[@]}"
    done
  done
  [ $have_cv = 1 ] || continue
  for th in 1 "$NCPU"; do
    lk clip "$T/clip.y4m" 1 "$T/last_clip.csv" 0 shift "$th" "$REPS" >> "$T/res.txt"
    lk clip8k "$T/clip.y4m" 1 "$T/last_clip8k.csv" 0 shift "$th" "$REPS" >> "$T/res.txt"
    lk hd "$T/hd.y4m" 1 "$T/last_hd.csv" 0 shift "$th" "$REPS" >> "$T/res.txt"
    lk hd8k "$T/hd.y4m" 1 "$T/last_hd8k.csv" 0 shift "$th" "$REPS" >> "$T/res.txt"
    [ $have_yos = 1 ] && lk yosemite "$Y/yos9.pgm" "$Y/yos10.pgm" "$T/last_yosemite.csv" 7 "$Y/yos9_to_yos10_gt.flo" "$th" "$REPS" "$Y/yos9_nonsky_mask.png" >> "$T/res.txt"
  done
done

# the rows: medians over the R repeats (min and max of the main column)
"$PY" - "$T/res.txt" "$R" "$FRAMES" "$HD_FRAMES" "$REPS" "$have_cv" "$("$PY" -c 'import cv2; print(cv2.__version__)' 2>/dev/null || echo -)" <<'PYEOF'
import sys, numpy as np
res, R, frames, hd, reps, have_cv, cvv = sys.argv[1:8]
rows, order = {}, []
for ln in open(res):
    f = ln.split()
    key = tuple(f[:4]) if f[0] == 'vcm' else tuple(f[:3])
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(f[len(key):])
med = lambda v: float(np.median(np.array(v, float)))
def col(vals, k):
    try:
        return med([v[k] for v in vals])
    except ValueError:
        return float('nan')
print("leuktrack vcm, default parameters (grid 32x32, K 2, patch 5, search 64, radius 20); median of %s interleaved repeats" % R)
fmt = "%-9s %-10s %-8s %8s %9s %22s %9s %9s %9s %9s %9s %8s"
print(fmt % ("input", "backend", "binary", "pairs/s", "ms/pair", "vcm_ms [min max]", "points_ms", "corr_ms", "accum_ms", "output_ms", "points", "epe_px"))
print(fmt % ("", "", "", "(e2e)", "(e2e)", "(3 phases)", "", "", "", "", "(/pair)", "(mean)"))
for key in order:
    if key[0] != 'vcm':
        continue
    v = rows[key]
    t = np.array([x[2] for x in v], float)
    print(fmt % (key[1], key[2].replace(':', ' '), key[3], "%.0f" % col(v, 0), "%.3f" % col(v, 1),
                 "%.3f [%.3f %.3f]" % (np.median(t), t.min(), t.max()), "%.3f" % col(v, 3), "%.3f" % col(v, 4),
                 "%.3f" % col(v, 5), "%.3f" % col(v, 6), v[0][7], v[0][8]))
print("(clip: %s frames 640x480, hd: %s frames 1920x1080, both translating (1.25,-0.75) px/frame," % (frames, hd))
print(" epe over all pairs vs the known translation; ...8k: --grid 64x64, 8192 points at most; yosemite: 14 pairs")
print(" 316x252, pairs/s start-up excluded, epe = pair 9->10 on the non-sky points, 'points' = those points)")
print()
if have_cv == '1':
    print("OpenCV pyramidal LK at the same points (cv2 %s); ms/pair: median over %s repeats of the median of %s calls" % (cvv, R, reps))
    for key in order:
        if key[0] != 'lk':
            continue
        v = rows[key]
        t = np.array([x[0] for x in v], float)
        print("%-9s lk x%-7s %9.3f ms/pair [%.3f %.3f] %6.0f pairs/s  points %5s  epe LK %.3f px (lost %s)  VCM %.3f px" % (
            key[1], key[2], np.median(t), t.min(), t.max(), 1e3 / np.median(t), v[0][1], float(v[0][2]), v[0][3], float(v[0][4])))
else:
    print("(OpenCV LK: no cv2 in this python; apt-get install python3-opencv)")
PYEOF
