#!/usr/bin/env bash
# test_badinput.sh - the catalogue of bad inputs (SPEC 7, "Robustness"): every
# row of the table below is one run of leuktrack on a broken file, a bad option
# value or an output it cannot write, with the exit status and the stderr
# fragment (grep -F) it must produce. Every run is also checked for:
#   - no crash: exit status < 128 (130 only where the table says so), no
#     sanitizer report, no hang (60 s limit);
#   - stderr: only "leuktrack: ..." lines (no FFmpeg/libpng chatter), and a
#     failed run says "leuktrack: error:" exactly once;
#   - stdout: empty on failure; on success empty or a well-formed CSV;
#   - no temporary files (*.tmp.*) left anywhere in the work folder;
#   - a failed run leaves no output file ($O) and no $O.partial, unless the
#     flags column says the failure happens after rows were written.
# The inputs are made at test time in a temporary folder (lt_synth + ffmpeg);
# tests/badinput/ holds only tiny committed regression inputs (fuzz finds),
# which must be rejected with exit 3 or accepted, never crash.
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why"; exits 1 on a FAIL.
# Env: BUILD (default build), LT_BIN (default ./leuktrack).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=${LT_BIN:-./leuktrack}
SYNTH=$BUILD/tools/lt_synth
. tests/lib.sh

if [[ ! -x $BIN || ! -x $SYNTH ]]; then
  fail badinput_binaries "$BIN or $SYNTH not built (make CUDA=0 all)"
  exit 1
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d "${TMPDIR:-/tmp}/lt_badinput.XXXXXX") || { fail badinput_tmpdir "mktemp failed"; exit 1; }
cleanup() { chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
LT="timeout -k 5 60 $BIN"
O=$T/out.csv
have_ffmpeg=0
command -v ffmpeg >/dev/null 2>&1 && have_ffmpeg=1
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@" </dev/null; }
# rawvideo W H PIXFMT NFRAMES OUT [encoder args]: deterministic bytes (a ramp) as PIXFMT.
rawv() {
  local w=$1 h=$2 pf=$3 n=$4 out=$5
  shift 5
  local bpp
  bpp=$(ffmpeg -hide_banner -pix_fmts 2>/dev/null | awk -v p="$pf" '$2 == p { print $4 }')
  [[ -n $bpp ]] || return 1
  local bytes=$(((w * h * bpp + 7) / 8 * n))
  head -c "$bytes" /dev/zero | tr '\0' '\200' |
    ffmpeg -hide_banner -loglevel error -y -f rawvideo -pix_fmt "$pf" -s "${w}x${h}" -r 10 -i - "$@" "$out"
}
# offset of the K-th (1-based) occurrence of STRING in FILE
offset() { grep -obUa -- "$2" "$1" | sed -n "${3:-1}p" | cut -d: -f1; }
# patch FILE OFFSET PRINTF-BYTES
patch() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }

# --- inputs ---------------------------------------------------------------
V=$T/good.avi # 64x64 gray8 rawvideo AVI, 5 frames: the base of the corrupt files
"$SYNTH" --width 64 --height 64 --frames 5 --cells 1 --seed 4 --codec rawvideo --out "$V" 2>/dev/null ||
  { fail badinput_synth "lt_synth could not make $V"; exit 1; }
movi=$(offset "$V" movi)
f1=$(offset "$V" 00dc 2) # first frame chunk (the 1st "00dc" is in the header)
f4=$(offset "$V" 00dc 5)
idx=$(offset "$V" idx1)
mkdir -p "$T/dir.avi" "$T/outdir" "$T/rodir" "$T/notadir"
: >"$T/empty.avi"
printf 'this is not a video\n' >"$T/text.avi"
head -c 100 "$V" >"$T/cut_header.avi"
head -c $((f1 + 8 + 2000)) "$V" >"$T/cut_frame0.avi"
head -c $((f4 + 8 + 100)) "$V" >"$T/cut_frame3.avi"
head -c $((movi + 4)) "$V" >"$T/zero_frames.avi"
cp "$V" "$T/garbage_header.avi" && patch "$T/garbage_header.avi" 0 'XXXXXXXXXXXX'
cp "$V" "$T/bad_index.avi" && head -c 80 /dev/zero | tr '\0' '\377' |
  dd of="$T/bad_index.avi" bs=1 seek=$((idx + 8)) conv=notrunc 2>/dev/null
