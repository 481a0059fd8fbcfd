#!/usr/bin/env python3
"""nifti_seeds.py DIR - tiny NIfTI-1 seed files for fuzz/fuzz_nifti.c (standard
library only): 4D int16 / float32 / uint8 volumes of 3x3x2x2 voxels, .nii and
gzipped, one big-endian, one with a qform+sform."""
import gzip, os, struct, sys

def nii(dims, dtype, bitpix, data, pix=(1.0, 1.0, 2.0, 1.0), endian='<', sform=False):
    dim = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    h = bytearray(348)
    struct.pack_into(endian + 'i', h, 0, 348)
    struct.pack_into(endian + '8h', h, 40, *dim)
    struct.pack_into(endian + 'hh', h, 70, dtype, bitpix)
    struct.pack_into(endian + '8f', h, 76, 1.0, *pix, 0, 0, 0)
    struct.pack_into(endian + 'f', h, 108, 352.0)
    struct.pack_into(endian + 'ff', h, 112, 1.0, 0.0)
    h[123] = 2  # xyzt_units: mm
    if sform:
        struct.pack_into(endian + 'hh', h, 252, 1, 2)
        struct.pack_into(endian + '6f', h, 256, 0, 0, 1, 10, -20, 30)
        struct.pack_into(endian + '12f', h, 280, -pix[0], 0, 0, 90, 0, pix[1], 0, -126, 0, 0, pix[2], -72)
    h[344:348] = b'n+1\0'
    return bytes(h) + b'\0\0\0\0' + data

def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    n = 3 * 3 * 2 * 2
    files = {
        'i16.nii': nii((3, 3, 2, 2), 4, 16, struct.pack('<%dh' % n, *range(n))),
        'f32.nii': nii((3, 3, 2, 2), 16, 32, struct.pack('<%df' % n, *[i * 0.5 for i in range(n)]), sform=True),
        'u8_be.nii': nii((3, 3, 2, 2), 2, 8, bytes(range(n)), endian='>'),
        'f64_3d.nii': nii((3, 3, 2), 64, 64, struct.pack('<18d', *range(18))),
    }
    for name, b in files.items():
        open(os.path.join(d, name), 'wb').write(b)
    open(os.path.join(d, 'i16.nii.gz'), 'wb').write(gzip.compress(files['i16.nii'], mtime=0))

main()
