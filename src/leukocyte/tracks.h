/* tracks.h - the leukocyte run's bookkeeping and its writers: per-frame CSV
 * rows, TrackMate XML, Cell Tracking Challenge res_track.txt, the per-track
 * summary CSV, the velocity histogram, the overlay PNGs and video (report.c). */
#ifndef LT_TRACKS_H
#define LT_TRACKS_H

#include <stdint.h>
#include <stdio.h>

#include "core/loop.h"
#include "leuk.h"
#include "leuk_mode.h"
#include "outfile.h"
#include "rows.h"
#include "vidout.h"

enum { LT_END_ACTIVE = 0, LT_END_LEFT, LT_END_LOST, LT_END_VIDEO };
#define LT_TRACK_ENDS 3

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
  /* CTC: the track's gap-free segments (a gap = frames the track was kept
   * unwritten, --link-gap): label, begin, end each; the first segment's
   * label is id + 1, later ones count down from 65535 (parent = the
   * segment before). */
  int *segs, nsegs, cap_segs;
  double maxspeed;           /* px/frame, largest step speed */
  double firstx, firsty;     /* position in the first tracked frame, px */
  /* positions (x, y) of its first LT_TRACK_ENDS tracked frames, and of its
   * last ones as a ring (frame k at k % LT_TRACK_ENDS): --hold's median
   * ends (pipeline.c, judge) */
  double head[2 * LT_TRACK_ENDS], tail[2 * LT_TRACK_ENDS];
  /* --hold: 1 while the track's rows are held back (not judged yet), 0
   * shown, -1 hidden (static background: none of its rows are written);
   * its best |GICOV| while held */
  int hold;
  double hold_gicov;
  /* > 0: the track started in the first frame on a circle under the
   * threshold for new cells, this one (faint_first), or by an early
   * detection (detect_early) on a circle of this |GICOV|: it is written only
   * if it scores above it while held */
  double faint_thr;
  /* --motion (pipeline.c, motion_check): -1, or the track's cell was found
   * on the frame less the background and scores under the threshold on the
   * frame: frames in a row it has not shown on that difference since; the
   * frames it showed there; 1 when it was ended for not showing */
  int motion_miss, motion_seen, motion_lost;
} lt_track_info;

typedef struct lt_report {
  const lt_settings *s;
  const lt_leuk_opts *lo;
  const char *input;
  int width, height;
  double fps;                /* 0 = unknown */
  lt_loop *L;
  lt_outfile *out;           /* owned (committed) by the frame loop */
  lt_outfile *sum;           /* --summary, opened at start so a bad path fails early */
  lt_rows rows;              /* per-frame rows, written by a writer thread */
  int rows_on;
  int next_spot;
  int first_frame, last_frame; /* processed range seen so far (-1: none) */
  char *ctc_dir;             /* --format ctc with -o DIR/: the folder of res_track.txt + masks */
  int ctc_digits;            /* digits of maskTTT.tif (3, 4 once a frame >= 1000 arrives) */
  int next_gap_label;        /* CTC label of the next segment after a gap (65535 down) */
  uint16_t *mask;            /* CTC label image of the frame being written (writer thread) */
  int mask_err;              /* first mask write error (writer thread) */
  char *ctc_track_path;      /* DIR/res_track.txt */
  char *pop_path;            /* --summary's population CSV (<summary>_population.csv) */
  lt_outfile *pop;
  /* overlays (--overlay, --overlay-video) */
  lt_vidout *video;
  int ov_ids;                /* track ids 0..ov_ids-1 have room below */
  int *ov_colour;            /* per track id: lt_track_colour index, -1 = not shown yet */
  int *ov_count;             /* per track id: positions recorded */
  double *ov_tail;           /* per track id: a ring of overlay_tail (x, y, frame) */
  double *ov_xy;             /* this frame's centres (colour choice), 2 per cell */
  int *ov_col, ov_cap;
  /* --hold: the rows of the last `hold` frames, not handed to the writer
   * yet (a ring), and the track ids hidden (their rows are dropped) */
  int hold;
  lt_rows_slot *held;
  int held_head, held_count;
  unsigned char *hidden;
  int hidden_cap;
} lt_report;

/* Opens -o and --summary through the loop (which commits them) and the
 * overlay folder; writes the format's header. */
int lt_report_open(lt_report *r, lt_loop *L, const lt_settings *s, const lt_leuk_opts *lo, const char *input,
                   int width, int height, double fps);
/* Rows of one frame: n active cells with their infos (already updated).
 * With --hold N the rows reach the writer N frames later, without those of
 * the tracks hidden by then. */
int lt_report_frame(lt_report *r, int frame, double t_s, const lt_leuk_cell *cells,
                    lt_track_info *info, int n);
/* Track `id` is static background: none of its rows are written (those
 * held back are dropped). 0 or LT_ERR_NOMEM. */
int lt_report_hide(lt_report *r, int id);
/* Every track is written after all (a run shorter than --hold frames,
 * whose rows are all still held). */
void lt_report_unhide(lt_report *r);
/* Overlay of one frame (grey: the frame as floats): frame_NNNNNN.png in
 * --overlay DIR and/or a frame of --overlay-video. Contours and centres in
 * each track's colour (lt_pick_colour: neighbours differ), the track's path
 * over the last --overlay-tail frames, IDs and the frame banner in text
 * with a dark halo, IDs kept inside the frame and off the banner. */
int lt_report_overlay(lt_report *r, int frame, const float *grey, const lt_leuk_cell *cells,
                      const lt_track_info *info, int n);
/* Success: finish formats that need the whole run (trackmate tracks, ctc),
 * write the summary and histogram (the loop commits the files). */
int lt_report_finish(lt_report *r, lt_track_info *all, int nall);
/* Interrupt or error: stop the writer; -o keeps NAME.partial with the
 * complete rows so far (csv). */
void lt_report_abort(lt_report *r);

/* Frees what lt_report_open allocated (after the loop committed the files). */
void lt_report_free(lt_report *r);

/* Append a speed sample / spot id (grows arrays); 0 or LT_ERR_NOMEM. */
int lt_track_add(lt_track_info *t, int frame, double x, double y, double radius, int spot_id);
void lt_track_free(lt_track_info *t);

#endif
