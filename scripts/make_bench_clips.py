#!/usr/bin/env python3
"""make_bench_clips.py - benchmark clips built from the real Rodinia frame
(issue 3: "build it from the real frame, e.g. shifted copies"), written as
grey YUV4MPEG2 (.y4m, rawvideo: decoding costs a memcpy, so the end-to-end
number measures leuktrack, not a codec). Needs only numpy, so it runs on the
GPU machine too.

  640x480:   the frame shifted right by SPEED px per frame (wrapping): ~36-49
             cells moving SPEED px/frame
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


def main():
    src, out = sys.argv[1], sys.argv[2]
    n640 = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    n1024 = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    speed = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    os.makedirs(out, exist_ok=True)
    fr = rodinia_frame(src)
    write_y4m(os.path.join(out, 'real640.y4m'), lambda k: np.roll(fr, speed * k, axis=1), 640, 480, n640)
    big = np.tile(fr, (3, 2))[:1024, :1024]
    write_y4m(os.path.join(out, 'real1024.y4m'), lambda k: np.roll(big, speed * k, axis=1), 1024, 1024, n1024)


if __name__ == '__main__':
    main()
