#!/usr/bin/env bash
# test_batch_merge.sh - many videos (issue 18), CPU only:
#  - leuktrack-batch over a folder with two condition sub-folders plus one
#    corrupt file, two workers, both runners (inproc, proc): the good videos
#    complete, the corrupt one is in the table with its error, the merged
#    CSVs hold every row of the per-video CSVs, a rerun skips the done ones;
#  - leuktrack --jobs 2 -o DIR/ a b c: CSVs byte-identical to single runs,
#    a failing input among good ones (exit 1, the others done), usage errors;
#  - the Slurm merge step by hand.
set -u
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
LT=$(realpath "${LT_BIN:-./leuktrack}")
SYNTH=$BUILD/tools/lt_synth
MERGE=$BUILD/tools/lt_merge
BATCH=$PWD/scripts/leuktrack-batch
MSB=$PWD/scripts/leuktrack-merge.sbatch
. tests/lib.sh
for f in "$LT" "$SYNTH" "$MERGE"; do
  [ -x "$f" ] || { skip "batch merge" "$f not built"; exit 0; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset CUDA_VISIBLE_DEVICES LEUKTRACK_BASE

mkdir -p "$T/exp/ctrl" "$T/exp/drug"
seed=1 ok=1
for c in ctrl drug; do
  for v in v1 v2; do
    "$SYNTH" --out "$T/exp/$c/$v.avi" --width 160 --height 120 --frames 6 --cells 3 --seed $seed 2>/dev/null || ok=0
    seed=$((seed + 1))
  done
done
echo "not a video" >"$T/exp/drug/corrupt.avi"
echo "notes" >"$T/exp/ctrl/notes.txt"
[ $ok = 1 ] || { fail "lt_synth" "could not make the test videos"; exit 1; }
cd "$T" || exit 1
good="ctrl__v1 ctrl__v2 drug__v1 drug__v2"

for R in inproc proc; do
  O=$T/out_$R
  "$BATCH" --leuktrack "$LT" --merge "$MERGE" --runner $R -j 2 --gpus 0 --base exp -o "$O" exp -- --threads 1 >"$T/o1" 2>"$T/e1"; rc=$?
  S=$O/batch_summary.csv
  [ $rc -eq 1 ] && [ "$(wc -l <"$S")" -eq 6 ] && ! grep -q notes "$S" \
    && pass "$R: folder -> 5 videos (not the .txt), exit 1 for the corrupt one" || fail "$R folder" "rc=$rc $(cat "$S" "$T/e1")"
  miss=""
  for n in $good; do [ -s "$O/$n.csv" ] && [ -s "$O/$n.summary.csv" ] || miss="$miss $n"; done
  [ -z "$miss" ] && pass "$R: good videos done (csv + summary)" || fail "$R outputs" "missing:$miss"
  # batch_summary.csv's rows: each output's data rows (inproc counts them all in one pass)
  bad=""
  for n in $good; do
    c=${n%%__*} v=${n#*__}
    got=$(awk -F, -v p="exp/$c/$v.avi" '$1==p{print $5}' "$S")
    [ -n "$got" ] && [ "$got" = "$(($(wc -l <"$O/$n.csv") - 1))" ] || bad="$bad $n:$got"
  done
  [ -z "$bad" ] && pass "$R: batch_summary.csv counts each video's rows" || fail "$R rows" "$bad $(cat "$S")"
  V=$O/results/videos.csv
  grep -q '^drug__corrupt,drug,failed,3,.*error:.*not a video' "$V" \
    && pass "$R: corrupt video in videos.csv with status, exit 3 and its error" || fail "$R videos.csv" "$(cat "$V")"
  grep '^drug__corrupt,' "$V" | grep -q "cannot open 'exp/drug/corrupt.avi'" && ! grep -q '/links/' "$V" \
    && grep '^leuktrack: ' "$O/logs/drug__corrupt.log" | grep -q "exp/drug/corrupt.avi" \
    && pass "$R: the error names the input as given (not the runner's link)" || fail "$R error path" "$(cat "$V")"
  grep -q 'exp/drug/corrupt.avi.*failed' "$T/o1" && pass "$R: corrupt video in the final table" || fail "$R table" "$(cat "$T/o1")"
  # merged CSVs hold every row of every per-video CSV, prefixed by video,condition
  bad=""
  for kind in "" .summary; do
    all=$O/results/all${kind:-_tracks}.csv
    [ -n "$kind" ] && all=$O/results/all_summary.csv
    want=0
    for n in $good; do
      c=${n%%__*}
      tail -n +2 "$O/$n$kind.csv" | sed "s/^/$n,$c,/" >"$T/want"
      got=$(grep -c "^$n,$c," "$all")
      [ "$got" -eq "$(wc -l <"$T/want")" ] && grep -qxFf "$T/want" "$all" || bad="$bad $n$kind"
      grep -vxFf <(cat "$all") "$T/want" | grep -q . && bad="$bad $n$kind(rows)"
      want=$((want + $(wc -l <"$T/want")))
    done
    [ "$(($(wc -l <"$all") - 1))" -eq $want ] || bad="$bad count$kind"
    [ "$(head -1 "$all")" = "video,condition,$(head -1 "$O/ctrl__v1$kind.csv")" ] || bad="$bad header$kind"
  done
  [ -z "$bad" ] && pass "$R: all_tracks.csv and all_summary.csv hold every per-video row" || fail "$R merge" "$bad"
  for p in velocity_all velocity_ctrl velocity_drug; do
    [ "$(head -c 4 "$O/results/$p.png" | tail -c 3)" = PNG ] || bad="$bad $p"
  done
  [ -z "$bad" ] && pass "$R: velocity PNGs, all and per condition" || fail "$R png" "$bad"
  tr=$(awk -F, -v n=ctrl__v1 '$1==n{print $6}' "$V")
  [ "$tr" = "$(($(wc -l <"$O/ctrl__v1.summary.csv") - 1))" ] && pass "$R: videos.csv counts the tracks" || fail "$R tracks" "$tr"
  # rerun: done ones skipped (untouched), the corrupt one retried
  touch -d 2000-01-01 "$O/ctrl__v1.csv"
  "$BATCH" --leuktrack "$LT" --merge "$MERGE" --runner $R -j 2 --gpus 0 --base exp -o "$O" exp -- --threads 1 >/dev/null 2>&1; rc=$?
  st=$(cut -d, -f2 "$S" | tail -n +2 | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  [ $rc -eq 1 ] && [ "$st" = " 1 failed; 4 skipped;" ] && [ "$(date -r "$O/ctrl__v1.csv" +%Y)" = 2000 ] \
    && grep -q '^ctrl__v1,ctrl,skipped' "$V" && pass "$R: rerun skips the done ones, merges them again" \
    || fail "$R rerun" "rc=$rc $st"
done
for n in $good; do cmp -s "$T/out_inproc/$n.csv" "$T/out_proc/$n.csv" || bad="$bad $n"; done
[ -z "$bad" ] && pass "inproc and proc runners give identical CSVs" || fail "runners differ" "$bad"

# leuktrack --jobs: byte-identical to single runs, a failing input among good ones
cp exp/drug/v1.avi "$T/v3.avi"
"$LT" --threads 1 --jobs 2 -o "$T/j/" --summary "$T/j/{}.s.csv" exp/ctrl/v1.avi exp/drug/corrupt.avi exp/ctrl/v2.avi "$T/v3.avi" \
  >"$T/jst" 2>"$T/jerr"; rc=$?
diffs=""
for p in exp/ctrl/v1 exp/ctrl/v2 "$T/v3"; do
  n=${p##*/}
  "$LT" --threads 1 -o "$T/single.csv" --summary "$T/single.s.csv" "$p.avi" 2>/dev/null
  cmp -s "$T/single.csv" "$T/j/$n.csv" && cmp -s "$T/single.s.csv" "$T/j/$n.s.csv" || diffs="$diffs $p"
done
[ -z "$diffs" ] && pass "--jobs 2: CSVs and summaries byte-identical to single runs" || fail "--jobs identity" "differ:$diffs"
[ $rc -eq 1 ] && [ "$(grep -c '^done' "$T/jst")" -eq 3 ] && grep -q $'^failed\t3\t.*corrupt.avi' "$T/jst" \
  && grep -q 'leuktrack: corrupt: error: ' "$T/jerr" && [ ! -e "$T/j/corrupt.csv" ] \
  && pass "--jobs: a failing input is reported (tagged, exit 1), the others done" || fail "--jobs failure" "rc=$rc $(cat "$T/jst" "$T/jerr")"
"$LT" --threads 1 -o "$T/k/" exp/ctrl/v1.avi exp/ctrl/v2.avi >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] && [ -s "$T/k/v1.csv" ] && [ -s "$T/k/v2.csv" ] && pass "-o DIR/ with two inputs runs a batch" || fail "-o DIR/" "rc=$rc"
"$LT" --jobs 2 -o x.csv exp/ctrl/v1.avi >/dev/null 2>&1; r1=$?
"$LT" --jobs 2 -o "$T/d/" exp/ctrl/v1.avi exp/drug/v1.avi >/dev/null 2>&1; r2=$?
"$LT" --jobs 2 -o "$T/d2/" --overlay "$T/ov" exp/ctrl/v1.avi exp/ctrl/v2.avi >/dev/null 2>&1; r3=$?
[ $r1 -eq 2 ] && [ $r2 -eq 2 ] && [ $r3 -eq 0 ] && [ -n "$(ls "$T/ov/v1/" 2>/dev/null)" ] && [ -n "$(ls "$T/ov/v2/" 2>/dev/null)" ] \
  && pass "--jobs: -o FILE and one NAME twice are usage errors; --overlay DIR -> DIR/NAME/" || fail "--jobs usage" "$r1 $r2 $r3"

# Slurm merge step by hand over the proc runner's outputs
printf 'exp/ctrl/v1.avi\nexp/ctrl/v2.avi\nexp/drug/v1.avi\nexp/drug/v2.avi\nexp/drug/corrupt.avi\n' >"$T/list.txt"
LEUKTRACK_BASE=exp LEUKTRACK_MERGE=$MERGE bash "$MSB" "$T/list.txt" "$T/out_proc" >"$T/ms" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q '^drug__corrupt,drug,failed,3' "$T/out_proc/results/videos.csv" \
  && [ "$(grep -c ',done,' "$T/out_proc/results/videos.csv")" -eq 4 ] && pass "slurm merge step" || fail "slurm merge" "rc=$rc $(cat "$T/ms")"
[ $failed -eq 0 ]
