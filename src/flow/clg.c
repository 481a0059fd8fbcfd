/* clg.c - the CPU backend of CLG optical flow (see clg.h for the equations).
 *
 * Data layout: every field is a float plane of lt_grid_size samples, x
 * fastest. The motion tensor is kept as its (dims+1)(dims+2)/2 distinct
 * components J[jx(a,b)], a <= b, the last index being time. All buffers live
 * in one allocation made by lt_clg_create, sized for the finest level and
 * reused by the coarser ones; the pyramids of both frames are kept per
 * level. compute() allocates nothing.
 *
 * Per level (coarse to fine): prolongate the flow (or start from 0),
 * pre-smooth both frames (sigma), then `warps` times: warp I1 by the flow,
 * derivatives, tensor products smoothed by rho, `iterations` Jacobi sweeps.
 * Each Jacobi sweep reads the previous iterate only (ping-pong buffers), so
 * OpenMP's row split cannot change a result. */
#include "flow/clg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

#define NJ 10 /* tensor components for dims = 3 */

struct lt_clg {
  lt_flow_params p;
  int nlev, dims;
  lt_grid lev[LT_FLOW_MAX_LEVELS];
  lt_gauss_kernel ks[3], kr[3], ka[3]; /* sigma, rho, anti-aliasing per axis */
  float *pyr0[LT_FLOW_MAX_LEVELS], *pyr1[LT_FLOW_MAX_LEVELS]; /* level 0 unused: the input */
  float *s0, *s1, *w1, *avg, *tmp, *tmp2;
  float *D[4], *J[NJ], *f[3], *fn[3], *f0[3];
  float *wdat, *wsm; /* lagged robust weights: data term, smoothness diffusivity */
  float *arena;
};

/* Index of tensor component (a, b), a, b in 0..dims (dims = time). */
static inline int jx(int a, int b, int dims)
{
  if (a > b) {
    int t = a;
    a = b;
    b = t;
  }
  /* row-major upper triangle of a (dims+1) x (dims+1) matrix */
  return a * (dims + 1) - a * (a - 1) / 2 + (b - a);
}

void lt_flow_params_default(lt_flow_params *p)
{
  p->alpha = LT_FLOW_DEFAULT_ALPHA;
  p->rho = LT_FLOW_DEFAULT_RHO;
  p->sigma = LT_FLOW_DEFAULT_SIGMA;
  p->levels = LT_FLOW_DEFAULT_LEVELS;
  p->warps = LT_FLOW_DEFAULT_WARPS;
  p->iterations = LT_FLOW_DEFAULT_ITERATIONS;
  p->eta = LT_FLOW_DEFAULT_ETA;
  p->beta = LT_FLOW_DEFAULT_BETA;
  p->eps_data = LT_FLOW_DEFAULT_EPS_DATA;
  p->eps_smooth = LT_FLOW_DEFAULT_EPS_SMOOTH;
  p->omega = LT_FLOW_DEFAULT_OMEGA;
  p->lag = LT_FLOW_DEFAULT_LAG;
}

int lt_flow_params_check(const lt_flow_params *p)
{
  const char *bad = NULL;
  if (!(p->alpha > 0 && p->alpha < 1e9f)) bad = "alpha must be > 0";
  else if (!(p->rho >= 0 && p->rho <= LT_GAUSS_RMAX / 3.0f)) bad = "rho must be in 0..16";
  else if (!(p->sigma >= 0 && p->sigma <= LT_GAUSS_RMAX / 3.0f)) bad = "sigma must be in 0..16";
  else if (p->levels < 1 || p->levels > LT_FLOW_MAX_LEVELS) bad = "levels must be in 1..16";
  else if (p->warps < 1 || p->warps > 1000) bad = "warps must be in 1..1000";
  else if (p->iterations < 1 || p->iterations > LT_FLOW_MAX_ITERATIONS) bad = "iterations must be in 1..100000";
  else if (!(p->eta >= 0.25f && p->eta <= 0.95f)) bad = "eta must be in 0.25..0.95";
  else if (!(p->beta >= 0 && p->beta < 1e9f)) bad = "beta must be >= 0";
  else if (!(p->eps_data >= 0 && p->eps_data < 1e9f)) bad = "eps-data must be >= 0";
  else if (!(p->eps_smooth >= 0 && p->eps_smooth < 1e9f)) bad = "eps-smooth must be >= 0";
  else if (!(p->omega >= 0 && p->omega < 2)) bad = "omega must be 0 (Jacobi) or in 0..2 (SOR)";
  else if (p->lag < 1 || p->lag > 100000) bad = "lag must be in 1..100000";
  if (bad) {
    lt_error("flow: %s", bad);
    return LT_ERR_USAGE;
  }
  return 0;
}

