/* cli.h - the command line: `leuktrack [MODE] [OPTIONS] INPUT...`.
 * The common options are one table (cli.c), each mode's options another (its
 * row in the mode table, mode.h); getopt_long's table, --help and the
 * man-page check (tests/test_cli.sh) are generated from both. Only main.c,
 * the batch runner (core/batch.c), the fuzzer and the tests include this
 * header; modes receive an lt_settings and their own parameter struct. */
#ifndef LT_CLI_H
#define LT_CLI_H

#include <stdio.h>

#include "mode.h"

/* One option as given on the command line (replayed per input by a batch). */
typedef struct lt_cli_opt {
  const lt_optdef *def;
  const char *arg;       /* optarg (argv memory) or NULL */
} lt_cli_opt;

typedef struct lt_cli {
  const lt_mode *mode;
  int mode_given;        /* MODE was on the command line (else the default) */
  lt_settings s;
  void *params;          /* mode->params_size bytes (malloc) */
  const char **inputs;   /* s.inputs (malloc) */
  int batch;             /* a batch of inputs (--jobs, or -o DIR/ with several inputs): core/batch.h */
  lt_cli_opt *given;     /* the options in command-line order (malloc) */
  int ngiven;
  char **owned;          /* strings made by lt_cli_for_input (malloc) */
  int nowned;
} lt_cli;

/* Parses argv into *c. Returns 0 to run, 1 when --help/--version was printed
 * (exit 0), or LT_ERR_USAGE after one message (LT_ERR_NOMEM, LT_ERR_INTERNAL
 * on failures of their own). Call lt_cli_free afterwards in every case. */
int lt_cli_parse(int argc, char **argv, lt_cli *c);
void lt_cli_free(lt_cli *c);

/* Batch: the command line of input k of c run alone, into *out: the same
 * options replayed onto the mode's defaults, the one input, -o
 * OUTDIR/NAME.EXT (EXT from --format: csv, xml for trackmate, txt for ctc),
 * and every output path of an option (metavariable FILE, FILE.EXT or DIR,
 * mode.h) made per input: "{}" in it is replaced by NAME, else a FILE value
 * D/F becomes D/NAME.F and a DIR value D becomes D/NAME. No progress line.
 * Then the mode's check. Returns 0 or LT_ERR_USAGE/LT_ERR_NOMEM after one
 * message; call lt_cli_free(out) in every case. */
int lt_cli_for_input(const lt_cli *c, int k, const char *outdir, const char *name, lt_cli *out);

/* The option names ("--name" per line) of the common table (m = NULL) or of
 * mode m's table (tests). */
void lt_cli_list_options(FILE *f, const lt_mode *m);
/* The mode whose table has the long option `name` (exact), NULL if none. */
const lt_mode *lt_cli_option_owner(const char *name);

#endif
