/* clg.h - combined local-global (CLG) optical flow, Bruhn, Weickert and
 * Schnörr (IJCV 2005) as used by seeds/003 (spec 4.4): the computational core
 * of the flow mode, with a CPU backend (clg.c) and a CUDA backend
 * (cuda/flow/clg.cu) behind one stage table.
 *
 * Energy (quadratic CLG with warping), for flow w = (u, v[, w]) in physical
 * units on a grid of spacing h (pixels: h = 1):
 *   E(w) = integral  w3^T J_rho w3 + alpha |grad w|^2,   w3 = (w - w0, 1)
 *   J_rho = K_rho * (grad3 I grad3 I^T)   (motion tensor, (dims+1)^2 symmetric)
 * where, at each warp, grad I = grad of (I0 + I1(x + w0)) / 2 (fourth-order
 * central differences), I_t = I1(x + w0) - I0 (time step 1), I0, I1 the
 * frames pre-smoothed with a Gaussian sigma, and w0 the current flow (the
 * linearisation point). The Euler-Lagrange equations
 *   (J_rho)_{c,.} (w - w0, 1)^T = alpha * Laplace(w_c),  c = 0..dims-1
 * (Neumann boundary: only neighbours inside the grid) are solved with
 * collective (point-block) Jacobi iterations: at each pixel the small
 * dims x dims system [J + alpha * sum_j 1/h_j^2] w = alpha * sum_j w_j / h_j^2
 * + J w0 - J_t is solved directly (Cramer, in double) from the previous
 * iterate's neighbours. Deterministic for any thread count.
 * Outer loops: `warps` re-linearisations per level inside a coarse-to-fine
 * pyramid of `levels` levels, downsampling factor eta (0.5) after an
 * anti-aliasing Gaussian of 0.6 * sqrt(1/eta^2 - 1) samples, bilinear
 * (trilinear) prolongation of the flow.
 *
 * Everything below runs over the dimension-generic grid of grid.h: a 2D
 * image is the grid nx * ny * 1, a volume nx * ny * nz, with the same code.
 * Anisotropic voxels: h = voxel size (mm); derivatives divide by h, the
 * smoothness weight of axis d is alpha / h_d^2, sigma and rho are in units
 * of the smallest spacing (a z spacing twice x's smooths half as many z
 * samples), and the flow is in the units of h (mm for a volume; divide by
 * h_d for voxels).
 *
 * Divergence (volume-preserving) term, Song and Leahy (IEEE TMI 1991) as in
 * seeds/003: E += beta * sum_i div(i)^2 with the forward-difference
 * divergence div(i) = sum_d [i + s_d inside] (w_d(i + s_d) - w_d(i)) / h_d
 * (0 across the far border: Neumann, like the smoothness term). Its
 * gradient enters the Euler-Lagrange equation of component k as
 *   beta / h_k * ([x_k > 0] div(i - s_k) - [x_k < n_k - 1] div(i)),
 * a consistent (symmetric, positive semi-definite) discretisation of
 * -beta grad(div w). In the collective Jacobi step the terms in w(i) go into
 * the point block (A[k][e] += beta [fw_k fw_e] / (h_k h_e), A[k][k] +=
 * beta [bw_k] / h_k^2), the others come from the previous iterate. Plain
 * point-block Jacobi diverges with this term (at the checkerboard mode the
 * smoothness term leaves no margin and the divergence operator's symbol,
 * up to 4 beta sum_d 1/h_d^2, exceeds twice its point block), so the step
 * is proximal: A[k][k] += tau, b[k] += tau w_k^old(i), tau = 2 beta
 * sum_d 1/h_d^2 (over the active axes), which makes 2 D - A positive
 * definite (convergence of Jacobi for a symmetric positive definite
 * system) without changing the fixed point. beta = 0
 * skips the term (plain CLG, bit-identical to the solver without it); beta
 * is on the scale of alpha (both multiply squared flow derivatives).
 *
 * Defaults (lt_flow_params_default): one set for all data, tuned on BOTH
 * Yosemite (yos9 -> yos10, non-sky mask) and FlyingChairs 0000000/0000001
 * by a coarse search (bench/flow_eval.c, 1 thread, this machine):
 *   alpha rho sigma lev warps iter | yos AEE/AAE  | chairs0 AEE | chairs1 AEE
 *    300   2   1     6    5    60  | 0.363/4.33   | 12.79       |  -
 *    300   2   1     4    2   150  | 0.126/2.76   |  7.68       | 3.18
 *    300   2   0.5   4    2   150  | 0.107/2.36   |  7.04       | 2.79
 *    300   2   0.5   3    2   150  | 0.115/2.42   |  5.85       | 2.20   <- chosen
 *    300   3   0.5   3    2   150  | 0.110/2.27   |  5.91       | 2.32
 *    200   2   0.5   3    2   150  | 0.114/2.51   |  5.94       | 2.08
 *    600   2   1     4    2   150  | 0.193/3.70   |  7.55       | 3.34
 *   1000   2   1     6    3   100  | 0.370/5.98   | 11.50       | 5.49
 *   (zero flow: yos 1.846 px, chairs0 6.053 px, chairs1 4.506 px)
 * Yosemite alone would take 4 levels; FlyingChairs' 60-80 px chair motions
 * are beyond what quadratic penalisers recover: more levels spread a
 * chair's motion over the background at the coarse levels (the smoothness
 * term is not robust), so 3 levels is the compromise. Large alpha needs
 * many more Jacobi iterations (slow convergence of smooth error modes). */
