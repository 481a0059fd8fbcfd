/* vcm_common.h - helpers shared by test_vcm.c and test_vcm_cuda.c: the data
 * folder, a Middlebury .flo reader (the test's own; the product's .flo module
 * belongs to the flow mode), synthetic sequences with known motion, and the
 * endpoint error of a set of vectors against a motion function.
 *
 * Synthetic texture: f(x, y) = 128 + sum of 24 sinusoids of wavelength 5..40
 * px in random directions (fixed LCG seed), so any warp is sampled exactly
 * (no interpolation error); frames are rounded to integers like 8-bit video,
 * optionally with uniform noise. A point x of frame 0 moves to
 * A (x - c) + c + t in frame 1 (c = image centre), or, for the "two regions"
 * sequence, by tl left of column w/2 and by tr right of it. */
#ifndef LT_VCM_COMMON_H
#define LT_VCM_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcm/vcm.h"

static const char *vc_data_dir(void)
{
  const char *d = getenv("LT_DATA");
  return d && d[0] ? d : "../shared/data";
}

/* Middlebury .flo: "PIEH", int32 W, H, then H*W (u, v) float32, little-endian
 * (this machine is little-endian; checked by the tag). *uv malloc'ed. */
static inline int vc_read_flo(const char *path, float **uv, int *w, int *h)
{
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char tag[4];
  int32_t dim[2];
  int ok = fread(tag, 1, 4, f) == 4 && memcmp(tag, "PIEH", 4) == 0 && fread(dim, 4, 2, f) == 2 &&
           dim[0] > 0 && dim[1] > 0 && dim[0] < 100000 && dim[1] < 100000;
  if (ok) {
    size_t n = (size_t)dim[0] * dim[1] * 2;
    *uv = malloc(n * sizeof **uv);
    ok = *uv && fread(*uv, sizeof **uv, n, f) == n;
    if (!ok) free(*uv);
  }
  fclose(f);
  if (!ok) return -1;
  *w = dim[0];
  *h = dim[1];
  return 0;
}

typedef struct vc_motion {
  double a[4];       /* 2x2 matrix A (row-major) */
  double t[2];       /* translation */
  int two_regions;   /* 1: tl / tr by the column of the point instead of A, t */
  double tl[2], tr[2];
} vc_motion;

static void vc_motion_affine(vc_motion *m, double ang_deg, double zoom, double tx, double ty)
{
  double c = cos(ang_deg * M_PI / 180.0) * zoom, s = sin(ang_deg * M_PI / 180.0) * zoom;
  memset(m, 0, sizeof *m);
  m->a[0] = c;
  m->a[1] = -s;
  m->a[2] = s;
  m->a[3] = c;
  m->t[0] = tx;
  m->t[1] = ty;
}

/* Truth motion of the frame-0 point (x, y). */
static void vc_truth(const vc_motion *m, int w, int h, double x, double y, double *dx, double *dy)
{
  if (m->two_regions) {
    const double *v = x < w / 2 ? m->tl : m->tr;
    *dx = v[0];
    *dy = v[1];
    return;
  }
  double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0, X = x - cx, Y = y - cy;
  *dx = m->a[0] * X + m->a[1] * Y + cx + m->t[0] - x;
  *dy = m->a[2] * X + m->a[3] * Y + cy + m->t[1] - y;
}

typedef struct vc_texture {
  double kx[24], ky[24], ph[24], amp[24];
} vc_texture;

