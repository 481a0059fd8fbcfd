/* pipeline.c - leukocyte mode, the steps of the run (SPEC 4.1) inside the
 * shared frame loop (core/loop.h): begin validates the frame size and ROIs,
 * picks the backend and opens the outputs; per frame: detect on the first
 * frame over the ROI, then track every cell, every --detect-every frames
 * detect again inside the entry ROI, and on the other frames inside the
 * band(s) of the entry ROI that cells enter through (issue 15; a single
 * band's detection is queued before the tracking when the backend splits
 * detect in two halves), start tracks for cells not already tracked, write
 * rows, end tracks that left the ROI; a track that lost contrast is kept,
 * unwritten, for up to --link-gap frames and continues under its id when the
 * cell is found again (by its own tracking or by a detection at its place);
 * end writes what needs the whole run. Detections of new cells need |GICOV|
 * above a threshold that adapts to the background at every full detection
 * (--gicov-adapt; in the first frame lower on a clean background, and a
 * track started there under the threshold is written only if it scores above
 * it while held; on the --detect-early frames after the first the entry ROI
 * is detected again for new tracks only, each written only if it scores
 * above its start while held); a detection counts when its circle is inside the region
 * (its refined contour may cross the frame's border); a detection of a
 * larger, stronger circle on a track gives it its whole cell; a detection
 * where a cell just left starts nothing, nor one whose disc is as it was in
 * an earlier frame (--static-span: a static background structure); a track
 * that the tracking moved far off its prediction is checked there, on the
 * host (--recheck: a stronger circle near the prediction is the cell); with
 * --motion the same detections run again on the frame less a background of
 * earlier frames (motion.c; made here, handed to the backend as its frame;
 * the tracked cells kept out of its background), for faint cells that move
 * over static texture, and a track so found that stops showing there has
 * left its cell (motion_check); of two tracks on one cell, the one that
 * jumped off its prediction ends. A new track's rows are held back for
 * --hold frames (report.c): one that stayed put (by its ends, or by the
 * medians of its first and last three positions) and never scored clearly in
 * them is static background and is never written (judge()); a cell that
 * passes over such a track's structure gets a track of its own. The
 * distances may be given in um (mode.c converts them in begin, once the
 * pixel size is known). Stage calls go through the backend's table; frames
 * belong to the loop's source (no frame memory here), so both backends get
 * these steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "core/loop.h"
#include "error.h"
#include "leuk.h"
#include "leuk_mode.h"
#include "log.h"
#include "motion.h"
#include "static.h"
#include "tracks.h"

#define MAX_CELLS 4096
#define MAX_MAXIMA 65536

enum { ST_UPLOAD, ST_DETECT, ST_REFINE, ST_TRACK, ST_OUTPUT, ST_N };
static const char *const stage_names[ST_N] = {"set_frame", "detect", "refine", "track", "output"};

typedef struct run {
  const lt_settings *s;
  lt_leuk_opts o;        /* the options, with the ROIs resolved for the frame */
  const lt_leuk_backend *be;
  void *ctx;
  lt_leuk_params p;
  int fw, fh;
  lt_loop *L;
  lt_report rep;
  int rep_open;
  int first;             /* index of the first frame, -1 before it */
  lt_leuk_cell *cells;   /* active */
  lt_track_info *act;    /* active, parallel to cells */
  int *miss;             /* frames since the cell was last found, parallel to cells */
  int *was_lost;         /* compact: the cell was coasting before this frame */
  double *pv;            /* the cell's velocity before this frame's tracking (x, y), parallel */
  lt_leuk_cell *gone;    /* cells whose track ended LEFT in the last link_gap frames */
  int *gone_frame;       /* ... the frame it ended, parallel */
  int ngone;
  int frame;             /* index of the frame being processed */
  int ncells;
  int nshown;            /* cells[0..nshown) are found in this frame (written); the rest coast */
  lt_track_info *done;   /* ended */
  int ndone, capdone;
  int next_id;
  lt_leuk_max *maxima;
  lt_leuk_det *dets;
  float *absg;           /* scratch of the median (adapt_threshold) */
  double thr;            /* |GICOV| a new cell needs (set at each full detection) */
  double thr_faint;      /* ... in the first frame, held (faint_first; else thr) */
  lt_leuk_static st;     /* the static test (--static-span, static.c) */
  lt_leuk_motion mo;     /* the motion cue (--motion, motion.c) */
  double thr_m;          /* |GICOV| a new cell needs on the frame less the background */
  int mo_full;           /* a full detection on it was made */
  int early;             /* the detection under way is an early one (detect_early): new tracks only */
  const lt_frame *f;     /* the frame being processed */
  lt_stencil stencil;    /* circles of the host-side checks (recheck, motion_gate) */
  float *win;            /* its window of the frame, as floats */
  double *disc;          /* discs of the cells followed (x, y, radius; motion_keep) */
  long cell_frames, mgvf_iters, evolve_iters, mgvf_frame_max_sum, evolve_frame_max_sum, track_frames;
  int warned_full;
  int *tfree, ntfree;    /* --appearance: the backend's free template slots (a stack) */
  float *tplbuf;         /* ... a template being taken */
} run;

/* The median of the n values v[0], v[2], ... (n 1..3; two: their mean). */
static double median_ends(const double *v, int n)
{
  if (n == 1) return v[0];
  if (n == 2) return 0.5 * (v[0] + v[2]);
  return fmax(fmin(v[0], v[2]), fmin(fmax(v[0], v[2]), v[4]));
}

/* How far held track t went: the smaller of its net displacement (last
 * position against first) and the distance between the medians (x and y
 * apart) of its first and last k positions, k = LT_TRACK_ENDS or half its
 * frames when fewer (the two ends never share a frame), times (n - 1) /
 * (n - k) for its n frames (the medians lie k - 1 frames closer together
 * than the ends: a cell's steady motion counts in full). A track on static
 * texture jitters and, for a frame or two, takes a texture maximum or a
 * passing cell beside it: either end may fall on such a frame, the median
 * of three does not (issue 15, tenth pass). */
static double held_moved(const lt_track_info *t)
{
  double net = hypot(t->lastx - t->firstx, t->lasty - t->firsty);
  int k = t->nframes / 2 < LT_TRACK_ENDS ? t->nframes / 2 : LT_TRACK_ENDS;
  if (k < 1) return net;
  double last[2 * LT_TRACK_ENDS]; /* the ring's last k positions */
  for (int j = 0; j < k; j++) {
    const int r = (t->nframes - 1 - j) % LT_TRACK_ENDS;
    last[2 * j] = t->tail[2 * r];
    last[2 * j + 1] = t->tail[2 * r + 1];
  }
  double dx = median_ends(last, k) - median_ends(t->head, k), dy = median_ends(last + 1, k) - median_ends(t->head + 1, k);
  return fmin(net, hypot(dx, dy) * (t->nframes - 1) / (t->nframes - k));
}

