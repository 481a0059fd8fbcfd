/* log.c - stderr diagnostics; see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int g_level = LT_LOG_NORMAL;
static _Thread_local const char *t_tag;

void lt_log_set_thread_tag(const char *tag) { t_tag = tag; }

void lt_log_set_level(int level) { g_level = level; }
int lt_log_level(void) { return g_level; }

static int use_colour(void)
{
  const char *nc = getenv("NO_COLOR");
  if (nc && nc[0]) return 0;
  return isatty(STDERR_FILENO);
}

static void emit(const char *tag, const char *colour, const char *fmt, va_list ap)
{
  char buf[2048], who[300] = "leuktrack: ";
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (t_tag) snprintf(who, sizeof who, "leuktrack: %s: ", t_tag);
  if (tag && use_colour())
    fprintf(stderr, "%s%s%s\033[0m: %s\n", who, colour, tag, buf);
  else if (tag)
    fprintf(stderr, "%s%s: %s\n", who, tag, buf);
  else
    fprintf(stderr, "%s%s\n", who, buf);
}

void lt_error(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  emit("error", "\033[1;31m", fmt, ap);
  va_end(ap);
}

void lt_warn(const char *fmt, ...)
{
  if (g_level < LT_LOG_NORMAL) return;
  va_list ap;
  va_start(ap, fmt);
  emit("warning", "\033[1;33m", fmt, ap);
  va_end(ap);
}

void lt_info(const char *fmt, ...)
{
  if (g_level < LT_LOG_VERBOSE) return;
  va_list ap;
  va_start(ap, fmt);
  emit(NULL, "", fmt, ap);
  va_end(ap);
}

void lt_debug(const char *fmt, ...)
{
  if (g_level < LT_LOG_DEBUG) return;
  va_list ap;
  va_start(ap, fmt);
  emit("debug", "", fmt, ap);
  va_end(ap);
}

double lt_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double t_start; /* lt_log_mark_start */

void lt_log_mark_start(void) { t_start = lt_now(); }

double lt_since_start_ms(void) { return 1e3 * (lt_now() - t_start); }

static int spin_inflight = 1; /* videos in flight in this process (lt_spin_set_inflight) */

void lt_spin_set_inflight(int k)
{
  spin_inflight = k > 1 ? k : 1;
}

int lt_spin_inflight(void)
{
  return spin_inflight;
}

static int spin_tail; /* lt_spin_set_tail; 0: not in a batch's tail */

void lt_spin_set_tail(int k)
{
  __atomic_store_n(&spin_tail, k > 1 ? k : 1, __ATOMIC_RELAXED);
}

int lt_spin_tail(void)
{
  return __atomic_load_n(&spin_tail, __ATOMIC_RELAXED);
}

int lt_spin_until(int (*ready)(const void *arg), const void *arg)
{
  static int spin_us = -1; /* LT_SPIN_US, read once (a benign race: every thread reads the same) */
  int us = __atomic_load_n(&spin_us, __ATOMIC_RELAXED);
  if (us < 0) {
    const char *e = getenv("LT_SPIN_US");
    /* spinning needs cores to spare: a waiting consumer and writer per video in flight */
    const int dflt = sysconf(_SC_NPROCESSORS_ONLN) >= 4L * spin_inflight ? 200 : 0;
    us = e ? atoi(e) : dflt;
    if (us < 0 || us > 100000) us = dflt;
    __atomic_store_n(&spin_us, us, __ATOMIC_RELAXED);
  }
  double t_end = 0;
  for (unsigned it = 0;; it++) {
    if (ready(arg)) return 1;
    if (us == 0) return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if ((it & 63) == 0) {
      const double t = lt_now();
      if (t_end == 0) t_end = t + 1e-6 * us;
      else if (t > t_end) return 0;
    }
  }
}

