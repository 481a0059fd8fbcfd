/* plot.c - figures (plot.h): a figure is a list of items laid out once in
 * pixel coordinates (y down, text placed by its baseline), then rendered by
 * Cairo (PNG, PDF), by the SVG writer, or, without Cairo, on the bitmap
 * canvas (PNG). */
#include "plot.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef LT_HAVE_CAIRO
#include <cairo-pdf.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <pthread.h>
#endif

#include "draw.h"
#include "error.h"
#include "image.h"
#include "log.h"

/* ---- the figure: items ---------------------------------------------- */

enum { IT_LINE, IT_RECT, IT_TEXT, IT_POLY };
enum { AL_LEFT, AL_CENTRE, AL_RIGHT };

typedef struct item {
  int kind;
  double x0, y0, x1, y1; /* line ends; rect x, y, w, h; text anchor (baseline) */
  lt_rgb stroke, fill;
  int has_stroke, has_fill;
  double lw;             /* line width, px */
  int dash;
  double size;           /* text: font size, px */
  int bold, align, vertical;
  char *text;            /* UTF-8 */
  double *pts;           /* polyline: x0 y0 x1 y1 ... */
  int npts;
} item;

typedef struct fig {
  int w, h;
  item *it;
  int n, cap;
  int nomem;
} fig;

static item *add(fig *f, int kind)
{
  if (f->nomem) return NULL;
  if (f->n == f->cap) {
    int cap = f->cap ? 2 * f->cap : 64;
    item *p = realloc(f->it, sizeof *p * cap);
    if (!p) {
      f->nomem = 1;
      return NULL;
    }
    f->it = p;
    f->cap = cap;
  }
  item *i = &f->it[f->n++];
  memset(i, 0, sizeof *i);
  i->kind = kind;
  i->lw = 1.0;
  return i;
}

static void fig_free(fig *f)
{
  for (int i = 0; i < f->n; i++) {
    free(f->it[i].text);
    free(f->it[i].pts);
  }
  free(f->it);
  memset(f, 0, sizeof *f);
}

static void fig_line(fig *f, double x0, double y0, double x1, double y1, lt_rgb col, double lw, int dash)
{
  item *i = add(f, IT_LINE);
  if (!i) return;
  i->x0 = x0, i->y0 = y0, i->x1 = x1, i->y1 = y1;
  i->stroke = col;
  i->has_stroke = 1;
  i->lw = lw;
  i->dash = dash;
}

static void fig_rect(fig *f, double x, double y, double w, double h, const lt_rgb *fill, const lt_rgb *stroke)
{
  item *i = add(f, IT_RECT);
  if (!i) return;
  i->x0 = x, i->y0 = y, i->x1 = w, i->y1 = h;
  if (fill) i->fill = *fill, i->has_fill = 1;
  if (stroke) i->stroke = *stroke, i->has_stroke = 1;
}

static void fig_text(fig *f, double x, double y, double size, int bold, int align, int vertical, lt_rgb col,
                     const char *fmt, ...)
{
  item *i = add(f, IT_TEXT);
  if (!i) return;
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!(i->text = strdup(buf))) {
    f->nomem = 1;
    f->n--;
    return;
  }
  i->x0 = x, i->y0 = y;
  i->size = size;
  i->bold = bold;
  i->align = align;
  i->vertical = vertical;
  i->fill = col;
}

/* A polyline through the finite points of (x[k], y[k]) already in pixels. */
static void fig_poly(fig *f, const double *xy, int npts, lt_rgb col, double lw)
{
  item *i = add(f, IT_POLY);
  if (!i) return;
  if (!(i->pts = malloc(sizeof(double) * 2 * (npts > 0 ? npts : 1)))) {
    f->nomem = 1;
    f->n--;
    return;
  }
  memcpy(i->pts, xy, sizeof(double) * 2 * npts);
  i->npts = npts;
  i->stroke = col;
  i->has_stroke = 1;
  i->lw = lw;
}

/* ---- writing: temporary name, then rename --------------------------- */

