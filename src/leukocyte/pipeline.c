/* pipeline.c - leukocyte mode, the whole run (SPEC 4.1): read frames, detect
 * on the first frame over the ROI, then per frame: track every cell, every
 * --detect-every frames detect again inside the entry ROI and start tracks
 * for cells not already tracked, write rows, end tracks that left the ROI
 * or lost contrast. Stage calls go through the backend's table; no memory
 * management of frames here (the video layer's ring owns them). */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "error.h"
#include "leuk.h"
#include "log.h"
#include "run.h"
#include "tracks.h"
#include "video.h"

#define MAX_CELLS 4096
#define MAX_MAXIMA 65536

volatile sig_atomic_t lt_stop_requested = 0;

enum { ST_DECODE, ST_UPLOAD, ST_DETECT, ST_REFINE, ST_TRACK, ST_OUTPUT, ST_N };
static const char *stage_names[ST_N] = {"decode (wait)", "set_frame", "detect", "refine", "track", "output"};

typedef struct run {
  const lt_options *o;
  const lt_leuk_backend *be;
  void *ctx;
  lt_leuk_params p;
  int fw, fh;
  lt_leuk_cell *cells;   /* active */
  lt_track_info *act;    /* active, parallel to cells */
  int ncells;
  lt_track_info *done;   /* ended */
  int ndone, capdone;
  int next_id;
  lt_leuk_max *maxima;
  lt_leuk_det *dets;
  double t[ST_N];
  long cell_frames, mgvf_iters, evolve_iters, mgvf_frame_max_sum, evolve_frame_max_sum, track_frames;
  int warned_full;
  double t_first, t_last; /* when the first and the last frame were done */
} run;

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
  return 0;
}

/* Remove ended cells (status != ACTIVE), keeping the order. */
static int compact(run *R)
{
  int k = 0;
  for (int i = 0; i < R->ncells; i++) {
    int st = R->cells[i].status;
    if (st == LT_CELL_ACTIVE) {
      R->cells[k] = R->cells[i];
      R->act[k] = R->act[i];
      k++;
    } else {
      int err = finish_track(R, i, st == LT_CELL_LEFT ? LT_END_LEFT : LT_END_LOST);
      if (err) return err;
    }
  }
  R->ncells = k;
  return 0;
}

static int inside(const lt_rect *r, double x, double y, double rad)
{
  return x - rad >= r->x && y - rad >= r->y && x + rad <= r->x + r->w - 1 && y + rad <= r->y + r->h - 1;
}

