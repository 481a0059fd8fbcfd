#!/usr/bin/env bash
# test_tumor_cli.sh - `leuktrack tumor` end to end: a synthetic clip with
# known shifts per frame (scripts/make_tumor_clip.py: exact Fourier shifts in
# quarter pixels, noise 1 grey level) tracked through every way of giving
# templates; --all-templates, --scores (checked against the CSV), --overlay,
# --plot, --exact vs the fast path, --threads 1 vs 2, --frames; the bad-input
# catalogue of the mode (exit status + message); the real angiography cine
# (plausible output) and the static phantom (zero motion); CUDA vs CPU when a
# device is usable (else SKIP).
set -u
cd "$(dirname "$0")/.."
LT=${LT_BIN:-./leuktrack}
DATA=${LT_DATA:-../shared/data}
PY=${PY:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh

ispng() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

if ! "$PY" -c 'import numpy' 2>/dev/null; then
  fail "tumor cli" "$PY has no numpy (the synthetic clip needs it; scripts/install-deps.sh installs python3-numpy)"
  exit 1
fi

# ---- synthetic clip: 320x240, 30 frames, shifts up to +-10 rows / +-6 columns
N=30 V=11 H=7
mkdir -p "$T/tpl"
"$PY" scripts/make_tumor_clip.py "$T/syn.y4m" "$T/truth.csv" 320 240 $N 10 6 \
  --crop 100,80,54,53:"$T/t0.pgm" --crop 200,150,45,40:"$T/tpl/t1.pgm" --crop 40,30,23,21:"$T/tpl/t2.pgm" \
  || { fail "synthetic clip" "make_tumor_clip.py failed"; exit 1; }
printf 'file,x,y\n# relative to this list\nt1.pgm,200,150\n\nt2.pgm,40,30\n' >"$T/tpl/list.csv"
# templates 0 (file), 1 and 2 (list), 3 (cut from frame 0)
TPL=(--template "$T/t0.pgm@100,80" --templates "$T/tpl/list.csv" --template-from 0:150,60,76,45)

# compare a CSV's best rows (or one template's rows) with the truth: integer
# shift = nearest integer of the truth, sub-pixel error <= 0.3 px (measured
# 0.03 px); prints "rows maxerr" or the first mismatch
check_truth() { # CSV [template]
  awk -F, -v want="${2:-}" 'NR==FNR { if (FNR > 1) { ty[$1] = $2; tx[$1] = $3 } next }
    FNR == 1 { next }
    want != "" && $3 != want { next }
    { f = $1; n++
      ry = (ty[f] >= 0) ? int(ty[f] + 0.5) : -int(-ty[f] + 0.5); rx = (tx[f] >= 0) ? int(tx[f] + 0.5) : -int(-tx[f] + 0.5)
      if ($4 != ry || $5 != rx) { print "frame " f ": dy,dx " $4 "," $5 ", truth " ty[f] "," tx[f]; bad = 1; exit }
      e = $9 - ty[f]; if (e < 0) e = -e; if (e > m) m = e
      e = $10 - tx[f]; if (e < 0) e = -e; if (e > m) m = e }
    END { if (!bad) { if (m > 0.3) print "sub-pixel error " m " px > 0.3"; else printf "%d %.4f\n", n, m } }' "$T/truth.csv" "$1"
}

"$LT" tumor "$T/syn.y4m" "${TPL[@]}" --shift $V,$H -o "$T/best.csv" --threads 2 2>"$T/err"; rc=$?
r=$(check_truth "$T/best.csv")
[ $rc -eq 0 ] && [ "$(head -1 "$T/best.csv")" = "frame,t_s,template,dy,dx,row,col,score,dy_sub,dx_sub" ] \
  && [[ $r =~ ^$N\  ]] && pass "synthetic: best rows match the known shifts ($r: rows, max sub-pixel error px)" \
  || fail "synthetic best" "rc=$rc $r $(head -c 200 "$T/err")"
awk -F, 'NR > 1 && ($6 != ($4 + 80) + 0 && $3 == 0) {bad=1} END {exit bad}' "$T/best.csv" \
  && awk -F, 'NR > 1 { if ($8 > 1 || $8 < 0.9) bad = 1 } END {exit bad}' "$T/best.csv" \
  && pass "synthetic: row = y + dy, scores in [0.9, 1]" || fail "synthetic rows" "$(sed -n 2,4p "$T/best.csv")"
awk -F, 'NR > 1 && $2 != sprintf("%.6f", $1 / 25) {bad=1} END {exit bad}' "$T/best.csv" \
  && pass "synthetic: t_s = frame / 25 fps" || fail "t_s" "$(sed -n 2,3p "$T/best.csv")"

"$LT" tumor "$T/syn.y4m" "${TPL[@]}" --shift $V,$H --all-templates -o "$T/all.csv" --scores "$T/scores.csv" \
  --overlay "$T/ov" --plot "$T/plot.png" 2>"$T/err"; rc=$?
rows=$(($(wc -l <"$T/all.csv") - 1))
[ $rc -eq 0 ] && [ $rows -eq $((N * 4)) ] && pass "--all-templates: $rows rows = $N frames x 4 templates" \
  || fail "--all-templates" "rc=$rc rows=$rows $(head -c 200 "$T/err")"
allok=1
for k in 0 1 2 3; do r=$(check_truth "$T/all.csv" $k); [[ $r =~ ^$N\  ]] || { allok=0; fail "template $k" "$r"; }; done
[ $allok -eq 1 ] && pass "--all-templates: every template (file, list x2, --template-from) follows the known shifts"
npos=$(((2 * V + 1) * (2 * H + 1)))
srows=$(($(wc -l <"$T/scores.csv") - 1))
[ "$(head -1 "$T/scores.csv")" = "frame,template,dy,dx,score,inside" ] && [ $srows -eq $((N * 4 * npos)) ] \
  && pass "--scores: $srows rows = frames x templates x $npos shifts" || fail "--scores rows" "$srows $(head -1 "$T/scores.csv")"
# the CSV's peak = the maximum over the inside shifts of the score map, at that shift
r=$(awk -F, 'NR==FNR { if (FNR > 1) { k = $1 "," $3; s[k] = $8; dy[k] = $4; dx[k] = $5 } next }
  FNR == 1 { next }
  $6 == 1 { k = $1 "," $2; if (!(k in m) || $5 > m[k]) { m[k] = $5; my[k] = $3; mx[k] = $4 } }
  END { for (k in s) { n++; if (m[k] != s[k] || my[k] != dy[k] || mx[k] != dx[k]) { print "mismatch " k ": map " m[k] " at " my[k] "," mx[k] ", csv " s[k] " at " dy[k] "," dx[k]; exit } } print n }' \
  "$T/all.csv" "$T/scores.csv")
[ "$r" = $((N * 4)) ] && pass "--scores: every CSV row is the maximum of its score map ($r maps)" || fail "--scores vs CSV" "$r"
awk -F, 'NR > 1 && ($5 > 1 || $5 < -1 || ($6 == 0 && $5 != -1)) {bad=1} END {exit bad}' "$T/scores.csv" \
  && pass "--scores: scores in [-1, 1], windows outside the frame -1" || fail "--scores range" "out of [-1,1]"
n_ov=$(ls "$T/ov" 2>/dev/null | grep -c '^frame_0000[0-9][0-9]\.png$')
[ "$n_ov" -eq $N ] && ispng "$T/ov/frame_000000.png" && ispng "$T/ov/frame_000029.png" \
  && pass "--overlay: $n_ov PNGs, one per frame" || fail "--overlay" "$n_ov files"
ispng "$T/plot.png" && ispng "$T/plot_shift.png" && pass "--plot: score and shift PNGs" || fail "--plot" "$(ls "$T")"

# --exact (double, by the definition) vs the fast path: same shifts, scores within 1e-5
"$LT" tumor "$T/syn.y4m" "${TPL[@]}" --shift $V,$H --all-templates --exact -o "$T/exact.csv" 2>"$T/err"
r=$(paste -d, "$T/all.csv" "$T/exact.csv" | awk -F, 'NR > 1 { for (i = 1; i <= 7; i++) if ($i != $(i + 10)) { print "row " NR ": " $0; exit }
   d = $8 - $18; if (d < 0) d = -d; if (d > m) m = d; e = $9 - $19; if (e < 0) e = -e; if (e > ms) ms = e; e = $10 - $20; if (e < 0) e = -e; if (e > ms) ms = e }
   END { printf "%g %g\n", m, ms }')
awk -v r="$r" 'BEGIN { split(r, a, " "); exit !(a[1] != "" && a[1] <= 1e-5 && a[2] <= 1e-3) }' \
  && pass "--exact vs fast: identical shifts, max |dr| $(cut -d' ' -f1 <<<"$r"), max sub-pixel diff $(cut -d' ' -f2 <<<"$r") px" \
  || fail "--exact vs fast" "$r"

"$LT" tumor "$T/syn.y4m" "${TPL[@]}" --shift $V,$H --all-templates --threads 1 -o "$T/t1.csv" 2>/dev/null
"$LT" tumor "$T/syn.y4m" "${TPL[@]}" --shift $V,$H --all-templates --threads 2 -o "$T/t2.csv" 2>/dev/null
[ -s "$T/t1.csv" ] && cmp -s "$T/t1.csv" "$T/t2.csv" && cmp -s "$T/t1.csv" "$T/all.csv" \
  && pass "CPU --threads 1 and 2: identical CSV" || fail "threads" "CSVs differ"
"$LT" tumor "$T/syn.y4m" --template-from 12:150,60,76,45 --shift $V,$H --frames 5:9 -o "$T/fr.csv" 2>"$T/err"
[ "$(cut -d, -f1 "$T/fr.csv" | tail -n +2 | tr '\n' ' ')" = "5 6 7 8 " ] && [ "$(awk -F, '$1 == 8 {print $4}' "$T/fr.csv")" = \
  "$(awk -F, -v a="$(awk -F, '$1 == 12 {print $2}' "$T/truth.csv")" '$1 == 8 { v = $2 - a; print (v >= 0) ? int(v + 0.5) : -int(-v + 0.5) }' "$T/truth.csv")" ] \
  && pass "--frames 5:9 with a template cut from frame 12 (outside the range): rows 5-8, shifts relative to frame 12" \
  || fail "--frames + --template-from" "$(cat "$T/fr.csv" "$T/err" | head -8)"
"$LT" tumor "$T/syn.y4m" --template "$T/t0.pgm@100,80" -o "$T/def.csv" 2>/dev/null
r=$(check_truth "$T/def.csv")
awk -F, 'NR > 1 && ($4 > 8 || $4 < -8) {bad=1} END {exit bad}' "$T/def.csv" && [ "$(wc -l <"$T/def.csv")" -eq $((N + 1)) ] \
  && pass "default --shift 8,8: shifts stay within +-8" || fail "default shift" "$(head -3 "$T/def.csv")"

# ---- bad inputs: exit status and message
S="$T/syn.y4m"
head -c 100 /dev/urandom >"$T/corrupt.png"
"$PY" -c "import sys; open(sys.argv[1],'wb').write(b'P5\n400 300\n255\n' + bytes(400*300))" "$T/big.pgm"
"$PY" -c "import sys; open(sys.argv[1],'wb').write(b'P5\n20 20\n255\n' + bytes([77]*400))" "$T/flat.pgm"
: >"$T/empty.csv"
printf 't1.pgm,200,150\nt2.pgm;40;30\n' >"$T/tpl/bad.csv"
expect "no templates -> 2" 2 "no templates given" -- "$LT" tumor "$S"
expect "template file missing -> 3" 3 "nope.png" -- "$LT" tumor "$S" --template "$T/nope.png@1,1" -o "$T/o.csv"
expect "corrupt template -> 3" 3 "corrupt.png" -- "$LT" tumor "$S" --template "$T/corrupt.png@1,1" -o "$T/o.csv"
expect "template larger than the frame -> 3" 3 "larger than the 320x240 frame" -- "$LT" tumor "$S" --template "$T/big.pgm@0,0" -o "$T/o.csv"
expect "flat template -> 3" 3 "is flat (zero variance)" -- "$LT" tumor "$S" --template "$T/flat.pgm@5,5" -o "$T/o.csv"
expect "template fully outside with its shifts -> 2" 2 "every window leaves the 320x240 frame" -- "$LT" tumor "$S" --template "$T/t0.pgm@400,10" --shift 5,5 -o "$T/o.csv"
"$LT" tumor "$S" --template "$T/t0.pgm@270,10" --shift 5,5 -o "$T/p.csv" 2>"$T/err" \
  && [ "$(wc -l <"$T/p.csv")" -eq $((N + 1)) ] && awk -F, 'NR > 1 && $7 + 54 > 320 {bad=1} END {exit bad}' "$T/p.csv" \
  && pass "template partly outside, some shifts inside: runs, matched windows inside the frame" || fail "partly outside" "$(head -c 200 "$T/err")"
expect "--template without @ -> 2" 2 "invalid value" -- "$LT" tumor "$S" --template "$T/t0.pgm"
expect "--template bad position -> 2" 2 "FILE@X,Y" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,x"
expect "--shift absurd -> 2" 2 "too many" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,1" --shift 4096,4096
expect "--shift above 4096 -> 2" 2 "invalid value '5000,1' for --shift" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,1" --shift 5000,1
expect "--shift negative -> 2" 2 "invalid value '-1,2' for --shift" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,1" --shift=-1,2
expect "--shift junk -> 2" 2 "invalid value '3' for --shift" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,1" --shift 3
expect "--templates missing -> 3" 3 "nolist.csv" -- "$LT" tumor "$S" --templates "$T/nolist.csv" -o "$T/o.csv"
expect "--templates empty -> 3" 3 "names no templates" -- "$LT" tumor "$S" --templates "$T/empty.csv" -o "$T/o.csv"
expect "--templates malformed line -> 3" 3 "line 2: expected file,x,y" -- "$LT" tumor "$S" --templates "$T/tpl/bad.csv" -o "$T/o.csv"
expect "--template-from bad syntax -> 2" 2 "FRAME:X,Y,W,H" -- "$LT" tumor "$S" --template-from 1,2,3,4
expect "--template-from past the end -> 2" 2 "has only 30 frames" -- "$LT" tumor "$S" --template-from 99:1,1,10,10 -o "$T/o.csv"
expect "--template-from outside the frame -> 2" 2 "extends past the 320x240 frame" -- "$LT" tumor "$S" --template-from 0:300,1,30,10 -o "$T/o.csv"
expect "--exact with --backend cuda -> 2" 2 "--exact is the CPU reference" -- "$LT" tumor "$S" --template "$T/t0.pgm@1,1" --exact --backend cuda
expect "missing input -> 3" 3 "nonexistent.y4m" -- "$LT" tumor "$T/nonexistent.y4m" --template "$T/t0.pgm@1,1" -o "$T/o.csv"
expect "two inputs -> 2" 2 "one input video expected" -- "$LT" tumor "$S" "$S" --template "$T/t0.pgm@1,1"
[ ! -e "$T/o.csv" ] && ! ls "$T"/o.csv.* "$T"/.o.csv* >/dev/null 2>&1 \
  && pass "failed runs leave no output or temporary files" || fail "leftovers" "$(ls "$T")"

# ---- real data: the angiography cine (37 JPEG frames) and the static phantom
CINE=$DATA/fluoro/angio_clinical_Vukicevic/proj0
if [ -f "$CINE/IM0_01.jpg" ]; then
  "$LT" tumor "$CINE/IM0_%02d.jpg" --template-from 0:60,60,54,53 --template-from 0:230,110,76,45 \
    --template-from 0:150,330,86,78 --shift 18,9 --all-templates -o "$T/cine.csv" --stats 2>"$T/err"; rc=$?
  r=$(awk -F, 'NR > 1 { n++; if ($8 > 1 || $8 < -1 || $4 < -18 || $4 > 18 || $5 < -9 || $5 > 9) bad = "range " $0
       if ($1 == 0 && ($8 < 0.9999 || $4 != 0 || $5 != 0)) bad = "frame 0 " $0; if ($1 == 1 && $8 > m1) m1 = $8 }
       END { if (bad != "") print bad; else print n, m1 }' "$T/cine.csv")
  [ $rc -eq 0 ] && [[ $r =~ ^111\ 0\.[5-9] ]] \
    && pass "real cine: 37 frames x 3 templates, frame 0 matches itself (r=1, shift 0), frame 1 best r $(cut -d' ' -f2 <<<"$r")" \
    || fail "real cine" "rc=$rc $r $(head -c 300 "$T/err")"
else
  skip "real cine" "$CINE not found (set LT_DATA)"
fi
RAW=$DATA/fluoro/angio_phantom_Vukicevic/IM1_14x512x512_u8.raw
if [ -f "$RAW" ]; then
  { printf 'YUV4MPEG2 W512 H512 F15:1 Ip A1:1 Cmono\n'
    for i in $(seq 0 13); do printf 'FRAME\n'; dd if="$RAW" bs=262144 skip=$i count=1 status=none; done; } >"$T/ph.y4m"
  # templates on the phantom's vessels, cut from frame 1 (frame 0 is much brighter)
  "$LT" tumor "$T/ph.y4m" --template-from 1:144,160,64,64 --template-from 1:80,144,64,64 --template-from 1:160,144,64,64 \
    --shift 10,10 -o "$T/ph.csv" 2>"$T/err"; rc=$?
  r=$(awk -F, 'NR > 1 { n++; if ($4 != 0 || $5 != 0) bad = $0; a = $9 < 0 ? -$9 : $9; b = $10 < 0 ? -$10 : $10; if (a > m) m = a; if (b > m) m = b }
       END { if (bad != "") print "moved: " bad; else printf "%d %.3f\n", n, m }' "$T/ph.csv")
  [ $rc -eq 0 ] && [[ $r =~ ^14\ 0\.[0-2] ]] && pass "static phantom: shift 0 in all 14 frames (max |sub-pixel| $(cut -d' ' -f2 <<<"$r") px)" \
    || fail "static phantom" "rc=$rc $r"
else
  skip "static phantom" "$RAW not found (set LT_DATA)"
fi

# ---- CUDA vs CPU (only where a device is usable)
if "$LT" tumor --backend cuda "$S" --template "$T/t0.pgm@100,80" --frames 0:1 -o /dev/null 2>"$T/err"; then
  for nv in 1 0; do
    LT_TUMOR_NVRTC=$nv "$LT" tumor "$S" "${TPL[@]}" --shift $V,$H --all-templates --backend cuda -o "$T/cuda$nv.csv" \
      --scores "$T/cs$nv.csv" 2>"$T/err"
    r=$(paste -d, "$T/all.csv" "$T/cuda$nv.csv" | awk -F, 'NR > 1 { for (i = 1; i <= 7; i++) if ($i != $(i + 10)) { print "row " NR ": " $0; exit }
       d = $8 - $18; if (d < 0) d = -d; if (d > m) m = d; e = $9 - $19; if (e < 0) e = -e; if (e > ms) ms = e; e = $10 - $20; if (e < 0) e = -e; if (e > ms) ms = e }
       END { printf "%g %g\n", m, ms }')
    rs=$(paste -d, "$T/scores.csv" "$T/cs$nv.csv" | awk -F, 'NR > 1 { d = $5 - $11; if (d < 0) d = -d; if (d > m) m = d } END { printf "%g", m }')
    awk -v r="$r" -v s="$rs" 'BEGIN { split(r, a, " "); exit !(a[1] != "" && a[1] <= 1e-4 && a[2] <= 0.05 && s <= 1e-4) }' \
      && pass "CUDA (LT_TUMOR_NVRTC=$nv) vs CPU: identical shifts, max |dr| best $(cut -d' ' -f1 <<<"$r"), all maps $rs, sub-pixel $(cut -d' ' -f2 <<<"$r") px" \
      || fail "CUDA (LT_TUMOR_NVRTC=$nv) vs CPU" "$r maps $rs $(head -c 200 "$T/err")"
  done
else
  skip "CUDA vs CPU" "no usable CUDA backend ($(head -c 120 "$T/err"))"
fi

echo "test_tumor_cli: $failed failed"
[ "$failed" -eq 0 ]
