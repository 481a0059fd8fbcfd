/* pipeline.c - vcm mode, the steps of the run (SPEC 4.3, seeds/002 section 6)
 * inside the shared frame loop (core/loop.h, pairs = 1): for each pair of
 * consecutive frames (t, t+1) the backend's pair stage (vcm.h: interest
 * points, NCM per point, VCM per point and its sub-pixel peak) gives one
 * vector per interest point; the step writes them as rows, and optionally
 * an overlay PNG with arrows and a dense .flo field interpolated from them.
 *
 * Choices the paper leaves open (made and measured in vcm.c, whose top
 * comment has the numbers; the man page repeats them):
 *  - similarity: min-max normalised SAD, squared ((dmax - d)/(dmax - dmin))^2;
 *  - distance weighting: linear ramp 1 - r/(R+1), R = --coherence-radius 20;
 *  - temporal coherence: off by default (--temporal W adds the previous
 *    pair's field, averaged around the point, as a bounded prior of weight W);
 *  - sub-pixel: equiangular fit (an SAD surface is a cone).
 *
 * Motion evidence (--evidence A, default 0.7, 0 = off): a vector of 1 px or
 * more is dropped unless the 9x9 window around its point moved by it
 * matches frame t+1 with at most A times the SAD of the window not moved
 * (vcm.h lt_vcm_evidence, computed by the backends): on a noisy static
 * background the interest rule still gives every sub-window its K points,
 * whose vectors are chance (lt_synth2 clips: ~90 % of them wrong).
 * Measured in tests/test_vcm_cli.sh.
 *
 * Output rows: frame = index of the pair's FIRST frame t, t_s its time,
 * point = index of the vector within the pair (backend order: sub-window by
 * sub-window, row-major, strongest first; dropped vectors leave gaps), x_px,y_px = the interest point in
 * frame t, dx_px,dy_px = its motion to frame t+1, score = VCM peak / sum of
 * the votes' weights (0..1, coherence). A pair without interest points
 * (uniform or static frames) gives no rows and one warning per run.
 *
 * Dense field (--flo DIR, DIR/frame_NNNNNN.flo per pair, NNNNNN = t): at
 * pixel p, u(p) = sum_i w_i u_i / sum_i w_i with w_i = 1 / (1 + |p - p_i|^2)
 * (inverse squared distance, softened) over the vectors i whose point lies
 * in the 3x3 sub-windows around p's sub-window; pixels with no vector there
 * are "unknown" (1e10, Middlebury's convention). Cost: at most 9 K vectors
 * per pixel.
 *
 * Nothing is allocated per pair here: vectors, canvas, path and field
 * buffers are made in begin (the PNG and .flo writers and the rows writer
 * keep their own). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "core/loop.h"
#include "draw.h"
#include "error.h"
#include "flow/flo.h"
#include "image.h"
#include "log.h"
#include "rows.h"
#include "vcm.h"
#include "vcm_mode.h"

enum { ST_POINTS, ST_CORRELATION, ST_ACCUMULATION, ST_OUTPUT, ST_N };
static const char *const stage_names[ST_N] = {"points", "correlation", "accumulation", "output"};

enum { C_FRAME, C_T, C_POINT, C_X, C_Y, C_DX, C_DY, C_SCORE, NCOLS };
static const lt_col cols[NCOLS] = {
  {"frame", -1}, {"t_s", 6}, {"point", -1}, {"x_px", -1}, {"y_px", -1}, {"dx_px", 4}, {"dy_px", 4}, {"score", 4},
};

typedef struct run {
  const lt_settings *s;
  lt_vcm_opts o;
  lt_vcm_params p;
  const lt_vcm_backend *be;
  void *ctx;
  int fw, fh, cap;
  lt_loop *L;
  lt_vcm_vector *vec;
  int *pidx;            /* each kept vector's index in the backend's order */
  lt_outfile *out;
  lt_rows rows;
  int rows_on;
  double phase[3];      /* the backend's cumulative phase seconds so far */
  lt_canvas cv;         /* --overlay */
  char *path;           /* overlay / flo path buffer */
  size_t pathlen;
  float *fu, *fv;       /* --flo planes */
  int *bstart, *bidx;   /* vectors bucketed by sub-window (counting sort) */
  long npoints, empty_pairs, dropped, pairs_done;
  int warned_empty;
  int overlap;          /* through start8 / finish (begin) */
  int held, held_n, held_i0, held_i1; /* a pair's vectors in vec whose rows wait (start8 / finish) */
  double held_t;
} run;

