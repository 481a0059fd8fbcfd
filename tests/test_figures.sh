#!/usr/bin/env bash
# test_figures.sh - the leukocyte mode's figures and overlays, read back by
# independent readers:
#   --summary: FILE_velocity.svg parsed with python's xml module (n, mean,
#     median and "µm/s" as <text>, mean = the summary CSV's own mean); .pdf a
#     complete PDF (header, %%EOF, its text through pdftotext when installed);
#     .csv: counts sum to n (tracks with >= 2 steps in the summary), the bin
#     width is 1, 2 or 5 x 10^k, every edge a multiple of it, and the counts
#     equal a count of the summary's mean_speed_um_s over those edges; .png
#     read by cv2 (800x500).
#   --overlay: palette PNGs the size of the video; the frame's grey pixels
#     equal the input frame (decoded by the ffmpeg CLI) with the default 8
#     bits, within 2 levels with --overlay-grey-bits 6; fewer bytes than the
#     RGB PNG of the same picture; tails drawn (--overlay-tail 0 draws fewer
#     coloured pixels); the CSV outputs byte-identical with and without
#     overlays.
#   --overlay-video: .mp4 and .mkv read by ffprobe and by cv2.VideoCapture:
#     codec mpeg4, one frame per processed frame, the frame size (odd sizes
#     padded to even), the frame rate; a frame of the video close to the PNG
#     overlay of the same frame.
#   The portable build (leuktrack-portable, when built) without an encoder:
#     exit 2 with one message naming the build script, no file left.
# Needs /usr/bin/python3 with numpy + cv2 and the ffmpeg CLI (else SKIP).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LT=${LT_BIN:-./leuktrack}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
PY=/usr/bin/python3

if ! $PY -c 'import numpy, cv2' 2>/dev/null || ! command -v ffprobe >/dev/null; then
  skip "figures" "needs /usr/bin/python3 with numpy + cv2 and ffprobe"
  exit 0
fi
"$BUILD/tools/lt_synth" --width 321 --height 241 --frames 30 --seed 5 --out "$T/v.mkv" --truth "$T/truth.csv" \
  >/dev/null 2>&1 || { fail "lt_synth" "could not make the clip"; exit 1; }

# --- the histogram ------------------------------------------------------------
"$LT" "$T/v.mkv" -o "$T/t.csv" --um-per-px 0.65 --fps 20 --summary "$T/s.csv" --overlay "$T/ov" \
  --overlay-video "$T/ov.mp4" 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && pass "leukocyte with --summary, --overlay, --overlay-video: exit 0" || fail "run" "exit $rc: $(cat "$T/err")"
"$LT" "$T/v.mkv" -o "$T/t0.csv" --um-per-px 0.65 --fps 20 --summary "$T/s0.csv" 2>/dev/null
cmp -s "$T/t.csv" "$T/t0.csv" && cmp -s "$T/s.csv" "$T/s0.csv" &&
  pass "CSV outputs identical with and without overlays" || fail "csv identity" "tracks or summary differ"
for e in png svg pdf csv; do
  [ -s "$T/s_velocity.$e" ] || fail "histogram files" "no s_velocity.$e"
done

