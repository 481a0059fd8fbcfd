/* fuzz_file.h - the fuzz input as a file, for loaders that take a path:
 * written to one temporary per process (removed at exit); the first call
 * also silences leuktrack's messages. Aborts if the file cannot be written
 * (a harness problem, not a finding). */
#ifndef LT_FUZZ_FILE_H
#define LT_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

static char fuzz_path[64];

static void fuzz_drop_file(void) { unlink(fuzz_path); }

static const char *fuzz_as_file(const char *tag, const uint8_t *data, size_t size)
{
  if (!fuzz_path[0]) {
    snprintf(fuzz_path, sizeof fuzz_path, "/tmp/lt_fuzz_%s.%ld", tag, (long)getpid());
    atexit(fuzz_drop_file);
    lt_log_set_level(LT_LOG_QUIET);
  }
  FILE *f = fopen(fuzz_path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  if (fclose(f) != 0) abort();
  return fuzz_path;
}

#endif
