#!/usr/bin/env bash
# bench.sh - `make bench`: every mode's benchmark (scripts/bench_MODE.sh, in
# the mode table's order when the binary lists its modes), one after the
# other. Numbers, not pass/fail; each prints its own tables with the machine
# and date. BENCH_MODES="leukocyte flow" picks some.
set -euo pipefail
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
modes=${BENCH_MODES:-$("$LT" --help | awk '/^Turns biomedical/ {on=1; next} /^Example/ {on=0} on && /^  [a-z]/ {print $1}')}
status=0
for m in $modes; do
  b=scripts/bench_$m.sh
  if [ -f "$b" ]; then
    echo "=== mode $m ($b)"
    bash "$b" || { echo "bench: $b failed (status $?)" >&2; status=1; }
    echo
  else
    echo "=== mode $m: no benchmark script ($b)"
  fi
done
exit $status
