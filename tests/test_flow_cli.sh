#!/usr/bin/env bash
# test_flow_cli.sh - the flow mode end to end: Yosemite 9->10 with its
# ground truth and non-sky mask (AEE/AAE printed, within the core's bounds
# of tests/test_flow.c, and equal to what an independent numpy reader of
# the written .flo computes), FlyingChairs below OpenCV Farneback's AEE
# (computed in the run), a synthetic translating texture as a video
# (y4m, and FFV1 when the ffmpeg CLI exists) and as PNG pairs (one .flo per
# pair, the known motion, --summary rows recomputed from the .flo, --color
# and --overlay PNGs, --plot, --frames), --threads 1 vs 2 byte-identical,
# the bad-input catalogue (status + message), and CUDA vs CPU when
# `--backend cuda` works (else SKIP).
# Env: LT_BIN, LT_DATA, PY (python3 with numpy and cv2, default /usr/bin/python3).
set -u
cd "$(dirname "$0")/.."
LT=${LT_BIN:-./leuktrack}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
FC=tests/flow/flowcheck.py
# the test machine is shared: OpenMP threads that spin at barriers make a
# 2-thread run 10x slower under load (results do not depend on this)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh

# lt_cmp NAME A B CONDITION: awk condition on a and b
cmpnum() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }

if ! "$PY" -c 'import numpy' 2>/dev/null; then
  skip "flow CLI" "$PY lacks numpy (set PY)"
  exit 0
fi
# cv2 reads the PNGs (mask, --color, --overlay, --plot); without it those checks SKIP
have_cv=1
"$PY" -c 'import cv2' 2>/dev/null || have_cv=0

# ---- Yosemite 9 -> 10, the accuracy claim of the mode ----
Y=$DATA/flow/yosemite
if [ -f "$Y/yos9.pgm" ]; then
  "$LT" flow "$Y/yos9.pgm" "$Y/yos10.pgm" -o "$T/yos.flo" --ground-truth "$Y/yos9_to_yos10_gt.flo" \
    --mask "$Y/yos9_nonsky_mask.png" --color --summary "$T/yos.csv" --threads 1 >"$T/eval.csv" 2>"$T/err"
  rc=$?
  read -r aee aae n < <(awk -F, 'NR==2 {print $2, $3, $4}' "$T/eval.csv")
  if [ $rc -eq 0 ] && [ "$(head -1 "$T/eval.csv")" = "frame,aee_px,aae_deg,pixels" ] && [ "$(wc -l <"$T/eval.csv")" -eq 2 ] &&
    awk -v e="$aee" -v a="$aae" 'BEGIN { exit !(e < 0.11 && a < 2.0) }'; then
    pass "yosemite 9->10 non-sky: AEE $aee px, AAE $aae deg over $n px on stdout (bounds of test_flow.c: AEE < 0.11, AAE < 2)"
  else fail "yosemite e2e" "rc=$rc stdout: $(cat "$T/eval.csv") stderr: $(head -c 300 "$T/err")"; fi
  paee=x paae=x pn=x
  [ $have_cv -eq 1 ] && read -r paee paae pn < <("$PY" $FC eval "$T/yos.flo" "$Y/yos9_to_yos10_gt.flo" "$Y/yos9_nonsky_mask.png")
  if [ $have_cv -eq 0 ]; then skip "yosemite .flo read back" "$PY lacks cv2 (reads the non-sky mask PNG)"
  elif [ "$pn" = "$n" ] && cmpnum "$paee" "$aee" 2e-6 && cmpnum "$paae" "$aae" 2e-5; then
    pass "yosemite .flo read back by numpy: AEE $paee AAE $paae over $pn px, as printed"
  else fail "yosemite .flo read back" "numpy $paee $paae $pn vs printed $aee $aae $n"; fi
  read -r m p x < <("$PY" $FC stats "$T/yos.flo")
  row=$(sed -n 2p "$T/yos.csv")
  IFS=, read -r f0 t0 cm cp cx <<<"$row"
  if [ "$(head -1 "$T/yos.csv")" = "frame,t_s,mean_mag_px,p95_mag_px,max_mag_px" ] && [ "$f0" = 0 ] &&
    cmpnum "$cm" "$m" 2e-6 && cmpnum "$cp" "$p" 2e-6 && cmpnum "$cx" "$x" 2e-6; then
    pass "yosemite --summary row ($row) = numpy's mean/p95 (nearest rank)/max of the .flo"
  else fail "yosemite --summary" "csv '$row', numpy $m $p $x"; fi
  if [ $have_cv -eq 1 ]; then
    read -r cw ch cc cn < <("$PY" $FC size "$T/yos.png")
    [ "$cw $ch $cc" = "316 252 3" ] && [ "$cn" -gt 200 ] && pass "yosemite --color: yos.png next to yos.flo, 316x252 RGB, $cn colours" \
      || fail "yosemite --color" "$cw $ch $cc $cn"
  else skip "yosemite --color contents" "$PY lacks cv2"; fi
