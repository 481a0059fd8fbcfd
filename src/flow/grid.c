/* grid.c - dimension-generic helpers of the CLG solver: separable Gaussian,
 * fourth-order derivative, trilinear sampling, resampling and warping; see
 * grid.h. Loops run over rows (z, y) with x innermost; an axis is reached
 * through its index stride, so the same code serves 2D and 3D. */
#include "flow/grid.h"

#include <math.h>
#include <string.h>

#include "error.h"
#include "log.h"

lt_grid lt_grid_2d(int w, int h)
{
  lt_grid g = {{w, h, 1}, {1.0f, 1.0f, 1.0f}};
  return g;
}

size_t lt_grid_size(const lt_grid *g) { return (size_t)g->n[0] * g->n[1] * g->n[2]; }

int lt_grid_dims(const lt_grid *g) { return g->n[2] > 1 ? 3 : 2; }

size_t lt_grid_stride(const lt_grid *g, int d) { return d == 0 ? 1 : d == 1 ? (size_t)g->n[0] : (size_t)g->n[0] * g->n[1]; }

int lt_gauss_kernel_make(lt_gauss_kernel *k, double sigma)
{
  memset(k, 0, sizeof *k);
  if (!(sigma > 0)) {
    k->w[0] = 1.0f;
    return 0;
  }
  int r = (int)ceil(3.0 * sigma);
  if (r > LT_GAUSS_RMAX) {
    lt_error("Gaussian sigma %g is too large (at most %g samples)", sigma, LT_GAUSS_RMAX / 3.0);
    return LT_ERR_USAGE;
  }
  double sum = 0, w[2 * LT_GAUSS_RMAX + 1];
  for (int i = -r; i <= r; i++) sum += w[i + r] = exp(-0.5 * i * i / (sigma * sigma));
  for (int i = 0; i <= 2 * r; i++) k->w[i] = (float)(w[i] / sum);
  k->r = r;
  return 0;
}

/* Half-sample symmetric index: -1 -> 0, n -> n-1, repeated for far reaches. */
static inline int reflect(int i, int n)
{
  while (i < 0 || i >= n) i = i < 0 ? -1 - i : 2 * n - 1 - i;
  return i;
}

/* Coordinates of row r (0 .. ny*nz-1): y and z. */
static inline void row_yz(const lt_grid *g, long r, int *y, int *z)
{
  *y = (int)(r % g->n[1]);
  *z = (int)(r / g->n[1]);
}

/* One 1-D convolution pass along axis d (size > 1). */
static void conv_axis(const float *in, float *out, const lt_grid *g, int d, const lt_gauss_kernel *k)
{
  const int nx = g->n[0], n = g->n[d], r = k->r;
  const long rows = (long)g->n[1] * g->n[2];
  const size_t s = lt_grid_stride(g, d);
  const float *w = k->w + r;
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int c[3];
    row_yz(g, row, &c[1], &c[2]);
    const float *a = in + (size_t)row * nx;
    float *o = out + (size_t)row * nx;
    for (int x = 0; x < nx; x++) {
      c[0] = x;
      const int p = c[d];
      const float *base = a + x - (ptrdiff_t)p * (ptrdiff_t)s; /* sample 0 of this line */
      float acc = w[0] * base[(size_t)p * s];
      if (p - r >= 0 && p + r < n) {
        for (int j = 1; j <= r; j++) acc += w[j] * (base[(size_t)(p - j) * s] + base[(size_t)(p + j) * s]);
      } else {
        for (int j = 1; j <= r; j++)
          acc += w[j] * (base[(size_t)reflect(p - j, n) * s] + base[(size_t)reflect(p + j, n) * s]);
      }
      o[x] = acc;
    }
  }
}

void lt_grid_gauss(const float *in, float *out, float *tmp, const lt_grid *g, const lt_gauss_kernel k[])
{
  int axes[LT_GRID_MAXDIM], na = 0;
  for (int d = 0; d < LT_GRID_MAXDIM; d++)
    if (g->n[d] > 1 && k[d].r > 0) axes[na++] = d;
  if (na == 0) {
    memcpy(out, in, lt_grid_size(g) * sizeof *out);
    return;
  }
  /* ping-pong so that the last pass lands in out */
  const float *src = in;
  for (int i = 0; i < na; i++) {
    float *dst = (na - 1 - i) % 2 == 0 ? out : tmp;
    conv_axis(src, dst, g, axes[i], &k[axes[i]]);
    src = dst;
  }
}

