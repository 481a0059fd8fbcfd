/* clg.h - combined local-global (CLG) optical flow, Bruhn, Weickert and
 * Schnörr (IJCV 2005) as used by seeds/003 (spec 4.4): the computational core
 * of the flow mode, with a CPU backend (clg.c) and a CUDA backend
 * (cuda/flow/clg.cu) behind one stage table.
 *
 * Energy (CLG with warping, Bruhn et al.'s nonlinear form), for flow
 * w = (u, v[, w]) in physical units on a grid of spacing h (pixels: h = 1):
 *   E(w) = integral  psi_d(w3^T J_rho w3) + alpha psi_s(|grad w|^2),  w3 = (w - w0, 1)
 *   J_rho = K_rho * (grad3 I grad3 I^T)   (motion tensor, (dims+1)^2 symmetric)
 *   psi(s^2) = 2 eps^2 sqrt(1 + s^2 / eps^2)  (Charbonnier; eps = 0: s^2, quadratic)
 * with eps_data (grey levels) and eps_smooth (flow gradient), where, at each
 * warp, grad I = grad of (I0 + I1(x + w0)) / 2 (fourth-order central
 * differences), I_t = I1(x + w0) - I0 (time step 1), I0, I1 the frames
 * pre-smoothed with a Gaussian sigma, and w0 the current flow (the
 * linearisation point). The Euler-Lagrange equations, with lagged
 * nonlinearity (the weights psi' held fixed for `lag` iterations):
 *   wdat (J_rho)_{c,.} (w - w0, 1)^T = alpha * div(wsm grad w_c),  c = 0..dims-1
 *   wdat = psi_d'(w3^T J w3) = 1 / sqrt(1 + w3^T J w3 / eps_d^2),
 *   wsm = psi_s'(sum_c |grad w_c|^2) (central differences, one-sided at
 *   the border), neighbour weight alpha / h^2 (wsm(i) + wsm(j)) / 2
 * (Neumann boundary: only neighbours inside the grid), solved by
 * collective (point-block) relaxation: at each pixel the small dims x dims
 * system [wdat J + sum_j a_ij] w = sum_j a_ij w_j + wdat (J w0 - J_t) is
 * solved directly (Cramer, in double) from the neighbours' current values:
 * Jacobi (omega = 0: the previous iterate's), or red-black SOR (omega in
 * (0, 2): samples of colour (x + y + z) % 2 = 0, then 1, each pass in place
 * from the other colour, w <- w + omega (w_point - w)), which reaches the
 * same fixed point in far fewer iterations (tests/test_flow.c: 200 SOR
 * iterations = 5000 Jacobi's to 4e-6 px). Deterministic for any thread
 * count either way. Outer loops: `warps` re-linearisations per level inside
 * a coarse-to-fine pyramid of `levels` levels, downsampling factor eta
 * (0.5) after an anti-aliasing Gaussian of 0.6 * sqrt(1/eta^2 - 1)
 * samples, bilinear (trilinear) prolongation of the flow; level l (0 =
 * finest) does iterations * 2^l iterations per warp (the coarse levels are
 * cheap and start far from their solution).
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
 * -beta grad(div w). In the collective step the terms in w(i) go into
 * the point block (A[k][e] += beta [fw_k fw_e] / (h_k h_e), A[k][k] +=
 * beta [bw_k] / h_k^2), the others come from the neighbours. Plain
 * point-block Jacobi diverges with this term (at the checkerboard mode the
 * smoothness term leaves no margin and the divergence operator's symbol,
 * up to 4 beta sum_d 1/h_d^2, exceeds twice its point block), so the
 * Jacobi step is proximal: A[k][k] += tau, b[k] += tau w_k^old(i), tau =
 * 2 beta sum_d 1/h_d^2 (over the active axes), which makes 2 D - A positive
 * definite (convergence of Jacobi for a symmetric positive definite
 * system) without changing the fixed point. SOR needs no proximal term
 * (Gauss-Seidel converges for any symmetric positive definite system), but
 * the term couples a sample with its diagonal neighbours i - s_k + s_e, of
 * the same red-black colour: with beta > 0 SOR uses 2^dims colours
 * (x % 2, y % 2, z % 2; lt_flow_colour). beta = 0 skips the term; beta is
 * on the scale of alpha (both multiply squared flow derivatives).
 *
 * Defaults (lt_flow_params_default): one set for all data, tuned on BOTH
 * Yosemite (yos9 -> yos10, non-sky mask) and FlyingChairs 0000000/0000001
 * (nothing held out) by a coarse search (data/lt_flow_eval.c, 1 thread,
 * development machine); rho 2, sigma 0.5, 3 levels, 2 warps, lag 10
 * unless said:
 *   solver                     alpha eps_d eps_s iter      | yos AEE/AAE | ch0 AEE | ch1 AEE
 *   Jacobi, quadratic (before)  300   -     -    150       | 0.115/2.42  | 5.85    | 2.20
 *   Jacobi, quadratic           300   -     -    1000      | 0.112/2.41  | 5.95    | 2.07
 *   SOR 1.8, quadratic          300   -     -    40        | 0.111/2.40  | 5.95    | 2.08
 *   SOR 1.8                     300   3     -    40        | 0.105/2.25  | 5.50    | 2.05
 *   SOR 1.8                     300   -     0.1  40        | 0.112/2.38  | 6.41    | 1.76
 *   SOR 1.8                     300   3     0.1  40        | 0.103/2.17  | 5.23    | 1.70
 *   SOR 1.8                     300   1     0.1  40        | 0.099/2.00  |   -     |   -
 *   SOR 1.8                     300   1     0.05 40        | 0.096/1.92  |   -     |   -
 *   SOR 1.8                     500   1     0.05 40        | 0.099/1.89  | 4.99    | 1.76
 *   SOR 1.8                     500   1     0.03 40        | 0.096/1.84  | 4.91    | 1.65
 *   SOR 1.8                     800   1     0.03 40        | 0.104/1.88  | 4.95    | 1.77
 *   SOR 1.8, 4 levels           500   1     0.03 40        | 0.096/1.84  | 5.67    | 1.83
 *   SOR 1.8, eps_d 2            500   2     0.03 40        | 0.098/1.96  |   -     |   -
 *   SOR 1.8                     500   1     0.03 15/30/60  | 0.096/1.83  | 4.97    | 1.75
 *   SOR 1.8                     500   1     0.03 10/20/40  | 0.099/1.87  | 5.03    | 1.83  <- chosen
 *   SOR 1.8                     500   1     0.03 8/16/32   | 0.103/1.90  | 5.04    | 1.92
 *   (iter a/b/c: per warp on the finest/middle/coarsest level; a single
 *   number: every level. Zero flow: yos 1.791 px, ch0 6.053, ch1 4.506.
 *   OpenCV: TV-L1 0.127/2.39, 5.01, 1.16; Farneback 0.194/3.44, 8.70, 2.76.)
 * 10/20/40 trades 0.04 deg of Yosemite AAE against 15/30/60 for a third
 * less solver time (issue 14's 500 pairs/s at 640x480 on the H100). The
 * robust smoothness term is what lets alpha grow (motion edges stay sharp);
 * 4 levels still spread the chairs' 60-80 px motions over the background. */
