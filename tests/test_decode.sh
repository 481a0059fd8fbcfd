#!/usr/bin/env bash
# test_decode.sh - the raw 8-bit fast path of the video layer (rawvideo gray8
# and pal8 packets read as rows, no decoder) gives exactly the decoder's
# frames and timestamps: grey-palette and colour-palette pal8 AVIs (stored
# bottom-up), a top-down gray8 AVI, every --channel; a truncated pal8 AVI
# ends at its last complete frame in both paths. Videos made here with the
# ffmpeg CLI; the reference is the same build with LT_VIDEO_RAW=0. A y4m
# grey file read through the memory map gives what FFmpeg's demuxer gives
# (LT_VIDEO_MMAP=0), also truncated, with garbage or frame parameters.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DEC=$BUILD/tools/lt_decode
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
if ! command -v ffmpeg >/dev/null; then fail "decode tests" "ffmpeg CLI missing (scripts/install-deps.sh installs it)"; exit 1; fi
[ -x "$DEC" ] || { fail "decode tests" "$DEC not built"; exit 1; }
FF="ffmpeg -nostdin -hide_banner -loglevel error -y"
/usr/bin/python3 - "$T/pal.ppm" <<'PY'
import sys
with open(sys.argv[1], "wb") as f:
    f.write(b"P6\n16 16\n255\n" + bytes(v for k in range(256) for v in (k, k, k)))
PY
$FF -f lavfi -i "testsrc2=s=96x64:r=12:d=2,format=gray" -i "$T/pal.ppm" \
  -lavfi "[0:v]format=rgb24[a];[a][1:v]paletteuse=dither=none" -c:v rawvideo -pix_fmt pal8 "$T/pal8_grey.avi"
$FF -f lavfi -i "testsrc2=s=97x61:r=12:d=2" -c:v rawvideo -pix_fmt pal8 "$T/pal8_colour.avi"
$FF -f lavfi -i "testsrc2=s=95x64:r=12:d=2" -c:v rawvideo -pix_fmt gray -vtag Y800 "$T/gray8.avi"
size=$(stat -c %s "$T/pal8_grey.avi")
head -c $((size * 2 / 3)) "$T/pal8_grey.avi" >"$T/pal8_cut.avi"
for v in pal8_grey pal8_colour gray8 pal8_cut; do
  for ch in luma r g b; do
    LT_VIDEO_RAW=0 "$DEC" "$T/$v.avi" --channel $ch >"$T/ref" 2>/dev/null; rc0=$?
    "$DEC" "$T/$v.avi" --channel $ch >"$T/fast" 2>/dev/null; rc1=$?
    n=$(wc -l <"$T/ref")
    if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$n" -ge 8 ] && cmp -s "$T/ref" "$T/fast"; then
      pass "$v --channel $ch: fast path = decoder ($n frames, pixels and t_s)"
    else
      fail "$v --channel $ch" "rc $rc0/$rc1, $n frames, $(diff "$T/ref" "$T/fast" | head -2 | tr '\n' ' ')"
    fi
  done
done
# the grey-palette file really takes the fast path, and gives bytes
"$DEC" "$T/pal8_grey.avi" >"$T/fast" 2>/dev/null
awk '$3 != 1 {bad=1} END {exit bad}' "$T/fast" && pass "pal8 grey palette: every frame comes with 8-bit bytes" || fail "pal8 bytes" "$(head -2 "$T/fast")"
for v in pal8_grey gray8; do
  "$DEC" "$T/$v.avi" --quiet --debug 2>"$T/err"
  grep -q "raw 8-bit frames" "$T/err" && pass "$v takes the raw fast path" || fail "$v fast path" "not taken: $(head -3 "$T/err")"
