# tests/lib.sh - sourced by the shell tests (from the repository root): the
# harness lines that tests/run.sh counts, and the failure count each script
# turns into its exit status ([ "$failed" -eq 0 ] at the end).
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; }
# check_eval NAME EXPRESSION WHY-IF-FAILED: PASS when `eval EXPRESSION`
# succeeds, else FAIL with WHY.
check_eval() { if eval "$2"; then pass "$1"; else fail "$1" "$3"; fi; }
# expect NAME STATUS FRAGMENT -- CMD...: the command exits with STATUS, its
# stderr contains FRAGMENT (grep -F), and it says "error:" exactly once when
# it fails (at most once when it succeeds). Uses $T/out and $T/err.
expect() {
  local name=$1 want=$2 frag=$3
  shift 4
  "$@" >"$T/out" 2>"$T/err"
  local rc=$? nerr
  nerr=$(grep -c 'error:' "$T/err")
  if [ $rc -ne "$want" ]; then fail "$name" "exit $rc, want $want; stderr: $(head -c 300 "$T/err")"
  elif ! grep -qF -- "$frag" "$T/err"; then fail "$name" "stderr lacks '$frag': $(head -c 300 "$T/err")"
  elif [ "$nerr" -gt 1 ] || { [ "$want" -ne 0 ] && [ "$nerr" -ne 1 ]; }; then
    fail "$name" "not exactly one error message: $(cat "$T/err")"
  else pass "$name"; fi
}
# need_readers: python3 readers of leuktrack's files in build/venv
# (pytrackmate, py-ctcmetrics; made here from PyPI when missing). Returns 1
# after a FAIL when they cannot be had: a test needing them must not pass
# without them. Uses $T/venv.log.
need_readers() {
  local py=build/venv/bin/python
  if ! $py -c 'import pytrackmate, ctc_metrics' 2>/dev/null; then
    python3 -m venv build/venv >"$T/venv.log" 2>&1 && build/venv/bin/pip install -q pytrackmate py-ctcmetrics >>"$T/venv.log" 2>&1
  fi
  if ! $py -c 'import pytrackmate, ctc_metrics' 2>/dev/null; then
    fail "readers" "cannot install pytrackmate + py-ctcmetrics into build/venv: $(tail -3 "$T/venv.log")"
    return 1
  fi
}
