/* fuzz_video.c - libFuzzer harness for the video layer (src/io/video.c):
 * lt_video_open on the input bytes (written to a private temporary file;
 * FFmpeg probes the format from the content) and lt_video_next until the end
 * or an error, then lt_video_close. Every frame handed out must have the size
 * of the first, consecutive indices and pixels in 0..255. The channel is
 * size % 4. Seeds: tiny rawvideo AVIs (one truncated), MJPEG/FFV1/PNG clips
 * made by mk/fuzz.mk. FFmpeg itself is not instrumented: a crash inside it
 * is still reported (SEGV), a silent overflow there is not. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "fuzz_file.h"
#include "log.h"
#include "video.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_as_file("video", data, size);
  lt_video *v = NULL;
  int r = lt_video_open(&v, path, (lt_channel)(size % 4), 2 + (int)(size % 3));
  if (r < 0) {
    if (v) abort();
    return 0;
  }
  int w = lt_video_width(v), h = lt_video_height(v);
  if (w < 1 || h < 1 || (long long)w * h > LT_VIDEO_MAX_PIXELS) abort();
  const lt_frame *fr;
  int n = 0;
  while ((r = lt_video_next(v, &fr)) == 1) {
    if (fr->width != w || fr->height != h || fr->index != n) abort();
    for (long long i = 0; i < (long long)w * h; i += 7)
      if (!(fr->grey[i] >= 0.0f && fr->grey[i] <= 255.0f)) abort();
    if (++n >= 1000) break;
  }
  if (r < 0 && r != LT_ERR_INPUT && r != LT_ERR_INTERNAL && r != LT_ERR_NOMEM) abort();
  lt_video_close(v);
  return 0;
}
