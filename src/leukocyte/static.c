/* static.c - the static test of new detections (--static-span, issue 15): a
 * detection that would start a new track is a static structure of the
 * background when its disc is as it was in an earlier frame. Two copies of
 * earlier frames are kept, one every span frames. Against copy k, with
 * d = frame - copy:
 *   offset = median of d, noise = median |d(x+1, y) - d(x, y)| / (0.6745 sqrt 2)
 * over a grid of at most LT_STATIC_SAMPLES pixels of the ROI (every 4th px
 * or coarser), once per frame and copy; the circle is static when the RMS of
 * d - offset averaged in 3x3 blocks inside it is at most ratio * noise / 3.
 *
 * The medians of 8-bit frames against 8-bit copies (all decoded video) come
 * from counts: d is an integer in -255..255 and the gradient magnitude one in
 * 0..510, so one pass over the grid counts each value and the k-th smallest
 * is the first value whose running count passes k: exactly the value a sort
 * gives, in a fraction of a quickselect's time (issue 15's frame budget).
 * Other frames keep the quickselect (lt_leuk_median), which is the
 * reference the counts are tested against (tests/test_leuk_static.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "static.h"

#define LT_STATIC_SAMPLES 65536
#define NDIFF 511 /* values of d: -255..255 (stored + 255); of |d(x+1) - d(x)|: 0..510 */

int lt_leuk_static_init(lt_leuk_static *S, int fw, int fh, const lt_rect *roi, int span, double ratio)
{
  memset(S, 0, sizeof *S);
  S->fw = fw;
  S->fh = fh;
  S->roi = *roi;
  S->span = span;
  S->ratio = ratio;
  S->snap_frame[0] = S->snap_frame[1] = S->noise_frame[0] = S->noise_frame[1] = -1;
  S->frame = -1;
  if (span <= 0) return 0;
  const size_t n = (size_t)fw * fh;
  for (int k = 0; k < 2; k++) {
    S->snap[k] = malloc(sizeof(float) * n);
    S->snap8[k] = malloc(n);
  }
  S->samples = malloc(sizeof(float) * LT_STATIC_SAMPLES);
  if (!S->snap[0] || !S->snap[1] || !S->snap8[0] || !S->snap8[1] || !S->samples) {
    lt_error("out of memory (frame copies of the static test)");
    lt_leuk_static_free(S);
    return LT_ERR_NOMEM;
  }
  return 0;
}

void lt_leuk_static_free(lt_leuk_static *S)
{
  for (int k = 0; k < 2; k++) {
    free(S->snap[k]);
    free(S->snap8[k]);
    S->snap[k] = NULL;
    S->snap8[k] = NULL;
  }
  free(S->samples);
  S->samples = NULL;
}

void lt_leuk_static_frame(lt_leuk_static *S, int index, const float *cur, const unsigned char *cur8)
{
  S->frame = index;
  S->cur = cur;
  S->cur8 = cur8;
}

static double cur_px(const lt_leuk_static *S, size_t i) { return S->cur8 ? S->cur8[i] : S->cur[i]; }
static double ref_px(const lt_leuk_static *S, int k, size_t i) { return S->is8[k] ? S->snap8[k][i] : S->snap[k][i]; }

/* Reorders v[0..n) so that v[k] is the k-th smallest, v[0..k) <= v[k] <=
 * v(k..n) (quickselect, median-of-three pivot; 0 <= k < n; finite values). */