#ifndef LT_FLOW_CLG_H
#define LT_FLOW_CLG_H

#include "flow/grid.h"

#define LT_FLOW_DEFAULT_ALPHA 500.0f
/* alpha for volumes (`flow --3d`, lt_flow3d): measured 2026-11-23 on the
 * known-motion tests of tests/test_flow3d.c (mean EPE, voxel: synthetic
 * smooth motion / fMRI / cardiac cine as 2D+t): 500: 0.508 / 0.636 / 0.637;
 * 100: 0.125 / 0.111 / 0.284; 50: 0.137 / 0.092 / 0.218; 30: 0.148 / 0.091 /
 * 0.196. The 3D smoothness term couples 6 neighbours and the volumes hold
 * less texture than video, so the 2D default over-smooths; 50 is the best
 * compromise of the three (no volume was held out of this choice). */
#define LT_FLOW_DEFAULT_ALPHA_3D 50.0f
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
  int lag;          /* iterations between updates of the lagged robust weights (>= 1) */
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
  /* Host memory for the planes compute writes (u, v): pinned on CUDA (the
   * download runs at the bus's speed, not through a pageable bounce
   * buffer); NULL on the CPU (malloc / free). NULL after one message. */
  void *(*host_alloc)(size_t bytes, const char *what);
  void (*host_free)(void *p); /* accepts NULL */
  /* The next pair of a sequence: I0 is the I1 of the last compute (which
   * the backend still holds), only I1 is new; I1b, when not NULL, holds
   * the same pixels as bytes (8-bit frames: a quarter of the upload). The
   * same result as compute. NULL: the caller uses compute. */
  int (*compute_next)(void *ctx, const float *I1, const unsigned char *I1b, float *u, float *v);
} lt_flow_backend;

extern const lt_flow_backend lt_flow_backend_cpu;
/* cuda/flow/clg.cu: the same arithmetic, IEEE-rounded operation by operation
 * (no FMA contraction), on the GPU; every buffer allocated by create. */
extern const lt_flow_backend lt_flow_backend_cuda;


#endif
