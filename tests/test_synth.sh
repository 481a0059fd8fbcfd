#!/usr/bin/env bash
# test_synth.sh - tests of the synthetic-data generator (lt_synth) and the
# evaluator (lt_eval): determinism, truth-file contents against the requested
# options, decoded frame size, lossless round trip, evaluator scores on
# hand-made track files, and rejection of bad options. Prints one line per check,
# "PASS name" or "FAIL name: why" (tests/run.sh counts them), and exits 1 if any
# check failed. Binaries come from ${BUILD:-build}/tools.
set -uo pipefail

BUILD=${BUILD:-build}
SYNTH=$BUILD/tools/lt_synth
EVAL=$BUILD/tools/lt_eval
failed=0
passed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
check() { # check NAME WHY-IF-FAILED COMMAND...
  local name=$1 why=$2
  shift 2
  if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}

for bin in "$SYNTH" "$EVAL"; do
  if [[ ! -x $bin ]]; then
    fail "synth_binaries" "$bin not built (make tools)"
    exit 1
  fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lt_synth_test.XXXXXX") || { fail "synth_tmpdir" "mktemp failed"; exit 1; }
trap 'rm -rf "$tmp"' EXIT

# --- determinism -----------------------------------------------------------
common=(--width 320 --height 240 --frames 20 --cells 10)
"$SYNTH" "${common[@]}" --seed 7 --out "$tmp/a.mkv" --truth "$tmp/a.csv" 2>"$tmp/a.err" \
  || fail "synth_runs" "lt_synth exited $?: $(head -c 300 "$tmp/a.err")"
"$SYNTH" "${common[@]}" --seed 7 --out "$tmp/b.mkv" --truth "$tmp/b.csv" 2>/dev/null
"$SYNTH" "${common[@]}" --seed 8 --out "$tmp/c.mkv" --truth "$tmp/c.csv" 2>/dev/null
check synth_deterministic_video "same seed gave different video bytes" cmp -s "$tmp/a.mkv" "$tmp/b.mkv"
check synth_deterministic_truth "same seed gave different truth" cmp -s "$tmp/a.csv" "$tmp/b.csv"
check synth_seed_changes_video "seeds 7 and 8 gave identical video" bash -c "! cmp -s '$tmp/a.mkv' '$tmp/c.mkv'"
check synth_seed_changes_truth "seeds 7 and 8 gave identical truth" bash -c "! cmp -s '$tmp/a.csv' '$tmp/c.csv'"

# --- truth contents against the options --------------------------------------
W=400 H=300 C=20 RMIN=10 RMAX=14 VMIN=1 VMAX=3
"$SYNTH" --width $W --height $H --frames 30 --cells $C --seed 3 --rmin $RMIN --rmax $RMAX \
  --vmin $VMIN --vmax $VMAX --out "$tmp/t.mkv" --truth "$tmp/t.csv" 2>/dev/null \
  || fail "synth_runs_custom" "lt_synth with custom ranges exited non-zero"
hdr=$(head -n 1 "$tmp/t.csv" | tr -d '\r')
check synth_truth_header "header is '$hdr'" [ "$hdr" = "frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px" ]
n0=$(awk -F, 'NR > 1 && $1 == 0' "$tmp/t.csv" | wc -l)
check synth_frame0_count "frame 0 has $n0 cells, asked for $C" \
  awk -v n="$n0" -v c="$C" 'BEGIN { exit !(n >= 0.9 * c && n <= 1.1 * c + 1) }'
check synth_radii_in_range "a radius lies outside [$RMIN, $RMAX]" \
  awk -F, -v lo=$RMIN -v hi=$RMAX 'NR > 1 && ($5 < lo || $5 > hi) { bad = 1 } END { exit bad }' "$tmp/t.csv"
# jitter adds at most ~0.12 px/frame to the instantaneous speed
check synth_speeds_in_range "a speed lies outside [$VMIN, $VMAX] +- 0.15" \
  awk -F, -v lo=$VMIN -v hi=$VMAX 'NR > 1 { s = sqrt($6 * $6 + $7 * $7); if (s < lo - 0.15 || s > hi + 0.15) bad = 1 }
    END { exit bad }' "$tmp/t.csv"
