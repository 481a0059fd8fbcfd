#!/usr/bin/env bash
# tests/test_nifti.sh - the NIfTI displacement field written by leuktrack
# (build/tools/lt_flow3d on the real 4D fMRI volume, time points 0 -> 1)
# read back with an independent reader, Python nibabel (Debian
# python3-nibabel): NIfTI-1, intent 1006 (displacement vector), dims
# (128,96,24,1,3), float32, pixdim 2,2,2.2 mm, the input's sform and qform
# (matrix and codes), finite components. Fails if nibabel is missing.
set -u
BUILD=${BUILD:-build}
DATA=${LT_DATA:-../shared/data}
tool=$BUILD/tools/lt_flow3d
in=$DATA/volumes/nibabel_fmri_4d/example4d.nii.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! /usr/bin/python3 -c 'import nibabel' 2>/dev/null; then
  echo "FAIL nifti round trip: python3-nibabel missing (scripts/install-deps.sh)"; exit 1
fi
if [[ ! -x $tool ]]; then echo "FAIL nifti round trip: $tool not built (make tools)"; exit 1; fi
if ! OMP_NUM_THREADS=2 "$tool" --alpha 100 -o "$tmp/disp.nii.gz" "$in" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL nifti round trip: lt_flow3d failed: $(head -c 300 "$tmp/err")"; exit 1
fi
echo "PASS lt_flow3d on example4d: $(cat "$tmp/out")"
/usr/bin/python3 - "$in" "$tmp/disp.nii.gz" <<'PY'
import sys
import nibabel as nib
import numpy as np
src, out = nib.load(sys.argv[1]), nib.load(sys.argv[2])
h, hs = out.header, src.header
fails = 0
def check(name, ok, why=''):
    global fails
    print(('PASS ' if ok else 'FAIL ') + name + ('' if ok else ': ' + why))
    fails += 0 if ok else 1
check('nibabel reads a NIfTI-1 image', isinstance(out, nib.Nifti1Image), type(out).__name__)
check('intent code 1006 (displacement vector)', int(h['intent_code']) == 1006, str(h['intent_code']))
check('dims (128, 96, 24, 1, 3)', out.shape == (128, 96, 24, 1, 3), str(out.shape))
check('float32 data', h.get_data_dtype() == np.float32, str(h.get_data_dtype()))
check('pixdim 2 x 2 x 2.2 mm', np.allclose(h['pixdim'][1:4], [2.0, 2.0, 2.2], atol=1e-5) and h.get_xyzt_units()[0] == 'mm',
      '%s %s' % (h['pixdim'][1:4], h.get_xyzt_units()))
check('sform kept (code and matrix)', int(h['sform_code']) == int(hs['sform_code']) and
      np.allclose(out.get_sform(), src.get_sform(), atol=1e-4), '%s vs %s' % (out.get_sform(), src.get_sform()))
check('qform kept (code and matrix)', int(h['qform_code']) == int(hs['qform_code']) and
      np.allclose(out.get_qform(), src.get_qform(), atol=1e-3), '%s vs %s' % (out.get_qform(), src.get_qform()))
d = np.asarray(out.dataobj)
check('components finite, motion below 3 mm', np.isfinite(d).all() and np.abs(d).max() < 3.0, 'max %g' % np.nanmax(np.abs(d)))
sys.exit(1 if fails else 0)
PY