/* Judges held track t (--hold): static background when it stayed within
 * hold_move * rmin px of where it started (held_moved: a track on textured
 * background jitters by a few px and comes back, a cell at 0.3 px/frame is
 * 6 px on after 20 frames) and it never scored |GICOV| >=
 * hold_gicov * gicov_threshold while held (a structure of the background
 * whose circle score crossed the threshold, mostly at the first frame, where
 * --static-span cannot test it); then none of its rows are written, else
 * they all are. A track that the video's end cut short (fewer than hold
 * frames) needs to have moved in proportion to its frames: a cell that
 * enters 3 frames before the end has had no time to go 4 px. */
/* A track that must score above faint_thr to be written (a faint start of
 * the first frame, an early detection's start) and has not yet: it may be a
 * maximum of the background that happened to pass the threshold. */
static int faint_unproven(const lt_track_info *t) { return t->faint_thr > 0 && t->hold_gicov <= t->faint_thr; }

static int judge(run *R, lt_track_info *t)
{
  double moved = held_moved(t), need = R->p.hold_move * R->p.rmin;
  if (t->end == LT_END_VIDEO && t->last - t->first + 1 < R->p.hold) /* the video ended: fewer frames to move in */
    need *= (double)(t->last - t->first + 1) / R->p.hold;
  int bg = moved < need && t->hold_gicov < R->p.hold_gicov * R->p.gicov_threshold;
  bg |= t->motion_lost && 2 * t->motion_seen <= t->nframes; /* left its cell for static texture (motion_check) */
  bg |= faint_unproven(t); /* a faint start of the first frame, or an early detection's, never scored clearly */
  t->hold = bg ? -1 : 0;
  return bg ? lt_report_hide(&R->rep, t->id) : 0;
}

static int finish_track(run *R, int i, int end)
{
  if (R->ndone == R->capdone) {
    int cap = R->capdone ? 2 * R->capdone : 64;
    lt_track_info *d = realloc(R->done, sizeof *d * cap);
    if (!d) {
      lt_error("out of memory (track list)");
      return LT_ERR_NOMEM;
    }
    R->done = d;
    R->capdone = cap;
  }
  R->act[i].end = end;
  R->done[R->ndone++] = R->act[i];
  if (R->cells[i].tpl >= 0) { /* its template slot is free again */
    R->tfree[R->ntfree++] = R->cells[i].tpl;
    R->cells[i].tpl = -1;
  }
  return R->act[i].hold == 1 ? judge(R, &R->done[R->ndone - 1]) : 0; /* ended while held */
}

/* --appearance: cell c's template from the frame being processed (a new
 * track, or one that a detection re-started on its cell), centred on its
 * detected centre, when it scores at least the threshold there, as the
 * tracking's refresh asks (track.c, track.cu); else none (all 0: no cue)
 * until a frame where it does. A cell started under the threshold (the
 * adaptive one of a clean background, a faint or early start) is often
 * entering or off its centre: a template of it held a fluorescent cell
 * entering at the border off the cell (synthetic fluo seed 23; docs/ACCURACY.md,
 * twelfth pass). The bytes of an 8-bit frame when there, else the floats
 * (the same values, which the backends track on). */
static int take_template(run *R, lt_leuk_cell *c)
{
  if (!(R->p.appearance > 0)) return 0;
  if (c->tpl < 0 && R->ntfree > 0) c->tpl = R->tfree[--R->ntfree]; /* (a cell has a slot: MAX_CELLS of each) */
  if (c->tpl < 0) return 0;
  float *t = R->tplbuf;
  const lt_frame *f = R->f;
  if (!(c->sign * c->gicov >= R->p.gicov_threshold)) {
    memset(t, 0, sizeof(float) * LT_LEUK_TPL_N);
  } else if (!f->grey8) {
    lt_leuk_cell_template(c, f->grey, R->fw, R->fh, t);
  } else {
    const int cx = (int)lround(c->xc), cy = (int)lround(c->yc);
    for (int i = 0; i < LT_LEUK_TPL_N; i++) {
      const long k = lt_leuk_tpl_at(R->fw, R->fh, cx, cy, i);
      t[i] = k < 0 ? NAN : (float)f->grey8[k];
    }
  }
  return R->be->tpl_set(R->ctx, c->tpl, t);
}

/* Cell j's state anew from detection d (circle radius rad), keeping its
 * velocity and its template slot, with a new template (a track that a
 * detection re-started on its cell). */
static int restart_cell(run *R, int j, const lt_leuk_det *d, double rad)
{
  lt_leuk_cell *c = &R->cells[j];
  const double vx = c->vx, vy = c->vy;
  const int slot = c->tpl;
  lt_leuk_cell_init(c, d, rad);
  c->vx = vx;
  c->vy = vy;
  c->tpl = slot;
  return take_template(R, c);
}

static void move_cell(run *R, int to, int from)
{
  R->cells[to] = R->cells[from];
  R->act[to] = R->act[from];
  R->miss[to] = R->miss[from];
  R->was_lost[to] = R->was_lost[from];
  R->pv[2 * to] = R->pv[2 * from];
  R->pv[2 * to + 1] = R->pv[2 * from + 1];
}

/* How far cell i's tracking put it from its prediction (the change of its
 * velocity), px. */
static double jump(const run *R, int i)
{
  return hypot(R->cells[i].vx - R->pv[2 * i], R->cells[i].vy - R->pv[2 * i + 1]);
}

/* Whether found cell i ends because found cell j is on the same cell (less
 * than half the smaller radius apart): i was coasting before this frame and
 * j was not, else i's tracking put it more than 1 px farther from its
 * prediction (it ran onto the other's cell: a track on a static structure
 * that a cell passes), else i is the younger one (higher id). The distance
 * is tested first, by |dx| and |dy| before hypot (hypot >= both; the
 * negated form keeps a NaN out), since most pairs of a frame are far
 * apart. */
static int ends_on(const run *R, int i, int j)
{
  const lt_leuk_cell *a = &R->cells[i], *b = &R->cells[j];
  double d = 0.5 * fmin(a->R, b->R), dx = a->xc - b->xc, dy = a->yc - b->yc;
  if (j == i || R->miss[i] || R->miss[j]) return 0;
  if (!(fabs(dx) < d && fabs(dy) < d && hypot(dx, dy) < d)) return 0;
  if (R->was_lost[i] != R->was_lost[j]) return R->was_lost[i];
  if (fabs(jump(R, i) - jump(R, j)) > 1) return jump(R, i) > jump(R, j);
  return R->act[j].id < R->act[i].id;
}

/* The square of half side m around (ix, iy), clipped to the frame, as a
 * rect (x0, y0, w, h); 0 when under 3 x 3 px. */
static int window_rect(const run *R, int ix, int iy, int m, lt_rect *r)
{
  int xa = ix - m > 0 ? ix - m : 0, ya = iy - m > 0 ? iy - m : 0;
  int xb = ix + m < R->fw - 1 ? ix + m : R->fw - 1, yb = iy + m < R->fh - 1 ? iy + m : R->fh - 1;
  *r = (lt_rect){xa, ya, xb - xa + 1, yb - ya + 1};
  return r->w >= 3 && r->h >= 3;
}

/* An image's rect r (window_rect) into R->win as floats (r->w x r->h).
 * The image is g8's bytes when there (an 8-bit frame: a GPU backend gets
 * only those), else g's floats (the same values). */
