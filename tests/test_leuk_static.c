/* test_leuk_static.c - the static test of new detections (static.c): its
 * medians against a sort done here (the definition), the 8-bit path (medians
 * from counts) against the float path (quickselect) on the same frames, bit
 * for bit and decision for decision, and decisions on a hand-made scene (a
 * background disc that stays, a disc that moves). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "static.h"
#include "test.h"

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The median by the definition: sort, take the middle one (the mean of the
 * two middle ones for even n). */
static double median_by_sort(float *v, int n)
{
  qsort(v, n, sizeof *v, cmp_float);
  return n % 2 ? v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + v[n / 2]);
}

static unsigned long long rng_state = 12345;
static unsigned rnd(void) /* splitmix64, high bits */
{
  unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (unsigned)((z ^ (z >> 31)) >> 32);
}

static void test_median(void)
{
  int ok = 1, bad_n = 0;
  float *a = malloc(sizeof(float) * 5000), *b = malloc(sizeof(float) * 5000);
  for (int t = 0; t < 200 && ok; t++) {
    int n = 1 + (int)(rnd() % (t < 100 ? 9 : 4999)), levels = t % 3 == 0 ? 3 : 1000;
    for (int i = 0; i < n; i++) a[i] = b[i] = (float)((int)(rnd() % levels) - levels / 2) * (t % 2 ? 0.25f : 1.0f);
    double m = lt_leuk_median(a, n), want = median_by_sort(b, n);
    if (m != want) {
      ok = 0;
      bad_n = n;
    }
  }
  T_CHECK("lt_leuk_median = sorted middle (200 arrays, n 1..4999, odd and even, many ties)", ok, "n=%d", bad_n);
  free(a);
  free(b);
}

typedef struct scene {
  int fw, fh;
  unsigned char *f8; /* the frame's bytes */
  float *ff;         /* the same as floats */
} scene;

/* Frame t: noise 0..noise-1 on a background of 80 + x/8 plus a global
 * brightness step of `bright` (an illumination change), a dark background
 * disc at (30, 40) r 9 that never moves, a bright disc r 8 moving 3 px per
 * frame from x = 20 at y = 80. */
static void make_frame(scene *s, int t, int noise, int bright)
{
  for (int y = 0; y < s->fh; y++)
    for (int x = 0; x < s->fw; x++) {
      int v = 80 + x / 8 + bright + (int)(rnd() % (unsigned)noise);
      if ((x - 30) * (x - 30) + (y - 40) * (y - 40) <= 81) v -= 40;
      int mx = 20 + 3 * t;
      if ((x - mx) * (x - mx) + (y - 80) * (y - 80) <= 64) v += 60;
      v = v < 0 ? 0 : v > 255 ? 255 : v;
      s->f8[(size_t)y * s->fw + x] = (unsigned char)v;
      s->ff[(size_t)y * s->fw + x] = (float)v;
    }
}

/* The medians of frame against copy k by the definition (the grid of
 * static.c: every 4th px of the ROI, coarser beyond 65536 samples). */
static void medians_by_sort(const scene *s, const unsigned char *ref, const lt_rect *roi, double *noise,
                            double *offset)
{
  int step = 4;
  while ((long)(roi->w / step + 1) * (roi->h / step + 1) > 65536) step++;
  float *v = malloc(sizeof(float) * 70000);
  int n = 0;
  for (int y = roi->y; y < roi->y + roi->h; y += step)
    for (int x = roi->x; x + 1 < roi->x + roi->w; x += step) {
      size_t i = (size_t)y * s->fw + x;
      v[n++] = (float)abs((s->f8[i + 1] - ref[i + 1]) - (s->f8[i] - ref[i]));
    }
  *noise = median_by_sort(v, n) / (0.6745 * sqrt(2.0));
  n = 0;
  for (int y = roi->y; y < roi->y + roi->h; y += step)
    for (int x = roi->x; x < roi->x + roi->w; x += step) {
      size_t i = (size_t)y * s->fw + x;
      v[n++] = (float)(s->f8[i] - ref[i]);
    }
  *offset = median_by_sort(v, n);
  free(v);
}

/* Runs frames 0..nframes-1 through two static tests, one given the bytes
 * (medians from counts), one the floats (quickselect); checks both medians
 * of every frame against the sort and each other, and every decision on a
 * set of circles. *static_bg / *static_mover count the decisions "static"
 * for the background disc and for the moving disc (8-bit path). */