cat >"$T/hist.py" <<'PY'
import csv, math, sys, xml.etree.ElementTree as ET
import cv2
base, summary = sys.argv[1], sys.argv[2]
errs = []
rows = list(csv.DictReader(open(summary)))
speeds = [float(r["mean_speed_um_s"]) for r in rows if r["mean_speed_um_s"] and int(r["frames"]) >= 3]
n = len(speeds)
# SVG: well formed, the statistics as text
svg = ET.parse(base + ".svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
if svg.tag != ns + "svg": errs.append("root is %s" % svg.tag)
texts = ["".join(t.itertext()) for t in svg.iter(ns + "text")]
alltext = " | ".join(texts)
if ("n = %d tracks" % n) not in texts: errs.append("no 'n = %d tracks' in %s" % (n, alltext))
mean = [t for t in texts if t.startswith("mean = ")]
if not mean or not mean[0].endswith("\u00b5m/s"): errs.append("no 'mean = ... µm/s' in %s" % alltext)
elif n and abs(float(mean[0].split()[2]) - sum(speeds) / n) > 0.051 * max(1, sum(speeds) / n):
    errs.append("mean %s, summary %.3f" % (mean[0], sum(speeds) / n))
if not any(t.startswith("median = ") for t in texts): errs.append("no median")
if not any("\u00b5m/s" in t and "speed" in t for t in texts): errs.append("no x label with µm/s")
# CSV: counts sum to n, round edges, counts = an independent count
b = list(csv.DictReader(open(base + ".csv")))
lo = [float(r["bin_lo"]) for r in b]; hi = [float(r["bin_hi"]) for r in b]; cnt = [int(r["count"]) for r in b]
if sum(cnt) != n: errs.append("counts sum to %d, n = %d" % (sum(cnt), n))
w = hi[0] - lo[0]
m = w / 10 ** math.floor(math.log10(w) + 1e-9)
if min(abs(m - k) for k in (1, 2, 5)) > 1e-6: errs.append("bin width %g" % w)
for e in lo + hi[-1:]:
    if abs(e / w - round(e / w)) > 1e-6: errs.append("edge %r not a multiple of %g" % (e, w))
if any(abs(hi[i] - lo[i + 1]) > 1e-9 for i in range(len(b) - 1)): errs.append("bins not contiguous")
mine = [sum(1 for s in speeds if lo[i] <= s < hi[i]) for i in range(len(b))]
if mine != cnt: errs.append("counts %s, recount %s" % (cnt, mine))
im = cv2.imread(base + ".png")
if im is None or im.shape[:2] != (500, 800): errs.append("PNG %s" % (None if im is None else im.shape))
print("; ".join(errs) if errs else "ok %d tracks, %d bins of %g" % (n, len(b), w))
PY
out=$($PY "$T/hist.py" "$T/s_velocity" "$T/s.csv" 2>&1)
[[ $out == ok* ]] && pass "histogram: SVG text (n, mean, median, µm/s), CSV sums to n with round edges ($out)" ||
  fail "histogram" "$out"
head -c 5 "$T/s_velocity.pdf" | grep -q '%PDF-' && tail -c 7 "$T/s_velocity.pdf" | grep -q '%%EOF' &&
  grep -aq startxref "$T/s_velocity.pdf" && pass "histogram PDF: header, xref, %%EOF" || fail "histogram PDF" "incomplete"
if command -v pdftotext >/dev/null; then
  pdftotext "$T/s_velocity.pdf" "$T/pdf.txt" 2>/dev/null
  grep -q 'n = [0-9]* tracks' "$T/pdf.txt" && grep -q 'µm/s' "$T/pdf.txt" && grep -q 'mean = ' "$T/pdf.txt" &&
    pass "histogram PDF text (pdftotext): n, mean, µm/s" || fail "histogram PDF text" "$(tr '\n' ' ' <"$T/pdf.txt")"
else
  skip "histogram PDF text" "no pdftotext (poppler-utils)"
fi

# --- the overlay PNGs -----------------------------------------------------------
ffmpeg -nostdin -hide_banner -loglevel error -i "$T/v.mkv" -pix_fmt gray "$T/in_%03d.png" ||
  fail "ffmpeg" "cannot decode the clip"
"$LT" "$T/v.mkv" -o "$T/t6.csv" --overlay "$T/ov6" --overlay-grey-bits 6 2>/dev/null
"$LT" "$T/v.mkv" -o "$T/tt.csv" --overlay "$T/ov0" --overlay-tail 0 2>/dev/null
cat >"$T/ov.py" <<'PY'
import glob, os, sys, zlib
import cv2, numpy as np
d, d6, d0, inp = sys.argv[1:5]
errs = []
files = sorted(glob.glob(d + "/frame_*.png"))
if len(files) != 30: errs.append("%d overlay PNGs" % len(files))
tot = rgb = 0
worst8 = worst6 = 0
frac = 1.0
tailpx = notail = 0
for f in files:
    k = int(f[-10:-4])
    hdr = open(f, "rb").read(32)
    if hdr[25] != 3: errs.append("%s colour type %d" % (f, hdr[25]))
    o = cv2.imread(f); g = cv2.imread(inp % (k + 1), cv2.IMREAD_GRAYSCALE)
    if o.shape[:2] != g.shape: errs.append("%s size %s vs %s" % (f, o.shape, g.shape)); continue
    grey = (o[:, :, 0] == o[:, :, 1]) & (o[:, :, 1] == o[:, :, 2])
    # pixels left grey by the drawing: the ROI outline (160) and halos (0) aside, the input's
    keep = grey & (o[:, :, 0] != 0) & (o[:, :, 0] != 160)
    same = (o[:, :, 0][keep] == g[keep]).mean()
    frac = min(frac, same)
    # --overlay-grey-bits 6 on the pixels the drawing left alone (equal to the input at 8 bits)
    o6 = cv2.imread(os.path.join(d6, os.path.basename(f)))
    undrawn = keep & (o[:, :, 0] == g)
    worst6 = max(worst6, int(np.abs(o6[:, :, 0][undrawn].astype(int) - g[undrawn]).max()))
    tot += os.path.getsize(f)
    # the same picture as an RGB PNG (zlib level 3, as the writer used before)
    raw = b"".join(b"\x00" + o[y, :, ::-1].tobytes() for y in range(o.shape[0]))
    rgb += len(zlib.compress(raw, 3))
    o0 = cv2.imread(os.path.join(d0, os.path.basename(f)))
    tailpx += int((~grey).sum())
    notail += int((~((o0[:, :, 0] == o0[:, :, 1]) & (o0[:, :, 1] == o0[:, :, 2]))).sum())
if frac < 0.99: errs.append("only %.4f of the grey pixels equal the input" % frac)
if worst6 > 2: errs.append("--overlay-grey-bits 6: %d levels off" % worst6)
if not tot < rgb: errs.append("palette PNGs %d bytes, RGB %d" % (tot, rgb))
if not tailpx > notail: errs.append("tails: %d coloured pixels, %d without tails" % (tailpx, notail))
print("; ".join(errs) if errs else "ok %.0f bytes/frame (RGB %.0f), grey equal %.4f, 6 bits within %d" %
      (tot / len(files), rgb / len(files), frac, worst6))
PY
out=$($PY "$T/ov.py" "$T/ov" "$T/ov6" "$T/ov0" "$T/in_%03d.png" 2>&1)
[[ $out == ok* ]] && pass "overlay PNGs: palette, the input's grey kept, smaller than RGB, tails ($out)" ||
  fail "overlay PNGs" "$out"

# --- the overlay video ------------------------------------------------------------
"$LT" "$T/v.mkv" -o "$T/tv.csv" --overlay-video "$T/ov.mkv" --frames 3:23 2>"$T/err" ||
  fail "--overlay-video .mkv" "$(cat "$T/err")"
cat >"$T/vid.py" <<'PY'
import json, subprocess, sys
import cv2, numpy as np
path, frames, w, h, fps, png = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
errs = []
p = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames,r_frame_rate", "-of", "json", path],
                   capture_output=True, text=True)
