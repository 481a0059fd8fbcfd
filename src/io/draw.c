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

int lt_text_width(const char *s, int scale)
{
  if (scale < 1) scale = 1;
  int n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p & 0xC0) != 0x80) n++;
  return n > 0 ? (6 * n - 1) * scale : 0;
}

void lt_draw_text_down(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col)
{
  char one[3] = {0, 0, 0};
  if (scale < 1) scale = 1;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++, y += 9 * scale) {
    one[0] = (char)*p;
    one[1] = 0;
    if ((p[0] == 0xC2 && p[1] == 0xB5) || (p[0] == 0xCE && p[1] == 0xBC)) one[1] = (char)*++p;
    else
      while ((p[1] & 0xC0) == 0x80) p++;
    lt_draw_text(c, x, y, scale, one, col);
  }
}

void lt_draw_text_halo(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col, lt_rgb halo)
{
  if (scale < 1) scale = 1;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      if (dx || dy) lt_draw_text(c, x + dx * scale, y + dy * scale, scale, s, halo);
  lt_draw_text(c, x, y, scale, s, col);
}

/* ---- overlay colours and files -------------------------------------- */

/* ten hues that stay apart from each other and from grey */
static const lt_rgb track_pal[LT_TRACK_COLOURS] = {
    {230, 25, 75},  {40, 190, 40},  {255, 225, 25}, {30, 120, 255},  {255, 140, 0},
    {240, 50, 230}, {70, 240, 240}, {255, 255, 255}, {255, 170, 200}, {170, 255, 60}};

lt_rgb lt_track_colour(int k) { return track_pal[((k % LT_TRACK_COLOURS) + LT_TRACK_COLOURS) % LT_TRACK_COLOURS]; }

int lt_pick_colour(const double *xy, const int *colour, int n, double x, double y)
{
  double near[LT_TRACK_COLOURS];
  for (int k = 0; k < LT_TRACK_COLOURS; k++) near[k] = INFINITY;
  for (int i = 0; i < n; i++) {
    if (colour[i] < 0 || colour[i] >= LT_TRACK_COLOURS) continue;
    double d = hypot(xy[2 * i] - x, xy[2 * i + 1] - y);
    if (d < near[colour[i]]) near[colour[i]] = d;
  }
  int best = 0;
  for (int k = 1; k < LT_TRACK_COLOURS; k++)
    if (near[k] > near[best]) best = k;
  return best;
}

/* Open addressing over 1024 slots: the index of colour v (0xRRGGBB), added
 * when new; -1 once more than 256 colours were seen. */
static int pal_index(uint32_t *key, uint8_t *val, int *npal, uint8_t *pal, uint32_t v)
{
  uint32_t h = (v * 2654435761u) >> 22;
  for (;; h = (h + 1) & 1023) {
    if (key[h] == v + 1) return val[h];
    if (key[h] == 0) break;
  }
  if (*npal == 256) return -1;
  key[h] = v + 1;
  val[h] = (uint8_t)*npal;
  pal[3 * *npal] = v >> 16, pal[3 * *npal + 1] = v >> 8 & 255, pal[3 * *npal + 2] = v & 255;
  return (*npal)++;
}

int lt_canvas_write_png(const lt_canvas *c, const char *path, int grey_bits)
{
  if (grey_bits < 1 || grey_bits > 8) grey_bits = 8;
  size_t n = (size_t)c->width * c->height;
  uint8_t *idx = malloc(n);
  uint32_t *key = malloc(sizeof(uint32_t) * 1024);
  uint8_t val[1024], pal[3 * 256];
  if (!idx || !key) {
    free(idx);
    free(key);
    return lt_png_write_rgb(path, c->rgb, c->width, c->height);
  }
  int npal = -1;
  /* pass 0 at grey_bits, pass 1 (too many colours) at most 7 bits */
  for (int pass = 0; pass < 2 && npal < 0; pass++) {
    int bits = pass == 0 ? grey_bits : grey_bits < 7 ? grey_bits : 7, top = (1 << bits) - 1;
    memset(key, 0, sizeof(uint32_t) * 1024);
    npal = 0;
    for (size_t i = 0; i < n; i++) {
      const uint8_t *p = c->rgb + 3 * i;
      uint32_t r = p[0], g = p[1], b = p[2];
      if (bits < 8 && r == g && g == b) /* grey to the nearest of 2^bits levels */
        r = g = b = ((g * top + 127) / 255 * 255 + top / 2) / top;
      int k = pal_index(key, val, &npal, pal, r << 16 | g << 8 | b);
      if (k < 0) {
        npal = -1;
        break;
      }
      idx[i] = (uint8_t)k;
    }
  }
  int err = npal > 0 ? lt_png_write_palette(path, idx, c->width, c->height, pal, npal)
                     : lt_png_write_rgb(path, c->rgb, c->width, c->height);
  free(idx);
  free(key);
  return err;
}

void lt_label_place(int *x, int *y, int tw, int th, int below, int w, int h, int bw, int bh)
{
  int lx = *x < 2 ? 2 : *x > w - tw - 2 ? w - tw - 2 : *x, ly = *y;
  if (ly < 2 || (lx < bw && ly < bh)) ly = below;
  if (ly > h - th - 2) ly = h - th - 2;
  if (ly < 2) ly = 2;
  if (lx < bw && ly < bh) lx = bw + 2; /* a cell in the banner's corner: right of it */
  *x = lx;
  *y = ly;
}
