/* pipeline.c - flow mode, the steps of the run (SPEC 4.4) inside the shared
 * frame loop (core/loop.h) with pairs = 1: for each consecutive pair
 * (prev -> f) the backend's CLG solver gives the flow (u, v) on prev's
 * pixel grid (prev(x) ~ f(x + w)); then the pair's outputs:
 *   - the Middlebury .flo (-o FILE for an image pair, DIR/flow_NNNNNN.flo
 *     for a video, NNNNNN = the index of the pair's first frame), each file
 *     written atomically; a video's files by a background writer
 *     (lt_flo_writer, 4 threads) while the next pairs are computed, all of
 *     them complete when the run ends (the "write" stage of --stats is the
 *     time to hand a field over);
 *   - --color: the Middlebury colour code of the pair (normalised by the
 *     pair's largest magnitude, written on the image) with a legend wheel,
 *     next to the .flo (FILE.png / DIR/flow_NNNNNN.png);
 *   - --overlay DIR: the first frame with the colour code blended at 50 %
 *     (+ legend), DIR/frame_NNNNNN.png;
 *   - --summary: one CSV row per pair, frame,t_s,mean_mag_px,p95_mag_px,
 *     max_mag_px; p95 is the nearest-rank percentile (the ceil(0.95 n)-th
 *     smallest magnitude), found exactly by a two-pass radix select on the
 *     float bits (magnitudes are >= 0, so their bit patterns sort like the
 *     values): linear time, deterministic, no sort;
 *   - --ground-truth: the first pair against the given .flo (and --mask),
 *     AEE and AAE printed on stdout as a two-line CSV;
 *   - --plot: mean and p95 magnitude over the pairs (end).
 * Every buffer is allocated in begin (the plot's per-pair values grow by
 * doubling); the backend allocates all of its memory in create. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "core/loop.h"
#include "draw.h"
#include "plot.h"
#include "error.h"
#include "flow/color.h"
#include "flow/flo.h"
#include "flow/flow_mode.h"
#include "image.h"
#include "log.h"
#include "rows.h"

enum { ST_FLOW, ST_STATS, ST_WRITE, ST_N };
/* .flo writer threads of -o DIR (fsync'ed files in parallel) */
#define FLO_WRITER_THREADS 4
static const char *const stage_names[ST_N] = {"flow", "stats", "write"};

static const lt_col sum_cols[] = {
  {"frame", -1}, {"t_s", 6}, {"mean_mag_px", 6}, {"p95_mag_px", 6}, {"max_mag_px", 6},
};
#define NSUM ((int)(sizeof sum_cols / sizeof sum_cols[0]))

typedef struct run {
  const lt_settings *s;
  lt_flow_opts o;
  const lt_flow_backend *be;
  void *ctx;
  lt_loop *L;
  int w, h;
  float *u, *v;         /* the pair's flow */
  float *mag;           /* magnitudes (summary / plot) */
  uint32_t *hist;       /* 65536 bins of the radix select */
  uint8_t *rgb;         /* colour code */
  uint8_t *blend;       /* overlay */
  char *path;           /* output names */
  size_t pathlen;
  float *gu, *gv, *mask; /* --ground-truth, --mask */
  int evaluated;
  lt_rows rows;
  int rows_on;
  lt_outfile *sum_out;
  lt_flo_writer *wr;    /* background .flo writer of -o DIR */
  double *px, *pmean, *pp95; /* --plot: per pair */
  int np, capp;
  double mag_sum;       /* all pairs, for -v */
  long pairs;
  int last_index;       /* index of the last pair's second frame */
} run;

/* ---- statistics of one field ---- */

/* The k-th smallest (1-based) of n non-negative floats, by two radix passes
 * over the bit patterns (16 high bits, then 16 low bits). */
float lt_flow_kth_smallest(const float *a, size_t n, size_t k, uint32_t *hist)
{
  memset(hist, 0, 65536 * sizeof *hist);
  for (size_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &a[i], 4);
    hist[b >> 16]++;
  }
  size_t below = 0;
  uint32_t hi = 0;
  for (; hi < 65536; hi++) {
    if (below + hist[hi] >= k) break;
    below += hist[hi];
  }
  k -= below;
  memset(hist, 0, 65536 * sizeof *hist);
  for (size_t i = 0; i < n; i++) {
    uint32_t b;
    memcpy(&b, &a[i], 4);
    if (b >> 16 == hi) hist[b & 0xffff]++;
  }
  uint32_t lo = 0;
  for (size_t c = 0; lo < 65536; lo++) {
    if (c + hist[lo] >= k) break;
    c += hist[lo];
  }
  uint32_t b = hi << 16 | lo;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* Fixed chunks of the magnitude pass: the partial sums are added in chunk
 * order, so the mean is the same for any thread count. */
