/* evolve.c - the tracking active contour ("ellipseevolve"; seeds/000 section
 * 3.3, eq. 4; algorithm spec 5.5).
 *
 * A closed contour of 20 snaxels x_j = xc + r_j cos t_j, y_j = yc + r_j sin t_j
 * moves on the MGVF image F: with L the contour length and vf, vfx, vfy the
 * bilinear samples of F and of its normalised gradient at the snaxels,
 *   xc <- xc + dx * le * sum(vfx)/L
 *   yc <- (yc + dy * le * sum(vfy)/L + dy * lp * ey) / (1 + dy * lp)
 *   r_j <- (r_j + dr * le * vfr_j + dr * ls * R) / (1 + dr * ls),
 *   vfr_j = (vf_j + vfx_j (x_j - xc) + vfy_j (y_j - yc) - sum(vf)/L) / L
 * (dx = dy = dr = 0.2, le = 1, ls = 0.2, lp = 0.05), until the summed change
 * of all parameters is <= tol or a snaxel leaves the window. leuktrack uses
 * the cell's own radius as the size prior R and the re-localised position as
 * the path prior ey (the reference used R = 10 and the mean of the last ten
 * y); a zero gradient gives direction 0, not NaN. Double precision. */
#include <math.h>

#include "interp.h"
#include "leuk.h"

#define DELTA 0.2
#define L_EDGE 1.0
#define L_SIZE 0.2
#define L_PATH 0.05

double lt_snaxel_angle(int j) { return j * 2.0 * M_PI / LT_LEUK_SNAXELS; }

int lt_evolve(const float *F, int w, int h, float *fx, float *fy, double *xc, double *yc,
              double *r, double R, double ey, const lt_leuk_params *p)
{
  lt_gradient(F, w, h, fx, fy);
  for (size_t i = 0; i < (size_t)w * h; i++) {
    float m = sqrtf(fx[i] * fx[i] + fy[i] * fy[i]);
    if (m > 0) {
      fx[i] /= m;
      fy[i] /= m;
    }
  }
  double ct[LT_LEUK_SNAXELS], st[LT_LEUK_SNAXELS];
  for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
    ct[j] = cos(lt_snaxel_angle(j));
    st[j] = sin(lt_snaxel_angle(j));
  }
  double x = *xc, y = *yc;
  int it;
  for (it = 0; it < p->evolve_max_iter; it++) {
    double sx[LT_LEUK_SNAXELS], sy[LT_LEUK_SNAXELS];
    int out = 0;
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      sx[j] = x + r[j] * ct[j];
      sy[j] = y + r[j] * st[j];
      if (sx[j] < 0 || sx[j] > w - 1 || sy[j] < 0 || sy[j] > h - 1) out = 1;
    }
    if (out) break;
    double L = 0;
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      int k = (j + 1) % LT_LEUK_SNAXELS;
      L += hypot(sx[k] - sx[j], sy[k] - sy[j]);
    }
    if (!(L > 0)) break;
    double vf[LT_LEUK_SNAXELS], vfx[LT_LEUK_SNAXELS], vfy[LT_LEUK_SNAXELS];
    double sf = 0, sfx = 0, sfy = 0;
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      vf[j] = lt_interp(F, w, h, sx[j], sy[j]);
      vfx[j] = lt_interp(fx, w, h, sx[j], sy[j]);
      vfy[j] = lt_interp(fy, w, h, sx[j], sy[j]);
      sf += vf[j];
      sfx += vfx[j];
      sfy += vfy[j];
    }
    double vfmean = sf / L, vfxmean = sfx / L, vfymean = sfy / L;
    double nx = x + DELTA * L_EDGE * vfxmean;
    double ny = (y + DELTA * L_EDGE * vfymean + DELTA * L_PATH * ey) / (1 + DELTA * L_PATH);
    double diff = fabs(nx - x) + fabs(ny - y);
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) {
      double vfr = (vf[j] + vfx[j] * (sx[j] - x) + vfy[j] * (sy[j] - y) - vfmean) / L;
      double nr = (r[j] + DELTA * L_EDGE * vfr + DELTA * L_SIZE * R) / (1 + DELTA * L_SIZE);
      diff += fabs(nr - r[j]);
      r[j] = nr;
    }
    x = nx;
    y = ny;
    if (diff <= p->evolve_tol) {
      it++;
      break;
    }
  }
  *xc = x;
  *yc = y;
  return it;
}
