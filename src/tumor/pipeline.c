/* pipeline.c - tumour mode, the steps of the run (SPEC 4.2; seeds/001, 004)
 * inside the shared frame loop (core/loop.h).
 *
 * begin: the templates are gathered in command-line order (template index =
 * that order, a --templates list expanding in place): image files read,
 * --template-from rectangles cut from their frames - by a separate pass over
 * the input opened a second time (core/source.h) before the loop's first
 * frame, so every frame, including those before FRAME, is matched against
 * every template. Then every template is checked against the frame size and
 * the shift range, the backend is created (template terms once) and the
 * outputs opened.
 * step (one frame): every score of every template at every shift (backend
 * match), the best shift per template and overall with sub-pixel refinement
 * (peak.c), the rows, the score maps, the overlay. With a backend that runs
 * two frames deep (submit/collect: the CUDA one, 8-bit frames, no --scores,
 * no overlays), step submits its frame, then collects the previous one and
 * writes that one's row: the GPU works on frame N while the host takes frame
 * N + 1; the rows are the same and in the same order.
 * end: the last frame's row, the plots (they need the whole run).
 *
 * Exit statuses of template problems: a template file or list that is
 * missing, unreadable or malformed, a template larger than the frame, a flat
 * (zero-variance) template: 3 (invalid input); a --template-from rectangle
 * outside its frame or a frame past the end of the input, a nominal position
 * whose whole shift range leaves the frame: 2 (the command line does not fit
 * the input). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "core/loop.h"
#include "core/source.h"
#include "draw.h"
#include "plot.h"
#include "error.h"
#include "image.h"
#include "log.h"
#include "rows.h"
#include "tumor/corr.h"
#include "tumor/list.h"
#include "tumor_mode.h"

enum { ST_MATCH, ST_PEAK, ST_OUTPUT, ST_N };
static const char *const stage_names[ST_N] = {"match", "peak", "output"};

/* CSV columns of the main output; values past them travel for the overlay. */
enum { V_FRAME, V_T, V_TPL, V_DY, V_DX, V_ROW, V_COL, V_SCORE, V_DYS, V_DXS, NV };
static const lt_col csv_cols[NV] = {{"frame", -1}, {"t_s", 6},   {"template", -1}, {"dy", -1},      {"dx", -1},
                                    {"row", -1},   {"col", -1},  {"score", 6},     {"dy_sub", 4},   {"dx_sub", 4}};
/* --scores: one row per frame, template and shift; inside = 0 where the
 * window leaves the frame (its score is then -1 by convention). */
enum { S_FRAME, S_TPL, S_DY, S_DX, S_SCORE, S_INSIDE, SN };
static const lt_col score_cols[SN] = {{"frame", -1}, {"template", -1}, {"dy", -1},
                                      {"dx", -1},    {"score", 6},     {"inside", -1}};

typedef struct tpl_info {
  float *px;
  char name[160]; /* for messages: the file or FRAME:X,Y,W,H */
  int frame;      /* --template-from: the frame it is cut from; -1 for files */
} tpl_info;

typedef struct run {
  const lt_settings *s;
  const lt_tumor_opts *o;
  lt_loop *L;
  int fw, fh;
  lt_tumor_template *tpl;
  tpl_info *info;
  int ntpl, captpl;
  lt_tumor_setup setup;
  int npos;
  const lt_tumor_backend *be;
  void *ctx;
  float *scores;            /* ntpl * npos */
  unsigned char *inside;    /* ntpl * npos */
  lt_tumor_peak *peaks;     /* ntpl */
  unsigned char *has;       /* ntpl: 1 when some shift of the template is inside the frame */
  lt_rows rows, srows;
  lt_outfile *out, *sout;
  int rows_on, srows_on;
  double *plot;             /* 4 per frame: frame, score, dy_sub, dx_sub */
  int nplot, capplot;
  double match_first_s, match_rest_s; /* match time of the first frame and of the others */
  int nmatch;
  lt_tumor_peak last;
  /* the two-deep pipeline (backend submit/collect, 8-bit frames without
   * maps or overlays): the frame submitted and not yet collected */
  int pipe, pending, pend_index;
  double pend_t;
} run;

