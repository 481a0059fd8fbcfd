#!/usr/bin/env bash
# test_batch.sh - scripts/leuktrack-batch and scripts/leuktrack-slurm.sbatch:
# outputs, logs, batch_summary.csv, failure exit codes, resume (skip), --force,
# distinct inputs with one basename, GPU round-robin (fake nvidia-smi, dry
# run), Ctrl-C, and one Slurm array task run by hand. No GPU needed.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LT=$(realpath "${LT_BIN:-./leuktrack}")
SYNTH=$BUILD/tools/lt_synth
BATCH=$PWD/scripts/leuktrack-batch
SLURM=$PWD/scripts/leuktrack-slurm.sbatch
. tests/lib.sh

for f in "$LT" "$SYNTH"; do
  [ -x "$f" ] || { skip "batch" "$f not built"; exit 0; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset CUDA_VISIBLE_DEVICES LEUKTRACK_BASE

# bash -n on both scripts
for s in "$BATCH" "$SLURM"; do
  bash -n "$s" 2>"$T/err" && pass "bash -n $(basename "$s")" || fail "bash -n $(basename "$s")" "$(cat "$T/err")"
done
[ -x "$BATCH" ] && pass "leuktrack-batch is executable" || fail "leuktrack-batch" "not executable"

# inputs: 3 good videos (two share the basename v1.avi) and a text file
mkdir -p "$T/in/a" "$T/in/b"
ok=1
for spec in "a/v1.avi 1" "b/v1.avi 2" "a/v2.avi 3"; do
  set -- $spec
  "$SYNTH" --out "$T/in/$1" --width 160 --height 120 --frames 5 --cells 3 --seed "$2" 2>/dev/null || ok=0
done
echo "this is not a video" >"$T/in/bad.avi"
[ $ok = 1 ] || { fail "lt_synth" "could not make the test videos"; exit 1; }

cd "$T/in" || exit 1
field() { # field FILE INPUT COLUMN: column (1-based) of INPUT's row in batch_summary.csv
  local IFS=,
  while read -r -a f; do [ "${f[0]}" = "$2" ] && { echo "${f[$(($3 - 1))]}"; return; }; done <"$1"
}
B1=("$BATCH" --leuktrack "$LT" -j 2 --gpus 0 -o "$T/out" a/v1.avi b/v1.avi a/v2.avi bad.avi -- --threads 1)

# first run: 3 done, 1 failed with exit 3, runner exits 1
"${B1[@]}" >"$T/stdout1" 2>"$T/stderr1"; rc=$?
S=$T/out/batch_summary.csv
[ $rc -eq 1 ] && pass "batch: exit 1 when an input fails" || fail "batch exit" "rc=$rc, want 1: $(tail -3 "$T/stderr1")"
miss=""
for n in a__v1 b__v1 a__v2; do
  [ -s "$T/out/$n.csv" ] || miss="$miss $n.csv"
  [ -s "$T/out/logs/$n.log" ] || miss="$miss logs/$n.log"
done
[ -s "$T/out/logs/bad.log" ] || miss="$miss logs/bad.log"
[ -z "$miss" ] && pass "batch: outputs and logs of every input" || fail "batch outputs" "missing:$miss ($(ls -R "$T/out" | tr '\n' ' '))"
if [ -f "$S" ] && [ "$(head -1 "$S")" = "input,status,exit_code,seconds,rows" ] && [ "$(wc -l <"$S")" -eq 5 ]; then
  pass "batch: batch_summary.csv has a header and a row per input"
else fail "batch_summary.csv" "$(cat "$S" 2>/dev/null)"; fi
[ "$(field "$S" bad.avi 2)" = failed ] && [ "$(field "$S" bad.avi 3)" = 3 ] \
  && pass "batch: bad input failed with exit code 3" || fail "bad input" "$(grep bad "$S")"
st=$(for n in a/v1.avi b/v1.avi a/v2.avi; do field "$S" $n 2; done | tr '\n' ' ')
[ "$st" = "done done done " ] && pass "batch: good inputs done" || fail "good inputs" "statuses: $st"
r=$(field "$S" a/v2.avi 5)
[ "$r" = $(($(wc -l <"$T/out/a__v2.csv") - 1)) ] && pass "batch: rows column counts the CSV rows" || fail "rows" "rows=$r"
grep -q 'error:.*bad.avi' "$T/out/logs/bad.log" && grep -q '^# exit status: 3' "$T/out/logs/bad.log" && grep -q '^# start:' "$T/out/logs/bad.log" \
  && pass "batch: log has leuktrack's stderr, start time and exit status" || fail "log" "$(cat "$T/out/logs/bad.log")"
grep -q 'bad.avi.*failed' "$T/stdout1" && grep -q 'error:.*bad.avi' "$T/stdout1" \
  && pass "batch: final table shows the failure and its last error line" || fail "table" "$(cat "$T/stdout1")"
if cmp -s "$T/out/a__v1.csv" "$T/out/b__v1.csv"; then fail "same basename" "a/v1.avi and b/v1.avi gave the same output"
else
  "$LT" --threads 1 -o "$T/ref.csv" b/v1.avi 2>/dev/null
  cmp -s "$T/ref.csv" "$T/out/b__v1.csv" && pass "batch: same basename in two folders, two outputs" \
    || fail "same basename" "b__v1.csv differs from a direct run"
fi

# second run: done inputs skipped (not rerun), the failed one retried
touch -d '2000-01-01' "$T/out/a__v1.csv"
"${B1[@]}" >"$T/stdout2" 2>"$T/stderr2"; rc=$?
st=$(for n in a/v1.avi b/v1.avi a/v2.avi bad.avi; do field "$S" $n 2; done | tr '\n' ' ')
[ $rc -eq 1 ] && [ "$st" = "skipped skipped skipped failed " ] \
  && pass "batch: rerun skips done inputs, retries the failed one" || fail "resume" "rc=$rc statuses: $st"
[ "$(date -r "$T/out/a__v1.csv" +%Y)" = 2000 ] && pass "batch: skipped output left untouched" || fail "resume" "a__v1.csv was rewritten"

# --force reruns
"$BATCH" --leuktrack "$LT" -j 2 --gpus 0 --force -o "$T/out" a/v1.avi -- --threads 1 >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(field "$S" a/v1.avi 2)" = "done" ] && [ "$(date -r "$T/out/a__v1.csv" +%Y)" != 2000 ] \
  && pass "batch: --force reruns, exit 0" || fail "--force" "rc=$rc $(cat "$S")"

# --list, --summary
printf '# comment\n\na/v2.avi\n' >"$T/list.txt"
"$BATCH" --leuktrack "$LT" --gpus 0 --summary --list "$T/list.txt" -o "$T/out2" -- --threads 1 >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] && [ -s "$T/out2/a__v2.csv" ] && [ -s "$T/out2/a__v2.summary.csv" ] && [ "$(wc -l <"$T/out2/batch_summary.csv")" -eq 2 ] \
  && pass "batch: --list and --summary" || fail "--list/--summary" "rc=$rc $(ls "$T/out2")"

