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
 * iteration).
 *
 * lt_mgvf_col (the default since issue 18, omega 1.8; LT_MGVF_COL in the
 * environment sets omega, 0: lt_mgvf, Jacobi as the reference; CPU and
 * CUDA backends): the same per-pixel update in two
 * colours by column (j % 2), over-relaxed, with two buffers. Pass 1 sets
 * the even columns of the new field from the current field; pass 2 the odd
 * columns from their own column's current values and the columns beside
 * them (diagonals included) of the new field (the even columns just made);
 * a column clamped at the border is the pixel's own, read current. Each
 * change times omega. No two pixels of one pass read each other's new
 * values, so a pass is parallel over its pixels and any order gives the
 * same bits (the CUDA dense kernel walks a column's strip in the
 * transposed layout, each pass over half the columns). Same stopping rule
 * as lt_mgvf; the change summed in double per row, pass by pass. A
 * departure from the reference (which iterates Jacobi): the same fixed
 * point in about half the iterations, but stopped by the same rule at
 * another F, so the tracks differ from Jacobi's by hundredths of a pixel
 * (docs/ACCURACY.md). */
#include <math.h>
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

/* The end of a sweep over two buffers (lt_mgvf, lt_mgvf_col): the new
 * field becomes the current one; whether the stopping rule holds (mean
 * |change| <= tol on a checked sweep). */
static int swap_done(float **cur, float **nxt, int check, double diff, size_t n, double tol)
{
  float *t = *cur;
  *cur = *nxt;
  *nxt = t;
  return check && diff / (double)n <= tol;
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

int lt_mgvf(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda,
            double tol, int max_iter)
{
  const float ml = (float)(mu / lambda), il = (float)(1.0 / lambda);
  const size_t n = (size_t)w * h;
  memcpy(F, E, sizeof(float) * n);
  float *cur = F, *nxt = tmp;
  float ad[4096];
  if (w > 4096) return 0; /* windows are at most 4*rmax+5 wide; the CLI bounds rmax */
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
    if (swap_done(&cur, &nxt, check, diff, n, tol)) break;
  }
  if (cur != F) memcpy(F, cur, sizeof(float) * n);
  return it;
}

/* Pass p's pixels j = ja, ja + 2, ... (m of them, all with both columns
 * beside them in the window) of one row into ro at the same stride, and
 * their |change| into ad[0..m): the centre column (rc, ru, rd: its rows
 * here, above, below) and E (re) at j, the columns beside it (sc, su, sd)
 * at j - 1 and j + 1; all point at pixel ja of their rows. In pass 2 sc
 * and ro are the same row of the new field, but ro writes only the odd
 * columns and sc reads only the even ones: no element is both written and
 * read through another pointer, as restrict requires (without it the
 * compiler's overlap check sent pass 2 to the scalar loop). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void row_pass(const float *restrict ru, const float *restrict rc, const float *restrict rd,
                     const float *restrict su, const float *restrict sc, const float *restrict sd,
                     const float *restrict re, float *restrict ro, float *restrict ad, int m, float ml, float il,
                     float omega)
{
  for (int q = 0; q < m; q++) {
    const int j = 2 * q;
    const float c = rc[j];
    const float fn = pixel(c, re[j], ru[j], rd[j], sc[j - 1], sc[j + 1], su[j + 1], sd[j + 1], su[j - 1], sd[j - 1],
                           ml, il);
    const float fs = c + omega * (fn - c);
    ro[j] = fs;
    ad[q] = fabsf(fs - c);
  }
}

int lt_mgvf_col(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda, double omega,
                double tol, int max_iter)
{
  const float ml = (float)(mu / lambda), il = (float)(1.0 / lambda), om = (float)omega;
  const size_t n = (size_t)w * h;
  memcpy(F, E, sizeof(float) * n);
  float *cur = F, *nxt = tmp;
  float ad[2048];
  if (w > 4096) return 0; /* as lt_mgvf */
  int it = 0;
  while (it < max_iter) {
    const int check = (it + 1) % LT_MGVF_CHECK_EVERY == 0 || it + 1 == max_iter;
    double diff = 0.0;
    for (int k = 0; k < 2; k++) {
      /* pass k's columns beside a pixel: the even ones new in pass 1 */
      const float *side = k ? nxt : cur;
      for (int i = 0; i < h; i++) {
        const size_t iu = (size_t)(i > 0 ? i - 1 : 0) * w, ic = (size_t)i * w,
                     id = (size_t)(i < h - 1 ? i + 1 : h - 1) * w;
        /* the pass's pixels off the border columns: ja, ja + 2, ... <= w - 2 */
        const int ja = k ? 1 : 2, m = w - 2 >= ja ? (w - 2 - ja) / 2 + 1 : 0;
        if (m > 0)
          row_pass(cur + iu + ja, cur + ic + ja, cur + id + ja, side + iu + ja, side + ic + ja, side + id + ja,
                   E + ic + ja, nxt + ic + ja, ad, m, ml, il, om);
        double a = 0.0;
        if (check)
          for (int q = 0; q < m; q++) a += ad[q];
        /* and on the border columns: a clamped column beside a pixel is
         * its own (old) column */
        for (int b = 0; b < 2; b++) {
          const int j = b ? w - 1 : 0;
          if ((j & 1) != k || (b && j == 0)) continue;
          const int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
          const float *sl = jl == j ? cur : side, *sr = jr == j ? cur : side;
          const float c = cur[ic + j];
          const float fn = pixel(c, E[ic + j], cur[iu + j], cur[id + j], sl[ic + jl], sr[ic + jr], sr[iu + jr],
                                 sr[id + jr], sl[iu + jl], sl[id + jl], ml, il);
          const float fs = c + om * (fn - c);
          nxt[ic + j] = fs;
          if (check) a += fabsf(fs - c);
        }
        if (check) diff += a;
      }
    }
    it++;
    if (swap_done(&cur, &nxt, check, diff, n, tol)) break;
  }
  if (cur != F) memcpy(F, cur, sizeof(float) * n);
  return it;
}