static char *tmp_name(const char *path)
{
  size_t n = strlen(path) + 32;
  char *t = malloc(n);
  if (t) snprintf(t, n, "%s.tmp.%ld", path, (long)getpid());
  return t;
}

static int commit(char *tmp, const char *path, int ok, const char *why)
{
  int saved = errno;
  if (ok && rename(tmp, path) != 0) {
    ok = 0;
    saved = errno;
    why = NULL;
  }
  if (!ok) {
    lt_error("cannot write '%s': %s", path, why ? why : strerror(saved));
    remove(tmp);
  }
  free(tmp);
  return ok ? 0 : LT_ERR_OUTPUT;
}

/* ---- SVG ------------------------------------------------------------- */

static void svg_text(FILE *fp, const char *s)
{
  for (; *s; s++) {
    if (*s == '&') fputs("&amp;", fp);
    else if (*s == '<') fputs("&lt;", fp);
    else if (*s == '>') fputs("&gt;", fp);
    else if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, fp);
  }
}

static void svg_col(FILE *fp, const char *attr, lt_rgb c) { fprintf(fp, " %s=\"#%02x%02x%02x\"", attr, c.r, c.g, c.b); }

static int write_svg(const fig *f, const char *path)
{
  char *tmp = tmp_name(path);
  if (!tmp) return commit(tmp, path, 0, "out of memory");
  FILE *fp = fopen(tmp, "w");
  if (!fp) return commit(tmp, path, 0, NULL);
  fprintf(fp,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
          "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n"
          "<g font-family=\"DejaVu Sans, Verdana, Arial, Helvetica, sans-serif\">\n",
          f->w, f->h, f->w, f->h, f->w, f->h);
  for (int k = 0; k < f->n; k++) {
    const item *i = &f->it[k];
    switch (i->kind) {
    case IT_LINE:
      fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"", i->x0, i->y0, i->x1, i->y1);
      svg_col(fp, "stroke", i->stroke);
      fprintf(fp, " stroke-width=\"%g\"%s/>\n", i->lw, i->dash ? " stroke-dasharray=\"6 4\"" : "");
      break;
    case IT_RECT:
      fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"", i->x0, i->y0, i->x1, i->y1);
      if (i->has_fill) svg_col(fp, "fill", i->fill);
      else fputs(" fill=\"none\"", fp);
      if (i->has_stroke) {
        svg_col(fp, "stroke", i->stroke);
        fprintf(fp, " stroke-width=\"%g\"", i->lw);
      }
      fputs("/>\n", fp);
      break;
    case IT_POLY:
      fputs("<polyline fill=\"none\"", fp);
      svg_col(fp, "stroke", i->stroke);
      fprintf(fp, " stroke-width=\"%g\" stroke-linejoin=\"round\" points=\"", i->lw);
      for (int j = 0; j < i->npts; j++) fprintf(fp, "%s%.2f,%.2f", j ? " " : "", i->pts[2 * j], i->pts[2 * j + 1]);
      fputs("\"/>\n", fp);
      break;
    case IT_TEXT:
      fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%g\"%s", i->x0, i->y0, i->size,
              i->bold ? " font-weight=\"bold\"" : "");
      fputs(i->align == AL_CENTRE ? " text-anchor=\"middle\"" : i->align == AL_RIGHT ? " text-anchor=\"end\"" : "",
            fp);
      svg_col(fp, "fill", i->fill);
      if (i->vertical) fprintf(fp, " transform=\"rotate(-90 %.2f %.2f)\"", i->x0, i->y0);
      fputc('>', fp);
      svg_text(fp, i->text);
      fputs("</text>\n", fp);
      break;
    }
  }
  fputs("</g>\n</svg>\n", fp);
  int ok = fflush(fp) == 0 && !ferror(fp);
  ok = fclose(fp) == 0 && ok;
  return commit(tmp, path, ok, NULL);
}

/* ---- Cairo: PNG and PDF ---------------------------------------------- */

#ifdef LT_HAVE_CAIRO
/* Cairo's font faces and fontconfig's configuration are cached for the
 * process; they are released at exit (every drawing thread has ended by
 * then), so that leak checkers (ASan, valgrind) see no leak. */