else
  skip "yosemite e2e" "$Y not found (set LT_DATA)"
fi

# ---- FlyingChairs: below OpenCV Farneback's AEE, computed here ----
C=$DATA/flow/flyingchairs
for id in 0000000 0000001; do
  if [ ! -f "$C/$id-img0.ppm" ]; then skip "flyingchairs $id vs Farneback" "$C not found (set LT_DATA)"; continue; fi
  if [ $have_cv -eq 0 ]; then skip "flyingchairs $id vs Farneback" "$PY lacks cv2"; continue; fi
  "$LT" flow "$C/$id-img0.ppm" "$C/$id-img1.ppm" -o "$T/ch.flo" --ground-truth "$C/$id-gt.flo" >"$T/ch.csv" 2>"$T/err"
  rc=$?
  ours=$(awk -F, 'NR==2 {print $2}' "$T/ch.csv")
  "$PY" $FC farneback "$C/$id-img0.ppm" "$C/$id-img1.ppm" "$T/fb.flo"
  read -r fb _ < <("$PY" $FC eval "$T/fb.flo" "$C/$id-gt.flo")
  if [ $rc -eq 0 ] && [ -n "$ours" ] && [ -n "$fb" ] && awk -v a="$ours" -v b="$fb" 'BEGIN { exit !(a < b) }'; then
    pass "flyingchairs $id: AEE $ours px below OpenCV Farneback's $fb px (numpy evaluator, = --ground-truth as checked above)"
  else fail "flyingchairs $id vs Farneback" "rc=$rc ours '$ours' farneback '$fb' $(head -c 300 "$T/err")"; fi
done

# ---- a synthetic translating texture: known flow (1.3, -0.7) px/frame ----
DX=1.3 DY=-0.7
"$PY" $FC texture "$T/syn" 96 80 4 $DX $DY
"$LT" flow "$T/syn.y4m" -o "$T/d1" --threads 1 --summary "$T/s1.csv" --color --overlay "$T/ov" --plot "$T/plot.png" 2>"$T/err"
rc=$?
nflo=$(ls "$T/d1" 2>/dev/null | grep -c '\.flo$')
npng=$(ls "$T/d1" 2>/dev/null | grep -c '\.png$')
[ $rc -eq 0 ] && [ "$nflo" -eq 3 ] && [ "$npng" -eq 3 ] && [ -f "$T/d1/flow_000000.flo" ] && [ -f "$T/d1/flow_000002.png" ] \
  && pass "video of 4 frames -o DIR: flow_000000..2.flo and --color PNGs" || fail "video -o DIR" "rc=$rc $nflo .flo $npng .png: $(ls "$T/d1") $(head -c 300 "$T/err")"
worst=0 ok=1
for i in 0 1 2; do
  e=$("$PY" $FC trans "$T/d1/flow_00000$i.flo" $DX $DY 8) || ok=0
  awk -v e="$e" 'BEGIN { exit !(e < 0.1) }' || ok=0
  worst=$(awk -v a="$worst" -v b="$e" 'BEGIN { print (b > a) ? b : a }')
