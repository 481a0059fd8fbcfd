/* lt_gicov_bench.c - times lt_gicov_map on one ROI of a video's first frame
 * on the CPU, on the fused multiply-add path lt_gicov_fma chose (hardware,
 * libm's fmaf or the exact emulation; LT_GICOV_FMA=soft|libm forces one),
 * one thread unless OMP_NUM_THREADS says otherwise. scripts/bench_gicov_fma.sh
 * runs it on each path.
 *
 * Usage: lt_gicov_bench VIDEO X Y W H REPEATS
 * Prints: path=N seconds per map (min, median of REPEATS) and an FNV-1a hash
 * of the map's bytes and radii (the same on every path). Exit 2 on bad
 * arguments, 1 when the video cannot be read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leuk.h"
#include "log.h"
#include "video.h"

static int cmp(const void *a, const void *b)
{
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  if (argc != 7) {
    fprintf(stderr, "usage: lt_gicov_bench VIDEO X Y W H REPEATS\n");
    return 2;
  }
  const int x0 = atoi(argv[2]), y0 = atoi(argv[3]), w = atoi(argv[4]), h = atoi(argv[5]), reps = atoi(argv[6]);
  lt_video *v;
  const lt_frame *f;
  if (lt_video_open(&v, argv[1], LT_CHANNEL_LUMA, 2) || lt_video_next(v, &f) != 1) {
    fprintf(stderr, "lt_gicov_bench: error: cannot read a frame of %s\n", argv[1]);
    return 1;
  }
  if (x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0 + w > f->width || y0 + h > f->height || reps < 1) {
    fprintf(stderr, "lt_gicov_bench: error: ROI outside the %dx%d frame or REPEATS < 1\n", f->width, f->height);
    return 2;
  }
  float *img = malloc(sizeof(float) * w * h * 4);
  float *gx = img + w * h, *gy = gx + w * h, *map = gy + w * h;
  unsigned char *ri = malloc((size_t)w * h);
  double *t = malloc(sizeof(double) * reps);
  for (int y = 0; y < h; y++) memcpy(img + y * w, f->grey + (size_t)(y0 + y) * f->width + x0, sizeof(float) * w);
  lt_video_close(v);
  lt_leuk_params p;
  lt_leuk_params_default(&p);
  lt_stencil s;
  lt_stencil_init(&s, &p);
  lt_gradient(img, w, h, gx, gy);
  for (int r = 0; r < reps; r++) {
    const double t0 = lt_now();
    lt_gicov_map(gx, gy, w, h, &s, map, ri);
    t[r] = lt_now() - t0;
  }
  uint64_t hash = 1469598103934665603u;
  const unsigned char *b = (const unsigned char *)map;
  for (size_t i = 0; i < sizeof(float) * w * h; i++) hash = (hash ^ b[i]) * 1099511628211u;
  for (size_t i = 0; i < (size_t)w * h; i++) hash = (hash ^ ri[i]) * 1099511628211u;
  qsort(t, reps, sizeof *t, cmp);
  printf("path=%d map %dx%d: min %.4f s, median %.4f s (%d maps); hash %016llx\n", lt_gicov_fma(), w, h, t[0],
         t[reps / 2], reps, (unsigned long long)hash);
  lt_stencil_free(&s);
  free(img);
  free(ri);
  free(t);
  return 0;
}
