/* draw.c - an RGB canvas (row-major, 3 bytes per pixel, row 0 = top) for
 * overlays and plots: DDA lines (pixel centres at integer coordinates, each
 * step rounds to the nearest pixel, so a horizontal line from (0,0) to (9,0)
 * sets exactly 10 pixels), closed polygons, circles as polygons of 4r+16
 * segments, filled rectangles, text in a built-in 5x7 bitmap font, and a
 * histogram plot written as PNG. Everything is clipped at the canvas edges. */
#include "draw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "image.h"
#include "log.h"

int lt_canvas_init(lt_canvas *c, int width, int height, const float *from_grey)
{
  c->width = c->height = 0;
  c->rgb = NULL;
  if (width < 1 || height < 1 || (long long)width * height > LT_VIDEO_MAX_PIXELS) {
    lt_error("canvas of %dx%d pixels is not possible", width, height);
    return LT_ERR_INTERNAL;
  }
  size_t n = (size_t)width * (size_t)height;
  c->rgb = malloc(n * 3);
  if (!c->rgb) {
    lt_error("out of memory for a %dx%d canvas", width, height);
    return LT_ERR_NOMEM;
  }
  c->width = width;
  c->height = height;
  if (from_grey) {
    for (size_t i = 0; i < n; i++) {
      float v = from_grey[i];
      uint8_t b = !(v > 0.0f) ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
      c->rgb[3 * i] = c->rgb[3 * i + 1] = c->rgb[3 * i + 2] = b;
    }
  } else {
    memset(c->rgb, 0, n * 3);
  }
  return 0;
}

void lt_canvas_free(lt_canvas *c)
{
  if (!c) return;
  free(c->rgb);
  c->rgb = NULL;
  c->width = c->height = 0;
}

void lt_draw_pixel(lt_canvas *c, int x, int y, lt_rgb col)
{
  if (x < 0 || y < 0 || x >= c->width || y >= c->height) return;
  uint8_t *p = c->rgb + 3 * ((size_t)y * c->width + x);
  p[0] = col.r;
  p[1] = col.g;
  p[2] = col.b;
}

/* Liang-Barsky: clip the segment to [xmin,xmax]x[ymin,ymax]; 0 if outside. */
static int clip_segment(double *x0, double *y0, double *x1, double *y1, double xmin, double ymin,
                        double xmax, double ymax)
{
  double dx = *x1 - *x0, dy = *y1 - *y0, t0 = 0.0, t1 = 1.0;
  double p[4] = {-dx, dx, -dy, dy};
  double q[4] = {*x0 - xmin, xmax - *x0, *y0 - ymin, ymax - *y0};
  for (int i = 0; i < 4; i++) {
    if (p[i] == 0.0) {
      if (q[i] < 0.0) return 0;
      continue;
    }
    double t = q[i] / p[i];
    if (p[i] < 0.0) {
      if (t > t1) return 0;
      if (t > t0) t0 = t;
    } else {
      if (t < t0) return 0;
      if (t < t1) t1 = t;
    }
  }
  double ax = *x0 + t0 * dx, ay = *y0 + t0 * dy;
  *x1 = *x0 + t1 * dx;
  *y1 = *y0 + t1 * dy;
  *x0 = ax;
  *y0 = ay;
  return 1;
}

void lt_draw_line(lt_canvas *c, double x0, double y0, double x1, double y1, lt_rgb col)
{
  if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1)) return;
  /* A one-pixel margin keeps rounding at the edges identical to an unclipped line. */
  if (!clip_segment(&x0, &y0, &x1, &y1, -1.0, -1.0, c->width, c->height)) return;
  double dx = x1 - x0, dy = y1 - y0;
  double len = fabs(dx) > fabs(dy) ? fabs(dx) : fabs(dy);
  int steps = (int)ceil(len - 1e-9);
  if (steps < 1) {
    lt_draw_pixel(c, (int)floor(x0 + 0.5), (int)floor(y0 + 0.5), col);
    return;
  }
  for (int i = 0; i <= steps; i++) {
    double t = (double)i / steps;
    lt_draw_pixel(c, (int)floor(x0 + t * dx + 0.5), (int)floor(y0 + t * dy + 0.5), col);
  }
}

