/* plot.h - the figures of every mode: a velocity (or any value) histogram
 * with round bins and its statistics, and a line plot of per-frame values.
 * A figure is laid out once as a list of lines, rectangles and text items
 * and then written by one of three renderers:
 *   - PNG and PDF through Cairo (anti-aliased, real fonts: "DejaVu Sans" or
 *     fontconfig's sans-serif), in builds with Cairo (LT_HAVE_CAIRO);
 *   - SVG written directly, with the text as <text> elements (Cairo's SVG
 *     surface draws glyph outlines, which a slide editor cannot edit and a
 *     search cannot find);
 *   - PNG on the RGB canvas of draw.h with its 5x7 bitmap font, only in
 *     builds without Cairo (the portable static build); such builds write
 *     no PDF and say so in --version (lt_plot_renderer).
 * Every file is written to a temporary name and renamed when complete. */
#ifndef LT_PLOT_H
#define LT_PLOT_H

/* Round bins: width = 1, 2 or 5 times a power of ten (about 20 bins over the
 * data), edges at lo + i * width with lo a multiple of width (0 for data
 * that are all >= 0); bin i holds lo + i*w <= v < lo + (i+1)*w, so the
 * largest value lies inside the last bin. Non-finite values are skipped. */
typedef struct lt_hist {
  double lo, width;
  int nbins;
  double *counts; /* nbins, malloc'ed */
  int n;          /* finite values counted */
  double mean, median;
} lt_hist;

/* Bins and statistics of v[n]; the bins reach at least up to range_max
 * (several histograms on one axis; 0 = the data's own range). Returns 0 or
 * LT_ERR_NOMEM; lt_hist_free after. */
int lt_hist_make(lt_hist *h, const double *v, int n, double range_max);
void lt_hist_free(lt_hist *h);
/* Edge i (0..nbins) as written to the CSV (rounded to the bin width's decimals). */
double lt_hist_edge(const lt_hist *h, int i);

/* Histogram figure of v[n]: writes BASE.png, BASE.svg, BASE.pdf (Cairo
 * builds) and BASE.csv ("bin_lo,bin_hi,count", one line per bin). The
 * subtitle states n, mean and median in `unit` (UTF-8, e.g. "µm/s"); the
 * mean and median are dashed vertical lines; range_max as lt_hist_make.
 * xlabel names the value
 * (e.g. "mean speed per track (µm/s)"). Returns 0 or a negative lt_err
 * after one message. */
int lt_plot_histogram(const char *base, const double *v, int n, double range_max, const char *title,
                      const char *xlabel, const char *unit, int width, int height);

/* Line plot of per-frame values: nseries curves y[s*n + i] over x[i]
 * (non-finite points are gaps), axes with round ticks, title, x and y labels,
 * a legend from names (may be NULL). At most 8 series. The format follows
 * path's extension: .svg, .pdf (Cairo builds), anything else PNG. Returns 0
 * or a negative lt_err. */
int lt_plot_lines(const char *path, const double *x, const double *y, int n, int nseries,
                  const char *const *names, const char *title, const char *xlabel, const char *ylabel, int width,
                  int height);

/* Margins of both figures in pixels (the plot area is the rest). */
enum { LT_PLOT_LEFT = 84, LT_PLOT_RIGHT = 28, LT_PLOT_TOP = 70, LT_PLOT_BOTTOM = 64 };

/* "Cairo 1.16.0 (PNG, SVG, PDF)" or the bitmap fallback's description. */
const char *lt_plot_renderer(void);

#endif
