/* test_mgvf_dense_cuda.c - the CUDA backend's dense MGVF kernels (one block
 * per cell, the window in shared memory: the tracking's MGVF while several
 * videos are in flight) against the CPU's lt_mgvf, window by window: F bit
 * for bit and the same iteration count. The kernels are reached through the
 * backend's MGVF test access with LT_CUDA_MGVF=dense (lt_cu_mgvf_launch), so
 * that no other kernel runs (compute-sanitizer's racecheck can check them
 * alone). Variants, one context each (the settings are read at create):
 * the transposed kernel at 512 and 256 threads per cell and built for 3
 * cells per SM, and the row-major kernel (LT_CUDA_DENSE_ROWS=1). Windows:
 * the shapes the tracking makes (2 round(4R) + 1 wide, 2 round(2R) + 1
 * high), windows clamped at a frame border (even sizes, 3 rows), one wider
 * than the block (its threads take several columns) and one narrower than
 * the strips need; edge maps random, with flat runs (equal neighbours: the
 * Heaviside's zero differences) and from a disc. Convergence as in the
 * tracking (tol 1e-5, at most 500 iterations) and a cap that is not a
 * multiple of the check interval with tol 0. Each also with the column
 * two-colour SOR MGVF (params.mgvf_col = 1.8, LT_MGVF_COL; the row-major
 * variant then runs the transposed kernel) against lt_mgvf_col, plus the
 * one-block path's MGVF kernel (LT_CUDA_MGVF=block), Jacobi and column SOR
 * (LT_MGVF_TEST_COL=1: the column SOR's uncapped cases only, for racecheck
 * with LT_EQUIV_ITER_CAP). Every
 * check is SKIPped when
 * the binary has no CUDA or no device is usable; before Hopper (no split
 * path, no dense kernel) the test access runs the one-block MGVF kernel,
 * compared the same way. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "leuk.h"
#include "mode.h"
#include "test.h"

typedef struct variant {
  const char *name, *threads, *rows, *occ, *mode;
} variant;

static const variant variants[] = {
    {"transposed 512", "512", "0", "2", "dense"},
    {"transposed 256", "256", "0", "2", "dense"},
    {"transposed 512 occ3", "512", "0", "3", "dense"},
    {"rows 512", "512", "1", "2", "dense"},
    {"one-block kernel", "512", "0", "2", "block"},
};

typedef struct shape {
  int w, h;
} shape;

/* The reference's windows (8R + 1) x (4R + 1) for R = 3, 8, 10, 14 and
 * (the first, set in main) the largest of leuktrack's square windows,
 * rmax + rstep; clamped: even and 3 rows; 521 x 25 is wider than 512
 * threads (a context made for radii up to 30 holds them all);
 * 1025 x 3 has more even and odd columns than 512 threads; 5 x 61 leaves
 * strips of several rows; 2 x 7: one column of each colour */
static shape shapes[] = {{0, 0}, {25, 13}, {65, 33}, {81, 41}, {113, 57}, {64, 40},
                         {81, 3}, {521, 25}, {1025, 3}, {5, 61}, {3, 3}, {2, 7}};

static unsigned rng = 12345u;
static float urand(void)
{
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) & 0xffff) / 65535.0f;
}

/* edge map kind k: 0 random, 1 random with flat runs, 2 a disc's rim */
static void edge_map(float *E, int w, int h, int k)
{
  for (int i = 0; i < h; i++)
    for (int j = 0; j < w; j++) {
      float v;
      if (k == 0) v = urand();
      else if (k == 1) v = (float)((i / 3 + j / 5) % 4) / 4.0f + (urand() < 0.1f ? urand() : 0.0f);
      else {
        double d = hypot(j - w / 2.0, i - h / 2.0), R = fmin(w, h) / 3.0;
        v = (float)exp(-(d - R) * (d - R) / 4.0);
      }
      E[(size_t)i * w + j] = v;
    }
  lt_normalise(E, w * h);
}