static void select_kth(float *v, int n, int k)
{
  int lo = 0, hi = n - 1;
  while (hi > lo) {
    int mid = lo + (hi - lo) / 2;
    float a = v[lo], b = v[mid], c = v[hi];
    float piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int i = lo, j = hi;
    while (i <= j) {
      while (v[i] < piv) i++;
      while (v[j] > piv) j--;
      if (i <= j) {
        float t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return; /* j < k < i: v[k] == piv, in place */
  }
}

double lt_leuk_median(float *v, int n)
{
  select_kth(v, n, n / 2);
  if (n % 2) return v[n / 2];
  float below = v[0];
  for (int i = 1; i < n / 2; i++) below = v[i] > below ? v[i] : below;
  return 0.5 * ((double)below + v[n / 2]);
}

/* The median of the n values counted in cnt[0..NDIFF) (value = bin - base),
 * as lt_leuk_median would return it: the k-th smallest for k = n / 2, and
 * for even n its mean with the (k-1)-th. */
static double median_counts(const int *cnt, int n, int base)
{
  const int k = n / 2;
  int below = -1, run = 0;
  for (int b = 0; b < NDIFF; b++) {
    run += cnt[b];
    if (below < 0 && run > k - 1) below = b; /* the (k-1)-th smallest */
    if (run > k) return n % 2 ? (double)(b - base) : 0.5 * ((double)(below - base) + (double)(b - base));
  }
  return 0; /* not reached: the counts add up to n > k */
}

/* The grid's step: every 4th px, coarser when the ROI would give more than
 * LT_STATIC_SAMPLES samples. */
static int grid_step(const lt_rect *roi)
{
  int step = 4;
  while ((long)(roi->w / step + 1) * (roi->h / step + 1) > LT_STATIC_SAMPLES) step++;
  return step;
}

/* noise[k] and offset[k] of this frame against copy k, from counts (both
 * 8-bit). */
static void medians_8bit(lt_leuk_static *S, int k)
{
  const lt_rect *roi = &S->roi;
  const int step = grid_step(roi), xend = roi->x + roi->w;
  /* two sets of counts, alternate samples into each: most samples fall into
   * a few bins, and one set would make each count wait for the last */
  int cg[2][NDIFF], cd[2][NDIFF], ng = 0, nd = 0;
  memset(cg, 0, sizeof cg);
  memset(cd, 0, sizeof cd);
  for (int yy = roi->y; yy < roi->y + roi->h; yy += step) {
    const unsigned char *c = S->cur8 + (size_t)yy * S->fw, *r = S->snap8[k] + (size_t)yy * S->fw;
    int xx = roi->x;
    for (; xx + step + 1 < xend; xx += 2 * step) { /* two samples, both with a right neighbour */
      int d0 = c[xx] - r[xx], e0 = c[xx + step] - r[xx + step];
      cd[0][d0 + 255]++;
      cd[1][e0 + 255]++;
      cg[0][abs(c[xx + 1] - r[xx + 1] - d0)]++;
      cg[1][abs(c[xx + step + 1] - r[xx + step + 1] - e0)]++;
      nd += 2;
      ng += 2;
    }
    for (; xx < xend; xx += step) {
      int d0 = c[xx] - r[xx];
      cd[0][d0 + 255]++;
      nd++;
      if (xx + 1 < xend) {
        cg[0][abs(c[xx + 1] - r[xx + 1] - d0)]++;
        ng++;
      }
    }
  }
  for (int b = 0; b < NDIFF; b++) {
    cg[0][b] += cg[1][b];
    cd[0][b] += cd[1][b];
  }
  S->noise[k] = median_counts(cg[0], ng, 0) / (0.6745 * sqrt(2.0));
  S->offset[k] = median_counts(cd[0], nd, 255);
}

/* The same from the samples, by quickselect (any frame). */
static void medians_select(lt_leuk_static *S, int k)
{
  const lt_rect *roi = &S->roi;
  const int step = grid_step(roi);
  int n = 0;
  for (int yy = roi->y; yy < roi->y + roi->h; yy += step)
    for (int xx = roi->x; xx + 1 < roi->x + roi->w; xx += step) {
      size_t i = (size_t)yy * S->fw + xx;
      S->samples[n++] = fabsf((float)(cur_px(S, i + 1) - ref_px(S, k, i + 1) - (cur_px(S, i) - ref_px(S, k, i))));
    }
  S->noise[k] = lt_leuk_median(S->samples, n) / (0.6745 * sqrt(2.0));
  n = 0;
  for (int yy = roi->y; yy < roi->y + roi->h; yy += step)
    for (int xx = roi->x; xx < roi->x + roi->w; xx += step) {
      size_t i = (size_t)yy * S->fw + xx;
      S->samples[n++] = (float)(cur_px(S, i) - ref_px(S, k, i));
    }
  S->offset[k] = lt_leuk_median(S->samples, n);
}

/* Is the circle (x, y, rad) static against copy k (the test above)? A cell
 * that entered or moved since then differs; a background structure whose
 * score went over the threshold does not. */
static int is_static(lt_leuk_static *S, int k, double x, double y, double rad)
{
  if (S->noise_frame[k] != S->frame) {
    if (S->cur8 && S->is8[k]) medians_8bit(S, k);
    else medians_select(S, k);
    S->noise_frame[k] = S->frame;
  }
  double s2 = 0;
  int n = 0;
  for (int by = (int)floor(y - rad); by + 2 <= (int)ceil(y + rad); by += 3)
    for (int bx = (int)floor(x - rad); bx + 2 <= (int)ceil(x + rad); bx += 3) {
      if (bx < 0 || by < 0 || bx + 2 >= S->fw || by + 2 >= S->fh || hypot(bx + 1 - x, by + 1 - y) > rad) continue;
      double m = 0;
      for (int yy = by; yy < by + 3; yy++)
        for (int xx = bx; xx < bx + 3; xx++) {
          size_t i = (size_t)yy * S->fw + xx;
          m += cur_px(S, i) - ref_px(S, k, i);
        }
      m = m / 9 - S->offset[k];
      s2 += m * m;
      n++;
    }
  double lim = S->ratio * S->noise[k] / 3;
  return n >= 2 && s2 / n <= lim * lim;
}

/* The latest copy when it is at least span / 2 frames old (a slow cell
 * moves little in fewer), and the one before: a cell that passed a structure
 * at one of the two times changes it in that copy only. A cell at rest since
 * the older copy is not new: it was there at the first frame or was tracked
 * on its way in. */
int lt_leuk_static_unchanged(lt_leuk_static *S, double x, double y, double rad)
{
  if (S->span <= 0) return 0;
  for (int k = 0; k < 2; k++) {
    int age = S->frame - S->snap_frame[k];
    if (S->snap_frame[k] >= 0 && age > 0 && 2 * age >= S->span && is_static(S, k, x, y, rad)) return 1;
  }
  return 0;
}

void lt_leuk_static_keep(lt_leuk_static *S)
{
  if (S->span <= 0) return;
  int a = S->snap_frame[0] > S->snap_frame[1] ? 0 : 1; /* the newer copy; the older slot is overwritten */
  if (S->snap_frame[a] >= 0 && S->frame - S->snap_frame[a] < S->span) return;
  const size_t n = (size_t)S->fw * S->fh;
  int b = 1 - a;
  S->is8[b] = S->cur8 != NULL;
  if (S->cur8) memcpy(S->snap8[b], S->cur8, n);
  else memcpy(S->snap[b], S->cur, sizeof(float) * n);
  S->snap_frame[b] = S->frame;
}
