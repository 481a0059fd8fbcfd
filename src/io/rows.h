/* rows.h - per-frame result rows written by a writer thread.
 *
 * A mode fills, for each frame, nrows x nvals doubles and hands them over;
 * a writer thread formats them (a few frames behind, in order) and flushes
 * at frame boundaries, so NAME.partial always ends with a complete frame.
 * The default format is CSV from a column list: a header row of the column
 * names, then per row the first ncols values, each printed with its number
 * of decimals (-1 = integer) in the C locale ('.' decimals: leuktrack never
 * calls setlocale). Values past ncols travel with the row for a custom
 * format (e.g. an id a custom writer needs but the CSV does not show).
 * Without a thread (it could not start) the hand-over writes directly. */
#ifndef LT_ROWS_H
#define LT_ROWS_H

#include <pthread.h>
#include <stdio.h>

#include "outfile.h"

typedef struct lt_col {
  const char *name;
  int decimals; /* -1: integer */
} lt_col;

/* A custom formatter: rows of one frame (nrows x nvals). Returns nothing;
 * write errors are seen by the outfile check. */
typedef void (*lt_rows_format)(void *user, FILE *f, int frame, const double *vals, int nrows, int nvals);

typedef struct lt_rows_slot {
  int frame, n, cap;
  double *vals;
} lt_rows_slot;
#define LT_ROWS_SLOTS 16

typedef struct lt_rows {
  lt_outfile *out;
  const lt_col *cols;
  int ncols, nvals;
  lt_rows_format fmt;
  void *user;
  int frames;       /* frames handed over */
  pthread_t writer;
  int writer_on;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  lt_rows_slot slots[LT_ROWS_SLOTS];
  int head, count, stop, werr; /* under mu (count, stop also read by the writer's spin) */
  int writer_sleeping, putter_waiting; /* who waits on cv: the only ones signalled */
  lt_rows_slot local;
} lt_rows;

/* The CSV header line for cols. */
void lt_csv_header(FILE *f, const lt_col *cols, int ncols);
/* Starts the writer on out. fmt NULL = CSV of cols (the header is written
 * here). Returns 0 or LT_ERR_OUTPUT. */
int lt_rows_start(lt_rows *w, lt_outfile *out, const lt_col *cols, int ncols, int nvals, lt_rows_format fmt,
                  void *user);
/* A buffer for nrows x nvals values of `frame` (waits while the writer is
 * 16 frames behind); NULL after an error (*err set: a write failed or no
 * memory). */
double *lt_rows_frame(lt_rows *w, int frame, int nrows, int *err);
/* Hands the frame filled last to the writer. */
int lt_rows_put(lt_rows *w);
/* Waits until everything handed over is written and ends the writer;
 * returns the first write error. Safe to call twice. */
int lt_rows_finish(lt_rows *w);

#endif