/* ---- the exact CPU path (--exact) as a backend table: lt_tumor_corr_exact
 * in double, rounded to float like the other backends' maps */
typedef struct exact_ctx {
  lt_tumor_setup s;
  lt_tumor_template *tpl;
  double *d;
  double setup_s;
} exact_ctx;

static void exact_destroy(void *c)
{
  exact_ctx *e = c;
  if (!e) return;
  for (int k = 0; e->tpl && k < e->s.ntemplates; k++) free((void *)e->tpl[k].px);
  free(e->tpl);
  free(e->d);
  free(e);
}

static int exact_create(void **out, const lt_tumor_setup *s)
{
  double t0 = lt_now();
  int err = lt_tumor_setup_check(s);
  if (err) return err;
  exact_ctx *e = calloc(1, sizeof *e);
  if (!e) goto nomem;
  e->s = *s;
  e->tpl = calloc(s->ntemplates, sizeof *e->tpl);
  e->d = malloc(sizeof(double) * s->ntemplates * (size_t)lt_tumor_npos(s));
  if (!e->tpl || !e->d) goto nomem;
  e->s.tpl = e->tpl;
  for (int k = 0; k < s->ntemplates; k++) {
    size_t n = (size_t)s->tpl[k].w * s->tpl[k].h;
    float *p = malloc(n * sizeof *p);
    if (!p) goto nomem;
    memcpy(p, s->tpl[k].px, n * sizeof *p);
    e->tpl[k] = s->tpl[k];
    e->tpl[k].px = p;
  }
  e->setup_s = lt_now() - t0;
  *out = e;
  return 0;
nomem:
  exact_destroy(e);
  lt_error("out of memory (exact correlation)");
  return LT_ERR_NOMEM;
}

static int exact_match(void *c, const float *frame, float *scores)
{
  exact_ctx *e = c;
  int err = lt_tumor_corr_exact(&e->s, frame, e->d);
  size_t n = (size_t)e->s.ntemplates * lt_tumor_npos(&e->s);
  for (size_t i = 0; i < n && !err; i++) scores[i] = (float)e->d[i];
  return err;
}

static void exact_stats(const void *c, lt_tumor_stats *st)
{
  memset(st, 0, sizeof *st);
  st->setup_s = ((const exact_ctx *)c)->setup_s;
  snprintf(st->kernel, sizeof st->kernel, "exact: corr2 by the definition per window (double)");
}

static const lt_tumor_backend exact_backend = {"cpu-exact", exact_create, exact_destroy, exact_match, exact_stats,
                                                NULL, NULL, NULL, NULL, NULL, NULL};

/* ---- gathering the templates */

static int add_template(run *R, float *px, int w, int h, int x, int y, const char *name, int frame)
{
  if (R->ntpl == R->captpl) {
    int cap = R->captpl ? 2 * R->captpl : 16;
    lt_tumor_template *t = realloc(R->tpl, sizeof *t * cap);
    if (t) R->tpl = t;
    tpl_info *i = realloc(R->info, sizeof *i * cap);
    if (i) R->info = i;
    if (!t || !i) {
      free(px);
      lt_error("out of memory (templates)");
      return LT_ERR_NOMEM;
    }
    R->captpl = cap;
  }
  R->tpl[R->ntpl] = (lt_tumor_template){px, w, h, x, y};
  tpl_info *in = &R->info[R->ntpl];
  in->px = px;
  in->frame = frame;
  snprintf(in->name, sizeof in->name, "%s", name);
  R->ntpl++;
  return 0;
}

static int load_file(run *R, const char *path, int x, int y)
{
  float *px = NULL;
  int w, h;
  int err = lt_image_read(path, R->s->channel, &px, &w, &h); /* names the file on error */
  if (err) return err;
  return add_template(R, px, w, h, x, y, path, -1);
}

