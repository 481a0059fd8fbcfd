/* test_tumor_cuda.c - the tumour mode's CUDA backend against the CPU exact
 * reference (tumor/corr.h): the paper's six configurations (seeds/001 table
 * II) plus 156x116 with a wide shift range, 400x400, 37x300 (several
 * column chunks) and mixed sizes, through the NVRTC-specialised kernel and
 * the generic one (LT_TUMOR_NVRTC=0), and the kernel cache (a second create
 * hits it; a corrupted entry is detected and rebuilt). Tolerance:
 * max |cuda - exact| <= 1e-4 (window sums exact in double; the cross term
 * in float within a tile of <= 16 x 128 pixels, double across tiles; the
 * score is a ratio of sums of ~1e4-1e5 terms, so ~1e-6 is expected).
 * LT_TEST_SUBSET=1 runs the quick cases only (for compute-sanitizer).
 * SKIPs everything without a CUDA device (or in a CPU-only build). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test.h"
#include "tumor/corr.h"
#ifdef LT_HAVE_CUDA
#include "../cuda/runtime.h"
#include "../cuda/tumor/tumor_cuda.h"

#define TOL_TUMOR_CUDA 1e-4

static uint32_t rng(uint32_t *s)
{
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

/* textured frame: smooth pattern + noise, float values (the float path) */
static void make_frame(float *f, int w, int h, uint32_t seed)
{
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      f[(size_t)y * w + x] = (float)(128 + 50 * sin(0.13 * x + 0.4) * cos(0.09 * y) + 20 * sin(0.031 * (x + 2 * y)) +
                                     (rng(&seed) % 1000) / 50.0);
}

/* one configuration: K templates tw x th (cols x rows) cut from f0 on a grid,
 * matched in f1 (f0 moved) with +-V/+-H; returns max |cuda - exact| or -1 */
static double run_case(const char *name, const float *f0, const float *f1, int fw, int fh, int K, int tw, int th,
                       int V, int H, int mixed, lt_tumor_stats *st)
{
  lt_tumor_template *tp = calloc(K, sizeof *tp);
  for (int k = 0; k < K; k++) {
    int w = mixed ? tw - 3 * k : tw, h = mixed ? th + 2 * k : th;
    int cols = fw / (w + 1) > 0 ? fw / (w + 1) : 1;
    int x = (k % cols) * (fw - w) / (cols > 1 ? cols - 1 : 1), y = ((k * 37) % (fh - h + 1));
    if (k == K - 1) x = 0; /* some shifts leave the frame */
    float *px = malloc(sizeof(float) * w * h);
    for (int i = 0; i < h; i++) memcpy(px + (size_t)i * w, f0 + (size_t)(y + i) * fw + x, sizeof(float) * w);
    tp[k] = (lt_tumor_template){px, w, h, x, y};
  }
  lt_tumor_setup s = {fw, fh, K, tp, V, H};
  const long n = (long)K * lt_tumor_npos(&s);
  double *ex = malloc(sizeof(double) * n);
  float *gs = malloc(sizeof(float) * n);
  lt_tumor_corr_exact(&s, f1, ex);
  void *ctx = NULL;
  double d = -1;
  int e = lt_tumor_backend_cuda.create(&ctx, &s);
  if (e == 0) e = lt_tumor_backend_cuda.match(ctx, f1, gs);
  if (e == 0) {
    lt_tumor_backend_cuda.stats(ctx, st);
    d = 0;
    long at = 0;
    for (long i = 0; i < n; i++) {
      double v = fabs(gs[i] - ex[i]);
      if (!(v <= d)) {
        d = v != v ? INFINITY : v;
        at = i;
      }
    }
    if (d > TOL_TUMOR_CUDA) printf("# %s: worst at %ld: cuda %.7f exact %.7f\n", name, at, gs[at], ex[at]);
    /* the peaks found on the GPU: the same as peak.c on the GPU's own maps,
     * and the same shifts as on the exact maps */
    lt_tumor_peak *gp = calloc(K, sizeof *gp);
    float *gs2 = malloc(sizeof(float) * n), *exf = malloc(sizeof(float) * n);
    for (long i = 0; i < n; i++) exf[i] = (float)ex[i];
    int bad = lt_tumor_backend_cuda.match_peaks(ctx, f1, NULL, gs2, gp) != 0;
    for (int k = 0; k < K && !bad; k++) {
      lt_tumor_peak hp, xp;
      int e1 = lt_tumor_peak_one(&s, gs, k, &hp), e2 = lt_tumor_peak_one(&s, exf, k, &xp);
      if (e1 != e2 || hp.dy != gp[k].dy || hp.dx != gp[k].dx || hp.score != gp[k].score ||
          fabs(hp.dy_sub - gp[k].dy_sub) > 1e-12 || fabs(hp.dx_sub - gp[k].dx_sub) > 1e-12 || xp.dy != gp[k].dy ||
          xp.dx != gp[k].dx || hp.row != gp[k].row || hp.col != gp[k].col) {
        printf("# %s: template %d: gpu peak %d,%d %.7f (%.6f,%.6f), host on gpu maps %d,%d %.7f (%.6f,%.6f), exact %d,%d\n",
               name, k, gp[k].dy, gp[k].dx, gp[k].score, gp[k].dy_sub, gp[k].dx_sub, hp.dy, hp.dx, hp.score,
               hp.dy_sub, hp.dx_sub, xp.dy, xp.dx);
        bad = 1;
      }
    }
    for (long i = 0; i < n && !bad; i++) bad = gs2[i] != gs[i];
    char pn[160];
    snprintf(pn, sizeof pn, "%s_gpu_peaks", name);
    T_CHECK(pn, !bad, "GPU peak search differs from peak.c (or maps differ between match and match_peaks)");
    free(gp);
    free(gs2);
    free(exf);
  }
  lt_tumor_backend_cuda.destroy(ctx);
  for (int k = 0; k < K; k++) free((void *)tp[k].px);
  free(tp);
  free(ex);
  free(gs);
  return d;
}

