/* log.h - diagnostics on stderr ("leuktrack: error: ..."), verbosity, timers.
 * stdout carries data only; everything here writes to stderr. NO_COLOR is
 * honoured (colour is only used when stderr is a terminal anyway). */
#ifndef LT_LOG_H
#define LT_LOG_H

enum lt_level { LT_LOG_QUIET = -1, LT_LOG_NORMAL = 0, LT_LOG_VERBOSE = 1, LT_LOG_DEBUG = 2 };

void lt_log_set_level(int level);
int lt_log_level(void);

/* "leuktrack: error: <message>" - always printed, even with -q. */
void lt_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "leuktrack: warning: <message>" - suppressed by -q. */
void lt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "leuktrack: <message>" - only with -v. */
void lt_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* only with -vv. */
void lt_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Tag the calling thread's messages: "leuktrack: TAG: error: ..." (NULL =
 * none). The batch runner (core/batch.h) tags each input's messages with its
 * NAME, since several inputs run at once. */
void lt_log_set_thread_tag(const char *tag);

/* Monotonic wall clock in seconds. */
double lt_now(void);
/* Milliseconds since lt_log_mark_start (main's first line), for the -v -v
 * time line of a process (start-up, contexts, exit: docs/PERFORMANCE.md). */
void lt_log_mark_start(void);
double lt_since_start_ms(void);

/* For a hand-over between threads that would otherwise sleep and wake per
 * frame: spins (pause instructions) until ready(arg) is non-zero or the
 * spin time has passed (LT_SPIN_US microseconds; default 200 with 4 or more
 * cores online per video in flight, else 0: no spin).
 * 1 when ready, 0 when the caller should go to sleep. ready() reads its
 * state with atomic loads (no lock held). */
int lt_spin_until(int (*ready)(const void *arg), const void *arg);
/* The number of videos in flight in this process (--jobs K), for the spin
 * default; call before the first lt_spin_until. */
void lt_spin_set_inflight(int k);
/* That number (1 unless a batch set it). */
int lt_spin_inflight(void);
/* The videos still running once a batch has no input left to start (its
 * tail; set by the batch as that number changes), 0 before (or without a
 * batch); any thread may read it at any time. */
void lt_spin_set_tail(int k);
int lt_spin_tail(void);

#endif