check synth_mostly_plus_x "a cell moves more than 20 deg (+jitter) off +x" \
  awk -F, 'NR > 1 && ($6 <= 0 || ($7 < 0 ? -$7 : $7) > 0.40 * $6 + 0.15) { bad = 1 } END { exit bad }' "$tmp/t.csv"
check synth_centres_in_frame "a truth centre lies outside the frame" \
  awk -F, -v w=$W -v h=$H 'NR > 1 && ($3 < 0 || $3 > w - 1 || $4 < 0 || $4 > h - 1) { bad = 1 } END { exit bad }' "$tmp/t.csv"
check synth_no_overlap "two cells closer than r1 + r2 + 6 px in some frame" \
  awk -F, 'NR > 1 { n[$1]++; k = n[$1]; X[$1, k] = $3; Y[$1, k] = $4; R[$1, k] = $5 }
    END { for (f in n) for (i = 1; i <= n[f]; i++) for (j = i + 1; j <= n[f]; j++) {
            dx = X[f, i] - X[f, j]; dy = Y[f, i] - Y[f, j]
            if (sqrt(dx * dx + dy * dy) <= R[f, i] + R[f, j] + 6) bad = 1 }
          exit bad }' "$tmp/t.csv"
nent=$(awk -F, 'NR > 1 && $1 > 0 { seen[$2] = 1 } NR > 1 && $1 == 0 { first[$2] = 1 }
  END { for (k in seen) if (!(k in first)) n++; print n + 0 }' "$tmp/t.csv")
check synth_cells_enter "no cell enters after frame 0" [ "$nent" -gt 0 ]

# --- decoded video ----------------------------------------------------------------
if command -v ffmpeg >/dev/null 2>&1; then
  sz=$(ffmpeg -v error -i "$tmp/t.mkv" -frames:v 1 -f rawvideo -pix_fmt gray - | wc -c)
  check synth_frame0_size "decoded frame 0 has $sz bytes, want $((W * H))" [ "$sz" -eq $((W * H)) ]
  nfr=$(ffmpeg -v error -i "$tmp/t.mkv" -f rawvideo -pix_fmt gray - | wc -c)
  check synth_frame_count "decoded $nfr bytes, want 30 frames of $((W * H))" [ "$nfr" -eq $((30 * W * H)) ]
  "$SYNTH" --width $W --height $H --frames 30 --cells $C --seed 3 --rmin $RMIN --rmax $RMAX \
    --vmin $VMIN --vmax $VMAX --codec rawvideo --out "$tmp/t.avi" 2>/dev/null
  m1=$(ffmpeg -v error -i "$tmp/t.mkv" -f rawvideo -pix_fmt gray - | md5sum)
  m2=$(ffmpeg -v error -i "$tmp/t.avi" -f rawvideo -pix_fmt gray - | md5sum)
  check synth_lossless_roundtrip "FFV1/Matroska and rawvideo/AVI decode differently" [ "$m1" = "$m2" ]
  mean=$(ffmpeg -v error -i "$tmp/t.mkv" -frames:v 1 -f rawvideo -pix_fmt gray - | od -An -v -tu1 |
    awk '{ for (i = 1; i <= NF; i++) { s += $i; n++ } } END { printf "%d", s / n }')
  check synth_background_grey "frame 0 mean grey $mean, want about 120" [ "$mean" -ge 105 -a "$mean" -le 130 ]
else
  echo "SKIP synth_frame0_size: ffmpeg CLI not found"
fi

# --- evaluator on hand-made tracks ---------------------------------------------------
awk -F, 'NR == 1 { print "frame,t_s,track_id,x_px,y_px,radius_px,gicov"; next }
  { printf "%s,%.6f,%s,%s,%s,%s,2.0\n", $1, $1 / 30, $2, $3, $4, $5 }' "$tmp/t.csv" >"$tmp/tracks.csv"
ev=$("$EVAL" "$tmp/tracks.csv" "$tmp/t.csv" --size ${W}x$H 2>&1 | tail -n 1)
check eval_truth_perfect "got '$ev'" \
  bash -c "[[ '$ev' =~ ^accuracy:\ tracked=([0-9]+)/([0-9]+)\ \(100\.0%\)\ rmse_px=0\.000\ fp_points=0\ id_switches=0$ ]] && [ \${BASH_REMATCH[1]} -eq \${BASH_REMATCH[2]} ] && [ \${BASH_REMATCH[2]} -gt 0 ]"
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } { $4 = sprintf("%.6f", $4 + 1); print }' \
  "$tmp/tracks.csv" >"$tmp/shift.csv"