cp "$V" "$T/bad_chunk.avi" && patch "$T/bad_chunk.avi" $((f1 + 4104)) 'ABCD\377\377\377\177'
# strf BITMAPINFOHEADER: biWidth at +8, biBitCount at +22 from "strf"+8
strf=$(offset "$V" strf)
cp "$V" "$T/width0.avi" && patch "$T/width0.avi" $((strf + 12)) '\0\0\0\0'
cp "$V" "$T/width65536.avi" && patch "$T/width65536.avi" $((strf + 12)) '\0\0\1\0'
cp "$V" "$T/bpp7.avi" && patch "$T/bpp7.avi" $((strf + 22)) '\7\0'
cp "$V" "$T/fourcc.avi" && patch "$T/fourcc.avi" $((strf + 24)) 'ZZZZ'
# 128x96, 8 frames, several cells: a CSV of more than 1 KiB
"$SYNTH" --width 128 --height 96 --frames 8 --cells 6 --seed 1 --codec rawvideo --out "$T/cells.avi" 2>/dev/null
cp "$V" "$T/unreadable.avi" && chmod 000 "$T/unreadable.avi"
chmod 555 "$T/rodir"
printf 'x' >"$T/notadir/file"
if [[ $have_ffmpeg == 1 ]]; then
  ff -f lavfi -i testsrc=s=64x64:d=0.5:r=10 -c:v mpeg4 "$T/moov_end.mp4"
  sz=$(stat -c %s "$T/moov_end.mp4")
  head -c $((sz - 200)) "$T/moov_end.mp4" >"$T/moov_cut.mp4"
  head -c $((sz / 2)) "$T/moov_end.mp4" >"$T/moov_gone.mp4"
  ff -f lavfi -i testsrc=s=64x64:d=0.1:r=10 -frames:v 1 "$T/image.png"
  rawv 1 1 gray 2 "$T/1x1.avi" -c:v rawvideo
  rawv 100000 1 gray 2 "$T/100000x1.nut" -c:v rawvideo
  rawv 1 100000 gray 2 "$T/1x100000.nut" -c:v rawvideo
  rawv 32 32 gray 2 "$T/32x32.avi" -c:v rawvideo
  rawv 64 64 gray16le 2 "$T/gray16.mkv" -c:v ffv1
  rawv 64 64 rgb48le 2 "$T/rgb48.mkv" -c:v ffv1
  rawv 64 64 yuva420p 2 "$T/yuva420p.mkv" -c:v ffv1
  rawv 64 64 monob 2 "$T/monob.nut" -c:v rawvideo
  rawv 64 64 grayf32le 2 "$T/grayf32.nut" -c:v rawvideo
  rawv 64 64 rgb48le 2 "$T/rgb48.avi" -c:v rawvideo 2>/dev/null # AVI cannot carry it: unreadable
  mkdir -p "$T/seq"
  ff -f lavfi -i testsrc=s=64x64:d=0.5:r=10 "$T/seq/img_%03d.png"
  ff -f lavfi -i testsrc=s=80x80:d=0.1:r=10 -frames:v 1 "$T/seq/img_006.png"
fi
# tumor templates (PGM) and lists; flow/vcm pairs
{ printf 'P5\n10 10\n255\n'; for i in $(seq 0 99); do printf "\\$(printf %03o $(((i * 37) % 256)))"; done; } >"$T/tpl.pgm"
{ printf 'P5\n10 10\n255\n'; head -c 100 /dev/zero | tr '\0' '\011'; } >"$T/flat.pgm"
{ printf 'P5\n100 100\n255\n'; head -c 10000 /dev/urandom; } >"$T/big.pgm"
{ printf 'P5\n10 10\n255\n'; head -c 20 /dev/zero; } >"$T/cut.pgm"
: >"$T/empty_list.csv"
printf 'tpl.pgm,3\n' >"$T/bad_list.csv"
# multi-page TIFF stacks (libtiff, src/core/source.c): made by lt_tiffstack
TSTACK=$BUILD/tools/lt_tiffstack
have_tiff=0
if [[ -x $TSTACK ]] && "$TSTACK" "$V" "$T/stack.tif" --finterval 0.5 2>/dev/null; then
  have_tiff=1
  "$TSTACK" "$V" "$T/stack_sizes.tif" --resize-page 3 2>/dev/null
  sz=$(stat -c %s "$T/stack.tif")
  head -c $((sz * 3 / 4)) "$T/stack.tif" >"$T/stack_cut.tif"
  head -c 3000 "$T/stack.tif" >"$T/stack_cut0.tif"
  "$TSTACK" "$V" "$T/stack_one.tif" --pages 1 2>/dev/null
