/* test_flow_cuda.c - the CUDA CLG backend (cuda/flow/clg.cu) against the CPU
 * reference (src/flow/clg.c) with the default parameters (robust terms,
 * red-black SOR in shared-memory tiles), on a synthetic translated texture
 * and on Yosemite yos9 -> yos10; on Yosemite also the other solver paths:
 * quadratic Jacobi (omega 0, the earlier defaults), robust Jacobi, and SOR
 * with the divergence term (4 colours, one global pass per colour); and a
 * sequence through compute_next (a video's later pairs: the first frame
 * kept on the device, the second uploaded as bytes or floats, the field
 * downloaded into the pinned host_alloc buffers), pixel for pixel.
 * Tolerance: max |u_cuda - u_cpu|, |v_cuda - v_cpu| <= 1e-3 px. The CUDA
 * code repeats the CPU's float/double operations one by one with IEEE
 * rounding (no FMA contraction), so the expected difference is 0 or a few
 * float ulps carried through the relaxation iterations (a contraction: they do
 * not grow); 1e-3 px is far below the methods' error (0.1 px AEE) and
 * leaves room for libm/compiler differences. SKIP when no device (or a
 * build without CUDA); missing data is a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "flow/clg.h"
#include "image.h"
#include "log.h"
#include "flow_common.h"
#include "test.h"
#ifdef LT_HAVE_CUDA
#include "../cuda/runtime.h"
#endif

#define TOL_PX 1e-3

#ifdef LT_HAVE_CUDA
/* Runs both backends; prints the max differences; returns 0 or -1. */
static int compare(const char *name, const float *I0, const float *I1, int w, int h, const lt_flow_params *pp)
{
  size_t n = (size_t)w * h;
  float *uc = malloc(n * sizeof *uc), *vc = malloc(n * sizeof *vc), *ug = malloc(n * sizeof *ug), *vg = malloc(n * sizeof *vg);
  const lt_flow_params p = *pp;
  void *cc = NULL, *gc = NULL;
  int r = (!uc || !vc || !ug || !vg) ? LT_ERR_NOMEM : 0;
  double tc = 0, tg = 0, tg2 = 0;
  if (!r) r = lt_flow_backend_cpu.create(&cc, &p, w, h);
  if (!r) r = lt_flow_backend_cuda.create(&gc, &p, w, h);
  if (!r) {
    double t0 = lt_now();
    r = lt_flow_backend_cpu.compute(cc, I0, I1, uc, vc);
    tc = lt_now() - t0;
  }
  if (!r) {
    double t0 = lt_now();
    r = lt_flow_backend_cuda.compute(gc, I0, I1, ug, vg); /* first pair: includes module load */
    tg = lt_now() - t0;
    t0 = lt_now();
    if (!r) r = lt_flow_backend_cuda.compute(gc, I0, I1, ug, vg);
    tg2 = lt_now() - t0;
  }
  double du = 0, dv = 0;
  long nbits = 0;
  if (!r)
    for (size_t i = 0; i < n; i++) {
      du = fmax(du, fabs((double)uc[i] - ug[i]));
      dv = fmax(dv, fabs((double)vc[i] - vg[i]));
      nbits += uc[i] != ug[i] || vc[i] != vg[i];
    }
  char line[400];
  snprintf(line, sizeof line,
           "cuda vs cpu, %s %dx%d: max |du| %.3g |dv| %.3g px (%ld of %zu pixels differ at all), tolerance %.0e px; "
           "cpu %.3f s, cuda %.4f s (first pair %.3f s)",
           name, w, h, du, dv, nbits, n, TOL_PX, tc, tg2, tg);
  T_CHECK(line, r == 0 && du <= TOL_PX && dv <= TOL_PX, "r=%d", r);
  lt_flow_backend_cpu.destroy(cc);
  lt_flow_backend_cuda.destroy(gc);
  free(uc), free(vc), free(ug), free(vg);
  return r ? -1 : 0;
}

/* A sequence through the stage table's compute_next (what a video's later
 * pairs use: the first frame kept on the device, only the second uploaded,
 * as bytes or floats) into the pinned host_alloc buffers, against the CPU's
 * compute of the same pairs: frames 0 -> 1 by compute, then 1 -> 2 by
 * compute_next with frame 2 as bytes (integer grey levels 0..255), then
 * 2 -> 3 with frame 3 as floats (not integers). Returns 0 or -1. */