# CPU threads shared by the videos in flight: -j 2 over two inputs passes
# --threads nproc/2 (at least 1), over one input nproc, unless the user passed
# -j/--threads after '--'
"$BATCH" --leuktrack "$LT" -j 2 --gpus 0 -o "$T/othr" a/v2.avi b/v1.avi >/dev/null 2>&1; rc=$?
"$BATCH" --leuktrack "$LT" -j 2 --gpus 0 -o "$T/othr1" a/v2.avi >/dev/null 2>&1; rc1=$?
want=$(( $(nproc) / 2 > 0 ? $(nproc) / 2 : 1 ))
c1=$(grep '^# command:' "$T/othr/logs/a__v2.log")
c3=$(grep '^# command:' "$T/othr1/logs/a__v2.log")
c2=$(grep '^# command:' "$T/out2/logs/a__v2.log")
[ $rc -eq 0 ] && [ $rc1 -eq 0 ] && [[ $c1 == *"'--threads' '$want'"* ]] && [[ $c3 == *"'--threads' '$(nproc)'"* ]] \
  && [[ $c2 != *"'--threads' '1' "*"'--threads'"* ]] \
  && pass "batch: each video in flight gets nproc/min(jobs, inputs) CPU threads, a user's --threads wins" \
  || fail "threads per video" "rc=$rc/$rc1; two inputs: $c1; one input: $c3; with --threads 1: $c2"

# usage errors
"$BATCH" --leuktrack "$LT" a/v1.avi >/dev/null 2>&1; rc1=$?
"$BATCH" --leuktrack "$LT" -o "$T/o3" a/v1.avi -- -o x.csv >/dev/null 2>&1; rc2=$?
[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ ! -e "$T/o3/batch_summary.csv" ] \
  && pass "batch: usage errors exit 2" || fail "usage" "no -o: $rc1, '-- -o': $rc2"

