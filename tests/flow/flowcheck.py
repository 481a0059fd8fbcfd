#!/usr/bin/env python3
"""flowcheck.py - independent helpers for tests/test_flow_cli.sh and
scripts/bench_flow.sh (numpy only; cv2 for PNG): a .flo reader that parses
the Middlebury layout itself, AEE/AAE, magnitude statistics, and the
synthetic translating texture (y4m + PNG frames).

  flowcheck.py texture OUT_PREFIX W H N DX DY   -> OUT_PREFIX.y4m, OUT_PREFIX_K.png
  flowcheck.py eval FLO GT.flo [MASK.png]       -> "aee aae n"
  flowcheck.py trans FLO DX DY BORDER           -> AEE against a constant flow, interior only
  flowcheck.py stats FLO                        -> "mean p95 max" (p95 nearest rank)
  flowcheck.py maxdiff A.flo B.flo              -> largest |difference| of u and v
  flowcheck.py size PNG                         -> "W H channels distinct_colours"
"""
import math
import sys

import numpy as np


def read_flo(path):
    raw = open(path, 'rb').read()
    if raw[:4] != b'PIEH':
        raise SystemExit('%s: bad tag' % path)
    w, h = np.frombuffer(raw[4:12], dtype='<i4')
    if len(raw) != 12 + 8 * int(w) * int(h):
        raise SystemExit('%s: size %d does not match %dx%d' % (path, len(raw), w, h))
    a = np.frombuffer(raw[12:], dtype='<f4').reshape(int(h), int(w), 2)
    return a[..., 0].astype(np.float64), a[..., 1].astype(np.float64)


def texture(x, y):
    # a smooth band-limited texture defined everywhere (periods 9..41 px)
    rng = np.random.RandomState(7)
    t = np.zeros_like(x, dtype=np.float64)
    for _ in range(12):
        period = rng.uniform(9, 41)
        ang = rng.uniform(0, 2 * math.pi)
        ph = rng.uniform(0, 2 * math.pi)
        t += np.cos(2 * math.pi * (x * math.cos(ang) + y * math.sin(ang)) / period + ph)
    return 128 + 95 * t / 12 ** 0.5 / 1.5


def main():
    cmd = sys.argv[1]
    if cmd == 'texture':
        pre, w, h, n, dx, dy = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
        import cv2
        with open(pre + '.y4m', 'wb') as f:
            f.write(b'YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n' % (w, h))
            for k in range(n):
                # frame k (x) = T(x - k d): frame k+1 (x + d) = frame k (x), flow = d
                fr = np.clip(np.rint(texture(xs - k * dx, ys - k * dy)), 0, 255).astype(np.uint8)
                f.write(b'FRAME\n' + fr.tobytes())
                cv2.imwrite('%s_%d.png' % (pre, k), fr)
    elif cmd == 'eval':
        u, v = read_flo(sys.argv[2])
        gu, gv = read_flo(sys.argv[3])
        m = np.ones(u.shape, bool)
        if len(sys.argv) > 4:
            import cv2
            m = cv2.imread(sys.argv[4], cv2.IMREAD_UNCHANGED)
            m = (m.reshape(u.shape[0], u.shape[1], -1).max(axis=2) != 0)
        m &= (np.abs(gu) <= 1e9) & (np.abs(gv) <= 1e9)
        aee = np.hypot(u - gu, v - gv)[m].mean()
        c = (u * gu + v * gv + 1) / np.sqrt((u * u + v * v + 1) * (gu * gu + gv * gv + 1))
        aae = np.degrees(np.arccos(np.clip(c, -1, 1)))[m].mean()
        print('%.6f %.6f %d' % (aee, aae, m.sum()))
    elif cmd == 'trans':
        u, v = read_flo(sys.argv[2])
        dx, dy, b = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
        e = np.hypot(u - dx, v - dy)[b:-b, b:-b]
        print('%.6f' % e.mean())
    elif cmd == 'stats':
        u, v = read_flo(sys.argv[2])
        m = np.sqrt(u * u + v * v).ravel()
        k = int(math.ceil(0.95 * m.size))
        print('%.6f %.6f %.6f' % (m.mean(), np.sort(m)[k - 1], m.max()))
    elif cmd == 'maxdiff':
        u, v = read_flo(sys.argv[2])
        a, b = read_flo(sys.argv[3])
        print('%.9g' % max(np.abs(u - a).max(), np.abs(v - b).max()))
    elif cmd == 'size':
        import cv2
        im = cv2.imread(sys.argv[2], cv2.IMREAD_UNCHANGED)
        ch = 1 if im.ndim == 2 else im.shape[2]
        print(im.shape[1], im.shape[0], ch, len(np.unique(im.reshape(-1, ch), axis=0)))
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