#ifndef LT_FLOW_CLG_H
#define LT_FLOW_CLG_H

#include "flow/grid.h"

#define LT_FLOW_DEFAULT_ALPHA 500.0f
#define LT_FLOW_DEFAULT_RHO 2.0f
#define LT_FLOW_DEFAULT_SIGMA 0.5f
#define LT_FLOW_DEFAULT_LEVELS 3
#define LT_FLOW_DEFAULT_WARPS 2
#define LT_FLOW_DEFAULT_ITERATIONS 10
#define LT_FLOW_DEFAULT_ETA 0.5f
#define LT_FLOW_DEFAULT_BETA 0.0f
#define LT_FLOW_DEFAULT_EPS_DATA 1.0f
#define LT_FLOW_DEFAULT_EPS_SMOOTH 0.03f
#define LT_FLOW_DEFAULT_OMEGA 1.8f
#define LT_FLOW_DEFAULT_LAG 10
/* The pyramid stops before an active axis gets shorter than this. */
#define LT_FLOW_MIN_SIZE 8
#define LT_FLOW_MAX_LEVELS 16
#define LT_FLOW_MAX_ITERATIONS 100000

typedef struct lt_flow_params {
  float alpha;    /* smoothness weight (> 0); intensities are 0..255 */
  float rho;      /* motion-tensor integration scale, samples of each level (>= 0) */
  float sigma;    /* pre-smoothing of both frames, samples of each level (>= 0) */
  int levels;     /* pyramid levels, 1 = none (capped by LT_FLOW_MIN_SIZE) */
  int warps;      /* re-linearisations per level (>= 1) */
  int iterations; /* relaxation iterations per warp on the finest level (>= 1);
                     level l (0 = finest) does iterations * 2^l */
  float eta;      /* pyramid downsampling factor, 0.25 .. 0.95 */
  float beta;     /* divergence (volume-preserving) weight (>= 0; 0 = plain CLG) */
  float eps_data;   /* Charbonnier scale of the data term, grey levels (0 = quadratic) */
  float eps_smooth; /* Charbonnier scale of the smoothness term, flow gradient (0 = quadratic) */
  float omega;      /* relaxation: 0 = Jacobi, 0 < omega < 2 = red-black SOR */
  int lag;          /* sweeps between updates of the lagged robust weights (>= 1) */
} lt_flow_params;

/* The defaults above. */
void lt_flow_params_default(lt_flow_params *p);
/* 0, or LT_ERR_USAGE after one lt_error naming the bad field. */
int lt_flow_params_check(const lt_flow_params *p);

/* --- the solver over a grid (2D now, 3D later) --- */
typedef struct lt_clg lt_clg;
/* Allocates every buffer for grid g (any later compute allocates nothing).
 * 0, LT_ERR_USAGE (bad params / grid) or LT_ERR_NOMEM. */
