/* leuk_mode.h - the leukocyte mode's own options (its row of the mode table
 * is lt_mode_leukocyte, mode.c) and its run. */
#ifndef LT_LEUK_MODE_H
#define LT_LEUK_MODE_H

#include "leuk.h"
#include "mode.h"

enum { LT_FORMAT_CSV = 0, LT_FORMAT_TRACKMATE, LT_FORMAT_CTC };

typedef struct lt_leuk_opts {
  lt_leuk_params leuk;
  int has_roi, has_entry_roi;
  int has_radius, has_search; /* --radius / --search given (not with their um forms) */
  double radius_um[2];   /* --cell-radius-um MIN:MAX, um; 0 = not given */
  double search_um;      /* --search-um D, um per frame; 0 = not given */
  double max_speed_um_s; /* --max-speed-um-s V, um/s; 0 = not given */
  int format;            /* LT_FORMAT_* */
  const char *summary;   /* --summary FILE or NULL */
  double um_per_px;      /* 0 = not given */
  double adherent_speed; /* --adherent-speed, um/s (px/frame without a scale and frame rate); default 2 */
  double adherent_time;  /* --adherent-time, s (frames without a frame rate); default 10 */
  const char *overlay_video; /* --overlay-video FILE.mp4|.mkv or NULL */
  int overlay_tail;      /* --overlay-tail N: frames of each track's path drawn; default 10, 0 = none */
  int overlay_grey_bits; /* --overlay-grey-bits N: grey levels kept in the overlay PNGs (lt_canvas_write_png); default 8 */
} lt_leuk_opts;

extern const lt_mode lt_mode_leukocyte;

/* The distances given in um (--cell-radius-um, --search-um,
 * --max-speed-um-s) into the px parameters of o->leuk, once at start-up,
 * with o->um_per_px the pixel size (0: unknown) and fps the frame rate (0:
 * unknown). Returns 0, or LT_ERR_USAGE after one message when a scale they
 * need is unknown or a converted value is out of the px option's range. */
int lt_leuk_um_to_px(lt_leuk_opts *o, double fps);

/* The run (pipeline.c): the frame loop with the leukocyte steps. */
int lt_leuk_run(const lt_settings *s, const void *opts);

#endif
