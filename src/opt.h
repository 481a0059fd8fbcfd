/* opt.h - strict value parsers for option setters (common and per mode).
 * Each parses the whole string (a number with trailing junk is an error),
 * checks its range and on failure prints one message naming the option
 * ("invalid value 'x' for --threads: not an integer") and returns
 * LT_ERR_USAGE. */
#ifndef LT_OPT_H
#define LT_OPT_H

int lt_opt_bad(const char *opt, const char *val, const char *why);
int lt_opt_int(const char *opt, const char *s, long lo, long hi, int *out);
int lt_opt_double(const char *opt, const char *s, double lo, double hi, double *out);
/* X,Y,W,H: non-negative integers, W and H >= 1. */
int lt_opt_rect(const char *opt, const char *s, int *x, int *y, int *w, int *h);
/* A:B (0-based integers, B > A); allow_open: A: and :B allowed (missing A
 * = 0, missing B = -1). */
int lt_opt_range(const char *opt, const char *s, int *a, int *b, int allow_open);
/* One of the '|'-separated words of `choices` ("csv|trackmate|ctc"): its
 * index in *out. */
int lt_opt_choice(const char *opt, const char *s, const char *choices, int *out);
/* A non-empty string (file names). */
int lt_opt_nonempty(const char *opt, const char *s);

#endif
