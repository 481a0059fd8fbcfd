/* gicov.c - image gradient and the GICOV circle score (seeds/000 eq. 1;
 * algorithm spec sections 3.1-3.3).
 *
 * For a circle of radius rho centred at (x, y), g_n is the outward radial
 * component of the gradient at the n-th of N sample points,
 *   g_n = Gx(y + dy_n, x + dx_n) cos(t_n) + Gy(y + dy_n, x + dx_n) sin(t_n),
 * with integer offsets dx_n = trunc(rho cos t_n), dy_n = trunc(rho sin t_n),
 * t_n = 2 pi n / N. GICOV = mean(g) / std(g) (sample std, N-1). Its sign
 * says whether the cell is brighter (+) or darker (-) than its rim; the map
 * keeps the sign. The winning circle maximises mean^2/var. Both the map
 * (lt_gicov_map, the detections' hot loop) and lt_gicov_at (the tracking's
 * scores) sum in float with fused multiply-adds, shifted by the circle's
 * first sample so that the one-pass variance does not cancel, and take the
 * mean and variance in double: the map each pixel's samples in stencil
 * order (detect.cu), lt_gicov_at in LT_GICOV_LANES interleaved partials
 * (track.cu's gicov_lanes): the CUDA backend's operations, so both give the
 * same bits for any threads. The fused multiply-adds: on x86 the hot loops
 * come in versions for the CPU (lt_gicov_fma below), all with the same bits. */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fmaexact.h"
#include "leuk.h"
#include "log.h"

void lt_leuk_params_default(lt_leuk_params *p)
{
  memset(p, 0, sizeof *p);
  p->rmin = 8;
  p->rmax = 20;
  p->rstep = 1;
  p->npoints = 150;
  p->gicov_threshold = 1.8;
  p->dilate_radius = 12;
  p->detect_every = 10;
  p->snake_iter = 20;
  p->snake_delta = 3.0;
  p->snake_dt = 0.02;
  p->border = 1.0;
  p->mgvf_mu = 0.5;
  p->mgvf_lambda = 8 * 0.5 + 1;
  p->mgvf_tol = 1e-5;
  p->mgvf_max_iter = 500;
  p->mgvf_col = 1.8; /* issue 18: the column two-colour SOR (LT_MGVF_COL=0: Jacobi) */
  p->evolve_tol = 0.1;
  p->evolve_max_iter = 1000;
  p->search = 8;
  p->lost_fraction = 0.5;
  p->appearance = 0.7; /* issue 15, twelfth pass: tuning seeds 7-60 of real/realref (docs/ACCURACY.md) */
  p->entry_band = 1;
  p->detect_early = 2;
  p->link_gap = 5;
  p->gicov_adapt = 2.0;
  p->adapt_floor = 1.0;
  p->static_span = 10;
  p->static_ratio = 1.5;
  p->hold = 20;
  p->hold_move = 0.5;
  p->hold_gicov = 1.6;
  p->faint_first = 0.8;
  p->recheck = 0; /* off: it costs ~40 % of the H100 frame on the real clip and gained no cell held out (docs/ACCURACY.md) */
  p->recheck_search = 6;
  p->motion = 0;
  p->motion_gate = 0.8;
  p->motion_miss = 3;
  p->motion_edge = 3;
}

int lt_leuk_nradii(const lt_leuk_params *p)
{
  return (p->rmax - p->rmin) / p->rstep + 1;
}