double lt_flow_restrict_sigma(double eta) { return 0.6 * sqrt(1.0 / (eta * eta) - 1.0); }

int lt_flow_pyramid(const lt_flow_params *p, const lt_grid *g, lt_grid lev[LT_FLOW_MAX_LEVELS])
{
  lev[0] = *g;
  int n = 1;
  double s = 1.0;
  while (n < p->levels) {
    s *= p->eta;
    lt_grid c = *g;
    int ok = 1;
    for (int d = 0; d < LT_GRID_MAXDIM; d++) {
      if (g->n[d] == 1) continue;
      c.n[d] = (int)lround(g->n[d] * s);
      if (c.n[d] < LT_FLOW_MIN_SIZE) ok = 0;
      c.h[d] = g->h[d] * (float)g->n[d] / (float)c.n[d];
    }
    if (!ok) break;
    lev[n++] = c;
  }
  return n;
}

int lt_clg_levels(const lt_clg *c) { return c->nlev; }
lt_grid lt_clg_level_grid(const lt_clg *c, int l) { return c->lev[l]; }

/* Kernels per axis: sigma given in samples of the finest grid's smallest
 * spacing, so a volume with h = (1, 1, 2) smooths z half as many samples. */
int lt_flow_kernels(lt_gauss_kernel k[3], double sigma, const lt_grid *g)
{
  float hmin = g->h[0];
  for (int d = 1; d < 3; d++)
    if (g->n[d] > 1 && g->h[d] < hmin) hmin = g->h[d];
  for (int d = 0; d < 3; d++) {
    int r = lt_gauss_kernel_make(&k[d], g->n[d] > 1 ? sigma * hmin / g->h[d] : 0.0);
    if (r) return r;
  }
  return 0;
}

size_t lt_clg_bytes(const lt_flow_params *p, const lt_grid *g)
{
  lt_grid lev[LT_FLOW_MAX_LEVELS];
  const int nlev = lt_flow_pyramid(p, g, lev), dims = lt_grid_dims(g);
  const size_t nj = (size_t)(dims + 1) * (dims + 2) / 2;
  /* CUDA's arena (10 fixed planes: the CPU's 8 and the two input frames) */
  size_t total = lt_grid_size(g) * (10 + (size_t)(dims + 1) + nj + 3 * (size_t)dims);
  for (int l = 1; l < nlev; l++) total += 2 * lt_grid_size(&lev[l]);
  return total * sizeof(float);
}

int lt_clg_create(lt_clg **out, const lt_flow_params *p, const lt_grid *g)
{
  *out = NULL;
  int r = lt_flow_params_check(p);
  if (r) return r;
  for (int d = 0; d < 3; d++)
    if (g->n[d] < 1 || !(g->h[d] > 0)) {
      lt_error("flow: bad grid %dx%dx%d", g->n[0], g->n[1], g->n[2]);
      return LT_ERR_USAGE;
    }
  if (g->n[0] < 2 || g->n[1] < 2) {
    lt_error("flow: image %dx%d is too small (at least 2x2)", g->n[0], g->n[1]);
    return LT_ERR_USAGE;
  }
  lt_clg *c = calloc(1, sizeof *c);
  if (!c) return LT_ERR_NOMEM;
  c->p = *p;
  c->dims = lt_grid_dims(g);
  c->nlev = lt_flow_pyramid(p, g, c->lev);
  if ((r = lt_flow_kernels(c->ks, p->sigma, g)) || (r = lt_flow_kernels(c->kr, p->rho, g)) ||
      (r = lt_flow_kernels(c->ka, lt_flow_restrict_sigma(p->eta), g))) {
    free(c);
    return r;
  }
  const size_t n = lt_grid_size(g);
  const int nj = (c->dims + 1) * (c->dims + 2) / 2;
  size_t total = n * (8 + (size_t)(c->dims + 1) + nj + 3 * (size_t)c->dims);
  for (int l = 1; l < c->nlev; l++) total += 2 * lt_grid_size(&c->lev[l]);
  c->arena = malloc(total * sizeof(float));
  if (!c->arena) {
    lt_error("flow: out of memory (%zu MB)", total * sizeof(float) >> 20);
    free(c);
    return LT_ERR_NOMEM;
  }
  float *a = c->arena;
  float **fixed[] = {&c->s0, &c->s1, &c->w1, &c->avg, &c->tmp, &c->tmp2, &c->wdat, &c->wsm};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++, a += n) *fixed[i] = a;
  for (int i = 0; i <= c->dims; i++, a += n) c->D[i] = a;
  for (int i = 0; i < nj; i++, a += n) c->J[i] = a;
  for (int i = 0; i < c->dims; i++) {
    c->f[i] = a, a += n;
    c->fn[i] = a, a += n;
    c->f0[i] = a, a += n;
  }
  for (int l = 1; l < c->nlev; l++) {
    size_t m = lt_grid_size(&c->lev[l]);
    c->pyr0[l] = a, a += m;
    c->pyr1[l] = a, a += m;
  }
  *out = c;
  return 0;
}

