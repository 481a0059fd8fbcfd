/* cpu.c - the CPU (C11 + OpenMP) backend of the leukocyte stage table.
 * The reference: double sums, fixed iteration orders, parallel loops whose
 * iterations are independent, so the output is identical for any thread
 * count. All buffers are allocated in create for the largest ROI (the
 * frame); nothing is allocated per frame. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "leuk.h"
#include "log.h"

typedef struct cpu_ctx {
  lt_leuk_params p;
  lt_stencil st;
  int fw, fh;
  const float *frame;
  lt_rect last_roi;
  float *crop, *gx, *gy, *gicov, *mg, *dil, *scratch;
  unsigned char *ridx;
  int *mx, *my;
  int nthreads;
  float *work; /* per-thread tracking work */
  size_t work_size;
  float *tpl;   /* --appearance: max_cells templates (tpl_set), else NULL */
  int max_cells;
} cpu_ctx;

static void cpu_destroy(void *vctx)
{
  cpu_ctx *c = vctx;
  if (!c) return;
  lt_stencil_free(&c->st);
  free(c->crop);
  free(c->gx);
  free(c->gy);
  free(c->gicov);
  free(c->mg);
  free(c->dil);
  free(c->scratch);
  free(c->ridx);
  free(c->mx);
  free(c->my);
  free(c->work);
  free(c->tpl);
  free(c);
}

static int cpu_create(void **out, const lt_leuk_params *p, int width, int height, int max_cells)
{
  cpu_ctx *c = calloc(1, sizeof *c);
  if (!c) goto nomem;
  c->p = *p;
  c->fw = width;
  c->fh = height;
  int err = lt_stencil_init(&c->st, p);
  if (err) {
    cpu_destroy(c);
    return err;
  }
  size_t n = (size_t)width * height;
  c->crop = malloc(sizeof(float) * n);
  c->gx = malloc(sizeof(float) * n);
  c->gy = malloc(sizeof(float) * n);
  c->gicov = malloc(sizeof(float) * n);
  c->mg = malloc(sizeof(float) * n);
  c->dil = malloc(sizeof(float) * n);
  c->scratch = malloc(sizeof(float) * n * (p->dilate_radius + 1));
  c->ridx = malloc(n);
  c->mx = malloc(sizeof(int) * n);
  c->my = malloc(sizeof(int) * n);
  c->nthreads = omp_get_max_threads();
  c->work_size = lt_leuk_track_work_size(p);
  c->work = malloc(sizeof(float) * c->work_size * c->nthreads);
  c->max_cells = max_cells;
  /* untouched slots cost no memory (calloc) */
  if (p->appearance > 0 && max_cells > 0 && !(c->tpl = calloc((size_t)max_cells * LT_LEUK_TPL_N, sizeof(float))))
    goto nomem;
  if (!c->crop || !c->gx || !c->gy || !c->gicov || !c->mg || !c->dil || !c->scratch || !c->ridx ||
      !c->mx || !c->my || !c->work)
    goto nomem;
  *out = c;
  return 0;
nomem:
  cpu_destroy(c);
  lt_error("out of memory allocating the CPU buffers for %dx%d frames", width, height);
  return LT_ERR_NOMEM;
}

static int cpu_set_frame(void *vctx, const float *frame, const unsigned char *frame8)
{
  (void)frame8;
  ((cpu_ctx *)vctx)->frame = frame;
  return 0;
}

static int cpu_detect(void *vctx, const lt_rect *roi, lt_leuk_max *out, int cap, int *n)
{
  cpu_ctx *c = vctx;
  int w = roi->w, h = roi->h;
  for (int i = 0; i < h; i++)
    memcpy(c->crop + (size_t)i * w, c->frame + (size_t)(roi->y + i) * c->fw + roi->x, sizeof(float) * w);
  lt_gradient(c->crop, w, h, c->gx, c->gy);
  lt_gicov_map(c->gx, c->gy, w, h, &c->st, c->gicov, c->ridx);
  for (size_t i = 0; i < (size_t)w * h; i++) c->mg[i] = c->gicov[i] * c->gicov[i];
  lt_dilate_disc(c->mg, w, h, c->p.dilate_radius, c->dil, c->scratch);
  int cnt = lt_local_maxima(c->mg, c->dil, w, h, c->mx, c->my, w * h);
  int k = cnt < cap ? cnt : cap;
  for (int i = 0; i < k; i++) {
    size_t idx = (size_t)c->my[i] * w + c->mx[i];
    out[i].x = c->mx[i] + roi->x;
    out[i].y = c->my[i] + roi->y;
    out[i].gicov = c->gicov[idx];
    out[i].radius = c->st.radius[c->ridx[idx]];
  }
  *n = k;
  c->last_roi = *roi;
  return 0;
}