static int make_dir(const char *opt, const char *dir)
{
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create %s folder '%s': %s", opt, dir, strerror(errno));
    return LT_ERR_OUTPUT;
  }
  return 0;
}

/* Sub-window of pixel column x (the core's cells: cx spans cx*w/gx ..). */
static int cell_of(int x, int w, int g)
{
  int c = (int)(((long)(x + 1) * g + w - 1) / w) - 1;
  return c < 0 ? 0 : c >= g ? g - 1 : c;
}

static int write_flo(run *R, int frame, int n)
{
  const lt_vcm_params *p = &R->p;
  int gx = p->grid_x, gy = p->grid_y, nc = gx * gy, w = R->fw, h = R->fh;
  memset(R->bstart, 0, sizeof *R->bstart * (nc + 1));
  for (int i = 0; i < n; i++) {
    int c = cell_of((int)R->vec[i].y, h, gy) * gx + cell_of((int)R->vec[i].x, w, gx);
    R->bstart[c + 1]++;
  }
  for (int c = 0; c < nc; c++) R->bstart[c + 1] += R->bstart[c];
  for (int c = nc; c > 0; c--) R->bstart[c] = R->bstart[c - 1];
  for (int i = 0; i < n; i++) { /* stable: vectors keep their order inside a bucket */
    int c = cell_of((int)R->vec[i].y, h, gy) * gx + cell_of((int)R->vec[i].x, w, gx);
    R->bidx[R->bstart[c + 1]++] = i;
  }
  R->bstart[0] = 0;
#pragma omp parallel for schedule(static)
  for (int y = 0; y < h; y++) {
    int cy = cell_of(y, h, gy);
    for (int x = 0; x < w; x++) {
      int cx = cell_of(x, w, gx);
      double su = 0.0, sv = 0.0, sw = 0.0;
      for (int by = cy - 1; by <= cy + 1; by++) {
        if (by < 0 || by >= gy) continue;
        for (int bx = cx - 1; bx <= cx + 1; bx++) {
          if (bx < 0 || bx >= gx) continue;
          int c = by * gx + bx;
          for (int k = R->bstart[c]; k < R->bstart[c + 1]; k++) {
            const lt_vcm_vector *v = &R->vec[R->bidx[k]];
            double ex = x - v->x, ey = y - v->y, wt = 1.0 / (1.0 + ex * ex + ey * ey);
            su += wt * v->dx;
            sv += wt * v->dy;
            sw += wt;
          }
        }
      }
      size_t o = (size_t)y * w + x;
      R->fu[o] = sw > 0.0 ? (float)(su / sw) : 1e10f;
      R->fv[o] = sw > 0.0 ? (float)(sv / sw) : 1e10f;
    }
  }
  snprintf(R->path, R->pathlen, "%s/frame_%06d.flo", R->o.flo_dir, frame);
  return lt_flo_write(R->path, R->fu, R->fv, w, h);
}

/* 1, 2 or 5 times a power of ten, the largest not above x (x > 0). */
static double nice_below(double x)
{
  double e = pow(10.0, floor(log10(x))), m = x / e;
  return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * e;
}

static void arrow(lt_canvas *cv, double x0, double y0, double x1, double y1, lt_rgb col)
{
  lt_draw_line(cv, x0, y0, x1, y1, col);
  double dx = x1 - x0, dy = y1 - y0, len = hypot(dx, dy);
  if (len < 2.0) {
    lt_draw_pixel(cv, (int)lround(x0), (int)lround(y0), col);
    return;
  }
  double hl = len < 12 ? len * 0.35 : 4.0, ux = dx / len, uy = dy / len;
  lt_draw_line(cv, x1, y1, x1 - hl * (ux * 0.866 - uy * 0.5), y1 - hl * (uy * 0.866 + ux * 0.5), col);
  lt_draw_line(cv, x1, y1, x1 - hl * (ux * 0.866 + uy * 0.5), y1 - hl * (uy * 0.866 - ux * 0.5), col);
}

/* Arrows from each point, F times its motion (F = --arrow-scale, or auto:
 * a vector of the mean length drawn one sub-window long, F in 1..50 rounded
 * down to 1/2/5 steps), coloured by score, and a legend: an arrow of a
 * round number of pixels of motion with its length and F. */
