#!/usr/bin/env bash
# test_flow3d_cli.sh - `leuktrack flow --3d`: a synthetic NIfTI pair made
# here with nibabel (a smooth texture and its copy moved by a known constant
# displacement, anisotropic voxels) -> the displacement field read back with
# nibabel: intent, shape, and the motion within 0.2 voxel inside the volume;
# world vs voxel-axis components; --summary rows; mid-slice PNGs; a real 4D
# fMRI file; bad inputs with their exit status; CUDA = CPU when a GPU is
# usable. Oracle: nibabel + numpy (Debian python3-nibabel, python3-numpy).
set -u
cd "$(dirname "$0")/.."
LT=${LT_BIN:-./leuktrack}
DATA=${LT_DATA:-../shared/data}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. tests/lib.sh
PY=
for p in ${PYTHON:-} /usr/bin/python3 python3; do "$p" -c 'import numpy, nibabel' 2>/dev/null && { PY=$p; break; }; done
if [ -z "$PY" ]; then
  fail "flow --3d" "no python3 with numpy and nibabel (scripts/install-deps.sh installs python3-nibabel)"
  exit 1
fi

# a pair: time point 1 = time point 0 moved by (1.5, -1.0, 0.5) voxels (Fourier shift of a smooth periodic texture)
"$PY" - "$T" <<'PY'
import sys, numpy as np, nibabel as nib
d = sys.argv[1]
rng = np.random.default_rng(5)
n = (40, 36, 20)
spec = rng.standard_normal(n) + 1j * rng.standard_normal(n)
k = np.meshgrid(*[np.fft.fftfreq(m) for m in n], indexing='ij')
spec *= np.exp(-(k[0]**2 + k[1]**2 + k[2]**2) / (2 * 0.06**2))
shift = (1.5, -1.0, 0.5)   # voxels: I1(x) = I0(x - s), so the flow is +s
ph = np.exp(-2j * np.pi * (k[0] * shift[0] + k[1] * shift[1] + k[2] * shift[2]))
a = np.real(np.fft.ifftn(spec))
a = (a - a.min()) / (a.max() - a.min()) * 200 + 20
b = np.real(np.fft.ifftn(np.fft.fftn(a) * ph))
aff = np.diag([1.0, 1.0, 2.0, 1.0])
img = nib.Nifti1Image(np.stack([a, b], axis=3).astype(np.float32), aff)
img.header.set_xyzt_units('mm', 'sec'); img.header['pixdim'][4] = 0.5
nib.save(img, d + '/pair.nii.gz')
nib.save(nib.Nifti1Image(a.astype(np.float32), aff), d + '/t0.nii')
nib.save(nib.Nifti1Image(b.astype(np.float32), aff), d + '/t1.nii')
nan = a.copy(); nan[3, 4, 5] = np.nan
nib.save(nib.Nifti1Image(np.stack([a, nan], axis=3).astype(np.float32), aff), d + '/nan.nii')
nib.save(nib.Nifti1Image(a[:30].astype(np.float32), aff), d + '/small.nii')
tiny = nib.Nifti1Image(np.stack([a, b], axis=3).astype(np.float32), aff)
tiny.header.set_xyzt_units('micron', 'sec'); tiny.header['pixdim'][1:4] = [1e-42, 1e-40, 1.0]
nib.save(tiny, d + '/tiny.nii')
PY
check_field() { # FILE SPACE -> "mean error in voxels over the interior"
  "$PY" - "$1" "$2" <<'PY'
import sys, numpy as np, nibabel as nib
im = nib.load(sys.argv[1]); f = np.asarray(im.dataobj)
assert im.header.get_intent()[0] == 'displacement vector', im.header.get_intent()
assert f.shape == (40, 36, 20, 1, 3), f.shape
h = np.array([1.0, 1.0, 2.0])
w = f[:, :, :, 0, :] / h        # mm -> voxels (the affine is diagonal: world = voxel axes here)
inner = w[6:-6, 6:-6, 4:-4]
err = np.sqrt(((inner - np.array([1.5, -1.0, 0.5])) ** 2).sum(axis=3))
print("%.4f %.4f" % (err.mean(), np.abs(f).max()))
PY
}
"$LT" flow --3d "$T/pair.nii.gz" -o "$T/d.nii.gz" --summary "$T/s.csv" --color --alpha 100 2>"$T/err"; rc=$?
if [ $rc -eq 0 ] && r=$(check_field "$T/d.nii.gz" world 2>"$T/perr"); then
  e=${r%% *}
  awk -v e="$e" 'BEGIN {exit !(e <= 0.2)}' && pass "4D pair, known motion (1.5,-1,0.5) voxel, voxels 1x1x2 mm: mean error $e voxel (<= 0.2)" \
    || fail "3D accuracy" "mean error $e voxel"
else fail "3D run" "rc=$rc $(head -c 300 "$T/err") $(cat "$T/perr" 2>/dev/null | tail -2)"; fi
[ "$(wc -l <"$T/s.csv")" -eq 2 ] && head -1 "$T/s.csv" | grep -qx 'pair,t_s,mean_mag_mm,p95_mag_mm,max_mag_mm,mean_div' \
  && pass "--summary: header and one row per pair" || fail "--summary" "$(cat "$T/s.csv")"