static int cpu_refine(void *vctx, const lt_leuk_max *m, int n, lt_leuk_det *out)
{
  cpu_ctx *c = vctx;
  const lt_rect *roi = &c->last_roi;
#pragma omp parallel for schedule(dynamic)
  for (int i = 0; i < n; i++) {
    double x, y, r;
    int bad = lt_spline_refine(c->gx, c->gy, roi->w, roi->h, m[i].x - roi->x, m[i].y - roi->y,
                               m[i].radius, m[i].gicov >= 0 ? 1 : -1, &c->p, roi->x, roi->y,
                               c->fw, c->fh, &x, &y, &r);
    out[i].x = x;
    out[i].y = y;
    out[i].r = r;
    out[i].gicov = m[i].gicov;
    out[i].ok = !bad;
  }
  return 0;
}

/* Template slot `slot` (a cell's tpl), NULL for none (-1, or no --appearance). */
static float *tpl_of(cpu_ctx *c, int slot)
{
  return c->tpl && slot >= 0 && slot < c->max_cells ? c->tpl + (size_t)slot * LT_LEUK_TPL_N : NULL;
}

static int cpu_track(void *vctx, lt_leuk_cell *cells, int n)
{
  cpu_ctx *c = vctx;
#pragma omp parallel for schedule(dynamic)
  for (int i = 0; i < n; i++) {
    float *work = c->work + c->work_size * omp_get_thread_num();
    lt_leuk_track_cell(c->frame, c->fw, c->fh, &c->st, &c->p, &cells[i], tpl_of(c, cells[i].tpl), work);
  }
  return 0;
}

static float *cpu_tpl_slot(cpu_ctx *c, int slot)
{
  float *t = tpl_of(c, slot);
  if (!t) lt_error("template slot %d: none (%d slots%s)", slot, c->max_cells, c->tpl ? "" : ", --appearance off");
  return t;
}

static int cpu_tpl_set(void *vctx, int slot, const float *tpl)
{
  float *d = cpu_tpl_slot(vctx, slot);
  if (!d) return LT_ERR_INTERNAL;
  memcpy(d, tpl, sizeof(float) * LT_LEUK_TPL_N);
  return 0;
}

static int cpu_tpl_get(void *vctx, int slot, float *tpl)
{
  const float *d = cpu_tpl_slot(vctx, slot);
  if (!d) return LT_ERR_INTERNAL;
  memcpy(tpl, d, sizeof(float) * LT_LEUK_TPL_N);
  return 0;
}

static int cpu_get_map(void *vctx, int which, float *dst)
{
  cpu_ctx *c = vctx;
  size_t n = (size_t)c->last_roi.w * c->last_roi.h;
  memcpy(dst, which == LT_MAP_GICOV ? c->gicov : c->dil, sizeof(float) * n);
  return 0;
}

static int cpu_mgvf(void *vctx, const float *E, int w, int h, float *F, int *iters)
{
  cpu_ctx *c = vctx;
  float *tmp = malloc(sizeof(float) * (size_t)w * h);
  if (!tmp) return LT_ERR_NOMEM;
  *iters = lt_leuk_mgvf(&c->p, E, w, h, F, tmp);
  free(tmp);
  return 0;
}

const lt_leuk_backend lt_leuk_backend_cpu = {
  .name = "cpu",
  .create = cpu_create,
  .destroy = cpu_destroy,
  .set_frame = cpu_set_frame,
  .detect = cpu_detect,
  .refine = cpu_refine,
  .track = cpu_track,
  .tpl_set = cpu_tpl_set,
  .tpl_get = cpu_tpl_get,
  .get_map = cpu_get_map,
  .mgvf = cpu_mgvf,
};
