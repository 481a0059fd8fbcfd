/* mgvf.c - motion gradient vector flow (seeds/000 section 3.2, eq. 3;
 * algorithm spec 5.4).
 *
 * Jacobi iterations on F (initially the normalised edge map E):
 *   F' = F + (mu/lambda) * sum_d H(v_d * D_d) * D_d,   D_d = F(neighbour d) - F
 *   F  <- F' - (1/lambda) * E * (F' - E)
 * over the 8 neighbours with replicated borders and motion direction
 * (vx, vy) = (1, 1), until mean |F_new - F| <= tol.
 *
 * H: the regularised Heaviside H_eps(z) = 1/2 + atan(z/eps)/pi has
 * eps = 1e-10; leuktrack uses its eps -> 0 limit, the step (H = 1 for
 * z > 0, else 0). The difference is bounded for every term: with
 * z = s*D (s = +-1 or +-2), |H_eps(z)*D - step(z)*D| = |D| * atan(eps/|z|)/pi
 * <= (eps/pi) * |D/z| <= eps/pi = 3.2e-11 (pi/2 - atan(x) = atan(1/x)), so
 * a new F differs from the regularised one's by at most
 * (mu/lambda) * 8 * 3.2e-11 = 2.6e-11 per iteration, below float
 * resolution wherever F > 4e-4 (tests/test_leuk_stages.c compares with the
 * regularised Heaviside in double). An exact atan for small |z| would buy
 * nothing (the same bound holds there) and costs a branch per pixel. With
 * vx = vy = 1 the UR and DL arguments are exactly 0 (H = 1/2). The eight
 * terms are added as a balanced tree ((U+D)+(L+R))+((UR+DR)+(UL+DL)), the
 * CUDA backend's order too: three dependent additions instead of seven on
 * its critical path. F is float; the convergence sum is double, accumulated
 * in row order (deterministic), and tested every LT_MGVF_CHECK_EVERY-th
 * iteration (leuktrack's choice, see leuk.h; the reference tests every
 * iteration). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leuk.h"

void lt_normalise(float *E, int n)
{
  float lo = E[0], hi = E[0];
  for (int i = 1; i < n; i++) {
    if (E[i] < lo) lo = E[i];
    if (E[i] > hi) hi = E[i];
  }
  double scale = 1.0 / ((double)hi - lo + 0x1p-52);
  for (int i = 0; i < n; i++) E[i] = (float)((E[i] - lo) * scale);
}

/* H(z) * d as the step: d where z > 0, else 0. */
static inline float stepv(float z, float d) { return z > 0.0f ? d : 0.0f; }

/* One pixel from its 3x3 neighbourhood (c = centre, e = E). */
static inline float pixel(float c, float e, float u, float d, float l, float r, float ur, float dr, float ul,
                          float dl, float ml, float il)
{
  float dU = u - c, dD = d - c, dL = l - c, dR = r - c;
  float dUR = ur - c, dDR = dr - c, dUL = ul - c, dDL = dl - c;
  float s = ((stepv(-dU, dU) + stepv(dD, dD)) + (stepv(-dL, dL) + stepv(dR, dR))) +
            ((0.5f * dUR + stepv(dDR, dDR)) + (stepv(-dUL, dUL) + 0.5f * dDL));
  float fp = c + ml * s;
  return fp - il * e * (fp - e);
}

/* Row i's interior pixels 1..w-2 (no border clamps: vectorises). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void row_interior(const float *restrict ru, const float *restrict rc, const float *restrict rd,
                         const float *restrict re, float *restrict ro, float *restrict ad, int w, float ml,
                         float il)
{
  for (int j = 1; j < w - 1; j++) {
    float fn = pixel(rc[j], re[j], ru[j], rd[j], rc[j - 1], rc[j + 1], ru[j + 1], rd[j + 1], ru[j - 1], rd[j - 1],
                     ml, il);
    ro[j] = fn;
    ad[j] = fabsf(fn - rc[j]);
  }
}

/* EXPERIMENT (issue 18, branch mgvfsolve): other orderings of the same
 * update, chosen by LT_MGVF_SOLVER in the environment (unset: Jacobi, the
 * code below). "rb": red-black, colour (i + j) % 2, the red pass reads the
 * old F, the black pass the red pixels' new values and its own colour's
 * (the diagonals') old ones; "c4": four colours (i % 2, j % 2), each pass
 * reads the neighbours of the colours done before it in this sweep new, the
 * rest old (Gauss-Seidel for the 9-point stencil). LT_MGVF_OMEGA: the
 * relaxation factor of the change (1). LT_MGVF_COARSE=1: start from the
 * MGVF of E downsampled 2x (2x2 means), upsampled (nearest). Two explicit
 * buffers: the result does not depend on the order within a pass. */
