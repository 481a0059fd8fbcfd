/* corr.c - Pearson correlation template matching on the CPU (SPEC 4.2;
 * seeds/001 figs. 1-2): the reference by the definition (exact) and the fast
 * implementation behind lt_tumor_backend_cpu. Conventions (outside = -1,
 * flat = 0, clamp) are in corr.h.
 *
 * Fast, after seeds/001 fig. 2: the template is static, so Tc = T - mean T,
 * sum Tc and A_D = sum Tc^2 are computed once. Per frame and template, two
 * integral images of the template's search region (the tw+2H x th+2V block,
 * clipped to the frame) give every window's sum and sum of squares in four
 * look-ups; they hold B - 128 in double, so for 8-bit frames every entry is an
 * exact integer and the window variance S2 - S1^2/n loses nothing. Only the
 * cross term sum Tc*B is evaluated per shift, with four partial sums over the
 * columns (j mod 4) added in a fixed order: the same bits for any thread
 * count, since each score is computed whole by one thread. */
#include "tumor/corr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

int lt_tumor_setup_check(const lt_tumor_setup *s)
{
  if (!s || s->frame_w < 1 || s->frame_h < 1 || s->frame_w > 65536 || s->frame_h > 65536) {
    lt_error("tumor: frame size %dx%d out of range", s ? s->frame_w : 0, s ? s->frame_h : 0);
    return LT_ERR_USAGE;
  }
  if (s->ntemplates < 1 || !s->tpl) {
    lt_error("tumor: no templates");
    return LT_ERR_USAGE;
  }
  if (s->shift_v < 0 || s->shift_h < 0 || s->shift_v > LT_TUMOR_MAX_SHIFT || s->shift_h > LT_TUMOR_MAX_SHIFT) {
    lt_error("tumor: shift range +-%d/+-%d out of range (0..%d)", s->shift_v, s->shift_h, LT_TUMOR_MAX_SHIFT);
    return LT_ERR_USAGE;
  }
  for (int k = 0; k < s->ntemplates; k++) {
    const lt_tumor_template *t = &s->tpl[k];
    if (!t->px || t->w < 1 || t->h < 1 || t->w > LT_TUMOR_MAX_SIDE || t->h > LT_TUMOR_MAX_SIDE) {
      lt_error("tumor: template %d: size %dx%d out of range (1..%d)", k, t->w, t->h, LT_TUMOR_MAX_SIDE);
      return LT_ERR_USAGE;
    }
    if (abs(t->x) > 4 * 65536 || abs(t->y) > 4 * 65536) {
      lt_error("tumor: template %d: position %d,%d out of range", k, t->x, t->y);
      return LT_ERR_USAGE;
    }
  }
  return 0;
}

int lt_tumor_npos(const lt_tumor_setup *s)
{
  return (2 * s->shift_v + 1) * (2 * s->shift_h + 1);
}

int lt_tumor_inside(const lt_tumor_setup *s, int k, int dy, int dx)
{
  const lt_tumor_template *t = &s->tpl[k];
  int r = t->y + dy, c = t->x + dx;
  return r >= 0 && c >= 0 && r + t->h <= s->frame_h && c + t->w <= s->frame_w;
}

/* The final step shared by both implementations: cross = sum Tc (B - mean B),
 * ta = sum Tc^2, bb = sum (B - mean B)^2. */
static double score_of(double cross, double ta, double bb, int n)
{
  const double flat = LT_TUMOR_FLAT_VAR * n;
  if (ta <= flat || bb <= flat) return 0.0;
  double r = cross / sqrt(ta * bb);
  return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}

double lt_tumor_corr2(const float *a, const float *b, int w, int h, size_t bstride)
{
  const int n = w * h;
  double sa = 0, sb = 0;
  for (int i = 0; i < h; i++)
    for (int j = 0; j < w; j++) {
      sa += a[(size_t)i * w + j];
      sb += b[i * bstride + j];
    }
  const double ma = sa / n, mb = sb / n;
  double cross = 0, aa = 0, bb = 0;
  for (int i = 0; i < h; i++)
    for (int j = 0; j < w; j++) {
      double da = a[(size_t)i * w + j] - ma, db = b[i * bstride + j] - mb;
      cross += da * db;
      aa += da * da;
      bb += db * db;
    }
  return score_of(cross, aa, bb, n);
}

int lt_tumor_corr_exact(const lt_tumor_setup *s, const float *frame, double *scores)
{
  int e = lt_tumor_setup_check(s);
  if (e) return e;
  const int npos = lt_tumor_npos(s), V = s->shift_v, H = s->shift_h;
  for (int k = 0; k < s->ntemplates; k++) {
    const lt_tumor_template *t = &s->tpl[k];
    for (int dy = -V; dy <= V; dy++)
      for (int dx = -H; dx <= H; dx++) {
        double *out = &scores[(size_t)k * npos + (size_t)(dy + V) * (2 * H + 1) + (dx + H)];
        if (!lt_tumor_inside(s, k, dy, dx)) {
          *out = LT_TUMOR_OUTSIDE;
          continue;
        }
        const float *win = frame + (size_t)(t->y + dy) * s->frame_w + (t->x + dx);
        *out = lt_tumor_corr2(t->px, win, t->w, t->h, (size_t)s->frame_w);
      }
  }
  return 0;
}

