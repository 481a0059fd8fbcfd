/* track.c - one tracking step of one cell, CPU reference (seeds/000 section
 * 3; algorithm spec 5 with leuktrack's changes).
 *
 *  1. predict: p = centre + velocity (constant-velocity model);
 *  2. re-localise: the integer position within `search` px of p (and radius
 *     within one step of the cell's R) with the largest GICOV of the cell's
 *     sign - this is what lets the tracker follow cells moving several px
 *     per frame, which the snake alone cannot (it moves <= 0.07 px/iter);
 *     with --appearance G the largest GICOV + G x the correlation of the
 *     disc there with the cell's template (among positions of positive
 *     GICOV): on textured vessels the cell's circle scores no more than the
 *     texture beside it, its look from frame to frame tells them apart
 *     (docs/ACCURACY.md, twelfth pass);
 *  3. window: 4R columns and 2R rows on each side of that position;
 *  4. E = |gradient| of the window, normalised; F = MGVF(E);
 *  5. snake evolution on F from the re-localised centre with last frame's
 *     radii; no one-row offset (Q6 fixed);
 *  6. GICOV at the new centre; the track ends when the cell's circle leaves
 *     the ROI (LEFT) or |GICOV| with the cell's sign falls under
 *     lost_fraction * threshold (LOST); a cell that scores >= threshold
 *     takes its template anew from this frame. */
#include <math.h>
#include <string.h>

#include "leuk.h"

void lt_leuk_cell_init(lt_leuk_cell *c, const lt_leuk_det *d, double R)
{
  memset(c, 0, sizeof *c);
  c->xc = d->x;
  c->yc = d->y;
  c->R = R;
  for (int j = 0; j < LT_LEUK_SNAXELS; j++) c->r[j] = R;
  c->gicov = d->gicov;
  c->sign = d->gicov >= 0 ? 1 : -1;
  c->status = LT_CELL_ACTIVE;
  c->tpl = -1;
}

void lt_leuk_cell_template(const lt_leuk_cell *c, const float *img, int fw, int fh, float *tpl)
{
  const int cx = (int)lround(c->xc), cy = (int)lround(c->yc);
  for (int i = 0; i < LT_LEUK_TPL_N; i++) tpl[i] = lt_leuk_tpl_px(img, fw, fh, cx, cy, i);
}

/* The work of lt_leuk_track_cell in floats: the window's five planes, then
 * (8-byte aligned) the re-localisation grid's scores and radius indices. */
static size_t win_floats(const lt_leuk_params *p)
{
  double R = p->rmax + p->rstep;
  size_t wx = 2 * (size_t)lt_leuk_win_half_x(R) + 3, wy = 2 * (size_t)lt_leuk_win_half_y(R) + 3;
  return (5 * wx * wy + 1) / 2 * 2;
}

size_t lt_leuk_track_work_size(const lt_leuk_params *p)
{
  const size_t S = 2 * (size_t)(p->search > 0 ? p->search : 0) + 1;
  return win_floats(p) + 2 * S * S + (S * S + 1) / 2 * 2; /* even: each thread's part stays 8-byte aligned */
}

/* Best radius index near R (all radii when R <= 0) and the signed GICOV
 * (largest with the cell's sign) at integer (x, y). */
static double best_gicov(const float *img, int fw, int fh, int x, int y, const lt_stencil *s,
                         double R, int sign, int *kbest)
{
  double best = -INFINITY;
  int kb = 0;
  double step = s->nradii > 1 ? s->radius[1] - s->radius[0] : 1;
  for (int k = 0; k < s->nradii; k++) {
    if (R > 0 && fabs(s->radius[k] - R) > step + 1e-9) continue;
    double g = lt_gicov_at(img, fw, fh, x, y, s, k);
    if (sign * g > best) {
      best = sign * g;
      kb = k;
    }
  }
  if (kbest) *kbest = kb;
  return best == -INFINITY ? 0.0 : best * sign;
}

/* Sub-pixel position of the best circle k at integer (x, y) of img (w x h),
 * whose signed score is best: a parabola through the scores of its four
 * neighbours in x and in y, each step clamped to half a pixel, added to
 * *qx and *qy (the re-localisation below, and the pipeline's recheck). */
void lt_gicov_subpixel(const float *img, int w, int h, int x, int y, const lt_stencil *s, int k, int sign,
                       double best, double *qx, double *qy)
{
  double sl = sign * lt_gicov_at(img, w, h, x - 1, y, s, k);
  double sr = sign * lt_gicov_at(img, w, h, x + 1, y, s, k);
  double su = sign * lt_gicov_at(img, w, h, x, y - 1, s, k);
  double sd = sign * lt_gicov_at(img, w, h, x, y + 1, s, k);
  double cxv = sl - 2 * best + sr, cyv = su - 2 * best + sd;
  if (cxv < 0) *qx += fmax(-0.5, fmin(0.5, 0.5 * (sl - sr) / cxv));
  if (cyv < 0) *qy += fmax(-0.5, fmin(0.5, 0.5 * (su - sd) / cyv));
}

int lt_leuk_mgvf(const lt_leuk_params *p, const float *E, int w, int h, float *F, float *tmp)
{
  if (p->mgvf_col > 0)
    return lt_mgvf_col(E, w, h, F, tmp, p->mgvf_mu, p->mgvf_lambda, p->mgvf_col, p->mgvf_tol, p->mgvf_max_iter);
  return lt_mgvf(E, w, h, F, tmp, p->mgvf_mu, p->mgvf_lambda, p->mgvf_tol, p->mgvf_max_iter);
}