static void copy_window(run *R, const float *g, const unsigned char *g8, const lt_rect *r)
{
  for (int y = 0; y < r->h; y++)
    for (int x = 0; x < r->w; x++) {
      const size_t i = (size_t)(r->y + y) * R->fw + r->x + x;
      R->win[(size_t)y * r->w + x] = g8 ? (float)g8[i] : g[i];
    }
}

/* A found track whose tracking put it more than recheck * rmin px off its
 * prediction (the change of its velocity) is checked there: the best
 * circle of the cell's sign (any radius) within recheck_search px of the
 * prediction; when it scores more than the place the tracking went to, the
 * cell is there (the re-localisation took a background structure within
 * --search px that scored more on the track's radii than the cell). Host
 * side, on the frame's pixels: both backends run it. */
static void recheck(run *R, const lt_frame *f)
{
  const lt_stencil *st = &R->stencil;
  int s = R->p.recheck_search, m = R->p.rmax + 2 + s;
  for (int i = 0; i < R->ncells; i++) {
    lt_leuk_cell *c = &R->cells[i];
    if (c->status == LT_CELL_LEFT || R->miss[i] || R->act[i].nframes < 3 || jump(R, i) <= R->p.recheck * R->p.rmin)
      continue;
    double ox = c->xc - c->vx, oy = c->yc - c->vy; /* where it was */
    double px = ox + R->pv[2 * i], py = oy + R->pv[2 * i + 1];
    int ix = (int)lround(px), iy = (int)lround(py);
    lt_rect r;
    if (!window_rect(R, ix, iy, m, &r)) continue;
    copy_window(R, f->grey, f->grey8, &r);
    const int x0 = r.x, y0 = r.y, w = r.w, h = r.h;
    double best = 0;
    int bx = 0, by = 0, bk = -1;
    for (int dy = -s; dy <= s; dy++)
      for (int dx = -s; dx <= s; dx++)
        for (int k = 0; k < st->nradii; k++) {
          double g = c->sign * lt_gicov_at(R->win, w, h, ix + dx - x0, iy + dy - y0, st, k);
          if (g > best) {
            best = g;
            bx = ix + dx;
            by = iy + dy;
            bk = k;
          }
        }
    if (bk < 0 || best <= c->sign * c->gicov || best < R->thr) continue;
    double qx = bx, qy = by;
    lt_gicov_subpixel(R->win, w, h, bx - x0, by - y0, st, bk, c->sign, best, &qx, &qy);
    const lt_rect *roi = &R->p.roi;
    double rad = st->radius[bk];
    double edge = fmin(fmin(qx - roi->x, roi->x + roi->w - 1 - qx), fmin(qy - roi->y, roi->y + roi->h - 1 - qy));
    if (edge < fmax(rad, c->R)) continue;
    c->xc = qx;
    c->yc = qy;
    c->vx = qx - ox;
    c->vy = qy - oy;
    c->R = rad;
    for (int j = 0; j < LT_LEUK_SNAXELS; j++) c->r[j] = rad;
    c->gicov = (float)(c->sign * best);
    c->status = LT_CELL_ACTIVE;
  }
}

/* The best GICOV of sign `sign` (times the sign) of circle k (radius
 * index) within 1 px of (ix, iy) on the window r held in R->win. */
static double near_score(const run *R, const lt_rect *r, int ix, int iy, int k, int sign)
{
  double best = 0;
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++) {
      double g = sign * lt_gicov_at(R->win, r->w, r->h, ix + dx - r->x, iy + dy - r->y, &R->stencil, k);
      if (g > best) best = g;
    }
  return best;
}

/* The motion cue's host-side scores of circle k (radius index) of sign
 * `sign` within 1 px of (x, y): on the frame itself (what a detection on
 * the frame less the background scores where it is: the cell there, or 0
 * or the other sign where a cell was and the background has it), or on
 * that difference (a cell that moves shows there, static texture does
 * not). On the window of half side radius + 3 around it: lt_gicov_at needs
 * the circle and 1 px inside the window as inside the frame, so any larger
 * window gives the same scores. Host side, both backends. */
enum { ON_FRAME, ON_DIFF };
static double motion_score(run *R, int on, double x, double y, int k, int sign)
{
  int ix = (int)lround(x), iy = (int)lround(y), m = R->stencil.radius[k] + 3;
  lt_rect r;
  if (!window_rect(R, ix, iy, m, &r)) return 0;
  if (on == ON_DIFF) {
    const unsigned char *b8; /* diff and its bytes kept alike (a backend may read either) */
    lt_leuk_motion_diff(&R->mo, &r, &b8);
    copy_window(R, R->mo.diff, NULL, &r);
  } else {
    copy_window(R, R->f->grey, R->f->grey8, &r);
  }
  return near_score(R, &r, ix, iy, k, sign);
}

/* A track that the motion cue found and that scores under the threshold
 * for new cells on the frame (the frame alone would not have started it)
 * must go on showing on the frame less the background: its tracking, on
 * the frame, can leave a faint cell for static texture, where the
 * difference is flat. After motion_miss frames in a row without it (|GICOV|
 * of its sign under motion_gate within 1 px) the track ends (not coasting:
 * its tracking would find the texture again); while still held (--hold)
 * it is not written when it showed there in at most half of its frames
 * (judge()). Its cell, when the cue finds it again, gets a new track. */
static void motion_check(run *R)
{
  for (int i = 0; i < R->ncells; i++) {
    lt_leuk_cell *c = &R->cells[i];
    lt_track_info *t = &R->act[i];
    if (t->motion_miss < 0 || c->status != LT_CELL_ACTIVE || R->miss[i]) continue;
    if (fabsf(c->gicov) >= R->thr) {
      t->motion_miss = 0;
      continue;
    }
    int k = (int)lround((c->R - R->p.rmin) / R->p.rstep);
    k = k < 0 ? 0 : k >= R->stencil.nradii ? R->stencil.nradii - 1 : k;
    if (motion_score(R, ON_DIFF, c->xc, c->yc, k, c->sign) >= R->p.motion_gate) {
      t->motion_miss = 0;
      t->motion_seen++;
    } else if (++t->motion_miss >= R->p.motion_miss) {
      c->status = LT_CELL_LOST;
      R->miss[i] = R->p.link_gap; /* ends now (compact) */
      t->motion_lost = 1;
    }
  }
}

/* Remove ended cells, keeping the order: LEFT ends the track; LOST ends it
 * once it has been lost for more than link_gap frames, before that the cell
 * coasts (tracked, not written). A coasting cell that has come onto a cell
 * tracked by another track is ended (that cell has its track). */