fi
devfull=
if [[ -w /dev ]]; then # root: a private node, so that a bug cannot replace /dev/full
  mknod -m 666 "$T/full" c 1 7 2>/dev/null && devfull=$T/full
  mknod -m 666 "$T/null" c 1 3 2>/dev/null && devnull=$T/null
else
  devfull=/dev/full
  devnull=/dev/null
fi
devnull=${devnull:-}

# --- the catalogue -----------------------------------------------------------
# name | command ($LT = leuktrack under a 60 s timeout, $V = a good 64x64 clip,
# $T = work folder, $O = $T/out.csv) | exit status | stderr fragment | flags
# Flags: partial = $O.partial may remain (failure after rows were written);
# output = $O may exist (it was complete before a later output failed);
# noroot = skip when running as root; nogpu = skip when a CUDA GPU is visible;
# ffmpeg = needs the ffmpeg CLI; tiff = needs lt_tiffstack (libtiff); full/null = needs the device nodes;
# stdout = stdout is redirected by the command itself.
# Fragments use $T/$V/$O literally; they are expanded before matching.
table=$(cat <<'EOF'
in_missing_file       | $LT $T/nope.avi -o $O                 | 3 | cannot open '$T/nope.avi': No such file or directory |
in_unreadable_file    | $LT $T/unreadable.avi -o $O           | 3 | cannot open '$T/unreadable.avi': Permission denied | noroot
in_directory          | $LT $T/dir.avi -o $O                  | 3 | cannot open '$T/dir.avi': Is a directory |
in_empty_file         | $LT $T/empty.avi -o $O                | 3 | '$T/empty.avi': not a video file FFmpeg recognises |
in_text_as_avi        | $LT $T/text.avi -o $O                 | 3 | '$T/text.avi': not a video file FFmpeg recognises |
in_dev_zero           | $LT /dev/zero -o $O                   | 3 | '/dev/zero': not a video file FFmpeg recognises |
in_avi_cut_in_header  | $LT $T/cut_header.avi -o $O           | 3 | '$T/cut_header.avi': not a video file FFmpeg recognises |
in_avi_cut_in_frame0  | $LT $T/cut_frame0.avi -o $O           | 3 | '$T/cut_frame0.avi' contains no decodable video frames |
in_avi_cut_in_frame3  | $LT $T/cut_frame3.avi -o $O           | 0 | '$T/cut_frame3.avi': skipping undecodable data after frame 3 |
in_avi_zero_frames    | $LT $T/zero_frames.avi -o $O          | 3 | '$T/zero_frames.avi' contains no decodable video frames |
in_avi_garbage_header | $LT $T/garbage_header.avi -o $O       | 3 | '$T/garbage_header.avi': not a video file FFmpeg recognises |
in_avi_bad_index      | $LT $T/bad_index.avi -o $O            | 0 | |
in_avi_bad_chunk      | $LT $T/bad_chunk.avi -o $O            | 0 | |
in_avi_width_0        | $LT $T/width0.avi -o $O               | 3 | '$T/width0.avi' contains no decodable video frames |
in_avi_width_65536    | $LT $T/width65536.avi -o $O           | 3 | '$T/width65536.avi' has unsupported frame size 65536x64 |
in_avi_bpp_7          | $LT $T/bpp7.avi -o $O                 | 0 | |
in_avi_fourcc_zzzz    | $LT $T/fourcc.avi -o $O               | 3 | '$T/fourcc.avi': no decoder for its video codec |
in_mp4_moov_cut       | $LT $T/moov_cut.mp4 -o $O             | 3 | '$T/moov_cut.mp4' contains no decodable video frames | ffmpeg
in_mp4_moov_missing   | $LT $T/moov_gone.mp4 -o $O            | 3 | '$T/moov_gone.mp4': not a video file FFmpeg recognises | ffmpeg
in_png_single_frame   | $LT $T/image.png -o $O                | 0 | | ffmpeg
in_video_1x1          | $LT $T/1x1.avi -o $O                  | 3 | '$T/1x1.avi' | ffmpeg
in_video_100000x1     | $LT $T/100000x1.nut -o $O             | 3 | '$T/100000x1.nut' has unsupported frame size 100000x1 | ffmpeg
in_video_1x100000     | $LT $T/1x100000.nut -o $O             | 3 | '$T/1x100000.nut' has unsupported frame size 1x100000 | ffmpeg
in_video_32x32        | $LT $T/32x32.avi -o $O                | 3 | too small | ffmpeg
in_pixfmt_gray16      | $LT $T/gray16.mkv -o $O               | 0 | | ffmpeg
in_pixfmt_rgb48       | $LT $T/rgb48.mkv -o $O --channel g    | 0 | | ffmpeg
in_pixfmt_yuva420p    | $LT $T/yuva420p.mkv -o $O             | 0 | | ffmpeg
in_pixfmt_monob       | $LT $T/monob.nut -o $O                | 0 | | ffmpeg
in_pixfmt_grayf32     | $LT $T/grayf32.nut -o $O              | 0 | | ffmpeg
in_pixfmt_rgb48_avi   | $LT $T/rgb48.avi -o $O                | 3 | '$T/rgb48.avi': cannot open the rawvideo decoder | ffmpeg
in_tiff_stack         | $LT $T/stack.tif -o $O                | 0 | | tiff
in_tiff_page_sizes    | $LT $T/stack_sizes.tif -o $O          | 3 | '$T/stack_sizes.tif': page 4 is 62x64 but page 1 is 64x64 | tiff,partial
in_tiff_truncated     | $LT $T/stack_cut.tif -o $O            | 0 | '$T/stack_cut.tif' is damaged: | tiff
in_tiff_truncated_err | $LT $T/stack_cut.tif -o $O --on-damage error | 3 | '$T/stack_cut.tif' is damaged: | tiff,partial
in_tiff_cut_page1     | $LT $T/stack_cut0.tif -o $O           | 3 | '$T/stack_cut0.tif': damaged TIFF, its first page cannot be read | tiff
in_tiff_single_page   | $LT $T/stack_one.tif -o $O            | 0 | | tiff
in_size_change        | $LT $T/seq/img_%03d.png -o $O         | 3 | frame 5 is 80x80 but the first frame was 64x64 | ffmpeg,partial
opt_threads_0         | $LT $V -o $O --threads 0              | 2 | invalid value '0' for --threads: must be between 1 and 4096 |
opt_threads_text      | $LT $V -o $O --threads x              | 2 | invalid value 'x' for --threads: not an integer |
opt_threads_junk      | $LT $V -o $O -j 2x                    | 2 | invalid value '2x' for --threads |
opt_threads_huge      | $LT $V -o $O --threads 99999999999999999999 | 2 | for --threads |
opt_detect_every_0    | $LT $V -o $O --detect-every 0         | 2 | invalid value '0' for --detect-every |
opt_detect_every_neg  | $LT $V -o $O --detect-every=-1        | 2 | invalid value '-1' for --detect-every |
opt_radius_reversed   | $LT $V -o $O --radius 20:8            | 2 | invalid value '20:8' for --radius |
opt_radius_too_small  | $LT $V -o $O --radius 1:5             | 2 | invalid value '1:5' for --radius: radii must be within 2:100 |
opt_radius_text       | $LT $V -o $O --radius a:b             | 2 | for --radius: not an integer |
opt_radius_one_value  | $LT $V -o $O --radius 8               | 2 | invalid value '8' for --radius: expected A:B |
opt_radius_too_many   | $LT $V -o $O --radius 2:100           | 2 | invalid value '2:100' for --radius: too many radii |
opt_roi_three         | $LT $V -o $O --roi 1,2,3              | 2 | invalid value '1,2,3' for --roi |
opt_roi_five          | $LT $V -o $O --roi 0,0,50,50,7        | 2 | invalid value '0,0,50,50,7' for --roi |
opt_roi_zero_width    | $LT $V -o $O --roi 0,0,0,10           | 2 | invalid value '0,0,0,10' for --roi: width and height must be positive |
opt_roi_negative      | $LT $V -o $O --roi -1,0,50,50         | 2 | invalid value '-1,0,50,50' for --roi |
opt_roi_text          | $LT $V -o $O --roi a,b,c,d            | 2 | invalid value 'a,b,c,d' for --roi |
opt_roi_outside       | $LT $V -o $O --roi 0,0,100,100        | 2 | --roi 0,0,100,100 extends past the 64x64 frame |
opt_roi_too_small     | $LT $V -o $O --roi 0,0,20,20          | 2 | --roi 0,0,20,20 is too small |
opt_entry_roi_past    | $LT $V -o $O --entry-roi 10,10,60,50  | 2 | --entry-roi 10,10,60,50 extends past the 64x64 frame |
opt_frames_reversed   | $LT $V -o $O --frames 5:2             | 2 | invalid value '5:2' for --frames: B must be greater than A |
opt_frames_empty      | $LT $V -o $O --frames 2:2             | 2 | invalid value '2:2' for --frames |
opt_frames_text       | $LT $V -o $O --frames x:              | 2 | for --frames: not an integer |
opt_frames_no_colon   | $LT $V -o $O --frames 3               | 2 | invalid value '3' for --frames: expected A:B |
opt_frames_beyond     | $LT $V -o $O --frames 100:            | 3 | no frames in the range --frames 100: |
opt_gicov_negative    | $LT $V -o $O --gicov-threshold -1     | 2 | invalid value '-1' for --gicov-threshold |
opt_gicov_nan         | $LT $V -o $O --gicov-threshold nan    | 2 | invalid value 'nan' for --gicov-threshold: not a number |
opt_um_per_px_0       | $LT $V -o $O --um-per-px 0            | 2 | invalid value '0' for --um-per-px |
opt_adherent_speed_neg | $LT $V -o $O --adherent-speed -1     | 2 | invalid value '-1' for --adherent-speed |
opt_adherent_time_abc | $LT $V -o $O --adherent-time abc      | 2 | invalid value 'abc' for --adherent-time: not a number |
opt_fps_negative      | $LT $V -o $O --fps -3                 | 2 | invalid value '-3' for --fps |
opt_fps_overflow      | $LT $V -o $O --fps 1e400              | 2 | invalid value '1e400' for --fps |
opt_search_negative   | $LT $V -o $O --search -1              | 2 | invalid value '-1' for --search |
opt_search_um_text    | $LT $V -o $O --search-um x            | 2 | invalid value 'x' for --search-um: not a number |
opt_max_speed_neg     | $LT $V -o $O --max-speed-um-s -1      | 2 | invalid value '-1' for --max-speed-um-s |
opt_max_speed_huge    | $LT $V -o $O --max-speed-um-s 1e5 --um-per-px 0.5 | 2 | px per frame at 0.5 um/px and the frame rate; --search allows at most 100 |
opt_search_um_no_scale | $LT $V -o $O --search-um 4           | 2 | --search-um needs the pixel size: give --um-per-px |
opt_cell_radius_um_no_scale | $LT $V -o $O --cell-radius-um 4:10 | 2 | --cell-radius-um needs the pixel size: give --um-per-px |
opt_cell_radius_um_rev | $LT $V -o $O --cell-radius-um 10:4 --um-per-px 0.5 | 2 | invalid value '10:4' for --cell-radius-um: MAX must be greater than MIN |
opt_cell_radius_um_one | $LT $V -o $O --cell-radius-um 4 --um-per-px 0.5 | 2 | invalid value '4' for --cell-radius-um: expected MIN:MAX |
opt_cell_radius_um_small | $LT $V -o $O --cell-radius-um 0.5:1 --um-per-px 1 | 2 | '0.5:1' for --cell-radius-um: 1:1 px at 1 um/px; radii must be within 2:100 |
opt_radius_px_and_um  | $LT $V -o $O --radius 8:20 --cell-radius-um 4:10 --um-per-px 0.5 | 2 | --radius and --cell-radius-um both set the same distance |
opt_search_px_and_um  | $LT $V -o $O --search 8 --max-speed-um-s 40 --um-per-px 0.5 | 2 | --search and --max-speed-um-s both set the same distance |
opt_search_um_twice   | $LT $V -o $O --search-um 4 --max-speed-um-s 40 --um-per-px 0.5 | 2 | --search-um and --max-speed-um-s both set the same distance |
opt_static_span_neg   | $LT $V -o $O --static-span -1         | 2 | invalid value '-1' for --static-span |
opt_hold_neg          | $LT $V -o $O --hold -1                | 2 | invalid value '-1' for --hold |
opt_recheck_neg       | $LT $V -o $O --recheck -0.5           | 2 | invalid value '-0.5' for --recheck |
opt_recheck_nan       | $LT $V -o $O --recheck nan            | 2 | invalid value 'nan' for --recheck: not a number |
opt_motion_neg        | $LT $V -o $O --motion -1             | 2 | invalid value '-1' for --motion |
opt_motion_frac       | $LT $V -o $O --motion 2.5            | 2 | invalid value '2.5' for --motion |
env_mgvf_col_text     | env LT_MGVF_COL=abc $LT $V -o $O      | 2 | LT_MGVF_COL=abc: expected 0 (Jacobi) or the over-relaxation factor, a number above 0 and at most 2 |
env_mgvf_col_big      | env LT_MGVF_COL=2.4 $LT $V -o $O      | 2 | LT_MGVF_COL=2.4: expected 0 (Jacobi) or the over-relaxation factor |
opt_backend_gpu       | $LT $V -o $O --backend gpu            | 2 | invalid value 'gpu' for --backend: expected auto, cpu or cuda |
opt_format_xml        | $LT $V -o $O --format xml             | 2 | invalid value 'xml' for --format: expected csv, trackmate or ctc |
opt_channel_q         | $LT $V -o $O --channel q              | 2 | invalid value 'q' for --channel: expected luma, r, g or b |
opt_device_negative   | $LT $V -o $O --device -1              | 2 | invalid value '-1' for --device |
opt_unknown_long      | $LT $V -o $O --bogus                  | 2 | unknown option '--bogus' |
opt_unknown_short     | $LT $V -o $O -x                       | 2 | unknown option '-x' |
opt_missing_value     | $LT $V --roi                          | 2 | option '--roi' needs a value |
opt_missing_value_o   | $LT $V -o                             | 2 | option '-o' needs a value |
opt_value_on_flag     | $LT $V -o $O --progress=1             | 2 | '--progress |
opt_no_input          | $LT -o $O                             | 2 | no input video given |
opt_two_inputs        | $LT $V $V -o $O                       | 2 | one input video expected, got 2 |
opt_mode_unknown      | $LT bogusmode $V -o $O                | 2 | mode 'bogusmode' is not available |
opt_backend_cuda      | $LT $V -o $O --backend cuda           | 5 | --backend cuda: | nogpu
out_missing_dir       | $LT $V -o /nonexistent/dir/x.csv      | 4 | cannot write '/nonexistent/dir/x.csv': No such file or directory |
tumor_no_template     | $LT tumor $V -o $O                    | 2 | no templates given |
tumor_tpl_missing     | $LT tumor $V -o $O --template $T/nope.pgm@5,5 | 3 | cannot open '$T/nope.pgm': No such file or directory |
tumor_tpl_truncated   | $LT tumor $V -o $O --template $T/cut.pgm@5,5 | 3 | '$T/cut.pgm' is truncated |
tumor_tpl_too_big     | $LT tumor $V -o $O --template $T/big.pgm@0,0 | 3 | is larger than the 64x64 frame |
tumor_tpl_outside     | $LT tumor $V -o $O --template $T/tpl.pgm@200,200 | 2 | every window leaves the 64x64 frame |
tumor_tpl_flat        | $LT tumor $V -o $O --template $T/flat.pgm@5,5 | 3 | is flat (zero variance) |
tumor_list_empty      | $LT tumor $V -o $O --templates $T/empty_list.csv | 3 | names no templates |
tumor_list_malformed  | $LT tumor $V -o $O --templates $T/bad_list.csv | 3 | line 1: expected file,x,y |
tumor_shift_absurd    | $LT tumor $V -o $O --template $T/tpl.pgm@5,5 --shift 5000,5000 | 2 | --shift |
vcm_one_frame         | $LT vcm --frames 0:1 $V -o $O         | 3 | this mode works on frame pairs |
vcm_grid_too_fine     | $LT vcm $V -o $O --grid 100           | 2 | is finer than the 64x64 frames |
vcm_patch_even        | $LT vcm $V -o $O --patch 4            | 2 | the patch side must be odd |
flow_pair_sizes       | $LT flow $V $T/tpl.pgm -o $T/x.flo    | 3 | all images of a sequence must have one size |
flow_iterations_0     | $LT flow $V -o $T/fd --iterations 0   | 2 | invalid value '0' for --iterations |
out_ctc_dir_missing   | $LT $V --format ctc -o /nonexistent/ctc/ | 4 | cannot create the CTC folder '/nonexistent/ctc' |
out_readonly_dir      | $LT $V -o $T/rodir/x.csv              | 4 | cannot write '$T/rodir/x.csv': Permission denied | noroot
out_is_directory      | $LT $V -o $T/outdir                   | 4 | '$T/outdir' |
out_dev_full          | $LT $V -o $DEVFULL                    | 4 | No space left on device | full
out_dev_null          | $LT $V -o $DEVNULL                    | 0 | | null
out_stdout_dev_full   | $LT $V >/dev/full                     | 4 | No space left on device | stdout
out_file_too_large    | ( trap '' XFSZ; ulimit -f 1; exec $LT $T/cells.avi -o $O --um-per-px 0.5 ) | 4 | File too large |
out_summary_bad_dir   | $LT $V -o $O --summary /nonexistent/s.csv | 4 | cannot write '/nonexistent/s.csv' | output
out_overlay_dev_null  | $LT $V -o $O --overlay /dev/null/x    | 4 | cannot create overlay folder '/dev/null/x' | partial
out_overlay_is_file   | $LT $V -o $O --overlay $T/notadir/file | 4 | '$T/notadir/file | partial
out_overlay_video_dir | $LT $V -o $O --overlay-video /nonexistent/v.mp4 | 4 | cannot write the overlay video '/nonexistent/v.mp4': No such file or directory |
out_overlay_video_ro  | $LT $V -o $O --overlay-video $T/rodir/v.mkv | 4 | cannot write the overlay video '$T/rodir/v.mkv': Permission denied | noroot
opt_overlay_video_avi | $LT $V -o $O --overlay-video $T/v.avi | 2 | --overlay-video '$T/v.avi': unknown video type; give a name ending in .mp4 or .mkv |
opt_overlay_video_ext | $LT $V -o $O --overlay-video $T/v     | 2 | --overlay-video '$T/v': unknown video type |
opt_overlay_video_empty | $LT $V -o $O --overlay-video=       | 2 | --overlay-video |
opt_overlay_tail_neg  | $LT $V -o $O --overlay-tail -1        | 2 | invalid value '-1' for --overlay-tail |
opt_overlay_grey_bits | $LT $V -o $O --overlay-grey-bits 9    | 2 | invalid value '9' for --overlay-grey-bits: must be between 5 and 8 |
EOF
)

