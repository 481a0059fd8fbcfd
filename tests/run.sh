#!/usr/bin/env bash
# tests/run.sh - runs every test program (build/tests/test_*) and every shell
# test (tests/test_*.sh), prints their PASS/FAIL/SKIP lines and the closing
# line "N passed, N failed, N skipped". Exit status 1 if anything failed.
# Env: BUILD (build folder, default build), LT_DATA (default ../shared/data),
# LT_TEST_FILTER (regex on test file names), LT_TEST_ALL=1 (print PASS lines too).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD LT_DATA=${LT_DATA:-../shared/data}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
for t in "$BUILD"/tests/test_* tests/test_*.sh; do
  [ -e "$t" ] || continue
  case "$t" in *.c|*.h|*.o|*.d) continue ;; esac
  [ -n "${LT_TEST_FILTER:-}" ] && ! [[ "$t" =~ $LT_TEST_FILTER ]] && continue
  echo "== $t"
  start=$(date +%s)
  if [[ "$t" == *.sh ]]; then bash "$t" >"$log.one" 2>"$log.err"; rc=$?; else "$t" >"$log.one" 2>"$log.err"; rc=$?; fi
  if [ -n "${LT_TEST_ALL:-}" ]; then grep -E '^(PASS|FAIL|SKIP) ' "$log.one" | tee -a "$log"
  else grep -E '^(PASS|FAIL|SKIP) ' "$log.one" | tee -a "$log" | grep -Ev '^PASS ' || true; fi
  n=$(grep -cE '^PASS ' "$log.one" || true)
  echo "   ($n passed, $(( $(date +%s) - start )) s)"
  if [ $rc -ne 0 ] && ! grep -qE '^FAIL ' "$log.one"; then
    echo "FAIL $t: exited with status $rc without reporting a failure" | tee -a "$log"
    tail -5 "$log.err"
  fi
  [ $rc -ne 0 ] && status=1
done
rm -f "$log.one" "$log.err"
p=$(grep -cE '^PASS ' "$log" || true)
f=$(grep -cE '^FAIL ' "$log" || true)
s=$(grep -cE '^SKIP ' "$log" || true)
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ] && [ $status -eq 0 ]
