#!/usr/bin/env bash
# bench_flow3d.sh - 3D CLG (`leuktrack flow --3d`) on 128^3 and 256^3 pairs:
# a smooth random texture and its copy moved by (1.5, -1, 0.5) voxels
# (Fourier shift), written as a 4D NIfTI-1 by a few lines of numpy (no
# nibabel needed: the GPU machine lacks it). Per backend (cpu with all
# threads, cuda when usable) the solver time per pair (--stats) and the mean
# displacement magnitude (truth 1.87 voxel = mm here) and the mean endpoint
# error against the true shift over the voxels 8 or more from the border;
# the peer SimpleITK demons registration (50 iterations, sigma 1.5, single
# resolution: its usual recipe) with the same error measure, when the python
# has SimpleITK (`scripts/install-deps.sh --bench` puts it in build/venv;
# the GPU machine has no network, so the peer runs where PyPI is reachable).
# Targets of issue 16 on the H100: <= 50 ms (128^3), <= 400 ms (256^3).
# Env: LT (binary, default ./leuktrack), PY (python3 with numpy; build/venv's
# python is tried first), SIZES ("128 256"), BACKENDS ("cpu cuda").
set -u
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
SIZES=${SIZES:-128 256}
for p in ${PY:-} build/venv/bin/python /usr/bin/python3 python3; do "$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }; done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "leuktrack flow --3d benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
printf '%-8s %-6s %12s %12s %16s %12s\n' size backend solve_ms total_s mean_mag_voxel mean_epe
# mean endpoint error (voxels = mm here) of a leuktrack displacement NIfTI
# (x,y,z,1,3 float32, world mm with the identity sform) against the true
# shift (1.5, -1, 0.5), 8 voxels from every border
epe_nifti() {
  "$PY" - "$1" "$2" <<'PY'
import sys, struct, numpy as np
path, n = sys.argv[1], int(sys.argv[2])
raw = open(path, 'rb').read()
off = int(struct.unpack_from('<f', raw, 108)[0])
w = np.frombuffer(raw, '<f4', offset=off, count=3 * n ** 3).reshape(3, n, n, n)[:, 8:-8, 8:-8, 8:-8]
print('%.3f' % np.sqrt(((w - np.array([1.5, -1.0, 0.5]).reshape(3, 1, 1, 1)) ** 2).sum(0)).mean())
PY
}
for n in $SIZES; do
  "$PY" - "$T/v$n.nii" "$n" <<'PY'
import sys, struct, numpy as np
path, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
spec = rng.standard_normal((n, n, n)).astype(np.complex64)
k = np.meshgrid(*[np.fft.fftfreq(n).astype(np.float32)] * 3, indexing='ij')
spec *= np.exp(-(k[0]**2 + k[1]**2 + k[2]**2) / (2 * 0.05**2)).astype(np.float32)
a = np.real(np.fft.ifftn(spec)).astype(np.float32)
a = (a - a.min()) / (a.max() - a.min()) * 200 + 20
ph = np.exp(-2j * np.pi * (k[0] * 1.5 - k[1] * 1.0 + k[2] * 0.5))
b = np.real(np.fft.ifftn(np.fft.fftn(a) * ph)).astype(np.float32)
hdr = bytearray(348)
struct.pack_into('<i', hdr, 0, 348)
struct.pack_into('<8h', hdr, 40, 4, n, n, n, 2, 1, 1, 1)
struct.pack_into('<hh', hdr, 70, 16, 32)                 # float32
struct.pack_into('<8f', hdr, 76, 1, 1, 1, 1, 1, 0, 0, 0)  # pixdim: 1 mm, dt 1
struct.pack_into('<f', hdr, 108, 352.0)                   # vox_offset
struct.pack_into('<f', hdr, 112, 1.0)                     # scl_slope
hdr[123] = 10 | 8                                          # mm, s
struct.pack_into('<hh', hdr, 252, 0, 1)                   # qform 0, sform 1
struct.pack_into('<12f', hdr, 280, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0)
hdr[344:348] = b'n+1\0'
with open(path, 'wb') as f:
    f.write(bytes(hdr) + b'\0' * 4)
    f.write(np.stack([a, b]).transpose(0, 3, 2, 1).astype('<f4').tobytes())  # t, z, y, x: x fastest
PY
  for be in ${BACKENDS:-cpu cuda}; do
    [ "$be" = cuda ] && ! "$LT" flow --3d --backend cuda "$T/v$n.nii" --summary /dev/null --iterations 1 --levels 1 2>/dev/null && continue
    t0=$(date +%s.%N)
    "$LT" flow --3d --backend $be "$T/v$n.nii" -o "$T/w.nii" --summary "$T/s.csv" --stats 2>"$T/st" || { echo "$n $be failed: $(tail -1 "$T/st")"; continue; }
    t1=$(date +%s.%N)
    solve=$(sed -nE 's/.*solve ([0-9.]+) s per pair.*/\1/p' "$T/st")
    printf '%-8s %-6s %12.1f %12.2f %16s %12s\n' "${n}^3" $be "$(awk -v s="$solve" 'BEGIN{print 1e3*s}')" \
      "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" "$(awk -F, 'NR==2{print $3}' "$T/s.csv")" "$(epe_nifti "$T/w.nii" "$n")"
  done
  if "$PY" -c 'import SimpleITK' 2>/dev/null; then
    "$PY" - "$T/v$n.nii" "$n" <<'PY'
import sys, time, numpy as np, SimpleITK as sitk
n = int(sys.argv[2]); raw = np.fromfile(sys.argv[1], '<f4', offset=352).reshape(2, n, n, n)
f, m = sitk.GetImageFromArray(raw[0]), sitk.GetImageFromArray(raw[1])
d = sitk.DemonsRegistrationFilter(); d.SetNumberOfIterations(50); d.SetStandardDeviations(1.5)
t = time.time(); field = d.Execute(f, m); dt = time.time() - t
w = sitk.GetArrayFromImage(field)[8:-8, 8:-8, 8:-8]          # z, y, x, (dx, dy, dz)
e = np.sqrt(((w - np.array([1.5, -1.0, 0.5])) ** 2).sum(-1)).mean()
print('%-8s %-6s %12.1f %12.2f %16.3f %12.3f' % ('%d^3' % n, 'sitk', dt * 1e3, dt, np.sqrt((w ** 2).sum(-1)).mean(), e))
PY
  else
    echo "${n}^3    peer SimpleITK demons: not installed in $PY"
  fi
done