void lt_clg_destroy(lt_clg *c)
{
  if (!c) return;
  free(c->arena);
  free(c);
}

/* Level l of a pyramid from level l-1: anti-alias, then resample. */
static void restrict_level(lt_clg *c, const float *fine, int l, float *coarse)
{
  const lt_grid *gf = &c->lev[l - 1];
  lt_grid_gauss(fine, c->tmp2, c->tmp, gf, c->ka);
  lt_grid_resample(c->tmp2, gf, coarse, &c->lev[l], 1.0f);
}

/* Derivatives and the smoothed motion tensor at the current linearisation.
 * Where x + w0 leaves the grid the warped frame is only a border copy:
 * there all derivatives are set to 0 before the rho smoothing (no data,
 * the smoothness term fills in), the usual rule for warping methods. */
static void motion_tensor(lt_clg *c, const lt_grid *g)
{
  const size_t n = lt_grid_size(g);
  const int dims = c->dims, nx = g->n[0];
  const long rows = (long)g->n[1] * g->n[2];
  const float *const *f = (const float *const *)c->f;
  lt_grid_warp(c->s1, f, c->w1, g);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) {
    c->avg[i] = 0.5f * (c->s0[i] + c->w1[i]);
    c->D[dims][i] = c->w1[i] - c->s0[i];
  }
  for (int d = 0; d < dims; d++) lt_grid_deriv(c->avg, c->D[d], g, d);
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    const int pos[3] = {0, (int)(row % g->n[1]), (int)(row / g->n[1])};
    size_t i = (size_t)row * nx;
    for (int x = 0; x < nx; x++, i++) {
      int out = 0;
      for (int d = 0; d < dims; d++) {
        float q = (d ? (float)pos[d] : (float)x) + f[d][i] / g->h[d];
        out |= !(q >= 0.0f && q <= (float)(g->n[d] - 1));
      }
      if (out)
        for (int d = 0; d <= dims; d++) c->D[d][i] = 0.0f;
    }
  }
  for (int a = 0; a <= dims; a++)
    for (int b = a; b <= dims; b++) {
      const float *da = c->D[a], *db = c->D[b];
#pragma omp parallel for schedule(static)
      for (size_t i = 0; i < n; i++) c->tmp[i] = da[i] * db[i];
      lt_grid_gauss(c->tmp, c->J[jx(a, b, dims)], c->tmp2, g, c->kr);
    }
}

/* Solve the symmetric dims x dims system A x = b (Cramer; A is positive
 * definite here: J is semi-definite and the smoothness adds > 0 to the
 * diagonal). */
static inline void solve_small(int dims, const double A[3][3], const double b[3], double x[3])
{
  if (dims == 2) {
    double det = A[0][0] * A[1][1] - A[0][1] * A[0][1];
    x[0] = (b[0] * A[1][1] - A[0][1] * b[1]) / det;
    x[1] = (A[0][0] * b[1] - A[0][1] * b[0]) / det;
    return;
  }
  double c00 = A[1][1] * A[2][2] - A[1][2] * A[1][2];
  double c01 = A[0][2] * A[1][2] - A[0][1] * A[2][2];
  double c02 = A[0][1] * A[1][2] - A[0][2] * A[1][1];
  double c11 = A[0][0] * A[2][2] - A[0][2] * A[0][2];
  double c12 = A[0][1] * A[0][2] - A[0][0] * A[1][2];
  double c22 = A[0][0] * A[1][1] - A[0][1] * A[0][1];
  double det = A[0][0] * c00 + A[0][1] * c01 + A[0][2] * c02;
  x[0] = (c00 * b[0] + c01 * b[1] + c02 * b[2]) / det;
  x[1] = (c01 * b[0] + c11 * b[1] + c12 * b[2]) / det;
  x[2] = (c02 * b[0] + c12 * b[1] + c22 * b[2]) / det;
}

