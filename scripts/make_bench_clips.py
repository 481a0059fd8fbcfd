#!/usr/bin/env python3
"""make_bench_clips.py - benchmark clips built from the real Rodinia frame
(issue 3: "build it from the real frame, e.g. shifted copies"), written as
grey YUV4MPEG2 (.y4m, rawvideo: decoding costs a memcpy, so the end-to-end
number measures leuktrack, not a codec). Needs only numpy, so it runs on the
GPU machine too.

  640x480:   the frame shifted right by SPEED px per frame (wrapping): ~36-49
             cells moving SPEED px/frame; also as real640_pal8.avi, the same
             frames in the reference program's own format (AVI rawvideo pal8,
             grey palette, rows bottom-up)
  1024x1024: the frame tiled 2x3 (about 170 cells), shifted likewise

usage: make_bench_clips.py RODINIA.avi OUTDIR [FRAMES_640] [FRAMES_1024] [SPEED]
"""
import os
import struct
import sys

import numpy as np


def rodinia_frame(path):
    data = open(path, 'rb').read()
    i = 0
    while True:
        i = data.index(b'00dc', i)
        size = struct.unpack('<I', data[i + 4:i + 8])[0]
        if size == 640 * 480:
            break
        i += 4
    raw = np.frombuffer(data[i + 8:i + 8 + size], np.uint8).reshape(480, 640)
    return raw[::-1].copy()  # DIB rows are bottom-up


def write_y4m(path, frames_iter, w, h, n):
    with open(path, 'wb') as f:
        f.write(b'YUV4MPEG2 W%d H%d F30:1 Ip A1:1 Cmono\n' % (w, h))
        for k in range(n):
            f.write(b'FRAME\n')
            f.write(frames_iter(k).tobytes())


def write_avi_pal8(path, frames_iter, w, h, n, fps=30):
    """The reference program's input format: AVI, rawvideo pal8 with a grey
    palette, BI_RGB rows bottom-up (4-byte aligned), one '00dc' chunk per
    frame, an idx1 index."""
    stride = (w + 3) & ~3
    size = stride * h
    pal = b''.join(bytes((k, k, k, 0)) for k in range(256))
    bih = struct.pack('<IiiHHIIiiII', 40, w, h, 1, 8, 0, size, 0, 0, 256, 0) + pal
    strh = b'vids' + b'\0\0\0\0' + struct.pack('<IHHIIIIIIIIhhhh', 0, 0, 0, 0, 1, fps, 0, n, size, 0xFFFFFFFF, 0,
                                               0, 0, w, h)
    strl = b'strl' + b'strh' + struct.pack('<I', len(strh)) + strh + b'strf' + struct.pack('<I', len(bih)) + bih
    avih = struct.pack('<IIIIIIIIII4I', 1000000 // fps, size * fps, 0, 0x10, n, 0, 1, size, w, h, 0, 0, 0, 0)
    hdrl = b'hdrl' + b'avih' + struct.pack('<I', len(avih)) + avih + b'LIST' + struct.pack('<I', len(strl)) + strl
    chunk = 8 + size
    movi_len = 4 + n * chunk
    idx = b''.join(b'00dc' + struct.pack('<III', 0x10, 4 + k * chunk, size) for k in range(n))
    riff_len = 4 + (8 + len(hdrl)) + (8 + movi_len) + (8 + len(idx))
    pad = bytes(stride - w)
    with open(path, 'wb') as f:
        f.write(b'RIFF' + struct.pack('<I', riff_len) + b'AVI ')
        f.write(b'LIST' + struct.pack('<I', len(hdrl)) + hdrl)
        f.write(b'LIST' + struct.pack('<I', movi_len) + b'movi')
        for k in range(n):
            fr = frames_iter(k)[::-1]  # bottom-up
            f.write(b'00dc' + struct.pack('<I', size))
            f.write(fr.tobytes() if not pad else b''.join(row.tobytes() + pad for row in fr))
        f.write(b'idx1' + struct.pack('<I', len(idx)) + idx)


def main():
    src, out = sys.argv[1], sys.argv[2]
    n640 = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    n1024 = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    speed = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    os.makedirs(out, exist_ok=True)
    fr = rodinia_frame(src)
    write_y4m(os.path.join(out, 'real640.y4m'), lambda k: np.roll(fr, speed * k, axis=1), 640, 480, n640)
    write_avi_pal8(os.path.join(out, 'real640_pal8.avi'), lambda k: np.roll(fr, speed * k, axis=1), 640, 480, n640)
    big = np.tile(fr, (3, 2))[:1024, :1024]
    write_y4m(os.path.join(out, 'real1024.y4m'), lambda k: np.roll(big, speed * k, axis=1), 1024, 1024, n1024)


if __name__ == '__main__':
    main()
