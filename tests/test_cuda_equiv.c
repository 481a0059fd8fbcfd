/* test_cuda_equiv.c - CPU-vs-CUDA equivalence of every leukocyte stage
 * (tests/tolerances.h): GICOV map, dilated map, maxima list, spline
 * refinement, MGVF on a window, and cells tracked over several frames; on
 * (a) the real Rodinia frame (ROI 0,110,640,219; 8-bit pixels: the CUDA
 * backend's 8-bit upload path) and (b) a synthetic frame with moving cells
 * (non-integer pixels: the float upload path). Every check is SKIPped, and
 * the program exits 0, when the binary has no CUDA or no device is usable.
 * Prints the measured maximum differences (lines starting "info") so the
 * tolerances can be recalibrated. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "mode.h"
#include "leuk.h"
#include "test.h"
#include "tolerances.h"
#include "video.h"

#define MAXM 65536
#define NCELLS 256

static const char *stage_names[] = {"gicov_map", "dilated_map", "maxima", "refine", "mgvf", "track",
                                    "track_appearance", "band_detect_split", "band_refine_ahead"};

static void skip_all(const char *why)
{
  const char *sets[] = {"rodinia", "synthetic"};
  char name[96];
  for (int s = 0; s < 2; s++)
    for (size_t k = 0; k < sizeof stage_names / sizeof stage_names[0]; k++) {
      snprintf(name, sizeof name, "cuda_equiv %s %s", sets[s], stage_names[k]);
      T_SKIP(name, why);
    }
}

static double maxdiff_f(const float *a, const float *b, size_t n)
{
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (d > m || d != d) m = d != d ? INFINITY : d;
  }
  return m;
}

/* The frame as bytes into b when every pixel is an integer 0..255 (else 0). */
static int to_bytes(const float *img, unsigned char *b, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    if (!(img[i] >= 0 && img[i] <= 255) || img[i] != (int)img[i]) return 0;
    b[i] = (unsigned char)img[i];
  }
  return 1;
}

/* A synthetic bright-field frame: smooth background, cells with a dark rim
 * and brighter interior (as data/lt_synth.c draws them), moved by t*v. */
static void synth_frame(float *img, int w, int h, int t)
{
  static const double cx[] = {60, 130, 210, 280, 90, 170, 250, 40, 300, 150};
  static const double cy[] = {60, 70, 55, 80, 160, 150, 170, 130, 140, 110};
  static const double cr[] = {10, 12, 14, 9, 16, 11, 13, 15, 10, 12};
  for (int r = 0; r < h; r++)
    for (int c = 0; c < w; c++) {
      double v = 120 + 8 * sin(c / 37.0) + 6 * cos(r / 23.0) + 2 * sin((c + 3 * r) / 7.0);
      for (int k = 0; k < 10; k++) {
        double x = cx[k] + 1.3 * t, y = cy[k] + 0.4 * t * (k % 3 - 1);
        double d = hypot(c - x, r - y), R = cr[k];
        double rim = fmin(fmax(R - d + 0.5, 0), 1) - fmin(fmax(R - 3 - d + 0.5, 0), 1);
        double in = fmin(fmax(R - 3 - d + 0.5, 0), 1);
        v += -40 * rim + 8 * in;
      }
      img[(size_t)r * w + c] = (float)v; /* not rounded: float path */
    }
}

typedef struct side {
  const lt_leuk_backend *be;
  void *ctx;
  lt_leuk_max *m;
  lt_leuk_det *d;
  float *map;
  int n;
} side;

static int open_side(side *s, const lt_leuk_backend *be, const lt_leuk_params *p, int w, int h)
{
  memset(s, 0, sizeof *s);
  s->be = be;
  s->m = malloc(sizeof *s->m * MAXM);
  s->d = malloc(sizeof *s->d * MAXM);
  s->map = malloc(sizeof(float) * (size_t)w * h);
  if (!s->m || !s->d || !s->map) return -1;
  return be->create(&s->ctx, p, w, h, NCELLS);
}

static void close_side(side *s)
{
  if (s->ctx) s->be->destroy(s->ctx);
  free(s->m);
  free(s->d);
  free(s->map);
}

