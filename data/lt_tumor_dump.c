/* lt_tumor_dump - writes the tumour-mode score map of one template for one
 * frame of a raw 8-bit stack, for comparison with an independent
 * implementation (tests/test_tumor_opencv.sh runs OpenCV's matchTemplate).
 *
 *   lt_tumor_dump RAW W H TFRAME X Y TW TH MFRAME V H OUT [cpu|cuda]
 *
 * The template is the TW x TH block at (X, Y) of frame TFRAME; it is matched
 * in frame MFRAME over shifts [-V,V] x [-H,H]. OUT receives 2*(2V+1)*(2H+1)
 * little-endian doubles: the exact map, then the backend's (the CPU one
 * unless "cuda" is given; float, widened), both dy-major. Exit status 0, or
 * 1 after a message (also for cuda in a build or on a machine without it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "tumor/corr.h"
#ifdef LT_HAVE_CUDA
#include "../cuda/tumor/tumor_cuda.h"
#endif

static float *read_frame(const char *path, int w, int h, int index)
{
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    lt_error("cannot open %s", path);
    return NULL;
  }
  size_t n = (size_t)w * h;
  unsigned char *u = malloc(n);
  float *f = malloc(sizeof(float) * n);
  int ok = u && f && fseek(fp, (long)(n * index), SEEK_SET) == 0 && fread(u, 1, n, fp) == n;
  fclose(fp);
  if (!ok) {
    lt_error("%s: cannot read frame %d of %dx%d", path, index, w, h);
    free(u);
    free(f);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) f[i] = u[i];
  free(u);
  return f;
}

int main(int argc, char **argv)
{
  if (argc != 13 && !(argc == 14 && (strcmp(argv[13], "cpu") == 0 || strcmp(argv[13], "cuda") == 0))) {
    fprintf(stderr, "usage: lt_tumor_dump RAW W H TFRAME X Y TW TH MFRAME V H OUT [cpu|cuda]\n");
    return 2;
  }
  const lt_tumor_backend *be = &lt_tumor_backend_cpu;
  if (argc == 14 && strcmp(argv[13], "cuda") == 0) {
#ifdef LT_HAVE_CUDA
    be = &lt_tumor_backend_cuda;
#else
    lt_error("this build has no CUDA backend");
    return 1;
#endif
  }
  int a[10];
  for (int i = 0; i < 10; i++) a[i] = atoi(argv[2 + i]);
  const int W = a[0], H = a[1], x = a[3], y = a[4], tw = a[5], th = a[6];
  float *ft = read_frame(argv[1], W, H, a[2]), *fm = read_frame(argv[1], W, H, a[7]);
  if (!ft || !fm) return 1;
  if (x < 0 || y < 0 || tw < 1 || th < 1 || x + tw > W || y + th > H) {
    lt_error("template %dx%d at %d,%d is not inside the %dx%d frame", tw, th, x, y, W, H);
    return 1;
  }
  float *t = malloc(sizeof(float) * tw * th);
  for (int i = 0; i < th; i++)
    for (int j = 0; j < tw; j++) t[i * tw + j] = ft[(size_t)(y + i) * W + x + j];
  lt_tumor_template tp = {t, tw, th, x, y};
  lt_tumor_setup s = {W, H, 1, &tp, a[8], a[9]};
  if (lt_tumor_setup_check(&s)) return 1;
  const int npos = lt_tumor_npos(&s);
  double *out = malloc(sizeof(double) * 2 * npos);
  float *sc = malloc(sizeof(float) * npos);
  void *ctx = NULL;
  if (lt_tumor_corr_exact(&s, fm, out) || be->create(&ctx, &s) || be->match(ctx, fm, sc)) return 1;
  for (int i = 0; i < npos; i++) out[npos + i] = sc[i];
  FILE *fp = fopen(argv[12], "wb");
  if (!fp || fwrite(out, sizeof(double), 2 * (size_t)npos, fp) != 2 * (size_t)npos || fclose(fp) != 0) {
    lt_error("cannot write %s", argv[12]);
    return 1;
  }
  be->destroy(ctx);
  free(out);
  free(sc);
  free(t);
  free(ft);
  free(fm);
  return 0;
}
