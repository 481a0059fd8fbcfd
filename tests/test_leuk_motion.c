/* test_leuk_motion.c - the motion cue's background and difference (motion.c):
 * the difference against a reference computed here from the frames kept
 * (sort of the last copies, the lower median, clamped), the 8-bit path
 * against the float path on the same frames, when it is ready, what it
 * leaves outside the rect, the discs of tracked cells left out of the
 * copies (the median of the copies that hold the pixel, the frame's pixel
 * where none does), and hand-made scenes (static texture and a disc that
 * moves: the difference is flat on the texture and shows the disc; a disc
 * that sat still, then moved: its ghost where it sat, unless its disc was
 * kept out of the copies). */
#include <stdlib.h>
#include <string.h>

#include "motion.h"
#include "test.h"

static unsigned long long rng_state = 777;
static unsigned rnd(void) /* splitmix64, high bits */
{
  unsigned long long z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (unsigned)((z ^ (z >> 31)) >> 32);
}

static int cmp_float(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Random 8-bit frames through two cues (one fed bytes, one floats) with a
 * copy every `every` frames (with discs: two random discs left out of each
 * copy); at every frame the difference inside a rect is checked against the
 * definition over the frames kept by the test itself. */
static void test_reference(int every, int discs)
{
  const int fw = 41, fh = 29, nf = 23;
  const size_t n = (size_t)fw * fh;
  unsigned char *fr8 = malloc(n * nf);
  float *fr = malloc(sizeof(float) * n * nf);
  for (size_t i = 0; i < n * nf; i++) {
    fr8[i] = (unsigned char)(rnd() & 255);
    fr[i] = fr8[i];
  }
  lt_leuk_motion A, B;
  int ok = lt_leuk_motion_init(&A, fw, fh, every) == 0 && lt_leuk_motion_init(&B, fw, fh, every) == 0;
  int kept[64], nk = 0, ready_ok = 1, ref_ok = 1, same = 1, outside_ok = 1, bytes_ok = 1, nheld = 0, nnone = 0;
  double disc[64][6]; /* per copy kept: two discs (x, y, radius) */
  const lt_rect r = {3, 5, 30, 17};
  for (int t = 0; ok && t < nf; t++) {
    lt_leuk_motion_frame(&A, NULL, fr8 + n * t);
    lt_leuk_motion_frame(&B, fr + n * t, NULL);
    ready_ok &= lt_leuk_motion_ready(&A) == (nk >= 3) && lt_leuk_motion_ready(&B) == (nk >= 3);
    if (nk >= 3) {
      const unsigned char *b8a = NULL, *b8b = (const unsigned char *)&r;
      lt_leuk_motion_diff(&A, &r, &b8a);
      lt_leuk_motion_diff(&B, &r, &b8b);
      bytes_ok &= b8a == A.diff8 && b8b == NULL;
      int m = nk < LT_MOTION_KEYS ? nk : LT_MOTION_KEYS;
      for (int y = 0; y < fh; y++)
        for (int x = 0; x < fw; x++) {
          size_t i = (size_t)y * fw + x;
          int in = x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + r.h;
          if (!in) {
            outside_ok &= A.diff[i] == 128.0f && A.diff8[i] == 128 && B.diff[i] == 128.0f;
            continue;
          }
          float v[LT_MOTION_KEYS];
          int h = 0;
          for (int k = 0; k < m; k++) {
            const double *q = disc[nk - 1 - k];
            int out = 0;
            for (int c = 0; discs && c < 2; c++)
              out |= (x - q[3 * c]) * (x - q[3 * c]) + (y - q[3 * c + 1]) * (y - q[3 * c + 1]) <=
                     q[3 * c + 2] * q[3 * c + 2];
            if (!out) v[h++] = fr[n * kept[nk - 1 - k] + i];
          }
          nheld += h < m;
          nnone += h == 0;
          qsort(v, h, sizeof *v, cmp_float);
          float d = 128.0f + fr[n * t + i] - (h ? v[(h - 1) / 2] : fr[n * t + i]);
          d = d < 0 ? 0 : d > 255 ? 255 : d;
          ref_ok &= A.diff[i] == d && A.diff8[i] == (unsigned char)d;
          same &= A.diff[i] == B.diff[i];
        }
    }
    double *q = disc[nk];
    for (int c = 0; c < 2; c++) { /* the first near (20, 14) in every copy: some pixels in none */
      q[3 * c] = c ? (rnd() % 4000) / 100.0 : 19 + (rnd() % 200) / 100.0;
      q[3 * c + 1] = c ? (rnd() % 2800) / 100.0 : 13 + (rnd() % 200) / 100.0;
      q[3 * c + 2] = 2 + (rnd() % 600) / 100.0;
    }
    lt_leuk_motion_keep(&A, discs ? q : NULL, discs ? 2 : 0);
    lt_leuk_motion_keep(&B, discs ? q : NULL, discs ? 2 : 0);
    if (t % every == 0) kept[nk++] = t;
  }
  char name[160];
  snprintf(name, sizeof name, "motion cue (a copy every %d frames): ready once 3 copies are kept", every);
  T_CHECK(name, ok && ready_ok, "init %d", ok);
  snprintf(name, sizeof name,
           "motion cue (every %d%s): 128 + frame - lower median of the last 5 copies%s, clamped (= a sort here)",
           every, discs ? ", discs left out" : "", discs ? " that hold the pixel (none: the frame's)" : "");
  T_CHECK(name, ok && ref_ok && (!discs || (nheld > 100 && nnone > 0)), "ref_ok %d (pixels with a copy left out %d, none %d)",
          ref_ok, nheld, nnone);
  snprintf(name, sizeof name, "motion cue (every %d): bytes in = floats in, bit for bit; bytes out only for 8-bit",
           every);
  T_CHECK(name, ok && same && bytes_ok, "same %d bytes %d", same, bytes_ok);
  snprintf(name, sizeof name, "motion cue (every %d): pixels outside the rect untouched", every);
  T_CHECK(name, ok && outside_ok, "changed");
  lt_leuk_motion_free(&A);
  lt_leuk_motion_free(&B);
  free(fr8);
  free(fr);
}

/* Static texture, a dark disc (radius 6) moving 2 px a frame: once the
 * background is there, the difference is 128 on the texture far from the
 * disc's path and clearly below it at the disc's centre. */
static void test_scene(void)
{
  const int fw = 100, fh = 40, every = 2;
  const size_t n = (size_t)fw * fh;
  float *tex = malloc(sizeof(float) * n), *f = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) tex[i] = 60 + (float)(rnd() % 120);
  lt_leuk_motion M;
  int ok = lt_leuk_motion_init(&M, fw, fh, every) == 0, flat = 1, shows = 1, tested = 0;
  const lt_rect all = {0, 0, fw, fh};
  for (int t = 0; ok && t < 20; t++) {
    int cx = 10 + 4 * t, cy = 20;
    for (int y = 0; y < fh; y++)
      for (int x = 0; x < fw; x++) {
        size_t i = (size_t)y * fw + x;
        f[i] = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= 36 ? 20.0f : tex[i];
      }
    lt_leuk_motion_frame(&M, f, NULL);
    if (lt_leuk_motion_ready(&M)) {
      const unsigned char *b8;
      lt_leuk_motion_diff(&M, &all, &b8);
      tested++;
      for (int y = 0; y < fh; y++)
        for (int x = 0; x < fw; x++)
          if (abs(y - cy) > 7) flat &= M.diff[(size_t)y * fw + x] == 128.0f; /* never under the disc */
      shows &= M.diff[(size_t)cy * fw + cx] < 128.0f - 30;
    }
    lt_leuk_motion_keep(&M, NULL, 0);
  }
  T_CHECK("motion cue scene: flat (128) on static texture, the moving disc below it at its centre (15 frames)",
          ok && tested == 15 && flat && shows, "tested %d flat %d shows %d", tested, flat, shows);
  lt_leuk_motion_free(&M);
  lt_leuk_motion Z;
  T_CHECK("motion cue: every 0 allocates nothing and is never ready",
          lt_leuk_motion_init(&Z, 10, 10, 0) == 0 && !Z.key[0] && !Z.diff && !lt_leuk_motion_ready(&Z), "every 0");
  lt_leuk_motion_free(&Z);
  free(tex);
  free(f);
}

