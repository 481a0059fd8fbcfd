/* draw.h - an RGB canvas for overlays and plots: lines, circles, polylines,
 * filled rectangles and text in a built-in 5x7 bitmap font (digits, letters,
 * punctuation), with a halo for overlays. Clipped at the canvas edges. The
 * plots (histogram, line plot) are in plot.h. */
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

/* Width in pixels of s (UTF-8) drawn at scale; glyphs are 7*scale high. */
int lt_text_width(const char *s, int scale);
/* Text with a dark halo: every glyph pixel is first drawn in `halo` on the
 * 8 neighbours (scale pixels wide), then in col, so that it stays readable
 * on any background. */
void lt_draw_text_halo(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col, lt_rgb halo);
/* Vertical text: glyphs stacked top to bottom from (x, y). */
void lt_draw_text_down(lt_canvas *c, int x, int y, int scale, const char *s, lt_rgb col);

/* Overlay colours: LT_TRACK_COLOURS distinct colours, readable on grey. */
enum { LT_TRACK_COLOURS = 10 };
lt_rgb lt_track_colour(int k);
/* The colour (0..LT_TRACK_COLOURS-1) for a new track at (x, y): the one
 * whose nearest user among the n tracks shown (centres xy[2n], colours
 * colour[n], -1 = none yet) is farthest away; so neighbours differ while
 * fewer than LT_TRACK_COLOURS tracks are near. Ties: the lowest index. */
int lt_pick_colour(const double *xy, const int *colour, int n, double x, double y);

/* Where a label of tw x th pixels goes: at (*x, *y) (its top-left corner)
 * moved inside the w x h frame (2 px from the edges) and off the banner
 * box (0, 0)-(bw, bh); when the spot is above the top or under the banner
 * it moves to y = below (e.g. under the cell), and right of the banner when
 * still under it. Needs tw, th <= the frame minus the margins. */
void lt_label_place(int *x, int *y, int tw, int th, int below, int w, int h, int bw, int bh);

/* The canvas as PNG, as small as it goes: its grey pixels (r = g = b)
 * reduced to grey_bits bits (8 = exact; 6 = 64 levels, at most 2 grey
 * levels off: each grey goes to the nearest level), then a palette PNG when that leaves at most 256 colours,
 * else with grey at most 7 bits (at most 1 level off) when that does, else
 * RGB. Returns 0 or a negative lt_err. */
int lt_canvas_write_png(const lt_canvas *c, const char *path, int grey_bits);

#endif
