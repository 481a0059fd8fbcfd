/* loop.h - the shared frame loop every mode runs in.
 *
 * lt_loop_run opens the source of frames (source.h: video, image pair or
 * sequence), calls the mode's begin, then one step per frame (or per
 * consecutive frame pair) inside --frames A:B, and end on success. It owns
 * what every mode shares: the decode thread and ring (through the source),
 * the progress line (frames/s and ETA, only on a terminal unless
 * --progress), the --stats table (decode wait + the mode's stages), the
 * SIGINT/SIGTERM stop (checked after every step: the mode's abort keeps its
 * .partial files), and the outputs: files opened with lt_loop_output are
 * committed (renamed into place) together after end succeeded, or kept as
 * NAME.partial / removed on failure. A mode supplies an lt_steps table. */
#ifndef LT_LOOP_H
#define LT_LOOP_H

#include <signal.h>
#include <stdio.h>

#include "mode.h"
#include "outfile.h"
#include "video.h"

/* Set by main's SIGINT/SIGTERM handler; the loop stops after the current step. */
extern volatile sig_atomic_t lt_stop_requested;

typedef struct lt_loop lt_loop;

typedef struct lt_source_info {
  const char *name;   /* the (first) input path */
  int width, height;
  double fps;         /* --fps, else the container's or the TIFF metadata's, else 0 (unknown) */
  double um_per_px;   /* pixel size from a TIFF stack's metadata, 0 = unknown */
  const char *um_per_px_from; /* where um_per_px came from ("the TIFF's ImageJ metadata"), or NULL */
} lt_source_info;

typedef struct lt_steps {
  int pairs;                       /* 0: one frame per step; 1: (previous, current) pairs */
  const char *const *stage_names;  /* the mode's stages in --stats */
  int nstages;
  /* After the source opened: validate sizes, pick the backend, allocate,
   * open outputs. On failure it cleans up after itself (abort not called). */
  int (*begin)(void *m, lt_loop *L, const lt_source_info *in);
  /* One frame (prev = NULL) or one pair (prev = the frame before f). */
  int (*step)(void *m, lt_loop *L, const lt_frame *f, const lt_frame *prev);
  /* After the last step: write what needs the whole run. The loop then
   * commits every lt_loop_output. */
  int (*end)(void *m, lt_loop *L, int steps);
  /* Error or interrupt after begin succeeded: stop helper threads, mark
   * which outputs keep a .partial (lt_loop_keep_partial). May be NULL. */
  void (*abort)(void *m, lt_loop *L);
  /* Optional: extra lines for --stats, and a short progress text ("44 cells"). */
  void (*stats)(void *m, FILE *f, int steps);
  void (*progress)(void *m, char *buf, size_t n);
  /* Optional: the backend's name for --stats. */
  const char *(*backend_name)(void *m);
} lt_steps;

/* Runs the whole loop. Returns 0 or a negative lt_err (reported). */
int lt_loop_run(const lt_settings *s, const lt_steps *st, void *m);

/* Adds seconds to the mode's stage k (0-based in stage_names). */
void lt_loop_time(lt_loop *L, int k, double seconds);
/* The frame after the current one when already decoded and inside
 * --frames (never waits): 1 and *f, else 0. */
int lt_loop_peek(lt_loop *L, const lt_frame **f);
/* Opens an output that the loop commits after end (in the order opened) or
 * aborts on failure. path NULL or "-" = stdout. Returns the file or NULL
 * after an error message (*err set). */
lt_outfile *lt_loop_output(lt_loop *L, const char *path, int *err);
/* On abort, keep this output's rows as NAME.partial (default: removed). */
void lt_loop_keep_partial(lt_loop *L, lt_outfile *o, int keep);
/* The mode reads only the bytes of 8-bit frames (grey8; a GPU backend
 * without overlays): the decode thread skips their float copy, and such
 * frames come with grey = NULL. */
void lt_loop_bytes_only(lt_loop *L);
/* The memory map the input's 8-bit frames come from (lt_video_map; it
 * lives until the loop closes the input, after the mode's end): 1, or 0. */
int lt_loop_map(const lt_loop *L, const void **base, size_t *size);
/* Pairs: the mode reads the previous frame's pixels only in the first pair
 * (it keeps its own copy of the last frame after that): from the second
 * pair on, prev carries only index, t_s and the size (grey and grey8 NULL),
 * and the loop no longer copies the frame's pixels after every step. */
void lt_loop_prev_index_only(lt_loop *L);
/* The common settings of the run. */
const lt_settings *lt_loop_settings(const lt_loop *L);

#endif