s = json.loads(p.stdout)["streams"][0] if p.returncode == 0 else {}
if s.get("codec_name") != "mpeg4": errs.append("codec %s" % s.get("codec_name"))
if (s.get("width"), s.get("height")) != (w, h): errs.append("ffprobe size %sx%s" % (s.get("width"), s.get("height")))
if int(s.get("nb_read_frames", -1)) != frames: errs.append("ffprobe frames %s, want %d" % (s.get("nb_read_frames"), frames))
if s.get("r_frame_rate") != fps: errs.append("frame rate %s, want %s" % (s.get("r_frame_rate"), fps))
cap = cv2.VideoCapture(path)
n = 0
first = None
while True:
    ok, im = cap.read()
    if not ok: break
    if first is None: first = im
    n += 1
if n != frames: errs.append("cv2 read %d frames, want %d" % (n, frames))
if first is None or first.shape[:2] != (h, w): errs.append("cv2 size %s" % (None if first is None else first.shape))
elif png != "-":
    ref = cv2.imread(png)
    d = np.abs(first[:ref.shape[0], :ref.shape[1]].astype(int) - ref.astype(int)).mean()
    if d > 6: errs.append("first frame differs from its PNG overlay by %.1f on average" % d)
print("; ".join(errs) if errs else "ok %d frames %dx%d %s" % (n, w, h, fps))
PY
out=$($PY "$T/vid.py" "$T/ov.mp4" 30 322 242 20/1 "$T/ov/frame_000000.png" 2>&1)
[[ $out == ok* ]] && pass "overlay video .mp4 (ffprobe, cv2): mpeg4, 30 frames, 321x241 padded to 322x242, 20 fps, = the PNG ($out)" ||
  fail "overlay video .mp4" "$out"
