/* log.c - stderr diagnostics; see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int g_level = LT_LOG_NORMAL;

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
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (tag && use_colour())
    fprintf(stderr, "leuktrack: %s%s\033[0m: %s\n", colour, tag, buf);
  else if (tag)
    fprintf(stderr, "leuktrack: %s: %s\n", tag, buf);
  else
    fprintf(stderr, "leuktrack: %s\n", buf);
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