/* frames(t, img) gives frame t. */
typedef void (*frame_fn)(float *img, int w, int h, int t, void *u);

/* One map of the last detection, CPU (a->map) vs CUDA (into mapb). */
static void compare_map(const char *set, const char *what, int which, double tol, side *a, side *b,
                        float *mapb, size_t n)
{
  char name[128];
  a->be->get_map(a->ctx, which, a->map);
  b->be->get_map(b->ctx, which, mapb);
  double d = maxdiff_f(a->map, mapb, n);
  printf("info %s %s max|diff| = %.3g\n", set, what, d);
  snprintf(name, sizeof name, "cuda_equiv %s %s", set, what);
  T_CHECK(name, d <= tol, "max |cpu - cuda| = %.3g > %.3g", d, tol);
}

static void run_set(const char *set, const lt_leuk_backend *cuda, const float *frame0, frame_fn next,
                    void *u, int w, int h, lt_rect roi, int nframes)
{
  char name[128];
  lt_leuk_params p;
  lt_leuk_params_default(&p);
  p.roi = p.entry_roi = roi;
  /* LT_EQUIV_ITER_CAP=N caps the MGVF and snake iterations on both sides
   * (same parameters, so equivalence still holds): for compute-sanitizer's
   * racecheck, which is too slow for 500 MGVF iterations. */
  const char *cap = getenv("LT_EQUIV_ITER_CAP");
  if (cap && atoi(cap) > 0) {
    p.mgvf_max_iter = atoi(cap);
    p.evolve_max_iter = atoi(cap);
  }
  /* LT_MGVF_COL=omega as leuktrack reads it (0: Jacobi, whose CUDA paths
   * include the cluster MGVF kernel; default: the column SOR, dense) */
  const char *mc = getenv("LT_MGVF_COL");
  if (mc && *mc) p.mgvf_col = atof(mc);
  side A, B;
  int ea = open_side(&A, &lt_leuk_backend_cpu, &p, w, h), eb = open_side(&B, cuda, &p, w, h);
  snprintf(name, sizeof name, "cuda_equiv %s create", set);
  T_CHECK(name, ea == 0 && eb == 0, "create: cpu %d, cuda %d", ea, eb);
  if (ea || eb) goto out;

  A.be->set_frame(A.ctx, frame0, NULL);
  int err = B.be->set_frame(B.ctx, frame0, NULL);
  int ra = A.be->detect(A.ctx, &roi, A.m, MAXM, &A.n);
  int rb = err ? err : B.be->detect(B.ctx, &roi, B.m, MAXM, &B.n);
  snprintf(name, sizeof name, "cuda_equiv %s detect runs", set);
  T_CHECK(name, ra == 0 && rb == 0, "detect: cpu %d, cuda %d", ra, rb);
  if (ra || rb) goto out;

  /* GICOV and dilated maps */
  size_t nroi = (size_t)roi.w * roi.h;
  float *mapb = malloc(sizeof(float) * nroi);
  compare_map(set, "gicov_map", LT_MAP_GICOV, TOL_GICOV_MAP, &A, &B, mapb, nroi);
  compare_map(set, "dilated_map", LT_MAP_DILATED, TOL_DILATE_MAP, &A, &B, mapb, nroi);
  free(mapb);

  /* maxima */
  int mism = A.n == B.n ? 0 : abs(A.n - B.n);
  double dgm = 0;
  for (int i = 0; i < A.n && i < B.n; i++) {
    if (A.m[i].x != B.m[i].x || A.m[i].y != B.m[i].y || A.m[i].radius != B.m[i].radius) {
      if (mism < 3)
        printf("info %s maxima #%d: cpu (%d,%d r%d %.4f) cuda (%d,%d r%d %.4f)\n", set, i, A.m[i].x, A.m[i].y,
               A.m[i].radius, A.m[i].gicov, B.m[i].x, B.m[i].y, B.m[i].radius, B.m[i].gicov);
      mism++;
    }
    dgm = fmax(dgm, fabs(A.m[i].gicov - B.m[i].gicov));
  }
  printf("info %s maxima: cpu %d, cuda %d, mismatches %d, max|dgicov| %.3g\n", set, A.n, B.n, mism, dgm);
  snprintf(name, sizeof name, "cuda_equiv %s maxima", set);
  T_CHECK(name, mism <= TOL_MAXIMA_MISMATCH && dgm <= TOL_GICOV_MAP, "cpu %d maxima, cuda %d, %d mismatches", A.n,
          B.n, mism);

  /* refinement of the candidates over the threshold (CPU's list for both) */
  int nc = 0;
  for (int i = 0; i < A.n; i++)
    if (fabsf(A.m[i].gicov) > p.gicov_threshold) A.m[nc++] = A.m[i];
  A.be->refine(A.ctx, A.m, nc, A.d);
  err = B.be->refine(B.ctx, A.m, nc, B.d);
  double dr = 0;
  int okm = 0;
  for (int i = 0; i < nc; i++) {
    dr = fmax(dr, fmax(fabs(A.d[i].x - B.d[i].x), fmax(fabs(A.d[i].y - B.d[i].y), fabs(A.d[i].r - B.d[i].r))));
    okm += A.d[i].ok != B.d[i].ok;
  }
  printf("info %s refine: %d candidates, max|diff| %.3g px, ok mismatches %d\n", set, nc, dr, okm);
  snprintf(name, sizeof name, "cuda_equiv %s refine", set);
  T_CHECK(name, err == 0 && nc > 0 && dr <= TOL_REFINE_PX && okm == 0,
          "err %d, %d candidates, max diff %.3g px, %d ok-flag mismatches", err, nc, dr, okm);

  /* MGVF on the window around the strongest candidate (as track.c builds it) */
  {
    int best = 0;
    for (int i = 1; i < nc; i++)
      if (fabsf(A.m[i].gicov) > fabsf(A.m[best].gicov)) best = i;
    int R = nc ? A.m[best].radius : 12, hx = (int)(4 * R + 0.5), hy = (int)(2 * R + 0.5);
    int qx = nc ? A.m[best].x : w / 2, qy = nc ? A.m[best].y : h / 2;
    int u1 = qx - hx < 0 ? 0 : qx - hx, u2 = qx + hx > w - 1 ? w - 1 : qx + hx;
    int v1 = qy - hy < 0 ? 0 : qy - hy, v2 = qy + hy > h - 1 ? h - 1 : qy + hy;
    int ww = u2 - u1 + 1, wh = v2 - v1 + 1;
    size_t n = (size_t)ww * wh;
    float *win = malloc(sizeof(float) * n * 5);
    float *E = win + n, *gx = E + n, *gy = gx + n, *F1 = gy + n, *F2 = malloc(sizeof(float) * n);
    for (int i = 0; i < wh; i++) memcpy(win + (size_t)i * ww, frame0 + (size_t)(v1 + i) * w + u1, sizeof(float) * ww);
    lt_gradient(win, ww, wh, gx, gy);
    for (size_t i = 0; i < n; i++) E[i] = sqrtf(gx[i] * gx[i] + gy[i] * gy[i]);
    lt_normalise(E, (int)n);
    int ia = 0, ib = 0;
    A.be->mgvf(A.ctx, E, ww, wh, F1, &ia);
    err = B.be->mgvf(B.ctx, E, ww, wh, F2, &ib);
    double dm = maxdiff_f(F1, F2, n);
    printf("info %s mgvf %dx%d window: iterations cpu %d cuda %d, max|diff| %.3g\n", set, ww, wh, ia, ib, dm);
    snprintf(name, sizeof name, "cuda_equiv %s mgvf", set);
    T_CHECK(name, err == 0 && dm <= TOL_MGVF && abs(ia - ib) <= TOL_MGVF_ITERS,
            "err %d, iterations %d vs %d, max diff %.3g", err, ia, ib, dm);
    free(win);
    free(F2);
  }

  /* tracking: cells from the refined detections, nframes frames */
  {
    lt_leuk_cell *ca = calloc(NCELLS, sizeof *ca), *cb = calloc(NCELLS, sizeof *cb);
    /* the templates as taken (to count the refreshed ones), and as read back */
    float *tpl0 = malloc(sizeof(float) * NCELLS * LT_LEUK_TPL_N), *ta = malloc(sizeof(float) * LT_LEUK_TPL_N),
          *tb = malloc(sizeof(float) * LT_LEUK_TPL_N);
    int ncell = 0;
    err = 0;
    for (int i = 0; i < nc && ncell < NCELLS; i++) {
      const lt_leuk_det *d = &A.d[i];
      double rad = A.m[i].radius;
      if (!d->ok || d->x - rad < roi.x || d->y - rad < roi.y || d->x + rad > roi.x + roi.w - 1 ||
          d->y + rad > roi.y + roi.h - 1)
        continue;
      int dup = 0;
      for (int j = 0; j < ncell; j++)
        if (hypot(d->x - ca[j].xc, d->y - ca[j].yc) < fmax(rad, ca[j].R)) dup = 1;
      if (dup) continue;
      lt_leuk_cell_init(&ca[ncell], d, rad);
      /* the appearance cue (p.appearance, default on): the template from
       * the detection's frame, as the pipeline takes it, into both
       * backends' slot of the cell (its index) */
      ca[ncell].tpl = ncell;
      lt_leuk_cell_template(&ca[ncell], frame0, w, h, tpl0 + (size_t)ncell * LT_LEUK_TPL_N);
      if (!err) err = A.be->tpl_set(A.ctx, ncell, tpl0 + (size_t)ncell * LT_LEUK_TPL_N);
      if (!err) err = B.be->tpl_set(B.ctx, ncell, tpl0 + (size_t)ncell * LT_LEUK_TPL_N);
      ncell++;
    }
    memcpy(cb, ca, sizeof *ca * NCELLS);
    float *img = malloc(sizeof(float) * (size_t)w * h);
    double dt = 0, dbg = 0;
    int stm = 0, itm = 0, bmism = 0, split = B.be->detect_start && B.be->detect_end;
    /* the band's candidates refined after the split detection (CUDA: looked
     * up among its refinements ahead) against the CPU and, bit for bit,
     * against CUDA's own refinement after a plain detect of the same band */
    int nband = 0, rokm = 0, rbits = 0;
    double rdr = 0;
    lt_leuk_det *dplain = malloc(sizeof *dplain * MAXM);
    /* the entry band's detection as the pipeline runs it: CUDA in two halves
     * around the tracking (detect_start, track, detect_end), CPU after it */
    lt_rect band = {roi.x, roi.y, 2 * (p.rmax + 2) + 1 + p.search, roi.h};
    if (band.w > roi.w) band.w = roi.w;
    /* 8-bit frames (the real frame) go to CUDA as bytes and the next one is
     * prefetched before the tracking, as the CLI's frame loop does: CUDA
     * then converts the next frame and makes its band detection and
     * refinement ahead after the tracking (backend.cu, spec_issue), which
     * the next frame's split detection takes */
    float *imgn = malloc(sizeof(float) * (size_t)w * h);
    unsigned char *b8[2] = {malloc((size_t)w * h), malloc((size_t)w * h)};
    for (int t = 1; t <= nframes && !err; t++) {
      next(img, w, h, t, u);
      const int is8 = to_bytes(img, b8[t & 1], (size_t)w * h);
      A.be->set_frame(A.ctx, img, NULL);
      B.be->set_frame(B.ctx, img, is8 ? b8[t & 1] : NULL);
      /* the threshold the pipeline refines over, handed to detect_start:
       * the lowest it can apply on even frames, gicov_threshold on odd ones
       * (fewer refinements ahead; those over it must all be there) */
      const double lo_t = t % 2 ? p.gicov_threshold : fmin(p.gicov_threshold, p.adapt_floor);
      if (split) err = B.be->detect_start(B.ctx, &band, lo_t);
      if (is8 && t < nframes && B.be->prefetch) {
        next(imgn, w, h, t + 1, u);
        if (to_bytes(imgn, b8[(t + 1) & 1], (size_t)w * h)) B.be->prefetch(B.ctx, imgn, b8[(t + 1) & 1]);
      }
      A.be->track(A.ctx, ca, ncell);
      if (!err) err = B.be->track(B.ctx, cb, ncell);
      if (split && !err) {
        A.be->detect(A.ctx, &band, A.m, MAXM, &A.n);
        err = B.be->detect_end(B.ctx, B.m, MAXM, &B.n);
        /* the maxima over detect_start's threshold (all of them refined
         * ahead; detect_end may leave the others out): the CPU's all */
        int na = 0, nb = 0;
        for (int i = 0; i < A.n; i++)
          if (fabsf(A.m[i].gicov) > lo_t) A.m[na++] = A.m[i];
        for (int i = 0; i < B.n; i++)
          if (fabsf(B.m[i].gicov) > lo_t) B.m[nb++] = B.m[i];
        bmism += abs(na - nb);
        for (int i = 0; i < na && i < nb; i++) {
          bmism += A.m[i].x != B.m[i].x || A.m[i].y != B.m[i].y || A.m[i].radius != B.m[i].radius;
          dbg = fmax(dbg, fabs(A.m[i].gicov - B.m[i].gicov));
        }
        A.be->refine(A.ctx, B.m, nb, A.d);
        if (!err) err = B.be->refine(B.ctx, B.m, nb, B.d);
        int nplain = 0;
        if (!err) err = B.be->detect(B.ctx, &band, A.m, MAXM, &nplain);
        if (!err) err = B.be->refine(B.ctx, B.m, nb, dplain);
        for (int i = 0; i < nb && !err; i++) {
          rdr = fmax(rdr, fmax(fabs(A.d[i].x - B.d[i].x), fmax(fabs(A.d[i].y - B.d[i].y), fabs(A.d[i].r - B.d[i].r))));
          rokm += A.d[i].ok != B.d[i].ok;
          rbits += B.d[i].x != dplain[i].x || B.d[i].y != dplain[i].y || B.d[i].r != dplain[i].r ||
                   B.d[i].ok != dplain[i].ok;
        }
        nband += nb;
      }
      for (int i = 0; i < ncell; i++) {
        dt = fmax(dt, fmax(fabs(ca[i].xc - cb[i].xc), fabs(ca[i].yc - cb[i].yc)));
        for (int j = 0; j < LT_LEUK_SNAXELS; j++) dt = fmax(dt, fabs(ca[i].r[j] - cb[i].r[j]));
        stm += ca[i].status != cb[i].status;
        itm += ca[i].mgvf_iter != cb[i].mgvf_iter;
      }
    }
    printf("info %s track: %d cells x %d frames, max|diff| %.3g px, status mismatches %d, mgvf-iteration "
           "mismatches %d\n", set, ncell, nframes, dt, stm, itm);
    snprintf(name, sizeof name, "cuda_equiv %s track", set);
    T_CHECK(name, err == 0 && ncell > 0 && dt <= TOL_TRACK_PX && stm == 0,
            "err %d, %d cells, max diff %.3g px, %d status mismatches", err, ncell, dt, stm);
    /* the appearance cue: both sides refresh the same templates from the
     * same frames (bit for bit), and some were refreshed (the refresh ran) */
    int tplm = 0, nref = 0;
    for (int i = 0; i < ncell && !err; i++) {
      err = A.be->tpl_get(A.ctx, i, ta);
      if (!err) err = B.be->tpl_get(B.ctx, i, tb);
      tplm += memcmp(ta, tb, sizeof(float) * LT_LEUK_TPL_N) != 0;
      nref += memcmp(ta, tpl0 + (size_t)i * LT_LEUK_TPL_N, sizeof(float) * LT_LEUK_TPL_N) != 0;
    }
    printf("info %s track appearance (%g): %d cells' templates refreshed, %d differ between the backends\n", set,
           p.appearance, nref, tplm);
    snprintf(name, sizeof name, "cuda_equiv %s track_appearance", set);
    T_CHECK(name, err == 0 && p.appearance > 0 && nref > 0 && tplm == 0,
            "err %d, appearance %g, %d refreshed, %d differ", err, p.appearance, nref, tplm);
    printf("info %s band detect in two halves around the tracking (maxima over its threshold): %d maxima mismatches, max|dgicov| %.3g\n", set,
           bmism, dbg);
    snprintf(name, sizeof name, "cuda_equiv %s band_detect_split", set);
    T_CHECK(name, err == 0 && split && bmism <= TOL_MAXIMA_MISMATCH && dbg <= TOL_GICOV_MAP,
            "err %d, split %d, %d maxima mismatches, max |dgicov| %.3g", err, split, bmism, dbg);
    printf("info %s band refine ahead: %d candidates, max|diff| to cpu %.3g px, ok mismatches %d, %d differ from "
           "the plain refine\n", set, nband, rdr, rokm, rbits);
    snprintf(name, sizeof name, "cuda_equiv %s band_refine_ahead", set);
    T_CHECK(name, err == 0 && split && nband > 0 && rdr <= TOL_REFINE_PX && rokm == 0 && rbits == 0,
            "err %d, %d candidates, max diff %.3g px, %d ok mismatches, %d differ from the plain refine", err, nband,
            rdr, rokm, rbits);
    free(dplain);
    free(imgn);
    free(b8[0]);
    free(b8[1]);
    free(img);
    free(ca);
    free(cb);
    free(tpl0);
    free(ta);
    free(tb);
  }
out:
  close_side(&A);
  close_side(&B);
}

