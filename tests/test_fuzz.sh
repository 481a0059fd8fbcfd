#!/usr/bin/env bash
# test_fuzz.sh - fuzz smoke test (SPEC 7: "file parsers are fuzzed"): builds
# the libFuzzer harnesses (fuzz/*.c, mk/fuzz.mk) and runs each for a few
# seconds from its seed corpus (`make -s fuzz-smoke`), then replays every
# committed regression input tests/badinput/<harness>-* through its harness.
# One line per harness: "PASS fuzz_<h> (N execs)" or "FAIL ...";
# "SKIP" when clang with libFuzzer is not installed.
# Env: FUZZ_SMOKE_TIME (seconds per harness, default 8 in mk/fuzz.mk).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
harnesses=(fuzz_cli fuzz_image fuzz_video fuzz_flo fuzz_nifti fuzz_tumor_list)

cc=$(command -v clang || command -v clang-14 || true)
probe=$(mktemp -d "${TMPDIR:-/tmp}/lt_fuzzprobe.XXXXXX")
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/p.c"
if [[ -z $cc ]] || ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
  for h in "${harnesses[@]}"; do echo "SKIP $h: clang with libFuzzer not installed (scripts/install-deps.sh)"; done
  exit 0
fi

make -s fuzz-smoke >"$probe/smoke.log" 2>&1
rc=$?
for h in "${harnesses[@]}"; do
  log=build-fuzz/$h.log
  if [[ ! -x build-fuzz/$h ]]; then
    fail "$h" "not built: $(grep -m3 -E 'error' "$probe/smoke.log" | tr '\n' ' ')"
    continue
  fi
  if [[ ! -f $log ]]; then
    fail "$h" "did not run (an earlier harness failed?)"
    continue
  fi
  execs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$log")
  if grep -qE '^==[0-9]+==ERROR|^SUMMARY: |deadly signal|^artifact_prefix' "$log"; then
    fail "$h" "crash after ${execs:-?} execs: $(grep -m1 -E 'ERROR|SUMMARY' "$log") - input in build-fuzz/artifacts/"
  elif [[ -z $execs || $execs -lt 100 ]]; then
    fail "$h" "only ${execs:-0} execs"
  else
    pass "$h ($execs execs)"
  fi
done
[[ $rc != 0 && $failed == 0 ]] && fail fuzz_smoke "make fuzz-smoke exited $rc: $(tail -3 "$probe/smoke.log" | tr '\n' ' ')"

# regression inputs found by fuzzing: tests/badinput/<harness>-<what>
for f in tests/badinput/fuzz_*-*; do
  [[ -f $f ]] || continue
  h=${f##*/}
  h=${h%%-*}
  if [[ ! -x build-fuzz/$h ]]; then
    fail "regress_${f##*/}" "no harness build-fuzz/$h"
    continue
  fi
  if build-fuzz/"$h" -close_fd_mask=3 -timeout=10 "$f" >"$probe/replay.log" 2>&1; then
    pass "regress_${f##*/}"
  else
    fail "regress_${f##*/}" "$(grep -m1 -E 'ERROR|SUMMARY' "$probe/replay.log")"
  fi
done
[[ $failed == 0 ]]