/* A dark disc (radius 6) on static texture sits still for 12 frames, then
 * moves off at 4 px a frame; copies every 2 frames. Once it has gone, the
 * difference where it sat shows its ghost (the background still holds the
 * disc: above 128, the texture is brighter) when nothing is left out, and
 * is flat (128) when the disc was handed to every copy as a tracked cell's. */
static void test_ghost(void)
{
  const int fw = 100, fh = 40, every = 2;
  const size_t n = (size_t)fw * fh;
  float *tex = malloc(sizeof(float) * n), *f = malloc(sizeof(float) * n);
  for (size_t i = 0; i < n; i++) tex[i] = 60 + (float)(rnd() % 120);
  float ghost[2] = {0, 0};
  for (int out = 0; out < 2; out++) {
    lt_leuk_motion M;
    int ok = lt_leuk_motion_init(&M, fw, fh, every) == 0;
    for (int t = 0; ok && t < 16; t++) {
      const double cx = t < 12 ? 20 : 20 + 4 * (t - 11), cy = 20;
      for (int y = 0; y < fh; y++)
        for (int x = 0; x < fw; x++) {
          size_t i = (size_t)y * fw + x;
          f[i] = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= 36 ? 20.0f : tex[i];
        }
      lt_leuk_motion_frame(&M, f, NULL);
      if (t == 15) { /* the disc is 16 px on: the mean difference over where it sat */
        const lt_rect r = {14, 14, 13, 13};
        const unsigned char *b8;
        lt_leuk_motion_diff(&M, &r, &b8);
        for (int y = 14; y < 27; y++)
          for (int x = 14; x < 27; x++)
            if ((x - 20) * (x - 20) + (y - 20) * (y - 20) <= 36) ghost[out] += (M.diff[(size_t)y * fw + x] - 128) / 113.0f;
      }
      const double d[3] = {cx, cy, 7};
      lt_leuk_motion_keep(&M, out ? d : NULL, out ? 1 : 0);
    }
    lt_leuk_motion_free(&M);
  }
  T_CHECK("motion cue ghost: a disc that sat still shows where it sat after it left (mean difference > +40)",
          ghost[0] > 40, "mean %.1f", ghost[0]);
  T_CHECK("motion cue ghost: none when its disc was left out of the copies (the difference there is 128)",
          ghost[1] == 0, "mean %.1f", ghost[1]);
  free(tex);
  free(f);
}

int main(void)
{
  test_reference(1, 0);
  test_reference(3, 0);
  test_reference(1, 1);
  test_reference(3, 1);
  test_scene();
  test_ghost();
  T_DONE();
}
