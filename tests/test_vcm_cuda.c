/* test_vcm_cuda.c - the CUDA VCM backend (cuda/vcm/vcm.cu) against the CPU
 * reference (src/vcm/vcm.c): the same points in the same order, vectors
 * within tolerance, on Yosemite 9->10 (defaults), four pairs 8->9->10->9->8
 * (every pair compared; through pair8 with and without prefetch8, and with
 * wrong prefetches), a 157x121 frame with K 4, Yosemite 8->9->10 with the
 * temporal prior, synthetic rotation, the exp similarity and parabola
 * refinement, patch 7 with K 1, K 3, 40x30 and 41x31 frames under a 64x64
 * search, search 128 (large shared memory), uniform frames (n = 0); the
 * kernel variants kept for A/B runs forced by their environment variables
 * (LT_VCM_TILE, LT_VCM_BAND_OPT, LT_VCM_BAND_LIST, LT_VCM_BAND_DP, LT_VCM_BAND_PEAK,
 * LT_VCM_NCM), the launches' variants (LT_VCM_PDL, LT_VCM_EVENTS, LT_VCM_NO_GRAPH), radius 40
 * (tile neighbour lists longer than one block's chunk). SKIP when no CUDA device (or a
 * CPU-only build).
 *
 * Tolerances. Where the similarity has no transcendental (minmax, minmax^2:
 * the defaults) every operation of the CUDA code is the CPU's with the same
 * rounding (no fused multiply-add, weights from one table, exact sums of
 * weights), so vectors are expected equal: VCM_TOL_EXACT = 1e-5 px leaves
 * room only for a compiler contracting a CPU multiply-add (-march with FMA).
 * With the exp similarity, expf differs by an ulp between glibc and CUDA:
 * 99% of vectors within VCM_TOL_EXP = 1e-3 px, and at most 1% may move to
 * another integer peak of a nearly flat VCM. These were set from that
 * reasoning, not yet from an H100 run; the first run prints the worst
 * differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "log.h"
#include "test.h"
#include "vcm/vcm.h"
#include "vcm_common.h"

#ifdef LT_HAVE_CUDA
#include "../cuda/runtime.h"
#include "../cuda/vcm/vcm_cuda.h"

#define VCM_TOL_EXACT 1e-5
#define VCM_TOL_EXP 1e-3

static char nm[512];
#define NAME(...) (snprintf(nm, sizeof nm, __VA_ARGS__), nm)

/* Runs `pairs` consecutive pairs of frames[] on both backends and compares
 * every pair's output (the CUDA backend gets I0 NULL after the first pair,
 * the kept copy, as from the vcm mode; the CPU the frame's pointer).
 * bytes: the CUDA backend gets the frames as bytes through pair8
 * (lt_vcm_round8's values, as the vcm mode passes 8-bit video's grey8);
 * 2: and before each pair the next pair's frame through prefetch8 (as the
 * vcm mode); 3: every other such hint a wrong frame (255 - bytes, another
 * buffer), which the next pair8 must not take. */
