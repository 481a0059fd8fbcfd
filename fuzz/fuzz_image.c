/* fuzz_image.c - libFuzzer harness for lt_image_read (src/io/image.c: PNG via
 * libpng, binary PGM/PPM). The input bytes are written to a private temporary
 * file (lt_image_read takes a path) and read back with the channel chosen by
 * size % 4 (luma, r, g, b). Every read must return 0 with a sane image, or a
 * negative lt_err, without a crash, leak or undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "image.h"
#include "fuzz_file.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_as_file("image", data, size);
  float *px = NULL;
  int w = -1, h = -1;
  int r = lt_image_read(path, (lt_channel)(size % 4), &px, &w, &h);
  if (r == 0) {
    if (!px || w < 1 || h < 1 || (long long)w * h > LT_VIDEO_MAX_PIXELS) abort();
    /* touch every pixel: uninitialised or out-of-range values show up here.
     * 255.001: PNM samples are scaled as v * (255 / maxval) in float, which
     * gives 255.000015 for v = maxval = 265 (harmless; see docs/RELIABILITY.md). */
    double s = 0;
    for (long long i = 0; i < (long long)w * h; i++) {
      if (!(px[i] >= 0.0f && px[i] <= 255.001f)) abort();
      s += px[i];
    }
    if (s < 0) abort();
  } else if (px || (r != LT_ERR_INPUT && r != LT_ERR_NOMEM)) {
    abort();
  }
  free(px);
  return 0;
}
