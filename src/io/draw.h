/* draw.h - an RGB canvas for overlays and plots: lines, circles, polylines,
 * filled rectangles and text in a built-in 5x7 bitmap font (digits, letters,
 * punctuation), plus a histogram plot and a line plot (per-frame values). Clipped at the canvas edges. */
#ifndef LT_DRAW_H
#define LT_DRAW_H

#include <stdint.h>

typedef struct lt_canvas {
  int width, height;
  uint8_t *rgb; /* width*height*3 */
} lt_canvas;

typedef struct { uint8_t r, g, b; } lt_rgb;

/* Allocate a canvas; from_grey (may be NULL) is width*height floats 0..255
 * copied as grey (clamped). Returns 0 or LT_ERR_NOMEM. */
int lt_canvas_init(lt_canvas *c, int width, int height, const float *from_grey);
void lt_canvas_free(lt_canvas *c);
void lt_draw_pixel(lt_canvas *c, int x, int y, lt_rgb col);
void lt_draw_line(lt_canvas *c, double x0, double y0, double x1, double y1, lt_rgb col);
/* Closed polygon through n points. */
void lt_draw_polygon(lt_canvas *c, const double *x, const double *y, int n, lt_rgb col);
void lt_draw_circle(lt_canvas *c, double cx, double cy, double r, lt_rgb col);
void lt_draw_rect_fill(lt_canvas *c, int x, int y, int w, int h, lt_rgb col);
/* Text with top-left at (x, y), glyphs 5x7 scaled by `scale` (>= 1). */
void lt_draw_text(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col);

/* Histogram plot PNG: bars of counts[nbins] over [lo, hi], axes with tick
 * labels, title and x-axis label. Writes a PNG of width x height (e.g. 800x500).
 * Returns 0 or a negative lt_err. */
int lt_plot_histogram(const char *png_path, const double *counts, int nbins, double lo, double hi,
                      const char *title, const char *xlabel, int width, int height);

/* Line plot PNG of per-frame values: nseries curves y[s*n + i] over x[i]
 * (non-finite points are gaps), axes with ticks and tick labels, title, x
 * and y labels with units, a legend from names (may be NULL). At most 8
 * series. Returns 0 or a negative lt_err. */
int lt_plot_lines(const char *png_path, const double *x, const double *y, int n, int nseries,
                  const char *const *names, const char *title, const char *xlabel, const char *ylabel, int width,
                  int height);

#endif