static void compare_as(const char *what, const lt_vcm_params *p, const float *const *frames, int pairs, int w,
                       int h, double tol, double frac_within, int expect_points, int bytes)
{
  int cap = lt_vcm_max_points(p), err[2] = {0, 0};
  int *n[2] = {malloc(pairs * sizeof(int)), malloc(pairs * sizeof(int))};
  lt_vcm_vector *v[2] = {calloc((size_t)cap * pairs, sizeof(lt_vcm_vector)),
                         calloc((size_t)cap * pairs, sizeof(lt_vcm_vector))};
  const lt_vcm_backend *be[2] = {&lt_vcm_backend_cpu, &lt_vcm_backend_cuda};
  size_t np = (size_t)w * h;
  uint8_t **q = malloc((pairs + 2) * sizeof *q);
  for (int j = 0; j <= pairs + 1; j++) {
    q[j] = malloc(np);
    if (j <= pairs) lt_vcm_round8(frames[j], np, NULL, q[j]);
  }
  for (size_t i = 0; i < np; i++) q[pairs + 1][i] = (uint8_t)(255 - q[pairs][i]); /* the wrong frame */
  for (int b = 0; b < 2; b++) {
    void *ctx;
    err[b] = be[b]->create(&ctx, p, w, h);
    for (int k = 0; k < pairs && !err[b]; k++) {
      lt_vcm_vector *o = v[b] + (size_t)k * cap;
      if (b && bytes) {
        if (bytes >= 2 && k + 2 <= pairs && be[b]->prefetch8)
          err[b] = be[b]->prefetch8(ctx, bytes == 3 && k % 2 ? q[pairs + 1] : q[k + 2]);
        if (!err[b]) err[b] = be[b]->pair8(ctx, k ? NULL : q[0], q[k + 1], o, cap, &n[b][k]);
      } else
        err[b] = be[b]->pair(ctx, b && k ? NULL : frames[k], frames[k + 1], o, cap, &n[b][k]); /* CUDA: I0 NULL after the first */
    }
    if (!err[b]) be[b]->destroy(ctx);
  }
  for (int j = 0; j <= pairs + 1; j++) free(q[j]);
  free(q);
  if (err[0] || err[1]) {
    T_CHECK(NAME("cuda vs cpu %s", what), 0, "errors cpu %d cuda %d", err[0], err[1]);
    goto out;
  }
  int same_pts = 1, all = 0, bad = -1;
  for (int k = 0; k < pairs; k++) {
    const lt_vcm_vector *a = v[0] + (size_t)k * cap, *c = v[1] + (size_t)k * cap;
    int same = n[0][k] == n[1][k] && (expect_points ? n[0][k] > 0 : n[0][k] == 0);
    for (int i = 0; same && i < n[0][k]; i++) same = a[i].x == c[i].x && a[i].y == c[i].y;
    if (!same && bad < 0) bad = k;
    same_pts = same_pts && same;
    all += n[0][k];
  }
  T_CHECK(NAME("cuda vs cpu %s: the same %d points in the same order (%d pair%s)", what, all, pairs,
               pairs > 1 ? "s" : ""),
          same_pts, "pair %d: n cpu %d cuda %d", bad, bad >= 0 ? n[0][bad] : 0, bad >= 0 ? n[1][bad] : 0);
  if (!same_pts || all == 0) goto out;
  int within = 0, shown = 0, ev_same = 0, ev_n = 0;
  double worst = 0, wscore = 0;
  for (int k = 0; k < pairs; k++) {
    const lt_vcm_vector *a = v[0] + (size_t)k * cap, *c = v[1] + (size_t)k * cap;
    for (int i = 0; i < n[0][k]; i++) {
      double e = fmax(fabs(a[i].dx - c[i].dx), fabs(a[i].dy - c[i].dy));
      if (a[i].dx == c[i].dx && a[i].dy == c[i].dy) { /* the same vector: the same evidence */
        ev_n++;
        ev_same += memcmp(&a[i].evidence, &c[i].evidence, sizeof(float)) == 0;
      }
      worst = fmax(worst, e);
      wscore = fmax(wscore, fabs(a[i].score - c[i].score));
      if (e <= tol)
        within++;
      else if (shown++ < 4)
        printf("  mismatch %s pair %d point %d (%g,%g): cpu (%.6f,%.6f) cuda (%.6f,%.6f)\n", what, k, i, a[i].x,
               a[i].y, a[i].dx, a[i].dy, c[i].dx, c[i].dy);
    }
  }
  T_CHECK(NAME("cuda vs cpu %s: %d of %d vectors within %g px (need %.0f%%), worst %.2g px, worst "
               "score diff %.2g",
               what, within, all, tol, 100 * frac_within, worst, wscore),
          within >= frac_within * all, "too many differ");
  T_CHECK(NAME("cuda vs cpu %s: motion evidence equal to the bit for all %d equal vectors", what, ev_n),
          ev_same == ev_n, "%d of %d differ", ev_n - ev_same, ev_n);
out:
  free(n[0]);
  free(n[1]);
  free(v[0]);
  free(v[1]);
}

static void compare(const char *what, const lt_vcm_params *p, const float *const *frames, int pairs, int w, int h,
                    double tol, double frac_within, int expect_points)
{
  compare_as(what, p, frames, pairs, w, h, tol, frac_within, expect_points, 0);
}

