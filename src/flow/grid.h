/* grid.h - dimension-generic grid helpers of the CLG flow solver: one code
 * path for 2D images (nz = 1) and 3D volumes. A grid is nx*ny*nz samples,
 * x fastest (index = (z*ny + y)*nx + x), with spacing h[] per axis; an axis
 * of size 1 is inactive (no neighbours, no smoothing, no derivative).
 *
 * Every helper works out of place on caller-provided buffers and allocates
 * nothing, so the solver can allocate once per resolution. Boundaries are
 * half-sample symmetric (sample -1 = sample 0, n = n-1), the usual choice
 * for images (no artificial edge at the border). Rows (z, y) are
 * distributed over OpenMP threads; each output sample is computed by one
 * thread from inputs only, so results do not depend on the thread count. */
#ifndef LT_FLOW_GRID_H
#define LT_FLOW_GRID_H

#include <stddef.h>

#define LT_GRID_MAXDIM 3
/* Largest Gaussian radius (samples); the kernel is truncated at 3 sigma,
 * so sigma / h <= LT_GAUSS_RMAX / 3. */
#define LT_GAUSS_RMAX 48

typedef struct lt_grid {
  int n[LT_GRID_MAXDIM];   /* nx, ny, nz (>= 1; nz = 1 for 2D) */
  float h[LT_GRID_MAXDIM]; /* sample spacing per axis, physical units (1 for
                              pixels; a pyramid level has h * n_fine / n) */
} lt_grid;

/* A sampled, normalised 1-D Gaussian w[r + k], k = -r..r; r = 0 is the
 * identity (sigma <= 0). */
typedef struct lt_gauss_kernel {
  int r;
  float w[2 * LT_GAUSS_RMAX + 1];
} lt_gauss_kernel;

/* A 2D grid of w x h unit-spaced pixels. */
lt_grid lt_grid_2d(int w, int h);
/* Number of samples. */
size_t lt_grid_size(const lt_grid *g);
/* Number of active axes (size > 1), counted as the flow components: the
 * solver treats axes 0..dims-1 as active, so a 2D grid is nx, ny, nz = 1. */
int lt_grid_dims(const lt_grid *g);
/* Index step of axis d: 1, nx, nx*ny. */
size_t lt_grid_stride(const lt_grid *g, int d);

/* Kernel of standard deviation sigma (in samples), radius ceil(3 sigma).
 * Returns 0, or LT_ERR_USAGE (after lt_error) when the radius would exceed
 * LT_GAUSS_RMAX. */
int lt_gauss_kernel_make(lt_gauss_kernel *k, double sigma);

/* out = separable Gaussian of in, kernel k[d] along each active axis d.
 * in, out and tmp must be distinct buffers of lt_grid_size(g) floats. */
void lt_grid_gauss(const float *in, float *out, float *tmp, const lt_grid *g, const lt_gauss_kernel k[]);

/* out = d in / d x_d by the fourth-order central difference
 * (a[-2] - 8 a[-1] + 8 a[1] - a[2]) / (12 h_d), symmetric boundary; 0 for an
 * inactive axis. in != out. */
void lt_grid_deriv(const float *in, float *out, const lt_grid *g, int d);

/* Trilinear (bilinear when nz = 1) sample of a at continuous position
 * p[] (sample units), clamped to the grid. */
float lt_grid_sample(const float *a, const lt_grid *g, const float p[LT_GRID_MAXDIM]);

/* out (grid go) = in (grid gi) resampled: sample centres map as
 * x_in = (x_out + 0.5) * n_in / n_out - 0.5, trilinear interpolation, then
 * multiplied by scale. Used for restriction (after an anti-aliasing
 * Gaussian) and for prolongation of flow (scale 1: flow is in physical
 * units, and a coarser level has a larger spacing). */
void lt_grid_resample(const float *in, const lt_grid *gi, float *out, const lt_grid *go, float scale);

/* out(x) = in(x + f(x)): in sampled at the positions moved by the flow
 * components f[0..dims-1], which are in physical units (sample position
 * x_d + f_d / h_d), clamped at the border. */
void lt_grid_warp(const float *in, const float *const f[], float *out, const lt_grid *g);

/* out = div f = sum_d d f_d / d x_d (fourth-order central differences of
 * lt_grid_deriv, physical units: dimensionless for a flow in mm on a grid
 * in mm) over the active axes; tmp a scratch plane. */
void lt_grid_divergence(const float *const f[], float *out, float *tmp, const lt_grid *g);

#endif
