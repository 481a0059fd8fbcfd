#!/usr/bin/env bash
# test_robust.sh - behaviour under interruption, failure and long input
# (SPEC 1 "memory stays flat", 3 "complete or not at all", 5 determinism):
#  (a) SIGINT / SIGTERM mid-run: exit 130, no tracks.csv, tracks.csv.partial
#      whose every line has the header's field count and ends in a newline,
#      and which equals a complete run over the same frames (so it is a prefix
#      of the full output, cut at a frame boundary);
#  (b) an existing output file is never touched by a run that fails: after a
#      SIGTERM, after a decode error mid-video and after a write error;
#  (c) memory stays flat: peak RSS over 10 000 frames within 4 MiB of the peak
#      over the first 1 000 frames of the same video;
#  (d) determinism: --threads 1 and --threads 2 give identical CSV and summary.
# Inputs are generated with lt_synth into a temporary folder (about 50 MB).
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why"; exits 1 on a FAIL.
# Env: BUILD (default build), LT_BIN (default ./leuktrack).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=${LT_BIN:-./leuktrack}
SYNTH=$BUILD/tools/lt_synth
. tests/lib.sh
check() { # check NAME WHY-IF-FAILED COMMAND...
  local name=$1 why=$2
  shift 2
  if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}

if [[ ! -x $BIN || ! -x $SYNTH ]]; then
  fail robust_binaries "$BIN or $SYNTH not built (make CUDA=0 all)"
  exit 1
fi
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
T=$(mktemp -d "${TMPDIR:-/tmp}/lt_robust.XXXXXX") || { fail robust_tmpdir "mktemp failed"; exit 1; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT

# every line has as many fields as the header, and the file ends in a newline
well_formed() {
  [[ -s $1 && $(tail -c 1 "$1" | od -An -c | tr -d ' ') == '\n' ]] &&
    awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad }' "$1"
}
# is FILE1 a line prefix of FILE2?
is_prefix() { cmp -s "$1" <(head -n "$(wc -l <"$1")" "$2"); }