static void release_font_caches(void)
{
  cairo_debug_reset_static_data();
  FcFini();
}

static void register_release(void) { atexit(release_font_caches); }

static void cairo_col(cairo_t *cr, lt_rgb c) { cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

/* Thin axis-parallel lines on pixel centres, so that they stay crisp. */
static double crisp(double v, double lw) { return fmod(lw, 2.0) == 1.0 ? floor(v) + 0.5 : v; }

static void render_cairo(const fig *f, cairo_t *cr)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, register_release);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (int k = 0; k < f->n; k++) {
    const item *i = &f->it[k];
    cairo_set_line_width(cr, i->lw);
    static const double dashes[2] = {6, 4};
    cairo_set_dash(cr, dashes, i->dash ? 2 : 0, 0);
    switch (i->kind) {
    case IT_LINE: {
      double x0 = i->x0, y0 = i->y0, x1 = i->x1, y1 = i->y1;
      if (x0 == x1) x0 = x1 = crisp(x0, i->lw);
      if (y0 == y1) y0 = y1 = crisp(y0, i->lw);
      cairo_move_to(cr, x0, y0);
      cairo_line_to(cr, x1, y1);
      cairo_col(cr, i->stroke);
      cairo_stroke(cr);
      break;
    }
    case IT_RECT:
      if (i->has_fill) {
        cairo_rectangle(cr, i->x0, i->y0, i->x1, i->y1);
        cairo_col(cr, i->fill);
        cairo_fill(cr);
      }
      if (i->has_stroke) {
        cairo_rectangle(cr, crisp(i->x0, i->lw), crisp(i->y0, i->lw), i->x1, i->y1);
        cairo_col(cr, i->stroke);
        cairo_stroke(cr);
      }
      break;
    case IT_POLY:
      cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
      for (int j = 0; j < i->npts; j++)
        (j ? cairo_line_to : cairo_move_to)(cr, i->pts[2 * j], i->pts[2 * j + 1]);
      cairo_col(cr, i->stroke);
      cairo_stroke(cr);
      break;
    case IT_TEXT: {
      cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                             i->bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
      cairo_set_font_size(cr, i->size);
      cairo_text_extents_t e;
      cairo_text_extents(cr, i->text, &e);
      double dx = i->align == AL_CENTRE ? -e.x_advance / 2 : i->align == AL_RIGHT ? -e.x_advance : 0;
      cairo_save(cr);
      cairo_translate(cr, i->x0, i->y0);
      if (i->vertical) cairo_rotate(cr, -M_PI / 2);
      cairo_move_to(cr, dx, 0);
      cairo_col(cr, i->fill);
      cairo_show_text(cr, i->text);
      cairo_restore(cr);
      break;
    }
    }
  }
}

static int write_cairo_png(const fig *f, const char *path)
{
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->w, f->h);
  cairo_t *cr = cairo_create(s);
  render_cairo(f, cr);
  cairo_surface_flush(s);
  int err = 0;
  uint8_t *rgb = NULL;
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS || !(rgb = malloc((size_t)f->w * f->h * 3))) {
    lt_error("cannot draw '%s': %s", path,
             cairo_status(cr) ? cairo_status_to_string(cairo_status(cr)) : "out of memory");
    err = LT_ERR_NOMEM;
  } else {
    const unsigned char *d = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < f->h; y++)
      for (int x = 0; x < f->w; x++) {
        uint32_t p = *(const uint32_t *)(d + (size_t)y * stride + 4 * x);
        uint8_t *o = rgb + 3 * ((size_t)y * f->w + x);
        o[0] = p >> 16 & 255, o[1] = p >> 8 & 255, o[2] = p & 255;
      }
    err = lt_png_write_rgb(path, rgb, f->w, f->h);
  }
  free(rgb);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return err;
}

