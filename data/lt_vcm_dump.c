/* lt_vcm_dump.c - runs the VCM CPU reference (src/vcm) on one pair of
 * images and writes its points and vectors as CSV on stdout:
 *   x_px,y_px,dx_px,dy_px,score
 * one row per interest point, in the backend's order. Used by
 * tests/test_vcm_vs_lk.sh to compare with OpenCV's pyramidal Lucas-Kanade at
 * the same points.
 *
 *   lt_vcm_dump FRAME0 FRAME1 [PREV]
 * PREV: an earlier frame; when given, the pair PREV->FRAME0 is run first and
 * the temporal prior is switched on (weight 0.5) for FRAME0->FRAME1.
 * Images: anything lt_image_read reads (PNG, PGM/PPM; colour -> luma).
 * Exit status 0, or that of the lt_err after the library's message. */
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "image.h"
#include "log.h"
#include "vcm/vcm.h"

static int load(const char *path, float **px, int *w, int *h)
{
  return lt_image_read(path, LT_CHANNEL_LUMA, px, w, h);
}

int main(int argc, char **argv)
{
  if (argc != 3 && argc != 4) {
    fprintf(stderr, "usage: lt_vcm_dump FRAME0 FRAME1 [PREV]\n");
    return LT_EXIT_USAGE;
  }
  float *I0 = NULL, *I1 = NULL, *Ip = NULL;
  lt_vcm_vector *v = NULL;
  void *ctx = NULL;
  int w, h, w1, h1, wp, hp, n = 0, e;
  lt_vcm_params p;
  lt_vcm_params_default(&p);
  if ((e = load(argv[1], &I0, &w, &h)) || (e = load(argv[2], &I1, &w1, &h1))) goto out;
  if (argc == 4 && (e = load(argv[3], &Ip, &wp, &hp))) goto out;
  if (w1 != w || h1 != h || (Ip && (wp != w || hp != h))) {
    lt_error("%s: size differs from %s (%dx%d)", argv[2], argv[1], w, h);
    e = LT_ERR_INPUT;
    goto out;
  }
  if (Ip) p.temporal_weight = 0.5f;
  int cap = lt_vcm_max_points(&p);
  if (!(v = malloc(sizeof *v * cap))) {
    lt_error("out of memory");
    e = LT_ERR_NOMEM;
    goto out;
  }
  if ((e = lt_vcm_backend_cpu.create(&ctx, &p, w, h))) goto out;
  if (Ip && (e = lt_vcm_backend_cpu.pair(ctx, Ip, I0, v, cap, &n))) goto out;
  if ((e = lt_vcm_backend_cpu.pair(ctx, I0, I1, v, cap, &n))) goto out;
  printf("x_px,y_px,dx_px,dy_px,score\n");
  for (int i = 0; i < n; i++)
    printf("%.0f,%.0f,%.4f,%.4f,%.4f\n", v[i].x, v[i].y, v[i].dx, v[i].dy, v[i].score);
out:
  lt_vcm_backend_cpu.destroy(ctx);
  free(v);
  free(I0);
  free(I1);
  free(Ip);
  return lt_exit_status(e);
}
