/* error.h - error codes returned by every leuktrack function and the exit
 * statuses they map to (documented in man/leuktrack.1, EXIT STATUS).
 * Functions return 0 on success or one of the negative codes below, after
 * reporting the error once (lt_error) where it happened. */
#ifndef LT_ERROR_H
#define LT_ERROR_H

enum lt_err {
  LT_OK = 0,
  LT_ERR_INTERNAL = -1,    /* bug or unexpected library failure      -> exit 1 */
  LT_ERR_USAGE = -2,       /* bad command line                       -> exit 2 */
  LT_ERR_INPUT = -3,       /* input missing, unreadable or invalid   -> exit 3 */
  LT_ERR_OUTPUT = -4,      /* output cannot be written               -> exit 4 */
  LT_ERR_GPU = -5,         /* CUDA requested but unusable, GPU error -> exit 5 */
  LT_ERR_INTERRUPTED = -6, /* SIGINT/SIGTERM                         -> exit 130 */
  LT_ERR_NOMEM = -7,       /* allocation failed                      -> exit 1 */
  LT_ERR_PIPE = -8,        /* stdout's reader went away (| head)     -> exit 141, quietly */
  LT_ERR_SOME = -9,        /* batch (--jobs): some inputs failed     -> exit 1 */
};

enum lt_exit {
  LT_EXIT_OK = 0,
  LT_EXIT_FAILURE = 1,
  LT_EXIT_USAGE = 2,
  LT_EXIT_INPUT = 3,
  LT_EXIT_OUTPUT = 4,
  LT_EXIT_GPU = 5,
  LT_EXIT_INTERRUPTED = 130,
  LT_EXIT_PIPE = 141,      /* 128 + SIGPIPE, what a shell shows for a tool stopped by a closed pipe */
};

/* Map an lt_err (0 or negative) to the process exit status. */
int lt_exit_status(int err);

#endif
