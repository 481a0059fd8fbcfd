/* motion.h - the motion cue of new detections (--motion, motion.c): a
 * background made of earlier frames, and the frame less it, on which the
 * pipeline detects cells that move (both backends get it as a frame). */
#ifndef LT_LEUK_MOTION_H
#define LT_LEUK_MOTION_H

#include "leuk.h"

#define LT_MOTION_KEYS 5 /* earlier frames kept; the background is their median */
#define LT_MOTION_NONE 1e30f /* a copy's pixel in a tracked cell's disc, or of a copy not kept yet: not in the median */

typedef struct lt_leuk_motion {
  int fw, fh, every;
  float *key[LT_MOTION_KEYS]; /* copies of earlier frames, one every `every` frames (a ring) */
  int nkeys, next;            /* copies kept (up to LT_MOTION_KEYS), the slot of the next */
  int seen;                   /* frames seen (lt_leuk_motion_keep calls) */
  int is8[LT_MOTION_KEYS];    /* the copy came from an 8-bit frame */
  int all8;                   /* every copy kept did */
  float *diff;                /* the frame less the background, + 128 (inside the rects asked for) */
  unsigned char *diff8;       /* ... as bytes (when the frame and every copy are 8-bit) */
  /* the frame being processed (cur8 NULL unless 8-bit) */
  const float *cur;
  const unsigned char *cur8;
} lt_leuk_motion;

/* Sets up M for fw x fh frames, a copy every `every` frames (0: nothing
 * allocated, never ready). Returns 0 or LT_ERR_NOMEM after one message. */
int lt_leuk_motion_init(lt_leuk_motion *M, int fw, int fh, int every);
void lt_leuk_motion_free(lt_leuk_motion *M);
/* The frame the next calls work on (cur, or NULL and cur8). */
void lt_leuk_motion_frame(lt_leuk_motion *M, const float *cur, const unsigned char *cur8);
/* Whether enough copies are kept for a background (3, so that the median
 * drops a cell that was in one or two of them). */
int lt_leuk_motion_ready(const lt_leuk_motion *M);
/* The frame less the background inside r into M->diff (and M->diff8 when
 * the frame and the copies are 8-bit: then *bytes = M->diff8, else NULL):
 * 128 + pixel - the lower median of the copies' pixels (those held; the
 * pixel itself where no copy holds one), clamped to 0..255
 * (GICOV does not see the offset). Pixels outside r keep what they held. */
void lt_leuk_motion_diff(lt_leuk_motion *M, const lt_rect *r, const unsigned char **bytes);
/* After the frame's work: keeps a copy of it every `every` frames, except
 * inside the ndisc discs (x, y, radius triples in disc): there the copy
 * holds nothing (LT_MOTION_NONE; the median is that of the other copies,
 * the frame itself where none holds a value), so that a cell being
 * tracked does not enter the background (where it sat still, the
 * difference would show its ghost, of the other sign, once it moves on). */
void lt_leuk_motion_keep(lt_leuk_motion *M, const double *disc, int ndisc);

#endif