/* The 8-bit path with the prefetch: three byte frames matched in the order
 * A (prefetching B), B (prefetched; prefetching C), C (prefetched), A again
 * (nothing prefetched), C with a stale prefetch of B; every map within the
 * tolerance of the exact maps of the same frames as floats, the peaks equal
 * to peak.c on the downloaded maps. Then the same five frames through the
 * two-deep pipeline (submit frame j, collect frame j - 1): the same peaks as
 * match_peaks gave, frame by frame. Then again with the three frames in a
 * read-only memory-mapped file handed to the backend (map: frames going up
 * straight out of it), one frame of the five from ordinary memory: the same
 * peaks again. */
static void map_case(const char *name, unsigned char *const *b, size_t np, const int *order, int K,
                     const lt_tumor_setup *s, const lt_tumor_peak *seq);

static void bytes_case(const char *name, const float *f0, int fw, int fh, int K, int tw, int th, int V, int H)
{
  const size_t np = (size_t)fw * fh;
  unsigned char *b[3];
  float *fl[3];
  for (int i = 0; i < 3; i++) {
    b[i] = malloc(np);
    fl[i] = malloc(sizeof(float) * np);
    for (int y = 0; y < fh; y++)
      for (int x = 0; x < fw; x++) {
        int sy = y - i < 0 ? 0 : y - i, sx = x + 2 * i >= fw ? fw - 1 : x + 2 * i;
        float v = f0[(size_t)sy * fw + sx] + (float)((y * 3 + x * 5 + i) % 7) - 3.0f;
        v = v < 0 ? 0 : v > 255 ? 255 : v;
        b[i][(size_t)y * fw + x] = (unsigned char)lrintf(v);
        fl[i][(size_t)y * fw + x] = (float)b[i][(size_t)y * fw + x];
      }
  }
  lt_tumor_template *tp = calloc(K, sizeof *tp);
  for (int k = 0; k < K; k++) {
    int x = (k * 97) % (fw - tw + 1), y = (k * 61) % (fh - th + 1);
    if (k == 0) x = 1; /* some shifts leave the frame */
    float *px = malloc(sizeof(float) * tw * th);
    for (int r = 0; r < th; r++) memcpy(px + (size_t)r * tw, fl[0] + (size_t)(y + r) * fw + x, sizeof(float) * tw);
    tp[k] = (lt_tumor_template){px, tw, th, x, y};
  }
  lt_tumor_setup s = {fw, fh, K, tp, V, H};
  const long n = (long)K * lt_tumor_npos(&s);
  double *ex = malloc(sizeof(double) * n);
  float *gs = malloc(sizeof(float) * n);
  lt_tumor_peak *gp = calloc(K, sizeof *gp), *seq = calloc(5 * (size_t)K, sizeof *seq);
  void *ctx = NULL;
  int e = lt_tumor_backend_cuda.create(&ctx, &s);
  const int order[5] = {0, 1, 2, 0, 2}, pref[5] = {1, 2, -1, -1, 1};
  double worst = e ? INFINITY : 0;
  int peaks_bad = e != 0;
  for (int j = 0; j < 5 && !e; j++) {
    const int f = order[j];
    if (pref[j] >= 0) e = lt_tumor_backend_cuda.prefetch(ctx, b[pref[j]]);
    if (!e) e = lt_tumor_backend_cuda.match_peaks(ctx, NULL, b[f], gs, gp);
    if (e) {
      worst = INFINITY;
      break;
    }
    memcpy(seq + (size_t)j * K, gp, sizeof *gp * K);
    lt_tumor_corr_exact(&s, fl[f], ex);
    for (long i = 0; i < n; i++) {
      double v = fabs(gs[i] - ex[i]);
      if (!(v <= worst)) worst = v != v ? INFINITY : v;
    }
    for (int k = 0; k < K; k++) {
      lt_tumor_peak hp;
      lt_tumor_peak_one(&s, gs, k, &hp);
      if (hp.dy != gp[k].dy || hp.dx != gp[k].dx || hp.score != gp[k].score || hp.dy_sub != gp[k].dy_sub ||
          hp.dx_sub != gp[k].dx_sub)
        peaks_bad++;
    }
  }
  /* without the maps: the same peaks */
  if (!e) {
    lt_tumor_peak *gp2 = calloc(K, sizeof *gp2);
    e = lt_tumor_backend_cuda.match_peaks(ctx, NULL, b[2], NULL, gp2);
    for (int k = 0; k < K && !e; k++) peaks_bad += memcmp(&gp[k], &gp2[k], sizeof *gp2) != 0;
    if (e) peaks_bad++;
    free(gp2);
  }
  /* the pipeline: frame j goes out before frame j - 1 is collected */
  int pipe_bad = e != 0;
  for (int j = 0; j <= 5 && !e; j++) {
    if (j < 5) e = lt_tumor_backend_cuda.submit(ctx, b[order[j]]);
    if (!e && j > 0) {
      e = lt_tumor_backend_cuda.collect(ctx, gp);
      for (int k = 0; k < K && !e; k++) pipe_bad += memcmp(&gp[k], &seq[(size_t)(j - 1) * K + k], sizeof *gp) != 0;
    }
    if (e) pipe_bad++;
  }
  lt_tumor_backend_cuda.destroy(ctx);
  if (!pipe_bad && !peaks_bad) map_case(name, b, np, order, K, &s, seq);
  char nm[160];
  snprintf(nm, sizeof nm, "%s_bytes_maps", name);
  T_CHECK(nm, worst <= TOL_TUMOR_CUDA, "max |cuda - exact| %.3g over 5 byte frames (with prefetch)", worst);
  snprintf(nm, sizeof nm, "%s_bytes_peaks", name);
  T_CHECK(nm, peaks_bad == 0, "%d peak(s) differ from peak.c on the GPU maps", peaks_bad);
  snprintf(nm, sizeof nm, "%s_pipeline_peaks", name);
  T_CHECK(nm, pipe_bad == 0, "%d peak(s) or calls differ between submit/collect and match_peaks", pipe_bad);
  free(seq);
  for (int k = 0; k < K; k++) free((void *)tp[k].px);
  free(tp);
  free(ex);
  free(gs);
  free(gp);
  for (int i = 0; i < 3; i++) {
    free(b[i]);
    free(fl[i]);
  }
}

