#!/usr/bin/env bash
# test_tiff.sh - multi-page TIFF stacks (ImageJ, OME-TIFF) as inputs, read
# page by page with libtiff (src/core/source.c). The stacks are written at
# test time by build/tools/lt_tiffstack (libtiff; Debian's python3 has no
# tifffile by default) from an lt_synth clip, so the tracks of a stack can be
# compared with those of the clip itself:
#   - an 8-bit 20-page ImageJ stack, finterval=0.5 and XResolution for
#     0.65 um/px: 20 frames, t_s = frame * 0.5, x_um = x_px * 0.65, -v says
#     where the frame rate and the pixel size came from; --fps and
#     --um-per-px override the metadata;
#   - 16-bit (scaled to 0..255), RGB with --channel g, tiled, OME-TIFF
#     (TimeIncrement in ms, PhysicalSizeX): the clip's tracks;
#   - no metadata: the default 25 fps with a warning;
#   - pages of different sizes: exit 3 naming the page;
#   - a truncated stack: exit 0 with a damage warning (the pages before the
#     damage are tracked; --on-damage error makes it exit 3); cut inside the
#     first page: exit 3;
#   - a single-page TIFF still goes through FFmpeg (1 frame, exit 0).
# Env: BUILD (default build), LT_BIN (default ./leuktrack).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=${LT_BIN:-./leuktrack}
SYNTH=$BUILD/tools/lt_synth
STACK=$BUILD/tools/lt_tiffstack
. tests/lib.sh

if [[ ! -x $BIN || ! -x $SYNTH || ! -x $STACK ]]; then
  fail tiff_binaries "$BIN, $SYNTH or $STACK not built (make CUDA=0 all)"
  exit 1
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/lt_tiff.XXXXXX") || { fail tiff_tmpdir "mktemp failed"; exit 1; }
trap 'rm -rf "$T"' EXIT
V=$T/clip.avi
"$SYNTH" --width 160 --height 120 --frames 20 --cells 5 --seed 3 --codec rawvideo --out "$V" 2>/dev/null ||
  { fail tiff_synth "lt_synth could not make $V"; exit 1; }
if ! "$STACK" "$V" "$T/probe.tif" --pages 2 2>/dev/null; then
  skip tiff_all "lt_tiffstack cannot write TIFF (built without libtiff)"
  exit 0
fi
LT="timeout -k 5 120 $BIN"
"$BIN" "$V" -o "$T/clip.csv" 2>/dev/null || fail tiff_clip "leuktrack failed on the clip"
# frame, track, x, y of a CSV (t_s and the µm columns depend on the metadata)
core() { cut -d, -f1,3-5 "$1"; }
same_tracks() { # NAME CSV
  if [[ -s $2 ]] && cmp -s <(core "$2") <(core "$T/clip.csv"); then pass "$1"; else fail "$1" "tracks differ from the clip's"; fi
}

# --- ImageJ 8-bit, finterval 0.5 s, 0.65 um/px ----------------------------
"$STACK" "$V" "$T/ij.tif" --finterval 0.5 --um-per-px 0.65 2>/dev/null
$LT -v "$T/ij.tif" -o "$T/ij.csv" --stats 2>"$T/ij.err"
rc=$?
[[ $rc == 0 ]] && pass tiff_imagej_exit0 || fail tiff_imagej_exit0 "exit $rc: $(head -3 "$T/ij.err")"
grep -q "stats: backend [a-z]*, 20 frames" "$T/ij.err" && pass tiff_imagej_20_frames ||
  fail tiff_imagej_20_frames "$(grep -m1 'frames' "$T/ij.err")"
grep -qF "frame rate 2 fps from the TIFF's ImageJ metadata" "$T/ij.err" && pass tiff_imagej_fps_origin ||
  fail tiff_imagej_fps_origin "no -v line on the frame rate's origin"
grep -qF "pixel size 0.65 um from the TIFF's ImageJ metadata" "$T/ij.err" && pass tiff_imagej_scale_origin ||
  fail tiff_imagej_scale_origin "no -v line on the pixel size's origin"
grep -q "warning" "$T/ij.err" && fail tiff_imagej_no_warning "$(grep -m1 warning "$T/ij.err")" || pass tiff_imagej_no_warning
same_tracks tiff_imagej_tracks "$T/ij.csv"
head -1 "$T/ij.csv" | grep -q ',x_um,y_um$' && pass tiff_imagej_um_columns || fail tiff_imagej_um_columns "$(head -1 "$T/ij.csv")"
bad=$(awk -F, 'NR > 1 && (($2 - $1 * 0.5) > 1e-6 || ($2 - $1 * 0.5) < -1e-6 || ($8 - $4 * 0.65) > 2e-3 || ($8 - $4 * 0.65) < -2e-3) { n++ } END { print n + 0 }' "$T/ij.csv")
[[ $bad == 0 && $(wc -l <"$T/ij.csv") -gt 20 ]] && pass tiff_imagej_t_s_and_um || fail tiff_imagej_t_s_and_um "$bad rows with t_s != frame*0.5 or x_um != x_px*0.65"
# flags override the metadata
$LT -v "$T/ij.tif" -o "$T/ij_fps.csv" --fps 10 --um-per-px 2 2>"$T/ij_fps.err"
if grep -qF "frame rate 10 fps from --fps" "$T/ij_fps.err" && grep -qF "pixel size 2 um from --um-per-px" "$T/ij_fps.err" &&
  awk -F, 'NR == 2 { exit !($2 == 0) } NR > 2 && $1 == 1 { exit !($2 + 0 == 0.1 && ($8 - $4 * 2) < 1e-3 && ($8 - $4 * 2) > -1e-3) }' "$T/ij_fps.csv"; then
  pass tiff_flags_override