static int list_add(void *u, const char *path, int x, int y)
{
  return load_file((run *)u, path, x, y);
}

static int load_list(run *R, const char *list)
{
  return lt_tumor_list_read(list, list_add, R);
}

/* --template-from: a second pass over the input up to the last FRAME named;
 * placeholders (px NULL) in R->tpl are filled in command-line order. */
static int cut_from_frames(run *R)
{
  const lt_tumor_opts *o = R->o;
  int last = -1;
  for (int i = 0; i < o->nspec; i++)
    if (o->spec[i].kind == LT_TSPEC_FROM && o->spec[i].frame > last) last = o->spec[i].frame;
  if (last < 0) return 0;
  lt_source *src;
  int err = lt_source_open(&src, R->s->inputs, R->s->ninputs, R->s->channel, 2);
  if (err) return err;
  int filled = 0, seen = -1;
  for (;;) {
    const lt_frame *f;
    int got = lt_source_next(src, &f);
    if (got < 0) {
      err = got;
      break;
    }
    if (got == 0) break;
    seen = f->index;
    for (int k = 0; k < R->ntpl; k++) {
      if (R->tpl[k].px || R->info[k].frame != f->index) continue;
      lt_tumor_template *t = &R->tpl[k];
      if ((long)t->x + t->w > f->width || (long)t->y + t->h > f->height) {
        lt_error("--template-from %s: the rectangle extends past the %dx%d frame", R->info[k].name, f->width,
                 f->height);
        err = LT_ERR_USAGE;
        break;
      }
      float *px = malloc(sizeof(float) * t->w * t->h);
      if (!px) {
        lt_error("out of memory (templates)");
        err = LT_ERR_NOMEM;
        break;
      }
      for (int r = 0; r < t->h; r++)
        memcpy(px + (size_t)r * t->w, f->grey + (size_t)(t->y + r) * f->width + t->x, sizeof(float) * t->w);
      t->px = px;
      R->info[k].px = px;
      filled++;
    }
    if (err || f->index >= last) break;
  }
  lt_source_close(src);
  if (!err)
    for (int k = 0; k < R->ntpl; k++)
      if (!R->tpl[k].px) {
        lt_error("--template-from %s: the input '%s' has only %d frames", R->info[k].name, R->s->inputs[0],
                 seen + 1);
        return LT_ERR_USAGE;
      }
  return err;
}

static int gather(run *R)
{
  const lt_tumor_opts *o = R->o;
  int err = 0;
  for (int i = 0; i < o->nspec && !err; i++) {
    const lt_tumor_spec *sp = &o->spec[i];
    if (sp->kind == LT_TSPEC_FILE) {
      char *path = strndup(sp->file, sp->file_len);
      if (!path) return LT_ERR_NOMEM;
      err = load_file(R, path, sp->x, sp->y);
      free(path);
    } else if (sp->kind == LT_TSPEC_LIST) {
      err = load_list(R, sp->file);
    } else {
      char name[96];
      snprintf(name, sizeof name, "%d:%d,%d,%d,%d", sp->frame, sp->x, sp->y, sp->w, sp->h);
      err = add_template(R, NULL, sp->w, sp->h, sp->x, sp->y, name, sp->frame); /* cut below */
    }
  }
  if (!err) err = cut_from_frames(R);
  return err;
}