done
[ $ok -eq 1 ] && pass "synthetic translation ($DX,$DY): every pair's AEE (8 px border excluded) < 0.1 px (worst $worst; bound of test_flow.c)" \
  || fail "synthetic translation" "worst AEE $worst"
ok=1
[ "$(head -1 "$T/s1.csv")" = "frame,t_s,mean_mag_px,p95_mag_px,max_mag_px" ] && [ "$(wc -l <"$T/s1.csv")" -eq 4 ] || ok=0
for i in 0 1 2; do
  IFS=, read -r f0 t0 cm cp cx < <(sed -n "$((i + 2))p" "$T/s1.csv")
  read -r m p x < <("$PY" $FC stats "$T/d1/flow_00000$i.flo")
  [ "$f0" = "$i" ] && cmpnum "$t0" "$(awk -v i=$i 'BEGIN{print i/25}')" 1e-9 && cmpnum "$cm" "$m" 2e-6 && cmpnum "$cp" "$p" 2e-6 \
    && cmpnum "$cx" "$x" 2e-6 || ok=0
done
[ $ok -eq 1 ] && pass "--summary: 3 rows (frame 0..2, t_s at 25 fps), mean/p95/max = numpy of each .flo" || fail "--summary video" "$(cat "$T/s1.csv")"
if [ $have_cv -eq 1 ]; then
  read -r pw ph pc pn < <("$PY" $FC size "$T/ov/frame_000001.png" 2>/dev/null)
  [ "$(ls "$T/ov" | wc -l)" -eq 3 ] && [ "$pw $ph $pc" = "96 80 3" ] && pass "--overlay: frame_000000..2.png, 96x80 RGB" || fail "--overlay" "$(ls "$T/ov") $pw $ph $pc"
  read -r pw ph pc pn < <("$PY" $FC size "$T/plot.png" 2>/dev/null)
  [ "$pw $ph" = "800 500" ] && [ "${pn:-0}" -gt 3 ] && pass "--plot: 800x500 PNG" || fail "--plot" "$pw $ph $pn"
else
  skip "--overlay / --plot PNG contents" "$PY lacks cv2"
fi

# determinism: --threads 2 gives the same bytes
"$LT" flow "$T/syn.y4m" -o "$T/d2" --threads 2 2>/dev/null
same=1
for i in 0 1 2; do cmp -s "$T/d1/flow_00000$i.flo" "$T/d2/flow_00000$i.flo" || same=0; done
[ $same -eq 1 ] && pass "--threads 1 and --threads 2: identical .flo bytes" || fail "--threads determinism" "the .flo files differ"

# the image-pair path on the same pixels (PGM) gives the video's pair 1 -> 2
"$LT" flow "$T/syn_1.pgm" "$T/syn_2.pgm" -o "$T/pair.flo" --threads 1 2>"$T/err" && cmp -s "$T/pair.flo" "$T/d1/flow_000001.flo" \
  && pass "image pair A.pgm B.pgm -o x.flo = the video's flow_000001.flo (same bytes)" || fail "image pair" "$(head -c 300 "$T/err")"
# -o an existing folder with an image pair: DIR/flow_000000.flo
mkdir -p "$T/pd"
"$LT" flow "$T/syn_1.pgm" "$T/syn_2.pgm" -o "$T/pd" --threads 1 2>/dev/null && cmp -s "$T/pd/flow_000000.flo" "$T/pair.flo" \
  && pass "image pair -o DIR (existing folder): DIR/flow_000000.flo" || fail "image pair -o DIR" "$(ls "$T/pd")"
# --frames: only pairs inside the range, named by their first frame
"$LT" flow "$T/syn.y4m" -o "$T/d3" --frames 1:3 --threads 1 2>/dev/null
[ "$(ls "$T/d3" | tr '\n' ' ')" = "flow_000001.flo " ] && cmp -s "$T/d3/flow_000001.flo" "$T/d1/flow_000001.flo" \
  && pass "--frames 1:3: one pair, flow_000001.flo, as in the full run" || fail "--frames" "$(ls "$T/d3")"