is_root=0
[[ $(id -u) == 0 ]] && is_root=1
has_gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && has_gpu=1
DEVFULL=$devfull
DEVNULL=$devnull
n=0
while IFS='|' read -r name cmd want frag flags; do
  name=$(echo $name)
  [[ -z $name || $name == \#* ]] && continue
  want=$(echo $want)
  flags=$(echo $flags)
  frag=$(echo "$frag" | sed 's/^ *//; s/ *$//')
  n=$((n + 1))
  case ",$flags," in *,noroot,*) [[ $is_root == 1 ]] && { skip "$name" "running as root"; continue; } ;; esac
  case ",$flags," in *,nogpu,*) [[ $has_gpu == 1 ]] && { skip "$name" "a CUDA GPU is visible"; continue; } ;; esac
  case ",$flags," in *,ffmpeg,*) [[ $have_ffmpeg == 0 ]] && { skip "$name" "no ffmpeg CLI"; continue; } ;; esac
  case ",$flags," in *,tiff,*) [[ $have_tiff == 0 ]] && { skip "$name" "no lt_tiffstack (built without libtiff)"; continue; } ;; esac
  case ",$flags," in *,full,*) [[ -z $devfull ]] && { skip "$name" "cannot make a /dev/full node"; continue; } ;; esac
  case ",$flags," in *,null,*) [[ -z $devnull ]] && { skip "$name" "cannot make a /dev/null node"; continue; } ;; esac
  frag=${frag//\$T/$T}
  frag=${frag//\$V/$V}
  frag=${frag//\$O/$O}
  rm -rf "$O" "$O.partial"
  (cd "$T" && eval "$cmd") >"$T/stdout" 2>"$T/stderr"
  rc=$?
  why=()
  [[ $rc == "$want" ]] || why+=("exit status $rc, expected $want")
  if ((rc >= 128 && rc != 130)) || [[ $rc == 124 ]]; then why+=("crashed or hung (status $rc)"); fi
  grep -qE 'Sanitizer|runtime error:|LeakSanitizer' "$T/stderr" && why+=("sanitizer report")
  [[ -n $frag ]] && ! grep -qF -- "$frag" "$T/stderr" && why+=("stderr lacks \"$frag\"")
  other=$(grep -cv '^leuktrack: ' "$T/stderr")
  [[ $other != 0 ]] && why+=("$other stderr line(s) not from leuktrack")
  nerr=$(grep -c '^leuktrack: error:' "$T/stderr")
  [[ $rc != 0 && $nerr != 1 ]] && why+=("$nerr error lines, expected 1")
  [[ $rc == 0 && $nerr != 0 ]] && why+=("error line on success")
  if [[ ",$flags," != *,stdout,* && -s $T/stdout ]]; then
    if [[ $rc != 0 ]]; then
      why+=("stdout not empty on failure")
    elif ! awk -F, 'NR == 1 { n = NF; if ($1 != "frame") bad = 1 } NF != n { bad = 1 } END { exit bad }' "$T/stdout"; then
      why+=("stdout is not a CSV")
    fi
  fi
  tmps=$(find "$T" /nonexistent -name '*.tmp.*' 2>/dev/null | head -3)
  [[ -n $tmps ]] && why+=("temporary files left: $tmps")
  if [[ $rc != 0 ]]; then
    [[ -e $O && ",$flags," != *,output,* ]] && why+=("$O exists after a failed run")
    [[ -e $O.partial && ",$flags," != *,partial,* ]] && why+=("$O.partial exists after a run that wrote no rows")
  fi
  [[ -n $devfull && $devfull != /dev/full && ! -c $devfull ]] && { why+=("$devfull is no longer a device"); rm -f "$devfull"; mknod -m 666 "$devfull" c 1 7 2>/dev/null; }
  [[ -n $devnull && $devnull != /dev/null && ! -c $devnull ]] && { why+=("$devnull is no longer a device"); rm -f "$devnull"; mknod -m 666 "$devnull" c 1 3 2>/dev/null; }
  if [[ ${#why[@]} == 0 ]]; then
    pass "$name"
  else
    msg=$(IFS=';'; echo "${why[*]}")
    fail "$name" "$msg [stderr: $(head -c 300 "$T/stderr" | tr '\n' ' ')]"
  fi
  rm -rf "$O" "$O.partial" "$T"/*.tmp.* "$T/outdir"/* 2>/dev/null
done <<<"$table"

# --- committed regression inputs (fuzz finds): exit 0 or 3, never a crash -----
for f in tests/badinput/*; do
  [[ -f $f ]] || continue
  case "$f" in *.md|*.txt|*.args) continue ;; esac
  n=$((n + 1))
  name="regress_$(basename "$f")"
  $LT "$f" -o "$O" >"$T/stdout" 2>"$T/stderr"
  rc=$?
  if [[ $rc != 0 && $rc != 3 ]] || grep -qE 'Sanitizer|runtime error:' "$T/stderr"; then
    fail "$name" "exit status $rc [stderr: $(head -c 300 "$T/stderr" | tr '\n' ' ')]"
  else
    pass "$name"
  fi
  rm -f "$O" "$O.partial"
done
echo "# test_badinput: $n cases, $failed failed"
[[ $failed == 0 ]]
