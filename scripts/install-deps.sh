#!/usr/bin/env bash
# scripts/install-deps.sh - installs the Debian/Ubuntu packages leuktrack
# needs to build and test. With --if-missing it does nothing when everything
# is already there (what `make check` and `make demo` call).
#   build: gcc make pkg-config libavformat-dev libavcodec-dev libswscale-dev
#          libavutil-dev libpng-dev zlib1g-dev libtiff-dev (CTC label masks)
#          libcairo2-dev (figures; fonts-dejavu-core: their font)
#   tests: ffmpeg (CLI, to make test videos), python3 + python3-numpy (Debian's
#          /usr/bin/python3: test checks with the standard library, the
#          benchmark clip with numpy; python3-opencv: the independent
#          oracle of the tumor/vcm/flow tests), libnifti2-dev (NIfTI I/O), python3-nibabel
#          (independent NIfTI reader of tests/test_nifti.sh), clang + libclang-rt-dev +
#          libomp-dev (libFuzzer, sanitizers), valgrind; poppler-utils (pdftotext:
#          the text of the histogram PDF, tests/test_figures.sh); python3-venv + a venv
#          build/venv with pytrackmate and py-ctcmetrics from PyPI (the
#          TrackMate and Cell Tracking Challenge readers of
#          tests/test_leuk_outputs.sh; --if-missing makes it when absent)
#   bench: --bench also puts SimpleITK (PyPI) in build/venv, the peer of
#          scripts/bench_flow3d.sh (demons registration); not needed by tests
set -euo pipefail
pkgs=(gcc make pkg-config libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libpng-dev
      libtiff-dev libcairo2-dev fonts-dejavu-core zlib1g-dev libnifti2-dev ffmpeg python3 python3-numpy python3-nibabel python3-opencv python3-venv clang libclang-rt-dev
      libomp-dev valgrind poppler-utils)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
venv() {
  if [ ! -x build/venv/bin/python ] || ! build/venv/bin/python -c 'import pytrackmate, ctc_metrics' 2>/dev/null; then
    echo "install-deps: python venv build/venv with pytrackmate, py-ctcmetrics (PyPI)"
    python3 -m venv build/venv && build/venv/bin/pip install -q pytrackmate py-ctcmetrics
  fi
}
if [ "${1:-}" = "--bench" ]; then
  venv
  build/venv/bin/python -c 'import SimpleITK' 2>/dev/null || build/venv/bin/pip install -q SimpleITK
  exit 0
fi
if [ "${1:-}" = "--if-missing" ] && [ ${#missing[@]} -eq 0 ]; then venv; exit 0; fi
if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: all packages present"; venv; exit 0; fi
echo "install-deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
venv