done
"$DEC" "$T/pal8_colour.avi" --quiet --debug 2>"$T/err"
! grep -q "raw 8-bit frames" "$T/err" && pass "pal8 colour palette, luma: the decoder path (luma is not 8-bit)" || fail "pal8 colour" "fast path taken"
# frames handed over without a copy (grey8 in FFmpeg's packet or decoded
# plane) = copied into the ring (LT_VIDEO_ZEROCOPY=0), raw path and decoder
for v in gray8 pal8_grey pal8_cut; do
  for raw in 1 0; do
    for bo in "" --bytes-only; do
      LT_VIDEO_RAW=$raw LT_VIDEO_ZEROCOPY=0 "$DEC" "$T/$v.avi" $bo >"$T/ref" 2>/dev/null; rc0=$?
      LT_VIDEO_RAW=$raw "$DEC" "$T/$v.avi" $bo >"$T/fast" 2>/dev/null; rc1=$?
      n=$(wc -l <"$T/ref")
      if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$n" -ge 8 ] && cmp -s "$T/ref" "$T/fast"; then
        pass "$v LT_VIDEO_RAW=$raw ${bo:-floats}: no copy = copy ($n frames)"
      else
        fail "$v LT_VIDEO_RAW=$raw ${bo:-floats}: no copy vs copy" "rc $rc0/$rc1, $n frames"
      fi
    done
  done
done
# y4m grey (mono) through the memory map = through FFmpeg's demuxer
# (LT_VIDEO_MMAP=0), pixels, t_s and messages: plain, a truncated last
# frame, garbage after the last frame, a frame line with parameters (the
# demuxer takes over there), parameters on frame 0 (no map)
/usr/bin/python3 - "$T" <<'PY'
import random, sys
w, h = 37, 23
random.seed(1)
fr = [bytes(random.randrange(256) for _ in range(w * h)) for _ in range(9)]
hdr = b'YUV4MPEG2 W%d H%d F12:1 Ip A1:1 Cmono\n' % (w, h)
def wr(name, parts):
    open('%s/%s.y4m' % (sys.argv[1], name), 'wb').write(hdr + b''.join(parts))
wr('y4m_plain', [b'FRAME\n' + f for f in fr])
wr('y4m_cut', [b'FRAME\n' + f for f in fr] + [b'FRAME\n' + fr[0][:100]])
wr('y4m_garbage', [b'FRAME\n' + f for f in fr] + [b'JUNKJUNK' * 20])
wr('y4m_param', [(b'FRAME Ixyz\n' if k == 4 else b'FRAME\n') + f for k, f in enumerate(fr)])
wr('y4m_param0', [(b'FRAME Ixyz\n' if k == 0 else b'FRAME\n') + f for k, f in enumerate(fr)])
PY
for v in y4m_plain y4m_cut y4m_garbage y4m_param y4m_param0; do
  for bo in "" --bytes-only; do
    LT_VIDEO_MMAP=0 "$DEC" "$T/$v.y4m" $bo >"$T/ref" 2>"$T/ref.err"; rc0=$?
    "$DEC" "$T/$v.y4m" $bo >"$T/fast" 2>"$T/fast.err"; rc1=$?
    n=$(wc -l <"$T/ref")
    if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$n" -eq 9 ] && cmp -s "$T/ref" "$T/fast" &&
      diff <(grep -v ms/frame "$T/ref.err") <(grep -v ms/frame "$T/fast.err") >/dev/null; then
      pass "$v ${bo:-floats}: memory map = demuxer ($n frames, pixels, t_s, messages)"
    else
      fail "$v ${bo:-floats}" "rc $rc0/$rc1, $n frames, $(diff "$T/ref" "$T/fast" | head -2 | tr '\n' ' ')"
    fi
  done
done
"$DEC" "$T/y4m_plain.y4m" --quiet --debug 2>"$T/err"
grep -q "memory map" "$T/err" && pass "y4m mono is read through the memory map" || fail "y4m map" "not taken: $(head -3 "$T/err")"
"$DEC" "$T/y4m_param0.y4m" --quiet --debug 2>"$T/err"
! grep -q "memory map" "$T/err" && pass "y4m with parameters on frame 0: the demuxer" || fail "y4m param0" "map taken"
[ $failed -eq 0 ]
