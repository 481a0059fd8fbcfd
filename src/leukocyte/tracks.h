/* tracks.h - the leukocyte run's bookkeeping and its writers: per-frame CSV
 * rows, TrackMate XML, Cell Tracking Challenge res_track.txt, the per-track
 * summary CSV, the velocity histogram and the overlay PNGs (report.c). */
#ifndef LT_TRACKS_H
#define LT_TRACKS_H

#include <pthread.h>
#include <stdio.h>

#include "cli.h"
#include "leuk.h"
#include "outfile.h"

enum { LT_END_ACTIVE = 0, LT_END_LEFT, LT_END_LOST, LT_END_VIDEO };

/* History of one track (what the summary and the formats need; no frames). */
typedef struct lt_track_info {
  int id;
  int first, last, nframes;
  double path;               /* px */
  double sum_radius;
  double lastx, lasty;
  double *speeds;            /* px/frame between consecutive tracked frames */
  int nspeeds, cap_speeds;
  int *spot_ids;             /* trackmate spot ids, one per tracked frame */
  int end;                   /* LT_END_* */
} lt_track_info;

/* One frame's rows waiting for the writer thread. */
typedef struct lt_report_row {
  int id, spot;
  double x, y, radius;
  float gicov;
} lt_report_row;
typedef struct lt_report_slot {
  int frame, n, cap;
  double t_s;
  lt_report_row *rows;
} lt_report_slot;
#define LT_REPORT_SLOTS 16

typedef struct lt_report {
  const lt_options *o;
  int width, height;
  double fps;                /* 0 = unknown */
  lt_outfile out;
  lt_outfile sum;            /* --summary, opened at start so a bad path fails early */
  int next_spot;
  int frames_written;        /* frames handed to the writer (all written once it is joined) */
  /* The rows are formatted and written by a writer thread (a few frames
   * behind the tracking, in order); without it (it could not start) the
   * frame call writes them itself. */
  pthread_t writer;
  int writer_on;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lt_report_slot slots[LT_REPORT_SLOTS];
  int head, count, stop, werr; /* under mu */
} lt_report;

int lt_report_open(lt_report *r, const lt_options *o, int width, int height, double fps);
/* Rows of one frame: n active cells with their infos (already updated). */
int lt_report_frame(lt_report *r, int frame, double t_s, const lt_leuk_cell *cells,
                    lt_track_info *info, int n);
/* Overlay PNG of one frame. */
int lt_report_overlay(const lt_options *o, int frame, const float *grey, int w, int h,
                      const lt_leuk_cell *cells, const lt_track_info *info, int n);
/* Success: finish formats that need the whole run (trackmate tracks, ctc),
 * commit the output, write the summary and histogram. */
int lt_report_finish(lt_report *r, lt_track_info *all, int nall);
/* Interrupt or error: keep NAME.partial with the complete rows so far. */
void lt_report_abort(lt_report *r);

/* Append a speed sample / spot id (grows arrays); 0 or LT_ERR_NOMEM. */
int lt_track_add(lt_track_info *t, int frame, double x, double y, double radius, int spot_id);
void lt_track_free(lt_track_info *t);

#endif
