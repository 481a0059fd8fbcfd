/* mgvf.c - motion gradient vector flow (seeds/000 section 3.2, eq. 3;
 * algorithm spec 5.4).
 *
 * Jacobi iterations on F (initially the normalised edge map E):
 *   F' = F + (mu/lambda) * sum_d H(v_d * D_d) * D_d,   D_d = F(neighbour d) - F
 *   F  <- F' - (1/lambda) * E * (F' - E)
 * over the 8 neighbours with replicated borders and motion direction
 * (vx, vy) = (1, 1), until mean |F_new - F| <= tol. H is the regularised
 * Heaviside 1/2 + atan(z/eps)/pi with eps = 1e-10, evaluated exactly for
 * |z| <= 1e-6 and as the step 0/1 beyond: there the exact H*D differs from
 * the step by at most eps/pi = 3.2e-11, far below float resolution of F, so
 * the result is the same and the loop vectorises. With vx = vy = 1 the UR
 * and DL arguments are exactly 0 (H = 1/2). The eight terms are added as a
 * balanced tree ((U+D)+(L+R))+((UR+DR)+(UL+DL)), the CUDA backend's order
 * too: three dependent additions instead of seven on its critical path. F is float; the convergence sum
 * is double, accumulated in row order (deterministic), and tested every
 * LT_MGVF_CHECK_EVERY-th iteration (leuktrack's choice, see leuk.h; the
 * reference tests every iteration). */
#include <math.h>
#include <string.h>

#include "leuk.h"

static inline float heav(float z)
{
  if (z > 1e-6f) return 1.0f;
  if (z < -1e-6f) return 0.0f;
  return 0.5f + atanf(z * 1e10f) * (float)M_1_PI;
}

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

/* One pixel, exact H; neighbours already gathered. */
static inline float pixel(float c, float e, float u, float d, float l, float r, float ur, float dr,
                          float ul, float dl, float ml, float il)
{
  float dU = u - c, dD = d - c, dL = l - c, dR = r - c;
  float dUR = ur - c, dDR = dr - c, dUL = ul - c, dDL = dl - c;
  float s = ((heav(-dU) * dU + heav(dD) * dD) + (heav(-dL) * dL + heav(dR) * dR)) +
            ((0.5f * dUR + heav(2.0f * dDR) * dDR) + (heav(-2.0f * dUL) * dUL + 0.5f * dDL));
  float fp = c + ml * s;
  return fp - il * e * (fp - e);
}

/* Step H as a select; equal to the exact function whenever no argument lies
 * in (0, 1e-6]. Such pixels are flagged in near[] (per pixel, and any-of in
 * the return value) and recomputed exactly by the caller with pixel(). Same
 * operations in the same order as pixel(). Integer flags keep the loop
 * vectorisable (a float reduction would not be, without fast-math). */
static inline float stepv(float z, float d) { return z > 1e-6f ? d : 0.0f; }
static inline int nearz(float z)
{
  float a = fabsf(z);
  return (a > 0.0f) & (a <= 1e-6f);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static int row_interior(const float *restrict ru, const float *restrict rc, const float *restrict rd,
                        const float *restrict re, float *restrict ro, float *restrict ad,
                        unsigned char *restrict near, int w, float ml, float il)
{
  int any = 0;
  for (int j = 1; j < w - 1; j++) {
    float c = rc[j];
    float dU = ru[j] - c, dD = rd[j] - c, dL = rc[j - 1] - c, dR = rc[j + 1] - c;
    float dUR = ru[j + 1] - c, dDR = rd[j + 1] - c, dUL = ru[j - 1] - c, dDL = rd[j - 1] - c;
    float s = ((stepv(-dU, dU) + stepv(dD, dD)) + (stepv(-dL, dL) + stepv(dR, dR))) +
              ((0.5f * dUR + stepv(2.0f * dDR, dDR)) + (stepv(-2.0f * dUL, dUL) + 0.5f * dDL));
    int nz = nearz(dU) | nearz(dD) | nearz(dL) | nearz(dR) | nearz(2.0f * dDR) | nearz(2.0f * dUL);
    near[j] = (unsigned char)nz;
    any |= nz;
    float fp = c + ml * s;
    float fn = fp - il * re[j] * (fp - re[j]);
    ro[j] = fn;
    ad[j] = fabsf(fn - c);
  }
  return any;
}

int lt_mgvf(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda,
            double tol, int max_iter)
{
  const float ml = (float)(mu / lambda), il = (float)(1.0 / lambda);
  const size_t n = (size_t)w * h;
  memcpy(F, E, sizeof(float) * n);
  float *cur = F, *nxt = tmp;
  float ad[4096];
  unsigned char nearf[4096];
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
      int any = w > 2 ? row_interior(ru, rc, rd, re, ro, ad, nearf, w, ml, il) : 0;
      for (int j = 0; j < w; j++) {
        if (j > 0 && j < w - 1) {
          if (!any) j = w - 1; /* only the last border pixel left */
          else if (!nearf[j]) continue;
        }
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
