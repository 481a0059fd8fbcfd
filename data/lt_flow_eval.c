/* lt_flow_eval.c - runs leuktrack's CPU CLG on one image pair and prints
 * "aee aae seconds" against a ground-truth .flo (optionally masked); used for
 * tuning the defaults of src/flow/clg.h. Built by make as
 * build/tools/lt_flow_eval (every file of data/ is a tool).
 * Usage: lt_flow_eval I0 I1 GT.flo MASK|- [alpha rho sigma levels warps iterations
 *        [eps_data eps_smooth omega]] [OUT.flo] */
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "flow/clg.h"
#include "flow/flo.h"
#include "image.h"
#include "log.h"

int main(int argc, char **argv)
{
  if (argc < 5) {
    fprintf(stderr,
            "usage: %s I0 I1 GT.flo MASK|- [alpha rho sigma levels warps iterations [eps_data eps_smooth omega]] "
            "[OUT.flo]\n",
            argv[0]);
    return 2;
  }
  lt_flow_params p;
  lt_flow_params_default(&p);
  if (argc >= 11) {
    p.alpha = (float)atof(argv[5]);
    p.rho = (float)atof(argv[6]);
    p.sigma = (float)atof(argv[7]);
    p.levels = atoi(argv[8]);
    p.warps = atoi(argv[9]);
    p.iterations = atoi(argv[10]);
  }
  if (argc >= 14) {
    p.eps_data = (float)atof(argv[11]);
    p.eps_smooth = (float)atof(argv[12]);
    p.omega = (float)atof(argv[13]);
  }
  const char *out = argc == 12 ? argv[11] : argc >= 15 ? argv[14] : NULL;
  float *I0 = NULL, *I1 = NULL, *m = NULL, *gu = NULL, *gv = NULL;
  int w, h, w1, h1, gw, gh, mw, mh;
  if (lt_image_read(argv[1], LT_CHANNEL_LUMA, &I0, &w, &h) || lt_image_read(argv[2], LT_CHANNEL_LUMA, &I1, &w1, &h1) ||
      lt_flo_read(argv[3], &gu, &gv, &gw, &gh))
    return 3;
  if (argv[4][0] != '-' && lt_image_read(argv[4], LT_CHANNEL_LUMA, &m, &mw, &mh)) return 3;
  if (w1 != w || h1 != h || gw != w || gh != h || (m && (mw != w || mh != h))) {
    fprintf(stderr, "size mismatch\n");
    return 3;
  }
  float *u = malloc(sizeof(float) * w * h), *v = malloc(sizeof(float) * w * h);
  void *ctx = NULL;
  const lt_flow_backend *be = &lt_flow_backend_cpu;
  if (!u || !v || be->create(&ctx, &p, w, h)) return 1;
  double t0 = lt_now();
  if (be->compute(ctx, I0, I1, u, v)) return 1;
  double t = lt_now() - t0;
  lt_flow_error e;
  if (lt_flow_evaluate(u, v, gu, gv, m, w, h, argv[3], &e)) return 1;
  printf("%.4f %.4f %.3f\n", e.aee, e.aae, t);
  if (out && lt_flo_write(out, u, v, w, h)) return 4;
  be->destroy(ctx);
  free(I0), free(I1), free(m), free(gu), free(gv), free(u), free(v);
  return 0;
}
