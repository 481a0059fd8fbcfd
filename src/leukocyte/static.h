/* static.h - the static test of new detections (--static-span, static.c):
 * copies of earlier frames, and whether a circle is as it was in one of
 * them. Used by the pipeline of both backends (it runs on the host). */
#ifndef LT_LEUK_STATIC_H
#define LT_LEUK_STATIC_H

#include "leuk.h"

typedef struct lt_leuk_static {
  int fw, fh, span;
  double ratio;            /* static_ratio */
  lt_rect roi;             /* the medians' sample grid covers it */
  float *snap[2];          /* copies of earlier frames (frames that are not 8-bit) */
  unsigned char *snap8[2]; /* ... as bytes (8-bit frames: snap8[k] when is8[k]) */
  int is8[2];
  int snap_frame[2];       /* their indices, -1: none */
  int noise_frame[2];      /* the frame whose noise and offset against copy k are known, -1: none */
  double noise[2], offset[2];
  float *samples;          /* scratch of the medians of frames that are not 8-bit */
  int frame;               /* the frame being processed: index, pixels (cur8 NULL unless 8-bit) */
  const float *cur;
  const unsigned char *cur8;
} lt_leuk_static;

/* Sets up S for fw x fh frames, the medians over roi, a copy every span
 * frames (span 0: no copies, nothing allocated, lt_leuk_static_unchanged
 * always 0), static_ratio ratio. Returns 0 or LT_ERR_NOMEM after one
 * message. */
int lt_leuk_static_init(lt_leuk_static *S, int fw, int fh, const lt_rect *roi, int span, double ratio);
void lt_leuk_static_free(lt_leuk_static *S);
/* The frame the next calls work on: its index and pixels (cur, or NULL and
 * cur8; cur8, when not NULL, holds the same pixels as bytes). */
void lt_leuk_static_frame(lt_leuk_static *S, int index, const float *cur, const unsigned char *cur8);
/* Is the circle (x, y, rad) as it was in one of the two copies kept (see
 * static.c)? 1 or 0. */
int lt_leuk_static_unchanged(lt_leuk_static *S, double x, double y, double rad);
/* After the frame's work: keeps a copy of it every span frames. */
void lt_leuk_static_keep(lt_leuk_static *S);

/* The median of v[0..n) (reorders v), n > 0: the same value as sorting and
 * taking the middle one (the mean of the two middle ones for even n), in
 * O(n). */
double lt_leuk_median(float *v, int n);

#endif