static int compact(run *R)
{
  int k = 0;
  for (int i = 0; i < R->ngone; i++) /* forget cells that left more than link_gap frames ago */
    if (R->frame - R->gone_frame[i] <= R->p.link_gap) {
      R->gone[k] = R->gone[i];
      R->gone_frame[k++] = R->gone_frame[i];
    }
  R->ngone = k;
  k = 0;
  for (int i = 0; i < R->ncells; i++) {
    int st = R->cells[i].status, end = 0;
    R->was_lost[i] = R->miss[i] > 0;
    if (st == LT_CELL_ACTIVE)
      R->miss[i] = 0;
    else if (st == LT_CELL_LOST && R->miss[i] < R->p.link_gap)
      R->miss[i]++;
    else
      end = st == LT_CELL_LEFT ? LT_END_LEFT : LT_END_LOST;
    for (int j = 0; !end && R->miss[i] && j < R->ncells; j++)
      if (j != i && R->cells[j].status == LT_CELL_ACTIVE &&
          hypot(R->cells[i].xc - R->cells[j].xc, R->cells[i].yc - R->cells[j].yc) < fmax(R->cells[i].R, R->cells[j].R))
        end = LT_END_LOST;
    if (end == LT_END_LEFT && R->ngone < MAX_CELLS) { /* kept a while: a detection on it is that cell leaving */
      R->gone[R->ngone] = R->cells[i];
      R->gone_frame[R->ngone++] = R->frame;
    }
    if (end) {
      int err = finish_track(R, i, end);
      if (err) return err;
    } else {
      move_cell(R, k++, i);
    }
  }
  R->ncells = k;
  /* two found tracks on one cell: one of them ends (ends_on) */
  k = 0;
  for (int i = 0; i < R->ncells; i++) {
    int dup = 0;
    for (int j = 0; !dup && j < R->ncells; j++)
      dup = ends_on(R, i, j);
    if (dup) {
      int err = finish_track(R, i, LT_END_LOST);
      if (err) return err;
    } else {
      move_cell(R, k++, i);
    }
  }
  R->ncells = k;
  return 0;
}

/* Found cells first (they are written), coasting and hidden ones after;
 * stable. */
static void order_shown(run *R)
{
  lt_leuk_cell c;
  lt_track_info t;
  int k = 0;
  for (int i = 0; i < R->ncells; i++) {
    if (R->miss[i] || R->act[i].hold < 0) continue;
    if (i != k) { /* rotate cell i down to k */
      c = R->cells[i];
      t = R->act[i];
      for (int j = i; j > k; j--) move_cell(R, j, j - 1);
      R->cells[k] = c;
      R->act[k] = t;
      R->miss[k] = 0;
    }
    k++;
  }
  R->nshown = k;
}

/* v[0..n) in ascending order exactly as the insertion sort "move v[a] left
 * while it is < its left neighbour" leaves it (equal values, -0 and +0
 * too, keep their order), each place found by binary search and the block
 * moved at once: with the entry band the flow's medians are taken twice a
 * frame, and the swaps cost ~10 us for ~50 tracks on the H100's host
 * (issue 15). A NaN breaks the order the search needs: then the swaps. */
static void sort_small(double *v, int n)
{
  for (int a = 0; a < n; a++)
    if (v[a] != v[a]) {
      for (int c = 1; c < n; c++)
        for (int b = c; b > 0 && v[b] < v[b - 1]; b--) {
          double t = v[b]; v[b] = v[b - 1]; v[b - 1] = t;
        }
      return;
    }
  for (int a = 1; a < n; a++) {
    const double x = v[a];
    int lo = 0, hi = a; /* the first of v[0..a) above x */
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (x < v[mid]) hi = mid;
      else lo = mid + 1;
    }
    if (lo < a) {
      memmove(v + lo + 1, v + lo, sizeof *v * (size_t)(a - lo));
      v[lo] = x;
    }
  }
}

/* A held track not yet judged that faint_unproven() would hide. */
static int unconfirmed(const lt_track_info *t) { return t->hold == 1 && faint_unproven(t); }

/* Median velocity of the tracks found for at least 3 frames (the flow); 0
 * when fewer than 2 such tracks. Unconfirmed tracks do not count: a static
 * one would pull the flow toward 0 and open the bands of the other sides
 * to detections, and change the velocity that new tracks start with. */
static int flow_velocity(const run *R, double *vx, double *vy)
{
  double xs[64], ys[64];
  int n = 0;
  for (int i = 0; i < R->ncells && n < 64; i++)
    if (!R->miss[i] && R->act[i].nframes >= 3 && !unconfirmed(&R->act[i])) {
      xs[n] = R->cells[i].vx;
      ys[n++] = R->cells[i].vy;
    }
  if (n < 2) return 0;
  sort_small(xs, n);
  sort_small(ys, n);
  *vx = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  *vy = n % 2 ? ys[n / 2] : 0.5 * (ys[n / 2 - 1] + ys[n / 2]);
  return 1;
}

static int inside(const lt_rect *r, double x, double y, double rad)
{
  return x - rad >= r->x && y - rad >= r->y && x + rad <= r->x + r->w - 1 && y + rad <= r->y + r->h - 1;
}

/* The first of the first n cells within max(rad, R) of (x, y), -1 if none:
 * the cell that a detection there is. */
static int cell_at(const run *R, int n, double x, double y, double rad)
{
  for (int j = 0; j < n; j++)
    if (hypot(x - R->cells[j].xc, y - R->cells[j].yc) < fmax(rad, R->cells[j].R)) return j;
  return -1;
}

/* Is (x, y) within max(rad, R) of a cell that left the ROI lately, where it
 * would be now (its last position moved on by its velocity)? A cell leaving
 * across the frame's border still shows a smaller circle inside it. */
static int left_at(const run *R, double x, double y, double rad)
{
  for (int i = 0; i < R->ngone; i++) {
    const lt_leuk_cell *c = &R->gone[i];
    int n = R->frame - R->gone_frame[i];
    if (hypot(x - (c->xc + n * c->vx), y - (c->yc + n * c->vy)) < fmax(rad, c->R)) return 1;
  }
  return 0;
}

/* A detection (circle radius rad, score g) on found cell j that is that cell
 * seen whole: a larger circle scoring more than the cell does now (of either
 * sign: a circle inside a dark rim scores negative, one outside it
 * positive). A track started on a cell still partly outside the frame has a
 * too small radius, which it keeps (the size prior), off the cell's centre. */
static int grown(const run *R, int j, double rad, float g)
{
  return rad >= R->cells[j].R + 2 && fabsf(g) > fabsf(R->cells[j].gicov);
}

/* Track t's cell was found again by a detection, on the frame less the
 * background (motion) or on the frame. */
static void motion_found(lt_track_info *t, int motion)
{
  if (!motion) {
    t->motion_miss = -1;
  } else {
    t->motion_miss = 0;
    t->motion_seen++;
  }
}

/* A new track in slot i for detection d (circle radius rad); with the
 * flow's velocity when known (a new cell moves with the flow until it has
 * its own). */
static int start_track(run *R, int i, const lt_leuk_det *d, double rad, int have_flow, double fvx, double fvy,
                       int motion)
{
  lt_leuk_cell_init(&R->cells[i], d, rad);
  int err = take_template(R, &R->cells[i]);
  if (have_flow) {
    R->cells[i].vx = fvx;
    R->cells[i].vy = fvy;
  }
  R->miss[i] = 0;
  lt_track_info *t = &R->act[i];
  memset(t, 0, sizeof *t);
  t->motion_miss = motion ? 0 : -1;
  t->motion_seen = motion;
  t->id = R->next_id++;
  t->hold = R->p.hold > 0;
  return err;
}