static int colour_of(int colours, int i, int j)
{
  return colours == 1 ? 0 : colours == 2 ? (i + j) & 1 : colours == 3 ? j & 1 : colours == 5 ? i & 1 : ((i & 1) << 1) | (j & 1);
}

static int mgvf_gs(const float *E, int w, int h, float *F, float *tmp, float ml, float il, double tol, int max_iter,
                   int colours, float omega)
{
  const char *lv = getenv("LT_MGVF_LOCAL");
  const int local = lv && atoi(lv);
  const size_t n = (size_t)w * h;
  float *cur = F, *nxt = tmp;
  int it = 0;
  while (it < max_iter) {
    const int check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == max_iter;
    double diff = 0.0;
    for (int k = 0; k < (colours == 4 ? 4 : colours == 1 ? 1 : 2); k++)
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          if (colour_of(colours, i, j) != k) continue;
          float v[3][3];
          for (int di = -1; di <= 1; di++)
            for (int dj = -1; dj <= 1; dj++) {
              int ii = i + di < 0 ? 0 : i + di >= h ? h - 1 : i + di;
              int jj = j + dj < 0 ? 0 : j + dj >= w ? w - 1 : j + dj;
              const float *src = colour_of(colours, ii, jj) < k ? nxt : cur;
              v[di + 1][dj + 1] = src[(size_t)ii * w + jj];
            }
          const float c = v[1][1];
          float fn = pixel(c, E[(size_t)i * w + j], v[0][1], v[2][1], v[1][0], v[1][2], v[0][2], v[2][2], v[0][0],
                           v[2][0], ml, il);
          if (local) { /* the pixel's own equation solved for the active neighbours of now */
            const float e = E[(size_t)i * w + j];
            const float u = v[0][1], d = v[2][1], l = v[1][0], r = v[1][2], ur = v[0][2], dr = v[2][2], ul = v[0][0],
                        dl = v[2][0];
            float W = 1.0f, S = 0.5f * (ur + dl); /* UR and DL: always 0.5 */
            if (u < c) W += 1.0f, S += u;
            if (d > c) W += 1.0f, S += d;
            if (l < c) W += 1.0f, S += l;
            if (r > c) W += 1.0f, S += r;
            if (dr > c) W += 1.0f, S += dr;
            if (ul < c) W += 1.0f, S += ul;
            const float a = 1.0f - il * e, den = il * e + ml * a * W;
            if (den > 1e-6f) fn = (ml * a * S + il * e * e) / den;
          }
          if (omega != 1.0f) fn = c + omega * (fn - c);
          nxt[(size_t)i * w + j] = fn;
          if (check) diff += fabsf(fn - c);
        }
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    if (check && diff / (double)n <= tol) break;
  }
  if (cur != F) memcpy(F, cur, sizeof(float) * n);
  return it;
}

static int mgvf_jacobi(const float *E, int w, int h, float *F, float *tmp, float ml, float il, double tol,
                       int max_iter);

/* The pixel's own equation solved for its active neighbours of now (the
 * fixed point of pixel() with the neighbours held), or pixel()'s value
 * where it has none to solve with. */
static inline float pixel_local(float c, float e, float u, float d, float l, float r, float ur, float dr, float ul,
                                float dl, float ml, float il)
{
  float W = 1.0f, S = 0.5f * (ur + dl); /* UR and DL: always 0.5 */
  if (u < c) W += 1.0f, S += u;
  if (d > c) W += 1.0f, S += d;
  if (l < c) W += 1.0f, S += l;
  if (r > c) W += 1.0f, S += r;
  if (dr > c) W += 1.0f, S += dr;
  if (ul < c) W += 1.0f, S += ul;
  const float a = 1.0f - il * e, den = il * e + ml * a * W;
  return den > 1e-6f ? (ml * a * S + il * e * e) / den : pixel(c, e, u, d, l, r, ur, dr, ul, dl, ml, il);
}

