# tests/lib.sh - sourced by the shell tests (from the repository root): the
# harness lines that tests/run.sh counts, and the failure count each script
# turns into its exit status ([ "$failed" -eq 0 ] at the end).
failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip() { echo "SKIP $1: $2"; }
