/* outfile.h - output files that appear complete or not at all.
 * lt_out_open writes to a temporary name in the same folder; lt_out_commit
 * flushes, checks every write and renames over the final name; lt_out_abort
 * keeps what was written as NAME.partial (complete rows only - callers write
 * whole rows and call lt_out_flush at row boundaries) or removes it.
 * "-" means stdout, and an existing non-regular file (device, FIFO) is
 * written in place: no rename; abort only flushes. */
#ifndef LT_OUTFILE_H
#define LT_OUTFILE_H

#include <stdio.h>

typedef struct lt_outfile {
  char *path;  /* final name */
  char *tmp;   /* temporary name, NULL for stdout */
  FILE *fp;
  int failed;  /* a write error happened (2: EPIPE on stdout/a pipe) */
  int direct;  /* a device/FIFO written in place (no temporary) */
} lt_outfile;

/* 0 or LT_ERR_OUTPUT (message names the path and the reason). */
int lt_out_open(lt_outfile *o, const char *path);
/* Marks the output failed if fp has an error; returns 0, LT_ERR_OUTPUT
 * (after a message) or LT_ERR_PIPE (stdout or a pipe whose reader went
 * away, as with `| head`: no message, the run stops quietly). */
int lt_out_check(lt_outfile *o);
/* fflush + fsync + rename. 0 or LT_ERR_OUTPUT (then the temp file is removed). */
int lt_out_commit(lt_outfile *o);
/* keep_partial: rename the temporary to PATH.partial; else remove it. */
void lt_out_abort(lt_outfile *o, int keep_partial);

#endif
