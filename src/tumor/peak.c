/* peak.c - the best shift in a score map and its sub-pixel refinement
 * (SPEC 4.2 output dy_sub, dx_sub). Contract and conventions in corr.h.
 *
 * Only shifts whose window lies inside the frame compete (decided from the
 * geometry, not the -1 the backends write there). Ties keep the first shift
 * in scan order, so every backend and thread count picks the same peak for
 * the same map. The refinement is a separable parabola through the peak and
 * its two neighbours along each axis (the centre row and column of the 3x3
 * neighbourhood): for s(-1), s(0), s(+1) the vertex lies at
 *   delta = (s(-1) - s(+1)) / (2 (s(-1) - 2 s(0) + s(+1))),
 * clamped to +-0.5 (beyond that the integer peak would have been elsewhere);
 * an axis whose neighbour is missing (edge of the shift range or window out
 * of the frame) or whose curvature is not negative keeps delta = 0. */
#include <string.h>

#include "error.h"
#include "tumor/corr.h"

static double vertex(double sm, double s0, double sp)
{
  double curv = sm - 2.0 * s0 + sp;
  if (!(curv < 0.0)) return 0.0;
  double d = 0.5 * (sm - sp) / curv;
  return d > 0.5 ? 0.5 : d < -0.5 ? -0.5 : d;
}

/* Score at (dy, dx) if it exists and its window is inside the frame. */
static int neighbour(const lt_tumor_setup *s, const float *map, int k, int dy, int dx, double *v)
{
  const int V = s->shift_v, H = s->shift_h;
  if (dy < -V || dy > V || dx < -H || dx > H || !lt_tumor_inside(s, k, dy, dx)) return 0;
  *v = map[(dy + V) * (2 * H + 1) + (dx + H)];
  return 1;
}

int lt_tumor_peak_one(const lt_tumor_setup *s, const float *scores, int k, lt_tumor_peak *p)
{
  const int V = s->shift_v, H = s->shift_h;
  const float *map = scores + (size_t)k * lt_tumor_npos(s);
  memset(p, 0, sizeof *p);
  p->tpl = k;
  p->score = -1.0f;
  int found = 0;
  for (int dy = -V; dy <= V; dy++)
    for (int dx = -H; dx <= H; dx++) {
      if (!lt_tumor_inside(s, k, dy, dx)) continue;
      float v = map[(dy + V) * (2 * H + 1) + (dx + H)];
      if (!found || v > p->score) {
        found = 1;
        p->score = v;
        p->dy = dy;
        p->dx = dx;
      }
    }
  p->row = s->tpl[k].y + p->dy;
  p->col = s->tpl[k].x + p->dx;
  p->dy_sub = p->dy;
  p->dx_sub = p->dx;
  if (!found) return LT_ERR_INPUT;
  double sm, sp;
  if (neighbour(s, map, k, p->dy, p->dx - 1, &sm) && neighbour(s, map, k, p->dy, p->dx + 1, &sp))
    p->dx_sub += vertex(sm, p->score, sp);
  if (neighbour(s, map, k, p->dy - 1, p->dx, &sm) && neighbour(s, map, k, p->dy + 1, p->dx, &sp))
    p->dy_sub += vertex(sm, p->score, sp);
  return 0;
}

int lt_tumor_peak_best(const lt_tumor_setup *s, const float *scores, lt_tumor_peak *best,
                       lt_tumor_peak *per_tpl)
{
  int found = 0;
  memset(best, 0, sizeof *best);
  best->score = -1.0f;
  for (int k = 0; k < s->ntemplates; k++) {
    lt_tumor_peak p;
    int e = lt_tumor_peak_one(s, scores, k, &p);
    if (per_tpl) per_tpl[k] = p;
    if (e) continue;
    if (!found || p.score > best->score) {
      *best = p;
      found = 1;
    }
  }
  return found ? 0 : LT_ERR_INPUT;
}