/* An early detection (detect_early: the entry ROI on each of the first
 * frames after the first) is there for cells of the first frame that scored
 * under the threshold there and over it a frame or two later (its contrast
 * against the background changes as it rolls): without it they wait for the next full
 * detection, detect_every frames, and miss a quarter of a 40-frame clip
 * (issue 15, eleventh pass). It leaves the tracks alone (no larger circle for
 * a track, no lost track found again: that waits for the bands and the
 * regular full detection, as without it) and only starts new ones. Each new
 * one is held (--hold) and written only if it scores above its start while
 * held (faint_thr, judge()): a maximum of the background that just passed
 * the threshold was picked for that frame's high score, and regresses; a
 * cell that comes into view goes on showing (R->early: set only around
 * step()'s detect_new of the entry ROI, never for the motion cue's),
 * and it starts none whose circle overlaps one of the first n cells'
 * by more than half the smaller radius: a large cell followed on a smaller
 * circle, off its centre, shows a second circle beside it; touching cells
 * (centres about the sum of the radii apart) are not held back */
static int near_cell(const run *R, int n, double x, double y, double rad)
{
  for (int j = 0; j < n; j++) {
    double a = R->cells[j].R;
    if (hypot(x - R->cells[j].xc, y - R->cells[j].yc) < fmax(rad, a) + 0.5 * fmin(rad, a)) return 1;
  }
  return 0;
}

/* The nm maxima of a detect over roi: those above the threshold that are
 * not on a found cell (or on it grown) are refined (a maximum on a found cell
 * is that cell: no refinement), and start tracks for cells that are not
 * tracked yet, continue the lost track that they fall on, or give a found
 * track its whole cell. */
static int take_maxima(run *R, const lt_rect *roi, int nm, int motion)
{
  double t1 = lt_now();
  int nc = 0;
  /* the first frame: down to the faint threshold (held, judge()) */
  const int faint = !motion && R->frame == R->first && R->thr_faint < R->thr;
  const double thr = motion ? R->thr_m : faint ? R->thr_faint : R->thr;
  for (int i = 0; i < nm; i++) {
    const lt_leuk_max *q = &R->maxima[i];
    if (fabsf(q->gicov) <= thr || left_at(R, q->x, q->y, q->radius)) continue;
    int j = cell_at(R, R->ncells, q->x, q->y, q->radius);
    if (R->early && (j >= 0 || near_cell(R, R->ncells, q->x, q->y, q->radius))) continue;
    if (j < 0 || R->miss[j] || (!motion && grown(R, j, q->radius, q->gicov))) R->maxima[nc++] = *q;
  }
  int err = R->be->refine(R->ctx, R->maxima, nc, R->dets);
  if (err) return err;
  lt_loop_time(R->L, ST_REFINE, lt_now() - t1);
  int first_new = R->ncells;
  double fvx = 0, fvy = 0;
  int have_flow = flow_velocity(R, &fvx, &fvy);
  for (int i = 0; i < nc; i++) {
    const lt_leuk_det *d = &R->dets[i];
    double rad = R->maxima[i].radius;
    /* the detection's circle must be inside roi; its refined contour may
     * cross the frame's border (d->ok 0): the snake starts on that circle
     * and finds no edge beyond the border to pull it in, so an entering
     * cell whose circle fits, centre found to a few tenths of a px, was
     * dropped until the next frame (issue 15, ninth pass) */
    if (!inside(roi, d->x, d->y, rad)) continue;
    int dup = cell_at(R, R->ncells, d->x, d->y, rad);
    lt_leuk_det dm;
    if (motion) { /* on a found cell, or not a cell on the frame itself: nothing; else its score there */
      const int sg = d->gicov >= 0 ? 1 : -1;
      if (dup >= 0 && dup < first_new && !R->miss[dup]) continue;
      const int k = (R->maxima[i].radius - R->p.rmin) / R->p.rstep;
      double fs = motion_score(R, ON_FRAME, d->x, d->y, k, sg);
      if (fs < R->p.motion_gate) continue;
      if (fs < R->thr) { /* faint on the frame: not while its circle is near the ROI's edge */
        const lt_rect *o = &R->p.roi;
        double gap = fmin(fmin(d->x - o->x, o->x + o->w - 1 - d->x), fmin(d->y - o->y, o->y + o->h - 1 - d->y)) - rad;
        if (gap < R->p.motion_edge) continue;
      }
      dm = *d;
      dm.gicov = (float)(sg * fs);
      d = &dm;
    }
    if (R->early && ((dup >= 0 && dup < first_new) || near_cell(R, first_new, d->x, d->y, rad))) continue;
    if (dup >= first_new) { /* two detections of one cell: keep the stronger */
      if (fabsf(d->gicov) > fabsf(R->cells[dup].gicov)) {
        if ((err = restart_cell(R, dup, d, rad))) return err;
        motion_found(&R->act[dup], motion);
        if (fabsf(d->gicov) > R->thr) R->act[dup].faint_thr = 0;
        if (R->early) R->act[dup].faint_thr = fabsf(d->gicov);
      }
      continue;
    }
    if (dup >= 0 && R->miss[dup] && (d->gicov >= 0 ? 1 : -1) == R->cells[dup].sign) {
      /* a lost track's cell found again: the track continues from here */
      if ((err = restart_cell(R, dup, d, R->cells[dup].R))) return err;
      R->miss[dup] = 0;
      motion_found(&R->act[dup], motion);
      continue;
    }
    if (dup >= 0 && !R->miss[dup] && R->act[dup].hold < 0 && grown(R, dup, rad, d->gicov)) {
      /* a cell on a track hidden as static background (--hold): a new
       * track, else it would be followed unseen; the structure's track ends */
      if (R->p.static_span > 0 && lt_leuk_static_unchanged(&R->st, d->x, d->y, rad)) continue;
      if ((err = finish_track(R, dup, LT_END_LOST))) return err;
      if ((err = start_track(R, dup, d, rad, have_flow, fvx, fvy, motion))) return err;
      continue;
    }
    if (dup >= 0 && !R->miss[dup] && grown(R, dup, rad, d->gicov)) {
      /* the whole cell: its track continues with its centre, radius and sign */
      if ((err = restart_cell(R, dup, d, rad))) return err;
      R->act[dup].motion_miss = -1; /* seen on the frame (motion detections skip found cells) */
      continue;
    }
    if (dup >= 0 || (R->p.static_span > 0 && lt_leuk_static_unchanged(&R->st, d->x, d->y, rad))) continue;
    if (R->ncells >= MAX_CELLS) {
      if (!R->warned_full) lt_warn("more than %d cells at once; further detections ignored", MAX_CELLS);
      R->warned_full = 1;
      break;
    }
    if ((err = start_track(R, R->ncells++, d, rad, have_flow, fvx, fvy, motion))) return err;
    if (faint && fabsf(d->gicov) <= R->thr) R->act[R->ncells - 1].faint_thr = R->thr;
    if (R->early) R->act[R->ncells - 1].faint_thr = fabsf(d->gicov); /* it must score more while held */
  }
  return 0;
}