static int write_overlay(run *R, const lt_frame *f0, const lt_frame *f1, int n)
{
  lt_canvas *cv = &R->cv;
  size_t np = (size_t)R->fw * R->fh;
  for (size_t i = 0; i < np; i++) {
    float g = f0->grey[i];
    uint8_t b = g <= 0.0f ? 0 : g >= 255.0f ? 255 : (uint8_t)lrintf(g);
    cv->rgb[3 * i] = cv->rgb[3 * i + 1] = cv->rgb[3 * i + 2] = b;
  }
  double scale = R->o.arrow_scale;
  if (scale <= 0.0) {
    double vsum = 0.0, cell = fmin((double)R->fw / R->p.grid_x, (double)R->fh / R->p.grid_y);
    for (int i = 0; i < n; i++) vsum += hypot(R->vec[i].dx, R->vec[i].dy);
    scale = vsum > 0.0 ? cell * n / vsum : 50.0;
    scale = scale < 1.0 ? 1.0 : scale > 50.0 ? 50.0 : nice_below(scale);
  }
  for (int i = 0; i < n; i++) {
    const lt_vcm_vector *v = &R->vec[i];
    double s = v->score < 0 ? 0 : v->score > 1 ? 1 : v->score; /* red (weak) .. green (coherent) */
    lt_rgb col = {(uint8_t)(255 * (1 - s)), (uint8_t)(80 + 175 * s), 40};
    arrow(cv, v->x, v->y, v->x + scale * v->dx, v->y + scale * v->dy, col);
  }
  char label[96];
  snprintf(label, sizeof label, "frame %d-%d  %d vectors", f0->index, f1->index, n);
  lt_draw_text_halo(cv, 4, 4, 2, label, (lt_rgb){255, 255, 0}, (lt_rgb){0, 0, 0});
  double ref = nice_below(fmax(60.0 / scale, 1e-3)), len = ref * scale;
  snprintf(label, sizeof label, "= %g px motion (arrows x%g)", ref, scale);
  int ly = R->fh - 14, lx = 6;
  lt_draw_rect_fill(cv, 0, ly - 6, R->fw < 360 ? R->fw : 360, 20, (lt_rgb){0, 0, 0});
  arrow(cv, lx, ly + 3, lx + len, ly + 3, (lt_rgb){255, 255, 255});
  lt_draw_text(cv, lx + (int)len + 6, ly, 1, label, (lt_rgb){255, 255, 255});
  snprintf(R->path, R->pathlen, "%s/frame_%06d.png", R->s->overlay_dir, f0->index);
  return lt_canvas_write_png(cv, R->path, 8);
}

/* Appends v as printf("%.*f", dec, v) or ("%lld", (long long)v) for dec < 0.
 * Values that came from a float (all but t_s) with |v| < 1e6 take the fast
 * path: v * 10^dec is then exact in double (24 + 28 bits for dec <= 12), so
 * nearbyint (round half to even, as glibc's printf on the exact value) gives
 * printf's digits; anything else goes through snprintf. Returns the length. */
static int put_val(char *s, double v, int dec)
{
  static const double p10[13] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
  char tmp[24];
  int n = 0, t = 0;
  if (dec < 0) {
    long long q = (long long)v;
    unsigned long long u = q < 0 ? 0ull - (unsigned long long)q : (unsigned long long)q;
    if (q < 0) s[n++] = '-';
    do tmp[t++] = (char)('0' + u % 10); while ((u /= 10) > 0);
    while (t) s[n++] = tmp[--t];
    return n;
  }
  if (dec > 12 || !(fabs(v) < 1e6) || (double)(float)v != v) return snprintf(s, 400, "%.*f", dec, v);
  double q = nearbyint(fabs(v) * p10[dec]);
  unsigned long long u = (unsigned long long)q;
  if (signbit(v)) s[n++] = '-';
  for (int k = 0; k < dec; k++, u /= 10) tmp[t++] = (char)('0' + u % 10);
  do tmp[t++] = (char)('0' + u % 10); while ((u /= 10) > 0);
  for (int k = t - 1; k >= 0; k--) {
    s[n++] = tmp[k];
    if (k == dec && dec > 0) s[n++] = '.';
  }
  return n;
}

/* The rows writer's formatter: the same bytes as its default CSV of cols
 * (rows.c write_csv), about 10x faster than fprintf per value, which made
 * the writer thread the limit of a pair on the GPU (2048 rows per pair);
 * t_s, the same in all rows of a pair, is formatted once per pair. */
