#!/usr/bin/env python3
"""make_tumor_clip.py - synthetic fluoroscopy-like clip with known motion for
the tumour mode (tests/test_tumor_cli.sh, scripts/demo.sh,
scripts/bench_tumor.sh). Needs only numpy, so it runs on the GPU machine too.

A smooth random texture (white noise low-passed by a Gaussian of SIGMA px in
the Fourier domain, plus a brighter elliptic "tumour" blob), moved rigidly on
a breathing-like trajectory: frame k is the base image shifted by (dy_k,
dx_k) with dy_k = V sin(2 pi k / P)^2-ish... precisely
    dy_k = quarter(AV * (1 - cos(2 pi k / P)) / 2 * sign),  dx_k = quarter(AH * sin(2 pi k / P))
rounded to quarter pixels, never to a half (so the nearest integer shift is
unambiguous); dy_0 = dx_0 = 0. The shift is exact (Fourier phase, periodic
image), then Gaussian noise (NOISE grey levels) and rounding to 8 bits.
Frame k(r, c) = base(r - dy_k, c - dx_k): a template cut at (y, x) from frame 0
is found at (y + dy_k, x + dx_k) in frame k.

Writes OUT.y4m (grey YUV4MPEG2) and TRUTH.csv (frame,dy,dx); --crop
X,Y,W,H:FILE.pgm (repeatable) writes that rectangle of frame 0 as a PGM.

usage: make_tumor_clip.py OUT.y4m TRUTH.csv W H FRAMES AV AH [--seed S]
       [--period P] [--sigma SIGMA] [--noise NOISE] [--crop X,Y,W,H:FILE.pgm ...]
"""
import sys

import numpy as np


def quarter(v):
    q = np.round(v * 4.0) / 4.0
    frac = q - np.floor(q)
    if abs(frac - 0.5) < 1e-9:
        q -= 0.25
    return float(q)


def main(argv):
    pos, opt, crops = [], {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--crop':
            crops.append(argv[i + 1])
            i += 2
        elif a.startswith('--'):
            opt[a[2:]] = argv[i + 1]
            i += 2
        else:
            pos.append(a)
            i += 1
    if len(pos) != 7:
        sys.exit(__doc__)
    out, truth = pos[0], pos[1]
    w, h, n = int(pos[2]), int(pos[3]), int(pos[4])
    av, ah = float(pos[5]), float(pos[6])
    seed = int(opt.get('seed', 1))
    period = float(opt.get('period', 24))
    sigma = float(opt.get('sigma', 2.5))
    noise = float(opt.get('noise', 1.0))
    rng = np.random.default_rng(seed)
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.fftfreq(w)[None, :]
    spec = np.fft.fft2(rng.standard_normal((h, w)))
    spec *= np.exp(-2 * (np.pi * sigma) ** 2 * (fx ** 2 + fy ** 2))
    base = np.real(np.fft.ifft2(spec))
    base = (base - base.mean()) / base.std()
    yy, xx = np.mgrid[0:h, 0:w]
    blob = np.exp(-(((yy - 0.45 * h) / (0.12 * h)) ** 2 + ((xx - 0.55 * w) / (0.09 * w)) ** 2))
    base = 110 + 28 * base + 60 * blob
    fbase = np.fft.fft2(base)
    with open(out, 'wb') as f, open(truth, 'w') as t:
        f.write(b'YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n' % (w, h))
        t.write('frame,dy,dx\n')
        for k in range(n):
            ph = 2 * np.pi * k / period
            dy = quarter(av * (1 - np.cos(ph)) / 2 * (1 if (k // int(period)) % 2 == 0 else -1))
            dx = quarter(ah * np.sin(ph))
            img = np.real(np.fft.ifft2(fbase * np.exp(-2j * np.pi * (fy * dy + fx * dx))))
            img = img + noise * rng.standard_normal((h, w))
            u8 = np.clip(np.round(img), 0, 255).astype(np.uint8)
            if k == 0:
                for c in crops:
                    rect, path = c.split(':', 1)
                    x, y, cw, ch = (int(v) for v in rect.split(','))
                    with open(path, 'wb') as p:
                        p.write(b'P5\n%d %d\n255\n' % (cw, ch))
                        p.write(u8[y:y + ch, x:x + cw].tobytes())
            f.write(b'FRAME\n')
            f.write(u8.tobytes())
            t.write('%d,%g,%g\n' % (k, dy, dx))


if __name__ == '__main__':
    main(sys.argv[1:])
