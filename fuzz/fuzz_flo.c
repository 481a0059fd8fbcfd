/* fuzz_flo.c - libFuzzer harness for lt_flo_read (src/flow/flo.c, Middlebury
 * .flo). The input bytes are written to a private temporary file (the
 * reader takes a path). Every read must return 0 with planes of exactly
 * w*h floats that can all be read, or LT_ERR_INPUT / LT_ERR_NOMEM with both
 * planes NULL, without a crash, leak or undefined behaviour. A successful
 * read is also written back and re-read: the round trip must give the same
 * bits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "flow/flo.h"
#include "fuzz_file.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_as_file("flo", data, size);
  float *u = NULL, *v = NULL;
  int w = -1, h = -1;
  int r = lt_flo_read(path, &u, &v, &w, &h);
  if (r == 0) {
    if (!u || !v || w < 1 || h < 1 || (long long)w * h > LT_FLO_MAX_PIXELS) abort();
    if (size != 12 + 8 * (size_t)w * h) abort();
    volatile uint32_t acc = 0; /* every value is read (sanitizers see uninitialised or out-of-bounds data) */
    uint32_t x;
    for (long long i = 0; i < (long long)w * h; i++) {
      memcpy(&x, &u[i], 4), acc ^= x;
      memcpy(&x, &v[i], 4), acc ^= x;
    }
    char back[96];
    snprintf(back, sizeof back, "%s.out.flo", path);
    if (lt_flo_write(back, u, v, w, h) != 0) abort();
    float *u2 = NULL, *v2 = NULL;
    int w2, h2;
    if (lt_flo_read(back, &u2, &v2, &w2, &h2) != 0 || w2 != w || h2 != h ||
        memcmp(u, u2, sizeof(float) * w * h) || memcmp(v, v2, sizeof(float) * w * h))
      abort();
    remove(back);
    free(u2);
    free(v2);
  } else if (u || v || (r != LT_ERR_INPUT && r != LT_ERR_NOMEM)) {
    abort();
  }
  free(u);
  free(v);
  return 0;
}
