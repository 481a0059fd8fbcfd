#!/usr/bin/env bash
# bench_tumor.sh - the tumour part of `make bench`: microseconds per frame of
# `leuktrack tumor` for the six patient configurations of seeds/001 (rows x
# cols, templates, +-V/+-H), streaming a 512x512 synthetic clip
# (scripts/make_tumor_clip.py, y4m: decoding is a copy) frame by frame, per
# backend: CPU 1 thread, CPU all threads, CUDA when usable. Per-frame numbers
# come from --stats after the first frame (start-up excluded): "match" is the
# correlation of all templates at all shifts, "frame" the whole step
# (match + peaks + CSV row, decode wait included) from the frames/s after the
# first frame. The NVRTC compile time (cold cache, then warm) is listed apart.
# Peer in the same run: OpenCV cv2.matchTemplate(TM_CCOEFF_NORMED) over the
# same search windows (uint8 frame, one call per template), 1 thread and all.
# Templates: cut from frame 0 (--template-from) at deterministic positions
# spread over the frame with the whole shift range inside.
# The real angiography clip (../shared/data/fluoro/angio_clinical_Vukicevic,
# 37 JPEG frames of 512x512, read with cv2 and played forwards and backwards
# up to FRAMES frames as y4m) is one more row, with the 156x116/11 geometry.
# Env: LT (binary), FRAMES (default 200), PY (python3 with numpy, + cv2 for
# the peer and the angiography row), BACKENDS ("cpu:1 cpu:N cuda:1" style),
# NPP_BENCH (the NPP peer tool, default lt_npp_bench next to $LT; make
# npp-bench builds it), PEERS (0: only the leuktrack table - no NVRTC compile
# table, no OpenCV/NPP peers), ANGIO (folder of the clip's IM0_NN.jpg; empty:
# no angiography row).
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
FRAMES=${FRAMES:-200}
if [ -z "${PY:-}" ]; then
  PY=python3
  /usr/bin/python3 -c 'import numpy, cv2' 2>/dev/null && PY=/usr/bin/python3
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
NP=$(nproc)
"$PY" scripts/make_tumor_clip.py "$T/clip.y4m" "$T/truth.csv" 512 512 "$FRAMES" 8 4
# rows cols templates V H
configs=("53 54 12 18 9" "23 21 13 11 5" "76 45 10 9 4" "156 116 11 9 3" "86 78 12 11 6" "141 107 14 9 2")
# template k of a config: X,Y spread over the frame, shifts inside
tpl_args() { # rows cols n V H -> --template-from args; also "x y w h" lines to $T/tpl.txt
  local h=$1 w=$2 n=$3 V=$4 H=$5 k x y
  : >"$T/tpl.txt"
  for ((k = 0; k < n; k++)); do
    x=$((H + (k * 97) % (512 - w - 2 * H)))
    y=$((V + (k * 61) % (512 - h - 2 * V)))
    echo "$x $y $w $h" >>"$T/tpl.txt"
    printf -- '--template-from 0:%d,%d,%d,%d ' $x $y $w $h
  done
}
backends=(cpu:1 "cpu:$NP")
cuda=0
if [ -n "${BACKENDS:-}" ]; then read -r -a backends <<<"$BACKENDS"
elif "$LT" tumor --backend cuda "$T/clip.y4m" --template-from 0:10,10,20,20 --frames 0:1 -o /dev/null 2>/dev/null; then
  backends+=(cuda:1)
fi
for b in "${backends[@]}"; do [[ $b == cuda:* ]] && cuda=1; done