/* The detection threshold from the nm maxima of a full detection: most
 * maxima are background, so their median |GICOV| measures how strongly the
 * background scores; a clean background (synthetic, fluorescence) lowers the
 * threshold to gicov_adapt times it (not under adapt_floor), a textured one
 * (real vessels) keeps gicov_threshold. Fewer than 8 maxima: the threshold. */
static double adapt_threshold(run *R, int nm, double factor)
{
  if (R->p.gicov_adapt <= 0 || nm < 8) return R->p.gicov_threshold;
  for (int i = 0; i < nm; i++) R->absg[i] = fabsf(R->maxima[i].gicov);
  double med = lt_leuk_median(R->absg, nm);
  return fmin(R->p.gicov_threshold, fmax(R->p.adapt_floor, factor * R->p.gicov_adapt * med));
}

/* Detect in roi and start tracks for cells that are not tracked yet; full
 * (the ROI or the entry ROI, not a band): the threshold adapts to it. */
static int detect_new(run *R, const lt_rect *roi, int full, int motion)
{
  double t0 = lt_now();
  int nm = 0;
  int err = R->be->detect(R->ctx, roi, R->maxima, MAX_MAXIMA, &nm);
  if (err) return err;
  lt_loop_time(R->L, ST_DETECT, lt_now() - t0);
  if (full) *(motion ? &R->thr_m : &R->thr) = adapt_threshold(R, nm, 1.0);
  R->thr_faint = R->thr; /* the first frame's: */
  if (full && !motion && R->frame == R->first && R->p.hold > 0 && R->p.faint_first > 0)
    R->thr_faint = adapt_threshold(R, nm, R->p.faint_first);
  return take_maxima(R, roi, nm, motion);
}

/* The motion cue (--motion): the same rects detected again on the frame
 * less the background (motion.c), made here and handed to the backend as
 * its frame; new cells only (the frame itself must show them,
 * motion_score). The backend keeps that frame until the next set_frame. */
static int detect_moving(run *R, const lt_rect *rects, int n, int full)
{
  if (!n || !lt_leuk_motion_ready(&R->mo)) return 0;
  double t0 = lt_now();
  const unsigned char *b8 = NULL;
  for (int k = 0; k < n; k++) lt_leuk_motion_diff(&R->mo, &rects[k], &b8);
  int err = R->be->set_frame(R->ctx, R->mo.diff, b8);
  if (err) return err;
  lt_loop_time(R->L, ST_UPLOAD, lt_now() - t0);
  for (int k = 0; k < n; k++)
    if ((err = detect_new(R, &rects[k], full, 1))) return err;
  return 0;
}

/* The motion cue's copy of the frame (every motion frames), without the
 * discs of the cells being followed (found, not hidden as static
 * background): a cell never enters the background, so it leaves no ghost. */
static void motion_keep(run *R)
{
  int n = 0;
  for (int i = 0; R->disc && i < R->ncells; i++)
    if (!R->miss[i] && R->act[i].hold >= 0) {
      R->disc[3 * n] = R->cells[i].xc;
      R->disc[3 * n + 1] = R->cells[i].yc;
      R->disc[3 * n++ + 2] = R->cells[i].R;
    }
  lt_leuk_motion_keep(&R->mo, R->disc, n);
}

/* The band(s) of the entry ROI that cells enter through, into b[0..3]:
 * the upstream side(s) of the flow (the median velocity of the tracks), all
 * four sides while it is not known; the whole entry ROI when it is too small
 * for bands. A band is as deep as a detection needs for the largest radius
 * (2 (rmax + 2) + 1 px) plus the search radius, so that a cell moving up to
 * that many px per frame is caught fully inside it. Returns the count. */
static int entry_bands(const run *R, lt_rect *b)
{
  const lt_rect *e = &R->p.entry_roi;
  int band = 2 * (R->p.rmax + 2) + 1 + R->p.search;
  if (e->w < 2 * band || e->h < 2 * band) {
    b[0] = *e;
    return 1;
  }
  double vx = 0, vy = 0;
  int side[4] = {1, 1, 1, 1}; /* left, right, top, bottom */
  if (flow_velocity(R, &vx, &vy) && hypot(vx, vy) >= 0.3) {
    double v = hypot(vx, vy);
    side[0] = vx > 0.3 * v;
    side[1] = vx < -0.3 * v;
    side[2] = vy > 0.3 * v;
    side[3] = vy < -0.3 * v;
  }
  const lt_rect all[4] = {{e->x, e->y, band, e->h},
                          {e->x + e->w - band, e->y, band, e->h},
                          {e->x, e->y, e->w, band},
                          {e->x, e->y + e->h - band, e->w, band}};
  int n = 0;
  for (int k = 0; k < 4; k++)
    if (side[k]) b[n++] = all[k];
  return n;
}

static int by_id(const void *a, const void *b)
{
  return ((const lt_track_info *)a)->id - ((const lt_track_info *)b)->id;
}

static int validate_rect(const char *opt, lt_rect *r, int fw, int fh, int min_side)
{
  if ((long)r->x + r->w > fw || (long)r->y + r->h > fh) {
    lt_error("--%s %d,%d,%d,%d extends past the %dx%d frame", opt, r->x, r->y, r->w, r->h, fw, fh);
    return LT_ERR_USAGE;
  }
  if (r->w < min_side || r->h < min_side) {
    lt_error("--%s %d,%d,%d,%d is too small: detection needs at least %dx%d px for radii up to the maximum",
             opt, r->x, r->y, r->w, r->h, min_side, min_side);
    return LT_ERR_USAGE;
  }
  return 0;
}

static void stats(void *m, FILE *f, int frames)
{
  const run *R = m;
  if (R->cell_frames)
    fprintf(f,
            "cells tracked: %ld cell-frames, mean MGVF iterations %.1f (slowest cell of a frame: %.1f on "
            "average), mean snake iterations %.1f (slowest: %.1f)\n",
            R->cell_frames, (double)R->mgvf_iters / R->cell_frames,
            (double)R->mgvf_frame_max_sum / (R->track_frames ? R->track_frames : 1),
            (double)R->evolve_iters / R->cell_frames,
            (double)R->evolve_frame_max_sum / (R->track_frames ? R->track_frames : 1));
}

static void progress(void *m, char *buf, size_t n) { snprintf(buf, n, "%d cells", ((run *)m)->ncells); }

static const char *backend_name(void *m) { return ((run *)m)->be ? ((run *)m)->be->name : "cpu"; }

