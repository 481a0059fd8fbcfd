/* lt_flow3d.c - 3D CLG flow on one pair of a NIfTI volume sequence (time
 * points T and T+1), written as a NIfTI displacement field; prints the
 * seconds per pair, graph nodes per pair and the mean |w| (voxels). Used by
 * tests/test_nifti.sh and for timings of the solver alone (the product's
 * command is `leuktrack flow --3d`). Built by
 * make as build/tools/lt_flow3d. Intensities are scaled so that the maximum
 * over both time points is 255 (the solver's alpha assumes 0..255).
 * Usage: lt_flow3d [--cuda] [--alpha A] [--beta B] [--voxel] [-t T] -o OUT.nii[.gz] IN.nii[.gz]... */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "error.h"
#include "flow/clg.h"
#include "flow/volume.h"
#include "log.h"
#include "mode.h"

int main(int argc, char **argv)
{
  const lt_flow_backend *be = &lt_flow_backend_cpu;
  lt_flow_params p;
  lt_flow_params_default(&p);
  p.alpha = LT_FLOW_DEFAULT_ALPHA_3D;
  const char *out = NULL, *in[256];
  int nin = 0, t = 0;
  lt_disp_space space = LT_DISP_WORLD_MM;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--cuda")) {
      const void *st;
      if (lt_backend_stages("flow", LT_BACKEND_CUDA, 0, &lt_flow_backend_cpu, &st)) return 2;
      be = st;
    } else if (!strcmp(argv[i], "--alpha") && i + 1 < argc) p.alpha = (float)atof(argv[++i]);
    else if (!strcmp(argv[i], "--beta") && i + 1 < argc) p.beta = (float)atof(argv[++i]);
    else if (!strcmp(argv[i], "--voxel")) space = LT_DISP_VOXEL_MM;
    else if (!strcmp(argv[i], "-t") && i + 1 < argc) t = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
    else if (nin < 256) in[nin++] = argv[i];
  }
  if (!out || nin < 1) {
    fprintf(stderr, "usage: %s [--cuda] [--alpha A] [--beta B] [--voxel] [-t T] -o OUT.nii[.gz] IN.nii[.gz]...\n", argv[0]);
    return 2;
  }
  lt_volume v;
  int r = lt_volume_read(&v, in, nin);
  if (r) return 3;
  if (t < 0 || t + 1 >= v.nt) {
    fprintf(stderr, "lt_flow3d: time point %d has no successor (%d time points)\n", t, v.nt);
    return 2;
  }
  lt_grid g = lt_volume_grid(&v);
  const size_t n = lt_grid_size(&g);
  float *I0 = malloc(n * sizeof(float)), *I1 = malloc(n * sizeof(float)), *f[3];
  for (int d = 0; d < 3; d++) f[d] = malloc(n * sizeof(float));
  float mx = 1e-20f;
  for (size_t i = 0; i < 2 * n; i++) mx = fmaxf(mx, fabsf(lt_volume_frame(&v, t)[i]));
  for (size_t i = 0; i < n; i++) I0[i] = 255.0f * lt_volume_frame(&v, t)[i] / mx, I1[i] = 255.0f * lt_volume_frame(&v, t + 1)[i] / mx;
  void *ctx = NULL;
  r = be->create_grid(&ctx, &p, &g);
  double t0 = lt_now();
  if (!r) r = be->compute_grid(ctx, I0, I1, f);
  double secs = lt_now() - t0;
  if (!r) r = lt_volume_write_displacement(out, &v, (const float *const *)f, space);
  if (!r) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
      double e = 0;
      for (int d = 0; d < 3; d++) e += (f[d][i] / g.h[d]) * (f[d][i] / g.h[d]);
      m += sqrt(e);
    }
    printf("%s %dx%dx%d %.4f s per pair, %ld graph nodes, mean |w| %.4f voxel\n", be->name, g.n[0], g.n[1], g.n[2], secs,
           be->launches(ctx), m / n);
  }
  be->destroy(ctx);
  free(I0), free(I1);
  for (int d = 0; d < 3; d++) free(f[d]);
  lt_volume_free(&v);
  return r ? 1 : 0;
}