# ground truth on a video: the first pair of the range
"$PY" - "$T/gt.flo" 96 80 $DX $DY <<'PYEOF'
import sys, numpy as np
p, w, h, dx, dy = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
a = np.empty((h, w, 2), '<f4'); a[..., 0] = dx; a[..., 1] = dy
open(p, 'wb').write(b'PIEH' + np.array([w, h], '<i4').tobytes() + a.tobytes())
PYEOF
"$LT" flow "$T/syn.y4m" --frames 2: --ground-truth "$T/gt.flo" --threads 1 >"$T/ev.csv" 2>"$T/err"
read -r paee paae pn < <("$PY" $FC eval "$T/d1/flow_000002.flo" "$T/gt.flo")
IFS=, read -r ef ea eg en < <(sed -n 2p "$T/ev.csv")
[ "$ef" = 2 ] && [ "$en" = 7680 ] && cmpnum "$ea" "$paee" 2e-6 && cmpnum "$eg" "$paae" 2e-5 \
  && pass "video --ground-truth without -o: the first pair of --frames 2: (frame 2), AEE $ea = numpy's" \
  || fail "video --ground-truth" "$(cat "$T/ev.csv") numpy $paee $paae $pn; $(head -c 200 "$T/err")"

# FFmpeg-decoded video (FFV1) where the ffmpeg CLI exists: the same flow as the y4m
if command -v ffmpeg >/dev/null 2>&1 && ffmpeg -v error -i "$T/syn.y4m" -c:v ffv1 -pix_fmt gray "$T/syn.mkv" 2>/dev/null; then
  "$LT" flow "$T/syn.mkv" -o "$T/dm" --threads 1 2>/dev/null
  same=1
  for i in 0 1 2; do cmp -s "$T/d1/flow_00000$i.flo" "$T/dm/flow_00000$i.flo" || same=0; done
  [ $same -eq 1 ] && pass "FFV1 .mkv of the same frames: identical .flo files" || fail "FFV1 video" "differs from the y4m run"
else
  skip "FFV1 video" "no ffmpeg CLI with an FFV1 encoder (the y4m path ran)"
fi

# SIGINT after the first pair: status 130, the finished pairs' .flo kept, the summary as .partial
# (CPU backend, 40 frames of 320x240: long enough on any machine; a GPU finishes before the signal)
"$PY" $FC texture "$T/long" 320 240 40 $DX $DY
"$LT" flow "$T/long.y4m" -o "$T/di" --summary "$T/int.csv" --threads 1 --backend cpu 2>"$T/err" &
pid=$!
for _ in $(seq 600); do [ -f "$T/di/flow_000000.flo" ] && break; sleep 0.1; done
kill -INT $pid 2>/dev/null
wait $pid
rc=$?
nk=$(ls "$T/di" 2>/dev/null | grep -c '^flow_[0-9]*\.flo$')
if [ $rc -eq 130 ] && [ ! -e "$T/int.csv" ] && [ "$(head -1 "$T/int.csv.partial" 2>/dev/null)" = "frame,t_s,mean_mag_px,p95_mag_px,max_mag_px" ] &&
  [ "$nk" -ge 1 ] && [ "$nk" -lt 39 ] && [ "$(($(wc -l <"$T/int.csv.partial") - 1))" -ge 1 ] && grep -q "interrupted" "$T/err"; then
  pass "SIGINT mid-video: exit 130, $nk finished .flo kept, summary kept as .partial ($(($(wc -l <"$T/int.csv.partial") - 1)) rows)"
else fail "SIGINT" "rc=$rc $nk .flo; $(ls "$T" | grep int); $(head -c 300 "$T/err")"; fi