awk -F, 'NR == 2 {m = $3} END {exit !(m > 1.5 && m < 2.2)}' "$T/s.csv" \
  && pass "--summary mean magnitude in mm matches the motion (|(1.5,-1,1.0) mm| = 1.95)" || fail "summary magnitude" "$(cat "$T/s.csv")"
[ -s "$T/d_mid.png" ] && pass "--color: mid-slice PNG next to the field" || fail "mid-slice PNG" "$(ls "$T")"
"$LT" flow --3d "$T/t0.nii" "$T/t1.nii" -o "$T/d2.nii" --displacement voxel --alpha 100 2>"$T/err" && cmp -s <(check_field "$T/d2.nii" voxel) <(check_field "$T/d.nii.gz" world) \
  && pass "two 3D files = one 4D file; --displacement voxel (diagonal affine: same field)" || fail "3D files" "$(head -c 300 "$T/err")"
"$LT" flow --3d "$T/pair.nii.gz" -o "$T/t1x.nii.gz" --alpha 100 --threads 1 2>/dev/null
"$LT" flow --3d "$T/pair.nii.gz" -o "$T/t2x.nii.gz" --alpha 100 --threads 2 2>/dev/null
cmp -s <(gzip -dc "$T/t1x.nii.gz") <(gzip -dc "$T/t2x.nii.gz") && pass "--threads 1 and 2: identical fields" || fail "3D determinism" "differ"
B0=$("$LT" flow --3d "$T/pair.nii.gz" --summary - --alpha 100 2>/dev/null | awk -F, 'NR == 2 {print ($6 < 0 ? -$6 : $6)}')
B1=$("$LT" flow --3d "$T/pair.nii.gz" --summary - --alpha 100 --beta 300 2>/dev/null | awk -F, 'NR == 2 {print ($6 < 0 ? -$6 : $6)}')
[ -n "$B0" ] && [ -n "$B1" ] && pass "--beta runs (|mean div| $B0 -> $B1)" || fail "--beta" "$B0 $B1"

# real 4D fMRI (functional.nii: 17x21x3 voxels of 4x4x8 mm, 20 time points): a field per pair
REAL=$DATA/volumes/nibabel_fmri_4d/functional.nii
if [ -f "$REAL" ]; then
  "$LT" flow --3d "$REAL" -o "$T/fdir" --summary "$T/f.csv" --iterations 40 2>"$T/err"; rc=$?
  n=$(ls "$T/fdir" 2>/dev/null | grep -c '^disp_[0-9]*\.nii\.gz$')
  [ $rc -eq 0 ] && [ "$n" -eq 19 ] && [ "$(wc -l <"$T/f.csv")" -eq 20 ] \
    && awk -F, 'NR > 1 && ($3 < 0 || $3 > 4) {bad = 1} END {exit bad}' "$T/f.csv" \
    && pass "real fMRI (20 time points, 4x4x8 mm): 19 fields, mean motion under one voxel" || fail "real fMRI" "rc=$rc n=$n $(head -c 300 "$T/err")"
else fail "real fMRI" "$REAL not found (set LT_DATA)"; fi

expect "a single 3D file -> 3" 3 "motion needs a 4D file" -- "$LT" flow --3d "$T/t0.nii" -o "$T/x.nii"
expect "NaN voxel -> 3" 3 "NaN" -- "$LT" flow --3d "$T/nan.nii" -o "$T/x.nii"
expect "mismatched sizes -> 3" 3 "small.nii" -- "$LT" flow --3d "$T/t0.nii" "$T/small.nii" -o "$T/x.nii"
expect "denormal voxel size (micron unit) -> 3" 3 "voxel size" -- "$LT" flow --3d "$T/tiny.nii" -o "$T/x.nii"
expect "--beta without --3d -> 2" 2 "are for --3d" -- "$LT" flow --beta 10 a.png b.png -o x.flo
expect "--ground-truth with --3d -> 2" 2 "not with --3d" -- "$LT" flow --3d --ground-truth g.flo "$T/pair.nii.gz" -o x.nii
expect "no output -> 2" 2 "no output given" -- "$LT" flow --3d "$T/pair.nii.gz"
[ ! -e "$T/x.nii" ] && pass "failed runs write no field" || fail "failed runs" "x.nii exists"

if "$LT" flow --3d --backend cuda "$T/pair.nii.gz" -o "$T/c.nii.gz" --alpha 100 2>"$T/err"; then
  cmp -s <(gzip -dc "$T/c.nii.gz") <(gzip -dc "$T/t1x.nii.gz") && pass "CUDA = CPU (identical field bytes)" || fail "CUDA vs CPU" "fields differ"
else skip "CUDA = CPU" "--backend cuda unusable: $(grep -o 'error:.*' "$T/err" | head -1)"; fi
[ $failed -eq 0 ]