static int compare_next(int w, int h, const lt_flow_params *p)
{
  const size_t n = (size_t)w * h;
  float *fr[4] = {NULL, NULL, NULL, NULL}, *uc = malloc(n * sizeof *uc), *vc = malloc(n * sizeof *vc);
  unsigned char *by = malloc(n);
  float *ug = lt_flow_backend_cuda.host_alloc(n * sizeof *ug, "test u");
  float *vg = lt_flow_backend_cuda.host_alloc(n * sizeof *vg, "test v");
  int r = !uc || !vc || !by || !ug || !vg ? LT_ERR_NOMEM : 0;
  for (int k = 0; k < 4 && !r; k++) {
    if (!(fr[k] = malloc(n * sizeof(float)))) {
      r = LT_ERR_NOMEM;
      break;
    }
    for (size_t i = 0; i < n; i++) {
      float g = flow_texture((double)(i % w) - 1.3 * k, (double)(i / w) + 0.7 * k, 99);
      if (k < 3) g = fminf(fmaxf(floorf(g + 0.5f), 0.0f), 255.0f);
      fr[k][i] = g;
      if (k == 2) by[i] = (unsigned char)g;
    }
  }
  void *cc = NULL, *gc = NULL;
  if (!r) r = lt_flow_backend_cpu.create(&cc, p, w, h);
  if (!r) r = lt_flow_backend_cuda.create(&gc, p, w, h);
  if (!r) r = lt_flow_backend_cuda.compute(gc, fr[0], fr[1], ug, vg);
  long diff[2] = {-1, -1};
  for (int k = 0; k < 2 && !r; k++) {
    if ((r = lt_flow_backend_cpu.compute(cc, fr[k + 1], fr[k + 2], uc, vc))) break;
    if ((r = lt_flow_backend_cuda.compute_next(gc, fr[k + 2], k == 0 ? by : NULL, ug, vg))) break;
    diff[k] = 0;
    for (size_t i = 0; i < n; i++) diff[k] += uc[i] != ug[i] || vc[i] != vg[i];
  }
  char line[300];
  snprintf(line, sizeof line,
           "cuda compute_next (first frame kept on the device; bytes / floats uploaded; pinned output) vs cpu compute, "
           "%dx%d: %ld / %ld pixels differ",
           w, h, diff[0], diff[1]);
  T_CHECK(line, r == 0 && diff[0] == 0 && diff[1] == 0, "r=%d", r);
  lt_flow_backend_cpu.destroy(cc);
  lt_flow_backend_cuda.destroy(gc);
  for (int k = 0; k < 4; k++) free(fr[k]);
  free(uc), free(vc), free(by);
  lt_flow_backend_cuda.host_free(ug);
  lt_flow_backend_cuda.host_free(vg);
  return r ? -1 : 0;
}

#endif

int main(void)
{
#ifndef LT_HAVE_CUDA
  T_SKIP("flow cuda vs cpu", "built without CUDA");
  T_DONE();
#else
  int count = 0;
  const char *why = "no CUDA device";
  if (lt_cuda_probe(&count, &why) != 0 || count == 0) {
    T_SKIP("flow cuda vs cpu", "no CUDA device");
    T_DONE();
  }
  if (lt_cuda_select(0) != 0) {
    T_CHECK("flow cuda: select device 0", 0, "failed");
    T_DONE();
  }
  /* synthetic: odd size (not a multiple of any block), shift (3.7, -2.2) */
  const int W = 157, H = 99;
  float *a = malloc(sizeof(float) * W * H), *b = malloc(sizeof(float) * W * H);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      a[y * W + x] = flow_texture(x, y, 777);
      b[y * W + x] = flow_texture(x - 3.7, y + 2.2, 777);
    }
  lt_flow_params def;
  lt_flow_params_default(&def);
  compare("synthetic shift (3.7,-2.2)", a, b, W, H, &def);
  free(a), free(b);
  compare_next(W, H, &def);

  const char *dir = getenv("LT_DATA");
  if (!dir || !*dir) dir = "../shared/data";
  char p0[1024], p1[1024];
  snprintf(p0, sizeof p0, "%s/flow/yosemite/yos9.pgm", dir);
  snprintf(p1, sizeof p1, "%s/flow/yosemite/yos10.pgm", dir);
  float *I0 = NULL, *I1 = NULL;
  int w, h, w1, h1;
  if (lt_image_read(p0, LT_CHANNEL_LUMA, &I0, &w, &h) || lt_image_read(p1, LT_CHANNEL_LUMA, &I1, &w1, &h1) || w != w1 ||
      h != h1) {
    T_CHECK("yosemite data present (set LT_DATA)", 0, "cannot load %s", p0);
  } else {
    compare("yosemite 9->10", I0, I1, w, h, &def);
    lt_flow_params q = def;
    q.omega = 0.0f, q.eps_data = 0.0f, q.eps_smooth = 0.0f, q.alpha = 300.0f, q.iterations = 150;
    compare("yosemite 9->10, quadratic Jacobi (alpha 300, 150 iterations)", I0, I1, w, h, &q);
    q = def;
    q.omega = 0.0f;
    compare("yosemite 9->10, robust Jacobi", I0, I1, w, h, &q);
    q = def;
    q.beta = 100.0f;
    compare("yosemite 9->10, SOR with beta 100 (4 colours)", I0, I1, w, h, &q);
  }
  free(I0), free(I1);
  T_DONE();
#endif
}
