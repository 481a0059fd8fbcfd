/* rows.c - the writer thread of per-frame rows (rows.h). */
#include "rows.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

void lt_csv_header(FILE *f, const lt_col *cols, int ncols)
{
  for (int i = 0; i < ncols; i++) {
    if (i) fputc(',', f);
    fputs(cols[i].name, f);
  }
  fputc('\n', f);
}

static void write_csv(const lt_rows *w, FILE *f, const lt_rows_slot *sl)
{
  for (int r = 0; r < sl->n; r++) {
    const double *v = sl->vals + (size_t)r * w->nvals;
    for (int i = 0; i < w->ncols; i++) {
      if (i) fputc(',', f);
      if (w->cols[i].decimals < 0) fprintf(f, "%lld", (long long)v[i]);
      else fprintf(f, "%.*f", w->cols[i].decimals, v[i]);
    }
    fputc('\n', f);
  }
}

static int write_slot(lt_rows *w, const lt_rows_slot *sl)
{
  FILE *f = w->out->fp;
  if (w->fmt) w->fmt(w->user, f, sl->frame, sl->vals, sl->n, w->nvals);
  else write_csv(w, f, sl);
  fflush(f);
  return lt_out_check(w->out);
}

/* A frame's rows to write, or the stop (lt_spin_until's test). */
static int rows_ready(const void *arg)
{
  lt_rows *w = (lt_rows *)arg;
  return __atomic_load_n(&w->count, __ATOMIC_ACQUIRE) > 0 || __atomic_load_n(&w->stop, __ATOMIC_ACQUIRE);
}

/* The writer: waits for rows (a short spin, then asleep: the producer wakes
 * it only when it sleeps, so frames that come faster than the spin time
 * cost no wake-up each). */
static void *writer_main(void *arg)
{
  lt_rows *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    if (w->count == 0 && !w->stop) {
      pthread_mutex_unlock(&w->mu);
      lt_spin_until(rows_ready, w);
      pthread_mutex_lock(&w->mu);
      w->writer_sleeping = 1;
      while (w->count == 0 && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
      w->writer_sleeping = 0;
    }
    if (w->count == 0) break; /* stopped and drained */
    lt_rows_slot *sl = &w->slots[(w->head - w->count + LT_ROWS_SLOTS) % LT_ROWS_SLOTS];
    int bad = w->werr;
    pthread_mutex_unlock(&w->mu);
    int err = bad ? 0 : write_slot(w, sl); /* after a failure the rest is dropped */
    pthread_mutex_lock(&w->mu);
    if (err && !w->werr) w->werr = err;
    __atomic_store_n(&w->count, w->count - 1, __ATOMIC_RELEASE);
    if (w->putter_waiting) pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int lt_rows_start(lt_rows *w, lt_outfile *out, const lt_col *cols, int ncols, int nvals, lt_rows_format fmt,
                  void *user)
{
  memset(w, 0, sizeof *w);
  w->out = out;
  w->cols = cols;
  w->ncols = ncols;
  w->nvals = nvals < ncols ? ncols : nvals;
  w->fmt = fmt;
  w->user = user;
  if (!fmt) lt_csv_header(out->fp, cols, ncols);
  int err = lt_out_check(out);
  if (err) return err;
  if (pthread_mutex_init(&w->mu, NULL) != 0) return 0;
  if (pthread_cond_init(&w->cv, NULL) != 0) {
    pthread_mutex_destroy(&w->mu);
    return 0;
  }
  if (pthread_create(&w->writer, NULL, writer_main, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return 0;
  }
  w->writer_on = 1;
  return 0;
}

double *lt_rows_frame(lt_rows *w, int frame, int nrows, int *err)
{
  lt_rows_slot *sl = &w->local;
  *err = 0;
  if (w->writer_on) {
    pthread_mutex_lock(&w->mu);
    w->putter_waiting = 1;
    while (w->count == LT_ROWS_SLOTS && !w->werr) pthread_cond_wait(&w->cv, &w->mu);
    w->putter_waiting = 0;
    *err = w->werr;
    pthread_mutex_unlock(&w->mu);
    if (*err) return NULL;
    sl = &w->slots[w->head]; /* free: the writer only takes filled slots */
  }
  size_t need = (size_t)(nrows > 0 ? nrows : 1) * w->nvals; /* never a NULL buffer, even for no rows */
  if ((int)need > sl->cap) {
    double *nv = realloc(sl->vals, sizeof *nv * need);
    if (!nv) {
      lt_error("out of memory formatting frame %d", frame);
      *err = LT_ERR_NOMEM;
      return NULL;
    }
    sl->vals = nv;
    sl->cap = (int)need;
  }
  sl->frame = frame;
  sl->n = nrows;
  return sl->vals;
}

int lt_rows_put(lt_rows *w)
{
  w->frames++;
  if (!w->writer_on) return write_slot(w, &w->local);
  pthread_mutex_lock(&w->mu);
  w->head = (w->head + 1) % LT_ROWS_SLOTS;
  __atomic_store_n(&w->count, w->count + 1, __ATOMIC_RELEASE);
  if (w->writer_sleeping) pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

int lt_rows_finish(lt_rows *w)
{
  int err = 0;
  if (w->writer_on) {
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->writer, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->writer_on = 0;
    err = w->werr;
  }
  for (int i = 0; i < LT_ROWS_SLOTS; i++) {
    free(w->slots[i].vals);
    w->slots[i].vals = NULL;
  }
  free(w->local.vals);
  w->local.vals = NULL;
  return err;
}