void lt_flow_div_coefs(const lt_flow_params *p, const lt_grid *g, double ih[3], double bb[3][3])
{
  for (int d = 0; d < 3; d++) ih[d] = 1.0 / (double)g->h[d];
  for (int a = 0; a < 3; a++)
    for (int b = a; b < 3; b++) bb[a][b] = bb[b][a] = (double)p->beta * ih[a] * ih[b];
}

/* The lagged weights of the robust (Charbonnier) penalisers at the current
 * iterate f (clg.h): wdat = 1 / sqrt(1 + w3^T J w3 / eps_d^2) with
 * w3 = (f - f0, 1), wsm = 1 / sqrt(1 + sum_k |grad f_k|^2 / eps_s^2)
 * (central differences, one-sided at the border). Only the robust terms'
 * planes are written. Double arithmetic in the order cuda/flow/clg.cu
 * repeats. */
static void robust_weights(lt_clg *c, const lt_grid *g)
{
  const int dims = c->dims, nx = g->n[0];
  const long rows = (long)g->n[1] * g->n[2];
  const int rd = c->p.eps_data > 0, rs = c->p.eps_smooth > 0;
  const double ied = rd ? 1.0 / ((double)c->p.eps_data * c->p.eps_data) : 0.0;
  const double ies = rs ? 1.0 / ((double)c->p.eps_smooth * c->p.eps_smooth) : 0.0;
  size_t st[3];
  for (int d = 0; d < dims; d++) st[d] = lt_grid_stride(g, d);
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int pos[3] = {0, (int)(row % g->n[1]), (int)(row / g->n[1])};
    size_t i = (size_t)row * nx;
    for (int x = 0; x < nx; x++, i++) {
      pos[0] = x;
      if (rd) {
        double du[3], q = (double)c->J[jx(dims, dims, dims)][i];
        for (int k = 0; k < dims; k++) du[k] = (double)c->f[k][i] - (double)c->f0[k][i];
        for (int k = 0; k < dims; k++) q += 2.0 * (double)c->J[jx(k, dims, dims)][i] * du[k];
        for (int k = 0; k < dims; k++)
          for (int e = 0; e < dims; e++) q += (double)c->J[jx(k, e, dims)][i] * du[k] * du[e];
        if (!(q > 0.0)) q = 0.0;
        c->wdat[i] = (float)(1.0 / sqrt(1.0 + q * ied));
      }
      if (rs) {
        double q = 0.0;
        for (int d = 0; d < dims; d++) {
          const int lo = pos[d] > 0, hi = pos[d] < g->n[d] - 1;
          const double den = (double)(lo + hi) * (double)g->h[d];
          for (int k = 0; k < dims; k++) {
            const double t = ((double)c->f[k][i + (hi ? st[d] : 0)] - (double)c->f[k][i - (lo ? st[d] : 0)]) / den;
            q += t * t;
          }
        }
        c->wsm[i] = (float)(1.0 / sqrt(1.0 + q * ies));
      }
    }
  }
}

/* One relaxation sweep (see clg.h). Jacobi (colour < 0): fn from f, every
 * sample. SOR: in place (fn == f), only the samples of colour `colour`
 * (lt_flow_colour), whose neighbours all have other colours, so the order
 * within a pass cannot matter. With the robust terms the tensor is scaled
 * by wdat and the neighbour weights become alpha / h^2 (wsm(i) + wsm(j)) / 2.
 * With beta > 0 the divergence term's point-block part enters A and the
 * neighbours' part b (clg.h gives the discretisation; the proximal term only
 * for Jacobi). The order of the double operations here is the one
 * cuda/flow/clg.cu repeats. */