static int begin(void *m, lt_loop *L, const lt_source_info *in)
{
  run *R = m;
  R->L = L;
  R->fw = in->width;
  R->fh = in->height;
  if (R->o.um_per_px <= 0 && in->um_per_px > 0) { /* --um-per-px overrides */
    R->o.um_per_px = in->um_per_px;
    lt_info("pixel size %g um from %s", in->um_per_px, in->um_per_px_from ? in->um_per_px_from : "the input");
  } else if (R->o.um_per_px > 0) {
    lt_info("pixel size %g um from --um-per-px", R->o.um_per_px);
  }
  int err = lt_leuk_um_to_px(&R->o, in->fps); /* the um options, now that the scale is known */
  if (err) return err;
  R->p = R->o.leuk;
  int min_side = 2 * (R->p.rmax + 2) + 1;
  if (!R->o.has_roi) R->p.roi = (lt_rect){0, 0, R->fw, R->fh};
  if (!R->o.has_entry_roi) R->p.entry_roi = R->p.roi;
  if (R->fw < min_side || R->fh < min_side) {
    lt_error("'%s' is %dx%d px: too small, detection of cells up to radius %d needs at least %dx%d", in->name,
             R->fw, R->fh, R->p.rmax, min_side, min_side);
    return LT_ERR_INPUT;
  }
  if ((err = validate_rect("roi", &R->p.roi, R->fw, R->fh, min_side)) ||
      (err = validate_rect("entry-roi", &R->p.entry_roi, R->fw, R->fh, min_side)))
    return err;
  if (in->fps > 0)
    lt_info("%s: %dx%d, %.3f fps", in->name, R->fw, R->fh, in->fps);
  else
    lt_info("%s: %dx%d, frame rate unknown (t_s = frame index; give --fps)", in->name, R->fw, R->fh);
  const void *stages;
  if ((err = lt_backend_stages("leukocyte", R->s->backend, R->s->device, &lt_leuk_backend_cpu, &stages)))
    return err;
  R->be = stages;
  /* issue 18: the column two-colour SOR MGVF (both backends) with this
   * omega, the default 1.8; 0: Jacobi */
  const char *col = getenv("LT_MGVF_COL");
  if (col && *col) {
    char *end;
    R->p.mgvf_col = strtod(col, &end);
    if (*end || !(R->p.mgvf_col >= 0 && R->p.mgvf_col <= 2)) {
      lt_error("LT_MGVF_COL=%s: expected 0 (Jacobi) or the over-relaxation factor, a number above 0 and at most 2 "
               "(1.8, the default, was measured; it diverges from 2.4)",
               col);
      return LT_ERR_USAGE;
    }
  }
  /* a GPU backend reads the bytes of 8-bit frames; floats only for overlays */
  if (R->be->bytes_ok && !R->s->overlay_dir && !R->o.overlay_video) lt_loop_bytes_only(L);
  R->cells = calloc(MAX_CELLS, sizeof *R->cells);
  R->act = calloc(MAX_CELLS, sizeof *R->act);
  R->miss = calloc(MAX_CELLS, sizeof *R->miss);
  R->was_lost = calloc(MAX_CELLS, sizeof *R->was_lost);
  R->pv = calloc(2 * MAX_CELLS, sizeof *R->pv);
  R->gone = calloc(MAX_CELLS, sizeof *R->gone);
  R->gone_frame = calloc(MAX_CELLS, sizeof *R->gone_frame);
  R->maxima = malloc(sizeof *R->maxima * MAX_MAXIMA);
  R->dets = malloc(sizeof *R->dets * MAX_MAXIMA);
  R->absg = malloc(sizeof *R->absg * MAX_MAXIMA);
  R->thr = R->p.gicov_threshold;
  const size_t ws = 2 * (size_t)(R->p.rmax + 3 + R->p.recheck_search) + 1; /* recheck()'s window side */
  const int host_gicov = R->p.recheck > 0 || R->p.motion > 0; /* recheck() or motion_score() */
  R->win = host_gicov ? malloc(sizeof *R->win * ws * ws) : NULL;
  R->disc = R->p.motion > 0 ? malloc(sizeof *R->disc * 3 * MAX_CELLS) : NULL;
  if ((err = lt_leuk_static_init(&R->st, R->fw, R->fh, &R->p.roi, R->p.static_span, R->p.static_ratio))) return err;
  if ((err = lt_leuk_motion_init(&R->mo, R->fw, R->fh, R->p.motion))) return err;
  if (!R->cells || !R->act || !R->miss || !R->was_lost || !R->pv || !R->gone || !R->gone_frame || !R->maxima || !R->dets ||
      !R->absg || (host_gicov && !R->win) || (R->p.motion > 0 && !R->disc)) {
    lt_error("out of memory");
    return LT_ERR_NOMEM;
  }
  if (R->p.appearance > 0) { /* one template slot per cell the backend is made for */
    R->tfree = malloc(sizeof *R->tfree * MAX_CELLS);
    R->tplbuf = malloc(sizeof *R->tplbuf * LT_LEUK_TPL_N);
    if (!R->tfree || !R->tplbuf) {
      lt_error("out of memory");
      return LT_ERR_NOMEM;
    }
    for (int i = 0; i < MAX_CELLS; i++) R->tfree[i] = MAX_CELLS - 1 - i;
    R->ntfree = MAX_CELLS;
  }
  if ((err = R->be->create(&R->ctx, &R->p, R->fw, R->fh, MAX_CELLS))) return err;
  if (host_gicov && (err = lt_stencil_init(&R->stencil, &R->p))) { /* recheck()'s and motion_score()'s circles only */
    if (err == LT_ERR_USAGE) lt_error("--radius %d:%d: no circle stencils", R->p.rmin, R->p.rmax);
    return err;
  }
  R->o.leuk = R->p;
  if ((err = lt_report_open(&R->rep, L, R->s, &R->o, in->name, R->fw, R->fh, in->fps))) {
    lt_report_abort(&R->rep);
    return err;
  }
  R->rep_open = 1;
  return 0;
}