int lt_clg_create(lt_clg **out, const lt_flow_params *p, const lt_grid *g);
void lt_clg_destroy(lt_clg *c);
/* Flow from I0 to I1 (I0(x) ~ I1(x + w)), both lt_grid_size floats 0..255;
 * flow[0..dims-1] receive the components (physical units). Returns 0. */
int lt_clg_compute(lt_clg *c, const float *I0, const float *I1, float *const flow[]);
/* Iterations per warp on level l (0 = finest): iterations * 2^l, at most
 * LT_FLOW_MAX_ITERATIONS (shared by both backends). */
int lt_flow_level_iterations(const lt_flow_params *p, int l);
/* Levels actually used and the grid of level l (0 = finest). */
int lt_clg_levels(const lt_clg *c);
lt_grid lt_clg_level_grid(const lt_clg *c, int l);
/* Level grids and the restriction sigma, shared with the CUDA backend so
 * that both build the same pyramid. Returns the number of levels. */
int lt_flow_pyramid(const lt_flow_params *p, const lt_grid *g, lt_grid lev[LT_FLOW_MAX_LEVELS]);
double lt_flow_restrict_sigma(double eta);
/* Kernels per axis for a Gaussian of sigma in units of the smallest active
 * spacing of g (shared by both backends). 0 or LT_ERR_USAGE. */
int lt_flow_kernels(lt_gauss_kernel k[3], double sigma, const lt_grid *g);
/* Coefficients of the divergence term on grid g: ih[d] = 1 / h_d and
 * bb[a][b] = beta / (h_a h_b) (symmetric), shared with the CUDA backend. */
void lt_flow_div_coefs(const lt_flow_params *p, const lt_grid *g, double ih[3], double bb[3][3]);
/* SOR colouring (shared with the CUDA backend): red-black, colour
 * (x + y + z) % 2, without the divergence term; with it (which couples a
 * sample with its diagonal neighbours) 2^dims colours, (x % 2) + 2 (y % 2)
 * + 4 (z % 2). A pass over one colour reads only samples of other colours. */
static inline int lt_flow_colours(int dims, int div) { return div ? 1 << dims : 2; }
static inline int lt_flow_colour(const int pos[3], int div)
{
  return div ? (pos[0] & 1) | (pos[1] & 1) << 1 | (pos[2] & 1) << 2 : (pos[0] + pos[1] + pos[2]) & 1;
}
/* Bytes a backend allocates for grid g (host for CPU, device for CUDA, both
 * the same arena), so a caller can refuse a volume before any work. */
size_t lt_clg_bytes(const lt_flow_params *p, const lt_grid *g);

/* --- the backend stage table of the flow mode --- */
typedef struct lt_flow_backend {
  const char *name;
  /* Allocates everything for w x h pairs. 0 or a negative lt_err. */
  int (*create)(void **ctx, const lt_flow_params *p, int w, int h);
  void (*destroy)(void *ctx); /* accepts NULL */
  /* u, v: w*h floats each (pixels, +x right, +y down). 0 or a negative lt_err. */
  int (*compute)(void *ctx, const float *I0, const float *I1, float *u, float *v);
  /* Any grid (2D or 3D, anisotropic spacing): allocates everything for g. */
  int (*create_grid)(void **ctx, const lt_flow_params *p, const lt_grid *g);
  /* flow[0..dims-1]: lt_grid_size floats each, in the units of g->h. */
  int (*compute_grid)(void *ctx, const float *I0, const float *I1, float *const flow[]);
  /* Kernel launches (plus memcpy/memset nodes) of the last compute, 0 on
   * the CPU: what tests and benchmarks report. */
  long (*launches)(void *ctx);
} lt_flow_backend;

extern const lt_flow_backend lt_flow_backend_cpu;
/* cuda/flow/clg.cu: the same arithmetic, IEEE-rounded operation by operation
 * (no FMA contraction), on the GPU; every buffer allocated by create. */
extern const lt_flow_backend lt_flow_backend_cuda;


#endif