/* Four-colour sweeps in place: colour (i % 2, j % 2) in the order (0,0),
 * (0,1), (1,0), (1,1); no two pixels of one colour are neighbours, so the
 * result does not depend on the order within a colour (the two-buffer
 * mgvf_gs with colours = 4 gives the same bits). */
/* Row i's pixels j0, j0 + 2, ... (m of them, all interior: 1 <= j <= w - 2)
 * into ro[0..m), compact; ru, rc, rd, re point at pixel j0 of their rows. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void row_colour(const float *restrict ru, const float *restrict rc, const float *restrict rd,
                       const float *restrict re, float *restrict ro, int m, float ml, float il, float omega)
{
  for (int q = 0; q < m; q++) {
    const int j = 2 * q;
    const float c = rc[j];
    const float fn = pixel(c, re[j], ru[j], rd[j], rc[j - 1], rc[j + 1], ru[j + 1], rd[j + 1], ru[j - 1], rd[j - 1],
                           ml, il);
    ro[q] = c + omega * (fn - c);
  }
}

static int mgvf_c4(const float *E, int w, int h, float *F, float ml, float il, double tol, int max_iter, float omega,
                   int local)
{
  const size_t n = (size_t)w * h;
  float ro[2048];
  int it = 0;
  while (it < max_iter) {
    const int check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == max_iter;
    double diff = 0.0;
    for (int k = 0; k < 4; k++)
      for (int i = k >> 1; i < h; i += 2) {
        float *rc = F + (size_t)i * w;
        const float *ru = F + (size_t)(i > 0 ? i - 1 : 0) * w;
        const float *rd = F + (size_t)(i < h - 1 ? i + 1 : h - 1) * w;
        const float *re = E + (size_t)i * w;
        /* interior pixels of this colour: j = ja, ja + 2, ... <= w - 2 */
        const int ja = (k & 1) ? 1 : 2, m = w - 2 >= ja ? (w - 2 - ja) / 2 + 1 : 0;
        double a0 = 0.0;
        if (!local && m > 0) {
          row_colour(ru + ja, rc + ja, rd + ja, re + ja, ro, m, ml, il, omega);
          for (int q = 0; q < m; q++) {
            const int j = ja + 2 * q;
            if (check) a0 += fabsf(ro[q] - rc[j]);
            rc[j] = ro[q];
          }
        }
        for (int j = k & 1; j < w; j += 2) {
          if (!local && j >= 1 && j <= w - 2) continue; /* done above */
          const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
          const float c = rc[j];
          float fn = local ? pixel_local(c, re[j], ru[j], rd[j], rc[jl], rc[jr], ru[jr], rd[jr], ru[jl], rd[jl], ml, il)
                           : pixel(c, re[j], ru[j], rd[j], rc[jl], rc[jr], ru[jr], rd[jr], ru[jl], rd[jl], ml, il);
          fn = c + omega * (fn - c);
          rc[j] = fn;
          if (check) a0 += fabsf(fn - c);
        }
        if (check) diff += a0;
      }
    it++;
    if (check && diff / (double)n <= tol) break;
  }
  return it;
}

