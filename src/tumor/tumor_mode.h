/* tumor_mode.h - the tumour mode's own options (its row of the mode table is
 * lt_mode_tumor, mode.c) and its run (pipeline.c). */
#ifndef LT_TUMOR_MODE_H
#define LT_TUMOR_MODE_H

#include "mode.h"

/* Templates named on the command line (--template, --templates,
 * --template-from), in the order given; a list file expands in place when
 * the run begins. */
#define LT_TUMOR_MAX_SPECS 256

enum { LT_TSPEC_FILE = 0, LT_TSPEC_LIST, LT_TSPEC_FROM };

typedef struct lt_tumor_spec {
  int kind;          /* LT_TSPEC_* */
  const char *file;  /* FILE (file) or LIST.csv (list); points into argv */
  int file_len;      /* length of the file name in the argument (before '@') */
  int x, y;          /* nominal top-left (file, from) */
  int w, h, frame;   /* --template-from FRAME:X,Y,W,H */
} lt_tumor_spec;

typedef struct lt_tumor_opts {
  lt_tumor_spec spec[LT_TUMOR_MAX_SPECS];
  int nspec;
  int shift_v, shift_h;  /* --shift V,H (default 8,8) */
  int all_templates;     /* --all-templates */
  const char *scores;    /* --scores FILE or NULL */
  const char *plot;      /* --plot FILE.png or NULL */
  int exact;             /* --exact */
} lt_tumor_opts;

extern const lt_mode lt_mode_tumor;

/* The run (pipeline.c): the frame loop with the tumour steps. */
int lt_tumor_run(const lt_settings *s, const void *opts);

#endif