/* The frame size, the shift range and the template contents. */
static int validate(run *R)
{
  for (int k = 0; k < R->ntpl; k++) {
    const lt_tumor_template *t = &R->tpl[k];
    const tpl_info *in = &R->info[k];
    if (t->w > R->fw || t->h > R->fh) {
      lt_error("template %d ('%s'): %dx%d px is larger than the %dx%d frame", k, in->name, t->w, t->h, R->fw, R->fh);
      return LT_ERR_INPUT;
    }
    /* some shift must put the window inside the frame */
    int V = R->setup.shift_v, H = R->setup.shift_h;
    int rlo = t->y - V > 0 ? t->y - V : 0, rhi = t->y + V < R->fh - t->h ? t->y + V : R->fh - t->h;
    int clo = t->x - H > 0 ? t->x - H : 0, chi = t->x + H < R->fw - t->w ? t->x + H : R->fw - t->w;
    if (rlo > rhi || clo > chi) {
      lt_error("template %d ('%s') at %d,%d: with --shift %d,%d every window leaves the %dx%d frame", k, in->name,
               t->x, t->y, V, H, R->fw, R->fh);
      return LT_ERR_USAGE;
    }
    double s1 = 0, s2 = 0;
    size_t n = (size_t)t->w * t->h;
    for (size_t i = 0; i < n; i++) s1 += t->px[i];
    double mean = s1 / n;
    for (size_t i = 0; i < n; i++) s2 += (t->px[i] - mean) * (t->px[i] - mean);
    if (s2 <= LT_TUMOR_FLAT_VAR * n) {
      lt_error("template %d ('%s') is flat (zero variance): it matches nothing", k, in->name);
      return LT_ERR_INPUT;
    }
  }
  return 0;
}

static void stats(void *m, FILE *f, int steps)
{
  run *R = m;
  if (!R->be || !R->ctx) return;
  lt_tumor_stats st;
  R->be->stats(R->ctx, &st);
  fprintf(f, "tumor: %d templates, shifts +-%d/+-%d (%d positions each), kernel: %s\n", R->ntpl, R->setup.shift_v,
          R->setup.shift_h, R->npos, st.kernel);
  fprintf(f, "tumor set-up: %.3f ms (kernel compile or cache load %.3f ms, %s%s)%s%s\n", 1e3 * st.setup_s,
          1e3 * st.compile_s, st.specialised ? "specialised" : "generic",
          st.specialised ? (st.cache_hit ? ", cache hit" : ", compiled") : "", st.cache_file[0] ? ", cache " : "",
          st.cache_file);
  fprintf(f, "tumor match: first frame %.1f us, after it %.2f us/frame over %d frames\n", 1e6 * R->match_first_s,
          R->nmatch > 1 ? 1e6 * R->match_rest_s / (R->nmatch - 1) : 0.0, R->nmatch > 1 ? R->nmatch - 1 : 0);
}

static void progress(void *m, char *buf, size_t n)
{
  run *R = m;
  snprintf(buf, n, "template %d r=%.3f", R->last.tpl, R->last.score);
}

static const char *backend_name(void *m) { return ((run *)m)->be ? ((run *)m)->be->name : "cpu"; }