static int write_pdf(const fig *f, const char *path)
{
  char *tmp = tmp_name(path);
  if (!tmp) return commit(tmp, path, 0, "out of memory");
  /* one pixel of the layout = one PostScript point */
  cairo_surface_t *s = cairo_pdf_surface_create(tmp, f->w, f->h);
  cairo_t *cr = cairo_create(s);
  render_cairo(f, cr);
  cairo_show_page(cr);
  cairo_status_t st = cairo_status(cr);
  cairo_destroy(cr);
  cairo_surface_finish(s);
  if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
  cairo_surface_destroy(s);
  return commit(tmp, path, st == CAIRO_STATUS_SUCCESS,
                st == CAIRO_STATUS_WRITE_ERROR || st == CAIRO_STATUS_FILE_NOT_FOUND ? NULL
                                                                                   : cairo_status_to_string(st));
}

const char *lt_plot_renderer(void)
{
  static char buf[96];
  snprintf(buf, sizeof buf, "Cairo %s (PNG, SVG, PDF)", cairo_version_string());
  return buf;
}
#else
/* ---- bitmap fallback (no Cairo) -------------------------------------- */

static int write_bitmap_png(const fig *f, const char *path)
{
  lt_canvas c;
  int err = lt_canvas_init(&c, f->w, f->h, NULL);
  if (err) return err;
  memset(c.rgb, 255, (size_t)f->w * f->h * 3);
  for (int k = 0; k < f->n; k++) {
    const item *i = &f->it[k];
    int thick = i->lw >= 1.5 ? 2 : 1;
    switch (i->kind) {
    case IT_LINE:
      if (i->dash) { /* dashes of 6 px, gaps of 4 */
        double len = hypot(i->x1 - i->x0, i->y1 - i->y0);
        for (double t = 0; t < len; t += 10) {
          double a = t / len, b = fmin(t + 6, len) / len;
          lt_draw_line(&c, i->x0 + a * (i->x1 - i->x0), i->y0 + a * (i->y1 - i->y0),
                       i->x0 + b * (i->x1 - i->x0), i->y0 + b * (i->y1 - i->y0), i->stroke);
        }
      } else {
        for (int d = 0; d < thick; d++)
          lt_draw_line(&c, i->x0 + (i->x0 == i->x1) * d, i->y0 + (i->y0 == i->y1) * d,
                       i->x1 + (i->x0 == i->x1) * d, i->y1 + (i->y0 == i->y1) * d, i->stroke);
      }
      break;
    case IT_RECT: {
      int x = (int)lround(i->x0), y = (int)lround(i->y0), w = (int)lround(i->x1), h = (int)lround(i->y1);
      if (i->has_fill) lt_draw_rect_fill(&c, x, y, w, h, i->fill);
      if (i->has_stroke) {
        double rx[4] = {x, x + w, x + w, x}, ry[4] = {y, y, y + h, y + h};
        lt_draw_polygon(&c, rx, ry, 4, i->stroke);
      }
      break;
    }
    case IT_POLY:
      for (int j = 0; j + 1 < i->npts; j++)
        for (int d = 0; d < thick; d++)
          lt_draw_line(&c, i->pts[2 * j], i->pts[2 * j + 1] + d, i->pts[2 * j + 2], i->pts[2 * j + 3] + d,
                       i->stroke);
      break;
    case IT_TEXT: {
      int scale = i->size >= 16 ? 2 : 1, tw = lt_text_width(i->text, scale);
      int off = i->align == AL_CENTRE ? tw / 2 : i->align == AL_RIGHT ? tw : 0;
      if (i->vertical) /* glyphs stacked top to bottom, centred on the anchor */
        lt_draw_text_down(&c, (int)i->x0 - 7 * scale, (int)i->y0 - (tw / scale + 1) / 6 * 9 * scale / 2, scale,
                          i->text, i->fill);
      else
        lt_draw_text(&c, (int)i->x0 - off, (int)i->y0 - 7 * scale, scale, i->text, i->fill);
      break;
    }
    }
  }
  err = lt_png_write_rgb(path, c.rgb, f->w, f->h);
  lt_canvas_free(&c);
  return err;
}

const char *lt_plot_renderer(void)
{
  return "built-in 5x7 bitmap font (PNG and SVG; no Cairo in this build, so no PDF)";
}
#endif