else
  fail tiff_flags_override "$(grep -m2 'frame rate\|pixel size' "$T/ij_fps.err" | tr '\n' ' ')"
fi

# --- other layouts -------------------------------------------------------
"$STACK" "$V" "$T/b16.tif" --bits 16 --finterval 0.5 2>/dev/null
$LT "$T/b16.tif" -o "$T/b16.csv" 2>"$T/b16.err" && same_tracks tiff_16bit "$T/b16.csv" || fail tiff_16bit "exit $?: $(head -2 "$T/b16.err")"
"$STACK" "$V" "$T/rgb.tif" --rgb --finterval 0.5 2>/dev/null
$LT "$T/rgb.tif" -o "$T/rgb.csv" --channel g 2>"$T/rgb.err" && same_tracks tiff_rgb_channel_g "$T/rgb.csv" || fail tiff_rgb_channel_g "exit $?: $(head -2 "$T/rgb.err")"
$LT "$T/rgb.tif" -o "$T/rgbr.csv" --channel r 2>/dev/null
# red is flat (40) in these stacks: no cells
[[ $(wc -l <"$T/rgbr.csv") == 1 ]] && pass tiff_rgb_channel_r || fail tiff_rgb_channel_r "--channel r (a flat channel) gave tracks"
"$STACK" "$V" "$T/tiled.tif" --tiled --bits 16 --finterval 0.5 2>/dev/null
$LT "$T/tiled.tif" -o "$T/tiled.csv" 2>"$T/tiled.err" && same_tracks tiff_tiled_16bit "$T/tiled.csv" || fail tiff_tiled_16bit "exit $?: $(head -2 "$T/tiled.err")"
"$STACK" "$V" "$T/ome.ome.tif" --ome --finterval 500 --tunit ms --um-per-px 0.3 2>/dev/null
$LT -v "$T/ome.ome.tif" -o "$T/ome.csv" 2>"$T/ome.err"
if grep -qF "frame rate 2 fps from the OME-TIFF metadata" "$T/ome.err" && grep -qF "pixel size 0.3 um from the OME-TIFF metadata" "$T/ome.err" &&
  awk -F, 'NR > 1 && $1 == 3 { exit !($2 + 0 == 1.5) }' "$T/ome.csv"; then
  same_tracks tiff_ome "$T/ome.csv"
else
  fail tiff_ome "$(grep -v backend "$T/ome.err" | head -3 | tr '\n' ' ')"
fi
"$STACK" "$V" "$T/nometa.TIFF" 2>/dev/null # upper-case suffix too
$LT -v "$T/nometa.TIFF" -o "$T/nometa.csv" 2>"$T/nometa.err"
if grep -qF "the TIFF stack stores no frame interval; t_s assumes 25 fps (give --fps)" "$T/nometa.err" &&
  grep -qF "frame rate 25 fps: a default" "$T/nometa.err"; then
  same_tracks tiff_no_metadata_default_fps "$T/nometa.csv"
else
  fail tiff_no_metadata_default_fps "$(head -3 "$T/nometa.err" | tr '\n' ' ')"
fi

# --- bad stacks ----------------------------------------------------------
"$STACK" "$V" "$T/sizes.tif" --resize-page 6 2>/dev/null
$LT "$T/sizes.tif" -o "$T/sizes.csv" 2>"$T/sizes.err"
rc=$?
[[ $rc == 3 ]] && grep -qF "'$T/sizes.tif': page 7 is 158x120 but page 1 is 160x120" "$T/sizes.err" &&
  pass tiff_page_sizes_differ || fail tiff_page_sizes_differ "exit $rc: $(grep error "$T/sizes.err")"
sz=$(stat -c %s "$T/ij.tif")
head -c $((sz * 2 / 3)) "$T/ij.tif" >"$T/cut.tif"
$LT "$T/cut.tif" -o "$T/cut.csv" 2>"$T/cut.err"
rc=$?
[[ $rc == 0 ]] && grep -q "warning: '$T/cut.tif' is damaged: .*fewer frames than the container announces ([0-9]* of 20)" "$T/cut.err" &&
  pass tiff_truncated_warns || fail tiff_truncated_warns "exit $rc: $(head -2 "$T/cut.err")"
$LT "$T/cut.tif" -o "$T/cut2.csv" --on-damage error 2>"$T/cut2.err"
rc=$?
[[ $rc == 3 ]] && pass tiff_truncated_on_damage_error || fail tiff_truncated_on_damage_error "exit $rc"
head -c 5000 "$T/ij.tif" >"$T/cut0.tif"
$LT "$T/cut0.tif" -o "$T/cut0.csv" 2>"$T/cut0.err"
rc=$?
[[ $rc == 3 ]] && grep -qF "'$T/cut0.tif': damaged TIFF" "$T/cut0.err" && pass tiff_cut_in_first_page ||
  fail tiff_cut_in_first_page "exit $rc: $(head -2 "$T/cut0.err")"

# --- a single page: FFmpeg, as before ----------------------------------------
"$STACK" "$V" "$T/one.tif" --pages 1 2>/dev/null
$LT "$T/one.tif" -o "$T/one.csv" --stats 2>"$T/one.err"
rc=$?
[[ $rc == 0 ]] && grep -q "stats: backend [a-z]*, 1 frames" "$T/one.err" && pass tiff_single_page ||
  fail tiff_single_page "exit $rc: $(head -2 "$T/one.err")"

[ "$failed" -eq 0 ]