void lt_draw_polygon(lt_canvas *c, const double *x, const double *y, int n, lt_rgb col)
{
  if (n < 1) return;
  if (n == 1) {
    lt_draw_line(c, x[0], y[0], x[0], y[0], col);
    return;
  }
  for (int i = 0; i < n; i++) {
    int j = (i + 1) % n;
    lt_draw_line(c, x[i], y[i], x[j], y[j], col);
  }
}

void lt_draw_circle(lt_canvas *c, double cx, double cy, double r, lt_rgb col)
{
  if (!isfinite(cx) || !isfinite(cy) || !isfinite(r) || r < 0) return;
  double nseg = 4.0 * r + 16.0;
  int n = nseg > 4096 ? 4096 : (int)nseg;
  double px = cx + r, py = cy;
  for (int i = 1; i <= n; i++) {
    double a = 2.0 * M_PI * i / n;
    double qx = cx + r * cos(a), qy = cy + r * sin(a);
    lt_draw_line(c, px, py, qx, qy, col);
    px = qx;
    py = qy;
  }
}

void lt_draw_rect_fill(lt_canvas *c, int x, int y, int w, int h, lt_rgb col)
{
  long long x0 = x, y0 = y, x1 = (long long)x + w, y1 = (long long)y + h;
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > c->width) x1 = c->width;
  if (y1 > c->height) y1 = c->height;
  for (long long yy = y0; yy < y1; yy++)
    for (long long xx = x0; xx < x1; xx++) lt_draw_pixel(c, (int)xx, (int)yy, col);
}

/* ---- 5x7 font: 7 rows top to bottom, bit 4 = leftmost column ---------- */

struct glyph {
  char ch;
  uint8_t rows[7];
};

static const struct glyph font[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {' ', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {'#', {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A}},
    {'!', {0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04}},
    {'*', {0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00}},
    {'<', {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}},
    {'>', {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}},
    {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
    {'\'', {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}},
    {'?', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04}},
    {'\x01', {0x00, 0x11, 0x11, 0x11, 0x13, 0x1D, 0x10}}, /* micro sign */
};

static const uint8_t *glyph_rows(int ch)
{
  if (ch >= 'a' && ch <= 'z') ch -= 'a' - 'A';
  for (size_t i = 0; i < sizeof font / sizeof font[0]; i++)
    if (font[i].ch == ch) return font[i].rows;
  return NULL;
}

void lt_draw_text(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col)
{
  if (!s) return;
  if (scale < 1) scale = 1;
  int pen = x;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    int ch = *p;
    if (ch == '\n') {
      pen = x;
      y += 9 * scale;
      continue;
    }
    if (ch == 0xC2 && p[1] == 0xB5) { /* UTF-8 micro sign */
      ch = '\x01';
      p++;
    } else if (ch == 0xCE && p[1] == 0xBC) { /* UTF-8 Greek mu */
      ch = '\x01';
      p++;
    } else if (ch >= 0x80) { /* other UTF-8: one '?' per character */
      while ((p[1] & 0xC0) == 0x80) p++;
      ch = '?';
    }
    const uint8_t *rows = glyph_rows(ch);
    if (!rows) rows = glyph_rows('?');
    for (int r = 0; r < 7; r++)
      for (int k = 0; k < 5; k++)
        if (rows[r] & (0x10 >> k)) lt_draw_rect_fill(c, pen + k * scale, y + r * scale, scale, scale, col);
    pen += 6 * scale;
  }
}

/* Width in pixels of s drawn at scale (for centring). */
static int text_width(const char *s, int scale)
{
  int n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xC0) != 0x80) n++;
  return n > 0 ? (6 * n - 1) * scale : 0;
}

/* ---- histogram ------------------------------------------------------ */

