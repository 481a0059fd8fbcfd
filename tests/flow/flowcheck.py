#!/usr/bin/env python3
"""flowcheck.py - independent helpers for tests/test_flow_cli.sh and
scripts/bench_flow.sh (numpy; cv2 only to read PNG and for OpenCV): a .flo reader that parses
the Middlebury layout itself, AEE/AAE, magnitude statistics, and the
synthetic translating texture (y4m + PNG frames).

  flowcheck.py texture OUT_PREFIX W H N DX DY   -> OUT_PREFIX.y4m, OUT_PREFIX_K.pgm
  flowcheck.py eval FLO GT.flo [MASK.png]       -> "aee aae n"
  flowcheck.py trans FLO DX DY BORDER           -> AEE against a constant flow, interior only
  flowcheck.py stats FLO                        -> "mean p95 max" (p95 nearest rank)
  flowcheck.py maxdiff A.flo B.flo              -> largest |difference| of u and v
  flowcheck.py size PNG                         -> "W H channels distinct_colours"
  flowcheck.py farneback A B OUT.flo             -> OpenCV Farneback (the parameters of `opencv`)
  flowcheck.py opencv A B OUT_PREFIX THREADS     -> per OpenCV method "name ms_per_pair":
      Farneback, DIS (medium preset), TV-L1 (if cv2.optflow exists); each flow
      written as OUT_PREFIX_name.flo (the timing excludes reading and writing;
      best of 3 runs after a warm-up, TV-L1 one run)
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


def write_pgm(path, a):
    with open(path, 'wb') as f:
        f.write(b'P5\n%d %d\n255\n' % (a.shape[1], a.shape[0]) + a.astype(np.uint8).tobytes())


def write_flo(path, u, v):
    h, w = u.shape
    a = np.empty((h, w, 2), '<f4')
    a[..., 0] = u
    a[..., 1] = v
    with open(path, 'wb') as f:
        f.write(b'PIEH' + np.array([w, h], '<i4').tobytes() + a.tobytes())


def farneback(i0, i1):
    import cv2
    return cv2.calcOpticalFlowFarneback(i0, i1, None, 0.5, 5, 15, 5, 7, 1.5, 0)


def opencv(a, b, pre, threads):
    import time
    import cv2
    cv2.setNumThreads(threads)
    i0 = cv2.imread(a, cv2.IMREAD_GRAYSCALE)  # PGM, PPM (luma) or PNG
    i1 = cv2.imread(b, cv2.IMREAD_GRAYSCALE)
    methods = [
        ('farneback', lambda: farneback(i0, i1), 3),
        ('dis', lambda: cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(i0, i1, None), 3),
    ]
    if hasattr(cv2, 'optflow'):
        methods.append(('tvl1', lambda: cv2.optflow.DualTVL1OpticalFlow_create().calc(i0, i1, None), 1))
    for name, fn, reps in methods:
        fl = fn()
        best = float('inf')
        for _ in range(reps):
            t0 = time.perf_counter()
            fl = fn()
            best = min(best, time.perf_counter() - t0)
        write_flo('%s_%s.flo' % (pre, name), fl[..., 0], fl[..., 1])
        print(name, '%.3f' % (1e3 * best))


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
        with open(pre + '.y4m', 'wb') as f:
            f.write(b'YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n' % (w, h))
            for k in range(n):
                # frame k (x) = T(x - k d): frame k+1 (x + d) = frame k (x), flow = d
                fr = np.clip(np.rint(texture(xs - k * dx, ys - k * dy)), 0, 255).astype(np.uint8)
                f.write(b'FRAME\n' + fr.tobytes())
                write_pgm('%s_%d.pgm' % (pre, k), fr)
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
    elif cmd == 'farneback':
        import cv2
        fl = farneback(cv2.imread(sys.argv[2], cv2.IMREAD_GRAYSCALE), cv2.imread(sys.argv[3], cv2.IMREAD_GRAYSCALE))
        write_flo(sys.argv[4], fl[..., 0], fl[..., 1])
    elif cmd == 'opencv':
        opencv(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        raise SystemExit('unknown command ' + cmd)


if __name__ == '__main__':
    main()
