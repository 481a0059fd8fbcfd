/* flow_common.h - what the 2D flow tests share: a smooth aperiodic texture
 * (a sum of 24 sinusoids drawn from `seed`), evaluated at (x - dx, y - dy)
 * for a moved frame so that the shift is exact (no interpolation). */
#ifndef LT_FLOW_COMMON_H
#define LT_FLOW_COMMON_H
#include <math.h>

static inline float flow_texture(double x, double y, unsigned seed)
{
  double s = 128;
  unsigned r = seed;
  for (int k = 0; k < 24; k++) {
    r = r * 1103515245u + 12345u;
    double fq = 0.04 + 0.5 * ((r >> 8) % 1000) / 1000.0;
    r = r * 1103515245u + 12345u;
    double th = 6.2831853 * ((r >> 8) % 1000) / 1000.0;
    r = r * 1103515245u + 12345u;
    double ph = 6.28 * ((r >> 8) % 1000) / 1000.0;
    s += 60.0 / (1 + k) * sin(fq * (cos(th) * x + sin(th) * y) + ph);
  }
  return (float)s;
}
#endif