/* A 1, 2 or 5 times a power of ten close to span / target. */
static double nice_step(double span, int target)
{
  double raw = span / target;
  double p = pow(10.0, floor(log10(raw)));
  double m = raw / p;
  return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

static void tick_label(char *buf, size_t n, double v, double step)
{
  if (fabs(v) < step * 1e-6) v = 0.0; /* no "-0" or 1e-17 */
  snprintf(buf, n, "%.6g", v);
}

int lt_plot_histogram(const char *png_path, const double *counts, int nbins, double lo, double hi,
                      const char *title, const char *xlabel, int width, int height)
{
  if (nbins < 1 || !counts || !(hi > lo) || !isfinite(lo) || !isfinite(hi) || width < 200 ||
      height < 150) {
    lt_error("cannot plot histogram '%s': invalid arguments (%d bins over [%g, %g], %dx%d)",
             png_path, nbins, lo, hi, width, height);
    return LT_ERR_INTERNAL;
  }
  lt_canvas c;
  int r = lt_canvas_init(&c, width, height, NULL);
  if (r < 0) return r;
  memset(c.rgb, 255, (size_t)width * height * 3);

  const lt_rgb black = {0, 0, 0}, grey = {225, 225, 225}, bar = {70, 130, 180},
               edge = {30, 70, 110};
  int left = 80, right = 25, top = 45, bottom = 65;
  int pw = width - left - right, ph = height - top - bottom;
  int x_axis = top + ph; /* y pixel of the x axis */

  double ymax = 0.0;
  for (int i = 0; i < nbins; i++)
    if (isfinite(counts[i]) && counts[i] > ymax) ymax = counts[i];
  double ystep = nice_step(ymax > 0 ? ymax : 1.0, 5);
  if (ystep < 1.0 && ymax >= 1.0) ystep = 1.0;
  double ytop = ceil((ymax > 0 ? ymax : 1.0) / ystep) * ystep;

  char lab[64];
  /* Y grid, ticks and labels. */
  for (int k = 0; k * ystep <= ytop * (1 + 1e-9); k++) {
    double v = k * ystep;
    int py = x_axis - (int)lround(v / ytop * ph);
    if (k > 0) lt_draw_line(&c, left + 1, py, left + pw, py, grey);
    lt_draw_line(&c, left - 5, py, left, py, black);
    tick_label(lab, sizeof lab, v, ystep);
    lt_draw_text(&c, left - 8 - text_width(lab, 1), py - 3, 1, lab, black);
  }
  /* Bars. */
  for (int i = 0; i < nbins; i++) {
    double v = isfinite(counts[i]) && counts[i] > 0 ? counts[i] : 0.0;
    int x0 = left + (int)lround((double)i / nbins * pw);
    int x1 = left + (int)lround((double)(i + 1) / nbins * pw);
    int hpx = (int)lround(v / ytop * ph);
    if (hpx <= 0) continue;
    lt_draw_rect_fill(&c, x0, x_axis - hpx, x1 - x0, hpx, bar);
    lt_draw_line(&c, x0, x_axis - hpx, x1, x_axis - hpx, edge);
    lt_draw_line(&c, x0, x_axis - hpx, x0, x_axis, edge);
    lt_draw_line(&c, x1, x_axis - hpx, x1, x_axis, edge);
  }
  /* Axes. */
  lt_draw_line(&c, left, top, left, x_axis, black);
  lt_draw_line(&c, left, x_axis, left + pw, x_axis, black);
  /* X ticks and labels. */
  double xstep = nice_step(hi - lo, 6);
  for (double v = ceil(lo / xstep - 1e-9) * xstep; v <= hi + xstep * 1e-9; v += xstep) {
    int px = left + (int)lround((v - lo) / (hi - lo) * pw);
    lt_draw_line(&c, px, x_axis, px, x_axis + 5, black);
    tick_label(lab, sizeof lab, v, xstep);
    lt_draw_text(&c, px - text_width(lab, 1) / 2, x_axis + 9, 1, lab, black);
  }
  /* Labels. */
  lt_draw_text(&c, left - 8 - text_width("count", 1), top - 14, 1, "count", black);
  if (xlabel)
    lt_draw_text(&c, left + (pw - text_width(xlabel, 1)) / 2, x_axis + 30, 1, xlabel, black);
  if (title) lt_draw_text(&c, (width - text_width(title, 2)) / 2, 12, 2, title, black);

  r = lt_png_write_rgb(png_path, c.rgb, width, height);
  lt_canvas_free(&c);
  return r;
}

/* Vertical text: glyphs stacked top to bottom (the y-axis label). */
static void text_down(lt_canvas *c, int x, int y, const char *s, lt_rgb col)
{
  char one[2] = {0, 0};
  for (; *s; s++, y += 9) {
    one[0] = *s;
    lt_draw_text(c, x, y, 1, one, col);
  }
}

int lt_plot_lines(const char *png_path, const double *x, const double *y, int n, int nseries,
                  const char *const *names, const char *title, const char *xlabel, const char *ylabel, int width,
                  int height)
{
  if (n < 1 || nseries < 1 || nseries > 8 || !x || !y || width < 200 || height < 150) {
    lt_error("cannot plot '%s': invalid arguments (%d points, %d series, %dx%d)", png_path, n, nseries, width,
             height);
    return LT_ERR_INTERNAL;
  }
  /* ranges over the finite values */
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i])) {
      x0 = fmin(x0, x[i]);
      x1 = fmax(x1, x[i]);
    }
  for (long i = 0; i < (long)n * nseries; i++)
    if (isfinite(y[i])) {
      y0 = fmin(y0, y[i]);
      y1 = fmax(y1, y[i]);
    }
  if (!(x1 >= x0)) x0 = 0, x1 = 1;
  if (!(y1 >= y0)) y0 = 0, y1 = 1;
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) y0 -= 0.5, y1 += 0.5;
  double ystep = nice_step(y1 - y0, 5), xstep = nice_step(x1 - x0, 6);
  y0 = floor(y0 / ystep + 1e-9) * ystep;
  y1 = ceil(y1 / ystep - 1e-9) * ystep;

  lt_canvas c;
  int r = lt_canvas_init(&c, width, height, NULL);
  if (r < 0) return r;
  memset(c.rgb, 255, (size_t)width * height * 3);
  const lt_rgb black = {0, 0, 0}, grid = {225, 225, 225};
  static const lt_rgb pal[8] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {255, 127, 14},
                                {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127}};
  int left = 90, right = 25, top = 45, bottom = 65;
  int pw = width - left - right, ph = height - top - bottom, x_axis = top + ph;
  char lab[64];