# Start leuktrack on ARGS in the background, wait until its temporary output
# holds a few rows, send SIG, wait; sets rc. Output name is $T/tracks.csv.
interrupt_run() {
  local sig=$1
  shift
  "$BIN" "$@" -o "$T/tracks.csv" 2>"$T/int.err" &
  local pid=$!
  pids+=("$pid")
  local i
  for ((i = 0; i < 200; i++)); do # up to 20 s
    local tmpf
    tmpf=$(ls "$T"/tracks.csv.tmp.* 2>/dev/null | head -1)
    [[ -n $tmpf && $(wc -l <"$tmpf" 2>/dev/null || echo 0) -ge 5 ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 0.3
  kill -"$sig" "$pid" 2>/dev/null
  wait "$pid"
  rc=$?
}

# (a)+(b) interruption -------------------------------------------------------
long=$T/long.avi # about 4 s of work at --threads 1 on a 2-core box
"$SYNTH" --width 160 --height 120 --frames 600 --cells 4 --seed 5 --codec rawvideo --out "$long" 2>/dev/null ||
  { fail robust_synth "lt_synth failed"; exit 1; }
for sig in INT TERM; do
  rm -f "$T"/tracks.csv*
  [[ $sig == TERM ]] && printf 'old,content\n1,2\n' >"$T/tracks.csv" # (b): must survive
  interrupt_run "$sig" "$long" --threads 1 --backend cpu # long on any machine (a GPU would finish first)
  s=$(echo "$sig" | tr A-Z a-z)
  check "sig${s}_exit_130" "exit status $rc [$(head -c 200 "$T/int.err")]" [ "$rc" = 130 ]
  check "sig${s}_message" "stderr lacks 'interrupted' [$(head -c 200 "$T/int.err")]" grep -q 'interrupted' "$T/int.err"
  if [[ $sig == INT ]]; then
    check "sig${s}_no_final_file" "tracks.csv exists after an interrupted run" [ ! -e "$T/tracks.csv" ]
  else
    check "sig${s}_old_output_intact" "the existing tracks.csv was changed" \
      cmp -s "$T/tracks.csv" <(printf 'old,content\n1,2\n')
  fi
  check "sig${s}_no_temporary" "temporary left: $(ls "$T"/*.tmp.* 2>/dev/null)" \
    bash -c "! ls '$T'/*.tmp.* >/dev/null 2>&1"
  part=$T/tracks.csv.partial
  if [[ ! -s $part ]]; then
    fail "sig${s}_partial_kept" "no tracks.csv.partial"
    continue
  fi
  pass "sig${s}_partial_kept"
  check "sig${s}_partial_well_formed" "a line of the partial file is cut or has the wrong field count" well_formed "$part"
  last=$(tail -n 1 "$part" | cut -d, -f1)
  rows=$(($(wc -l <"$part") - 1))
  if ! [[ $last =~ ^[0-9]+$ ]] || ((rows < 1)); then
    fail "sig${s}_partial_rows" "partial file has no rows (last line '$(tail -n 1 "$part")')"
    continue
  fi
  # a complete run over the frames the partial file covers
  "$BIN" "$long" --threads 1 --frames "0:$((last + 1))" -o "$T/ref.csv" 2>/dev/null
  check "sig${s}_partial_is_prefix" "partial ($rows rows, last frame $last) is not a prefix of a complete run" \
    is_prefix "$part" "$T/ref.csv"
  check "sig${s}_partial_frame_boundary" "partial ends inside frame $last: $(wc -l <"$part") vs $(wc -l <"$T/ref.csv") lines" \
    cmp -s "$part" "$T/ref.csv"
  echo "# sig$s: stopped after frame $last with $rows rows"
done

# (b) a decode error mid-video and a write error leave the old file alone -----
printf 'old,content\n1,2\n' >"$T/keep.csv"
if command -v ffmpeg >/dev/null 2>&1; then
  mkdir -p "$T/seq"
  ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i testsrc=s=64x64:d=0.5:r=10 "$T/seq/img_%03d.png" &&
    ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i testsrc=s=80x80:d=0.1:r=10 -frames:v 1 "$T/seq/img_006.png"
  "$BIN" "$T/seq/img_%03d.png" -o "$T/keep.csv" 2>"$T/err"
  rc=$?
  check decode_error_exit_3 "exit status $rc [$(head -c 200 "$T/err")]" [ "$rc" = 3 ]
  check decode_error_old_output_intact "keep.csv changed after a failed run" \
    cmp -s "$T/keep.csv" <(printf 'old,content\n1,2\n')
  check decode_error_partial_well_formed "keep.csv.partial missing or malformed" well_formed "$T/keep.csv.partial"
else
  skip decode_error_old_output_intact "no ffmpeg CLI"
fi
rm -f "$T/keep.csv.partial"
(trap '' XFSZ; ulimit -f 2; exec "$BIN" "$long" --frames 0:200 -o "$T/keep.csv" --um-per-px 0.5) 2>"$T/err"
rc=$?
check write_error_exit_4 "exit status $rc [$(head -c 200 "$T/err")]" [ "$rc" = 4 ]
check write_error_old_output_intact "keep.csv changed after a failed write" \
  cmp -s "$T/keep.csv" <(printf 'old,content\n1,2\n')
check write_error_no_leftovers "files left: $(ls "$T"/keep.csv.* 2>/dev/null)" \
  bash -c "! ls '$T'/keep.csv.* >/dev/null 2>&1"

# (d) determinism across thread counts --------------------------------------
"$BIN" "$long" --frames 0:120 --threads 1 -o "$T/t1.csv" --summary "$T/s1.csv" 2>/dev/null
"$BIN" "$long" --frames 0:120 --threads 2 -o "$T/t2.csv" --summary "$T/s2.csv" 2>/dev/null
check threads_identical_csv "--threads 1 and 2 differ: $(diff "$T/t1.csv" "$T/t2.csv" 2>&1 | head -3 | tr '\n' ' ')" \
  bash -c "[ -s '$T/t1.csv' ] && [ \$(wc -l <'$T/t1.csv') -gt 20 ] && cmp -s '$T/t1.csv' '$T/t2.csv'"
check threads_identical_summary "--threads 1 and 2 give different summaries" cmp -s "$T/s1.csv" "$T/s2.csv"

# (c) flat memory --------------------------------------------------------------
rm -f "$long" "$T"/*.csv*
if [[ -x /usr/bin/time ]] && /usr/bin/time -v true 2>&1 | grep -q 'Maximum resident'; then
  flat=$T/flat.avi # 64x64, cells entering and leaving all the time
  "$SYNTH" --width 64 --height 64 --frames 10000 --cells 1 --rmin 5 --rmax 7 --vmin 0.5 --vmax 1 --seed 2 \
    --codec rawvideo --out "$flat" 2>/dev/null
  opts=(--radius 4:8 --detect-every 100 --threads 1)
  # under ASan the quarantine of freed blocks (256 MB) would grow RSS: off
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
  /usr/bin/time -v "$BIN" "$flat" "${opts[@]}" --frames 0:1000 -o "$T/m1.csv" 2>"$T/m1.err"
  /usr/bin/time -v "$BIN" "$flat" "${opts[@]}" -o "$T/m10.csv" 2>"$T/m10.err"
  r1=$(awk -F: '/Maximum resident/ { print $2 + 0 }' "$T/m1.err")
  r10=$(awk -F: '/Maximum resident/ { print $2 + 0 }' "$T/m10.err")
  n1=$(($(wc -l <"$T/m1.csv") - 1))
  n10=$(($(wc -l <"$T/m10.csv") - 1))
  echo "# memory: 1000 frames ${r1} KiB ($n1 rows), 10000 frames ${r10} KiB ($n10 rows)"
  check memory_runs_track "too few rows to exercise tracking ($n1 / $n10)" [ "$n1" -gt 50 -a "$n10" -gt 500 ]
  check memory_flat "peak RSS $r1 KiB after 1000 frames, $r10 KiB after 10000" [ $((r10 - r1)) -le 4096 ]
else
  skip memory_flat "no GNU /usr/bin/time"
fi
echo "# test_robust: $failed failed"
[[ $failed == 0 ]]
