#!/usr/bin/env bash
# scripts/install-deps.sh - installs the Debian/Ubuntu packages leuktrack
# needs to build and test. With --if-missing it does nothing when everything
# is already there (what `make check` and `make demo` call).
#   build: gcc make pkg-config libavformat-dev libavcodec-dev libswscale-dev
#          libavutil-dev libpng-dev zlib1g-dev
#   tests: ffmpeg (CLI, to make test videos), python3 + python3-numpy (Debian's
#          /usr/bin/python3: test checks with the standard library, the
#          benchmark clip with numpy; python3-opencv: the independent
#          oracle of the tumor/vcm/flow tests), libnifti2-dev (NIfTI I/O), python3-nibabel
#          (independent NIfTI reader of tests/test_nifti.sh), clang + libclang-rt-dev +
#          libomp-dev (libFuzzer, sanitizers), valgrind
set -euo pipefail
pkgs=(gcc make pkg-config libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libpng-dev
      zlib1g-dev libnifti2-dev ffmpeg python3 python3-numpy python3-nibabel python3-opencv clang libclang-rt-dev
      libomp-dev valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${1:-}" = "--if-missing" ] && [ ${#missing[@]} -eq 0 ]; then exit 0; fi
if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: all packages present"; exit 0; fi
echo "install-deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