#define STAT_CHUNKS 64

/* mean, p95 (nearest rank) and max of |w| = sqrt(u^2 + v^2) (double). The
 * magnitudes in parallel (OpenMP over STAT_CHUNKS chunks), the select on
 * one thread. */
static void field_stats(run *R, double *mean, double *p95, double *max)
{
  size_t n = (size_t)R->w * R->h;
  double cs[STAT_CHUNKS], cm[STAT_CHUNKS];
#pragma omp parallel for schedule(static)
  for (int c = 0; c < STAT_CHUNKS; c++) {
    const size_t a = n * c / STAT_CHUNKS, b = n * (c + 1) / STAT_CHUNKS;
    double sc = 0, mc = 0;
    for (size_t i = a; i < b; i++) {
      double m = sqrt((double)R->u[i] * R->u[i] + (double)R->v[i] * R->v[i]);
      R->mag[i] = (float)m;
      sc += m;
      if (m > mc) mc = m;
    }
    cs[c] = sc;
    cm[c] = mc;
  }
  double s = 0, mx = 0;
  for (int c = 0; c < STAT_CHUNKS; c++) {
    s += cs[c];
    if (cm[c] > mx) mx = cm[c];
  }
  size_t k = (size_t)ceil(0.95 * (double)n);
  if (k < 1) k = 1;
  *mean = s / n;
  *p95 = lt_flow_kth_smallest(R->mag, n, k, R->hist);
  *max = mx;
}

/* ---- outputs ---- */

/* The .flo (and .png) name of the pair starting at frame `index`; ext is
 * ".flo" or ".png". */
static const char *out_name(run *R, int index, const char *ext)
{
  const char *o = R->s->output;
  if (R->o.folder) {
    snprintf(R->path, R->pathlen, "%s/flow_%06d%s", o, index, ext);
  } else {
    size_t n = strlen(o);
    if (!strcmp(ext, ".flo")) snprintf(R->path, R->pathlen, "%s", o);
    else if (n > 4 && !strcmp(o + n - 4, ".flo")) snprintf(R->path, R->pathlen, "%.*s.png", (int)(n - 4), o);
    else snprintf(R->path, R->pathlen, "%s.png", o);
  }
  return R->path;
}

static int write_color(run *R, int index)
{
  float used = lt_flow_color(R->u, R->v, R->w, R->h, 0.0f, R->rgb);
  lt_flow_color_legend(R->rgb, R->w, R->h, 0);
  char label[48];
  snprintf(label, sizeof label, "max %.2f px", used);
  lt_canvas c = {R->w, R->h, R->rgb};
  lt_draw_text(&c, 3, 3, 1, label, (lt_rgb){0, 0, 0});
  return lt_png_write_rgb(out_name(R, index, ".png"), R->rgb, R->w, R->h);
}

static int write_overlay(run *R, const lt_frame *prev)
{
  size_t n = (size_t)R->w * R->h;
  lt_flow_color(R->u, R->v, R->w, R->h, 0.0f, R->blend);
  for (size_t i = 0; i < n; i++) {
    float g = prev->grey[i];
    g = g < 0 ? 0 : g > 255 ? 255 : g;
    for (int c = 0; c < 3; c++) R->blend[3 * i + c] = (uint8_t)lrintf(0.5f * g + 0.5f * R->blend[3 * i + c]);
  }
  lt_flow_color_legend(R->blend, R->w, R->h, 0);
  snprintf(R->path, R->pathlen, "%s/frame_%06d.png", R->s->overlay_dir, prev->index);
  return lt_png_write_rgb(R->path, R->blend, R->w, R->h);
}

