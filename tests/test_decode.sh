#!/usr/bin/env bash
# test_decode.sh - the raw 8-bit fast path of the video layer (rawvideo gray8
# and pal8 packets read as rows, no decoder) gives exactly the decoder's
# frames and timestamps: grey-palette and colour-palette pal8 AVIs (stored
# bottom-up), a top-down gray8 AVI, every --channel; a truncated pal8 AVI
# ends at its last complete frame in both paths. Videos made here with the
# ffmpeg CLI; the reference is the same build with LT_VIDEO_RAW=0.
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
[ $failed -eq 0 ]
