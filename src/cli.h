/* cli.h - the command line: one option table drives getopt_long, --help and
 * the man-page check (tests/test_cli.sh). */
#ifndef LT_CLI_H
#define LT_CLI_H

#include "leuk.h"
#include "video.h"

enum { LT_BACKEND_AUTO = 0, LT_BACKEND_CPU, LT_BACKEND_CUDA };
enum { LT_FORMAT_CSV = 0, LT_FORMAT_TRACKMATE, LT_FORMAT_CTC };

typedef struct lt_options {
  const char *mode;        /* "leukocyte" */
  const char *input;
  const char *output;      /* NULL or "-" = stdout */
  const char *overlay_dir;
  const char *summary;
  const char *stats;       /* NULL = off, "" = stderr, else a file */
  int frame_begin, frame_end; /* [begin, end), end < 0 = to the end */
  int backend, device, threads;
  int progress;            /* -1 = auto (stderr is a terminal) */
  int verbosity;
  int format;
  lt_channel channel;
  int has_roi, has_entry_roi;
  double um_per_px;        /* 0 = not given */
  double fps;              /* 0 = from the container */
  lt_leuk_params leuk;
} lt_options;

/* Parses argv into *o. Returns 0 to run, 1 when --help/--version was
 * printed (exit 0), or LT_ERR_USAGE after one message. */
int lt_cli_parse(int argc, char **argv, lt_options *o);

#endif