void lt_grid_deriv(const float *in, float *out, const lt_grid *g, int d)
{
  const int nx = g->n[0], n = g->n[d];
  const long rows = (long)g->n[1] * g->n[2];
  if (n < 2) {
    memset(out, 0, lt_grid_size(g) * sizeof *out);
    return;
  }
  const size_t s = lt_grid_stride(g, d);
  const float inv = 1.0f / (12.0f * g->h[d]);
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int c[3];
    row_yz(g, row, &c[1], &c[2]);
    const float *a = in + (size_t)row * nx;
    float *o = out + (size_t)row * nx;
    for (int x = 0; x < nx; x++) {
      c[0] = x;
      const int p = c[d];
      const float *base = a + x - (ptrdiff_t)p * (ptrdiff_t)s;
      float m2 = base[(size_t)reflect(p - 2, n) * s], m1 = base[(size_t)reflect(p - 1, n) * s];
      float p1 = base[(size_t)reflect(p + 1, n) * s], p2 = base[(size_t)reflect(p + 2, n) * s];
      o[x] = ((m2 - p2) + 8.0f * (p1 - m1)) * inv;
    }
  }
}

/* Clamped position -> lower index i0 and weight t of index i0 + 1. */
static inline void locate(float p, int n, int *i0, float *t)
{
  if (!(p > 0.0f)) p = 0.0f; /* also NaN */
  if (p > (float)(n - 1)) p = (float)(n - 1);
  int i = (int)p;
  if (i > n - 2) i = n - 2 > 0 ? n - 2 : 0;
  *i0 = i;
  *t = n > 1 ? p - (float)i : 0.0f;
}

float lt_grid_sample(const float *a, const lt_grid *g, const float p[LT_GRID_MAXDIM])
{
  int i[3];
  float t[3];
  size_t st[3];
  for (int d = 0; d < 3; d++) {
    locate(p[d], g->n[d], &i[d], &t[d]);
    st[d] = g->n[d] > 1 ? lt_grid_stride(g, d) : 0;
  }
  const float *b = a + i[0] + (size_t)i[1] * g->n[0] + (size_t)i[2] * g->n[0] * g->n[1];
  /* bilinear in the x-y plane, then along z (skipped for nz = 1: t = 0) */
  float r[2];
  for (int k = 0; k < (g->n[2] > 1 ? 2 : 1); k++) {
    const float *q = b + k * st[2];
    float lo = q[0] + t[0] * (q[st[0]] - q[0]);
    float hi = q[st[1]] + t[0] * (q[st[1] + st[0]] - q[st[1]]);
    r[k] = lo + t[1] * (hi - lo);
  }
  return g->n[2] > 1 ? r[0] + t[2] * (r[1] - r[0]) : r[0];
}

void lt_grid_resample(const float *in, const lt_grid *gi, float *out, const lt_grid *go, float scale)
{
  const int nx = go->n[0];
  const long rows = (long)go->n[1] * go->n[2];
  float f[3];
  for (int d = 0; d < 3; d++) f[d] = (float)gi->n[d] / (float)go->n[d];
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int y, z;
    row_yz(go, row, &y, &z);
    float p[3] = {0, (y + 0.5f) * f[1] - 0.5f, (z + 0.5f) * f[2] - 0.5f};
    float *o = out + (size_t)row * nx;
    for (int x = 0; x < nx; x++) {
      p[0] = (x + 0.5f) * f[0] - 0.5f;
      o[x] = scale * lt_grid_sample(in, gi, p);
    }
  }
}

void lt_grid_warp(const float *in, const float *const f[], float *out, const lt_grid *g)
{
  const int nx = g->n[0], dims = lt_grid_dims(g);
  const long rows = (long)g->n[1] * g->n[2];
  float ih[3];
  for (int d = 0; d < 3; d++) ih[d] = 1.0f / g->h[d];
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int y, z;
    row_yz(g, row, &y, &z);
    size_t i = (size_t)row * nx;
    for (int x = 0; x < nx; x++, i++) {
      float p[3] = {(float)x, (float)y, (float)z};
      for (int d = 0; d < dims; d++) p[d] += f[d][i] * ih[d];
      out[i] = lt_grid_sample(in, g, p);
    }
  }
}

void lt_grid_divergence(const float *const f[], float *out, float *tmp, const lt_grid *g)
{
  const size_t n = lt_grid_size(g);
  const int dims = lt_grid_dims(g);
  lt_grid_deriv(f[0], out, g, 0);
  for (int d = 1; d < dims; d++) {
    lt_grid_deriv(f[d], tmp, g, d);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] += tmp[i];
  }
}