/* ---- fast ---------------------------------------------------------------- */

/* Offset subtracted before integrating: centres 0..255 on zero. */
#define LT_TUMOR_OFFSET 128.0

typedef struct tpl_state {
  int w, h, x, y, n;
  double *tc;            /* w*h: T - mean T */
  double sum_tc, ta;     /* sum Tc (rounding residue), sum Tc^2 */
  int rx, ry, rw, rh;    /* search region clipped to the frame */
  double *i1, *i2;       /* (rw+1)*(rh+1) integral images of B-128, (B-128)^2 */
} tpl_state;

struct lt_tumor_cpu {
  lt_tumor_setup s;      /* copy; s.tpl points to nothing after create */
  lt_tumor_template *geom; /* geometry of each template (px NULL), for lt_tumor_inside */
  tpl_state *t;
};

void lt_tumor_cpu_destroy(lt_tumor_cpu *c)
{
  if (!c) return;
  if (c->t)
    for (int k = 0; k < c->s.ntemplates; k++) {
      free(c->t[k].tc);
      free(c->t[k].i1);
      free(c->t[k].i2);
    }
  free(c->t);
  free(c->geom);
  free(c);
}

static void region_of(const lt_tumor_setup *s, const lt_tumor_template *t, tpl_state *st)
{
  int x0 = t->x - s->shift_h, y0 = t->y - s->shift_v;
  int x1 = t->x + s->shift_h + t->w, y1 = t->y + s->shift_v + t->h; /* exclusive */
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > s->frame_w) x1 = s->frame_w;
  if (y1 > s->frame_h) y1 = s->frame_h;
  st->rx = x0;
  st->ry = y0;
  st->rw = x1 > x0 ? x1 - x0 : 0;
  st->rh = y1 > y0 ? y1 - y0 : 0;
}

static int tpl_init(const lt_tumor_setup *s, int k, tpl_state *st)
{
  const lt_tumor_template *t = &s->tpl[k];
  st->w = t->w;
  st->h = t->h;
  st->x = t->x;
  st->y = t->y;
  st->n = t->w * t->h;
  region_of(s, t, st);
  st->tc = malloc(sizeof(double) * st->n);
  size_t ni = (size_t)(st->rw + 1) * (st->rh + 1);
  st->i1 = malloc(sizeof(double) * ni);
  st->i2 = malloc(sizeof(double) * ni);
  if (!st->tc || !st->i1 || !st->i2) {
    lt_error("out of memory (tumor template %d, %dx%d)", k, t->w, t->h);
    return LT_ERR_NOMEM;
  }
  double sum = 0;
  for (int i = 0; i < st->n; i++) sum += t->px[i];
  const double mean = sum / st->n;
  double stc = 0, ta = 0;
  for (int i = 0; i < st->n; i++) {
    st->tc[i] = t->px[i] - mean;
    stc += st->tc[i];
    ta += st->tc[i] * st->tc[i];
  }
  st->sum_tc = stc;
  st->ta = ta;
  return 0;
}

int lt_tumor_cpu_create(lt_tumor_cpu **out, const lt_tumor_setup *s)
{
  *out = NULL;
  int e = lt_tumor_setup_check(s);
  if (e) return e;
  lt_tumor_cpu *c = calloc(1, sizeof *c);
  if (!c) goto nomem;
  c->s = *s;
  c->t = calloc((size_t)s->ntemplates, sizeof *c->t);
  c->geom = calloc((size_t)s->ntemplates, sizeof *c->geom);
  if (!c->t || !c->geom) goto nomem;
  for (int k = 0; k < s->ntemplates; k++) {
    c->geom[k] = s->tpl[k];
    c->geom[k].px = NULL;
    if ((e = tpl_init(s, k, &c->t[k]))) {
      lt_tumor_cpu_destroy(c);
      return e;
    }
  }
  c->s.tpl = c->geom;
  *out = c;
  return 0;
nomem:
  lt_error("out of memory (tumor CPU set-up)");
  lt_tumor_cpu_destroy(c);
  return LT_ERR_NOMEM;
}

/* Integral images of the search region: I(r, c) = sum over rows < r, cols < c. */
static void integrate(const tpl_state *st, const float *frame, int fw)
{
  const int W = st->rw + 1;
  for (int c = 0; c < W; c++) st->i1[c] = st->i2[c] = 0;
  for (int r = 0; r < st->rh; r++) {
    const float *row = frame + (size_t)(st->ry + r) * fw + st->rx;
    double *p1 = st->i1 + (size_t)r * W, *p2 = st->i2 + (size_t)r * W;
    double *q1 = p1 + W, *q2 = p2 + W;
    double a1 = 0, a2 = 0;
    q1[0] = q2[0] = 0;
    for (int c = 0; c < st->rw; c++) {
      double v = row[c] - LT_TUMOR_OFFSET;
      a1 += v;
      a2 += v * v;
      q1[c + 1] = p1[c + 1] + a1;
      q2[c + 1] = p2[c + 1] + a2;
    }
  }
}