static int ends_with(const char *s, const char *suf)
{
  size_t n = strlen(s), k = strlen(suf);
  return n >= k && !strcasecmp(s + n - k, suf);
}

static int write_fig(const fig *f, const char *path)
{
  if (f->nomem) {
    lt_error("cannot draw '%s': out of memory", path);
    return LT_ERR_NOMEM;
  }
  if (ends_with(path, ".svg")) return write_svg(f, path);
#ifdef LT_HAVE_CAIRO
  if (ends_with(path, ".pdf")) return write_pdf(f, path);
  return write_cairo_png(f, path);
#else
  if (ends_with(path, ".pdf")) {
    lt_error("cannot write '%s': this leuktrack has no Cairo (%s); write .png or .svg", path,
             lt_plot_renderer());
    return LT_ERR_USAGE;
  }
  return write_bitmap_png(f, path);
#endif
}

/* ---- axes ------------------------------------------------------------ */

static const lt_rgb ink = {34, 34, 34}, gridc = {224, 224, 224};

/* A 1, 2 or 5 times a power of ten close to span / target. */
static double nice_step(double span, int target)
{
  double raw = span / target;
  double p = pow(10.0, floor(log10(raw)));
  double m = raw / p;
  return (m < 1.5 ? 1.0 : m < 3.5 ? 2.0 : m < 7.5 ? 5.0 : 10.0) * p;
}

/* v rounded to the decimals of step (no "-0", no 0.30000000000000004). */
static double round_to(double v, double step)
{
  int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  double k = pow(10.0, dec);
  v = round(v * k) / k;
  return v == 0 ? 0.0 : v;
}

static void tick_label(char *buf, size_t n, double v, double step)
{
  snprintf(buf, n, "%.10g", round_to(v, step));
}

/* The frame of a plot: title, y grid with ticks and labels over [y0, y1],
 * axis labels, axes (drawn last by the caller through axes_box). */
typedef struct {
  double left, top, pw, ph, x_axis;
  double x0, x1, y0, y1;
} frame;

static double PX(const frame *fr, double v) { return fr->left + (v - fr->x0) / (fr->x1 - fr->x0) * fr->pw; }
static double PY(const frame *fr, double v) { return fr->x_axis - (v - fr->y0) / (fr->y1 - fr->y0) * fr->ph; }

static void frame_init(frame *fr, const fig *f, double x0, double x1, double y0, double y1)
{
  fr->left = LT_PLOT_LEFT;
  fr->top = LT_PLOT_TOP;
  fr->pw = f->w - LT_PLOT_LEFT - LT_PLOT_RIGHT;
  fr->ph = f->h - LT_PLOT_TOP - LT_PLOT_BOTTOM;
  fr->x_axis = fr->top + fr->ph;
  fr->x0 = x0, fr->x1 = x1, fr->y0 = y0, fr->y1 = y1;
}

static void y_grid(fig *f, const frame *fr, double ystep)
{
  char lab[64];
  for (int k = 0;; k++) {
    double v = fr->y0 + k * ystep;
    if (v > fr->y1 + ystep * 1e-9) break;
    double py = PY(fr, v);
    if (k > 0) fig_line(f, fr->left, py, fr->left + fr->pw, py, gridc, 1, 0);
    fig_line(f, fr->left - 5, py, fr->left, py, ink, 1, 0);
    tick_label(lab, sizeof lab, v, ystep);
    fig_text(f, fr->left - 8, py + 4, 12, 0, AL_RIGHT, 0, ink, "%s", lab);
  }
}

static void x_ticks(fig *f, const frame *fr, double first, double xstep)
{
  char lab[64];
  for (int k = 0;; k++) {
    double v = first + k * xstep;
    if (v > fr->x1 + xstep * 1e-9) break;
    double px = PX(fr, v);
    fig_line(f, px, fr->x_axis, px, fr->x_axis + 5, ink, 1, 0);
    tick_label(lab, sizeof lab, v, xstep);
    fig_text(f, px, fr->x_axis + 20, 12, 0, AL_CENTRE, 0, ink, "%s", lab);
  }
}