static int evaluate(run *R, const lt_frame *prev, const lt_frame *f)
{
  lt_flow_error e;
  int err = lt_flow_evaluate(R->u, R->v, R->gu, R->gv, R->mask, R->w, R->h, R->o.ground_truth, &e);
  if (err) return err;
  printf("frame,aee_px,aae_deg,pixels\n%d,%.6f,%.6f,%lld\n", prev->index, e.aee, e.aae, e.n);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    lt_error("cannot write the evaluation to stdout: %s", strerror(errno));
    return LT_ERR_OUTPUT;
  }
  lt_info("pair %d -> %d against '%s': AEE %.4f px, AAE %.3f deg over %lld pixels", prev->index, f->index,
          R->o.ground_truth, e.aee, e.aae, e.n);
  R->evaluated = 1;
  return 0;
}

/* ---- begin: inputs checked before any work ---- */

static int load_ground_truth(run *R, const char *input)
{
  int gw, gh;
  int err = lt_flo_read(R->o.ground_truth, &R->gu, &R->gv, &gw, &gh);
  if (err) return err;
  if (gw != R->w || gh != R->h) {
    lt_error("ground truth '%s' is %dx%d but the frames of '%s' are %dx%d", R->o.ground_truth, gw, gh, input, R->w,
             R->h);
    return LT_ERR_INPUT;
  }
  size_t n = (size_t)R->w * R->h;
  for (size_t i = 0; i < n; i++)
    if (isnan(R->gu[i]) || isnan(R->gv[i])) {
      lt_error("ground truth '%s' holds NaN at pixel (%zu, %zu); unknown flow is marked by |value| > 1e9",
               R->o.ground_truth, i % R->w, i / R->w);
      return LT_ERR_INPUT;
    }
  if (R->o.mask) {
    int mw, mh;
    if ((err = lt_image_read(R->o.mask, LT_CHANNEL_LUMA, &R->mask, &mw, &mh))) return err;
    if (mw != R->w || mh != R->h) {
      lt_error("mask '%s' is %dx%d but the frames of '%s' are %dx%d", R->o.mask, mw, mh, input, R->w, R->h);
      return LT_ERR_INPUT;
    }
  }
  size_t counted = 0;
  for (size_t i = 0; i < n; i++)
    counted += (!R->mask || R->mask[i] != 0) && fabsf(R->gu[i]) <= LT_FLO_UNKNOWN && fabsf(R->gv[i]) <= LT_FLO_UNKNOWN;
  if (!counted) {
    lt_error("ground truth '%s'%s%s: no pixel to evaluate (%s)", R->o.ground_truth, R->o.mask ? " with mask " : "",
             R->o.mask ? R->o.mask : "", R->o.mask ? "the mask is zero wherever the flow is known" : "every flow is unknown");
    return LT_ERR_INPUT;
  }
  return 0;
}

static int make_dir(const char *dir, const char *what)
{
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    lt_error("cannot create %s folder '%s': %s", what, dir, strerror(errno));
    return LT_ERR_OUTPUT;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    lt_error("%s '%s' exists and is not a folder", what, dir);
    return LT_ERR_OUTPUT;
  }
  return 0;
}

/* A file written later (a pair's .flo, the plot): its folder must exist and
 * be writable now, before any work. */
static int check_writable(const char *path, const char *what)
{
  if (!path || !strcmp(path, "-")) return 0;
  const char *slash = strrchr(path, '/');
  char dir[4096];
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK) != 0) {
    lt_error("cannot write %s '%s': folder '%s' %s", what, path, dir,
             stat(dir, &st) != 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "is not a folder" : "is not writable");
    return LT_ERR_OUTPUT;
  }
  return 0;
}

static const char *backend_name(void *m) { return ((run *)m)->be ? ((run *)m)->be->name : "cpu"; }