static void map_case(const char *name, unsigned char *const *b, size_t np, const int *order, int K,
                     const lt_tumor_setup *s, const lt_tumor_peak *seq)
{
  char path[] = "/tmp/lt_tumor_map.XXXXXX", nm[160];
  const size_t head = 37; /* frames at odd offsets, as behind y4m FRAME lines */
  int fd = mkstemp(path), bad = 0, e = 0;
  unsigned char *m = MAP_FAILED;
  const size_t size = head + 3 * np;
  if (fd >= 0) {
    unsigned char pad[37] = {0};
    int ok = write(fd, pad, head) == (ssize_t)head;
    for (int i = 0; i < 3 && ok; i++) ok = write(fd, b[i], np) == (ssize_t)np;
    if (ok) m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    unlink(path);
  }
  snprintf(nm, sizeof nm, "%s_map_peaks", name);
  if (m == MAP_FAILED) {
    T_CHECK(nm, 0, "no memory-mapped file");
    return;
  }
  lt_tumor_peak *gp = calloc(K, sizeof *gp);
  void *ctx = NULL;
  e = lt_tumor_backend_cuda.create(&ctx, s);
  if (!e) lt_tumor_backend_cuda.map(ctx, m, size);
  for (int j = 0; j <= 5 && !e; j++) {
    const unsigned char *f = j == 3 ? b[order[j]] : m + head + (size_t)order[j] * np;
    if (j < 5) e = lt_tumor_backend_cuda.submit(ctx, f);
    if (!e && j > 0) {
      e = lt_tumor_backend_cuda.collect(ctx, gp);
      for (int k = 0; k < K && !e; k++) bad += memcmp(&gp[k], &seq[(size_t)(j - 1) * K + k], sizeof *gp) != 0;
    }
  }
  lt_tumor_stats st;
  memset(&st, 0, sizeof st);
  if (ctx) {
    lt_tumor_backend_cuda.stats(ctx, &st);
    lt_tumor_backend_cuda.unmap(ctx);
    lt_tumor_backend_cuda.destroy(ctx);
  }
  munmap(m, size);
  T_CHECK(nm, !e && !bad, "error %d, %d peak(s) differ from match_peaks' (frames from a map)", e, bad);
  printf("# %s: %s\n", nm, st.kernel);
  free(gp);
}