static void labels(fig *f, const frame *fr, const char *title, const char *xlabel, const char *ylabel)
{
  fig_line(f, fr->left, fr->top, fr->left, fr->x_axis, ink, 1, 0);
  fig_line(f, fr->left, fr->x_axis, fr->left + fr->pw, fr->x_axis, ink, 1, 0);
  if (title) fig_text(f, f->w / 2.0, 28, 18, 1, AL_CENTRE, 0, ink, "%s", title);
  if (xlabel) fig_text(f, fr->left + fr->pw / 2, f->h - 16, 14, 0, AL_CENTRE, 0, ink, "%s", xlabel);
  if (ylabel) fig_text(f, 24, fr->top + fr->ph / 2, 14, 0, AL_CENTRE, 1, ink, "%s", ylabel);
}

/* ---- histogram ------------------------------------------------------- */

static int cmpd(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int lt_hist_make(lt_hist *h, const double *v, int n, double range_max)
{
  memset(h, 0, sizeof *h);
  double *s = malloc(sizeof(double) * (n > 0 ? n : 1));
  if (!s) return LT_ERR_NOMEM;
  int m = 0;
  double sum = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) {
      s[m++] = v[i];
      sum += v[i];
    }
  qsort(s, m, sizeof *s, cmpd);
  h->n = m;
  if (m > 0) {
    h->mean = sum / m;
    h->median = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
  }
  double top = m > 0 ? s[m - 1] : 0.0;
  if (isfinite(range_max) && range_max > top) top = range_max;
  if (m > 0 || top > 0) {
    double lo = m > 0 && s[0] < 0 ? s[0] : 0.0, span = top - lo;
    h->width = nice_step(span > 0 ? span : fmax(fabs(top), 1.0), 20);
    h->lo = floor(lo / h->width) * h->width;
    h->nbins = (int)floor((top - h->lo) / h->width) + 1;
    if (h->nbins > 1 && lt_hist_edge(h, h->nbins - 1) > top) h->nbins--; /* rounding of the last edge */
    if (lt_hist_edge(h, h->nbins) <= top) h->nbins++;
  } else {
    h->lo = 0, h->width = 0.1, h->nbins = 10;
  }
  h->counts = calloc(h->nbins, sizeof(double));
  if (!h->counts) {
    free(s);
    return LT_ERR_NOMEM;
  }
  for (int i = 0, b = 0; i < m; i++) { /* sorted: walk the edges */
    while (b + 1 < h->nbins && s[i] >= lt_hist_edge(h, b + 1)) b++;
    h->counts[b] += 1;
  }
  free(s);
  return 0;
}

void lt_hist_free(lt_hist *h)
{
  free(h->counts);
  h->counts = NULL;
}

double lt_hist_edge(const lt_hist *h, int i) { return round_to(h->lo + i * h->width, h->width); }

static int utf8_len(const char *s)
{
  int n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
  return n;
}

/* "12.3" with 3 significant digits, no exponent below 10^6. */
static void num(char *buf, size_t n, double v)
{
  double a = fabs(v);
  snprintf(buf, n, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3, v);
}

static int write_hist_csv(const lt_hist *h, const char *path)
{
  char *tmp = tmp_name(path);
  if (!tmp) return commit(tmp, path, 0, "out of memory");
  FILE *fp = fopen(tmp, "w");
  if (!fp) return commit(tmp, path, 0, NULL);
  fputs("bin_lo,bin_hi,count\n", fp);
  for (int i = 0; i < h->nbins; i++)
    fprintf(fp, "%.10g,%.10g,%.0f\n", lt_hist_edge(h, i), lt_hist_edge(h, i + 1), h->counts[i]);
  int ok = fflush(fp) == 0 && !ferror(fp);
  ok = fclose(fp) == 0 && ok;
  return commit(tmp, path, ok, NULL);
}

