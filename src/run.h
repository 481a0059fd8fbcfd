/* run.h - entry points of the modes and the stop flag set by SIGINT/SIGTERM
 * (checked after every frame). */
#ifndef LT_RUN_H
#define LT_RUN_H

#include <signal.h>

#include "cli.h"

extern volatile sig_atomic_t lt_stop_requested;

/* Leukocyte mode. Returns 0 or a negative lt_err (already reported). */
int lt_leuk_run(const lt_options *o);

#endif
