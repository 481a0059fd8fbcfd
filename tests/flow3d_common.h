/* flow3d_common.h - synthetic volumes and known 3D displacement fields
 * shared by tests/test_flow3d.c and tests/test_flow3d_cuda.c.
 *
 * A pair with known motion w (mm, along the voxel axes) is made without
 * interpolation error: I1 = T (an analytic smooth texture of the position in
 * mm) and I0(x) = T(x + w(x)), so that I0(x) = I1(x + w(x)) exactly, the
 * solver's convention. */
#ifndef LT_FLOW3D_COMMON_H
#define LT_FLOW3D_COMMON_H

#include <math.h>
#include <stdlib.h>

#include "flow/grid.h"

/* Smooth texture in 0..255: a sum of 3D plane waves of wavelengths 5-16 mm
 * with fixed pseudo-random directions and phases. */
__attribute__((unused)) static double tex3(double x, double y, double z)
{
  unsigned r = 2024;
  double s = 128;
  for (int k = 0; k < 20; k++) {
    double a[4];
    for (int j = 0; j < 4; j++) {
      r = r * 1103515245u + 12345u;
      a[j] = ((r >> 8) % 10000) / 10000.0;
    }
    double th = 2 * M_PI * a[0], ph = acos(2 * a[1] - 1), lam = 5.0 + 11.0 * a[2];
    double kx = sin(ph) * cos(th), ky = sin(ph) * sin(th), kz = cos(ph);
    s += 9.0 * sin(2 * M_PI * (kx * x + ky * y + kz * z) / lam + 2 * M_PI * a[3]);
  }
  return s;
}

/* Kinds of known motion. */
enum { MOT_SMOOTH = 0, MOT_ROTATION = 1 };

/* Displacement (mm) at voxel (i, j, k) of grid g: SMOOTH = a smooth
 * compressible field, max |w_d| / h_d = amp voxels per axis; ROTATION = a
 * divergence-free swirl about the z axis, w = (dpsi/dy, -dpsi/dx, 0) with a
 * Gaussian stream function psi (max |w| ~ amp voxels in x). */
__attribute__((unused)) static void motion3(int kind, const lt_grid *g, int i, int j, int k, double amp, double w[3])
{
  const double X = (i + 0.5) / g->n[0], Y = (j + 0.5) / g->n[1], Z = (k + 0.5) / g->n[2];
  if (kind == MOT_SMOOTH) {
    w[0] = amp * g->h[0] * sin(M_PI * Y) * cos(M_PI * (Z - 0.3)) * (0.6 + 0.4 * X);
    w[1] = amp * g->h[1] * 0.8 * cos(M_PI * (X - 0.5)) * sin(M_PI * Z);
    w[2] = amp * g->h[2] * 0.7 * sin(M_PI * X) * sin(M_PI * Y);
  } else {
    /* psi = A exp(-r^2 / (2 s^2)) in mm, centred; w = (dpsi/dy, -dpsi/dx) */
    const double x = (i - 0.5 * (g->n[0] - 1)) * g->h[0], y = (j - 0.5 * (g->n[1] - 1)) * g->h[1];
    const double s = 0.22 * fmin(g->n[0] * g->h[0], g->n[1] * g->h[1]);
    const double A = amp * g->h[0] * s * exp(0.5); /* max |grad psi| = A / s e^-1/2 */
    const double e = A * exp(-(x * x + y * y) / (2 * s * s)) / (s * s);
    const double zf = 0.75 + 0.25 * cos(M_PI * (Z - 0.5)); /* varies along z, still divergence-free */
    w[0] = -y * e * zf;
    w[1] = x * e * zf;
    w[2] = 0;
  }
}

/* Fills I0, I1 (n floats each) and the true flow gt[3] for grid g. */
__attribute__((unused)) static void make_pair3(int kind, const lt_grid *g, double amp, float *I0, float *I1, float *gt[3])
{
  size_t i = 0;
  for (int k = 0; k < g->n[2]; k++)
    for (int j = 0; j < g->n[1]; j++)
      for (int x = 0; x < g->n[0]; x++, i++) {
        double w[3];
        motion3(kind, g, x, j, k, amp, w);
        const double px = x * g->h[0], py = j * g->h[1], pz = k * g->h[2];
        I1[i] = (float)tex3(px, py, pz);
        I0[i] = (float)tex3(px + w[0], py + w[1], pz + w[2]);
        for (int d = 0; d < 3; d++) gt[d][i] = (float)w[d];
      }
}

/* Mean endpoint error in voxels ((e_d / h_d) per axis) over the voxels at
 * least `margin` from every border (the solver has no data where x + w
 * leaves the volume), and optionally only where mask[i] != 0. */
__attribute__((unused)) static double epe_vox(const lt_grid *g, float *const f[3], float *const gt[3], int margin, const unsigned char *mask)
{
  double s = 0;
  long cnt = 0;
  size_t i = 0;
  for (int k = 0; k < g->n[2]; k++)
    for (int j = 0; j < g->n[1]; j++)
      for (int x = 0; x < g->n[0]; x++, i++) {
        if (x < margin || j < margin || k < margin || x >= g->n[0] - margin || j >= g->n[1] - margin ||
            k >= g->n[2] - margin || (mask && !mask[i]))
          continue;
        double e = 0;
        for (int d = 0; d < 3; d++) {
          double q = (f[d][i] - gt[d][i]) / g->h[d];
          e += q * q;
        }
        s += sqrt(e);
        cnt++;
      }
  return cnt ? s / cnt : NAN;
}

#endif