static uint32_t vc_lcg(uint32_t *s)
{
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static void vc_texture_make(vc_texture *t, uint32_t seed)
{
  for (int k = 0; k < 24; k++) {
    double lam = 5.0 + 35.0 * (vc_lcg(&seed) / 16777216.0);
    double dir = 2 * M_PI * (vc_lcg(&seed) / 16777216.0);
    t->kx[k] = 2 * M_PI / lam * cos(dir);
    t->ky[k] = 2 * M_PI / lam * sin(dir);
    t->ph[k] = 2 * M_PI * (vc_lcg(&seed) / 16777216.0);
    t->amp[k] = 8.0 + 8.0 * (vc_lcg(&seed) / 16777216.0);
  }
}

static double vc_texture_at(const vc_texture *t, double x, double y)
{
  double v = 128.0;
  for (int k = 0; k < 24; k++) v += t->amp[k] * sin(t->kx[k] * x + t->ky[k] * y + t->ph[k]);
  return v;
}

static float vc_quant(double v, double noise)
{
  v = floor(v + noise + 0.5);
  return (float)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Frames 0 and 1 of the sequence (w*h each, caller's buffers); noise = the
 * amplitude of uniform noise added before rounding (0 = none). */
static void vc_make_pair(const vc_motion *m, int w, int h, uint32_t seed, double noise, float *I0,
                         float *I1)
{
  vc_texture t;
  vc_texture_make(&t, seed);
  uint32_t ns = seed ^ 0x9e3779b9u;
  double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
  double det = m->a[0] * m->a[3] - m->a[1] * m->a[2];
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double n0 = noise * (2.0 * vc_lcg(&ns) / 16777216.0 - 1.0);
      double n1 = noise * (2.0 * vc_lcg(&ns) / 16777216.0 - 1.0);
      I0[(size_t)y * w + x] = vc_quant(vc_texture_at(&t, x, y), n0);
      double sx, sy; /* the frame-0 position that lands on (x, y) */
      if (m->two_regions) {
        /* each region's texture moves with it; the right region is on top */
        double rx = x - m->tr[0], ry = y - m->tr[1], lx = x - m->tl[0], ly = y - m->tl[1];
        if (rx >= w / 2) {
          sx = rx;
          sy = ry;
        } else {
          sx = lx;
          sy = ly;
        }
      } else {
        double X = x - cx - m->t[0], Y = y - cy - m->t[1];
        sx = (m->a[3] * X - m->a[1] * Y) / det + cx;
        sy = (-m->a[2] * X + m->a[0] * Y) / det + cy;
      }
      I1[(size_t)y * w + x] = vc_quant(vc_texture_at(&t, sx, sy), n1);
    }
}

/* Mean and max endpoint error of v[0..n) against m, counting only points
 * whose distance to the column w/2 is at least `away` when m has two regions. */
static inline double vc_epe(const vc_motion *m, int w, int h, const lt_vcm_vector *v, int n, double away,
                     double *maxe, int *used)
{
  double s = 0, mx = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (m->two_regions && fabs(v[i].x - w / 2.0) < away) continue;
    double dx, dy;
    vc_truth(m, w, h, v[i].x, v[i].y, &dx, &dy);
    double e = hypot(v[i].dx - dx, v[i].dy - dy);
    s += e;
    mx = e > mx ? e : mx;
    k++;
  }
  if (maxe) *maxe = mx;
  if (used) *used = k;
  return k ? s / k : NAN;
}

/* Endpoint error against a dense field uv (w*h (u, v) pairs), optionally
 * only where mask (0..255 floats) is nonzero. */
static inline double vc_epe_field(const float *uv, const float *mask, int w, const lt_vcm_vector *v, int n,
                           int *used)
{
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    size_t j = (size_t)v[i].y * w + (size_t)v[i].x;
    if (mask && !(mask[j] > 0)) continue;
    s += hypot(v[i].dx - uv[2 * j], v[i].dy - uv[2 * j + 1]);
    k++;
  }
  *used = k;
  return k ? s / k : NAN;
}

/* Runs one pair on a backend; returns n >= 0 or a negative lt_err. */
static inline int vc_run(const lt_vcm_backend *be, const lt_vcm_params *p, const float *I0, const float *I1,
                  int w, int h, lt_vcm_vector *out, int cap)
{
  void *ctx;
  int n = 0, e = be->create(&ctx, p, w, h);
  if (e) return e;
  e = be->pair(ctx, I0, I1, out, cap, &n);
  be->destroy(ctx);
  return e ? e : n;
}

#endif