static void write_rows(void *user, FILE *f, int frame, const double *vals, int nrows, int nvals)
{
  (void)user;
  (void)frame;
  char buf[16384], ts[400];
  int used = 0, tsn = -1;
  double tsv = 0.0;
  for (int r = 0; r < nrows; r++) {
    const double *v = vals + (size_t)r * nvals;
    if (used > (int)sizeof buf - NCOLS * 401) {
      fwrite(buf, 1, (size_t)used, f);
      used = 0;
    }
    for (int i = 0; i < NCOLS; i++) {
      if (i) buf[used++] = ',';
      if (i == C_T) {
        if (tsn < 0 || memcmp(&tsv, &v[i], sizeof tsv) != 0) {
          tsv = v[i];
          tsn = snprintf(ts, sizeof ts, "%.*f", cols[i].decimals, tsv);
        }
        memcpy(buf + used, ts, (size_t)tsn);
        used += tsn;
      } else
        used += put_val(buf + used, v[i], cols[i].decimals);
    }
    buf[used++] = '\n';
  }
  if (used) fwrite(buf, 1, (size_t)used, f);
}

static void stats(void *m, FILE *f, int pairs)
{
  const run *R = m;
  fprintf(f, "vectors: %ld over %d pairs (%.1f per pair, at most %d)", R->npoints, pairs,
          pairs ? (double)R->npoints / pairs : 0.0, R->cap);
  if (R->empty_pairs) fprintf(f, "; %ld pairs without interest points", R->empty_pairs);
  if (R->p.evidence > 0.0f) fprintf(f, "; %ld dropped by --evidence %g", R->dropped, R->p.evidence);
  fputc('\n', f);
}

static void progress(void *m, char *buf, size_t n)
{
  const run *R = m;
  snprintf(buf, n, "%ld vectors", R->npoints);
}

static const char *backend_name(void *m) { return ((run *)m)->be ? ((run *)m)->be->name : "cpu"; }

static int begin(void *m, lt_loop *L, const lt_source_info *in)
{
  run *R = m;
  lt_vcm_params *p = &R->p;
  R->L = L;
  R->fw = in->width;
  R->fh = in->height;
  if (R->fw < p->patch || R->fh < p->patch || R->fw < 3 || R->fh < 3) {
    lt_error("'%s' is %dx%d px: smaller than the %dx%d correlation patch (--patch; 3x3 at least)", in->name, R->fw,
             R->fh, p->patch, p->patch);
    return LT_ERR_INPUT;
  }
  if (p->grid_x > R->fw || p->grid_y > R->fh) {
    lt_error("--grid %dx%d is finer than the %dx%d frames of '%s' (at most one sub-window per pixel)", p->grid_x,
             p->grid_y, R->fw, R->fh, in->name);
    return LT_ERR_USAGE;
  }
  int err = lt_vcm_params_check(p, R->fw, R->fh);
  if (err) return err;
  if (p->search + p->patch > R->fw || p->search + p->patch > R->fh)
    lt_info("%dx%d frames are smaller than the search area (%d + patch %d): offsets are clamped to the frame",
            R->fw, R->fh, p->search, p->patch);
  if (in->fps > 0)
    lt_info("%s: %dx%d, %.3f fps", in->name, R->fw, R->fh, in->fps);
  else
    lt_info("%s: %dx%d, frame rate unknown (t_s = frame index / 25 or as decoded; give --fps)", in->name, R->fw,
            R->fh);
  const void *stages;
  if ((err = lt_backend_stages("vcm", R->s->backend, R->s->device, &lt_vcm_backend_cpu, &stages))) return err;
  R->be = stages;
  R->cap = lt_vcm_max_points(p);
  R->vec = malloc(sizeof *R->vec * R->cap);
  R->pidx = malloc(sizeof *R->pidx * R->cap);
  if (!R->vec || !R->pidx) goto nomem;
  const char *dirs[2] = {R->s->overlay_dir, R->o.flo_dir};
  for (int k = 0; k < 2; k++)
    if (dirs[k] && strlen(dirs[k]) + 32 > R->pathlen) R->pathlen = strlen(dirs[k]) + 32;
  if (R->pathlen && !(R->path = malloc(R->pathlen))) goto nomem;
  if (R->s->overlay_dir) {
    if ((err = make_dir("--overlay", R->s->overlay_dir))) return err;
    if (lt_canvas_init(&R->cv, R->fw, R->fh, NULL)) goto nomem;
  }
  if (R->o.flo_dir) {
    if ((err = make_dir("--flo", R->o.flo_dir))) return err;
    size_t np = (size_t)R->fw * R->fh;
    R->fu = malloc(np * sizeof *R->fu);
    R->fv = malloc(np * sizeof *R->fv);
    R->bstart = malloc(sizeof *R->bstart * ((size_t)p->grid_x * p->grid_y + 1));
    R->bidx = malloc(sizeof *R->bidx * R->cap);
    if (!R->fu || !R->fv || !R->bstart || !R->bidx) goto nomem;
  }
  if ((err = R->be->create(&R->ctx, p, R->fw, R->fh))) return err;
  /* rows of the last pair written during this one (start8 / finish) unless
   * overlays or .flo need both frames then; LT_VCM_OVERLAP=0: not (experiment) */
  const char *ov = getenv("LT_VCM_OVERLAP");
  R->overlap = R->be->start8 && R->be->finish && !R->s->overlay_dir && !R->o.flo_dir && !(ov && strcmp(ov, "0") == 0);
  if (!R->s->overlay_dir) lt_loop_prev_index_only(L); /* step: frame t only in the first pair */
  /* 8-bit frames go in through pair8 only: the decode thread makes no floats
   * of them (the loop gives both frames of a mixed first pair floats) */
  if (R->be->pair8 && !R->s->overlay_dir) lt_loop_bytes_only(L);
  if (!(R->out = lt_loop_output(L, R->s->output, &err))) return err;
  lt_csv_header(R->out->fp, cols, NCOLS); /* the custom formatter's rows.c does not write it */
  if ((err = lt_rows_start(&R->rows, R->out, cols, NCOLS, NCOLS, write_rows, NULL))) return err;
  R->rows_on = 1;
  return 0;
nomem:
  lt_error("out of memory (%dx%d frames, %d points)", R->fw, R->fh, R->cap);
  return LT_ERR_NOMEM;
}