ev=$("$EVAL" "$tmp/shift.csv" "$tmp/t.csv" --size ${W}x$H 2>&1 | tail -n 1)
check eval_shift_1px "got '$ev'" bash -c "[[ '$ev' == *' rmse_px=1.000 '* && '$ev' == *'(100.0%)'* ]]"
"$EVAL" "$tmp/shift.csv" "$tmp/t.csv" --json >"$tmp/ev.json" 2>/dev/null
check eval_json "--json output lacks \"rmse_px\": 1" grep -q '"rmse_px": 1,' "$tmp/ev.json"
check eval_json_cell_offset "a constant 1 px shift left a cell-offset RMSE other than 0" \
  grep -q '"rmse_less_cell_offset_px": 0,' "$tmp/ev.json"
# +2 px in x and +-0.5 px by frame parity: the RMSE less each cell's mean
# offset is the spread about that mean, computed here from the files
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } { $4 = sprintf("%.6f", $4 + 2 + ($1 % 2 ? 0.5 : -0.5)); print }' \
  "$tmp/tracks.csv" >"$tmp/jit.csv"
want=$(awk -F, 'NR > 1 { d = ($1 % 2 ? 2.5 : 1.5); n[$2]++; s[$2] += d; q[$2] += d * d; N++ }
  END { for (c in n) e += q[c] - s[c] * s[c] / n[c]; printf "%.4f", sqrt(e / N) }' "$tmp/t.csv")
got=$("$EVAL" "$tmp/jit.csv" "$tmp/t.csv" --size ${W}x$H --json 2>/dev/null | sed -nE 's/.*"rmse_less_cell_offset_px": ([0-9.e+-]+).*/\1/p')
check eval_cell_offset_jitter "rmse_less_cell_offset_px $got, want $want" \
  awk -v g="$got" -v w="$want" 'BEGIN { exit !(g != "" && w > 0.45 && (g - w < 1e-4 && w - g < 1e-4)) }'
"$EVAL" "$tmp/missing.csv" "$tmp/t.csv" >/dev/null 2>"$tmp/ev.err"
rc=$?
check eval_unreadable_fails "exit status $rc for a missing file" [ $rc -ne 0 ]
check eval_unreadable_message "no 'lt_eval: error:' message" grep -q '^lt_eval: error:' "$tmp/ev.err"

# --- bad options -----------------------------------------------------------------
bad_cases=(
  "--width 10 --out $tmp/x.mkv"
  "--height 0 --out $tmp/x.mkv"
  "--frames 0 --out $tmp/x.mkv"
  "--rmin 20 --rmax 8 --out $tmp/x.mkv"
  "--vmin 5 --vmax 1 --out $tmp/x.mkv"
  "--noise -1 --out $tmp/x.mkv"
  "--width abc --out $tmp/x.mkv"
  "--codec h264 --out $tmp/x.mkv"
  "--out $tmp/x.mp4"
  "--frames 5"
  "--bogus --out $tmp/x.mkv"
  "--out $tmp/x.mkv stray"
)
for args in "${bad_cases[@]}"; do
  # shellcheck disable=SC2086
  "$SYNTH" $args >/dev/null 2>"$tmp/bad.err"
  rc=$?
  shown=${args//$tmp\//}
  name="synth_rejects_${shown// /_}"
  if [ $rc -eq 0 ]; then
    fail "$name" "exit status 0"
  elif ! grep -q '^lt_synth: error: ' "$tmp/bad.err"; then
    fail "$name" "no 'lt_synth: error:' message (got: $(head -c 200 "$tmp/bad.err"))"
  else
    pass "$name"
  fi
done
check synth_no_partial_output "a rejected run left $tmp/x.mkv behind" [ ! -e "$tmp/x.mkv" ]

echo "# test_synth: $passed passed, $failed failed"
[ $failed -eq 0 ]