static int begin(void *m, lt_loop *L, const lt_source_info *in)
{
  run *R = m;
  R->L = L;
  R->w = in->width;
  R->h = in->height;
  if (R->w < 2 || R->h < 2) {
    lt_error("'%s' is %dx%d px: too small for optical flow (at least 2x2)", in->name, R->w, R->h);
    return LT_ERR_INPUT;
  }
  int err;
  if (R->o.ground_truth && (err = load_ground_truth(R, in->name))) return err;
  if (R->o.folder && R->s->output && (err = make_dir(R->s->output, "output"))) return err;
  if (!R->o.folder && (err = check_writable(R->s->output, "the flow"))) return err;
  if ((err = check_writable(R->o.plot, "the plot"))) return err;
  if (R->s->overlay_dir && (err = make_dir(R->s->overlay_dir, "overlay"))) return err;
  if (in->fps > 0)
    lt_info("%s: %dx%d, %.3f fps", in->name, R->w, R->h, in->fps);
  else
    lt_info("%s: %dx%d, frame rate unknown (t_s = frame index; give --fps)", in->name, R->w, R->h);
  lt_info("flow: alpha %g, rho %g, sigma %g, %d levels, %d warps, %d iterations, eps-data %g, eps-smooth %g, omega %g",
          R->o.flow.alpha, R->o.flow.rho, R->o.flow.sigma, R->o.flow.levels, R->o.flow.warps, R->o.flow.iterations,
          R->o.flow.eps_data, R->o.flow.eps_smooth, R->o.flow.omega);
  const void *stages;
  if ((err = lt_backend_stages("flow", R->s->backend, R->s->device, &lt_flow_backend_cpu, &stages))) return err;
  R->be = stages;
  size_t n = (size_t)R->w * R->h;
  R->pathlen = (R->s->output ? strlen(R->s->output) : 0) + (R->s->overlay_dir ? strlen(R->s->overlay_dir) : 0) + 64;
  /* u, v: the backend's host memory (pinned on CUDA) */
  if (R->be->host_alloc) {
    R->u = R->be->host_alloc(n * sizeof *R->u, "the flow field");
    R->v = R->u ? R->be->host_alloc(n * sizeof *R->v, "the flow field") : NULL;
    if (!R->v) return LT_ERR_GPU;
  } else {
    R->u = malloc(n * sizeof *R->u);
    R->v = malloc(n * sizeof *R->v);
  }
  R->path = malloc(R->pathlen);
  int want_stats = R->o.summary || R->o.plot;
  if (want_stats) {
    R->mag = malloc(n * sizeof *R->mag);
    R->hist = malloc(65536 * sizeof *R->hist);
  }
  if (R->o.color) R->rgb = malloc(3 * n);
  if (R->s->overlay_dir) R->blend = malloc(3 * n);
  if (!R->u || !R->v || !R->path || (want_stats && (!R->mag || !R->hist)) || (R->o.color && !R->rgb) ||
      (R->s->overlay_dir && !R->blend)) {
    lt_error("out of memory for %dx%d flow buffers", R->w, R->h);
    return LT_ERR_NOMEM;
  }
  if ((err = R->be->create(&R->ctx, &R->o.flow, R->w, R->h))) return err;
  if (R->o.folder && R->s->output && (err = lt_flo_writer_start(&R->wr, R->w, R->h, FLO_WRITER_THREADS, R->pathlen)))
    return err;
  if (R->o.summary) {
    if (!(R->sum_out = lt_loop_output(L, R->o.summary, &err))) return err;
    if ((err = lt_rows_start(&R->rows, R->sum_out, sum_cols, NSUM, NSUM, NULL, NULL))) return err;
    R->rows_on = 1;
  }
  return 0;
}

static int step(void *m, lt_loop *L, const lt_frame *f, const lt_frame *prev)
{
  run *R = m;
  int err;
  double t0 = lt_now();
  /* consecutive pairs: prev is the last pair's second frame, which the
   * backend may still hold (compute_next: one upload instead of two) */
  if (R->be->compute_next && R->pairs > 0 && prev->index == R->last_index)
    err = R->be->compute_next(R->ctx, f->grey, f->grey8, R->u, R->v);
  else
    err = R->be->compute(R->ctx, prev->grey, f->grey, R->u, R->v);
  if (err) return err;
  R->last_index = f->index;
  double t1 = lt_now();
  lt_loop_time(L, ST_FLOW, t1 - t0);
  if (R->o.ground_truth && !R->evaluated && (err = evaluate(R, prev, f))) return err;
  if (R->o.summary || R->o.plot) {
    double mean, p95, max;
    field_stats(R, &mean, &p95, &max);
    if (R->rows_on) {
      double *row = lt_rows_frame(&R->rows, prev->index, 1, &err);
      if (!row) return err;
      row[0] = prev->index;
      row[1] = prev->t_s;
      row[2] = mean;
      row[3] = p95;
      row[4] = max;
      if ((err = lt_rows_put(&R->rows))) return err;
    }
    if (R->o.plot) {
      if (R->np == R->capp) {
        int cap = R->capp ? 2 * R->capp : 256;
        double *a = realloc(R->px, cap * sizeof *a), *b = a ? realloc(R->pmean, cap * sizeof *b) : NULL,
               *c = b ? realloc(R->pp95, cap * sizeof *c) : NULL;
        if (a) R->px = a;
        if (b) R->pmean = b;
        if (c) R->pp95 = c;
        if (!c) {
          lt_error("out of memory (plot values)");
          return LT_ERR_NOMEM;
        }
        R->capp = cap;
      }
      R->px[R->np] = prev->index;
      R->pmean[R->np] = mean;
      R->pp95[R->np] = p95;
      R->np++;
    }
    R->mag_sum += mean;
  }
  double t2 = lt_now();
  lt_loop_time(L, ST_STATS, t2 - t1);
  if (R->s->output) {
    const char *name = out_name(R, prev->index, ".flo");
    if ((err = R->wr ? lt_flo_writer_put(R->wr, name, R->u, R->v) : lt_flo_write(name, R->u, R->v, R->w, R->h)))
      return err;
  }
  if (R->o.color && (err = write_color(R, prev->index))) return err;
  if (R->s->overlay_dir && (err = write_overlay(R, prev))) return err;
  lt_loop_time(L, ST_WRITE, lt_now() - t2);
  R->pairs++;
  return 0;
}

