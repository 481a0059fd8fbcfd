/* cli.h - the command line: `leuktrack [MODE] [OPTIONS] INPUT...`.
 * The common options are one table (cli.c), each mode's options another (its
 * row in the mode table, mode.h); getopt_long's table, --help and the
 * man-page check (tests/test_cli.sh) are generated from both. Only main.c,
 * the fuzzer and the tests include this header; modes receive an
 * lt_settings and their own parameter struct. */
#ifndef LT_CLI_H
#define LT_CLI_H

#include <stdio.h>

#include "mode.h"

typedef struct lt_cli {
  const lt_mode *mode;
  int mode_given;        /* MODE was on the command line (else the default) */
  lt_settings s;
  void *params;          /* mode->params_size bytes (malloc) */
  const char **inputs;   /* s.inputs (malloc) */
} lt_cli;

/* Parses argv into *c. Returns 0 to run, 1 when --help/--version was printed
 * (exit 0), or LT_ERR_USAGE after one message (LT_ERR_NOMEM, LT_ERR_INTERNAL
 * on failures of their own). Call lt_cli_free afterwards in every case. */
int lt_cli_parse(int argc, char **argv, lt_cli *c);
void lt_cli_free(lt_cli *c);

/* The option names ("--name" per line) of the common table (m = NULL) or of
 * mode m's table (tests). */
void lt_cli_list_options(FILE *f, const lt_mode *m);
/* The mode whose table has the long option `name` (exact), NULL if none. */
const lt_mode *lt_cli_option_owner(const char *name);

#endif
