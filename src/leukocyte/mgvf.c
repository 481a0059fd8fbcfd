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
 * and DL arguments are exactly 0 (H = 1/2). F is float; the convergence sum
 * is double, accumulated in row order (deterministic). */
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

int lt_mgvf(const float *E, int w, int h, float *F, float *tmp, double mu, double lambda,
            double tol, int max_iter)
{
  const float ml = (float)(mu / lambda), il = (float)(1.0 / lambda);
  const size_t n = (size_t)w * h;
  memcpy(F, E, sizeof(float) * n);
  float *cur = F, *nxt = tmp;
  int it = 0;
  while (it < max_iter) {
    double diff = 0.0;
    for (int i = 0; i < h; i++) {
      const float *rc = cur + (size_t)i * w;
      const float *ru = cur + (size_t)(i > 0 ? i - 1 : 0) * w;
      const float *rd = cur + (size_t)(i < h - 1 ? i + 1 : h - 1) * w;
      const float *re = E + (size_t)i * w;
      float *ro = nxt + (size_t)i * w;
      double rowd = 0.0;
      for (int j = 0; j < w; j++) {
        int jl = j > 0 ? j - 1 : 0, jr = j < w - 1 ? j + 1 : w - 1;
        float c = rc[j];
        float dU = ru[j] - c, dD = rd[j] - c, dL = rc[jl] - c, dR = rc[jr] - c;
        float dUR = ru[jr] - c, dDR = rd[jr] - c, dUL = ru[jl] - c, dDL = rd[jl] - c;
        float s = heav(-dU) * dU;
        s += heav(dD) * dD;
        s += heav(-dL) * dL;
        s += heav(dR) * dR;
        s += 0.5f * dUR;
        s += heav(2.0f * dDR) * dDR;
        s += heav(-2.0f * dUL) * dUL;
        s += 0.5f * dDL;
        float fp = c + ml * s;
        float fn = fp - il * re[j] * (fp - re[j]);
        ro[j] = fn;
        rowd += fabsf(fn - c);
      }
      diff += rowd;
    }
    it++;
    float *t = cur;
    cur = nxt;
    nxt = t;
    if (diff / (double)n <= tol) break;
  }
  if (cur != F) memcpy(F, cur, sizeof(float) * n);
  return it;
}
