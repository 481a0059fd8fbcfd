/* color.c - Middlebury flow colour coding and its legend wheel; see
 * color.h. The wheel is built exactly as colorcode.cpp's makecolorwheel
 * (integer steps 255*i/n), so pictures match the benchmark's own tool. */
#include "flow/color.h"

#include <math.h>

#include "flow/flo.h"

#define NCOLS 55

/* Colour i (0..54) of the wheel, component b (0 R, 1 G, 2 B), 0..255. */
static int wheel(int i, int b)
{
  static const int seg[6] = {15, 6, 4, 11, 13, 6}; /* RY YG GC CB BM MR */
  int s = 0;
  while (i >= seg[s]) i -= seg[s++];
  const int n = seg[s], up = 255 * i / n, down = 255 - 255 * i / n;
  const int rgb[6][3] = {{255, up, 0}, {down, 255, 0}, {0, 255, up}, {0, down, 255}, {up, 0, 255}, {255, 0, down}};
  return rgb[s][b];
}

void lt_flow_color_pixel(float fx, float fy, uint8_t rgb[3])
{
  double rad = sqrt((double)fx * fx + (double)fy * fy);
  double a = atan2(-(double)fy, -(double)fx) / M_PI;
  double fk = (a + 1.0) / 2.0 * (NCOLS - 1);
  int k0 = (int)fk;
  if (k0 > NCOLS - 1) k0 = NCOLS - 1;
  int k1 = (k0 + 1) % NCOLS;
  double f = fk - k0;
  for (int b = 0; b < 3; b++) {
    double col = (1 - f) * wheel(k0, b) / 255.0 + f * wheel(k1, b) / 255.0;
    if (rad <= 1) col = 1 - rad * (1 - col);
    else col *= 0.75;
    rgb[b] = (uint8_t)(int)(255.0 * col);
  }
}

static int known(float u, float v) { return isfinite(u) && isfinite(v) && fabsf(u) <= LT_FLO_UNKNOWN && fabsf(v) <= LT_FLO_UNKNOWN; }

float lt_flow_color(const float *u, const float *v, int w, int h, float maxmag, uint8_t *rgb)
{
  const long n = (long)w * h;
  if (!(maxmag > 0)) {
    double m = 0;
    for (long i = 0; i < n; i++)
      if (known(u[i], v[i])) {
        double r = sqrt((double)u[i] * u[i] + (double)v[i] * v[i]);
        if (r > m) m = r;
      }
    maxmag = m > 0 ? (float)m : 1.0f;
  }
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) {
    if (known(u[i], v[i])) {
      lt_flow_color_pixel(u[i] / maxmag, v[i] / maxmag, rgb + 3 * i);
    } else {
      rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = 0;
    }
  }
  return maxmag;
}

void lt_flow_color_legend(uint8_t *rgb, int w, int h, int radius)
{
  if (radius <= 0) {
    radius = (w < h ? w : h) / 10;
    if (radius < 8) radius = 8;
  }
  const int cx = w - 3 - radius, cy = 2 + radius;
  for (int y = cy - radius; y <= cy + radius; y++)
    for (int x = cx - radius; x <= cx + radius; x++) {
      if (x < 0 || y < 0 || x >= w || y >= h) continue;
      float fx = (float)(x - cx) / radius, fy = (float)(y - cy) / radius;
      if (fx * fx + fy * fy > 1.0f) continue;
      lt_flow_color_pixel(fx, fy, rgb + 3 * ((long)y * w + x));
    }
}