/* The rows of a pair whose nb vectors (the backend's) are in R->vec:
 * frames i0 (time t0s) and i1; the motion evidence filter, then the rows
 * to the writer (and the overlay on f0, f1 and the .flo when asked). */
static int emit(run *R, lt_loop *L, int nb, int i0, double t0s, int i1, const lt_frame *f0, const lt_frame *f1)
{
  int n = nb, err;
  double t0 = lt_now();
  if (R->p.evidence > 0.0f) { /* drop the vectors without motion evidence (vcm.h lt_vcm_evidence) */
    n = 0;
    for (int i = 0; i < nb; i++)
      if (R->vec[i].evidence <= R->p.evidence) {
        R->vec[n] = R->vec[i];
        R->pidx[n++] = i;
      }
    R->dropped += nb - n;
  } else
    for (int i = 0; i < nb; i++) R->pidx[i] = i;
  if (nb == 0) {
    R->empty_pairs++;
    if (!R->warned_empty)
      lt_warn("frames %d-%d: no interest points (uniform or static frames); such pairs give no rows", i0, i1);
    R->warned_empty = 1;
  }
  R->npoints += n;
  double *v = lt_rows_frame(&R->rows, i0, n, &err);
  if (!v) return err;
  for (int i = 0; i < n; i++, v += NCOLS) {
    const lt_vcm_vector *q = &R->vec[i];
    v[C_FRAME] = i0;
    v[C_T] = t0s;
    v[C_POINT] = R->pidx[i];
    v[C_X] = q->x;
    v[C_Y] = q->y;
    v[C_DX] = q->dx;
    v[C_DY] = q->dy;
    v[C_SCORE] = q->score;
  }
  if ((err = lt_rows_put(&R->rows))) return err;
  if (R->s->overlay_dir && (err = write_overlay(R, f0, f1, n))) return err;
  if (R->o.flo_dir && (err = write_flo(R, i0, n))) return err;
  lt_loop_time(L, ST_OUTPUT, lt_now() - t0);
  return 0;
}

/* The backend's phase seconds since the last call into the loop's stages. */
static void phase_times(run *R, lt_loop *L)
{
  if (!R->be->phases) return;
  double ph[3];
  R->be->phases(R->ctx, ph);
  for (int k = 0; k < 3; k++) {
    lt_loop_time(L, ST_POINTS + k, ph[k] - R->phase[k]);
    R->phase[k] = ph[k];
  }
}