#define PX(v) (left + (int)lround(((v) - x0) / (x1 - x0) * pw))
#define PY(v) (x_axis - (int)lround(((v) - y0) / (y1 - y0) * ph))
  for (double v = y0; v <= y1 + ystep * 1e-9; v += ystep) {
    int py = PY(v);
    lt_draw_line(&c, left + 1, py, left + pw, py, grid);
    lt_draw_line(&c, left - 5, py, left, py, black);
    tick_label(lab, sizeof lab, v, ystep);
    lt_draw_text(&c, left - 8 - text_width(lab, 1), py - 3, 1, lab, black);
  }
  for (double v = ceil(x0 / xstep - 1e-9) * xstep; v <= x1 + xstep * 1e-9; v += xstep) {
    int px = PX(v);
    lt_draw_line(&c, px, x_axis, px, x_axis + 5, black);
    tick_label(lab, sizeof lab, v, xstep);
    lt_draw_text(&c, px - text_width(lab, 1) / 2, x_axis + 9, 1, lab, black);
  }
  for (int s = 0; s < nseries; s++) {
    const double *ys = y + (size_t)s * n;
    for (int i = 0; i < n; i++) {
      if (!isfinite(x[i]) || !isfinite(ys[i])) continue;
      if (n == 1 || i + 1 >= n || !isfinite(x[i + 1]) || !isfinite(ys[i + 1]))
        lt_draw_rect_fill(&c, PX(x[i]) - 1, PY(ys[i]) - 1, 3, 3, pal[s]);
      else
        lt_draw_line(&c, PX(x[i]), PY(ys[i]), PX(x[i + 1]), PY(ys[i + 1]), pal[s]);
    }
    if (names && names[s]) { /* legend, top right */
      int ly = top + 6 + 12 * s, lx = left + pw - 10 - text_width(names[s], 1) - 20;
      lt_draw_rect_fill(&c, lx, ly + 2, 14, 3, pal[s]);
      lt_draw_text(&c, lx + 18, ly, 1, names[s], black);
    }
  }
#undef PX
#undef PY
  lt_draw_line(&c, left, top, left, x_axis, black);
  lt_draw_line(&c, left, x_axis, left + pw, x_axis, black);
  if (xlabel) lt_draw_text(&c, left + (pw - text_width(xlabel, 1)) / 2, x_axis + 30, 1, xlabel, black);
  if (ylabel) text_down(&c, 12, top + (ph - 9 * (int)strlen(ylabel)) / 2, ylabel, black);
  if (title) lt_draw_text(&c, (width - text_width(title, 2)) / 2, 12, 2, title, black);
  r = lt_png_write_rgb(png_path, c.rgb, width, height);
  lt_canvas_free(&c);
  return r;
}