# GPU round-robin: a fake nvidia-smi with 2 GPUs, dry run
mkdir -p "$T/bin"
printf '#!/bin/sh\necho "GPU 0: Fake (UUID: GPU-0)"\necho "GPU 1: Fake (UUID: GPU-1)"\n' >"$T/bin/nvidia-smi"
chmod +x "$T/bin/nvidia-smi"
PATH="$T/bin:$PATH" "$BATCH" --leuktrack "$LT" -n -o "$T/o4" a/v1.avi b/v1.avi a/v2.avi >"$T/dry" 2>"$T/dryerr"; rc=$?
devs=$(grep -o "'--device' '[0-9]*'" "$T/dry" | tr -dc '0-9\n' | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$devs" = "0 1 0 " ] && grep -q '32 job(s) at once (inproc)' "$T/dryerr" && [ ! -e "$T/o4/a__v1.csv" ] \
  && pass "batch: 2 GPUs from nvidia-smi -> 2 x 16 jobs (inproc, the default --per-gpu), --device round-robin" || fail "gpus" "rc=$rc devices: '$devs' $(cat "$T/dryerr")"
CUDA_VISIBLE_DEVICES="" PATH="$T/bin:$PATH" "$BATCH" --leuktrack "$LT" -n -o "$T/o4" a/v1.avi >"$T/dry" 2>/dev/null
grep -q -- "--device" "$T/dry" && fail "gpus" "--device despite CUDA_VISIBLE_DEVICES=''" || pass "batch: CUDA_VISIBLE_DEVICES='' -> no --device"

# Ctrl-C: running job keeps its .partial, no new job starts, exit 130
"$SYNTH" --out "$T/in/long.avi" --width 160 --height 120 --frames 60 --cells 3 --seed 4 2>/dev/null \
  || fail "lt_synth" "could not make long.avi"
# (set -m: a background job of a script ignores SIGINT; this one must not.
# env --default-signal: neither when the tests themselves were started with
# SIGINT ignored, e.g. under nohup or as a background job of a script, which
# a shell cannot trap: the runner would not see the Ctrl-C.)
# Wait for a first data row: leuktrack keeps no .partial without one.
OUT="$T/o5" env --default-signal=INT bash -c 'set -m; "$@" >/dev/null 2>&1 & p=$!
  for i in $(seq 200); do [ "$(cat "$OUT"/long.csv.tmp* 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.05; done
  kill -INT -- -$p; wait $p' _ "$BATCH" --leuktrack "$LT" -j 1 --gpus 0 -o "$T/o5" long.avi a/v1.avi -- --threads 1 --backend cpu 2>"$T/int.err"
rc=$?
S5=$T/o5/batch_summary.csv
[ $rc -eq 130 ] && [ -f "$T/o5/long.csv.partial" ] && [ ! -e "$T/o5/a__v1.csv" ] \
  && [ "$(field "$S5" long.avi 2)" = interrupted ] && [ "$(field "$S5" a/v1.avi 2)" = not-run ] \
  && pass "batch: Ctrl-C keeps .partial, starts nothing new, exit 130" \
  || fail "Ctrl-C" "rc=$rc $(ls "$T/o5" 2>&1 | tr '\n' ' ') $(cat "$S5" 2>/dev/null)"

# Slurm array task, by hand: task 1 = second line of the list
printf 'a/v2.avi\nb/v1.avi\nbad.avi\n' >"$T/slurm.txt"
SLURM_ARRAY_TASK_ID=1 SLURM_CPUS_PER_TASK=1 LEUKTRACK=$LT bash "$SLURM" "$T/slurm.txt" "$T/o6" >"$T/sl.out" 2>&1; rc=$?
[ $rc -eq 0 ] && [ -s "$T/o6/b__v1.csv" ] && [ ! -e "$T/o6/a__v2.csv" ] && cmp -s "$T/o6/b__v1.csv" "$T/ref.csv" \
  && grep -q '^# exit status: 0' "$T/o6/logs/b__v1.log" \
  && pass "slurm: task 1 processes the second list entry, with its log" || fail "slurm task" "rc=$rc $(cat "$T/sl.out")"
touch -d '2000-01-01' "$T/o6/b__v1.csv"
SLURM_ARRAY_TASK_ID=1 LEUKTRACK=$LT bash "$SLURM" "$T/slurm.txt" "$T/o6" >"$T/sl.out" 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(date -r "$T/o6/b__v1.csv" +%Y)" = 2000 ] && grep -q skipped "$T/sl.out" \
  && pass "slurm: resubmitted task skips a done input" || fail "slurm resume" "rc=$rc $(cat "$T/sl.out")"
SLURM_ARRAY_TASK_ID=2 LEUKTRACK=$LT bash "$SLURM" "$T/slurm.txt" "$T/o6" >"$T/sl.out" 2>&1; rc=$?
[ $rc -eq 3 ] && grep -q '^# exit status: 3' "$T/o6/logs/bad.log" \
  && pass "slurm: task exit status is leuktrack's (3 for a bad input)" || fail "slurm bad" "rc=$rc $(cat "$T/sl.out")"
bash "$SLURM" "$T/slurm.txt" "$T/o6" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && pass "slurm: no SLURM_ARRAY_TASK_ID -> exit 2" || fail "slurm no task id" "rc=$rc"

[ $failed -eq 0 ]