void lt_leuk_track_cell(const float *img, int fw, int fh, const lt_stencil *s,
                        const lt_leuk_params *p, lt_leuk_cell *c, float *tpl, float *work)
{
  const lt_rect *roi = &p->roi;
  const double R = c->R;
  double px = c->xc + c->vx, py = c->yc + c->vy;

  /* 2. re-localisation: each position's b (the grid, in scan order), then
   * the best score */
  int ix = (int)lround(px), iy = (int)lround(py), kq = 0;
  double qx = px, qy = py, bestv = 0, bests = 0;
  const double gam = tpl ? p->appearance : 0.0;
  const int tr = lt_leuk_tpl_r(R), S = 2 * p->search + 1;
  double *bs = (double *)(work + win_floats(p)), bmax = 0;
  int *ks = (int *)(bs + (size_t)S * S);
  for (int dy = -p->search; dy <= p->search; dy++)
    for (int dx = -p->search; dx <= p->search; dx++) {
      const int pos = (dy + p->search) * S + dx + p->search;
      bs[pos] = c->sign * best_gicov(img, fw, fh, ix + dx, iy + dy, s, R, c->sign, &ks[pos]);
      if (bs[pos] > bmax) bmax = bs[pos];
    }
  /* with the cue, positions that cannot win are not correlated (as in
   * track.cu's relocate) */
  const double cut = gam > 0 ? lt_leuk_ncc_cut(bmax, gam) : -INFINITY;
  for (int dy = -p->search; dy <= p->search; dy++)
    for (int dx = -p->search; dx <= p->search; dx++) {
      const int pos = (dy + p->search) * S + dx + p->search, k = ks[pos];
      const double b = bs[pos];
      if (!(b > 0) || b < cut) continue;
      /* the position's score; ties keep the first in scan order (without
       * the cue: the largest b > 0, as always) */
      double sc = gam > 0 ? b + gam * lt_leuk_ncc(tpl, img, fw, fh, ix + dx, iy + dy, tr) : b;
      if (bestv == 0 || sc > bests) {
        bests = sc;
        bestv = b;
        qx = ix + dx;
        qy = iy + dy;
        kq = k;
      }
    }
  if (bestv > 0) lt_gicov_subpixel(img, fw, fh, (int)qx, (int)qy, s, kq, c->sign, bestv, &qx, &qy);

  /* 3. window */
  int hx = lt_leuk_win_half_x(R), hy = lt_leuk_win_half_y(R);
  int u1 = (int)floor(qx) - hx, u2 = (int)floor(qx) + hx;
  int v1 = (int)floor(qy) - hy, v2 = (int)floor(qy) + hy;
  if (u1 < 0) u1 = 0;
  if (v1 < 0) v1 = 0;
  if (u2 > fw - 1) u2 = fw - 1;
  if (v2 > fh - 1) v2 = fh - 1;
  int w = u2 - u1 + 1, h = v2 - v1 + 1;
  double oldx = c->xc, oldy = c->yc;
  if (w < 3 || h < 3) {
    c->status = LT_CELL_LEFT;
    return;
  }
  size_t n = (size_t)w * h;
  float *E = work, *F = E + n, *tmp = F + n, *fx = tmp + n, *fy = fx + n;
  /* 4. gradient magnitude of the window (tmp/fx as scratch), MGVF */
  for (int i = 0; i < h; i++) memcpy(tmp + (size_t)i * w, img + (size_t)(v1 + i) * fw + u1, sizeof(float) * w);
  lt_gradient(tmp, w, h, fx, fy);
  for (size_t i = 0; i < n; i++) E[i] = sqrtf(fx[i] * fx[i] + fy[i] * fy[i]);
  lt_normalise(E, (int)n);
  c->mgvf_iter = lt_leuk_mgvf(p, E, w, h, F, tmp);

  /* 5. snake */
  double xc = qx - u1, yc = qy - v1;
  c->evolve_iter = lt_evolve(F, w, h, fx, fy, &xc, &yc, c->r, R, qy - v1, p);
  c->xc = xc + u1;
  c->yc = yc + v1;
  c->vx = c->xc - oldx;
  c->vy = c->yc - oldy;

  /* 6. score and status: the cell's best GICOV over all radii within one
   * pixel of the new centre (a thin rim makes the score of one circle
   * drop sharply a pixel off the edge) (the snake settles on whichever edge of the rim is stronger, so
   * its radius need not be the GICOV circle's); LEFT is decided first: the
   * circle of radius R no longer fits inside the ROI. */
  int cx = (int)lround(c->xc), cy = (int)lround(c->yc);
  double bg = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      double g = best_gicov(img, fw, fh, cx + dx, cy + dy, s, -1, c->sign, NULL);
      if (c->sign * g > c->sign * bg) bg = g;
    }
  c->gicov = (float)bg;
  double edge = fmin(fmin(c->xc - roi->x, roi->x + roi->w - 1 - c->xc),
                     fmin(c->yc - roi->y, roi->y + roi->h - 1 - c->yc));
  if (edge < R)
    c->status = LT_CELL_LEFT;
  else if (c->sign * c->gicov < p->lost_fraction * p->gicov_threshold)
    /* contrast gone; next to the border that is the cell leaving */
    c->status = edge < R + p->rstep + 1 ? LT_CELL_LEFT : LT_CELL_LOST;
  else
    c->status = LT_CELL_ACTIVE;
  if (tpl && p->appearance > 0 && c->sign * c->gicov >= p->gicov_threshold) lt_leuk_cell_template(c, img, fw, fh, tpl);
}
