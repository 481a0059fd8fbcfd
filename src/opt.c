/* opt.c - strict option value parsers (opt.h). */
#include "opt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

int lt_opt_bad(const char *opt, const char *val, const char *why)
{
  lt_error("invalid value '%s' for --%s: %s", val, opt, why);
  return LT_ERR_USAGE;
}

int lt_opt_int(const char *opt, const char *s, long lo, long hi, int *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno) return lt_opt_bad(opt, s, "not an integer");
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof why, "must be between %ld and %ld", lo, hi);
    return lt_opt_bad(opt, s, why);
  }
  *out = (int)v;
  return 0;
}

int lt_opt_double(const char *opt, const char *s, double lo, double hi, double *out)
{
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end == ',' && end > s && strchr(end + 1, ',') == NULL) { /* 0,65: a decimal comma */
    char why[128], dot[64];
    snprintf(dot, sizeof dot, "%s", s);
    char *comma = strchr(dot, ','); /* NULL when a long value was cut before it */
    if (comma) *comma = '.';
    snprintf(why, sizeof why, "not a number (use '.' as the decimal separator: %s)", dot);
    return lt_opt_bad(opt, s, why);
  }
  if (end == s || *end || errno || v != v) return lt_opt_bad(opt, s, "not a number");
  if (v < lo || v > hi) {
    char why[96];
    snprintf(why, sizeof why, "must be between %g and %g", lo, hi);
    return lt_opt_bad(opt, s, why);
  }
  *out = v;
  return 0;
}

int lt_opt_rect(const char *opt, const char *s, int *rx, int *ry, int *rw, int *rh)
{
  int v[4], n = 0;
  const char *p = s;
  char buf[32];
  const char *c = NULL;
  while (n < 4) {
    c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == 0 || len >= sizeof buf) return lt_opt_bad(opt, s, "expected X,Y,W,H (four integers)");
    memcpy(buf, p, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    long x = strtol(buf, &end, 10);
    if (*end || errno || x < 0 || x > 1000000) return lt_opt_bad(opt, s, "expected X,Y,W,H (non-negative integers)");
    v[n++] = (int)x;
    if (!c) break;
    p = c + 1;
  }
  if (n != 4 || c) return lt_opt_bad(opt, s, "expected X,Y,W,H (four integers)");
  if (v[2] < 1 || v[3] < 1) return lt_opt_bad(opt, s, "width and height must be positive");
  *rx = v[0];
  *ry = v[1];
  *rw = v[2];
  *rh = v[3];
  return 0;
}

int lt_opt_range(const char *opt, const char *s, int *a, int *b, int allow_open)
{
  const char *c = strchr(s, ':');
  if (!c) return lt_opt_bad(opt, s, "expected A:B");
  char left[32], right[32];
  size_t ll = (size_t)(c - s);
  if (ll >= sizeof left || strlen(c + 1) >= sizeof right) return lt_opt_bad(opt, s, "expected A:B");
  memcpy(left, s, ll);
  left[ll] = 0;
  strcpy(right, c + 1);
  *a = 0;
  *b = -1;
  if (!allow_open && (!left[0] || !right[0])) return lt_opt_bad(opt, s, "expected A:B");
  if (left[0] && lt_opt_int(opt, left, 0, INT_MAX - 1, a)) return LT_ERR_USAGE;
  if (right[0] && lt_opt_int(opt, right, 0, INT_MAX - 1, b)) return LT_ERR_USAGE;
  if (*b >= 0 && *b <= *a) return lt_opt_bad(opt, s, "B must be greater than A");
  return 0;
}

int lt_opt_choice(const char *opt, const char *s, const char *choices, int *out)
{
  int k = 0, nwords = 1;
  const char *p = choices;
  size_t n = strlen(s);
  for (const char *q = choices; *q; q++) nwords += *q == '|';
  for (;;) {
    const char *e = strchr(p, '|');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, s, n)) {
      *out = k;
      return 0;
    }
    if (!e) break;
    p = e + 1;
    k++;
  }
  /* "expected a, b or c" */
  char why[256] = "expected ";
  size_t w = strlen(why);
  k = 0;
  for (p = choices; *p && w + 8 < sizeof why; p++) {
    if (*p == '|') {
      k++;
      const char *sep = k == nwords - 1 ? " or " : ", ";
      size_t sl = strlen(sep);
      memcpy(why + w, sep, sl);
      w += sl;
    } else {
      why[w++] = *p;
    }
  }
  why[w] = 0;
  return lt_opt_bad(opt, s, why);
}

int lt_opt_nonempty(const char *opt, const char *s)
{
  if (s && s[0]) return 0;
  lt_error("--%s needs a non-empty file name", opt);
  return LT_ERR_USAGE;
}