int lt_plot_histogram(const char *base, const double *v, int n, double range_max, const char *title,
                      const char *xlabel, const char *unit, int width, int height)
{
  if (n < 0 || (n > 0 && !v) || width < 300 || height < 200) {
    lt_error("cannot plot histogram '%s': invalid arguments (%d values, %dx%d)", base, n, width, height);
    return LT_ERR_INTERNAL;
  }
  lt_hist h;
  if (lt_hist_make(&h, v, n, range_max)) {
    lt_error("out of memory (histogram '%s')", base);
    return LT_ERR_NOMEM;
  }
  fig f = {.w = width, .h = height};
  double ymax = 0;
  for (int i = 0; i < h.nbins; i++) ymax = fmax(ymax, h.counts[i]);
  double ystep = fmax(1.0, nice_step(ymax > 0 ? ymax : 1.0, 5));
  double ytop = ceil((ymax > 0 ? ymax : 1.0) / ystep) * ystep;
  if (ytop - ymax < 0.04 * ytop) ytop += ystep; /* the tallest bar below the top */
  double hi = lt_hist_edge(&h, h.nbins);
  frame fr;
  frame_init(&fr, &f, h.lo, hi, 0, ytop);
  y_grid(&f, &fr, ystep);
  static const lt_rgb bar = {70, 130, 180}, edge = {30, 70, 110}, cmean = {214, 39, 40}, cmed = {255, 127, 14};
  for (int i = 0; i < h.nbins; i++) {
    if (h.counts[i] <= 0) continue;
    double x0 = PX(&fr, lt_hist_edge(&h, i)), x1 = PX(&fr, lt_hist_edge(&h, i + 1)), y = PY(&fr, h.counts[i]);
    fig_rect(&f, x0, y, x1 - x0, fr.x_axis - y, &bar, &edge);
  }
  /* ticks: the first 1, 2 or 5 times a power of ten that is a whole number
   * of bins and gives at most 10 intervals, so every tick is a bin edge */
  double tstep = h.width;
  for (double c = h.width;; c = nice_step(c * 2.2, 1)) {
    double k = round(c / h.width);
    if (fabs(k * h.width - c) < 1e-9 * c && (hi - h.lo) / c <= 10 + 1e-9) {
      tstep = c;
      break;
    }
  }
  double first = ceil(h.lo / tstep - 1e-9) * tstep;
  x_ticks(&f, &fr, first, tstep);
  char a[32], b[32];
  if (h.n > 0) {
    fig_line(&f, PX(&fr, h.mean), fr.top, PX(&fr, h.mean), fr.x_axis, cmean, 2, 1);
    fig_line(&f, PX(&fr, h.median), fr.top, PX(&fr, h.median), fr.x_axis, cmed, 2, 1);
  }
  labels(&f, &fr, title, xlabel, "number of tracks");
  /* the statistics under the title: n, then mean and median with their line
   * keys, centred by an estimate of their width (0.6 em per character) */
  char st[3][96];
  snprintf(st[0], sizeof st[0], "n = %d tracks", h.n);
  num(a, sizeof a, h.mean);
  num(b, sizeof b, h.median);
  snprintf(st[1], sizeof st[1], "mean = %s %s", a, unit ? unit : "");
  snprintf(st[2], sizeof st[2], "median = %s %s", b, unit ? unit : "");
  int nst = h.n > 0 ? 3 : 1;
  double wst[3], total = 0, key = 30, gap = 28, yb = 52;
  for (int i = 0; i < nst; i++) {
    wst[i] = 0.6 * 14 * utf8_len(st[i]) + (i ? key : 0);
    total += wst[i] + (i ? gap : 0);
  }
  double xs = width / 2.0 - total / 2;
  for (int i = 0; i < nst; i++) {
    if (i) {
      fig_line(&f, xs, yb - 5, xs + key - 6, yb - 5, i == 1 ? cmean : cmed, 2, 1);
      fig_text(&f, xs + key, yb, 14, 0, AL_LEFT, 0, ink, "%s", st[i]);
    } else {
      fig_text(&f, xs, yb, 14, 0, AL_LEFT, 0, ink, "%s", st[i]);
    }
    xs += wst[i] + gap;
  }
  size_t bn = strlen(base) + 8;
  char *path = malloc(bn);
  int err = path ? 0 : LT_ERR_NOMEM;
  static const char *const ext[] = {".csv", ".png", ".svg", ".pdf"};
  for (int e = 0; e < 4 && !err; e++) {
#ifndef LT_HAVE_CAIRO
    if (e == 3) break; /* no PDF without Cairo (lt_plot_renderer) */
#endif
    snprintf(path, bn, "%s%s", base, ext[e]);
    err = e == 0 ? write_hist_csv(&h, path) : write_fig(&f, path);
  }
  if (!path) lt_error("out of memory (histogram '%s')", base);
  free(path);
  fig_free(&f);
  lt_hist_free(&h);
  return err;
}