static void relax_sweep(lt_clg *c, const lt_grid *g, float *const f[], float *const fn[], int colour)
{
  const int dims = c->dims, nx = g->n[0];
  const long rows = (long)g->n[1] * g->n[2];
  const int div = c->p.beta > 0, rd = c->p.eps_data > 0, rs = c->p.eps_smooth > 0, sor = colour >= 0;
  const double om = c->p.omega;
  double wd[3], ih[3], bb[3][3];
  size_t st[3];
  lt_flow_div_coefs(&c->p, g, ih, bb);
  double tau = 0;
  for (int d = 0; d < dims; d++) tau += bb[d][d];
  tau *= 2.0;
  for (int d = 0; d < dims; d++) {
    wd[d] = (double)c->p.alpha / ((double)g->h[d] * g->h[d]);
    st[d] = lt_grid_stride(g, d);
  }
#pragma omp parallel for schedule(static)
  for (long row = 0; row < rows; row++) {
    int pos[3] = {0, (int)(row % g->n[1]), (int)(row / g->n[1])};
    size_t i = (size_t)row * nx;
    /* SOR: every other sample of the row, from the first of this colour
     * (none where the row has no sample of it: 2^dims colours) */
    int x0 = 0;
    if (sor) {
      pos[0] = 0;
      x0 = lt_flow_colour(pos, div) == colour ? 0 : 1;
      pos[0] = x0;
      if (lt_flow_colour(pos, div) != colour) continue;
    }
    i += x0;
    for (int x = x0; x < nx; x += 1 + sor, i += 1 + sor) {
      pos[0] = x;
      double sw = 0, A[3][3], b[3] = {0, 0, 0}, w[3];
      for (int d = 0; d < dims; d++) {
        if (pos[d] > 0) {
          const double e = rs ? wd[d] * (0.5 * ((double)c->wsm[i] + (double)c->wsm[i - st[d]])) : wd[d];
          sw += e;
          for (int k = 0; k < dims; k++) b[k] += e * f[k][i - st[d]];
        }
        if (pos[d] < g->n[d] - 1) {
          const double e = rs ? wd[d] * (0.5 * ((double)c->wsm[i] + (double)c->wsm[i + st[d]])) : wd[d];
          sw += e;
          for (int k = 0; k < dims; k++) b[k] += e * f[k][i + st[d]];
        }
      }
      const double dw = rd ? (double)c->wdat[i] : 1.0;
      for (int k = 0; k < dims; k++) {
        for (int e = 0; e < dims; e++) {
          double jke = c->J[jx(k, e, dims)][i];
          if (rd) jke *= dw;
          A[k][e] = jke + (k == e ? sw : 0.0);
          b[k] += jke * c->f0[e][i];
        }
        double jkt = c->J[jx(k, dims, dims)][i];
        if (rd) jkt *= dw;
        b[k] -= jkt;
      }
      if (div) {
        int fw[3], bw[3];
        for (int d = 0; d < dims; d++) {
          fw[d] = pos[d] < g->n[d] - 1;
          bw[d] = pos[d] > 0;
        }
        /* u = sum_e [fw_e] f_e(i + s_e) / h_e: div(i) without its own sample */
        double u = 0;
        for (int e = 0; e < dims; e++)
          if (fw[e]) u += (double)f[e][i + st[e]] * ih[e];
        for (int k = 0; k < dims; k++) {
          /* proximal term tau (w_k(i) - w_k^old(i)): keeps the Jacobi step
           * convergent (see clg.h; SOR needs none); the fixed point is unchanged */
          if (!sor) {
            A[k][k] += tau;
            b[k] += tau * f[k][i];
          }
          for (int e = 0; e < dims; e++)
            if (fw[k] && fw[e]) A[k][e] += bb[k][e];
          if (bw[k]) {
            A[k][k] += bb[k][k];
            /* div(i - s_k) without f_k(i): -f_k(i - s_k)/h_k + sum_{e != k} forward differences */
            const size_t j = i - st[k];
            double t = -((double)f[k][j] * ih[k]);
            for (int e = 0; e < dims; e++)
              if (e != k && fw[e]) t += ((double)f[e][j + st[e]] - (double)f[e][j]) * ih[e];
            b[k] -= (double)c->p.beta * ih[k] * t;
          }
          if (fw[k]) b[k] += (double)c->p.beta * ih[k] * u;
        }
      }
      solve_small(dims, A, b, w);
      if (sor)
        for (int k = 0; k < dims; k++) fn[k][i] = (float)((double)f[k][i] + om * (w[k] - (double)f[k][i]));
      else
        for (int k = 0; k < dims; k++) fn[k][i] = (float)w[k];
    }
  }
}


