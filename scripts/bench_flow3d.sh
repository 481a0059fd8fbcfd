#!/usr/bin/env bash
# bench_flow3d.sh - 3D CLG (`leuktrack flow --3d`) on 128^3 and 256^3 pairs:
# a smooth random texture and its copy moved by (1.5, -1, 0.5) voxels
# (Fourier shift), written as a 4D NIfTI-1 by a few lines of numpy (no
# nibabel needed: the GPU machine lacks it). Per backend (cpu with all
# threads, cuda when usable) the solver time per pair (--stats) and the mean
# displacement magnitude (truth 1.87 voxel = mm here); the peer SimpleITK
# demons registration when the python has SimpleITK (it is not on the GPU
# machine). Targets of issue 16 on the H100: <= 50 ms (128^3), <= 400 ms (256^3).
# Env: LT (binary, default ./leuktrack), PY (python3 with numpy), SIZES ("128 256").
set -u
cd "$(dirname "$0")/.."
LT=${LT:-./leuktrack}
SIZES=${SIZES:-128 256}
for p in ${PY:-} /usr/bin/python3 python3; do "$p" -c 'import numpy' 2>/dev/null && { PY=$p; break; }; done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "leuktrack flow --3d benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
printf '%-8s %-6s %12s %12s %16s\n' size backend solve_ms total_s mean_mag_voxel
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
  for be in cpu cuda; do
    [ "$be" = cuda ] && ! "$LT" flow --3d --backend cuda "$T/v$n.nii" --summary /dev/null --iterations 1 --levels 1 2>/dev/null && continue
    t0=$(date +%s.%N)
    "$LT" flow --3d --backend $be "$T/v$n.nii" --summary "$T/s.csv" --stats 2>"$T/st" || { echo "$n $be failed: $(tail -1 "$T/st")"; continue; }
    t1=$(date +%s.%N)
    solve=$(sed -nE 's/.*solve ([0-9.]+) s per pair.*/\1/p' "$T/st")
    printf '%-8s %-6s %12.1f %12.2f %16s\n' "${n}^3" $be "$(awk -v s="$solve" 'BEGIN{print 1e3*s}')" \
      "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" "$(awk -F, 'NR==2{print $3}' "$T/s.csv")"
  done
  if "$PY" -c 'import SimpleITK' 2>/dev/null; then
    "$PY" - "$T/v$n.nii" "$n" <<'PY'
import sys, time, numpy as np, SimpleITK as sitk
n = int(sys.argv[2]); raw = np.fromfile(sys.argv[1], '<f4', offset=352).reshape(2, n, n, n)
f, m = sitk.GetImageFromArray(raw[0]), sitk.GetImageFromArray(raw[1])
d = sitk.DemonsRegistrationFilter(); d.SetNumberOfIterations(50); d.SetStandardDeviations(1.5)
t = time.time(); field = d.Execute(f, m); dt = time.time() - t
print('%-8s %-6s %12.1f %12.2f %16s' % ('%d^3' % n, 'sitk', dt * 1e3, dt, 'demons 50 it'))
PY
  else
    echo "${n}^3    peer SimpleITK demons: not installed in $PY"
  fi
done