# ---- bad input: one message, documented status ----
A=$T/syn_0.pgm B=$T/syn_1.pgm G=$T/gt.flo
"$PY" - "$T" <<'PYEOF'
import sys, numpy as np
t = sys.argv[1]
def pgm(p, a): open(p, 'wb').write(b'P5\n%d %d\n255\n' % (a.shape[1], a.shape[0]) + a.tobytes())
pgm(t + '/small.pgm', np.zeros((40, 50), np.uint8))
pgm(t + '/emptymask.pgm', np.zeros((80, 96), np.uint8))
g = open(t + '/gt.flo', 'rb').read()
open(t + '/trunc.flo', 'wb').write(g[:-8])
open(t + '/lie.flo', 'wb').write(g[:4] + np.array([97, 80], '<i4').tobytes() + g[12:])
open(t + '/lie2.flo', 'wb').write(g[:4] + np.array([96, 79], '<i4').tobytes() + g[12:])
open(t + '/tag.flo', 'wb').write(b'PIEX' + g[4:])
open(t + '/hdr.flo', 'wb').write(g[:7])
a = np.frombuffer(g[12:], '<f4').copy(); a[2 * (96 * 5 + 7)] = np.nan
open(t + '/nan.flo', 'wb').write(g[:12] + a.tobytes())
s = np.zeros((10, 12, 2), '<f4')
open(t + '/other.flo', 'wb').write(b'PIEH' + np.array([12, 10], '<i4').tobytes() + s.tobytes())
with open(t + '/one.y4m', 'wb') as f:
    f.write(b'YUV4MPEG2 W96 H80 F25:1 Ip A1:1 Cmono\nFRAME\n' + bytes(96 * 80))
PYEOF
expect "pair of different sizes -> 3" 3 "all images of a sequence must have one size" -- "$LT" flow "$A" "$T/small.pgm" -o "$T/x.flo"
expect "one-frame video -> 3" 3 "only one frame" -- "$LT" flow "$T/one.y4m" -o "$T/od"
expect "missing input -> 3" 3 "nonexistent.png" -- "$LT" flow "$A" "$T/nonexistent.png" -o "$T/x.flo"
expect "truncated ground truth -> 3" 3 "is truncated" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --ground-truth "$T/trunc.flo"
expect "ground truth header says wider than the data -> 3" 3 "is truncated" -- "$LT" flow "$A" "$B" --ground-truth "$T/lie.flo"
expect "ground truth header says fewer rows than the data -> 3" 3 "trailing data" -- "$LT" flow "$A" "$B" --ground-truth "$T/lie2.flo"
expect "ground truth with a bad tag -> 3" 3 "tag is not PIEH" -- "$LT" flow "$A" "$B" --ground-truth "$T/tag.flo"
expect "ground truth shorter than its header -> 3" 3 "shorter than the 12-byte header" -- "$LT" flow "$A" "$B" --ground-truth "$T/hdr.flo"
expect "NaN in the ground truth -> 3" 3 "holds NaN at pixel (7, 5)" -- "$LT" flow "$A" "$B" --ground-truth "$T/nan.flo"
expect "ground truth of another size -> 3" 3 "is 12x10 but the frames" -- "$LT" flow "$A" "$B" --ground-truth "$T/other.flo"
expect "mask of another size -> 3" 3 "mask '$T/small.pgm' is 50x40" -- "$LT" flow "$A" "$B" --ground-truth "$G" --mask "$T/small.pgm"
expect "empty mask -> 3" 3 "no pixel to evaluate" -- "$LT" flow "$A" "$B" --ground-truth "$G" --mask "$T/emptymask.pgm"
expect "--iterations 0 -> 2" 2 "invalid value '0' for --iterations" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --iterations 0
expect "--alpha 0 -> 2" 2 "invalid value '0' for --alpha: must be > 0" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --alpha 0
expect "--alpha x -> 2" 2 "invalid value 'x' for --alpha" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --alpha x
expect "--omega 2 -> 2" 2 "invalid value '2' for --omega" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --omega 2
expect "--eps-data -1 -> 2" 2 "invalid value '-1' for --eps-data" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --eps-data -1
expect "--eps-smooth x -> 2" 2 "invalid value 'x' for --eps-smooth" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --eps-smooth x
expect "--rho 17 -> 2" 2 "invalid value '17' for --rho" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --rho 17
expect "--sigma -1 -> 2" 2 "invalid value '-1' for --sigma" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --sigma -1
expect "--levels 0 -> 2" 2 "invalid value '0' for --levels" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --levels 0
expect "--warps 0 -> 2" 2 "invalid value '0' for --warps" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --warps 0
expect "--mask without --ground-truth -> 2" 2 "--mask needs --ground-truth" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --mask "$T/emptymask.pgm"
expect "no output -> 2" 2 "no output given" -- "$LT" flow "$A" "$B"
expect "no input -> 2" 2 "no input given" -- "$LT" flow -o "$T/x.flo"
expect "video with -o - -> 2" 2 "-o must name a folder" -- "$LT" flow "$T/syn.y4m" -o -
expect "--color with -o - -> 2" 2 "--color writes a PNG" -- "$LT" flow "$A" "$B" -o - --color
expect "--ground-truth and -o - both on stdout -> 2" 2 "may use stdout" -- "$LT" flow "$A" "$B" -o - --ground-truth "$G"
touch "$T/afile"
expect "video -o FILE (not a folder) -> 4" 4 "exists and is not a folder" -- "$LT" flow "$T/syn.y4m" -o "$T/afile"
expect "unwritable .flo (no such folder) -> 4, before any work" 4 "cannot write the flow '$T/nodir/x.flo'" -- "$LT" flow "$A" "$B" -o "$T/nodir/x.flo"
expect "unwritable --plot -> 4, before any work" 4 "cannot write the plot '$T/nodir/p.png'" -- "$LT" flow "$A" "$B" -o "$T/x.flo" --plot "$T/nodir/p.png"
[ ! -e "$T/x.flo" ] && pass "no .flo left behind by the failed runs" || fail "failed runs" "$T/x.flo exists"
# -o - writes the .flo on stdout
"$LT" flow "$A" "$B" -o - --iterations 20 --threads 1 >"$T/so.flo" 2>/dev/null && "$LT" flow "$A" "$B" -o "$T/sf.flo" --iterations 20 --threads 1 2>/dev/null \
  && cmp -s "$T/so.flo" "$T/sf.flo" && pass "-o -: the .flo on stdout, the same bytes as -o FILE" || fail "-o -" "differs"

