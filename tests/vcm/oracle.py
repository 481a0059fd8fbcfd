# tests/vcm/oracle.py - independent checks for tests/test_vcm_cli.sh (numpy;
# cv2 only for the Yosemite mask). Prints one line "RESULT ..." or exits 1.
#   oracle.py shift CSV DX DY          mean/max endpoint error against a translation
#   oracle.py rot CSV W H DEG          against a rotation about the frame centre
#   oracle.py gt CSV GT.flo MASK.png   against a ground-truth field at the points (mask > 0)
#   oracle.py flo FLO W H DX DY        a .flo file: size, known fraction, mean error vs a translation
#   oracle.py png PNG W H              a PNG: signature, IHDR size, RGB or palette
import sys, struct, zlib, numpy as np

def flo(p):
    with open(p, 'rb') as f:
        b = f.read()
    assert b[:4] == b'PIEH', 'bad tag'
    w, h = struct.unpack('<ii', b[4:12])
    assert len(b) == 12 + 8 * w * h, 'bad length'
    return np.frombuffer(b[12:], '<f4').reshape(h, w, 2)

def rows(p):
    v = np.loadtxt(p, delimiter=',', skiprows=1, ndmin=2)
    assert v.shape[0] > 0 and v.shape[1] == 8, 'no rows or wrong columns'
    return v

def report(e, extra=''):
    print('RESULT %.4f %.4f %d %s' % (e.mean(), e.max(), len(e), extra))

k = sys.argv[1]
if k == 'shift':
    v = rows(sys.argv[2]); dx, dy = float(sys.argv[3]), float(sys.argv[4])
    report(np.hypot(v[:, 5] - dx, v[:, 6] - dy))
elif k == 'rot':
    v = rows(sys.argv[2]); W, H, t = int(sys.argv[3]), int(sys.argv[4]), np.deg2rad(float(sys.argv[5]))
    x, y = v[:, 3] - (W - 1) / 2, v[:, 4] - (H - 1) / 2
    gx, gy = np.cos(t) * x - np.sin(t) * y - x, np.sin(t) * x + np.cos(t) * y - y
    report(np.hypot(v[:, 5] - gx, v[:, 6] - gy), '%.3f' % np.hypot(gx, gy).max())
elif k == 'gt':
    import cv2
    v = rows(sys.argv[2]); g = flo(sys.argv[3]); m = cv2.imread(sys.argv[4], cv2.IMREAD_GRAYSCALE)
    x, y = v[:, 3].astype(int), v[:, 4].astype(int)
    keep = m[y, x] > 0
    e = np.hypot(v[keep, 5] - g[y[keep], x[keep], 0], v[keep, 6] - g[y[keep], x[keep], 1])
    report(e)
elif k == 'flo':
    f = flo(sys.argv[2]); W, H, dx, dy = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    assert f.shape == (H, W, 2), 'size %s' % (f.shape,)
    known = np.abs(f).max(axis=2) < 1e9
    e = np.hypot(f[known, 0] - dx, f[known, 1] - dy)
    report(e, '%.4f' % known.mean())
elif k == 'png':
    b = open(sys.argv[2], 'rb').read(); W, H = int(sys.argv[3]), int(sys.argv[4])
    assert b[:8] == b'\x89PNG\r\n\x1a\n' and b[12:16] == b'IHDR', 'not a PNG'
    w, h, depth, ctype = struct.unpack('>IIBB', b[16:26])
    # RGB, or a palette (the overlay writer's smaller form, draw.h lt_canvas_write_png) with its PLTE
    assert (w, h, depth) == (W, H, 8) and ctype in (2, 3), 'IHDR %d %d %d %d' % (w, h, depth, ctype)
    assert ctype == 2 or b'PLTE' in b, 'palette PNG without PLTE'
    print('RESULT ok')
elif k == 'topng':  # topng IN.y4m OUTPREFIX: the frames as grey PNGs OUTPREFIX_000.png ...
    b = open(sys.argv[2], 'rb').read()
    hdr, rest = b.split(b'\n', 1)
    W = int([t for t in hdr.split() if t.startswith(b'W')][0][1:]); H = int([t for t in hdr.split() if t.startswith(b'H')][0][1:])
    frames = [rest[o + 6:o + 6 + W * H] for o in range(0, len(rest), 6 + W * H)]  # "FRAME\n" + mono plane
    for i, fr in enumerate(frames):
        px = fr[:W * H]
        raw = b''.join(b'\x00' + px[r * W:(r + 1) * W] for r in range(H))
        def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
        png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', W, H, 8, 0, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
        open('%s_%03d.png' % (sys.argv[3], i), 'wb').write(png)
    print('RESULT %d' % len(frames))
elif k == 'cells':
    # oracle.py cells CSV TRUTH.csv: vectors against a leukocyte clip's truth
    # (lt_synth/lt_synth2: frame,cell_id,x_px,y_px,radius_px,...). A point
    # inside a cell (distance <= radius + 1) moves with it (its centre from
    # frame t to t+1); one farther than radius + 3 + the cell's speed from
    # every cell is on the static background (motion 0); others are left out.
    # RESULT: cell vectors, their mean EPE, background vectors, the fraction of
    # those more than 2 px wrong, the fraction of all vectors longer than 7 px.
    v = np.loadtxt(sys.argv[2], delimiter=',', skiprows=1, ndmin=2)
    t = np.loadtxt(sys.argv[3], delimiter=',', skiprows=1, ndmin=2)
    pos = {(int(r[0]), int(r[1])): r for r in t}
    ec, eb = [], []
    for q in v:
        f, x, y = int(q[0]), q[3], q[4]
        cls, g = 0, (0.0, 0.0)
        for r in t[t[:, 0] == f]:
            d, n = np.hypot(x - r[2], y - r[3]), pos.get((f + 1, int(r[1])))
            if d <= r[4] + 1 and n is not None:
                cls, g = 1, (n[2] - r[2], n[3] - r[3])
                break
            if d <= r[4] + 3 + np.hypot(r[5], r[6]):
                cls = -1
        e = np.hypot(q[5] - g[0], q[6] - g[1])
        (ec if cls == 1 else eb if cls == 0 else []).append(e)
    ec, eb = np.array(ec), np.array(eb)
    L = np.hypot(v[:, 5], v[:, 6]) if len(v) else np.zeros(1)
    print('RESULT %d %.4f %d %.4f %.4f' % (len(ec), ec.mean() if len(ec) else 99, len(eb),
          (eb > 2).mean() if len(eb) else 0, (L > 7).mean()))
