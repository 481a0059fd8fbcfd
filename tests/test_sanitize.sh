#!/usr/bin/env bash
# test_sanitize.sh - part of `make check`: builds the ASan + UBSan variant
# (make SANITIZE=1: build-san/, ./leuktrack-san; CPU only) and runs the unit,
# real-frame, CLI, bad-input, robustness and tracking tests again with it.
# Every line is reported as "PASS san: ..."; any sanitizer report fails the
# test that triggered it (UBSan is built with -fno-sanitize-recover, ASan
# aborts). Skips when the toolchain has no sanitizer runtime or the
# development files to build are missing (`make check` installs them first).
# Env: LT_NO_SANITIZE=1 skips (for quick local runs).
set -u
cd "$(dirname "$0")/.."
[ -n "${LT_IN_SANITIZE:-}" ] && exit 0 # not inside itself
if [ -n "${LT_NO_SANITIZE:-}" ]; then echo "SKIP sanitizer build: LT_NO_SANITIZE set"; exit 0; fi
if ! echo 'int main(void){return 0;}' | ${CC:-cc} -fsanitize=address,undefined -x c - -o /tmp/lt_san_probe.$$ 2>/dev/null; then
  echo "SKIP sanitizer build: the compiler has no ASan/UBSan runtime"
  exit 0
fi
rm -f /tmp/lt_san_probe.$$
# a machine that only runs prebuilt binaries (the GPU machine) cannot build it
if ! pkg-config --exists libavformat libavcodec libswscale libavutil libpng 2>/dev/null; then
  echo "SKIP sanitizer build: FFmpeg/libpng development files not installed (scripts/install-deps.sh)"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! make -s SANITIZE=1 all $(ls tests/test_*.c | sed 's#^tests/#build-san/tests/#; s#\.c$##') >"$log" 2>&1; then
  echo "FAIL san: make SANITIZE=1 failed: $(tail -3 "$log" | tr '\n' ' ')"
  exit 1
fi
LT_IN_SANITIZE=1 LT_TEST_ALL=1 BUILD=build-san LT_BIN=./leuktrack-san ASAN_OPTIONS=detect_leaks=1 \
  LT_TEST_FILTER='test_(io|leuk_stages|cli|badinput|robust|tracking|modes|decode|tumor)' bash tests/run.sh >"$log" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP) ' "$log" | sed -E 's/^(PASS|FAIL|SKIP) /\1 san: /'
[ $rc -eq 0 ]
