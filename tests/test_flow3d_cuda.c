/* test_flow3d_cuda.c - the CUDA CLG backend (cuda/flow/clg.cu) against the
 * CPU reference (src/flow/clg.c) on 3D volumes (anisotropic voxels, with and
 * without the divergence term) through the grid entry points of the stage
 * table, and timings for the lead to read: time per pair and graph nodes
 * (kernel launches + device copies) per pair, 3D and 2D 640x480.
 * Tolerance: max |f_cuda - f_cpu| <= 1e-3 (mm = voxel units here), the same
 * as tests/test_flow_cuda.c and for the same reason: the CUDA code repeats
 * the CPU's float/double operations one by one with IEEE rounding (no FMA
 * contraction), so 0 or a few ulps are expected. SKIP when no device or no
 * CUDA build. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "flow/clg.h"
#include "flow3d_common.h"
#include "log.h"
#include "test.h"
#ifdef LT_HAVE_CUDA
#include "../cuda/runtime.h"
#endif

#define TOL 1e-3

#ifdef LT_HAVE_CUDA
/* CPU once, CUDA twice (first pair includes graph capture), then `reps`
 * timed CUDA pairs. */
static void compare(const char *name, const lt_grid *g, const lt_flow_params *p, const float *I0, const float *I1, int reps)
{
  const size_t n = lt_grid_size(g);
  const int dims = lt_grid_dims(g);
  float *fc[3] = {NULL, NULL, NULL}, *fg[3] = {NULL, NULL, NULL};
  int r = 0;
  for (int d = 0; d < dims; d++) {
    fc[d] = malloc(n * sizeof(float));
    fg[d] = malloc(n * sizeof(float));
    if (!fc[d] || !fg[d]) r = LT_ERR_NOMEM;
  }
  void *cc = NULL, *gc = NULL;
  double tc = 0, tg1 = 0, tg = 0;
  if (!r) r = lt_flow_backend_cpu.create_grid(&cc, p, g);
  if (!r) r = lt_flow_backend_cuda.create_grid(&gc, p, g);
  if (!r) {
    double t0 = lt_now();
    r = lt_flow_backend_cpu.compute_grid(cc, I0, I1, fc);
    tc = lt_now() - t0;
  }
  if (!r) {
    double t0 = lt_now();
    r = lt_flow_backend_cuda.compute_grid(gc, I0, I1, fg);
    tg1 = lt_now() - t0;
  }
  if (!r) {
    double t0 = lt_now();
    for (int k = 0; k < reps && !r; k++) r = lt_flow_backend_cuda.compute_grid(gc, I0, I1, fg);
    tg = (lt_now() - t0) / reps;
  }
  double dmax = 0;
  long ndiff = 0;
  for (int d = 0; !r && d < dims; d++)
    for (size_t i = 0; i < n; i++) {
      dmax = fmax(dmax, fabs((double)fc[d][i] - fg[d][i]));
      ndiff += fc[d][i] != fg[d][i];
    }
  char line[600];
  snprintf(line, sizeof line,
           "cuda vs cpu, %s %dx%dx%d (h %gx%gx%g, beta %g): max |diff| %.3g (%ld of %zu values differ at all), "
           "tolerance %.0e; cpu %.3f s, cuda %.5f s per pair (%.0f pairs/s, first pair %.3f s), %ld graph nodes per pair",
           name, g->n[0], g->n[1], g->n[2], g->h[0], g->h[1], g->h[2], p->beta, dmax, ndiff, n * dims, TOL, tc, tg,
           tg > 0 ? 1.0 / tg : 0, tg1, lt_flow_backend_cuda.launches(gc));
  T_CHECK(line, r == 0 && dmax <= TOL, "r=%d", r);
  lt_flow_backend_cpu.destroy(cc);
  lt_flow_backend_cuda.destroy(gc);
  for (int d = 0; d < 3; d++) free(fc[d]), free(fg[d]);
}

static void run3(const char *name, lt_grid g, float beta, int kind)
{
  const size_t n = lt_grid_size(&g);
  float *I0 = malloc(n * sizeof(float)), *I1 = malloc(n * sizeof(float)), *gt[3];
  for (int d = 0; d < 3; d++) gt[d] = malloc(n * sizeof(float));
  make_pair3(kind, &g, 2.5, I0, I1, gt);
  lt_flow_params p;
  lt_flow_params_default(&p);
  p.alpha = 100.0f;
  p.beta = beta;
  compare(name, &g, &p, I0, I1, 5);
  free(I0), free(I1);
  for (int d = 0; d < 3; d++) free(gt[d]);
}

/* 2D 640x480 with the defaults: the issue-14 throughput case (texture
 * shifted by (2.3, -1.4) px). */
static void run2d(void)
{
  lt_grid g = lt_grid_2d(640, 480);
  const size_t n = lt_grid_size(&g);
  float *I0 = malloc(n * sizeof(float)), *I1 = malloc(n * sizeof(float));
  for (int y = 0; y < 480; y++)
    for (int x = 0; x < 640; x++) {
      I1[(size_t)y * 640 + x] = (float)tex3(x, y, 0.0);
      I0[(size_t)y * 640 + x] = (float)tex3(x + 2.3, y - 1.4, 0.0);
    }
  lt_flow_params p;
  lt_flow_params_default(&p);
  compare("2d defaults", &g, &p, I0, I1, 20);
  free(I0), free(I1);
}
#endif

int main(void)
{
#ifdef LT_HAVE_CUDA
  int count = 0;
  const char *why = "";
  if (lt_cuda_probe(&count, &why) != 0 || count == 0) {
    T_SKIP("flow 3d cuda vs cpu", why && *why ? why : "no CUDA device");
    T_DONE();
  }
  if (lt_cuda_select(0) != 0) {
    T_CHECK("flow 3d cuda: select device 0", 0, "failed");
    T_DONE();
  }
  lt_grid a = {{48, 40, 24}, {1.0f, 1.0f, 2.0f}};
  run3("3d smooth", a, 0.0f, MOT_SMOOTH);
  run3("3d swirl", a, 300.0f, MOT_ROTATION);
  lt_grid b = {{64, 64, 64}, {1.0f, 1.0f, 1.0f}};
  run3("3d 64^3", b, 0.0f, MOT_SMOOTH);
  run2d();
#else
  T_SKIP("flow 3d cuda vs cpu", "built without CUDA");
#endif
  T_DONE();
}