/* Detect in roi and start tracks for cells that are not tracked yet. */
static int detect_new(run *R, const lt_rect *roi)
{
  double t0 = lt_now();
  int nm = 0;
  int err = R->be->detect(R->ctx, roi, R->maxima, MAX_MAXIMA, &nm);
  if (err) return err;
  int nc = 0;
  for (int i = 0; i < nm; i++)
    if (fabsf(R->maxima[i].gicov) > R->p.gicov_threshold) R->maxima[nc++] = R->maxima[i];
  double t1 = lt_now();
  R->t[ST_DETECT] += t1 - t0;
  err = R->be->refine(R->ctx, R->maxima, nc, R->dets);
  if (err) return err;
  R->t[ST_REFINE] += lt_now() - t1;
  int first_new = R->ncells;
  for (int i = 0; i < nc; i++) {
    const lt_leuk_det *d = &R->dets[i];
    double rad = R->maxima[i].radius;
    if (!d->ok || !inside(roi, d->x, d->y, rad)) continue;
    int dup = -1;
    for (int j = 0; j < R->ncells; j++) {
      double lim = fmax(rad, R->cells[j].R);
      if (hypot(d->x - R->cells[j].xc, d->y - R->cells[j].yc) < lim) {
        dup = j;
        break;
      }
    }
    if (dup >= first_new) { /* two detections of one cell: keep the stronger */
      if (fabsf(d->gicov) > fabsf(R->cells[dup].gicov)) lt_leuk_cell_init(&R->cells[dup], d, rad);
      continue;
    }
    if (dup >= 0) continue;
    if (R->ncells >= MAX_CELLS) {
      if (!R->warned_full) lt_warn("more than %d cells at once; further detections ignored", MAX_CELLS);
      R->warned_full = 1;
      break;
    }
    lt_leuk_cell_init(&R->cells[R->ncells], d, rad);
    lt_track_info *t = &R->act[R->ncells];
    memset(t, 0, sizeof *t);
    t->id = R->next_id++;
    R->ncells++;
  }
  return 0;
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

static int print_stats(const run *R, lt_outfile *so, int frames, double wall)
{
  FILE *f = so->fp ? so->fp : stderr;
  fprintf(f, "leuktrack stats: backend %s, %d frames, %.3f s, %.1f frames/s\n", R->be->name, frames, wall,
          wall > 0 ? frames / wall : 0.0);
  double steady = R->t_last - R->t_first;
  if (frames > 1 && steady > 0)
    fprintf(f, "after the first frame (start-up excluded): %.1f frames/s\n", (frames - 1) / steady);
  fprintf(f, "%-14s %10s %12s\n", "stage", "total_s", "ms/frame");
  for (int s = 0; s < ST_N; s++)
    fprintf(f, "%-14s %10.4f %12.4f\n", stage_names[s], R->t[s], frames ? 1e3 * R->t[s] / frames : 0.0);
  if (R->cell_frames)
    fprintf(f,
            "cells tracked: %ld cell-frames, mean MGVF iterations %.1f (slowest cell of a frame: %.1f on "
            "average), mean snake iterations %.1f (slowest: %.1f)\n",
            R->cell_frames, (double)R->mgvf_iters / R->cell_frames,
            (double)R->mgvf_frame_max_sum / (R->track_frames ? R->track_frames : 1),
            (double)R->evolve_iters / R->cell_frames,
            (double)R->evolve_frame_max_sum / (R->track_frames ? R->track_frames : 1));
  return so->fp ? lt_out_commit(so) : 0;
}

int lt_leuk_run(const lt_options *o)
{
  run R;
  memset(&R, 0, sizeof R);
  R.o = o;
  R.p = o->leuk;
  lt_video *v = NULL;
  lt_report rep;
  lt_outfile stats_out = {0};
  int rep_open = 0, frames = 0, err;
  double wall0 = lt_now();

  err = lt_video_open(&v, o->input, o->channel, 4);
  if (err) return err;
  R.fw = lt_video_width(v);
  R.fh = lt_video_height(v);
  double fps = o->fps > 0 ? o->fps : lt_video_fps(v);
  int min_side = 2 * (R.p.rmax + 2) + 1;
  if (!o->has_roi) R.p.roi = (lt_rect){0, 0, R.fw, R.fh};
  if (!o->has_entry_roi) R.p.entry_roi = R.p.roi;
  if (R.fw < min_side || R.fh < min_side) {
    lt_error("'%s' is %dx%d px: too small, detection of cells up to radius %d needs at least %dx%d",
             o->input, R.fw, R.fh, R.p.rmax, min_side, min_side);
    err = LT_ERR_INPUT;
    goto out;
  }
  if ((err = validate_rect("roi", &R.p.roi, R.fw, R.fh, min_side)) ||
      (err = validate_rect("entry-roi", &R.p.entry_roi, R.fw, R.fh, min_side)))
    goto out;
  if (fps > 0)
    lt_info("%s: %dx%d, %.3f fps", o->input, R.fw, R.fh, fps);
  else
    lt_info("%s: %dx%d, frame rate unknown (t_s = frame index; give --fps)", o->input, R.fw, R.fh);
  err = lt_backend_leuk(o->backend, o->device, &R.be);
  if (err) goto out;
  R.cells = calloc(MAX_CELLS, sizeof *R.cells);
  R.act = calloc(MAX_CELLS, sizeof *R.act);
  R.maxima = malloc(sizeof *R.maxima * MAX_MAXIMA);
  R.dets = malloc(sizeof *R.dets * MAX_MAXIMA);
  if (!R.cells || !R.act || !R.maxima || !R.dets) {
    lt_error("out of memory");
    err = LT_ERR_NOMEM;
    goto out;
  }
  err = R.be->create(&R.ctx, &R.p, R.fw, R.fh, MAX_CELLS);
  if (err) goto out;
  lt_options oo = *o;
  oo.leuk = R.p;
  if (o->stats && o->stats[0] && (err = lt_out_open(&stats_out, o->stats))) goto out;
  err = lt_report_open(&rep, o, R.fw, R.fh, fps);
  if (err) goto out;
  rep_open = 1;
  rep.o = &oo;

  int progress = o->progress >= 0 ? o->progress : isatty(2);
  if (o->verbosity < 0) progress = 0;
  double last_progress = 0;
  int first = -1;
  for (;;) {
    if (lt_stop_requested) {
      lt_error("interrupted after %d frames", frames);
      err = LT_ERR_INTERRUPTED;
      goto out;
    }
    const lt_frame *f;
    double t0 = lt_now();
    int got = lt_video_next(v, &f);
    R.t[ST_DECODE] += lt_now() - t0;
    if (got < 0) {
      err = got;
      goto out;
    }
    if (got == 0) break;
    if (f->index < o->frame_begin) continue;
    if (o->frame_end >= 0 && f->index >= o->frame_end) break;
    double tu = lt_now();
    if ((err = R.be->set_frame(R.ctx, f->grey, f->grey8))) goto out;
    const lt_frame *nf; /* the next frame, when decoded already, may travel during this one's work */
    if (R.be->prefetch && lt_video_peek(v, &nf) == 1 && (o->frame_end < 0 || nf->index < o->frame_end) &&
        (err = R.be->prefetch(R.ctx, nf->grey, nf->grey8)))
      goto out;
    R.t[ST_UPLOAD] += lt_now() - tu;
    if (first < 0) {
      first = f->index;
      if ((err = detect_new(&R, &R.p.roi))) goto out;
    } else {
      double t1 = lt_now();
      if ((err = R.be->track(R.ctx, R.cells, R.ncells))) goto out;
      R.t[ST_TRACK] += lt_now() - t1;
      int fmax = 0, emax = 0;
      for (int i = 0; i < R.ncells; i++) {
        R.mgvf_iters += R.cells[i].mgvf_iter;
        R.evolve_iters += R.cells[i].evolve_iter;
        if (R.cells[i].mgvf_iter > fmax) fmax = R.cells[i].mgvf_iter;
        if (R.cells[i].evolve_iter > emax) emax = R.cells[i].evolve_iter;
      }
      R.mgvf_frame_max_sum += fmax; /* a frame waits for its slowest cell */
      R.evolve_frame_max_sum += emax;
      R.track_frames++;
      R.cell_frames += R.ncells;
      if ((err = compact(&R))) goto out;
      if ((f->index - first) % R.p.detect_every == 0 && (err = detect_new(&R, &R.p.entry_roi))) goto out;
    }
    double t2 = lt_now();
    if ((err = lt_report_frame(&rep, f->index, f->t_s, R.cells, R.act, R.ncells))) goto out;
    if (o->overlay_dir &&
        (err = lt_report_overlay(&oo, f->index, f->grey, R.fw, R.fh, R.cells, R.act, R.ncells)))
      goto out;
    R.t[ST_OUTPUT] += lt_now() - t2;
    frames++;
    R.t_last = lt_now();
    if (frames == 1) R.t_first = R.t_last;
    if (progress && lt_now() - last_progress > 0.25) {
      last_progress = lt_now();
      fprintf(stderr, "\rleuktrack: frame %d, %d cells, %.1f frames/s ", f->index, R.ncells,
              frames / (last_progress - wall0));
    }
  }
  if (progress) fputc('\n', stderr);
  char endbuf[16];
  if (frames == 0) {
    lt_error("'%s': no frames in the range --frames %d:%s (the video has fewer frames)", o->input,
             o->frame_begin, o->frame_end >= 0 ? (snprintf(endbuf, sizeof endbuf, "%d", o->frame_end), endbuf) : "");
    err = LT_ERR_INPUT;
    goto out;
  }
  for (int i = 0; i < R.ncells; i++)
    if ((err = finish_track(&R, i, LT_END_VIDEO))) goto out;
  R.ncells = 0;
  if (R.ndone > 1) qsort(R.done, R.ndone, sizeof *R.done, by_id);
  err = lt_report_finish(&rep, R.done, R.ndone);
  rep_open = 0;
  if (!err) lt_info("%d frames, %d tracks", frames, R.ndone);
  if (!err && o->stats) err = print_stats(&R, &stats_out, frames, lt_now() - wall0);

out:
  if (rep_open) lt_report_abort(&rep);
  lt_out_abort(&stats_out, 0);
  for (int i = 0; i < R.ndone; i++) lt_track_free(&R.done[i]);
  for (int i = 0; i < R.ncells; i++) lt_track_free(&R.act[i]);
  free(R.done);
  if (R.be && R.ctx) R.be->destroy(R.ctx);
  free(R.cells);
  free(R.act);
  free(R.maxima);
  free(R.dets);
  lt_video_close(v);
  return err;
}