echo "leuktrack tumor benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $NP cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
[ $cuda -eq 1 ] && command -v nvidia-smi >/dev/null && echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "clip: 512x512 synthetic (make_tumor_clip.py), $FRAMES frames, y4m; per-frame times after the first frame"
printf '%-16s %-9s %-8s %12s %12s\n' config backend threads match_us/frm frame_us/frm
bench_row() { # clip name rows cols templates V H
  local clip=$1 name=$2 h=$3 w=$4 n=$5 V=$6 H=$7 args b be th m fps
  args=$(tpl_args $h $w $n $V $H)
  for b in "${backends[@]}"; do
    be=${b%:*} th=${b#*:}
    # shellcheck disable=SC2086
    XDG_CACHE_HOME="$T/cache" "$LT" tumor "$clip" $args --shift $V,$H --backend "$be" --threads "$th" \
      -o /dev/null --stats="$T/s.txt" 2>/dev/null
    m=$(sed -nE 's/.*after it ([0-9.]+) us\/frame.*/\1/p' "$T/s.txt")
    fps=$(sed -nE 's/^after the first frame .*: ([0-9.]+) frames\/s/\1/p' "$T/s.txt")
    printf '%-16s %-9s %-8s %12s %12s\n' "$name" "$be" "$th" "$m" "$(awk -v f="$fps" 'BEGIN{printf "%.1f", (f > 0) ? 1e6 / f : 0}')"
  done
}
for c in "${configs[@]}"; do
  read -r h w n V H <<<"$c"
  bench_row "$T/clip.y4m" "${h}x${w}/${n}" $h $w $n $V $H
done
ANGIO=${ANGIO-../shared/data/fluoro/angio_clinical_Vukicevic/proj0}
if [ -n "$ANGIO" ] && [ -f "$ANGIO/IM0_01.jpg" ] && "$PY" - "$ANGIO" "$T/angio.y4m" "$FRAMES" <<'PYEOF'; then
import glob, sys
import cv2
src, out, nf = sys.argv[1], sys.argv[2], int(sys.argv[3])
fr = [cv2.imread(f, cv2.IMREAD_GRAYSCALE) for f in sorted(glob.glob(src + '/IM0_*.jpg'))]
order = list(range(len(fr))) + list(range(len(fr) - 2, 0, -1))
h, w = fr[0].shape
with open(out, 'wb') as f:
    f.write(b'YUV4MPEG2 W%d H%d F15:1 Ip A1:1 Cmono\n' % (w, h))
    for k in range(nf):
        f.write(b'FRAME\n' + fr[order[k % len(order)]].tobytes())
PYEOF
  bench_row "$T/angio.y4m" "angio156x116/11" 156 116 11 9 3
else
  echo "angiography row: no clip in '${ANGIO}' or no cv2 for $PY (skipped)"
fi

[ "${PEERS:-1}" = 0 ] && exit 0
if [ $cuda -eq 1 ]; then
  echo
  echo "NVRTC specialisation per configuration (cold cache = compile, warm = cache load), ms:"
  printf '%-10s %10s %10s  %s\n' config cold_ms warm_ms kernel
  for c in "${configs[@]}"; do
    read -r h w n V H <<<"$c"
    args=$(tpl_args $h $w $n $V $H)
    rm -rf "$T/cold"
    # shellcheck disable=SC2086
    XDG_CACHE_HOME="$T/cold" "$LT" tumor "$T/clip.y4m" $args --shift $V,$H --backend cuda --frames 0:2 -o /dev/null --stats="$T/c1.txt" 2>/dev/null
    # shellcheck disable=SC2086
    XDG_CACHE_HOME="$T/cold" "$LT" tumor "$T/clip.y4m" $args --shift $V,$H --backend cuda --frames 0:2 -o /dev/null --stats="$T/c2.txt" 2>/dev/null
    cm() { sed -nE 's/.*compile or cache load ([0-9.]+) ms.*/\1/p' "$1"; }
    printf '%-10s %10s %10s  %s\n' "${h}x${w}/${n}" "$(cm "$T/c1.txt")" "$(cm "$T/c2.txt")" \
      "$(sed -nE 's/.*kernel: (.*)/\1/p' "$T/c2.txt"); $(sed -nE 's/.*ms, (specialised[^)]*|generic)\).*/\1/p' "$T/c2.txt")"
  done
fi

echo
if "$PY" -c 'import cv2, numpy' 2>/dev/null; then
  echo "peer: OpenCV $("$PY" -c 'import cv2; print(cv2.__version__)') cv2.matchTemplate TM_CCOEFF_NORMED over the same search windows, us/frame"
  printf '%-10s %12s %12s\n' config "1 thread" "$NP threads"
  for c in "${configs[@]}"; do
    read -r h w n V H <<<"$c"
    tpl_args $h $w $n $V $H >/dev/null
    "$PY" - "$T/clip.y4m" "$T/tpl.txt" $V $H "$FRAMES" "$NP" "${h}x${w}/${n}" <<'PYEOF'
import sys, time
import numpy as np
import cv2
clip, tpl, V, H, nf, npr, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
data = open(clip, 'rb').read()
hdr = data.index(b'\n') + 1
fs = 512 * 512
frames = [np.frombuffer(data, np.uint8, fs, hdr + k * (fs + 6) + 6).reshape(512, 512) for k in range(nf)]
T = [tuple(int(v) for v in l.split()) for l in open(tpl)]
temps = [frames[0][y:y + h, x:x + w].copy() for x, y, w, h in T]
out = []
for th in (1, npr):
    cv2.setNumThreads(th)
    best = []
    for rep in range(2):
        t0 = time.perf_counter()
        for f in frames[1:]:
            for (x, y, w, h), t in zip(T, temps):
                r = cv2.matchTemplate(f[y - V:y + h + V, x - H:x + w + H], t, cv2.TM_CCOEFF_NORMED)
                cv2.minMaxLoc(r)
        best.append((time.perf_counter() - t0) / (nf - 1))
    out.append(min(best) * 1e6)
print('%-10s %12.1f %12.1f' % (name, out[0], out[1]))
PYEOF
  done
else
  echo "peer: OpenCV not available to $PY (skipped)"
fi
# NPP peer: the lt_npp_bench tool (data/lt_npp_bench.cu, `make npp-bench`),
# found as $NPP_BENCH or next to $LT.
NPPB=${NPP_BENCH:-$(dirname "$LT")/lt_npp_bench}
if [ $cuda -eq 1 ] && [ -x "$NPPB" ]; then
  echo "peer: NVIDIA NPP nppiCrossCorrValid_NormLevel_32f_C1R_Ctx over the same search windows (float frame up, one call per template, maps down), us/frame"
  printf '%-10s %12s %12s %10s\n' config frame_us kernels_us peak_r0
  for c in "${configs[@]}"; do
    read -r h w n V H <<<"$c"
    tpl_args $h $w $n $V $H >/dev/null
    "$NPPB" "$T/clip.y4m" "$T/tpl.txt" $V $H "$FRAMES" "${h}x${w}/${n}" | awk '{printf "%-10s %12s %12s %10s\n", $1, $2, $3, $4}'
  done
else
  echo "peer: NVIDIA NPP: lt_npp_bench not built (make npp-bench on a machine with NPP) or no GPU (skipped)"
fi