/* ---- line plot --------------------------------------------------------- */

int lt_plot_lines(const char *path, const double *x, const double *y, int n, int nseries,
                  const char *const *names, const char *title, const char *xlabel, const char *ylabel, int width,
                  int height)
{
  if (n < 1 || nseries < 1 || nseries > 8 || !x || !y || width < 300 || height < 200) {
    lt_error("cannot plot '%s': invalid arguments (%d points, %d series, %dx%d)", path, n, nseries, width,
             height);
    return LT_ERR_INTERNAL;
  }
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i])) x0 = fmin(x0, x[i]), x1 = fmax(x1, x[i]);
  for (long i = 0; i < (long)n * nseries; i++)
    if (isfinite(y[i])) y0 = fmin(y0, y[i]), y1 = fmax(y1, y[i]);
  if (!(x1 >= x0)) x0 = 0, x1 = 1;
  if (!(y1 >= y0)) y0 = 0, y1 = 1;
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 == y0) y0 -= 0.5, y1 += 0.5;
  double ystep = nice_step(y1 - y0, 5), xstep = nice_step(x1 - x0, 8);
  y0 = floor(y0 / ystep + 1e-9) * ystep;
  y1 = ceil(y1 / ystep - 1e-9) * ystep;
  fig f = {.w = width, .h = height};
  frame fr;
  frame_init(&fr, &f, x0, x1, y0, y1);
  y_grid(&f, &fr, ystep);
  x_ticks(&f, &fr, ceil(x0 / xstep - 1e-9) * xstep, xstep);
  static const lt_rgb pal[8] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {255, 127, 14},
                                {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127}};
  double *xy = malloc(sizeof(double) * 2 * n);
  if (!xy) f.nomem = 1;
  for (int s = 0; s < nseries && xy; s++) {
    const double *ys = y + (size_t)s * n;
    int m = 0;
    for (int i = 0; i <= n; i++) {
      if (i < n && isfinite(x[i]) && isfinite(ys[i])) {
        xy[2 * m] = PX(&fr, x[i]);
        xy[2 * m + 1] = PY(&fr, ys[i]);
        m++;
        continue;
      }
      if (m == 1) /* an isolated point: a small square */
        fig_rect(&f, xy[0] - 1.5, xy[1] - 1.5, 3, 3, &pal[s], NULL);
      else if (m > 1)
        fig_poly(&f, xy, m, pal[s], 1.5);
      m = 0;
    }
  }
  free(xy);
  if (names) { /* legend, top right inside the plot, on white */
    int nn = 0;
    for (int s = 0; s < nseries; s++) nn += names[s] != NULL;
    double lx = fr.left + fr.pw - 170, ly = fr.top + 8;
    if (nn) fig_rect(&f, lx - 6, ly - 2, 170, 18.0 * nn + 6, &(lt_rgb){255, 255, 255}, &gridc);
    for (int s = 0; s < nseries; s++) {
      if (!names[s]) continue;
      fig_line(&f, lx, ly + 9, lx + 22, ly + 9, pal[s], 2, 0);
      fig_text(&f, lx + 28, ly + 14, 13, 0, AL_LEFT, 0, ink, "%s", names[s]);
      ly += 18;
    }
  }
  labels(&f, &fr, title, xlabel, ylabel);
  int err = write_fig(&f, path);
  fig_free(&f);
  return err;
}