static int begin(void *m, lt_loop *L, const lt_source_info *in)
{
  run *R = m;
  R->L = L;
  R->fw = in->width;
  R->fh = in->height;
  int err;
  if ((err = gather(R))) return err;
  R->setup = (lt_tumor_setup){R->fw, R->fh, R->ntpl, R->tpl, R->o->shift_v, R->o->shift_h};
  if ((err = validate(R)) || (err = lt_tumor_setup_check(&R->setup))) return err;
  R->npos = lt_tumor_npos(&R->setup);
  if (in->fps > 0)
    lt_info("%s: %dx%d, %.3f fps, %d templates", in->name, R->fw, R->fh, in->fps, R->ntpl);
  else
    lt_info("%s: %dx%d, frame rate unknown (t_s = frame index; give --fps), %d templates", in->name, R->fw, R->fh,
            R->ntpl);
  const void *stages = NULL;
  if (R->o->exact) {
    lt_info("backend: cpu exact (--exact)");
    stages = &exact_backend;
  } else if ((err = lt_backend_stages("tumor", R->s->backend, R->s->device, &lt_tumor_backend_cpu, &stages)))
    return err;
  R->be = stages;
  size_t ns = (size_t)R->ntpl * R->npos;
  R->scores = malloc(sizeof(float) * ns);
  R->inside = malloc(ns);
  R->peaks = malloc(sizeof *R->peaks * R->ntpl);
  if (!R->scores || !R->inside || !R->peaks) {
    lt_error("out of memory (score maps: %zu floats)", ns);
    return LT_ERR_NOMEM;
  }
  for (int k = 0; k < R->ntpl; k++)
    for (int dy = -R->setup.shift_v; dy <= R->setup.shift_v; dy++)
      for (int dx = -R->setup.shift_h; dx <= R->setup.shift_h; dx++)
        R->inside[(size_t)k * R->npos + (size_t)(dy + R->setup.shift_v) * (2 * R->setup.shift_h + 1) +
                  (dx + R->setup.shift_h)] = (unsigned char)lt_tumor_inside(&R->setup, k, dy, dx);
  R->has = calloc(R->ntpl, 1);
  if (!R->has) {
    lt_error("out of memory");
    return LT_ERR_NOMEM;
  }
  for (size_t i = 0; i < ns; i++)
    if (R->inside[i]) R->has[i / R->npos] = 1;
  /* a backend that finds the peaks itself reads the bytes of 8-bit frames
   * (floats only for overlays) */
  if (R->be->match_peaks && !R->s->overlay_dir) lt_loop_bytes_only(L);
  {
    const char *pv = getenv("LT_TUMOR_PIPELINE"); /* experiment: 0 = one frame at a time */
    R->pipe = R->be->submit && R->be->collect && !R->o->scores && !R->s->overlay_dir && !(pv && !strcmp(pv, "0"));
  }
  if ((err = R->be->create(&R->ctx, &R->setup))) {
    R->ctx = NULL;
    return err;
  }
  {
    const void *mb;
    size_t ms;
    if (R->pipe && R->be->map && lt_loop_map(L, &mb, &ms)) R->be->map(R->ctx, mb, ms);
  }
  if (!(R->out = lt_loop_output(L, R->s->output, &err))) return err;
  if (R->o->scores && !(R->sout = lt_loop_output(L, R->o->scores, &err))) return err;
  if (R->s->overlay_dir && mkdir(R->s->overlay_dir, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create overlay folder '%s': %s", R->s->overlay_dir, strerror(errno));
    return LT_ERR_OUTPUT;
  }
  if ((err = lt_rows_start(&R->rows, R->out, csv_cols, NV, NV, NULL, NULL))) return err;
  R->rows_on = 1;
  if (R->sout) {
    if ((err = lt_rows_start(&R->srows, R->sout, score_cols, SN, SN, NULL, NULL))) {
      lt_rows_finish(&R->rows); /* begin cleans up after itself */
      R->rows_on = 0;
      return err;
    }
    R->srows_on = 1;
  }
  return 0;
}

static lt_rgb tpl_colour(int k)
{
  static const lt_rgb pal[] = {{60, 180, 75}, {0, 130, 200}, {245, 130, 48}, {145, 30, 180}, {70, 240, 240},
                               {240, 50, 230}, {210, 245, 60}, {250, 190, 212}, {230, 25, 75}, {255, 225, 25}};
  return pal[k % (int)(sizeof pal / sizeof pal[0])];
}

static void box(lt_canvas *c, double x, double y, int w, int h, lt_rgb col)
{
  double bx[4] = {x, x + w - 1, x + w - 1, x}, by[4] = {y, y, y + h - 1, y + h - 1};
  lt_draw_polygon(c, bx, by, 4, col);
}

/* Nominal boxes dim, matched boxes (at the sub-pixel position) in the
 * template's colour with its score; the best one doubled in white. */
static int overlay(run *R, const lt_frame *f, const lt_tumor_peak *best)
{
  lt_canvas cv;
  if (lt_canvas_init(&cv, R->fw, R->fh, f->grey)) return LT_ERR_NOMEM;
  for (int k = 0; k < R->ntpl; k++) {
    const lt_tumor_template *t = &R->tpl[k];
    const lt_tumor_peak *p = &R->peaks[k];
    box(&cv, t->x, t->y, t->w, t->h, (lt_rgb){110, 110, 140});
    lt_rgb col = tpl_colour(k);
    double mx = t->x + p->dx_sub, my = t->y + p->dy_sub;
    box(&cv, mx, my, t->w, t->h, col);
    if (k == best->tpl) box(&cv, mx - 1, my - 1, t->w + 2, t->h + 2, (lt_rgb){255, 255, 255});
    char lab[48];
    snprintf(lab, sizeof lab, "%d %.3f", k, p->score);
    lt_draw_text_halo(&cv, (int)mx, (int)my - 9, 1, lab, col, (lt_rgb){0, 0, 0});
  }
  char label[128];
  snprintf(label, sizeof label, "frame %d  template %d  r %.4f  dy %.2f dx %.2f", f->index, best->tpl, best->score,
           best->dy_sub, best->dx_sub);
  int scale = (int)strlen(label) * 12 + 8 <= R->fw ? 2 : 1; /* glyphs are 6 px wide per scale */
  lt_draw_text_halo(&cv, 4, 4, scale, label, (lt_rgb){255, 255, 0}, (lt_rgb){0, 0, 0});
  size_t plen = strlen(R->s->overlay_dir) + 32;
  char *path = malloc(plen);
  int err = LT_ERR_NOMEM;
  if (path) {
    snprintf(path, plen, "%s/frame_%06d.png", R->s->overlay_dir, f->index);
    err = lt_canvas_write_png(&cv, path, 8);
  }
  free(path);
  lt_canvas_free(&cv);
  return err;
}

static void put_row(double *v, int index, double t_s, const lt_tumor_peak *p)
{
  v[V_FRAME] = index;
  v[V_T] = t_s;
  v[V_TPL] = p->tpl;
  v[V_DY] = p->dy;
  v[V_DX] = p->dx;
  v[V_ROW] = p->row;
  v[V_COL] = p->col;
  v[V_SCORE] = p->score;
  v[V_DYS] = p->dy_sub;
  v[V_DXS] = p->dx_sub;
}

static void match_time(run *R, lt_loop *L, double s)
{
  lt_loop_time(L, ST_MATCH, s);
  if (R->nmatch++ == 0) R->match_first_s = s;
  else R->match_rest_s += s;
}

static int emit(run *R, lt_loop *L, const lt_frame *f, int index, double t_s, double t1);

/* The pipeline's frame in flight, when there is one: collected, its rows
 * written. */
static int drain(run *R, lt_loop *L)
{
  if (!R->pending) return 0;
  R->pending = 0;
  const double t0 = lt_now();
  int err = R->be->collect(R->ctx, R->peaks);
  if (err) return err;
  const double t1 = lt_now();
  lt_loop_time(L, ST_MATCH, t1 - t0);
  R->match_rest_s += t1 - t0;
  return emit(R, L, NULL, R->pend_index, R->pend_t, t1);
}

static int step(void *m, lt_loop *L, const lt_frame *f, const lt_frame *prev)
{
  run *R = m;
  int err;
  if (f->width != R->fw || f->height != R->fh) {
    lt_error("'%s': frame %d is %dx%d, the frames before were %dx%d (mixed frame sizes)", R->s->inputs[0], f->index,
             f->width, f->height, R->fw, R->fh);
    err = drain(R, L); /* the frames before get their rows */
    return err ? err : LT_ERR_INPUT;
  }
  double t0 = lt_now();
  if (R->pipe && f->grey8) { /* frame N goes out, then frame N - 1's peaks come in */
    err = R->be->submit(R->ctx, f->grey8);
    if (!err && R->pending) err = R->be->collect(R->ctx, R->peaks);
    if (err) return err;
    const double t1 = lt_now();
    match_time(R, L, t1 - t0);
    const int had = R->pending, pi = R->pend_index;
    const double pt = R->pend_t;
    R->pending = 1;
    R->pend_index = f->index;
    R->pend_t = f->t_s;
    return had ? emit(R, L, NULL, pi, pt, t1) : 0;
  }
  if ((err = drain(R, L))) return err;
  if (R->be->match_peaks) {
    const lt_frame *nf; /* the next frame, when decoded already, travels during this one's work */
    if (R->be->prefetch && lt_loop_peek(L, &nf) == 1 && nf->grey8 && (err = R->be->prefetch(R->ctx, nf->grey8)))
      return err;
    if ((err = R->be->match_peaks(R->ctx, f->grey, f->grey8, R->srows_on ? R->scores : NULL, R->peaks)))
      return err;
  } else if ((err = R->be->match(R->ctx, f->grey, R->scores)))
    return err;
  double t1 = lt_now();
  match_time(R, L, t1 - t0);
  return emit(R, L, f, f->index, f->t_s, t1);
}

/* The best peak of frame index (time t_s) from R->peaks (match_peaks or
 * collect) or the maps, its rows, maps, plot point and overlay (f: the frame,
 * NULL in the pipeline, which has no overlays); t1: when its match ended. */
static int emit(run *R, lt_loop *L, const lt_frame *f, int index, double t_s, double t1)
{
  int err;
  lt_tumor_peak best;
  if (R->be->match_peaks) { /* as lt_tumor_peak_best: ties to the lowest index */
    int found = 0;
    memset(&best, 0, sizeof best);
    best.score = -1.0f;
    for (int k = 0; k < R->ntpl; k++)
      if (R->has[k] && (!found || R->peaks[k].score > best.score)) {
        best = R->peaks[k];
        found = 1;
      }
    if (!found) return LT_ERR_INPUT;
  } else if ((err = lt_tumor_peak_best(&R->setup, R->scores, &best, R->peaks)))
    return err;
  R->last = best;
  double t2 = lt_now();
  lt_loop_time(L, ST_PEAK, t2 - t1);

  int nr = R->o->all_templates ? R->ntpl : 1;
  double *v = lt_rows_frame(&R->rows, index, nr, &err);
  if (!v) return err;
  if (R->o->all_templates)
    for (int k = 0; k < R->ntpl; k++) put_row(v + (size_t)k * NV, index, t_s, &R->peaks[k]);
  else
    put_row(v, index, t_s, &best);
  if ((err = lt_rows_put(&R->rows))) return err;
  if (R->srows_on) {
    size_t ns = (size_t)R->ntpl * R->npos;
    double *sv = lt_rows_frame(&R->srows, index, (int)ns, &err);
    if (!sv) return err;
    const int V = R->setup.shift_v, H = R->setup.shift_h;
    size_t i = 0;
    for (int k = 0; k < R->ntpl; k++)
      for (int dy = -V; dy <= V; dy++)
        for (int dx = -H; dx <= H; dx++, i++, sv += SN) {
          sv[S_FRAME] = index;
          sv[S_TPL] = k;
          sv[S_DY] = dy;
          sv[S_DX] = dx;
          sv[S_SCORE] = R->scores[i];
          sv[S_INSIDE] = R->inside[i];
        }
    if ((err = lt_rows_put(&R->srows))) return err;
  }
  if (R->o->plot) {
    if (R->nplot == R->capplot) {
      int cap = R->capplot ? 2 * R->capplot : 256;
      double *p = realloc(R->plot, sizeof *p * 4 * cap);
      if (!p) {
        lt_error("out of memory (plot)");
        return LT_ERR_NOMEM;
      }
      R->plot = p;
      R->capplot = cap;
    }
    double *p = R->plot + 4 * (size_t)R->nplot++;
    p[0] = index;
    p[1] = best.score;
    p[2] = best.dy_sub;
    p[3] = best.dx_sub;
  }
  if (f && R->s->overlay_dir && (err = overlay(R, f, &best))) return err;
  lt_loop_time(L, ST_OUTPUT, lt_now() - t2);
  return 0;
}

/* FILE.png -> FILE_shift.png */
static char *shift_path(const char *plot)
{
  size_t n = strlen(plot);
  char *p = malloc(n + 16);
  if (!p) return NULL;
  memcpy(p, plot, n + 1);
  if (n > 4 && !strcmp(p + n - 4, ".png")) p[n - 4] = 0;
  strcat(p, "_shift.png");
  return p;
}

static int write_plots(run *R)
{
  int n = R->nplot;
  double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * 2 * n);
  char *sp = shift_path(R->o->plot);
  int err = LT_ERR_NOMEM;
  if (x && y && sp) {
    for (int i = 0; i < n; i++) {
      x[i] = R->plot[4 * i];
      y[i] = R->plot[4 * i + 1];
    }
    const char *sn[1] = {"best score"};
    err = lt_plot_lines(R->o->plot, x, y, n, 1, sn, "Tumour tracking: best template score per frame", "frame",
                        "Pearson r", 900, 500);
    if (!err) {
      for (int i = 0; i < n; i++) {
        y[i] = R->plot[4 * i + 2];
        y[n + i] = R->plot[4 * i + 3];
      }
      const char *names[2] = {"dy_sub (rows)", "dx_sub (columns)"};
      err = lt_plot_lines(sp, x, y, n, 2, names, "Tumour tracking: shift of the best template", "frame",
                          "shift (px)", 900, 500);
    }
  } else
    lt_error("out of memory (plot)");
  free(x);
  free(y);
  free(sp);
  return err;
}