static int run_scene(int fw, int fh, const lt_rect *roi, int span, int noise, int nframes, int *static_bg,
                     int *static_mover, int *sort_ok)
{
  scene s = {fw, fh, malloc((size_t)fw * fh), malloc(sizeof(float) * fw * fh)};
  unsigned char *copy[2] = {malloc((size_t)fw * fh), malloc((size_t)fw * fh)};
  int copy_frame[2] = {-1, -1};
  lt_leuk_static A, B;
  int ok = lt_leuk_static_init(&A, fw, fh, roi, span, 1.5) == 0 && lt_leuk_static_init(&B, fw, fh, roi, span, 1.5) == 0;
  *static_bg = *static_mover = 0;
  *sort_ok = 1;
  for (int t = 0; t < nframes && ok; t++) {
    make_frame(&s, t, noise, t >= nframes / 2 ? 7 : 0);
    lt_leuk_static_frame(&A, t, NULL, s.f8);
    lt_leuk_static_frame(&B, t, s.ff, NULL);
    const double circ[4][3] = {{30, 40, 9}, {20 + 3 * t, 80, 8}, {fw / 2.0, fh / 2.0, 12}, {5, 5, 6}};
    for (int c = 0; c < 4; c++) {
      int a = lt_leuk_static_unchanged(&A, circ[c][0], circ[c][1], circ[c][2]);
      int b = lt_leuk_static_unchanged(&B, circ[c][0], circ[c][1], circ[c][2]);
      ok &= a == b;
      if (c == 0) *static_bg += a;
      if (c == 1) *static_mover += a;
    }
    for (int k = 0; k < 2; k++) {
      if (A.noise_frame[k] != t) continue;
      ok &= B.noise_frame[k] == t && A.noise[k] == B.noise[k] && A.offset[k] == B.offset[k];
      int j = copy_frame[0] == A.snap_frame[k] ? 0 : 1; /* the test's own copy of that frame */
      double n0, o0;
      medians_by_sort(&s, copy[j], roi, &n0, &o0);
      *sort_ok &= n0 == A.noise[k] && o0 == A.offset[k];
    }
    lt_leuk_static_keep(&A);
    lt_leuk_static_keep(&B);
    for (int k = 0; k < 2; k++) /* mirror the copies it keeps */
      if (A.snap_frame[k] == t) {
        int j = copy_frame[0] < copy_frame[1] ? 0 : 1;
        memcpy(copy[j], s.f8, (size_t)fw * fh);
        copy_frame[j] = t;
      }
  }
  lt_leuk_static_free(&A);
  lt_leuk_static_free(&B);
  free(s.f8);
  free(s.ff);
  free(copy[0]);
  free(copy[1]);
  return ok;
}

static void test_paths(void)
{
  int bg, mover, sort_ok;
  lt_rect roi = {3, 2, 150, 111};
  int ok = run_scene(160, 120, &roi, 4, 6, 24, &bg, &mover, &sort_ok);
  T_CHECK("static test: counts (8-bit) = quickselect (float), medians bit for bit and every decision (160x120)",
          ok, "differ");
  T_CHECK("static test: medians = sort of the grid samples (160x120, odd ROI)", sort_ok, "differ");
  /* copies at 0, 4, 8, ...: the background disc is tested from frame 2 on */
  T_CHECK("static test: the background disc is static (all 22 frames with a copy), the moving one never",
          bg == 22 && mover == 0, "static: background %d, mover %d", bg, mover);
  lt_rect big = {0, 0, 1100, 1000}; /* > 65536 samples at step 4: step 5 */
  ok = run_scene(1100, 1000, &big, 2, 40, 5, &bg, &mover, &sort_ok);
  T_CHECK("static test: counts = quickselect on a 1100x1000 ROI (coarser grid), noise 40", ok, "differ");
  T_CHECK("static test: medians = sort (1100x1000)", sort_ok, "differ");
  lt_leuk_static S;
  T_CHECK("static test: span 0 allocates nothing and is never static",
          lt_leuk_static_init(&S, 10, 10, &roi, 0, 1.5) == 0 && !S.snap[0] && !S.samples &&
              !lt_leuk_static_unchanged(&S, 5, 5, 3),
          "span 0");
  lt_leuk_static_free(&S);
}

int main(void)
{
  test_median();
  test_paths();
  T_DONE();
}