void lt_gradient(const float *m, int w, int h, float *gx, float *gy)
{
  for (int i = 0; i < h; i++) {
    const float *row = m + (size_t)i * w;
    float *ox = gx + (size_t)i * w;
    if (w == 1) {
      ox[0] = 0.0f;
    } else {
      ox[0] = row[1] - row[0];
      for (int j = 1; j < w - 1; j++) ox[j] = (row[j + 1] - row[j - 1]) * 0.5f;
      ox[w - 1] = row[w - 1] - row[w - 2];
    }
  }
  for (int i = 0; i < h; i++) {
    float *oy = gy + (size_t)i * w;
    if (h == 1) {
      for (int j = 0; j < w; j++) oy[j] = 0.0f;
      continue;
    }
    const float *up = m + (size_t)(i > 0 ? i - 1 : i) * w;
    const float *dn = m + (size_t)(i < h - 1 ? i + 1 : i) * w;
    float scale = (i > 0 && i < h - 1) ? 0.5f : 1.0f;
    for (int j = 0; j < w; j++) oy[j] = (dn[j] - up[j]) * scale;
  }
}

int lt_stencil_init(lt_stencil *s, const lt_leuk_params *p)
{
  memset(s, 0, sizeof *s);
  int nr = lt_leuk_nradii(p);
  if (nr < 1 || nr > LT_LEUK_MAX_RADII || p->npoints < 3) return LT_ERR_USAGE;
  s->npoints = p->npoints;
  s->nradii = nr;
  s->cosv = malloc(sizeof(double) * p->npoints);
  s->sinv = malloc(sizeof(double) * p->npoints);
  s->dx = malloc(sizeof(int) * p->npoints * nr);
  s->dy = malloc(sizeof(int) * p->npoints * nr);
  if (!s->cosv || !s->sinv || !s->dx || !s->dy) {
    lt_stencil_free(s);
    lt_error("out of memory (circle stencils)");
    return LT_ERR_NOMEM;
  }
  for (int n = 0; n < p->npoints; n++) {
    /* The reference's angle table used pi = 3.14159 (Q7); leuktrack uses
     * the exact value. reference_geometry (tests) also restores the common border rmax+2,
     * so that a test can show the map
     * reproduces the reference's maxima counts exactly with its table. */
    double t = n * 2.0 * (p->reference_geometry ? 3.14159 : M_PI) / p->npoints;
    s->cosv[n] = cos(t);
    s->sinv[n] = sin(t);
  }
  s->border_all = p->reference_geometry ? p->rmin + (nr - 1) * p->rstep + 2 : 0;
  for (int k = 0; k < nr; k++) {
    s->radius[k] = p->rmin + k * p->rstep;
    for (int n = 0; n < p->npoints; n++) {
      s->dx[k * p->npoints + n] = (int)(s->cosv[n] * s->radius[k]);
      s->dy[k * p->npoints + n] = (int)(s->sinv[n] * s->radius[k]);
    }
  }
  return 0;
}