static int step(void *m, lt_loop *L, const lt_frame *f, const lt_frame *prev)
{
  run *R = m;
  int err;
  R->frame = f->index;
  lt_leuk_static_frame(&R->st, f->index, f->grey, f->grey8);
  lt_leuk_motion_frame(&R->mo, f->grey, f->grey8);
  R->f = f;
  double tu = lt_now();
  if ((err = R->be->set_frame(R->ctx, f->grey, f->grey8))) return err;
  const lt_frame *nf; /* the next frame, when decoded already, may travel during this one's work */
  if (R->be->prefetch && lt_loop_peek(L, &nf) == 1 && (err = R->be->prefetch(R->ctx, nf->grey, nf->grey8)))
    return err;
  lt_loop_time(L, ST_UPLOAD, lt_now() - tu);
  if (R->first < 0) {
    R->first = f->index;
    if ((err = detect_new(R, &R->p.roi, 1, 0))) return err;
    R->thr_m = R->thr;
  } else {
    /* the entry bands of this frame, chosen before the tracking (from the
     * flow of the last frame), or the whole entry ROI every detect_every
     * frames; a backend that detects in two halves runs a single band's or
     * the entry ROI's detection together with the tracking (the detection
     * reads the frame only: the same maxima as after it) */
    lt_rect band[4];
    const int since = f->index - R->first;
    const int full = since % R->p.detect_every == 0;
    const int halves = R->be->detect_start && R->be->detect_end;
    int nband = 0, split = 0;
    if (!full && R->p.entry_band) {
      nband = entry_bands(R, band);
      split = nband == 1 && halves;
    }
    if (full && halves) {
      band[0] = R->p.entry_roi;
      split = 1;
    }
    double t1 = lt_now();
    /* take_maxima refines only maxima over the threshold: a band's is
     * R->thr, the entry ROI's adapts to its maxima (not known yet) */
    if (split && (err = R->be->detect_start(R->ctx, &band[0], full ? 0.0 : R->thr))) return err;
    double t2 = lt_now();
    lt_loop_time(L, ST_DETECT, t2 - t1);
    for (int i = 0; i < R->ncells; i++) {
      R->pv[2 * i] = R->cells[i].vx;
      R->pv[2 * i + 1] = R->cells[i].vy;
    }
    if ((err = R->be->track(R->ctx, R->cells, R->ncells))) return err;
    lt_loop_time(L, ST_TRACK, lt_now() - t2);
    int fmax = 0, emax = 0;
    for (int i = 0; i < R->ncells; i++) {
      R->mgvf_iters += R->cells[i].mgvf_iter;
      R->evolve_iters += R->cells[i].evolve_iter;
      if (R->cells[i].mgvf_iter > fmax) fmax = R->cells[i].mgvf_iter;
      if (R->cells[i].evolve_iter > emax) emax = R->cells[i].evolve_iter;
    }
    R->mgvf_frame_max_sum += fmax; /* a frame waits for its slowest cell */
    R->evolve_frame_max_sum += emax;
    R->track_frames++;
    R->cell_frames += R->ncells;
    if (R->p.recheck > 0) recheck(R, f);
    if (lt_leuk_motion_ready(&R->mo)) { /* the cue's host work counts under set_frame (as its difference) */
      double tm = lt_now();
      motion_check(R);
      lt_loop_time(L, ST_UPLOAD, lt_now() - tm);
    }
    if ((err = compact(R))) return err;
    if (split) {
      int nm = 0;
      t1 = lt_now();
      if ((err = R->be->detect_end(R->ctx, R->maxima, MAX_MAXIMA, &nm))) return err;
      lt_loop_time(L, ST_DETECT, lt_now() - t1);
      if (full) R->thr = adapt_threshold(R, nm, 1.0); /* as detect_new(entry ROI, full) */
      R->thr_faint = R->thr;
      if ((err = take_maxima(R, &band[0], nm, 0))) return err;
    } else if (full) {
      if ((err = detect_new(R, &R->p.entry_roi, 1, 0))) return err;
    } else { /* nband is 0 with --entry-band 0 */
      for (int k = 0; k < nband; k++)
        if ((err = detect_new(R, &band[k], 0, 0))) return err;
    }
    if (!full && since <= R->p.detect_early) {
      /* early: the entry ROI again at the last full detection's threshold,
       * new tracks only (take_maxima); after the bands, so that they work as
       * on any other frame */
      R->early = 1;
      err = detect_new(R, &R->p.entry_roi, 0, 0);
      R->early = 0;
      if (err) return err;
    }
    if (lt_leuk_motion_ready(&R->mo)) { /* the same on the frame less the background; the whole entry ROI the first time */
      const int mfull = full || !R->mo_full;
      err = mfull ? detect_moving(R, &R->p.entry_roi, 1, 1) : detect_moving(R, band, nband, 0);
      if (err) return err;
      R->mo_full |= mfull;
    }
  }
  double tk = lt_now();
  motion_keep(R); /* a copy every motion frames */
  if (R->p.motion > 0) lt_loop_time(L, ST_UPLOAD, lt_now() - tk);
  lt_leuk_static_keep(&R->st); /* a copy every static_span frames */
  order_shown(R);
  double t2 = lt_now();
  if ((err = lt_report_frame(&R->rep, f->index, f->t_s, R->cells, R->act, R->nshown))) return err;
  for (int i = 0; i < R->nshown; i++) { /* held tracks: judged after hold frames */
    lt_track_info *t = &R->act[i];
    if (t->hold != 1) continue;
    t->hold_gicov = fmax(t->hold_gicov, fabsf(R->cells[i].gicov));
    if (f->index - t->first + 1 >= R->p.hold && (err = judge(R, t))) return err;
  }
  if ((R->s->overlay_dir || R->o.overlay_video) &&
      (err = lt_report_overlay(&R->rep, f->index, f->grey, R->cells, R->act, R->nshown)))
    return err;
  lt_loop_time(L, ST_OUTPUT, lt_now() - t2);
  return 0;
}

static int end(void *m, lt_loop *L, int frames)
{
  run *R = m;
  int err;
  for (int i = 0; i < R->ncells; i++)
    if ((err = finish_track(R, i, LT_END_VIDEO))) {
      lt_report_abort(&R->rep);
      return err;
    }
  R->ncells = 0;
  if (frames <= R->p.hold) { /* too short to tell static background from cells: all shown */
    lt_report_unhide(&R->rep);
    for (int i = 0; i < R->ndone; i++) R->done[i].hold = 0;
  }
  int k = 0; /* hidden tracks (--hold) are not reported */
  for (int i = 0; i < R->ndone; i++)
    if (R->done[i].hold < 0) lt_track_free(&R->done[i]);
    else R->done[k++] = R->done[i];
  if (k < R->ndone) lt_info("%d tracks hidden as static background (--hold)", R->ndone - k);
  R->ndone = k;
  if (R->ndone > 1) qsort(R->done, R->ndone, sizeof *R->done, by_id);
  R->rep_open = 0;
  err = lt_report_finish(&R->rep, R->done, R->ndone);
  if (!err) lt_info("%d frames, %d tracks", frames, R->ndone);
  return err;
}

/* An interrupted run keeps its complete frames (FILE.partial) as a complete
 * run over those frames writes them: the tracks still held (--hold) are
 * judged as end() judges them at the video's end before their rows are
 * released (a track that started on the last frame is hidden there too). */
static void abort_run(void *m, lt_loop *L)
{
  run *R = m;
  if (!R->rep_open) return;
  const int frames = R->first >= 0 ? R->frame - R->first + 1 : 0;
  if (frames > R->p.hold) /* else end() shows them all */
    for (int i = 0; i < R->ncells; i++)
      if (R->act[i].hold == 1) {
        lt_track_info t = R->act[i];
        t.end = LT_END_VIDEO;
        if (judge(R, &t)) break; /* out of memory: its rows are kept */
      }
  lt_report_abort(&R->rep);
  R->rep_open = 0;
}

static const lt_steps leuk_steps = {
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

int lt_leuk_run(const lt_settings *s, const void *opts)
{
  run R;
  memset(&R, 0, sizeof R);
  R.s = s;
  R.o = *(const lt_leuk_opts *)opts;
  R.p = R.o.leuk;
  R.first = -1;
  int err = lt_loop_run(s, &leuk_steps, &R);
  for (int i = 0; i < R.ndone; i++) lt_track_free(&R.done[i]);
  for (int i = 0; i < R.ncells; i++) lt_track_free(&R.act[i]);
  free(R.done);
  lt_report_free(&R.rep);
  if (R.be && R.ctx) R.be->destroy(R.ctx);
  free(R.cells);
  free(R.act);
  free(R.miss);
  free(R.was_lost);
  free(R.pv);
  free(R.gone);
  free(R.gone_frame);
  free(R.maxima);
  free(R.dets);
  free(R.absg);
  lt_leuk_static_free(&R.st);
  lt_leuk_motion_free(&R.mo);
  lt_stencil_free(&R.stencil);
  free(R.win);
  free(R.disc);
  free(R.tfree);
  free(R.tplbuf);
  return err;
}