int main(void)
{
  int count = 0;
  const char *why = "no CUDA device";
  if (lt_cuda_probe(&count, &why) != 0 || count == 0) {
    T_SKIP("tumor_cuda", why);
    T_DONE();
  }
  char cache[] = "/tmp/lt_tumor_cache.XXXXXX";
  if (!mkdtemp(cache)) {
    T_CHECK("tumor_cuda_cache_dir", 0, "mkdtemp failed");
    T_DONE();
  }
  setenv("XDG_CACHE_HOME", cache, 1);
  const int fw = 640, fh = 560;
  float *f0 = malloc(sizeof(float) * fw * fh), *f1 = malloc(sizeof(float) * fw * fh);
  make_frame(f0, fw, fh, 1);
  for (int y = 0; y < fh; y++) /* f1: f0 moved by (3, -2) plus fresh noise */
    for (int x = 0; x < fw; x++) {
      int sy = y - 3 < 0 ? 0 : y - 3, sx = x + 2 >= fw ? fw - 1 : x + 2;
      f1[(size_t)y * fw + x] = f0[(size_t)sy * fw + sx] + (float)((y * 7 + x * 13) % 5) * 0.5f;
    }
  /* rows x cols, templates, V, H (seeds/001 table II) and more */
  /* rows x cols, templates, V, H (seeds/001 table II) and more; quick: in
   * the subset (LT_TEST_SUBSET=1, for compute-sanitizer, whose racecheck
   * cannot finish the whole test in time): both kernels, several bands and
   * column chunks, more than one shift block, odd and mixed sizes */
  const struct { const char *name; int th, tw, K, V, H, mixed, quick; } cases[] = {
      {"p1_53x54_12_18_9", 53, 54, 12, 18, 9, 0, 0},   {"p2_23x21_13_11_5", 23, 21, 13, 11, 5, 0, 1},
      {"p3_76x45_10_9_4", 76, 45, 10, 9, 4, 0, 0},     {"p4_156x116_11_9_3", 156, 116, 11, 9, 3, 0, 0},
      {"p5_86x78_12_11_6", 86, 78, 12, 11, 6, 0, 0},   {"p6_141x107_14_9_2", 141, 107, 14, 9, 2, 0, 0},
      {"wide_156x116_3_40_60", 156, 116, 3, 40, 60, 0, 0}, {"big_400x400_2_12_12", 400, 400, 2, 12, 12, 0, 0},
      {"chunks_37x300_2_3_2", 37, 300, 2, 3, 2, 0, 1}, {"tiny_1x7_4_3_20", 1, 7, 4, 3, 20, 0, 1},
      {"mixed_40x50_5_6_6", 40, 50, 5, 6, 6, 1, 1},
  };
  const int nc = sizeof cases / sizeof cases[0];
  const char *sub = getenv("LT_TEST_SUBSET");
  const int subset = sub && strcmp(sub, "1") == 0;
  if (subset) printf("# LT_TEST_SUBSET=1: the quick cases only\n");
  for (int pass = 0; pass < 2; pass++) {
    setenv("LT_TUMOR_NVRTC", pass == 0 ? "1" : "0", 1);
    for (int i = 0; i < nc; i++) {
      if (subset && !cases[i].quick) continue;
      lt_tumor_stats st;
      memset(&st, 0, sizeof st);
      char name[128];
      snprintf(name, sizeof name, "tumor_cuda_%s_%s", pass == 0 ? "nvrtc" : "generic", cases[i].name);
      double d = run_case(name, f0, f1, fw, fh, cases[i].K, cases[i].tw, cases[i].th, cases[i].V, cases[i].H,
                          cases[i].mixed, &st);
      T_CHECK(name, d >= 0 && d <= TOL_TUMOR_CUDA, "max |cuda - exact| %.3g (tolerance %g)", d, TOL_TUMOR_CUDA);
      /* the NVRTC pass must really run the specialised kernel (all cases but
       * the mixed-size one share one size), the generic pass must not */
      int want_spec = pass == 0 && !cases[i].mixed;
      snprintf(name, sizeof name, "tumor_cuda_%s_%s_kernel_kind", pass == 0 ? "nvrtc" : "generic", cases[i].name);
      T_CHECK(name, st.specialised == want_spec, "specialised %d, wanted %d (%s)", st.specialised, want_spec, st.kernel);
      printf("# %s: max|diff| %.2e, %s, setup %.3f s, compile %.3f s%s\n", cases[i].name, d, st.kernel, st.setup_s,
             st.compile_s, st.cache_hit ? " (cache hit)" : "");
    }
  }
  setenv("LT_TUMOR_NVRTC", "1", 1);
  if (subset)
    bytes_case("tumor_cuda_p2", f0, fw, fh, 13, 21, 23, 11, 5);
  else {
    bytes_case("tumor_cuda_p1", f0, fw, fh, 12, 54, 53, 18, 9);
    bytes_case("tumor_cuda_p4", f0, fw, fh, 11, 116, 156, 9, 3);
  }
  setenv("LT_TUMOR_NVRTC", "0", 1);
  bytes_case("tumor_cuda_generic_p2", f0, fw, fh, 13, 21, 23, 11, 5);
  /* the cache: the first NVRTC case again (p2 in the subset, p1 otherwise)
   * hits it; a corrupted entry is detected and rebuilt */
  setenv("LT_TUMOR_NVRTC", "1", 1);
  lt_tumor_stats st;
  memset(&st, 0, sizeof st);
  const int cK = subset ? 13 : 12, ctw = subset ? 21 : 54, cth = subset ? 23 : 53;
  const int cV = subset ? 11 : 18, cH = subset ? 5 : 9;
  double d = run_case("cache", f0, f1, fw, fh, cK, ctw, cth, cV, cH, 0, &st);
  T_CHECK("tumor_cuda_cache_hit", d >= 0 && d <= TOL_TUMOR_CUDA && st.specialised && st.cache_hit,
          "diff %.3g specialised %d cache_hit %d", d, st.specialised, st.cache_hit);
  printf("# cache hit: load %.4f s (entry %s)\n", st.compile_s, st.cache_file);
  FILE *fp = fopen(st.cache_file, "r+b");
  int corrupted = 0;
  if (fp && fseek(fp, 200, SEEK_SET) == 0) {
    int ch = fgetc(fp);
    fseek(fp, 200, SEEK_SET);
    corrupted = fputc(ch ^ 0x5a, fp) != EOF;
  }
  if (fp) fclose(fp);
  T_CHECK("tumor_cuda_cache_corrupt_written", corrupted, "cannot modify %s", st.cache_file);
  memset(&st, 0, sizeof st);
  d = run_case("corrupt", f0, f1, fw, fh, cK, ctw, cth, cV, cH, 0, &st);
  T_CHECK("tumor_cuda_cache_corrupt_rebuilt", d >= 0 && d <= TOL_TUMOR_CUDA && st.specialised && !st.cache_hit,
          "diff %.3g specialised %d cache_hit %d", d, st.specialised, st.cache_hit);
  memset(&st, 0, sizeof st);
  d = run_case("rebuilt", f0, f1, fw, fh, cK, ctw, cth, cV, cH, 0, &st);
  T_CHECK("tumor_cuda_cache_hit_after_rebuild", d >= 0 && st.cache_hit, "cache_hit %d", st.cache_hit);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  if (system(cmd) != 0) printf("# could not remove %s\n", cache);
  free(f0);
  free(f1);
  T_DONE();
}
#else
int main(void)
{
  T_SKIP("tumor_cuda", "no CUDA device (CPU-only build)");
  T_DONE();
}
#endif