int main(void)
{
  const char *why = "no CUDA device";
  if (!lt_have_cuda()) {
    T_SKIP("mgvf_dense", "built without CUDA");
    T_DONE();
  }
  if (lt_cuda_device_count(&why) == 0) {
    T_SKIP("mgvf_dense", "no CUDA device");
    printf("info: %s\n", why);
    T_DONE();
  }
  const void *stages = NULL;
  int err = lt_backend_stages("leukocyte", LT_BACKEND_CUDA, 0, &lt_leuk_backend_cpu, &stages);
  const lt_leuk_backend *cuda = stages;
  T_CHECK("mgvf_dense select", err == 0 && cuda != &lt_leuk_backend_cpu, "lt_backend_stages returned %d", err);
  if (err) T_DONE();
  lt_leuk_params p0;
  lt_leuk_params_default(&p0);
  shapes[0].w = 2 * lt_leuk_win_half_x(p0.rmax + p0.rstep) + 1;
  shapes[0].h = 2 * lt_leuk_win_half_y(p0.rmax + p0.rstep) + 1;
  size_t nmax = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
    if ((size_t)shapes[s].w * shapes[s].h > nmax) nmax = (size_t)shapes[s].w * shapes[s].h;
  float *E = malloc(sizeof(float) * nmax), *Fc = malloc(sizeof(float) * nmax), *Fg = malloc(sizeof(float) * nmax),
        *tmp = malloc(sizeof(float) * nmax);
  if (!E || !Fc || !Fg || !tmp) {
    T_CHECK("mgvf_dense memory", 0, "out of memory");
    T_DONE();
  }
  for (size_t v = 0; v < sizeof variants / sizeof *variants; v++) {
    const variant *V = &variants[v];
    setenv("LT_CUDA_DENSE_THREADS", V->threads, 1);
    setenv("LT_CUDA_DENSE_ROWS", V->rows, 1);
    setenv("LT_CUDA_DENSE_OCC", V->occ, 1);
    setenv("LT_CUDA_MGVF", V->mode, 1);
    const char *oc = getenv("LT_MGVF_TEST_COL");
    for (int cs = oc && atoi(oc) ? 2 : 0; cs < (oc && atoi(oc) ? 3 : 4); cs++) {
      const int cap = cs & 1, col = cs >> 1;
      lt_leuk_params p;
      lt_leuk_params_default(&p);
      p.mgvf_col = col ? 1.8 : 0.0; /* Jacobi or the column SOR (the default) */
      if (cap) { /* run to a cap that is not a multiple of LT_MGVF_CHECK_EVERY */
        p.mgvf_tol = 0.0;
        p.mgvf_max_iter = 4 * 9 + 3;
      }
      /* LT_EQUIV_ITER_CAP=N: fewer iterations, for compute-sanitizer */
      const char *ic = getenv("LT_EQUIV_ITER_CAP");
      if (ic && atoi(ic) > 0 && atoi(ic) < p.mgvf_max_iter) p.mgvf_max_iter = atoi(ic);
      void *ctx = NULL;
      char name[160];
      p.rmax = 30; /* the context's largest window (4 * 31 + 1)^2 px holds every shape */
      err = cuda->create(&ctx, &p, 640, 480, 16);
      snprintf(name, sizeof name, "mgvf_dense %s%s%s create", V->name, col ? " col" : "", cap ? " capped" : "");
      T_CHECK(name, err == 0, "create returned %d", err);
      if (err) continue;
      int bad = 0, fails = 0, tested = 0;
      for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int k = 0; k < 3; k++) {
          const int w = shapes[s].w, h = shapes[s].h;
          const size_t n = (size_t)w * h;
          edge_map(E, w, h, k);
          const int ic_ = lt_leuk_mgvf(&p, E, w, h, Fc, tmp);
          int ig = -1;
          memset(Fg, 0xff, sizeof(float) * n);
          if (cuda->mgvf(ctx, E, w, h, Fg, &ig)) {
            fails++;
            continue;
          }
          size_t nd = 0;
          for (size_t i = 0; i < n; i++) nd += memcmp(&Fc[i], &Fg[i], sizeof(float)) != 0;
          tested++;
          if (nd || ic_ != ig) {
            if (bad < 5)
              printf("info %s%s: %dx%d edge map %d: %zu of %zu pixels differ, iterations cpu %d cuda %d\n", V->name,
                     col ? " col" : "", w, h, k, nd, n, ic_, ig);
            bad++;
          }
        }
      snprintf(name, sizeof name, "mgvf_dense %s%s%s = cpu", V->name, col ? " col" : "", cap ? " capped" : "");
      T_CHECK(name, fails == 0 && bad == 0 && tested > 0, "%d windows differ, %d failed to run, %d tested", bad, fails,
              tested);
      cuda->destroy(ctx);
    }
  }
  free(E);
  free(Fc);
  free(Fg);
  free(tmp);
  T_DONE();
}