int lt_mgvf(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda,
            double tol, int max_iter)
{
  const float ml = (float)(mu / lambda), il = (float)(1.0 / lambda);
  const size_t n = (size_t)w * h;
  const char *sv = getenv("LT_MGVF_SOLVER"), *ov = getenv("LT_MGVF_OMEGA"), *cv = getenv("LT_MGVF_COARSE");
  const int colours = !sv ? 1 : !strcmp(sv, "rb") ? 2 : !strcmp(sv, "c4") ? 4 : !strcmp(sv, "col") ? 3 : !strcmp(sv, "row") ? 5 : 1;
  const float omega = ov ? (float)atof(ov) : 1.0f;
  memcpy(F, E, sizeof(float) * n);
  const char *dv = getenv("LT_MGVF_DUMP"); /* experiment: append w, h, E (one thread only) */
  if (dv) {
    FILE *df = fopen(dv, "ab");
    if (df) {
      fwrite(&w, sizeof w, 1, df);
      fwrite(&h, sizeof h, 1, df);
      fwrite(E, sizeof(float), n, df);
      fclose(df);
    }
  }
  int extra = 0;
  if (cv && atoi(cv) && w >= 6 && h >= 6) {
    const int w2 = w / 2, h2 = h / 2; /* an odd last row/column joins the one before */
    const size_t n2 = (size_t)w2 * h2;
    float *E2 = malloc(sizeof(float) * 3 * n2);
    if (E2) {
      float *F2 = E2 + n2, *T2 = F2 + n2;
      for (int i = 0; i < h2; i++)
        for (int j = 0; j < w2; j++) {
          const float *a = E + (size_t)(2 * i) * w + 2 * j;
          E2[(size_t)i * w2 + j] = 0.25f * (a[0] + a[1] + a[w] + a[w + 1]);
        }
      memcpy(F2, E2, sizeof(float) * n2);
      int it2 = colours == 1 && omega == 1.0f ? mgvf_jacobi(E2, w2, h2, F2, T2, ml, il, tol, max_iter)
                                             : mgvf_gs(E2, w2, h2, F2, T2, ml, il, tol, max_iter, colours, omega);
      for (int i = 0; i < h; i++)
        for (int j = 0; j < w; j++) {
          int i2 = i / 2 < h2 ? i / 2 : h2 - 1, j2 = j / 2 < w2 ? j / 2 : w2 - 1;
          F[(size_t)i * w + j] = F2[(size_t)i2 * w2 + j2];
        }
      extra = (int)(((long)it2 * (long)n2 + (long)n / 2) / (long)n); /* coarse updates in fine sweeps */
      free(E2);
    }
  }
  const char *fv = getenv("LT_MGVF_FAST");
  if (colours == 4 && (!fv || atoi(fv)))
    return extra + mgvf_c4(E, w, h, F, ml, il, tol, max_iter, omega, getenv("LT_MGVF_LOCAL") && atoi(getenv("LT_MGVF_LOCAL")));
  if (colours != 1 || omega != 1.0f) return extra + mgvf_gs(E, w, h, F, tmp, ml, il, tol, max_iter, colours, omega);
  return extra + mgvf_jacobi(E, w, h, F, tmp, ml, il, tol, max_iter);
}

static int mgvf_jacobi(const float *E, int w, int h, float *F, float *tmp, float ml, float il, double tol,
                       int max_iter)
{
  const size_t n = (size_t)w * h;
  float *cur = F, *nxt = tmp;
  float ad[4096];
  if (w > 4096) return 0; /* windows are at most 8*rmax+3 wide; the CLI bounds rmax */
  int it = 0;
  while (it < max_iter) {
    const int check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == max_iter;
    double diff = 0.0;
    for (int i = 0; i < h; i++) {
      const float *rc = cur + (size_t)i * w;
      const float *ru = cur + (size_t)(i > 0 ? i - 1 : 0) * w;
      const float *rd = cur + (size_t)(i < h - 1 ? i + 1 : h - 1) * w;
      const float *re = E + (size_t)i * w;
      float *ro = nxt + (size_t)i * w;
      if (w > 2) row_interior(ru, rc, rd, re, ro, ad, w, ml, il);
      for (int j = 0; j < w; j += (j == 0 && w > 2) ? w - 1 : 1) { /* the border columns */
        int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
        float fn = pixel(rc[j], re[j], ru[j], rd[j], rc[jl], rc[jr], ru[jr], rd[jr], ru[jl], rd[jl], ml, il);
        ro[j] = fn;
        ad[j] = fabsf(fn - rc[j]);
      }
      if (!check) continue;
      /* fixed-order sum in four lanes: deterministic, not latency bound */
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      int j = 0;
      for (; j + 3 < w; j += 4) {
        a0 += ad[j];
        a1 += ad[j + 1];
        a2 += ad[j + 2];
        a3 += ad[j + 3];
      }
      for (; j < w; j++) a0 += ad[j];
      diff += (a0 + a1) + (a2 + a3);
    }
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    if (check && diff / (double)n <= tol) break;
  }
  if (cur != F) memcpy(F, cur, sizeof(float) * n);
  return it;
}