static int end(void *m, lt_loop *L, int steps)
{
  run *R = m;
  int err = lt_flo_writer_finish(R->wr);
  R->wr = NULL;
  if (R->rows_on) {
    R->rows_on = 0;
    err = lt_rows_finish(&R->rows);
  }
  if (!err && R->o.plot) {
    double *y = malloc(2 * (size_t)R->np * sizeof *y);
    if (!y) {
      lt_error("out of memory (plot)");
      return LT_ERR_NOMEM;
    }
    memcpy(y, R->pmean, R->np * sizeof *y);
    memcpy(y + R->np, R->pp95, R->np * sizeof *y);
    static const char *const names[] = {"mean", "p95"};
    err = lt_plot_lines(R->o.plot, R->px, y, R->np, 2, names, "optical flow magnitude per frame pair",
                        "frame (pair frame -> frame+1)", "flow magnitude (px)", 800, 500);
    free(y);
  }
  if (!err) lt_info("%d frame pairs", steps);
  return err;
}

static void abort_run(void *m, lt_loop *L)
{
  run *R = m;
  lt_flo_writer_finish(R->wr); /* the pairs computed so far keep their files */
  R->wr = NULL;
  if (R->rows_on) {
    R->rows_on = 0;
    lt_rows_finish(&R->rows); /* the rows handed over are written first */
    lt_loop_keep_partial(L, R->sum_out, R->rows.frames > 0);
  }
}

static void progress(void *m, char *buf, size_t n)
{
  const run *R = m;
  if (R->o.summary || R->o.plot) snprintf(buf, n, "mean |w| %.2f px", R->pairs ? R->mag_sum / R->pairs : 0.0);
}

static void stats(void *m, FILE *f, int steps)
{
  const run *R = m;
  fprintf(f, "flow: %dx%d, alpha %g rho %g sigma %g levels %d warps %d iterations %d eps-data %g eps-smooth %g omega %g\n",
          R->w, R->h, R->o.flow.alpha, R->o.flow.rho, R->o.flow.sigma, R->o.flow.levels, R->o.flow.warps,
          R->o.flow.iterations, R->o.flow.eps_data, R->o.flow.eps_smooth, R->o.flow.omega);
}

static const lt_steps flow_steps = {
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

int lt_flow_run(const lt_settings *s, const void *opts)
{
  run R;
  memset(&R, 0, sizeof R);
  R.s = s;
  R.o = *(const lt_flow_opts *)opts;
  int err = lt_loop_run(s, &flow_steps, &R);
  if (R.rows_on) lt_rows_finish(&R.rows); /* begin failed after the writer started */
  lt_flo_writer_finish(R.wr);
  if (R.be && R.ctx) R.be->destroy(R.ctx);
  if (R.be && R.be->host_free) {
    R.be->host_free(R.u);
    R.be->host_free(R.v);
  } else {
    free(R.u), free(R.v);
  }
  free(R.mag), free(R.hist), free(R.rgb), free(R.blend), free(R.path);
  free(R.gu), free(R.gv), free(R.mask);
  free(R.px), free(R.pmean), free(R.pp95);
  return err;
}
