import sys, numpy as np
# tests/vcm/make_video.py - synthetic video with known motion for tests/test_vcm_cli.sh
# (numpy only, so that it also runs where OpenCV and the ffmpeg CLI are absent).
# gen.py OUT.y4m W H FRAMES MODE [ARG]: a textured video with known motion.
# MODE: shift DX DY (per frame), rot DEG (per frame, about the centre),
# flat (uniform grey), noise (one texture per frame). Texture: white noise
# blurred by a Gaussian (sigma 2 px), contrast stretched to 20..235, sampled
# bilinearly (smooth enough that bilinear sampling is accurate).
out, W, H, N, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
a = [float(x) for x in sys.argv[6:]]
rng = np.random.default_rng(7)
P = 64 + (int(N * max(abs(x) for x in a)) if mode == 'shift' else 0)  # room for the whole motion
TW, TH = W + 2 * P, H + 2 * P
z = rng.standard_normal((TH, TW))
f = np.fft.fft2(z)
ky = np.fft.fftfreq(TH)[:, None]; kx = np.fft.fftfreq(TW)[None, :]
s = 2.0
z = np.real(np.fft.ifft2(f * np.exp(-2 * (np.pi * s) ** 2 * (kx ** 2 + ky ** 2))))
z = (z - z.min()) / (z.max() - z.min()) * 215 + 20
def sample(X, Y):
    X = X + P; Y = Y + P
    x0 = np.floor(X).astype(int); y0 = np.floor(Y).astype(int)
    fx = X - x0; fy = Y - y0
    x0 = np.clip(x0, 0, TW - 2); y0 = np.clip(y0, 0, TH - 2)
    return ((1 - fy) * ((1 - fx) * z[y0, x0] + fx * z[y0, x0 + 1]) + fy * ((1 - fx) * z[y0 + 1, x0] + fx * z[y0 + 1, x0 + 1]))
yy, xx = np.mgrid[0:H, 0:W].astype(float)
cx, cy = (W - 1) / 2, (H - 1) / 2
with open(out, 'wb') as o:
    o.write(b'YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n' % (W, H))
    for k in range(N):
        if mode == 'shift':   # I_k(q) = T(q - k d)
            img = sample(xx - k * a[0], yy - k * a[1])
        elif mode == 'rot':   # I_k(q) = T(R^-k (q - c) + c)
            t = -np.deg2rad(a[0]) * k
            img = sample(np.cos(t) * (xx - cx) - np.sin(t) * (yy - cy) + cx, np.sin(t) * (xx - cx) + np.cos(t) * (yy - cy) + cy)
        elif mode == 'flat':
            img = np.full((H, W), 128.0)
        else:
            img = sample(xx + 37 * k, yy + 11 * k)
        o.write(b'FRAME\n')
        o.write(np.clip(np.rint(img), 0, 255).astype(np.uint8).tobytes())