static void same_frame(float *img, int w, int h, int t, void *u)
{
  (void)t;
  memcpy(img, u, sizeof(float) * (size_t)w * h);
}
static void synth_next(float *img, int w, int h, int t, void *u)
{
  (void)u;
  synth_frame(img, w, h, t);
}

int main(void)
{
  const char *why = "no CUDA device";
  setenv("LT_CUDA_AHEAD", "2", 0); /* a refine after a split detection that misses its refinements ahead fails */
  if (!lt_have_cuda()) {
    skip_all("built without CUDA");
    T_DONE();
  }
  if (lt_cuda_device_count(&why) == 0) {
    skip_all("no CUDA device");
    printf("info: %s\n", why);
    T_DONE();
  }
  const void *stages = NULL;
  int err = lt_backend_stages("leukocyte", LT_BACKEND_CUDA, 0, &lt_leuk_backend_cpu, &stages);
  const lt_leuk_backend *cuda = stages;
  T_CHECK("cuda_equiv select", err == 0 && cuda != &lt_leuk_backend_cpu, "lt_backend_stages returned %d", err);
  if (err) T_DONE();

  /* (a) the real frame */
  const char *dd = getenv("LT_DATA");
  char path[1024];
  snprintf(path, sizeof path, "%s/leukocyte/rodinia_testfile_1frame.avi", dd && dd[0] ? dd : "../shared/data");
  lt_video *v = NULL;
  if (lt_video_open(&v, path, LT_CHANNEL_LUMA, 2) == 0) {
    const lt_frame *f;
    if (lt_video_next(v, &f) == 1) {
      int w = f->width, h = f->height;
      float *img = malloc(sizeof(float) * (size_t)w * h);
      memcpy(img, f->grey, sizeof(float) * (size_t)w * h);
      lt_rect roi = {0, 110, 640, 219};
      if (roi.x + roi.w > w || roi.y + roi.h > h) roi = (lt_rect){0, 0, w, h};
      run_set("rodinia", cuda, img, same_frame, img, w, h, roi, 3);
      free(img);
    }
    lt_video_close(v);
  } else {
    const char *s[] = {"gicov_map", "dilated_map", "maxima", "refine", "mgvf", "track"};
    char name[96];
    for (int k = 0; k < 6; k++) {
      snprintf(name, sizeof name, "cuda_equiv rodinia %s", s[k]);
      T_SKIP(name, "rodinia_testfile_1frame.avi not found (set LT_DATA)");
    }
  }

  /* (b) synthetic */
  {
    int w = 320, h = 240;
    float *img = malloc(sizeof(float) * (size_t)w * h);
    synth_frame(img, w, h, 0);
    run_set("synthetic", cuda, img, synth_next, NULL, w, h, (lt_rect){0, 0, w, h}, 8);
    free(img);
  }
  T_DONE();
}
