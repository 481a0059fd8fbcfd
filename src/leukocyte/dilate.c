/* dilate.c - grey dilation with a flat disc and local maxima (algorithm spec
 * sections 3.4-3.5).
 *
 * DIL(r, c) = max(0, max over dx^2 + dy^2 <= R^2 of MG(r + dy, c + dx)),
 * out-of-image neighbours skipped. The disc is a stack of horizontal runs of
 * half-width w(dy) = floor(sqrt(R^2 - dy^2)); for each source row we build
 * the 1-D running maxima of every half-width 0..R incrementally
 * (M_h[c] = max(M_{h-1}[c], src[c-h], src[c+h])), then each output pixel is
 * the max over 2R+1 rows of M_{w(dy)}: O(R) per pixel instead of O(R^2).
 * Exact (max is exact), so it equals the direct definition bit for bit. */
#include <math.h>
#include <string.h>

#include "leuk.h"

/* scratch: (rad+1) * w * h floats. */
void lt_dilate_disc(const float *src, int w, int h, int rad, float *dst, float *scratch)
{
  const size_t plane = (size_t)w * h;
#pragma omp parallel for schedule(static)
  for (int r = 0; r < h; r++) {
    const float *s = src + (size_t)r * w;
    float *m0 = scratch + (size_t)r * w;
    memcpy(m0, s, sizeof(float) * w);
    for (int hw = 1; hw <= rad; hw++) {
      const float *prev = scratch + (size_t)(hw - 1) * plane + (size_t)r * w;
      float *cur = scratch + (size_t)hw * plane + (size_t)r * w;
      for (int c = 0; c < w; c++) {
        float v = prev[c];
        if (c - hw >= 0 && s[c - hw] > v) v = s[c - hw];
        if (c + hw < w && s[c + hw] > v) v = s[c + hw];
        cur[c] = v;
      }
    }
  }
  int half[2 * LT_LEUK_MAX_RADII + 64];
  int rr = rad < (int)(sizeof half / sizeof half[0] - 1) / 2 ? rad : (int)(sizeof half / sizeof half[0] - 1) / 2;
  for (int dy = -rr; dy <= rr; dy++) {
    int hw = 0;
    while ((hw + 1) * (hw + 1) + dy * dy <= rr * rr) hw++;
    half[dy + rr] = hw;
  }
#pragma omp parallel for schedule(static)
  for (int r = 0; r < h; r++) {
    float *out = dst + (size_t)r * w;
    for (int c = 0; c < w; c++) out[c] = 0.0f;
    for (int dy = -rr; dy <= rr; dy++) {
      int y = r + dy;
      if (y < 0 || y >= h) continue;
      const float *m = scratch + (size_t)half[dy + rr] * plane + (size_t)y * w;
      for (int c = 0; c < w; c++)
        if (m[c] > out[c]) out[c] = m[c];
    }
  }
}

int lt_local_maxima(const float *mg, const float *dil, int w, int h, int *xs, int *ys, int cap)
{
  int n = 0;
  for (int r = 0; r < h; r++)
    for (int c = 0; c < w; c++) {
      size_t i = (size_t)r * w + c;
      if (mg[i] != 0.0f && dil[i] == mg[i]) {
        if (n < cap) {
          xs[n] = c;
          ys[n] = r;
        }
        n++;
      }
    }
  return n;
}