/* The rows of the pair still held back (start8 / finish), if any. */
static int emit_held(run *R, lt_loop *L)
{
  if (!R->held) return 0;
  R->held = 0;
  return emit(R, L, R->held_n, R->held_i0, R->held_t, R->held_i1, NULL, NULL);
}

static int step(void *m, lt_loop *L, const lt_frame *f, const lt_frame *prev)
{
  run *R = m;
  int n = 0, err;
  /* the backend keeps its rounded copy of the last step's frame: frame t
   * NULL after the first pair (vcm.h) loads only f (the loop keeps no pixels
   * of prev then, lt_loop_prev_index_only, unless --overlay draws on them);
   * 8-bit frames go in as the decoder's bytes (pair8: the same values, no
   * rounding of floats) */
  const lt_frame *f0 = R->pairs_done ? NULL : prev, *nf;
  if (R->be->pair8 && f->grey8 && (!f0 || f0->grey8)) {
    /* the next frame, when decoded already, travels during this pair's work */
    if (R->be->prefetch8 && lt_loop_peek(L, &nf) == 1 && nf->grey8 && (err = R->be->prefetch8(R->ctx, nf->grey8)))
      return err;
    if (R->overlap) {
      /* the last pair's rows are written while this pair runs, and this
       * pair's rows in the next step (or in end) */
      err = R->be->start8(R->ctx, f0 ? f0->grey8 : NULL, f->grey8);
      int e2 = emit_held(R, L);
      if (err || (err = e2)) return err;
      if ((err = R->be->finish(R->ctx, R->vec, R->cap, &n))) return err;
      R->pairs_done++;
      phase_times(R, L);
      R->held = 1;
      R->held_n = n;
      R->held_i0 = prev->index;
      R->held_t = prev->t_s;
      R->held_i1 = f->index;
      return 0;
    }
    err = R->be->pair8(R->ctx, f0 ? f0->grey8 : NULL, f->grey8, R->vec, R->cap, &n);
  } else
    err = R->be->pair(R->ctx, f0 ? f0->grey : NULL, f->grey, R->vec, R->cap, &n);
  if (err) return err;
  R->pairs_done++;
  phase_times(R, L);
  return emit(R, L, n, prev->index, prev->t_s, f->index, prev, f);
}

static int end(void *m, lt_loop *L, int pairs)
{
  run *R = m;
  int err = emit_held(R, L);
  if (err) {
    lt_rows_finish(&R->rows);
    R->rows_on = 0;
    lt_loop_keep_partial(L, R->out, 1);
    return err;
  }
  err = lt_rows_finish(&R->rows);
  R->rows_on = 0;
  if (err) {
    lt_loop_keep_partial(L, R->out, 1);
    return err;
  }
  if (R->empty_pairs > 1) lt_info("%ld of %d pairs had no interest points (no rows)", R->empty_pairs, pairs);
  lt_info("%d pairs, %ld vectors", pairs, R->npoints);
  return 0;
}

static void abort_run(void *m, lt_loop *L)
{
  run *R = m;
  if (!R->rows_on) return;
  (void)emit_held(R, L); /* a finished pair's rows still held back */
  lt_rows_finish(&R->rows); /* the pairs handed over are written first */
  R->rows_on = 0;
  lt_loop_keep_partial(L, R->out, R->rows.frames > 0);
}

static const lt_steps vcm_steps = {
  .pairs = 1,
  .stage_names = stage_names,
  .nstages = ST_N,
  .begin = begin,
  .step = step,
  .end = end,
  .abort = abort_run,
  .stats = stats,
  .progress = progress,
  .backend_name = backend_name,
};

int lt_vcm_run(const lt_settings *s, const void *opts)
{
  run R;
  memset(&R, 0, sizeof R);
  R.s = s;
  R.o = *(const lt_vcm_opts *)opts;
  R.p = R.o.vcm;
  int err = lt_loop_run(s, &vcm_steps, &R);
  if (R.be && R.ctx) R.be->destroy(R.ctx);
  free(R.vec);
  free(R.pidx);
  free(R.path);
  if (R.cv.rgb) lt_canvas_free(&R.cv);
  free(R.fu);
  free(R.fv);
  free(R.bstart);
  free(R.bidx);
  return err;
}