# ---- CUDA = CPU (within 1e-3 px) where a GPU is usable ----
if "$LT" flow --backend cuda "$A" "$B" -o "$T/cu.flo" --iterations 1 --levels 1 --warps 1 2>"$T/err"; then
  ok=1 worst=0
  for pr in "$T/syn_0.pgm $T/syn_1.pgm" "${Y:-}/yos9.pgm ${Y:-}/yos10.pgm"; do
    set -- $pr
    [ -f "$1" ] || continue
    "$LT" flow --backend cuda "$1" "$2" -o "$T/cu.flo" 2>"$T/err" && "$LT" flow --backend cpu "$1" "$2" -o "$T/cpu.flo" 2>>"$T/err" || ok=0
    d=$("$PY" $FC maxdiff "$T/cu.flo" "$T/cpu.flo" 2>/dev/null) || ok=0
    awk -v d="${d:-1}" 'BEGIN { exit !(d <= 1e-3) }' || ok=0
    worst=$(awk -v a="$worst" -v b="${d:-1}" 'BEGIN { print (b > a) ? b : a }')
  done
  [ $ok -eq 1 ] && pass "CUDA vs CPU .flo (synthetic pair, Yosemite): max |diff| $worst px <= 1e-3" || fail "CUDA vs CPU" "max diff $worst; $(head -c 300 "$T/err")"
  "$LT" flow --backend cuda "$T/syn.y4m" -o "$T/dc" 2>/dev/null
  worst=0
  for i in 0 1 2; do d=$("$PY" $FC maxdiff "$T/dc/flow_00000$i.flo" "$T/d1/flow_00000$i.flo" 2>/dev/null || echo 1); worst=$(awk -v a="$worst" -v b="$d" 'BEGIN { print (b > a) ? b : a }'); done
  awk -v d="$worst" 'BEGIN { exit !(d <= 1e-3) }' && pass "CUDA video (3 pairs, GPU pyramid reused): max |diff| to CPU $worst px" || fail "CUDA video" "max diff $worst"
else
  skip "CUDA vs CPU" "--backend cuda unusable here: $(grep -m1 error: "$T/err")"
fi

[ "$failed" -eq 0 ]
