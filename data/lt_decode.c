/* lt_decode.c - decodes a video with leuktrack's video layer and prints one
 * line per frame (index, t_s, whether 8-bit bytes came with it, an FNV-1a
 * hash of its float pixels) and on stderr the decode rate. Used by
 * tests/test_decode.sh to check that the raw 8-bit fast path gives the
 * decoder's frames (LT_VIDEO_RAW=0 turns it off), and by the benchmark for
 * the decode cost per input format.
 *   lt_decode VIDEO [--channel luma|r|g|b] [--quiet] [--debug] [--bytes-only]
 * --quiet: no per-frame lines (and no hashing: the decode rate alone);
 * --bytes-only: as a GPU consumer asks (lt_video_bytes_only); the hash is
 * then of the bytes of every 8-bit frame. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "video.h"

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: lt_decode VIDEO [--channel luma|r|g|b] [--quiet]\n");
    return 2;
  }
  lt_channel ch = LT_CHANNEL_LUMA;
  int quiet = 0, bytes_only = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--quiet")) quiet = 1;
    else if (!strcmp(argv[i], "--debug")) lt_log_set_level(LT_LOG_DEBUG);
    else if (!strcmp(argv[i], "--bytes-only")) bytes_only = 1;
    else if (!strcmp(argv[i], "--channel") && i + 1 < argc) {
      const char *c = argv[++i];
      ch = !strcmp(c, "r") ? LT_CHANNEL_R : !strcmp(c, "g") ? LT_CHANNEL_G : !strcmp(c, "b") ? LT_CHANNEL_B : LT_CHANNEL_LUMA;
    }
  }
  lt_video *v;
  double t0 = lt_now();
  if (lt_video_open(&v, argv[1], ch, 4)) return 3;
  lt_video_bytes_only(v, bytes_only);
  const lt_frame *f;
  int n = 0, r;
  double t1 = lt_now();
  while ((r = lt_video_next(v, &f)) == 1) {
    if (quiet) { /* the decode rate alone */
      n++;
      continue;
    }
    uint64_t h = 1469598103934665603ULL;
    /* --bytes-only: the bytes whenever there are (frames decoded before the
     * call may come with floats too), so that the hash does not depend on
     * how far the decode thread got */
    const int fl = f->grey && !(bytes_only && f->grey8);
    const unsigned char *p = fl ? (const unsigned char *)f->grey : f->grey8;
    size_t nb = (size_t)f->width * f->height * (fl ? sizeof(float) : 1);
    for (size_t i = 0; i < nb; i++) h = (h ^ p[i]) * 1099511628211ULL;
    printf("%d %.6f %d %016llx\n", f->index, f->t_s, f->grey8 != NULL, (unsigned long long)h);
    n++;
  }
  double t2 = lt_now();
  fprintf(stderr, "lt_decode: %s: %d frames %dx%d, open %.1f ms, %.3f ms/frame\n", argv[1], n, lt_video_width(v),
          lt_video_height(v), 1e3 * (t1 - t0), n ? 1e3 * (t2 - t1) / n : 0.0);
  lt_video_close(v);
  return r < 0 ? 3 : 0;
}