void lt_stencil_free(lt_stencil *s)
{
  if (!s) return;
  free(s->cosv);
  free(s->sinv);
  free(s->dx);
  free(s->dy);
  memset(s, 0, sizeof *s);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LT_FMA_X86 1
#else
#define LT_FMA_X86 0
#endif

/* Which fused multiply-add the GICOV loops use, chosen once from the CPU:
 * on x86 LT_FMA_HW (x86-64-v3: the loops' AVX2 + FMA versions, fmaf
 * inline), LT_FMA_LIBM (FMA or FMA4 without the rest of x86-64-v3: libm's
 * fmaf, which glibc's ifunc runs in hardware), LT_FMA_SOFT (no FMA: the
 * exact emulation of fmaexact.h; glibc's fmaf is a software routine there:
 * a 640x219 map 14.5 s against 1.2 s emulated, docs/PERFORMANCE.md).
 * Elsewhere fmaf (aarch64: one instruction). LT_GICOV_FMA=soft or =libm in
 * the environment, or lt_gicov_fma_force, takes that path on any CPU (a
 * test aid). */
static atomic_int fma_path = -1;

static int fma_choose(void)
{
  const char *e = getenv("LT_GICOV_FMA");
  if (e && strcmp(e, "soft") == 0) return LT_FMA_SOFT;
  if (e && strcmp(e, "libm") == 0) return LT_FMA_LIBM;
  if (e && *e) lt_warn("LT_GICOV_FMA=%s ignored (soft or libm)", e);
#if LT_FMA_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v3")) return LT_FMA_HW;
  if (__builtin_cpu_supports("fma") || __builtin_cpu_supports("fma4")) return LT_FMA_LIBM;
  return LT_FMA_SOFT;
#else
  return LT_FMA_HW;
#endif
}

int lt_gicov_fma(void)
{
  /* every thread that finds it unset chooses the same: a benign race */
  int m = atomic_load_explicit(&fma_path, memory_order_relaxed);
  if (m < 0) {
    m = fma_choose();
    atomic_store_explicit(&fma_path, m, memory_order_relaxed);
  }
  return m;
}

void lt_gicov_fma_force(int path)
{
  atomic_store_explicit(&fma_path, path == LT_FMA_SOFT || path == LT_FMA_LIBM ? path : -1, memory_order_relaxed);
}

/* a * b + c rounded once: the loops' bodies take soft as a constant */
static inline __attribute__((always_inline)) float fma_by(int soft, float a, float b, float c)
{
  return soft ? lt_fmaf_exact(a, b, c) : fmaf(a, b, c);
}

/* The mean and variance (N - 1) of the N samples g0 + d from the shift g0
 * and the float sums of d (sample 0's d = 0 not among them), in double:
 * detect.cu's circle_stats_n and track.cu's gicov_lanes do these operations. */
static inline void gicov_stats(float g0, float sum, float sq, int n, double *mean, double *var)
{
  const double N = n, s1 = sum, m1 = s1 / N;
  *mean = (double)g0 + m1;
  *var = ((double)sq - s1 * m1) / (N - 1.0);
}

/* lt_gicov_at's sums: the map's arithmetic (below: the shift k = sample 0's
 * g, each further sample's d = fma(gx, cos, fma(gy, sin, -k)), sum += d,
 * sq = fma(d, d, sq), in float), each sample n into LT_GICOV_LANES
 * interleaved partials (n % LANES; sample 0's d = 0 not added), combined
 * pairwise by halves: the order in which the CUDA backend adds them across
 * the lanes of a thread group (track.cu's gicov_lanes, a shuffle
 * butterfly), so both backends give the same bits. */
static inline __attribute__((always_inline)) void
gicov_at_body(const float *img, int w, size_t pix, const int *dx, const int *dy, const double *cosv,
              const double *sinv, int npoints, float *k, float *sum, float *sq, int soft)
{
  float ps[LT_GICOV_LANES] = {0}, pq[LT_GICOV_LANES] = {0};
  const float *p0 = img + pix + (ptrdiff_t)dy[0] * w + dx[0];
  const float k0 = fma_by(soft, (p0[1] - p0[-1]) * 0.5f, (float)cosv[0], ((p0[w] - p0[-w]) * 0.5f) * (float)sinv[0]);
  for (int n = 1; n < npoints; n++) {
    const float *p = img + pix + (ptrdiff_t)dy[n] * w + dx[n];
    float gxv = (p[1] - p[-1]) * 0.5f, gyv = (p[w] - p[-w]) * 0.5f;
    float d = fma_by(soft, gxv, (float)cosv[n], fma_by(soft, gyv, (float)sinv[n], -k0));
    ps[n % LT_GICOV_LANES] += d;
    pq[n % LT_GICOV_LANES] = fma_by(soft, d, d, pq[n % LT_GICOV_LANES]);
  }
  for (int o = LT_GICOV_LANES / 2; o > 0; o /= 2)
    for (int i = 0; i < o; i++) {
      ps[i] += ps[i + o];
      pq[i] += pq[i + o];
    }
  *k = k0;
  *sum = ps[0];
  *sq = pq[0];
}

typedef void gicov_at_fn(const float *img, int w, size_t pix, const int *dx, const int *dy, const double *cosv,
                         const double *sinv, int npoints, float *k, float *sum, float *sq);
#if LT_FMA_X86
__attribute__((target("arch=x86-64-v3"))) static void
gicov_at_hw(const float *img, int w, size_t pix, const int *dx, const int *dy, const double *cosv,
            const double *sinv, int npoints, float *k, float *sum, float *sq)
{
  gicov_at_body(img, w, pix, dx, dy, cosv, sinv, npoints, k, sum, sq, 0);
}
#endif
static void gicov_at_libm(const float *img, int w, size_t pix, const int *dx, const int *dy, const double *cosv,
                          const double *sinv, int npoints, float *k, float *sum, float *sq)
{
  gicov_at_body(img, w, pix, dx, dy, cosv, sinv, npoints, k, sum, sq, 0);
}
static void gicov_at_soft(const float *img, int w, size_t pix, const int *dx, const int *dy, const double *cosv,
                          const double *sinv, int npoints, float *k, float *sum, float *sq)
{
  gicov_at_body(img, w, pix, dx, dy, cosv, sinv, npoints, k, sum, sq, 1);
}

static gicov_at_fn *gicov_at_sums_for(int path)
{
#if LT_FMA_X86
  if (path == LT_FMA_HW) return gicov_at_hw;
#endif
  return path == LT_FMA_SOFT ? gicov_at_soft : gicov_at_libm;
}

double lt_gicov_at(const float *img, int w, int h, int x, int y, const lt_stencil *s, int k)
{
  /* The gradient is taken on the fly with central differences, which is
   * what lt_gradient gives at every stencil point, because the circle plus
   * one pixel must lie inside the image. */
  int rad = s->radius[k] + 1;
  if (x - rad < 0 || y - rad < 0 || x + rad >= w || y + rad >= h) return 0.0;
  float g0, sum, sq;
  gicov_at_sums_for(lt_gicov_fma())(img, w, (size_t)y * w + x, s->dx + k * s->npoints, s->dy + k * s->npoints, s->cosv, s->sinv, s->npoints,
                &g0, &sum, &sq);
  double mean, var;
  gicov_stats(g0, sum, sq, s->npoints, &mean, &var);
  if (!(var > 0.0)) return 0.0;
  return mean / sqrt(var);
}

/* The map's sample arithmetic (detect.cu does the same operations): the
 * outward gradient less the pixel's first sample's g0 = fma(gx, cos, gy sin)
 * (k, the shift), d = fma(gx, cos, fma(gy, sin, -k)), summed as sum += d,
 * sq = fma(d, d, sq), in float. fmaf rounds once, the same on every
 * machine and on the GPU (on x86 in hardware, through libm or emulated
 * exactly: lt_gicov_fma). In float the gradient is half the bytes of
 * double, the arithmetic twice the H100's FP64 rate and the fused
 * operations 4 instead of 7 a sample; the shift keeps sq - sum^2 / N from
 * cancelling when the samples are nearly equal (a large |GICOV|).
 * gicov_stats turns the sums into the mean and variance in double. */
static inline __attribute__((always_inline)) void
accumulate_body(const float *restrict px, const float *restrict py, float c, float s, const float *restrict k,
                float *restrict sum, float *restrict sq, int n, int soft)
{
  for (int j = 0; j < n; j++) {
    float d = fma_by(soft, px[j], c, fma_by(soft, py[j], s, -k[j]));
    sum[j] += d;
    sq[j] = fma_by(soft, d, d, sq[j]);
  }
}

typedef void accumulate_fn(const float *restrict px, const float *restrict py, float c, float s,
                           const float *restrict k, float *restrict sum, float *restrict sq, int n);
#if LT_FMA_X86
__attribute__((target("arch=x86-64-v3"))) static void
accumulate_hw(const float *restrict px, const float *restrict py, float c, float s, const float *restrict k,
              float *restrict sum, float *restrict sq, int n)
{
  accumulate_body(px, py, c, s, k, sum, sq, n, 0);
}
#endif
static void accumulate_libm(const float *restrict px, const float *restrict py, float c, float s,
                            const float *restrict k, float *restrict sum, float *restrict sq, int n)
{
  accumulate_body(px, py, c, s, k, sum, sq, n, 0);
}
static void accumulate_soft(const float *restrict px, const float *restrict py, float c, float s,
                            const float *restrict k, float *restrict sum, float *restrict sq, int n)
{
  accumulate_body(px, py, c, s, k, sum, sq, n, 1);
}

static accumulate_fn *accumulate_for(int path)
{
#if LT_FMA_X86
  if (path == LT_FMA_HW) return accumulate_hw;
#endif
  return path == LT_FMA_SOFT ? accumulate_soft : accumulate_libm;
}

void lt_gicov_map(const float *gx, const float *gy, int w, int h, const lt_stencil *s,
                  float *gicov, unsigned char *radius_idx)
{
  /* Circle k is evaluated where it and its gradient stencil fit: at least
   * radius_k + 1 px from every border (what lt_gicov_at requires), so cells
   * are found as soon as they are inside the image. The reference used one
   * border, rmax + 2, for all radii (border_all). */
  const int N = s->npoints;
  const int path = lt_gicov_fma(), soft = path == LT_FMA_SOFT;
  accumulate_fn *accumulate = accumulate_for(path);
  memset(gicov, 0, sizeof(float) * (size_t)w * h);
  if (radius_idx) memset(radius_idx, 0, (size_t)w * h);
  int bmin = s->border_all ? s->border_all : s->radius[0] + 1;
  if (w <= 2 * bmin || h <= 2 * bmin) return;

#pragma omp parallel
  {
    double *best = malloc(sizeof(double) * w);
    float *sum = malloc(sizeof(float) * 3 * w);
    float *sq = sum ? sum + w : NULL, *k0 = sum ? sum + 2 * w : NULL;
    int *bk = malloc(sizeof(int) * w);
#pragma omp for schedule(static)
    for (int r = bmin; r < h - bmin; r++) {
      if (!sum || !bk || !best) continue; /* reported below */
      for (int j = 0; j < w; j++) { best[j] = 0.0; bk[j] = -1; }
      float *out = gicov + (size_t)r * w;
      for (int k = 0; k < s->nradii; k++) {
        int b = s->border_all ? s->border_all : s->radius[k] + 1;
        if (r < b || r >= h - b || w - 2 * b <= 0) continue;
        int c0 = b, n = w - 2 * b; /* columns [b, w - b) */
        memset(sum, 0, sizeof(float) * 2 * w);
        /* the shift: sample 0's g, whose own d is 0 (not added) */
        const size_t off0 = (size_t)(r + s->dy[k * N]) * w + c0 + s->dx[k * N];
        const float cf0 = (float)s->cosv[0], sf0 = (float)s->sinv[0];
        for (int j = 0; j < n; j++) k0[j] = fma_by(soft, gx[off0 + j], cf0, gy[off0 + j] * sf0);
        for (int t = 1; t < N; t++) {
          const size_t off = (size_t)(r + s->dy[k * N + t]) * w + c0 + s->dx[k * N + t];
          accumulate(gx + off, gy + off, (float)s->cosv[t], (float)s->sinv[t], k0, sum, sq, n);
        }
        for (int j = 0; j < n; j++) {
          double mean, var;
          gicov_stats(k0[j], sum[j], sq[j], N, &mean, &var);
          double score = var > 0.0 ? mean * mean / var : 0.0;
          if (score > best[c0 + j]) {
            best[c0 + j] = score;
            bk[c0 + j] = k;
            out[c0 + j] = (float)(mean / sqrt(var));
          }
        }
      }
      if (radius_idx)
        for (int j = 0; j < w; j++) radius_idx[(size_t)r * w + j] = (unsigned char)(bk[j] < 0 ? 0 : bk[j]);
    }
    if (!sum || !bk || !best) lt_error("out of memory (GICOV)");
    free(best);
    free(sum);
    free(bk);
  }
}