int main(void)
{
  int count = 0;
  const char *why = "";
  if (lt_cuda_probe(&count, &why) != 0 || count == 0) {
    T_SKIP("vcm cuda vs cpu", "no CUDA device");
    T_DONE();
  }
  char path[1024];
  float *y8 = NULL, *y9 = NULL, *y10 = NULL;
  int w = 0, h = 0;
  snprintf(path, sizeof path, "%s/flow/yosemite/yos8.pgm", vc_data_dir());
  int bad = lt_image_read(path, LT_CHANNEL_LUMA, &y8, &w, &h);
  snprintf(path, sizeof path, "%s/flow/yosemite/yos9.pgm", vc_data_dir());
  bad = bad || lt_image_read(path, LT_CHANNEL_LUMA, &y9, &w, &h);
  snprintf(path, sizeof path, "%s/flow/yosemite/yos10.pgm", vc_data_dir());
  bad = bad || lt_image_read(path, LT_CHANNEL_LUMA, &y10, &w, &h);
  if (bad) {
    T_CHECK("yosemite data", 0, "%s/flow/yosemite not readable (set LT_DATA)", vc_data_dir());
    T_DONE();
  }
  lt_vcm_params p;
  lt_vcm_params_default(&p);
  const float *yos[3] = {y9, y10, NULL}, *yos3[3] = {y8, y9, y10};
  compare("yosemite 9->10 defaults", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  /* both accumulation kernels whatever the backend picks (LT_VCM_TILE: cu_alloc) */
  setenv("LT_VCM_TILE", "0", 1);
  compare("yosemite 9->10 defaults, vcm_k (LT_VCM_TILE=0)", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  setenv("LT_VCM_TILE", "2x1", 1);
  compare("yosemite 9->10 defaults, tiles of 2x1 sub-windows", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_TILE");
  /* four pairs there and back (each frame and vector buffer state of the
   * CUDA graphs, the point kernels' counters reset from pair to pair) */
  const float *seq[5] = {y8, y9, y10, y9, y8};
  compare("yosemite 8->9->10->9->8 defaults, every pair", &p, seq, 4, w, h, VCM_TOL_EXACT, 1.0, 1);
  compare_as("yosemite 8->9->10->9->8, pair8 with prefetch8 of the next frame", &p, seq, 4, w, h, VCM_TOL_EXACT,
             1.0, 1, 2);
  compare_as("yosemite 8->9->10->9->8, pair8, every other prefetch8 a wrong frame", &p, seq, 4, w, h,
             VCM_TOL_EXACT, 1.0, 1, 3);
  /* the launches' variants (cu_alloc): plain launches with the phase
   * events in line (LT_VCM_PDL=0), programmatic dependents with the early
   * trigger, with the events in line, the events beside plain launches,
   * and programmatic dependents launched without a graph */
  const char *pdl_env[][3] = {{"0", NULL, NULL}, {"early", NULL, NULL}, {NULL, "inline", NULL},
                              {"0", "side", NULL}, {NULL, NULL, "1"}};
  const char *pdl_name[3] = {"LT_VCM_PDL", "LT_VCM_EVENTS", "LT_VCM_NO_GRAPH"};
  char *pdl_outer[3]; /* the caller's values, set again after the variants */
  for (int k = 0; k < 3; k++) pdl_outer[k] = getenv(pdl_name[k]) ? strdup(getenv(pdl_name[k])) : NULL;
  for (int v = 0; v < 5; v++) {
    char what[160];
    snprintf(what, sizeof what, "yosemite 8->9->10->9->8, pair8 with prefetch8, LT_VCM_PDL=%s LT_VCM_EVENTS=%s%s",
             pdl_env[v][0] ? pdl_env[v][0] : "(unset)", pdl_env[v][1] ? pdl_env[v][1] : "(unset)",
             pdl_env[v][2] ? " LT_VCM_NO_GRAPH=1" : "");
    for (int k = 0; k < 3; k++) {
      if (pdl_env[v][k])
        setenv(pdl_name[k], pdl_env[v][k], 1);
      else
        unsetenv(pdl_name[k]);
    }
    compare_as(what, &p, seq, 4, w, h, VCM_TOL_EXACT, 1.0, 1, 2);
  }
  for (int k = 0; k < 3; k++) {
    if (pdl_outer[k])
      setenv(pdl_name[k], pdl_outer[k], 1);
    else
      unsetenv(pdl_name[k]);
    free(pdl_outer[k]);
  }
  /* the band kernel with 1 and 4 offsets per thread (2 unless told), the
   * NCM's window staged by bytes (by words unless told): cu_alloc */
  setenv("LT_VCM_BAND_OPT", "1", 1);
  compare("yosemite 9->10 defaults, 1 offset per thread (LT_VCM_BAND_OPT=1)", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0,
          1);
  setenv("LT_VCM_BAND_OPT", "4", 1);
  compare("yosemite 9->10 defaults, 4 offsets per thread (LT_VCM_BAND_OPT=4)", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0,
          1);
  unsetenv("LT_VCM_BAND_OPT");
  setenv("LT_VCM_NCM", "bytes", 1);
  compare("yosemite 9->10 defaults, NCM window by bytes (LT_VCM_NCM=bytes)", &p, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  /* the previous kernels of the NCM (fifth pixels by __sad) and of the
   * band sums (a neighbour a step by integer multiply-adds; two by
   * __dp2a unless told) */
  setenv("LT_VCM_NCM", "sad5", 1);
  compare("yosemite 9->10 defaults, NCM fifth pixels by __sad (LT_VCM_NCM=sad5)", &p, yos, 1, w, h, VCM_TOL_EXACT,
          1.0, 1);
  setenv("LT_VCM_NCM", "regs", 1);
  compare("yosemite 9->10 defaults, NCM SADs kept in registers (LT_VCM_NCM=regs)", &p, yos, 1, w, h, VCM_TOL_EXACT,
          1.0, 1);
  setenv("LT_VCM_NCM", "col5", 1); /* the SADs as floats, a 16-bit store per offset (4 a store unless told) */
  compare("yosemite 9->10 defaults, NCM a store per offset (LT_VCM_NCM=col5)", &p, yos, 1, w, h, VCM_TOL_EXACT,
          1.0, 1);
  unsetenv("LT_VCM_NCM");
  setenv("LT_VCM_BAND_DP", "0", 1);
  compare("yosemite 9->10 defaults, band sums a neighbour a step (LT_VCM_BAND_DP=0)", &p, yos, 1, w, h,
          VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_DP");
  /* the band's peak by a division at every offset (from the integer sums
   * where a point's neighbours all have the whole search area, unless told) */
  setenv("LT_VCM_BAND_PEAK", "div", 1);
  compare("yosemite 9->10 defaults, band peak divided at every offset (LT_VCM_BAND_PEAK=div)", &p, yos, 1, w, h,
          VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_PEAK");
  /* the tiles' neighbour lists built by each band block or by vcm_list_k
   * (by ncm5_k's tail blocks unless told: cu_alloc), and long lists:
   * radius 40 puts ~290 candidates in a tile's box (more than one chunk of
   * MAP_THREADS) */
  setenv("LT_VCM_BAND_LIST", "0", 1);
  compare("yosemite 9->10 defaults, lists per band block (LT_VCM_BAND_LIST=0)", &p, yos, 1, w, h, VCM_TOL_EXACT,
          1.0, 1);
  setenv("LT_VCM_BAND_LIST", "k", 1);
  compare("yosemite 9->10 defaults, lists by vcm_list_k (LT_VCM_BAND_LIST=k)", &p, yos, 1, w, h, VCM_TOL_EXACT,
          1.0, 1);
  unsetenv("LT_VCM_BAND_LIST");
  lt_vcm_params t = p;
  t.coherence_radius = 40;
  compare("yosemite 9->10 radius 40 (long tile lists)", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  setenv("LT_VCM_BAND_OPT", "4", 1);
  compare("yosemite 9->10 radius 40, 4 offsets per thread", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_OPT");
  setenv("LT_VCM_BAND_LIST", "0", 1); /* __dp2a over chunks of candidates (odd counts too) */
  compare("yosemite 9->10 radius 40, lists per band block", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_LIST");
  /* sums above 2^24 (many neighbours): offsets whose sums differ can share
   * the peak's float value, so the integer peak's near-maximum sums are divided */
  setenv("LT_VCM_BAND_PEAK", "div", 1);
  compare("yosemite 9->10 radius 40, band peak divided at every offset", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_PEAK");
  setenv("LT_VCM_BAND_DP", "q4", 1);
  compare("yosemite 9->10 radius 40, DP q4 (4 pairs' loads in flight)", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_DP");
  t = p;
  t.temporal_weight = 0.5f;
  compare("yosemite 8->9->10 temporal prior 0.5", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0, 1);
  setenv("LT_VCM_BAND_OPT", "4", 1);
  compare("yosemite 8->9->10 temporal prior 0.5, 4 offsets per thread", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_OPT");
  setenv("LT_VCM_BAND_LIST", "0", 1);
  compare("yosemite 8->9->10 temporal prior 0.5, lists per band block", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0, 1);
  setenv("LT_VCM_BAND_LIST", "k", 1);
  compare("yosemite 8->9->10 temporal prior 0.5, lists by vcm_list_k", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_BAND_LIST");
  setenv("LT_VCM_BAND_DP", "0", 1);
  compare("yosemite 8->9->10 temporal prior 0.5, band sums a neighbour a step", &t, yos3, 2, w, h, VCM_TOL_EXACT,
          1.0, 1);
  unsetenv("LT_VCM_BAND_DP");
  compare_as("yosemite 8->9->10 temporal 0.5, CUDA through pair8 (bytes)", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0,
             1, 1);
  compare_as("yosemite 8->9->10 temporal 0.5, pair8 with prefetch8", &t, yos3, 2, w, h, VCM_TOL_EXACT, 1.0, 1, 2);
  t = p;
  t.similarity = LT_VCM_SIM_EXP;
  compare("yosemite exp similarity", &t, yos, 1, w, h, VCM_TOL_EXP, 0.99, 1);
  t = p;
  t.subpixel = LT_VCM_SUB_PARABOLA;
  t.weighting = LT_VCM_W_GAUSS;
  t.points_per_cell = 5;
  compare("yosemite parabola, gauss weights, K 5", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  t = p;
  t.search = 128;
  compare("yosemite search 128", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  t = p; /* the generic NCM kernel (any patch) and the block per sub-window with one point */
  t.patch = 7;
  t.points_per_cell = 1;
  compare("yosemite patch 7, K 1", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);
  t = p; /* K 3: a block per point */
  t.points_per_cell = 3;
  t.coherence_radius = 12;
  compare("yosemite K 3, radius 12", &t, yos, 1, w, h, VCM_TOL_EXACT, 1.0, 1);

  enum { W = 160, H = 160 };
  static float s0[W * H], s1[W * H], f0[41 * 31], f1[41 * 31];
  vc_motion m;
  vc_motion_affine(&m, 3, 1, 0, 0);
  vc_make_pair(&m, W, H, 11, 2, s0, s1);
  const float *syn[2] = {s0, s1};
  t = p;
  t.grid_x = t.grid_y = 16;
  t.search = 16;
  compare("synthetic rotation 3 deg", &t, syn, 1, W, H, VCM_TOL_EXACT, 1.0, 1);
  compare_as("synthetic rotation 3 deg (fractional grey), CUDA through pair8 (bytes)", &t, syn, 1, W, H,
             VCM_TOL_EXACT, 1.0, 1, 1);
  t.grid_x = t.grid_y = 4; /* ~1.6 neighbours per point: vcm_k unless told */
  compare("synthetic rotation 3 deg, grid 4x4", &t, syn, 1, W, H, VCM_TOL_EXACT, 1.0, 1);
  setenv("LT_VCM_TILE", "2x2", 1);
  compare("synthetic rotation 3 deg, grid 4x4, tiles of 2x2 sub-windows", &t, syn, 1, W, H, VCM_TOL_EXACT, 1.0, 1);
  unsetenv("LT_VCM_TILE");
  /* a width that is no multiple of 4 (maxima_k's pixel-by-pixel path), K 4 */
  enum { W2 = 157, H2 = 121 };
  static float u0[W2 * H2], u1[W2 * H2];
  vc_make_pair(&m, W2, H2, 7, 2, u0, u1);
  const float *odd[2] = {u0, u1};
  t = p;
  t.grid_x = 13;
  t.grid_y = 11;
  t.search = 16;
  t.points_per_cell = 4;
  compare("synthetic rotation 3 deg, 157x121 frame, grid 13x11, K 4", &t, odd, 1, W2, H2, VCM_TOL_EXACT, 1.0, 1);
  vc_motion_affine(&m, 0, 1, 2, -1);
  vc_make_pair(&m, 40, 30, 5, 0, f0, f1);
  const float *small[2] = {f0, f1};
  t = p;
  t.grid_x = t.grid_y = 4;
  compare("40x30 frame, 64x64 search", &t, small, 1, 40, 30, VCM_TOL_EXACT, 1.0, 1);
  vc_make_pair(&m, 41, 31, 5, 0, f0, f1); /* 1271 bytes: the NCM window's last word read by bytes */
  compare("41x31 frame, 64x64 search", &t, small, 1, 41, 31, VCM_TOL_EXACT, 1.0, 1);
  for (int i = 0; i < 40 * 30; i++) f0[i] = f1[i] = 77.0f;
  compare("uniform frames (n = 0)", &p, small, 1, 40, 30, VCM_TOL_EXACT, 1.0, 0);
  free(y8);
  free(y9);
  free(y10);
  T_DONE();
}

#else
int main(void)
{
  T_SKIP("vcm cuda vs cpu", "CPU-only build (no CUDA device)");
  T_DONE();
}
#endif