static void abort_run(void *m, lt_loop *L)
{
  run *R = m;
  if (R->be && R->ctx && R->be->unmap) R->be->unmap(R->ctx); /* before the input's map goes */
  if (R->rows_on) {
    lt_rows_finish(&R->rows); /* frames handed over are written first */
    lt_loop_keep_partial(L, R->out, R->rows.frames > 0);
  }
  if (R->srows_on) {
    lt_rows_finish(&R->srows);
    lt_loop_keep_partial(L, R->sout, R->srows.frames > 0);
  }
  R->rows_on = R->srows_on = 0;
}

static int end(void *m, lt_loop *L, int frames)
{
  run *R = m;
  int err = drain(R, L), e2 = 0;
  if (R->ctx && R->be->unmap) R->be->unmap(R->ctx); /* before the input's map goes */
  if (err) return err;
  err = lt_rows_finish(&R->rows);
  R->rows_on = 0;
  if (R->srows_on) e2 = lt_rows_finish(&R->srows);
  R->srows_on = 0;
  if (err || e2) {
    lt_loop_keep_partial(L, R->out, !err);
    if (R->sout) lt_loop_keep_partial(L, R->sout, !e2);
    return err ? err : e2;
  }
  if ((err = lt_out_check(R->out)) || (R->sout && (err = lt_out_check(R->sout)))) return err;
  if (R->o->plot && R->nplot > 0 && (err = write_plots(R))) return err;
  lt_info("%d frames, %d templates", frames, R->ntpl);
  return 0;
}

static const lt_steps tumor_steps = {
  .pairs = 0,
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

int lt_tumor_run(const lt_settings *s, const void *opts)
{
  run R;
  memset(&R, 0, sizeof R);
  R.s = s;
  R.o = opts;
  int err = lt_loop_run(s, &tumor_steps, &R);
  if (R.rows_on) lt_rows_finish(&R.rows);
  if (R.srows_on) lt_rows_finish(&R.srows);
  if (R.be && R.ctx) R.be->destroy(R.ctx);
  for (int k = 0; k < R.ntpl; k++) free(R.info[k].px);
  free(R.tpl);
  free(R.info);
  free(R.scores);
  free(R.inside);
  free(R.peaks);
  free(R.has);
  free(R.plot);
  return err;
}