int lt_flow_level_iterations(const lt_flow_params *p, int l)
{
  long n = (long)p->iterations << (l < 16 ? l : 16);
  return n > LT_FLOW_MAX_ITERATIONS ? LT_FLOW_MAX_ITERATIONS : (int)n;
}

/* Warps and relaxation sweeps on level l; the result is in c->f. The
 * robust weights are recomputed before sweep 0 of every warp and then
 * every `lag` sweeps (lagged nonlinearity). */
static void solve_level(lt_clg *c, const lt_grid *g, int l)
{
  const size_t n = lt_grid_size(g);
  const int nit = lt_flow_level_iterations(&c->p, l);
  const int robust = c->p.eps_data > 0 || c->p.eps_smooth > 0, sor = c->p.omega > 0;
  for (int k = 0; k < c->p.warps; k++) {
    motion_tensor(c, g);
    for (int d = 0; d < c->dims; d++) memcpy(c->f0[d], c->f[d], n * sizeof(float));
    for (int it = 0; it < nit; it++) {
      if (robust && it % c->p.lag == 0) robust_weights(c, g);
      if (sor) {
        for (int col = 0; col < lt_flow_colours(c->dims, c->p.beta > 0); col++) relax_sweep(c, g, c->f, c->f, col);
        continue;
      }
      relax_sweep(c, g, c->f, c->fn, -1);
      for (int d = 0; d < c->dims; d++) {
        float *t = c->f[d];
        c->f[d] = c->fn[d];
        c->fn[d] = t;
      }
    }
  }
}

int lt_clg_compute(lt_clg *c, const float *I0, const float *I1, float *const flow[])
{
  for (int l = 1; l < c->nlev; l++) {
    restrict_level(c, l == 1 ? I0 : c->pyr0[l - 1], l, c->pyr0[l]);
    restrict_level(c, l == 1 ? I1 : c->pyr1[l - 1], l, c->pyr1[l]);
  }
  for (int l = c->nlev - 1; l >= 0; l--) {
    const lt_grid *g = &c->lev[l];
    const size_t n = lt_grid_size(g);
    if (l == c->nlev - 1) {
      for (int d = 0; d < c->dims; d++) memset(c->f[d], 0, n * sizeof(float));
    } else {
      /* physical units: the flow keeps its values, only the grid changes */
      for (int d = 0; d < c->dims; d++) {
        lt_grid_resample(c->f[d], &c->lev[l + 1], c->fn[d], g, 1.0f);
        float *t = c->f[d];
        c->f[d] = c->fn[d];
        c->fn[d] = t;
      }
    }
    lt_grid_gauss(l ? c->pyr0[l] : I0, c->s0, c->tmp, g, c->ks);
    lt_grid_gauss(l ? c->pyr1[l] : I1, c->s1, c->tmp, g, c->ks);
    solve_level(c, g, l);
  }
  for (int d = 0; d < c->dims; d++) memcpy(flow[d], c->f[d], lt_grid_size(&c->lev[0]) * sizeof(float));
  return 0;
}

/* --- the 2D stage table --- */
static int cpu_create(void **ctx, const lt_flow_params *p, int w, int h)
{
  lt_grid g = lt_grid_2d(w, h);
  return lt_clg_create((lt_clg **)ctx, p, &g);
}

static void cpu_destroy(void *ctx) { lt_clg_destroy(ctx); }

static int cpu_compute(void *ctx, const float *I0, const float *I1, float *u, float *v)
{
  float *const flow[2] = {u, v};
  return lt_clg_compute(ctx, I0, I1, flow);
}

static int cpu_create_grid(void **ctx, const lt_flow_params *p, const lt_grid *g) { return lt_clg_create((lt_clg **)ctx, p, g); }

static int cpu_compute_grid(void *ctx, const float *I0, const float *I1, float *const flow[])
{
  return lt_clg_compute(ctx, I0, I1, flow);
}

static long cpu_launches(void *ctx) { return 0; }

const lt_flow_backend lt_flow_backend_cpu = {"cpu",           cpu_create,       cpu_destroy,  cpu_compute,
                                             cpu_create_grid, cpu_compute_grid, cpu_launches, NULL,
                                             NULL,            NULL};
