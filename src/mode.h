/* mode.h - what a mode is, and what it is given.
 *
 * leuktrack has several analyses ("modes": leukocyte, and those listed in
 * src/modes.c). A mode lives in its own folder src/MODE/ (+ cuda/MODE/) and
 * is one row of the mode table in src/modes.c: its name, a one-line purpose,
 * its option table, its parameter struct (size, defaults, an option setter
 * and a final check) and its run function. The command line (src/cli.c)
 * parses the common options into an lt_settings and the mode's own options
 * into the mode's parameter struct; the mode's run function receives both and
 * never sees the command-line parser (no file under src/MODE/ includes
 * cli.h). Value parsers for the setters are in opt.h; the shared frame loop
 * in core/loop.h; backend choice in backend.h; outputs in io/. */
#ifndef LT_MODE_H
#define LT_MODE_H

#include <stddef.h>

#include "video.h" /* lt_channel */

enum { LT_BACKEND_AUTO = 0, LT_BACKEND_CPU, LT_BACKEND_CUDA };

/* The common run settings (options every mode has). */
typedef struct lt_settings {
  const char *const *inputs; /* the positional arguments after MODE */
  int ninputs;
  const char *output;        /* -o: NULL or "-" = stdout (a mode may read it as a folder) */
  const char *overlay_dir;   /* --overlay DIR or NULL */
  const char *stats;         /* NULL = off, "" = stderr, else a file */
  int frame_begin, frame_end; /* [begin, end), end < 0 = to the end */
  int backend, device, threads; /* LT_BACKEND_*, --device, --threads (0 = all cores) */
  int progress;              /* -1 = auto (stderr is a terminal) */
  int verbosity;             /* LT_LOG_* */
  lt_channel channel;        /* --channel */
  double fps;                /* --fps; 0 = from the input */
  int damage_error;          /* --on-damage error: a damaged video is an error, not a warning */
  int jobs;                  /* --jobs K: batch of inputs, K at once (core/batch.h); 0 = not given */
} lt_settings;

/* One option of a table. id: a short option letter (common options only) or
 * a number >= 256 unique within the common table plus one mode's table
 * (modes number theirs from LT_OPT_MODE_BASE). has_arg: getopt_long's
 * no_argument / required_argument / optional_argument. */
typedef struct lt_optdef {
  const char *name;
  int id;
  int has_arg;
  /* metavariable for --help ("N", "FILE"), NULL without value. It also says
   * what the value is to the batch runner (core/batch.h): "FILE", "FILE.EXT"
   * or "DIR" is an output path, derived per input when several inputs run. */
  const char *arg;
  const char *help;
} lt_optdef;
#define LT_OPT_MODE_BASE 1000

typedef struct lt_mode {
  const char *name;
  const char *purpose;      /* one line, for `leuktrack --help` */
  /* after "leuktrack MODE [OPTIONS] ", e.g. "INPUT". A usage that starts
   * with "INPUT" means one run takes one input: such a mode can run a batch
   * (--jobs, core/batch.h); one that needs two inputs ("A B") cannot. */
  const char *usage;
  const char *example;      /* one command line */
  const char *output_help;  /* one line describing the main output, or NULL */
  const lt_optdef *opts;
  int nopts;
  size_t params_size;
  void (*defaults)(void *params);
  /* One option of this mode's table: parse arg into params. Returns 0 or
   * LT_ERR_USAGE after one message (use opt.h's parsers). */
  int (*set)(void *params, int id, const char *name, const char *arg);
  /* After all options: the number of inputs and cross-option checks.
   * Returns 0 or LT_ERR_USAGE after one message. */
  int (*check)(void *params, const lt_settings *s);
  /* The run. Returns 0 or a negative lt_err (already reported). */
  int (*run)(const lt_settings *s, const void *params);
} lt_mode;

/* The mode table (src/modes.c); lt_modes[0] is the default mode. */
extern const lt_mode *const lt_modes[];
extern const int lt_nmodes;
const lt_mode *lt_mode_find(const char *name);

#endif
