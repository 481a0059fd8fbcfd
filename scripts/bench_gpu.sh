#!/usr/bin/env bash
# bench_gpu.sh - on the GPU machine: CPU-vs-CUDA equivalence, sanitizers and
# timings of the leukocyte mode. Builds nothing: the binaries are carried
# (portable build, stripped) and so are the clips (made where FFmpeg's
# encoders exist, by build/tools/lt_synth; see docs/CUDA.md).
#
# usage: scripts/bench_gpu.sh [BIN_DIR] [DATA_DIR] [OUT_DIR]
#   BIN_DIR  leuktrack-portable, test_cuda_equiv, test_leuk_stages, lt_eval
#            (default .devbin)
#   DATA_DIR leukocyte/rodinia_testfile_1frame.avi and the s*.mkv/.csv clips
#            (default .devdata)
#   OUT_DIR  logs (default $OUT, else bench-out)
# Env: QUICK=1 skips the sanitizers; REPS (default 2) timed CUDA repetitions.
# Writes: equiv.log, sanitizer.log, bench.log (raw --stats and CUDA event
# tables), summary.txt (the tables, also printed at the end).
set -u
BIN=${1:-.devbin}
DATA=${2:-.devdata}
O=${3:-${OUT:-bench-out}}
REPS=${REPS:-2}
mkdir -p "$O"
LT=$BIN/leuktrack-portable
export LT_DATA=$DATA
S=$O/summary.txt
: >"$S"
say() { echo "$*" | tee -a "$S"; }

say "leuktrack GPU bench, $(date -u '+%Y-%m-%d %H:%M UTC')"
say "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
say "host: $(nproc) cores, $(uname -r)"

# ---- 1. equivalence + stage tests ------------------------------------------
{
  echo "== test_cuda_equiv"
  timeout 120 "$BIN/test_cuda_equiv"
  echo "rc=$?"
  echo "== test_leuk_stages"
  timeout 60 "$BIN/test_leuk_stages"
  echo "rc=$?"
} >"$O/equiv.log" 2>&1
say ""
say "equivalence: $(grep -c '^PASS' "$O/equiv.log") PASS, $(grep -c '^FAIL' "$O/equiv.log") FAIL, $(grep -c '^SKIP' "$O/equiv.log") SKIP"
grep -E '^(FAIL|info)' "$O/equiv.log" | tee -a "$S"

# ---- 2. end-to-end runs: accuracy CPU vs CUDA and timings -----------------
B=$O/bench.log
: >"$B"
fps_of() { sed -n 's/.* \([0-9.]*\) frames\/s$/\1/p' "$1" | head -1; }
ms_of() { awk -v s="$2" '$1 == s {print $3}' "$1" | head -1; }
run_one() { # clip backend tag
  local clip=$1 be=$2 tag=$3 st=$O/st.$$
  LT_CUDA_TIMING=$([ "$be" = cuda ] && echo 1 || echo 0) \
    timeout 90 "$LT" --backend "$be" --no-progress -q --stats="$st" -o "$O/tracks_${tag}.csv" "$DATA/$clip.mkv" 2>"$O/err.$$"
  local rc=$?
  { echo "### $clip $be ($tag) rc=$rc"; cat "$st" 2>/dev/null; cat "$O/err.$$"; } >>"$B"
  printf '%-12s %-5s %8s %9s %9s %9s %9s\n' "$clip" "$be" "$(fps_of "$st")" "$(ms_of "$st" detect)" \
    "$(ms_of "$st" refine)" "$(ms_of "$st" track)" "$(ms_of "$st" decode)" | tee -a "$S"
  rm -f "$st" "$O/err.$$"
}
say ""
say "end to end (--stats; ms per frame averaged over all frames; detect runs every 10th frame)"
say "$(printf '%-12s %-5s %8s %9s %9s %9s %9s' clip backend frames/s detect refine track decode)"
for clip in s640_c36 s1024_c200 s640_c10 s640_c100 s640_c200; do
  [ -f "$DATA/$clip.mkv" ] || { say "$clip: missing"; continue; }
  run_one "$clip" cpu "${clip}_cpu"
  for r in $(seq 1 "$REPS"); do run_one "$clip" cuda "${clip}_cuda$r"; done
  if [ -f "$DATA/$clip.csv" ] && [ -x "$BIN/lt_eval" ]; then
    size=$([ "${clip#s1024}" != "$clip" ] && echo 1024x1024 || echo 640x480)
    for be in cpu cuda1; do
      echo "### lt_eval $clip $be" >>"$B"
      "$BIN/lt_eval" "$O/tracks_${clip}_$be.csv" "$DATA/$clip.csv" --size "$size" >>"$B" 2>&1
    done
  fi
  if [ -f "$O/tracks_${clip}_cpu.csv" ] && [ -f "$O/tracks_${clip}_cuda1.csv" ]; then
    # per-row max |dx|, |dy|, |dr| between the two backends' track files
    paste -d, "$O/tracks_${clip}_cpu.csv" "$O/tracks_${clip}_cuda1.csv" | awk -F, -v c="$clip" '
      NR > 1 { n++; if ($1 != $8 || $3 != $10) id++;
        for (k = 4; k <= 6; k++) { d = $k - $(k + 7); if (d < 0) d = -d; if (d > m) m = d } }
      END { printf "%s cpu-vs-cuda tracks: %d rows, %d frame/id mismatches, max |diff| x/y/r %.3g px\n", c, n, id, m }' |
      tee -a "$S"
  fi
  rm -f "$O"/tracks_"${clip}"_*.csv
done
say ""
say "CUDA event timings (s640_c36, first CUDA run):"
awk '/^### s640_c36 cuda \(s640_c36_cuda1\)/ {on = 1; next} /^###/ {on = 0} on && /cuda timing/' "$B" | tee -a "$S"
say "CUDA event timings (s1024_c200, first CUDA run):"
awk '/^### s1024_c200 cuda \(s1024_c200_cuda1\)/ {on = 1; next} /^###/ {on = 0} on && /cuda timing/' "$B" | tee -a "$S"

# ---- 3. sanitizers -----------------------------------------------------------
if [ "${QUICK:-0}" != 1 ] && command -v compute-sanitizer >/dev/null; then
  Z=$O/sanitizer.log
  : >"$Z"
  echo "### memcheck: leuktrack s640_c10 frames 0:4" >>"$Z"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$LT" --backend cuda -q -o /dev/null \
    --frames 0:4 "$DATA/s640_c10.mkv" >>"$Z" 2>&1
  echo "rc=$?" >>"$Z"
  echo "### memcheck: test_cuda_equiv" >>"$Z"
  timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 "$BIN/test_cuda_equiv" >>"$Z" 2>&1
  echo "rc=$?" >>"$Z"
  # racecheck instruments every shared-memory access: 500 MGVF iterations per
  # cell take hours, so the equivalence test runs with iterations capped.
  for tool in racecheck synccheck initcheck; do
    echo "### $tool: test_cuda_equiv, LT_EQUIV_ITER_CAP=6" >>"$Z"
    LT_EQUIV_ITER_CAP=6 timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/test_cuda_equiv" >>"$Z" 2>&1
    echo "rc=$?" >>"$Z"
  done
  say ""
  say "sanitizers (rc 0 = clean, 9 = errors, 124 = timed out):"
  grep -E '^###|^rc=|ERROR SUMMARY|RACECHECK SUMMARY' "$Z" | tee -a "$S"
fi