/* sum Tc * B over the window at frame (r0, c0); four column partials. */
static double cross_sum(const tpl_state *st, const float *frame, int fw, int r0, int c0)
{
  double acc = 0;
  const int w = st->w, w4 = w & ~3;
  for (int i = 0; i < st->h; i++) {
    const double *t = st->tc + (size_t)i * w;
    const float *b = frame + (size_t)(r0 + i) * fw + c0;
    double p0 = 0, p1 = 0, p2 = 0, p3 = 0;
    int j = 0;
    for (; j < w4; j += 4) {
      p0 += t[j] * b[j];
      p1 += t[j + 1] * b[j + 1];
      p2 += t[j + 2] * b[j + 2];
      p3 += t[j + 3] * b[j + 3];
    }
    for (; j < w; j++) p0 += t[j] * b[j];
    acc += (p0 + p1) + (p2 + p3);
  }
  return acc;
}

static double fast_score(const lt_tumor_cpu *c, int k, int dy, int dx, const float *frame)
{
  if (!lt_tumor_inside(&c->s, k, dy, dx)) return LT_TUMOR_OUTSIDE;
  const tpl_state *st = &c->t[k];
  const int r0 = st->y + dy, c0 = st->x + dx;
  const int W = st->rw + 1, a = r0 - st->ry, b = c0 - st->rx;
  const size_t i00 = (size_t)a * W + b, i01 = i00 + st->w;
  const size_t i10 = (size_t)(a + st->h) * W + b, i11 = i10 + st->w;
  const double s1 = st->i1[i11] - st->i1[i10] - st->i1[i01] + st->i1[i00];
  const double s2 = st->i2[i11] - st->i2[i10] - st->i2[i01] + st->i2[i00];
  const double n = st->n;
  double bb = s2 - s1 * s1 / n;
  if (bb < 0) bb = 0;
  const double mb = s1 / n + LT_TUMOR_OFFSET;
  const double cross = cross_sum(st, frame, c->s.frame_w, r0, c0) - mb * st->sum_tc;
  return score_of(cross, st->ta, bb, st->n);
}

int lt_tumor_cpu_match_d(lt_tumor_cpu *c, const float *frame, double *scores)
{
  const int K = c->s.ntemplates, V = c->s.shift_v, H = c->s.shift_h;
  const int nx = 2 * H + 1, npos = lt_tumor_npos(&c->s);
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < K; k++) integrate(&c->t[k], frame, c->s.frame_w);
  const long total = (long)K * npos;
#pragma omp parallel for schedule(dynamic, 8)
  for (long q = 0; q < total; q++) {
    int k = (int)(q / npos), p = (int)(q % npos);
    scores[q] = fast_score(c, k, p / nx - V, p % nx - H, frame);
  }
  return 0;
}

/* ---- the backend table ------------------------------------------------------ */

typedef struct cpu_ctx {
  lt_tumor_cpu *c;
  double *buf; /* ntemplates*npos */
  double setup_s;
} cpu_ctx;

static void cpu_destroy(void *p)
{
  cpu_ctx *x = p;
  if (!x) return;
  lt_tumor_cpu_destroy(x->c);
  free(x->buf);
  free(x);
}

static int cpu_create(void **out, const lt_tumor_setup *s)
{
  const double t0 = lt_now();
  *out = NULL;
  cpu_ctx *x = calloc(1, sizeof *x);
  if (!x) {
    lt_error("out of memory (tumor CPU backend)");
    return LT_ERR_NOMEM;
  }
  int e = lt_tumor_cpu_create(&x->c, s);
  if (e) {
    cpu_destroy(x);
    return e;
  }
  x->buf = malloc(sizeof(double) * (size_t)s->ntemplates * lt_tumor_npos(s));
  if (!x->buf) {
    lt_error("out of memory (tumor score buffer)");
    cpu_destroy(x);
    return LT_ERR_NOMEM;
  }
  x->setup_s = lt_now() - t0;
  *out = x;
  return 0;
}

static int cpu_match(void *p, const float *frame, float *scores)
{
  cpu_ctx *x = p;
  int e = lt_tumor_cpu_match_d(x->c, frame, x->buf);
  if (e) return e;
  const long total = (long)x->c->s.ntemplates * lt_tumor_npos(&x->c->s);
  for (long q = 0; q < total; q++) scores[q] = (float)x->buf[q];
  return 0;
}

static void cpu_stats(const void *p, lt_tumor_stats *st)
{
  const cpu_ctx *x = p;
  memset(st, 0, sizeof *st);
  st->setup_s = x->setup_s;
  snprintf(st->kernel, sizeof st->kernel, "cpu: integral images + cross term (double, OpenMP)");
}

const lt_tumor_backend lt_tumor_backend_cpu = {
    .name = "cpu",
    .create = cpu_create,
    .destroy = cpu_destroy,
    .match = cpu_match,
    .stats = cpu_stats,
};
