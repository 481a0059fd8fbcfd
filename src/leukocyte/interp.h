/* interp.h - bounds-checked bilinear interpolation (algorithm spec 4.9 with
 * the Q9 fix): the point is clamped into the image, so nothing outside the
 * array is ever read. Private to src/leukocyte. */
#ifndef LT_INTERP_H
#define LT_INTERP_H

#include <stddef.h>

/* Also compiled by nvcc for the CUDA backend (cuda/leukocyte), so that both
 * backends sample the snakes' images with this one definition. */
#ifdef __CUDACC__
#define LT_INTERP_FN static __host__ __device__ __forceinline__
#else
#define LT_INTERP_FN static inline
#endif

LT_INTERP_FN double lt_interp(const float *m, int w, int h, double x, double y)
{
  if (x < 0) x = 0;
  if (y < 0) y = 0;
  if (x > w - 1) x = w - 1;
  if (y > h - 1) y = h - 1;
  int l = (int)x, k = (int)y;
  if (l > w - 2) l = w - 2 < 0 ? 0 : w - 2;
  if (k > h - 2) k = h - 2 < 0 ? 0 : h - 2;
  double a = x - l, b = y - k;
  int l1 = l + 1 < w ? l + 1 : l, k1 = k + 1 < h ? k + 1 : k;
  return (1 - a) * (1 - b) * m[(size_t)k * w + l] + a * (1 - b) * m[(size_t)k * w + l1] +
         (1 - a) * b * m[(size_t)k1 * w + l] + a * b * m[(size_t)k1 * w + l1];
}

#endif
