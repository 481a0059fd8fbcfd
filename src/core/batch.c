/* batch.c - many inputs in one process, K at once (batch.h).
 *
 * The main thread prepares one command line per input (lt_cli_for_input:
 * parsing is not thread-safe, getopt keeps global state) and creates the
 * output folder (CUDA's probe and context are being made meanwhile by
 * main's lt_backend_warm thread; lt_cuda_probe runs once, whoever asks),
 * then K pthreads take inputs in order from a shared index and call the
 * mode's run on each. A run touches only its own settings, parameters,
 * outputs and backend context; what is shared is read-only after start
 * (the log level, the mode table) or a flag (lt_stop_requested), and the
 * number of videos running once no input is left (lt_spin_set_tail, atomic). */
#include "batch.h"

#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "core/loop.h"
#include "error.h"
#include "log.h"

typedef struct job {
  lt_cli cli;
  char name[256];
  int err, started;
  double seconds;
} job;

typedef struct batch {
  const lt_mode *mode;
  job *jobs;
  int n, next, done, threads, running;
  pthread_mutex_t mu;
} batch;

/* NAME: file name without directory and extension, odd characters -> '_'. */
static void input_name(const char *path, char *out, size_t n)
{
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  const char *dot = strrchr(b, '.');
  size_t len = dot && dot != b ? (size_t)(dot - b) : strlen(b);
  if (len >= n) len = n - 1;
  for (size_t i = 0; i < len; i++) {
    char ch = b[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
             ch == '_' || ch == '+' || ch == '-';
    out[i] = ok ? ch : '_';
  }
  out[len] = 0;
  if (len == 0) snprintf(out, n, "input");
}

static const char *status_of(int err)
{
  return err == 0 ? "done" : err == LT_ERR_INTERRUPTED ? "interrupted" : "failed";
}

static void *worker(void *arg)
{
  batch *b = arg;
  omp_set_num_threads(b->threads); /* OpenMP's thread count is per calling thread */
  for (;;) {
    pthread_mutex_lock(&b->mu);
    int i = lt_stop_requested ? b->n : b->next++;
    if (i < b->n) b->running++;
    /* the batch's tail: a video's backend may then use what one video
     * alone uses (lt_spin_tail) */
    if (i < b->n && b->next >= b->n) lt_spin_set_tail(b->running);
    pthread_mutex_unlock(&b->mu);
    if (i >= b->n) break;
    job *j = &b->jobs[i];
    lt_log_set_thread_tag(j->name);
    double t0 = lt_now();
    j->started = 1;
    lt_debug("batch: input %d of %d taken at +%.1f ms", i + 1, b->n, lt_since_start_ms());
    j->err = b->mode->run(&j->cli.s, j->cli.params);
    j->seconds = lt_now() - t0;
    lt_debug("batch: input %d ended at +%.1f ms", i + 1, lt_since_start_ms());
    lt_log_set_thread_tag(NULL);
    pthread_mutex_lock(&b->mu);
    b->done++;
    b->running--;
    if (b->next >= b->n) lt_spin_set_tail(b->running);
    printf("%s\t%d\t%.3f\t%s\t%s\n", status_of(j->err), lt_exit_status(j->err), j->seconds, j->cli.s.inputs[0],
           j->cli.s.output);
    fflush(stdout);
    if (lt_log_level() >= LT_LOG_NORMAL)
      fprintf(stderr, "leuktrack: [%d/%d] %s %s (%.2f s)\n", b->done, b->n, status_of(j->err), j->cli.s.inputs[0],
              j->seconds);
    pthread_mutex_unlock(&b->mu);
  }
  return NULL;
}

static int make_dir(const char *d)
{
  if (mkdir(d, 0777) == 0 || errno == EEXIST) return 0;
  lt_error("cannot create folder '%s': %s", d, strerror(errno));
  return LT_ERR_OUTPUT;
}

int lt_batch_run(const lt_cli *c)
{
  const lt_settings *s = &c->s;
  int n = s->ninputs, err = 0;
  batch b = {.mode = c->mode, .n = n};
  b.jobs = calloc((size_t)n, sizeof *b.jobs);
  if (!b.jobs) {
    lt_error("out of memory (batch of %d inputs)", n);
    return LT_ERR_NOMEM;
  }
  for (int i = 0; i < n; i++) input_name(s->inputs[i], b.jobs[i].name, sizeof b.jobs[i].name);
  for (int i = 0; !err && i < n; i++)
    for (int k = 0; k < i; k++)
      if (!strcmp(b.jobs[i].name, b.jobs[k].name)) {
        lt_error("--jobs: inputs '%s' and '%s' would both write %s%s%s.*; give distinct file names (or use "
                 "leuktrack-batch, which names outputs by path)",
                 s->inputs[k], s->inputs[i], s->output, s->output[strlen(s->output) - 1] == '/' ? "" : "/",
                 b.jobs[i].name);
        err = LT_ERR_USAGE;
        break;
      }
  for (int i = 0; !err && i < n; i++) err = lt_cli_for_input(c, i, s->output, b.jobs[i].name, &b.jobs[i].cli);
  if (!err) err = make_dir(s->output);
  if (!err && s->overlay_dir) err = make_dir(s->overlay_dir);
  if (err) goto out;

  int k = s->jobs > 0 ? s->jobs : 1;
  if (k > n) k = n;
  int cores = omp_get_num_procs();
  b.threads = s->threads > 0 ? s->threads : (cores / k > 0 ? cores / k : 1);
  lt_info("batch: %d inputs, %d at once, %d CPU thread(s) each, outputs in %s", n, k, b.threads, s->output);
  lt_spin_set_inflight(k); /* before any video starts: no spinning hand-overs without cores to spare */
  pthread_mutex_init(&b.mu, NULL);
  pthread_t *th = calloc((size_t)k, sizeof *th);
  int started = 0;
  if (!th) {
    lt_error("out of memory (batch threads)");
    err = LT_ERR_NOMEM;
  }
  for (int t = 0; !err && t < k; t++) {
    int e = pthread_create(&th[t], NULL, worker, &b);
    if (e) {
      lt_error("cannot start batch thread %d of %d: %s", t + 1, k, strerror(e));
      if (started == 0) err = LT_ERR_INTERNAL;
      break;
    }
    started++;
  }
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  lt_debug("batch: the last input ended at +%.1f ms", lt_since_start_ms());
  free(th);
  pthread_mutex_destroy(&b.mu);
  if (err) goto out;

  int nok = 0, nfail = 0, nint = 0, nrun = 0;
  for (int i = 0; i < n; i++) {
    job *j = &b.jobs[i];
    if (!j->started) {
      nrun++;
      printf("not-run\t\t\t%s\t%s\n", j->cli.s.inputs[0], j->cli.s.output);
    } else if (j->err == 0) nok++;
    else if (j->err == LT_ERR_INTERRUPTED) nint++;
    else nfail++;
  }
  fflush(stdout);
  for (int i = 0; i < n; i++)
    if (b.jobs[i].started && b.jobs[i].err)
      lt_error("%s: %s (exit status %d)", s->inputs[i], status_of(b.jobs[i].err), lt_exit_status(b.jobs[i].err));
  if (lt_log_level() >= LT_LOG_NORMAL || nfail + nint + nrun)
    fprintf(stderr, "leuktrack: batch: %d done, %d failed%s%.0d%s%s%.0d%s\n", nok, nfail, nint ? ", " : "", nint,
            nint ? " interrupted" : "", nrun ? ", " : "", nrun, nrun ? " not run" : "");
  err = lt_stop_requested || nint ? LT_ERR_INTERRUPTED : nfail ? LT_ERR_SOME : 0;
out:
  for (int i = 0; i < n; i++) lt_cli_free(&b.jobs[i].cli);
  free(b.jobs);
  return err;
}