out=$($PY "$T/vid.py" "$T/ov.mkv" 20 322 242 "$(ffprobe -v error -select_streams v:0 -show_entries stream=r_frame_rate -of csv=p=0 "$T/v.mkv")" - 2>&1)
[[ $out == ok* ]] && pass "overlay video .mkv with --frames 3:23: 20 frames at the input's rate ($out)" ||
  fail "overlay video .mkv" "$out"
ls "$T"/*.tmp.* >/dev/null 2>&1 && fail "temporary files" "$(ls "$T"/*.tmp.*)" || pass "no temporary files left"

# --- the portable build without an encoder -------------------------------------------
P=${LT_PORTABLE_BIN:-./leuktrack-portable}
if [ -x "$P" ] && "$P" --version 2>/dev/null | grep -q 'bitmap font'; then
  "$P" --version | grep -q 'figures: built-in 5x7 bitmap font' && pass "portable --version names the bitmap renderer" ||
    fail "portable --version" "$("$P" --version)"
  "$P" "$T/v.mkv" -o "$T/p.csv" --summary "$T/ps.csv" --frames 0:10 2>/dev/null
  [ -s "$T/ps_velocity.png" ] && [ -s "$T/ps_velocity.svg" ] && [ -s "$T/ps_velocity.csv" ] && [ ! -e "$T/ps_velocity.pdf" ] &&
    pass "portable: histogram PNG + SVG + CSV, no PDF" || fail "portable histogram" "$(ls "$T" | grep ps_)"
  if "$P" "$T/v.mkv" -o "$T/p.csv" --overlay-video "$T/p.mp4" --frames 0:3 2>/dev/null; then
    pass "portable: this static FFmpeg has an MPEG-4 encoder, --overlay-video works"
  else
    expect "portable without an encoder: exit 2, one message" 2 "rebuild it with scripts/build-ffmpeg-static.sh" -- \
      "$P" "$T/v.mkv" -o "$T/p2.csv" --overlay-video "$T/p2.mp4"
    [ ! -e "$T/p2.mp4" ] && [ ! -e "$T/p2.csv" ] && ! ls "$T"/p2.* >/dev/null 2>&1 &&
      pass "portable without an encoder: no file left" || fail "portable leftovers" "$(ls "$T" | grep p2)"
  fi
else
  skip "portable --overlay-video" "no bitmap-renderer build at $P (make PORTABLE=1)"
fi

echo "# test_figures: $failed failed"
[ "$failed" -eq 0 ]
