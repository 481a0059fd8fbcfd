/* fuzz_cli.c - libFuzzer harness for the option parser lt_cli_parse (src/cli.c)
 * with every mode's option table (the mode word comes from the input).
 * The input bytes are split at NUL bytes into argv[1..] (at most 64 words,
 * argv[0] = "leuktrack"); every parse must return 0, 1 or a negative lt_err
 * without a crash, leak or undefined behaviour, and a successful parse must
 * give options inside their documented ranges.
 * getopt keeps global state: it is re-initialised before every parse
 * (optind = 0 plus one call with the same "-" ordering lt_cli_parse uses) so
 * that a parse that stopped inside a cluster of short options ("-qx") does not
 * leave getopt pointing into the previous input's freed argv.
 * stdout/stderr: --help and the error messages print; run with
 * -close_fd_mask=3 to silence them (mk/fuzz.mk does). */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "leuk_mode.h"

#define MAX_ARGS 64

static void reset_getopt(void)
{
  static char prog[] = "leuktrack";
  char *argv[] = {prog, NULL};
  optind = 0;
  opterr = 0;
  while (getopt(1, argv, "-") != -1) {
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size > 4096) return 0;
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = (char *)"leuktrack";
  char *p = buf, *end = buf + size;
  while (p <= end && argc <= MAX_ARGS) {
    argv[argc++] = p;
    p += strlen(p) + 1;
  }
  argv[argc] = NULL;

  reset_getopt();
  lt_cli c;
  int r = lt_cli_parse(argc, argv, &c);
  if (r != 0 && r != 1 && r != LT_ERR_USAGE && r != LT_ERR_INTERNAL) abort();
  if (r == 0) {
    /* what every mode relies on after a successful parse */
    const lt_settings *s = &c.s;
    if (!c.mode || !c.params || s->ninputs < 1 || !s->inputs[0]) abort();
    for (int i = 0; i < s->ninputs; i++)
      if (!s->inputs[i]) abort();
    if (s->threads < 0 || s->device < 0 || !(s->fps >= 0)) abort();
    if (s->frame_begin < 0 || (s->frame_end >= 0 && s->frame_end <= s->frame_begin)) abort();
    if (!strcmp(c.mode->name, "leukocyte")) {
      const lt_leuk_opts *o = c.params;
      if (o->leuk.detect_every < 1) abort();
      if (o->leuk.rmin < 2 || o->leuk.rmax > 100 || o->leuk.rmin > o->leuk.rmax) abort();
      if (o->has_roi && (o->leuk.roi.w < 1 || o->leuk.roi.h < 1 || o->leuk.roi.x < 0 || o->leuk.roi.y < 0)) abort();
      if (!(o->leuk.gicov_threshold >= 0) || o->um_per_px < 0) abort();
    }
  }
  lt_cli_free(&c);
  free(buf);
  return 0;
}
