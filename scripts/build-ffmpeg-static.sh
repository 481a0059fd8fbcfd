#!/usr/bin/env bash
# build-ffmpeg-static.sh - builds the minimal static FFmpeg that `make portable`
# links into a self-contained ./leuktrack-portable (for machines without
# FFmpeg's shared libraries, e.g. a GPU node). Demuxers/decoders for the
# containers and codecs microscopy video comes in, swscale, zlib, and for the
# overlay video the mpeg4 encoder with the mp4/matroska muxers; no programs,
# no network, no hardware or external libraries (--disable-autodetect), PIC.
# A leuktrack-portable linked against an older build of this script (no
# encoder) says so when --overlay-video is given (exit 2).
#
# usage: scripts/build-ffmpeg-static.sh [--prefix DIR] [--source TARBALL]
#                                       [--with-encoders] [--jobs N]
#   --prefix DIR      install here (default build/ffmpeg-static in the
#                     repository; then `make portable FFMPEG_STATIC=DIR`)
#   --source TARBALL  an FFmpeg release tarball (ffmpeg-X.Y.tar.xz); without it
#                     Debian/Ubuntu's source package is fetched with
#                     `apt-get source` (needs deb-src entries; the script says
#                     how to add them if they are missing)
#   --enable-deb-src  as root on Debian/Ubuntu: add deb-src to the apt sources
#                     (deb822 .sources files) and apt-get update first
#   --with-encoders   also the FFV1/rawvideo encoders and the Matroska/AVI
#                     muxers, so that data/lt_synth links statically too
#   --jobs N          parallel make (default: all cores)
# Needs: a C compiler, make, pkg-config, nasm (x86 assembly; installed with
# apt-get if missing and root), zlib development headers.
# Example:
#   scripts/build-ffmpeg-static.sh --prefix "$HOME/ffmpeg-static"
#   make portable FFMPEG_STATIC="$HOME/ffmpeg-static"
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
prefix=$repo/build/ffmpeg-static
source=
encoders=0
debsrc=0
jobs=$(nproc 2>/dev/null || echo 2)
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --source) source=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --with-encoders) encoders=1; shift ;;
    --enable-deb-src) debsrc=1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo pipefail/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-ffmpeg-static.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "build-ffmpeg-static.sh: $*" >&2; exit 1; }

for t in cc make pkg-config; do command -v $t >/dev/null || die "'$t' not found"; done
if ! command -v nasm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -qq nasm >/dev/null || die "could not install nasm"
  else
    die "nasm not found (apt-get install nasm), needed for FFmpeg's x86 assembly"
  fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ffmpeg-static.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
if [ -n "$source" ]; then
  [ -f "$source" ] || die "no such tarball: $source"
  tar xf "$source"
else
  command -v apt-get >/dev/null || die "no --source given and no apt-get to fetch Debian's source package"
  if [ $debsrc = 1 ]; then
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] && sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
    done
    apt-get update -qq || die "apt-get update failed"
  fi
  if ! apt-get source --download-only ffmpeg >/dev/null 2>&1; then
    die "apt-get source ffmpeg failed: add deb-src entries (e.g. 'Types: deb deb-src' in
  /etc/apt/sources.list.d/*.sources), run apt-get update, or pass --source ffmpeg-X.Y.tar.xz"
  fi
  for t in ffmpeg_*.orig.tar.*; do
    case $t in *.asc) ;; *) tar xf "$t" ;; esac
  done
fi
src=$(find . -maxdepth 1 -type d -name 'ffmpeg*' | head -1)
[ -n "$src" ] || die "no ffmpeg source directory after unpacking"
cd "$src"

demuxers=avi,mov,matroska,rawvideo,image2,image2pipe,yuv4mpegpipe,mjpeg,h264,hevc,m4v,mpegts,mpegps,nut,ivf,gif,apng
decoders=rawvideo,mjpeg,h264,hevc,mpeg4,mpeg2video,mpeg1video,ffv1,png,apng,gif,tiff,bmp,pgm,pgmyuv,ppm,vp8,vp9,msmpeg4v3,huffyuv,utvideo,v210,wrapped_avframe
# the overlay video (--overlay-video FILE.mp4|.mkv, src/io/vidout.c): FFmpeg's
# own MPEG-4 Part 2 encoder and the MP4 and Matroska muxers, always
extra=(--enable-encoder=mpeg4 --enable-muxer=mp4,matroska)
if [ $encoders = 1 ]; then
  extra=(--enable-encoder=ffv1,rawvideo,mpeg4 --enable-muxer=matroska,avi,mp4)
fi
echo "configuring FFmpeg ($(basename "$src")) for $prefix"
./configure --prefix="$prefix" --disable-everything --disable-programs --disable-doc \
  --disable-network --disable-autodetect --enable-static --disable-shared --enable-pic \
  --enable-protocol=file,pipe --enable-demuxer=$demuxers --enable-decoder=$decoders \
  --enable-parser=h264,hevc,mjpeg,mpeg4video,mpegvideo,png,vp8,vp9 \
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb --enable-swscale --enable-zlib "${extra[@]}" \
  >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log" >&2; die "configure failed"; }
echo "building with $jobs jobs"
make -j"$jobs" >"$work/make.log" 2>&1 || { tail -20 "$work/make.log" >&2; die "make failed"; }
make install DESTDIR="$work/stage" >/dev/null
rm -rf "$prefix"
mkdir -p "$prefix"
cp -r "$work/stage/$prefix/include" "$work/stage/$prefix/lib" "$prefix/"
strip --strip-debug "$prefix"/lib/*.a
# relocatable .pc files: the tree can be moved after the build
sed -i "s#^prefix=.*#prefix=\${pcfiledir}/../..#; s#$prefix#\${prefix}#g" "$prefix"/lib/pkgconfig/*.pc
echo "static FFmpeg installed in $prefix"
echo "  make portable FFMPEG_STATIC=$prefix"
